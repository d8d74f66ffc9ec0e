/*
 * replay.c — an imported layer-format workload (SimAI/AICB, ASTRA-sim 1.0
 * text, op tables) run with SimAI's semantics (simai_aicb.md section 7,
 * SimAI Workload.cc iterate_hybrid_parallel_Transformer_fwd_in_bckwd), one
 * rank's view of class 0, every row once (the rows already hold the GA
 * micro-batches: AICB writes a copy of the stage body per micro-batch):
 *   forward, rows 0..N-1: wait for the row's previous weight-gradient comm,
 *     then its forward compute, then its forward collective (blocking);
 *   backward, rows N-1..0: input-grad compute, input-grad collective
 *     (blocking), weight-grad compute, weight-grad collective NON-blocking
 *     (a DP stream; the row's next forward waits for it).
 * The pipeline, which the rows do not describe, is added as SimAI's
 * analytical mode adds it (Layer.cc): a bubble of (pp - 1) / (ga x vpp)
 * times the stage's busy time (compute and blocking comm of every row but
 * embedding_layer), and, where SimAI charges nothing by default, the
 * pipeline's fill and drain: 2 (pp - 1) transfers of pp_comm bytes.
 * Compute durations come from the file; collectives are costed with our
 * collective model (hw_coll_time_s) on the group sizes SimAI uses: TP =
 * header tp, EP = ep, DP = all_gpus/(tp*pp), DP_EP = DP/EP (wl_group_span).
 */
#include <stdlib.h>
#include <string.h>

#include "trainsim/sim.h"
#include "trainsim/workload.h"
#include "trainsim/sim_replay.h"

/* A row's collective in one phase: its time over SimAI's groups (TP = tp,
 * DP = world/(tp*pp), EP, DP_EP as wl_group_size carves them) and its group;
 * 0 when there is none. */
static double coll_s(const Workload *w, const HwNet *net, int32_t id, WlGroup *grp, bool *oom)
{
    if (id < 0) return 0;
    const WlTask *t = &w->tasks[id];
    if (t->kind != WL_KIND_COLL || t->comm_bytes <= 0 || t->coll == TS_COLL_NONE) return 0;
    int64_t n, nodes;
    if (!wl_group_span(w, t->group, net->cl.gpus_per_node, &n, &nodes)) {
        *oom = true;
        return 0;
    }
    *grp = t->group;
    return hw_coll_time_s(net, t->coll, t->comm_bytes, n, nodes, 1, wl_group_hw(t->group));
}

static double comp_s(const Workload *w, int32_t id)
{
    return id >= 0 && w->tasks[id].kind == WL_KIND_COMP ? w->tasks[id].duration_s : 0;
}

/* One row's times, the same for every micro-batch: computed once. */
typedef struct RowCost {
    double comp[WL_PHASE_COUNT], comm[WL_PHASE_COUNT];
    WlGroup grp[WL_PHASE_COUNT];
} RowCost;

static void charge(SimBreakdown *b, WlGroup g, double s)
{
    switch (g) {
    case WL_GROUP_EP: b->ep_comm_exposed_s += s; break;
    case WL_GROUP_DP: case WL_GROUP_DP_EP: case WL_GROUP_SHARD: case WL_GROUP_REPLICATE: b->dp_comm_exposed_s += s; break;
    case WL_GROUP_CP: b->cp_comm_exposed_s += s; break;
    case WL_GROUP_PP: b->pp_comm_exposed_s += s; break;
    default: b->tp_comm_exposed_s += s; break;
    }
}

TsStatus sim_replay_simai(const Workload *w, const HwNet *net, SimResult *out, TsError *err)
{
    memset(out, 0, sizeof *out);
    if (!w || w->n_classes < 1 || w->n_rows < 1)
        return ts_err(err, TS_ERR_INPUT, "the workload has no layer rows to replay");
    const WlClass *cls = &w->classes[0];
    int32_t r0 = cls->first_row, n = cls->n_rows;
    double *wg_done = calloc((size_t)n, sizeof *wg_done);
    RowCost *rc = calloc((size_t)n, sizeof *rc);
    bool oom = !wg_done || !rc;
    for (int32_t i = 0; i < n && !oom; i++)
        for (int ph = 0; ph < WL_PHASE_COUNT; ph++) {
            const WlRow *r = &w->rows[r0 + i];
            rc[i].grp[ph] = WL_GROUP_TP;
            if (ph == WL_PHASE_OPT) continue;
            rc[i].comp[ph] = comp_s(w, r->comp[ph]);
            rc[i].comm[ph] = coll_s(w, net, r->comm[ph], &rc[i].grp[ph], &oom);
        }
    if (oom) {
        free(wg_done);
        free(rc);
        return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    }
    double t = 0, a = 0, busy = 0; /* compute stream, async (wg) stream, pipelined work */
    SimBreakdown *b = &out->breakdown;
    for (int32_t i = 0; i < n; i++) {
        if (wg_done[i] > t) {
            charge(b, WL_GROUP_DP, wg_done[i] - t);
            t = wg_done[i];
        }
        t += rc[i].comp[WL_PHASE_FWD];
        b->compute_s += rc[i].comp[WL_PHASE_FWD];
        t += rc[i].comm[WL_PHASE_FWD];
        charge(b, rc[i].grp[WL_PHASE_FWD], rc[i].comm[WL_PHASE_FWD]);
    }
    for (int32_t i = n - 1; i >= 0; i--) {
        t += rc[i].comp[WL_PHASE_IG];
        b->compute_s += rc[i].comp[WL_PHASE_IG];
        t += rc[i].comm[WL_PHASE_IG];
        charge(b, rc[i].grp[WL_PHASE_IG], rc[i].comm[WL_PHASE_IG]);
        t += rc[i].comp[WL_PHASE_WG];
        b->compute_s += rc[i].comp[WL_PHASE_WG];
        double x = rc[i].comm[WL_PHASE_WG];
        if (x > 0) {
            double st = a > t ? a : t;
            a = st + x;
            wg_done[i] = a;
        }
    }
    for (int32_t i = 0; i < n; i++)
        if (strcmp(w->rows[r0 + i].name, "embedding_layer") != 0)
            busy += rc[i].comp[WL_PHASE_FWD] + rc[i].comm[WL_PHASE_FWD] + rc[i].comp[WL_PHASE_IG] +
                    rc[i].comm[WL_PHASE_IG] + rc[i].comp[WL_PHASE_WG];
    free(wg_done);
    free(rc);
    if (a > t) charge(b, WL_GROUP_DP, a - t);
    double end = t > a ? t : a;
    const WlParallel *par = &w->par;
    if (par->pp > 1) {
        int64_t ga = par->ga > 0 ? par->ga : 1, vpp = par->vpp > 0 ? par->vpp : 1;
        b->bubble_s = busy * (double)(par->pp - 1) / (double)(ga * vpp);
        int64_t size, nodes;
        if (par->pp_comm_bytes > 0 && wl_group_span(w, WL_GROUP_PP, net->cl.gpus_per_node, &size, &nodes))
            b->pp_comm_exposed_s = 2.0 * (double)(par->pp - 1) * hw_p2p_time_s(net, par->pp_comm_bytes, nodes > 1);
    }
    out->pipeline_time_s = t + b->bubble_s + b->pp_comm_exposed_s;
    out->iteration_time_s = end + b->bubble_s + b->pp_comm_exposed_s;
    if (par->pp > 1) out->bubble_fraction = b->bubble_s / out->pipeline_time_s;
    out->n_stages = 1;
    return TS_OK;
}

/* Tokens per iteration = ga * micro-batch * dp * seq, dp = world/(tp*pp*cp). */
bool sim_replay_throughput(const Workload *w, int64_t seq, int64_t micro_batch, SimResult *r)
{
    const WlParallel *p = &w->par;
    if (seq <= 0 || micro_batch <= 0 || p->world <= 0 || p->tp <= 0 || p->pp <= 0 || p->ga <= 0 ||
        r->iteration_time_s <= 0)
        return false;
    double dp = (double)p->world / (double)(p->tp * p->pp * (p->cp > 0 ? p->cp : 1));
    double samples = (double)p->ga * (double)micro_batch * dp;
    r->samples_per_s = samples / r->iteration_time_s;
    r->tokens_per_s = samples * (double)seq / r->iteration_time_s;
    r->tokens_per_s_per_gpu = r->tokens_per_s / (double)p->world;
    return true;
}
