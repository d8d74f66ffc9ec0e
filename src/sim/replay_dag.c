/*
 * replay_dag.c — the one replay engine of task-graph workloads: the JSON IR
 * (`trainsim workload --format json`), and Chakra trace sets read into the
 * IR (wl_read_chakra), run as the graph says, every class at once (the way
 * ASTRA-sim's workload layer walks a Chakra graph):
 *   - a task starts when its data and control dependencies have finished and
 *     its stream is free; a class (one per pipeline stage, or in a per-rank
 *     workload one per rank) has one compute stream, one CPU stream (Chakra
 *     CPU ops), one send stream and one stream per collective group kind
 *     (the gradient-side groups DP, DP x CP, expert DP, embedding share one:
 *     they cross the same NICs), or per explicit group (NCCL's stream per
 *     communicator);
 *   - COMP takes its duration from the file (none given: the GPU roofline of
 *     its FLOPs and bytes); COLL is costed with hw_coll_time_s over its
 *     group, whose size and node span come from the rank layout of the
 *     workload (wl_group_members) or its explicit members; SEND takes the p2p
 *     time (hw_p2p_time_s, across nodes when the peer rank sits on another
 *     node); RECV finishes when its dependencies and the matching SEND (peer
 *     stage or rank, tag) have; a "sync" pair (WL_F_SYNC: blocking send and
 *     recv, DeepSpeed's pipeline engine) is a rendezvous: the SEND starts no
 *     earlier than its RECV is posted (its dependencies done), so each side
 *     waits for the other;
 *   - a collective over a group that spans classes (world: the grad-norm
 *     all-reduce; emb: the first and last stage's embedding gradients; every
 *     explicit group) starts when every class taking part has reached it: the
 *     k-th such collective of a group in each class meet, as NCCL's do;
 *   - the iteration ends when the slowest class's last task does.
 * Breakdown of that class: its COMP durations (recompute and optimizer
 * apart); every idle gap of the compute stream, and the tail after its last
 * COMP, goes along the chain of dependencies that ended last: a collective
 * or send takes its own time and its wait for its stream (its group: TP,
 * CP, EP, DP; an explicit group by its span: within a node TP, else DP;
 * sends: pp), a RECV passes to its SEND (pp up to the transfer, bubble
 * beyond), compute ends the chain (bubble).
 * The parts add up to the iteration time.
 */
#include <stdlib.h>
#include <string.h>

#include "trainsim/sim.h"
#include "trainsim/workload.h"
#include "trainsim/sim_replay.h"

typedef struct Dag {
    const Workload *w;
    const HwNet *net;
    double *fin;     /* [n_tasks] finish time, -1 = not run yet */
    double *dur;     /* [n_tasks] own busy time (COMP/COLL/SEND); RECV 0 */
    int32_t *send;   /* [n_tasks] RECV -> matching SEND, else -1 */
    int32_t *recv;   /* [n_tasks] SEND -> matching RECV, else -1 */
    double *posted;  /* [n_tasks] RECV: when its dependencies were done; cross-stage
                        COLL: when it could start; -1 = not yet */
    int32_t *meet;   /* [n_tasks] cross-class COLL -> its meeting slot, else -1 */
    int32_t *meet_need, *meet_in; /* [n_tasks] per slot: classes taking part, arrived */
    double *meet_t;  /* [n_tasks] per slot: the latest arrival */
    double *geom;    /* [WL_GROUP_COUNT * 2] group {size, nodes}; 0 = not yet */
    int32_t *xslot;  /* [n_tasks] explicit-group COLL -> its stream among xclk, else -1 */
    double *xclk;    /* per (explicit group, member) stream clocks */
    int32_t *xoff;   /* [n_xgroups + 1] first clock of each explicit group */
    double *hold;    /* [n_tasks] a class's overlap slow-down, on the first task of its
                        step (phase opt); else 0 */
} Dag;

/* Size and node span of group g (wl_group_span), computed once per kind. */
static TsStatus group_geom(Dag *d, WlGroup g, int64_t *size, int64_t *nodes, TsError *err)
{
    double *e = d->geom + 2 * (size_t)g;
    if (e[0] <= 0) {
        int64_t n, nn;
        if (!wl_group_span(d->w, g, d->net->cl.gpus_per_node, &n, &nn))
            return ts_err(err, TS_ERR_INTERNAL, "out of memory");
        e[0] = (double)n;
        e[1] = (double)nn;
    }
    *size = (int64_t)e[0];
    *nodes = (int64_t)e[1];
    return TS_OK;
}

/* A COMP without a duration (a Chakra node with num_ops / tensor_size):
 * the GPU's roofline, tensor-core FLOPs at the large-GEMM efficiency or the
 * memory-bound kernel model, whichever is slower; nothing: ASTRA-sim's 1 ns. */
static double roofline_s(const HwNet *net, const WlTask *t)
{
    const GpuSpec *g = &net->cl.gpu;
    HwModel m = {.gpu = *g};
    double f = t->flops > 0 && g->peak_flops[TS_DTYPE_BF16] > 0
                   ? t->flops / (g->peak_flops[TS_DTYPE_BF16] * g->gemm_eff[TS_DTYPE_BF16]) : 0;
    double b = t->mem_bytes > 0 ? hw_memory_time_s(&m, t->mem_bytes) : 0;
    double x = f > b ? f : b;
    return x > 0 ? x : 1e-9;
}

/* The stream of rank r's collectives over explicit group xg: one clock per
 * (group, member), at offset xoff[xg - 1] + the member's place. */
static int32_t xslot_of(const Dag *d, int32_t xg, int64_t r)
{
    const WlXGroup *g = &d->w->xgroups[xg - 1];
    int64_t lo = 0, hi = g->n;
    while (lo < hi) {
        int64_t mid = (lo + hi) / 2;
        if (g->members[mid] < r) lo = mid + 1;
        else hi = mid;
    }
    return d->xoff[xg - 1] + (int32_t)(lo < g->n ? lo : g->n - 1);
}

/* The meeting slots of collectives over groups that span classes: the k-th
 * collective of a group in each class taking part meet. Keys: world, emb,
 * then one per explicit group; slot = base[key] + k. */
static TsStatus meet_slots(Dag *d, TsError *err)
{
    const Workload *w = d->w;
    int32_t nkeys = 2 + w->n_xgroups;
    int32_t *cnt = calloc((size_t)nkeys, sizeof *cnt), *mx = calloc((size_t)nkeys, sizeof *mx);
    int32_t *base = calloc((size_t)nkeys + 1, sizeof *base);
    if (!cnt || !mx || !base) {
        free(cnt), free(mx), free(base);
        return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    }
    for (int pass = 0; pass < 2; pass++) {
        for (int32_t c = 0; c < w->n_classes; c++) {
            memset(cnt, 0, (size_t)nkeys * sizeof *cnt);
            for (int32_t i = w->classes[c].first_task; i < w->classes[c].first_task + w->classes[c].n_tasks; i++) {
                const WlTask *t = &w->tasks[i];
                int32_t key = t->kind != WL_KIND_COLL ? -1 : t->xgroup > 0 ? 1 + t->xgroup
                              : t->group == WL_GROUP_WORLD ? 0 : t->group == WL_GROUP_EMB ? 1 : -1;
                if (pass == 0) d->meet[i] = -1;
                if (key < 0) continue;
                int32_t k = cnt[key]++;
                if (pass == 0 && cnt[key] > mx[key]) mx[key] = cnt[key];
                if (pass == 1) d->meet[i] = base[key] + k;
            }
        }
        if (pass == 0)
            for (int32_t k = 0; k < nkeys; k++) base[k + 1] = base[k] + mx[k];
    }
    for (int32_t i = 0; i < w->n_tasks; i++) d->meet_need[i] = d->meet_in[i] = 0, d->meet_t[i] = 0;
    for (int32_t i = 0; i < w->n_tasks; i++)
        if (d->meet[i] >= 0) d->meet_need[d->meet[i]]++;
    free(cnt), free(mx), free(base);
    return TS_OK;
}

/* Busy time of every task that occupies a stream, and the SEND of every RECV. */
static TsStatus prepare(Dag *d, TsError *err)
{
    const Workload *w = d->w;
    int64_t gpn = d->net->cl.gpus_per_node;
    TsStatus st = TS_OK;
    for (int32_t c = 0; c < w->n_classes && !st; c++) {
        const WlClass *cl = &w->classes[c];
        int64_t r0 = cl->rank >= 0 ? cl->rank : wl_stage_peer(w, 0, cl->stage);
        for (int32_t i = cl->first_task; i < cl->first_task + cl->n_tasks && !st; i++) {
            const WlTask *t = &w->tasks[i];
            d->fin[i] = -1;
            d->dur[i] = 0;
            d->xslot[i] = -1;
            if (t->kind == WL_KIND_COMP) {
                d->dur[i] = t->duration_s >= 0 ? t->duration_s : roofline_s(d->net, t);
            } else if (t->kind == WL_KIND_COLL && t->xgroup > 0) {
                const WlXGroup *xg = &w->xgroups[t->xgroup - 1];
                int64_t n = xg->n, nodes = wl_xgroup_nodes(w, t->xgroup, gpn);
                if (n > 1 && t->comm_bytes > 0 && t->coll != TS_COLL_NONE)
                    d->dur[i] = hw_coll_time_s(d->net, t->coll, t->comm_bytes, n, nodes, 1, HW_GROUP_NONE);
                d->xslot[i] = xslot_of(d, t->xgroup, r0);
            } else if (t->kind == WL_KIND_COLL && t->comm_bytes > 0 && t->coll != TS_COLL_NONE) {
                int64_t n = 1, nodes = 1;
                st = group_geom(d, t->group, &n, &nodes, err);
                if (!st) d->dur[i] = wl_coll_time_s(w, d->net, t, n, nodes);
            } else if (t->kind == WL_KIND_SEND) {
                int64_t peer = cl->rank >= 0 ? t->peer_stage : wl_stage_peer(w, r0, t->peer_stage);
                bool cross = gpn > 0 && peer / gpn != r0 / gpn;
                d->dur[i] = t->comm_bytes > 0 ? hw_p2p_time_s(d->net, t->comm_bytes, cross) : 0;
            }
        }
    }
    if (st) return st;
    int32_t bad = wl_pair_p2p(w, d->send);
    if (bad == -2) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    if (bad >= 0) {
        int32_t c = 0;
        while (c + 1 < w->n_classes && bad >= w->classes[c + 1].first_task) c++;
        const WlTask *t = &w->tasks[bad];
        return ts_err(err, TS_ERR_INPUT, "task %d (recv \"%s\") of class %s: no send from %s %d with tag %d",
                      bad - w->classes[c].first_task, t->name ? t->name : "", w->classes[c].name,
                      w->rank_class ? "rank" : "stage", t->peer_stage, t->tag);
    }
    for (int32_t i = 0; i < w->n_tasks; i++) {
        d->recv[i] = -1;
        d->posted[i] = -1;
    }
    for (int32_t i = 0; i < w->n_tasks; i++)
        if (d->send[i] >= 0) d->recv[d->send[i]] = i;
    return meet_slots(d, err);
}

/* Per-class stream clocks: compute, send, one per group kind, except that
 * the gradient-side groups (DP, DP x CP, expert DP, embedding, world, HSDP's
 * replicas) share one: they cross the same NICs, so they take turns (the
 * simulator sums them too); HSDP's shard group has its own, as FSDP's
 * per-unit gathers and reduce-scatters over it run beside the replicas'. */
enum { ST_COMP = 0, ST_CPU = 1, ST_SEND = 2, ST_GROUP = 3, ST_N = ST_GROUP + WL_GROUP_COUNT };

static int stream_of(WlGroup g)
{
    switch (g) {
    case WL_GROUP_DP_CP: case WL_GROUP_DP_EP: case WL_GROUP_EMB: case WL_GROUP_WORLD:
    case WL_GROUP_REPLICATE: return (int)WL_GROUP_DP;
    default: return (int)g;
    }
}

/* Run task i of class c if its inputs are known; false when it must wait. */
static bool run_task(Dag *d, double *clk, int32_t i)
{
    const Workload *w = d->w;
    const WlTask *t = &w->tasks[i];
    const int32_t *dp = wl_task_deps(w, t);
    double ready = 0;
    for (int32_t j = 0; j < t->n_data_deps + t->n_ctrl_deps; j++) {
        double f = d->fin[dp[j]];
        if (f < 0) return false;
        if (f > ready) ready = f;
    }
    ready += d->hold[i];
    if (t->kind == WL_KIND_RECV) {
        if (d->posted[i] < 0) d->posted[i] = ready;
        double f = d->fin[d->send[i]];
        if (f < 0) return false;
        d->fin[i] = f > ready ? f : ready;
        return true;
    }
    if (t->kind == WL_KIND_SEND && (t->flags & WL_F_SYNC) && d->recv[i] >= 0) {
        double p = d->posted[d->recv[i]];
        if (p < 0) return false; /* the receiver has not reached its recv yet */
        if (p > ready) ready = p;
    }
    int s = t->kind == WL_KIND_COMP ? ((t->flags & WL_F_CPU) ? ST_CPU : ST_COMP)
            : t->kind == WL_KIND_SEND ? ST_SEND : ST_GROUP + stream_of(t->group);
    double *sc = d->xslot[i] >= 0 ? &d->xclk[d->xslot[i]] : &clk[s];
    double st = *sc > ready ? *sc : ready;
    if (d->meet[i] >= 0) { /* wait for every stage taking part */
        int32_t m = d->meet[i];
        if (d->posted[i] < 0) {
            d->posted[i] = st;
            d->meet_in[m]++;
            if (st > d->meet_t[m]) d->meet_t[m] = st;
        }
        if (d->meet_in[m] < d->meet_need[m]) return false;
        st = d->meet_t[m];
    }
    d->fin[i] = st + d->dur[i];
    *sc = d->fin[i];
    return true;
}

/* The dependency of task i that finished last (RECV: its SEND too), -1 none. */
static int32_t binding(const Dag *d, int32_t i)
{
    const Workload *w = d->w;
    const WlTask *t = &w->tasks[i];
    const int32_t *dp = wl_task_deps(w, t);
    int32_t b = t->kind == WL_KIND_RECV ? d->send[i] : -1;
    for (int32_t j = 0; j < t->n_data_deps + t->n_ctrl_deps; j++)
        if (b < 0 || d->fin[dp[j]] > d->fin[b]) b = dp[j];
    return b;
}

/* Where a collective's exposed time goes: its group kind; an explicit group
 * by its span (within one node: tensor parallel, else data parallel). */
static double *group_slot(const Dag *d, SimBreakdown *b, const WlTask *t)
{
    WlGroup g = t->group;
    if (t->xgroup > 0) g = wl_xgroup_nodes(d->w, t->xgroup, d->net->cl.gpus_per_node) == 1 ? WL_GROUP_TP : WL_GROUP_DP;
    switch (g) {
    case WL_GROUP_TP: return &b->tp_comm_exposed_s;
    case WL_GROUP_CP: return &b->cp_comm_exposed_s;
    case WL_GROUP_EP: return &b->ep_comm_exposed_s;
    case WL_GROUP_PP: return &b->pp_comm_exposed_s;
    default: return &b->dp_comm_exposed_s;
    }
}

/* Charge an idle gap of the compute stream along the chain of dependencies
 * that ended last, starting at `by`: each collective or send on the chain
 * takes up to its own time (its group; sends: pp), a recv passes on to its
 * send; what is left when the chain reaches compute (here or, through a
 * send, on another stage) is bubble. */
static void charge(const Dag *d, int32_t by, double gap, SimBreakdown *b)
{
    const Workload *w = d->w;
    for (int hops = 0; gap > 0 && by >= 0 && hops < 1 << 20; hops++) {
        const WlTask *t = &w->tasks[by];
        if (t->kind == WL_KIND_COMP) break;
        if (t->kind == WL_KIND_RECV) {
            int32_t nx = binding(d, by);
            if (nx >= 0 && nx == d->send[by]) {
                double x = gap < d->dur[nx] ? gap : d->dur[nx];
                b->pp_comm_exposed_s += x;
                gap -= x;
                break; /* beyond the transfer: the sender's stage was busy */
            }
            by = nx;
            continue;
        }
        /* its own time and any wait for its stream (queued behind other
         * transfers of the same kind) */
        int32_t nx = binding(d, by);
        double ready = nx >= 0 ? d->fin[nx] : 0, own = d->fin[by] - ready;
        if (own < d->dur[by]) own = d->dur[by];
        double x = gap < own ? gap : own;
        if (t->kind == WL_KIND_SEND) b->pp_comm_exposed_s += x;
        else *group_slot(d, b, t) += x;
        gap -= x;
        by = nx;
    }
    if (gap > 0) b->bubble_s += gap;
}

static void breakdown(const Dag *d, int32_t c, double T, SimBreakdown *b)
{
    const Workload *w = d->w;
    const WlClass *cl = &w->classes[c];
    double prev = 0;
    int32_t last = -1;
    for (int32_t i = cl->first_task; i < cl->first_task + cl->n_tasks; i++) {
        const WlTask *t = &w->tasks[i];
        if (t->kind != WL_KIND_COMP || (t->flags & WL_F_CPU)) {
            if (last < 0 || d->fin[i] >= d->fin[last]) last = i;
            continue;
        }
        /* (a held task's wait ends with the class's slow-down: not charged here) */
        double start = d->fin[i] - d->dur[i], gap = start - prev - d->hold[i];
        if (gap > 0) charge(d, binding(d, i), gap, b);
        if (t->phase == WL_PHASE_OPT) b->optimizer_s += d->dur[i];
        else if (t->flags & WL_F_RECOMPUTE) b->recompute_s += d->dur[i];
        else b->compute_s += d->dur[i];
        if (d->fin[i] > prev) prev = d->fin[i];
    }
    if (T > prev) charge(d, last, T - prev, b);
}

static SimStream span_stream(const WlTask *t)
{
    if (t->kind == WL_KIND_COMP) return SIM_STREAM_COMPUTE;
    if (t->kind == WL_KIND_SEND) return SIM_STREAM_PP;
    switch (t->group) {
    case WL_GROUP_TP: return SIM_STREAM_TP;
    case WL_GROUP_CP: return SIM_STREAM_CP;
    case WL_GROUP_EP: return SIM_STREAM_EP;
    case WL_GROUP_PP: return SIM_STREAM_PP;
    default: return SIM_STREAM_DP;
    }
}

/* One 'T' span per task that occupied a stream. */
static TsStatus record(const Dag *d, SimResult *out, TsError *err)
{
    const Workload *w = d->w;
    SimSpan *sp = malloc((size_t)w->n_tasks * sizeof *sp);
    if (!sp) return ts_err(err, TS_ERR_INTERNAL, "out of memory recording the timeline");
    int64_t n = 0;
    for (int32_t c = 0; c < w->n_classes; c++) {
        const WlClass *cl = &w->classes[c];
        for (int32_t i = cl->first_task; i < cl->first_task + cl->n_tasks; i++) {
            const WlTask *t = &w->tasks[i];
            if (t->kind == WL_KIND_RECV || d->dur[i] <= 0) continue;
            sp[n++] = (SimSpan){.stage = cl->rank >= 0 ? (int32_t)cl->rank : cl->stage,
                                .stream = (int16_t)span_stream(t), .chunk = (int16_t)t->chunk,
                                .micro_batch = t->micro, .kind = 'T', .start_s = d->fin[i] - d->dur[i],
                                .end_s = d->fin[i], .name = t->name ? t->name : ""};
        }
    }
    out->spans = sp;
    out->n_spans = n;
    out->owned = true;
    return TS_OK;
}

/* Seconds the collectives of class c run beside its compute: each
 * collective's overlap with the compute stream's busy spans (in issue order,
 * so sorted and disjoint), found by binary search. */
static double comm_overlap(const Dag *d, int32_t c, int32_t *comp, int32_t nc_max)
{
    const Workload *w = d->w;
    const WlClass *cl = &w->classes[c];
    int32_t n = 0;
    for (int32_t i = cl->first_task; i < cl->first_task + cl->n_tasks && n < nc_max; i++)
        if (w->tasks[i].kind == WL_KIND_COMP && !(w->tasks[i].flags & WL_F_CPU) && d->dur[i] > 0) comp[n++] = i;
    double ov = 0;
    for (int32_t i = cl->first_task; i < cl->first_task + cl->n_tasks; i++) {
        /* an F&B pair's collectives: their SMs are in the pair's compute (WL_F_PAIR) */
        if (w->tasks[i].kind != WL_KIND_COLL || d->dur[i] <= 0 || (w->tasks[i].flags & WL_F_PAIR)) continue;
        double s = d->fin[i] - d->dur[i], e = d->fin[i];
        int32_t lo = 0, hi = n; /* first compute span ending after s */
        while (lo < hi) {
            int32_t mid = (lo + hi) / 2;
            if (d->fin[comp[mid]] <= s) lo = mid + 1;
            else hi = mid;
        }
        for (int32_t k = lo; k < n; k++) {
            double cs = d->fin[comp[k]] - d->dur[comp[k]], ce = d->fin[comp[k]];
            if (cs >= e) break;
            double a = cs > s ? cs : s, b = ce < e ? ce : e;
            if (b > a) ov += b - a;
        }
    }
    return ov;
}

/* Run every task once (prepare first): sweep the classes until every task
 * has run; a class stops at a task whose inputs (another class's send, say)
 * are not known yet. clk: [classes * ST_N] zeroed, pos: [classes]. */
static TsStatus sweep(Dag *d, double *clk, int32_t *pos, TsError *err)
{
    const Workload *w = d->w;
    size_t nc = (size_t)w->n_classes;
    for (size_t c = 0; c < nc; c++) pos[c] = w->classes[c].first_task;
    int64_t left = (int64_t)w->n_tasks;
    while (left > 0) {
        int64_t before = left;
        for (size_t c = 0; c < nc; c++) {
            const WlClass *cl = &w->classes[c];
            while (pos[c] < cl->first_task + cl->n_tasks && run_task(d, clk + c * ST_N, pos[c])) {
                pos[c]++;
                left--;
            }
        }
        if (left < before) continue;
        for (size_t c = 0; c < nc; c++)
            if (pos[c] < w->classes[c].first_task + w->classes[c].n_tasks) {
                const WlTask *t = &w->tasks[pos[c]];
                ts_err(err, TS_ERR_INPUT, "the workload deadlocks: task %d (%s \"%s\") of class %s never gets its input",
                       pos[c] - w->classes[c].first_task, wl_kind_name(t->kind), t->name ? t->name : "",
                       w->classes[c].name);
                ts_err_hint(err, "a recv waits for a send that itself waits, directly or not, for this task: check "
                                 "the order of the sends and receives between the stages");
                return TS_ERR_INPUT;
            }
    }
    return TS_OK;
}

/* The overlap slow-down of every class (overlap_slowdown x its collectives'
 * seconds beside its compute, comm_overlap) held on the first task of its
 * step (phase opt): a class's compute runs that much longer, so its
 * gradients are ready that much later, before the step's collectives meet
 * (the simulator's rule: a stage's slow-down ends its pipeline phase before
 * the step, schedule.c). A class without a step task ends that much later
 * (tail[c]). False when nothing is held. */
static bool hold_slowdown(Dag *d, double overlap_slowdown, int32_t *comp, double *slow, double *tail)
{
    const Workload *w = d->w;
    bool any = false;
    for (int32_t c = 0; c < w->n_classes; c++) {
        const WlClass *cl = &w->classes[c];
        slow[c] = tail[c] = overlap_slowdown * comm_overlap(d, c, comp, cl->n_tasks);
        for (int32_t i = cl->first_task; i < cl->first_task + cl->n_tasks; i++)
            if (w->tasks[i].phase == WL_PHASE_OPT) {
                if (slow[c] > 0) d->hold[i] = slow[c], any = true;
                tail[c] = 0;
                break;
            }
    }
    return any;
}

TsStatus sim_replay_dag(const Workload *w, const HwNet *net, double overlap_slowdown, bool rec, SimResult *out,
                        TsError *err)
{
    memset(out, 0, sizeof *out);
    if (!w || w->n_classes < 1 || w->n_tasks < 1) return ts_err(err, TS_ERR_INPUT, "the workload has no tasks to replay");
    size_t n = (size_t)w->n_tasks, nc = (size_t)w->n_classes;
    Dag d = {.w = w, .net = net};
    d.fin = malloc(n * sizeof *d.fin);
    d.dur = malloc(n * sizeof *d.dur);
    d.send = malloc(n * sizeof *d.send);
    d.recv = malloc(n * sizeof *d.recv);
    d.posted = malloc(n * sizeof *d.posted);
    d.meet = malloc(n * sizeof *d.meet);
    d.meet_need = malloc(n * sizeof *d.meet_need);
    d.meet_in = malloc(n * sizeof *d.meet_in);
    d.meet_t = malloc(n * sizeof *d.meet_t);
    d.geom = calloc(WL_GROUP_COUNT * 2, sizeof *d.geom);
    d.xslot = malloc(n * sizeof *d.xslot);
    d.hold = calloc(n, sizeof *d.hold);
    d.xoff = malloc(((size_t)w->n_xgroups + 1) * sizeof *d.xoff);
    size_t nx = 1;
    for (int32_t k = 0; k < w->n_xgroups && d.xoff; k++) {
        d.xoff[k] = (int32_t)(nx - 1);
        nx += (size_t)w->xgroups[k].n;
    }
    d.xclk = calloc(nx, sizeof *d.xclk);
    double *clk = calloc(nc * ST_N, sizeof *clk), *slow = calloc(2 * nc, sizeof *slow), *tail = slow + nc;
    int32_t *pos = malloc(nc * sizeof *pos), *comp = malloc(n * sizeof *comp);
    TsStatus st = TS_OK;
    if (!d.fin || !d.dur || !d.send || !d.recv || !d.posted || !d.meet || !d.meet_need || !d.meet_in || !d.meet_t ||
        !d.geom || !d.xslot || !d.hold || !d.xoff || !d.xclk || !clk || !slow || !pos || !comp)
        st = ts_err(err, TS_ERR_INTERNAL, "out of memory");
    if (!st) st = prepare(&d, err);
    if (!st) st = sweep(&d, clk, pos, err);
    /* again, each class's slow-down held before its step */
    if (!st && overlap_slowdown > 0 && hold_slowdown(&d, overlap_slowdown, comp, slow, tail)) {
        memset(clk, 0, nc * ST_N * sizeof *clk);
        memset(d.xclk, 0, nx * sizeof *d.xclk);
        st = prepare(&d, err);
        if (!st) st = sweep(&d, clk, pos, err);
    }
    if (!st) {
        double T = 0, end = 0;
        int32_t crit = 0;
        for (size_t c = 0; c < nc; c++) {
            const WlClass *cl = &w->classes[c];
            double e = 0;
            for (int32_t i = cl->first_task; i < cl->first_task + cl->n_tasks; i++)
                if (d.fin[i] > e) e = d.fin[i];
            if (e + tail[c] > T) T = e + tail[c], end = e, crit = (int32_t)c;
        }
        out->pipeline_time_s = end;
        out->critical_stage = w->classes[crit].rank >= 0 ? (int32_t)w->classes[crit].rank : w->classes[crit].stage;
        out->n_stages = (int32_t)nc;
        breakdown(&d, crit, end, &out->breakdown);
        out->breakdown.overlap_slowdown_s = slow[crit];
        out->iteration_time_s = T;
        if (rec) st = record(&d, out, err);
    }
    free(d.fin);
    free(d.dur);
    free(d.send);
    free(d.recv);
    free(d.posted);
    free(d.meet);
    free(d.meet_need);
    free(d.meet_in);
    free(d.meet_t);
    free(d.geom);
    free(d.xslot);
    free(d.hold);
    free(d.xoff);
    free(d.xclk);
    free(clk);
    free(slow);
    free(pos);
    free(comp);
    return st;
}
