/* The generator: one training iteration of a Megatron-style job as a task
 * DAG per pipeline stage (one rank class per stage: every TP/CP/DP rank of a
 * stage does the same work).
 *
 * Per micro-batch and model chunk, in the order of the plan's schedule
 * (GPipe, 1F1B, interleaved 1F1B as Megatron-Core orders them):
 *   forward:  [recv activation] [embedding] per layer: attention block and
 *             MLP/MoE block, each [SP all-gather | -] compute [SP reduce-
 *             scatter | TP all-reduce], CP K/V all-gather, EP all-to-all
 *             dispatch/combine; [head + loss all-reduces] [send activation]
 *   backward: the mirror image (ig compute, the transposed collective, wg
 *             compute), recompute work folded into ig; on the last
 *             micro-batch of each chunk, DP gradient buckets are reduced
 *             asynchronously as their layers finish (Megatron's overlapped
 *             grad reduce): reduce-scatter with ZeRO/dist-opt, else all-reduce,
 *             over the DP group, or DP x CP when cp > 1 (Megatron's
 *             data-parallel group with context parallelism).
 *   step:     wait for the buckets, [tied word-embedding gradient all-reduce
 *             between stage 0 and stage pp-1 (Megatron finalize_model_grads,
 *             after the DP reduction)], [Shampoo preconditioners + all-gather],
 *             optimizer update, [dist-opt/ZeRO parameter all-gather], grad-norm
 *             all-reduce.
 * Tasks run on one compute stream: each depends on the previous one, so the
 * dependency list is also the issue order; async collectives and sends hang
 * off the stream without blocking it.
 *
 * Legend: B micro-batch, S seq (per CP rank), H hidden, F ffn, V padded
 * vocab, A heads, G kv heads, D head dim, E experts, K top-k. */
#include "builder_int.h"
#include "../common/common_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- emission ------------------------------------------------------------------------- */
static int32_t emit2(Gen *g, WlTask *t, int32_t extra_dep, int32_t extra2, bool advance)
{
    int32_t d[4];
    int n = 0;
    if (g->last >= 0) d[n++] = g->last;
    if (extra_dep >= 0 && extra_dep != g->last) d[n++] = extra_dep;
    if (extra2 >= 0 && extra2 != g->last && extra2 != extra_dep) d[n++] = extra2;
    if (g->join >= 0 && advance) {
        d[n++] = g->join;
        g->join = -1;
    }
    int32_t id = wl_task_add(g->w, t, d, n, NULL, 0);
    if (id < 0) g->oom = true;
    else if (advance) g->last = id;
    return id;
}

static int32_t emit(Gen *g, WlTask *t, int32_t extra_dep, bool advance)
{
    return emit2(g, t, extra_dep, -1, advance);
}

static void comp_f(Gen *g, const char *name, WlPhase ph, int64_t mb, int64_t ch, int64_t layer, double s,
                   double flops, double bytes, int32_t extra, int32_t extra2, uint32_t flags)
{
    WlTask t = wl_task_comp(name, ph, flops, bytes, g->in_pair ? s * g->pair_stretch : s);
    t.micro = (int32_t)mb;
    t.chunk = (int32_t)ch;
    t.layer = (int32_t)layer;
    t.flags |= flags;
    emit2(g, &t, extra, extra2, true);
}

static void comp(Gen *g, const char *name, WlPhase ph, int64_t mb, int64_t ch, int64_t layer, double s,
                 double flops, double bytes, int32_t extra)
{
    comp_f(g, name, ph, mb, ch, layer, s, flops, bytes, extra, -1, 0);
}

/* A collective's time as the replay takes it (wl_coll_time_s); 0 without
 * WlBuildOptions.net. */
static double coll_time(Gen *g, const WlTask *t)
{
    int64_t n, nodes;
    if (!g->o->net) return 0;
    if (!wl_group_span(g->w, t->group, g->o->net->cl.gpus_per_node, &n, &nodes)) {
        g->oom = true;
        return 0;
    }
    return wl_coll_time_s(g->w, g->o->net, t, n, nodes);
}

/* Inside an F&B pair, a collective on the compute stream: its time as the
 * replay takes it, which the pair's SM slow-down covers too. */
static void pair_comm(Gen *g, const WlTask *t) { g->pair_comm_s += coll_time(g, t); }

/* Inside a stretched F&B pair, a CP ring step: collectives of `comm`
 * seconds (as the replay takes them) beside `hid` seconds of compute. The
 * simulator stretches the step's whole time, hidden and exposed (sim_pair_s:
 * the exposed CP time is in fwd_s, bwd_s), max(comm, hid) x stretch, and
 * counts `hid` (at most `comm`) as overlapped (the overlap slow-down). So
 * the ring's compute runs unstretched (ring_comp) beside the collectives,
 * and the rest, max(comm, hid) x (stretch - 1), goes to the pair's
 * "pair.sm" task. */
static void pair_ring(Gen *g, double comm, double hid)
{
    double s = g->pair_stretch;
    if (g->in_pair && s > 1) g->pair_ring_s += fmax(comm, hid) * (s - 1);
}

/* A CP ring's compute, unstretched inside a pair (pair_ring). */
static void ring_comp(Gen *g, const char *name, WlPhase ph, int64_t mb, int64_t ch, int64_t l, double s, int32_t extra,
                      int32_t extra2, uint32_t fl)
{
    double st = g->pair_stretch;
    if (g->in_pair) g->pair_stretch = 1;
    comp_f(g, name, ph, mb, ch, l, s, 0, 0, extra, extra2, fl);
    g->pair_stretch = st;
}

static int32_t coll(Gen *g, const char *name, WlPhase ph, int64_t mb, TsColl c, WlGroup grp, double bytes,
                    bool blocking)
{
    if (c == TS_COLL_NONE || wl_group_size(g->w, grp) <= 1 || bytes <= 0) return -1;
    WlTask t = wl_task_coll(name, ph, c, grp, bytes);
    t.micro = (int32_t)mb;
    if (!blocking) t.flags |= WL_F_ASYNC;
    if (g->in_pair && blocking) pair_comm(g, &t);
    return emit(g, &t, -1, blocking);
}

/* An asynchronous collective that waits for task `dep` only (-1: none), off
 * the stream: chains on a stream of its own. Returns it, -1 when out of
 * memory (g->oom set). */
static int32_t coll_after(Gen *g, const char *name, WlPhase ph, int64_t mb, TsColl c, WlGroup grp, double bytes,
                          int32_t dep)
{
    WlTask t = wl_task_coll(name, ph, c, grp, bytes);
    t.micro = (int32_t)mb;
    t.flags |= WL_F_ASYNC;
    int32_t id = wl_task_add(g->w, &t, &dep, dep >= 0 ? 1 : 0, NULL, 0);
    if (id < 0) g->oom = true;
    return id;
}

static void pend(Gen *g, int32_t id)
{
    if (id < 0) return;
    if (!ts_grow((void **)&g->pending, &g->cap_pending, (size_t)g->n_pending + 1, sizeof *g->pending)) {
        g->oom = true;
        return;
    }
    g->pending[g->n_pending++] = id;
}

static int32_t tag_of(const Gen *g, int64_t mb, int64_t boundary, int dir)
{
    return (int32_t)((mb * g->n_path + boundary) * 2 + dir);
}

/* ---- the chunks the schedule walks ----------------------------------------------------- */
/* Path chunk pc's model chunk (its layers; 0 holds the embedding, n_chunks-1
 * the head) and the rank holding it: rank pc mod pp; DualPipeV's V and
 * DualPipe's two copies place chunks pp.. on ranks pp-1 down to 0. */
static int64_t model_chunk(const Gen *g, int64_t pc) { return pc % g->n_chunks; }

static int64_t path_rank(const Gen *g, int64_t pc)
{
    int64_t pp = g->p->pp;
    if (g->p->schedule == PLAN_SCHED_DUALPIPE || g->p->schedule == PLAN_SCHED_DUALPIPEV)
        return pc < pp ? pc : 2 * pp - 1 - pc;
    return pc % pp;
}

/* Rank s's k-th chunk (plan_rank_chunk) as a path chunk. */
static int64_t path_chunk(const Gen *g, int64_t s, int64_t k)
{
    int64_t c = plan_rank_chunk(g->p, s, k);
    return g->p->schedule == PLAN_SCHED_DUALPIPE && k == 1 ? c + g->n_chunks : c;
}

/* The first micro-batch through path chunk pc: DualPipe's second copy runs
 * the second half of them. */
static int64_t path_mb0(const Gen *g, int64_t pc) { return pc >= g->n_chunks ? g->p->grad_accum / 2 : 0; }

/* Does the forward of pc receive its input from another rank (the backward
 * sends its input gradient back), does it send its output to another rank?
 * Not at the model's ends, nor at the V's turn (both chunks on rank pp-1). */
static bool path_recvs(const Gen *g, int64_t pc)
{
    return model_chunk(g, pc) > 0 && path_rank(g, pc - 1) != path_rank(g, pc);
}

static bool path_sends(const Gen *g, int64_t pc)
{
    return model_chunk(g, pc) < g->n_chunks - 1 && path_rank(g, pc + 1) != path_rank(g, pc);
}

static void p2p(Gen *g, const char *name, WlPhase ph, int64_t mb, bool send, int64_t peer_chunk, int64_t boundary,
                int dir)
{
    int32_t peer = (int32_t)path_rank(g, peer_chunk);
    WlTask t = wl_task_p2p(name, ph, send, peer, g->t->boundary_bytes, tag_of(g, mb, boundary, dir));
    t.micro = (int32_t)mb;
    /* a receive gates the compute after it; a send does not, except in
     * DeepSpeed's pipeline engine, whose blocking sends and receives meet
     * as a rendezvous */
    if (plan_ds_pipe(g->p)) t.flags |= WL_F_SYNC;
    emit(g, &t, -1, !send || plan_ds_pipe(g->p));
}

/* Megatron-Core's gradient buckets (param_and_grad_buffer.py), as the
 * simulator forms them (src/sim/dp_buckets.c): the parameter tensors, in
 * backward order, fill a bucket until it holds at least bucket_max elements;
 * it closes at the end of that tensor and is reduced asynchronously (dense
 * over DP x CP, routed experts over DP_EP, each its own buffer). What is left
 * open goes at the chunk's last backward; without DP overlap every bucket
 * waits for the step (g->deferred). */
static void bucket_emit(Gen *g, double elems, bool expert)
{
    bool rs = (g->p->dist_opt || g->p->zero >= 1) && !plan_ds_pipe(g->p); /* DeepSpeed's pipe all-reduces */
    const char *name = expert ? (rs ? "egrad.rs" : "egrad.ar") : (rs ? "grad.rs" : "grad.ar");
    pend(g, coll(g, name, WL_PHASE_WG, -1, rs ? TS_COLL_REDUCESCATTER : TS_COLL_ALLREDUCE,
                 expert ? WL_GROUP_DP_EP : g->dpg, elems * wl_gen_grad_bytes(g), false));
}

static void bucket_close(Gen *g, bool expert)
{
    double *open = expert ? &g->ebucket : &g->bucket, b = *open;
    *open = 0;
    if (!(b > 0) || (expert ? wl_group_size(g->w, WL_GROUP_DP_EP) : g->dpn) <= 1) return;
    if (!g->o->dp_after_backward || g->final_flush) {
        bucket_emit(g, b, expert);
        return;
    }
    if (!ts_grow((void **)&g->deferred, &g->cap_deferred, (size_t)g->n_deferred + 1, sizeof *g->deferred)) {
        g->oom = true;
        return;
    }
    g->deferred[g->n_deferred++] = expert ? -b : b; /* sign: expert buffer */
}

static void bucket_feed(Gen *g, double tensor, bool expert)
{
    if (plan_rs_per_microbatch(g->p) || !(tensor > 0)) return; /* per unit, fsdp_reduce */
    double *open = expert ? &g->ebucket : &g->bucket;
    *open += tensor;
    if (*open >= g->bucket_max) bucket_close(g, expert);
}

/* A block's gradients are ready (its last micro-batch's weight gradients). */
static void grad_block(Gen *g, const Block *b)
{
    for (int i = 0; i < 2; i++) bucket_feed(g, b->grad_t[i], false);
    for (int i = 0; i < 2; i++) bucket_feed(g, b->egrad_t[i], true);
}

/* The end of a chunk's backward: the open buckets go. */
static void bucket_flush(Gen *g)
{
    bucket_close(g, false);
    bucket_close(g, true);
}

/* An FSDP unit (a layer, or the root: embedding / head) is done. */
static void unit_done(Gen *g)
{
    g->unit_end[0] = g->unit_end[1];
    g->unit_end[1] = g->last;
}

/* ZeRO-3 / FSDP: gather a unit's parameters (16-bit): dense ones over the DP
 * group, then the experts over DP_EP. Emitted one unit ahead by the callers
 * (prefetch), it waits for the unit before (FSDP frees it, so at most two
 * units are gathered at a time), not for the stream. Returns the gather for
 * the unit's first compute to wait on, -1 when there is nothing to gather. */
static int32_t fsdp_gather(Gen *g, double params, double eparams, WlPhase ph, int64_t mb)
{
    if (g->p->zero < 3) return -1;
    int32_t dep = g->unit_end[1], id = -1;
    double part[2] = {g->dpn > 1 ? params - eparams : 0, g->edpn > 1 ? eparams : 0};
    for (int i = 0; i < 2 && !g->oom; i++) {
        if (!(part[i] > 0)) continue;
        id = dep = coll_after(g, i ? "efsdp.ag" : "fsdp.ag", ph, mb, TS_COLL_ALLGATHER, i ? WL_GROUP_DP_EP : g->dpg,
                              part[i] * g->t->act_bytes, dep);
    }
    return g->oom ? -1 : id;
}

/* ZeRO-3: a unit's whole forward or backward, its TP / CP / EP collectives
 * included, waits for its gather (FSDP's pre-forward and pre-backward hooks
 * wait for the unshard before the module runs): the unit's first task joins
 * it. */
static void unit_wait(Gen *g, int32_t ag)
{
    if (ag < 0) return;
    if (g->join >= 0) comp(g, "fsdp.wait", WL_PHASE_FWD, -1, -1, -1, 0, 0, 0, -1); /* takes the open join */
    g->join = ag;
}

/* ZeRO-3 (and ZeRO-2 over several micro-batches): reduce-scatter a unit's
 * gradients after its weight gradients, every micro-batch, dense over DP,
 * experts over DP_EP (asynchronous, joined at the step). */
static void fsdp_reduce(Gen *g, double params, double eparams, int64_t mb)
{
    if (!plan_rs_per_microbatch(g->p)) return;
    if (g->dpn > 1 && params - eparams > 0)
        pend(g, coll(g, "fsdp.rs", WL_PHASE_WG, mb, TS_COLL_REDUCESCATTER, g->dpg, (params - eparams) * wl_gen_grad_bytes(g),
                     false));
    /* HSDP: the rank's 1/shard of the unit's gradient all-reduced across the
     * replicas, once per step (after the last micro-batch's reduce-scatter) */
    if (g->rpn > 1 && mb == g->p->grad_accum - 1 && params - eparams > 0)
        pend(g, coll(g, "hsdp.ar", WL_PHASE_WG, mb, TS_COLL_ALLREDUCE, WL_GROUP_REPLICATE,
                     (params - eparams) * wl_gen_grad_bytes(g) / (double)g->dpn, false));
    if (g->edpn > 1 && eparams > 0)
        pend(g, coll(g, "efsdp.rs", WL_PHASE_WG, mb, TS_COLL_REDUCESCATTER, WL_GROUP_DP_EP, eparams * wl_gen_grad_bytes(g),
                     false));
}

/* Ulysses all-to-alls of one micro-batch on this TP rank: Q, K, V in, the
 * attention output back (each rank's whole buffer). */
static void cp_a2a_bytes(const Gen *g, double *qkv, double *out)
{
    *qkv = g->t->cp_q_bytes + g->t->cp_kv_bytes / (double)g->p->cp;
    *out = g->t->cp_o_bytes;
}

/* --tp-overlap (Transformer Engine userbuffers): a block's TP collectives
 * run under its GEMMs, as the simulator hides them (exposed: what the GEMMs
 * do not cover). The window opens after the block's other compute: the
 * collectives start asynchronously, chained on the TP stream (SP all-gather
 * then reduce-scatter, or the all-reduce), the GEMMs run, and a zero-time
 * task closes the window by waiting for the chain. Returns the chain's last
 * collective, -1 when TP is 1. */
static int32_t tp_async(Gen *g, WlPhase ph, int64_t mb)
{
    if (g->p->tp <= 1) return -1;
    int32_t dep = g->last, id = -1;
    const char *nm[2] = {g->p->sp ? "sp.ag" : "tp.ar", "sp.rs"};
    TsColl c[2] = {g->p->sp ? TS_COLL_ALLGATHER : TS_COLL_ALLREDUCE, TS_COLL_REDUCESCATTER};
    for (int i = 0; i < (g->p->sp ? 2 : 1) && !g->oom; i++)
        id = dep = coll_after(g, nm[i], ph, mb, c[i], WL_GROUP_TP, g->t->tp_bytes, dep);
    return g->oom ? -1 : id;
}

/* A block's compute of `dur` seconds, `gemm` of them GEMMs. With `ov` the
 * non-GEMM part runs first ("<name>.x"), then the TP window opens under the
 * GEMMs (returns the chain, to close with tp_close); else one task, -1. */
static int32_t comp_open(Gen *g, const char *name, WlPhase ph, int64_t mb, int64_t ch, int64_t l, double dur,
                         double gemm, double flops, double bytes, int32_t extra, int32_t extra2, uint32_t fl, bool ov)
{
    if (!ov) {
        comp_f(g, name, ph, mb, ch, l, dur, flops, bytes, extra, extra2, fl);
        return -1;
    }
    gemm = fmin(gemm, dur);
    char rest[56];
    snprintf(rest, sizeof rest, "%s.x", name);
    comp_f(g, rest, ph, mb, ch, l, dur - gemm, 0, 0, extra, extra2, fl);
    int32_t chain = tp_async(g, ph, mb);
    comp_f(g, name, ph, mb, ch, l, gemm, flops, bytes, -1, -1, fl);
    return chain;
}

/* Close the TP window: a zero-time task waits for the stream and the chain. */
static void tp_close(Gen *g, const char *name, WlPhase ph, int64_t mb, int64_t ch, int64_t l, int32_t chain,
                     uint32_t fl)
{
    if (chain < 0) return;
    char jn[56];
    snprintf(jn, sizeof jn, "%s.tp", name);
    comp_f(g, jn, ph, mb, ch, l, 0, 0, 0, chain, -1, fl);
}

/* An EP all-to-all: blocking on the stream; inside an F&B pair (`overlap`)
 * chained on the pair's all-to-all chain, under the pair's compute (pair());
 * a full recompute's forward keeps its all-to-alls on the stream, as the
 * simulator counts them in the backward's compute. */
static void ep_a2a(Gen *g, const char *name, WlPhase ph, int64_t mb, double bytes, bool overlap)
{
    if (!(g->in_pair && overlap)) {
        coll(g, name, ph, mb, TS_COLL_ALLTOALL, WL_GROUP_EP, bytes, true);
        return;
    }
    if (wl_group_size(g->w, WL_GROUP_EP) <= 1 || bytes <= 0) return;
    WlTask t = wl_task_coll(name, ph, TS_COLL_ALLTOALL, WL_GROUP_EP, bytes);
    t.micro = (int32_t)mb;
    t.flags |= WL_F_ASYNC | WL_F_PAIR;
    int32_t id = wl_task_add(g->w, &t, &g->pair_ep, g->pair_ep >= 0 ? 1 : 0, NULL, 0);
    if (id < 0) g->oom = true;
    else g->pair_ep = id;
}

/* A block's forward with its collectives; `rf`: the full-recompute forward
 * inside the backward (phase ig, flagged); `ag`: the ZeRO-3 gather its
 * compute waits for, -1 none. */
static void block_fwd_as(Gen *g, const Block *b, const char *nm, int64_t mb, int64_t ch, int64_t l, bool moe, bool rf,
                         int32_t ag)
{
    const ParallelPlan *p = g->p;
    WlPhase ph = rf ? WL_PHASE_IG : WL_PHASE_FWD;
    uint32_t fl = rf ? WL_F_RECOMPUTE : 0;
    bool ov = p->tp_overlap && p->tp > 1;
    char name[48];
    snprintf(name, sizeof name, "L%lld.%s.%s", (long long)l, nm, rf ? "rf" : "f");
    int32_t chain = -1;
    if (p->sp && !ov) coll(g, "sp.ag", ph, mb, TS_COLL_ALLGATHER, WL_GROUP_TP, g->t->tp_bytes, true);
    if (moe && p->ep > 1) {
        double a2a = g->t->ep_bytes;
        ep_a2a(g, "ep.dispatch", ph, mb, g->t->ep_dispatch_bytes, !rf);
        chain = comp_open(g, name, ph, mb, ch, l, b->fwd_s, b->gemm_fwd_s, b->fwd_flops, b->fwd_bytes, ag, -1, fl, ov);
        tp_close(g, name, ph, mb, ch, l, chain, fl);
        ep_a2a(g, "ep.combine", ph, mb, a2a, !rf);
    } else if (b == &g->attn && p->cp > 1 && g->o->cp_comm != WL_CP_P2P) {
        /* exposed exchange: the K/V gather (or Q/K/V all-to-all) before
         * the block, the output all-to-all after it */
        double qkv, out;
        cp_a2a_bytes(g, &qkv, &out);
        bool a2a = g->o->cp_comm == WL_CP_A2A;
        coll(g, a2a ? "cp.a2a.qkv" : "cp.kv", ph, mb, a2a ? TS_COLL_ALLTOALL : TS_COLL_ALLGATHER, WL_GROUP_CP,
             a2a ? qkv : g->t->cp_kv_bytes, true);
        chain = comp_open(g, name, ph, mb, ch, l, b->fwd_s, b->gemm_fwd_s, b->fwd_flops, b->fwd_bytes, ag, -1, fl, ov);
        tp_close(g, name, ph, mb, ch, l, chain, fl);
        if (a2a) coll(g, "cp.a2a.o", ph, mb, TS_COLL_ALLTOALL, WL_GROUP_CP, out, true);
    } else if (b == &g->attn && p->cp > 1) {
        /* CP ring: the K/V of the other CP ranks (as one gather) travel
         * while the attention core works on the chunks it has: the gather
         * overlaps (cp-1)/cp of the core, the rest of the block waits for
         * it (the simulator's rule) */
        double hid = g->attn.core_fwd_s * (double)(p->cp - 1) / (double)p->cp;
        chain = comp_open(g, name, ph, mb, ch, l, b->fwd_s - hid, b->gemm_fwd_s, b->fwd_flops, b->fwd_bytes, ag, -1,
                          fl, ov);
        tp_close(g, name, ph, mb, ch, l, chain, fl);
        int32_t kv = coll(g, "cp.kv", ph, mb, TS_COLL_ALLGATHER, WL_GROUP_CP, g->t->cp_kv_bytes, false);
        if (g->in_pair) {
            WlTask t = wl_task_coll("cp.kv", ph, TS_COLL_ALLGATHER, WL_GROUP_CP, g->t->cp_kv_bytes);
            pair_ring(g, kv >= 0 ? coll_time(g, &t) : 0, hid);
        }
        snprintf(name, sizeof name, "L%lld.%s.%s.ring", (long long)l, nm, rf ? "rf" : "f");
        ring_comp(g, name, ph, mb, ch, l, hid, -1, -1, fl);
        g->join = kv;
    } else {
        chain = comp_open(g, name, ph, mb, ch, l, b->fwd_s, b->gemm_fwd_s, b->fwd_flops, b->fwd_bytes, ag, -1, fl, ov);
        tp_close(g, name, ph, mb, ch, l, chain, fl);
    }
    if (ov) return;
    if (p->sp) coll(g, "sp.rs", ph, mb, TS_COLL_REDUCESCATTER, WL_GROUP_TP, g->t->tp_bytes, true);
    else coll(g, "tp.ar", ph, mb, TS_COLL_ALLREDUCE, WL_GROUP_TP, g->t->tp_bytes, true);
}

static void block_bwd(Gen *g, const Block *b, const char *nm, int64_t mb, int64_t ch, int64_t l, bool moe,
                      bool last_mb, int32_t extra, int32_t ag)
{
    const ParallelPlan *p = g->p;
    char name[48];
    /* full recompute (with --recompute-layers k only the first k layers of
     * the chunk, Megatron's block method; the rest keep their activations):
     * the block's forward again, with its collectives, on the gathered
     * parameters; then the gradients */
    bool rc_full = p->recompute == PLAN_RECOMPUTE_FULL, ov = p->tp_overlap && p->tp > 1;
    bool full = rc_full && (p->recompute_layers <= 0 || l - g->first[ch] < p->recompute_layers);
    if (full) {
        block_fwd_as(g, b, nm, mb, ch, l, moe, true, ag);
        ag = -1;
    }
    if (p->sp && !ov) coll(g, "sp.ag", WL_PHASE_IG, mb, TS_COLL_ALLGATHER, WL_GROUP_TP, g->t->tp_bytes, true);
    double a2a = g->t->ep_bytes;
    /* the combine's gradient travels as a dispatch (FP8 under DeepEP) */
    if (moe && p->ep > 1)
        ep_a2a(g, "ep.combine.b", WL_PHASE_IG, mb, g->t->ep_dispatch_bytes, true);
    snprintf(name, sizeof name, "L%lld.%s.ig", (long long)l, nm);
    double ig = b->ig_s + (rc_full ? 0 : b->recompute_s) + (rc_full && !full ? b->nr_ig_s : 0);
    double wg = b->wg_s + (rc_full && !full ? b->nr_wg_s : 0);
    int32_t chain = -1; /* --tp-overlap: open under the dgrad GEMMs, closed after the wgrad ones */
    double cp_after = 0; /* exposed CP exchange of the gradients, after the block */
    bool cp_uly = false;
    if (b == &g->attn && p->cp > 1 && g->o->cp_comm != WL_CP_P2P) {
        /* exposed exchange backward: the output gradient's all-to-all, the
         * block, the Q/K/V gradients' all-to-all; or the K/V gathered again,
         * the block, the dK/dV reduce-scatter */
        double qkv, out;
        cp_a2a_bytes(g, &qkv, &out);
        bool uly = g->o->cp_comm == WL_CP_A2A;
        if (uly) coll(g, "cp.a2a.o.b", WL_PHASE_IG, mb, TS_COLL_ALLTOALL, WL_GROUP_CP, out, true);
        else coll(g, "cp.kv.b", WL_PHASE_IG, mb, TS_COLL_ALLGATHER, WL_GROUP_CP, g->t->cp_kv_bytes, true);
        chain = comp_open(g, name, WL_PHASE_IG, mb, ch, l, ig, b->gemm_ig_s, b->ig_flops, b->bwd_bytes / 2, extra, ag,
                          0, ov);
        /* the Q/K/V gradients' exchange goes after the block's weight
         * gradients (below), outside the --tp-overlap window: the TP
         * collectives hide under GEMMs only, as the simulator has them */
        cp_after = uly ? qkv : g->t->cp_kv_bytes;
        cp_uly = uly;
    } else if (b == &g->attn && p->cp > 1) {
        /* CP ring backward: K/V again and the dK/dV partial sums travel
         * while (cp-1)/cp of the core backward runs; that part first, so
         * that the --tp-overlap window opens under the GEMMs only */
        double hid = g->attn.core_ig_s * (double)(p->cp - 1) / (double)p->cp;
        int32_t kv = coll(g, "cp.kv.b", WL_PHASE_IG, mb, TS_COLL_ALLGATHER, WL_GROUP_CP, g->t->cp_kv_bytes, false);
        int32_t dkv =
            kv >= 0 ? coll_after(g, "cp.dkv", WL_PHASE_IG, mb, TS_COLL_REDUCESCATTER, WL_GROUP_CP, g->t->cp_kv_bytes, kv)
                    : -1;
        if (g->in_pair) {
            WlTask t0 = wl_task_coll("cp.kv.b", WL_PHASE_IG, TS_COLL_ALLGATHER, WL_GROUP_CP, g->t->cp_kv_bytes);
            WlTask t1 = wl_task_coll("cp.dkv", WL_PHASE_IG, TS_COLL_REDUCESCATTER, WL_GROUP_CP, g->t->cp_kv_bytes);
            pair_ring(g, dkv >= 0 ? coll_time(g, &t0) + coll_time(g, &t1) : 0, hid);
        }
        char ring[48];
        snprintf(ring, sizeof ring, "L%lld.%s.ig.ring", (long long)l, nm);
        ring_comp(g, ring, WL_PHASE_IG, mb, ch, l, hid, extra, ag, 0);
        g->join = dkv;
        chain = comp_open(g, name, WL_PHASE_IG, mb, ch, l, ig - hid, b->gemm_ig_s, b->ig_flops, b->bwd_bytes / 2, -1,
                          -1, 0, ov);
    } else {
        chain = comp_open(g, name, WL_PHASE_IG, mb, ch, l, ig, b->gemm_ig_s, b->ig_flops, b->bwd_bytes / 2, extra, ag, 0,
                          ov);
    }
    if (moe && p->ep > 1 && !ov) ep_a2a(g, "ep.dispatch.b", WL_PHASE_IG, mb, a2a, true);
    if (!ov) {
        if (p->sp) coll(g, "sp.rs", WL_PHASE_IG, mb, TS_COLL_REDUCESCATTER, WL_GROUP_TP, g->t->tp_bytes, true);
        else coll(g, "tp.ar", WL_PHASE_IG, mb, TS_COLL_ALLREDUCE, WL_GROUP_TP, g->t->tp_bytes, true);
    }
    if (g->split_w) {
        /* the weight gradients run in the W pass (block_w); the exposed CP
         * exchange of the input gradients stays in the I pass, as the
         * simulator counts it in the backward's input-gradient part */
        if (cp_after > 0)
            coll(g, cp_uly ? "cp.a2a.qkv.b" : "cp.dkv", WL_PHASE_IG, mb,
                 cp_uly ? TS_COLL_ALLTOALL : TS_COLL_REDUCESCATTER, WL_GROUP_CP, cp_after, true);
        return;
    }
    snprintf(name, sizeof name, "L%lld.%s.wg", (long long)l, nm);
    /* --tp-overlap: the window holds the dgrad and wgrad GEMMs only (the
     * simulator's rule, layer_cost.c); the rest of the weight gradients and
     * the EP all-to-all follow it */
    double wg_gemm = ov ? fmin(b->gemm_wg_s, wg) : wg;
    comp(g, name, WL_PHASE_WG, mb, ch, l, wg_gemm, b->wg_flops, b->bwd_bytes / 2, -1);
    tp_close(g, name, WL_PHASE_WG, mb, ch, l, chain, 0);
    if (ov) {
        char rest[56];
        snprintf(rest, sizeof rest, "%s.x", name);
        comp(g, rest, WL_PHASE_WG, mb, ch, l, wg - wg_gemm, 0, 0, -1);
        if (moe && p->ep > 1) ep_a2a(g, "ep.dispatch.b", WL_PHASE_IG, mb, a2a, true);
    }
    if (cp_after > 0)
        coll(g, cp_uly ? "cp.a2a.qkv.b" : "cp.dkv", WL_PHASE_IG, mb, cp_uly ? TS_COLL_ALLTOALL : TS_COLL_REDUCESCATTER,
             WL_GROUP_CP, cp_after, true);
    if (last_mb) grad_block(g, b);
}

/* Layers of each chunk: the plan's split (plan_chunk_layers: --stage-layers,
 * the uneven rule, or even). */
void wl_gen_chunk_split(const ModelSpec *m, const ParallelPlan *p, int64_t n_chunks, int64_t *first)
{
    first[0] = 0;
    for (int64_t c = 0; c < n_chunks; c++) first[c + 1] = first[c] + plan_model_chunk_layers(p, m, c);
}
static int64_t chunk_first(const Gen *g, int64_t ch) { return g->first[ch]; }
static int64_t chunk_layers(const Gen *g, int64_t ch) { return g->first[ch + 1] - g->first[ch]; }

/* Parameters of layer l on this rank (one FSDP unit under ZeRO-3). */
static double layer_params(const Gen *g, int64_t l)
{
    return g->attn.params + (model_layer_is_moe(g->m, l) ? g->moe.params : g->mlp.params);
}

static double layer_eparams(const Gen *g, int64_t l)
{
    return model_layer_is_moe(g->m, l) ? g->moe.eparams : 0;
}

/* The pipeline transfers of path chunk pc on micro-batch mb: the forward's
 * input and output, the backward's output gradient in and input gradient
 * out (DeepSpeed's pipeline engine: in ds_schedule instead). */
static void fwd_recv(Gen *g, int64_t mb, int64_t pc)
{
    if (!plan_ds_pipe(g->p) && path_recvs(g, pc)) p2p(g, "pp.recv.f", WL_PHASE_FWD, mb, false, pc - 1, pc - 1, 0);
}

static void fwd_send(Gen *g, int64_t mb, int64_t pc)
{
    if (!plan_ds_pipe(g->p) && path_sends(g, pc)) p2p(g, "pp.send.f", WL_PHASE_FWD, mb, true, pc + 1, pc, 0);
}

static void bwd_recv(Gen *g, int64_t mb, int64_t pc)
{
    if (!plan_ds_pipe(g->p) && path_sends(g, pc)) p2p(g, "pp.recv.b", WL_PHASE_IG, mb, false, pc + 1, pc, 1);
}

static void bwd_send(Gen *g, int64_t mb, int64_t pc)
{
    if (!plan_ds_pipe(g->p) && path_recvs(g, pc)) p2p(g, "pp.send.b", WL_PHASE_IG, mb, true, pc - 1, pc - 1, 1);
}

/* The forward of path chunk pc on micro-batch mb, its transfers aside. */
static void fwd_body(Gen *g, int64_t mb, int64_t pc)
{
    const ParallelPlan *p = g->p;
    int64_t ch = model_chunk(g, pc), first = chunk_first(g, ch), nl = chunk_layers(g, ch);
    bool mb0 = mb == path_mb0(g, pc); /* the first forward waits for the parameter gathers */
    if (ch == 0) {
        comp_f(g, "embed.f", WL_PHASE_FWD, mb, ch, -1, g->embed.fwd_s, 0, g->embed.fwd_bytes,
               fsdp_gather(g, g->embed.params + (g->n_chunks == 1 ? g->head.params : 0), 0, WL_PHASE_FWD, mb),
               mb0 ? g->pg_ag[wl_gen_layers(g->m)] : -1, 0);
        if (p->sp) coll(g, "sp.rs", WL_PHASE_FWD, mb, TS_COLL_REDUCESCATTER, WL_GROUP_TP, g->t->tp_bytes, true);
        else coll(g, "tp.ar", WL_PHASE_FWD, mb, TS_COLL_ALLREDUCE, WL_GROUP_TP, g->t->tp_bytes, true);
        unit_done(g);
    }
    /* ZeRO-3: each layer's gather is issued when the previous layer starts
     * (FSDP's prefetch of the next unit) */
    int32_t ag = fsdp_gather(g, layer_params(g, first), layer_eparams(g, first), WL_PHASE_FWD, mb);
    for (int64_t l = first; l < first + nl; l++) {
        bool moe = model_layer_is_moe(g->m, l);
        int32_t next = l + 1 < first + nl ? fsdp_gather(g, layer_params(g, l + 1), layer_eparams(g, l + 1), WL_PHASE_FWD, mb) : -1;
        /* a layer's whole forward, its input's SP all-gather included, waits
         * for its parameters (FSDP's pre-forward hook; Megatron's forward
         * pre-hook of --overlap-param-gather, on the layer's first module) */
        int32_t wait = ag >= 0 ? ag : mb0 ? g->pg_ag[l] : -1;
        unit_wait(g, wait);
        block_fwd_as(g, &g->attn, "attn", mb, ch, l, false, false, wait);
        block_fwd_as(g, moe ? &g->moe : &g->mlp, moe ? "moe" : "mlp", mb, ch, l, moe, false, -1);
        unit_done(g);
        ag = next;
    }
    if (ch == g->n_chunks - 1) {
        if (mb0) unit_wait(g, g->pg_ag[wl_gen_layers(g->m) + 1]); /* the head's input gather waits too */
        for (int64_t i = 0; i <= g->m->mtp_layers; i++) /* the head's input, and each MTP module's */
            if (p->sp) coll(g, "sp.ag", WL_PHASE_FWD, mb, TS_COLL_ALLGATHER, WL_GROUP_TP, g->t->tp_bytes, true);
        /* (ZeRO-3: the head belongs to the root unit, gathered with the
         * embedding when the chunk holds both, else here) */
        comp_f(g, "head.f", WL_PHASE_FWD, mb, ch, -1, g->head.fwd_s, g->head.fwd_flops, g->head.fwd_bytes,
               ch == 0 ? -1 : fsdp_gather(g, g->head.params, 0, WL_PHASE_FWD, mb),
               mb0 ? g->pg_ag[wl_gen_layers(g->m) + 1] : -1, 0);
        for (int64_t i = 0; i < 3 * (1 + g->m->mtp_layers); i++) /* vocab-parallel cross-entropy: max,
                                                                 sum-exp, target logit; per loss */
            coll(g, "loss.ar", WL_PHASE_FWD, mb, TS_COLL_ALLREDUCE, WL_GROUP_TP, g->t->vocab_ar_bytes, true);
    }
    g->fwd_last[mb * g->n_path + pc] = g->last;
}

static void chunk_fwd(Gen *g, int64_t mb, int64_t pc)
{
    fwd_recv(g, mb, pc);
    fwd_body(g, mb, pc);
    fwd_send(g, mb, pc);
}

/* A block's weight gradients as a W pass of its own (split_w). */
static void block_w(Gen *g, const Block *b, const char *nm, int64_t mb, int64_t ch, int64_t l, bool last_mb)
{
    char name[48];
    snprintf(name, sizeof name, "L%lld.%s.wg", (long long)l, nm);
    comp(g, name, WL_PHASE_WG, mb, ch, l, b->wg_s, b->wg_flops, b->bwd_bytes / 2, -1);
    if (last_mb) grad_block(g, b);
}

/* ZB-H1's W pass of a chunk: the weight gradients its I pass left, in the
 * backward's order (head, layers last to first, embedding); the last
 * micro-batch's feeds the DP buckets. */
static void chunk_w(Gen *g, int64_t mb, int64_t pc, bool last_mb)
{
    int64_t ch = model_chunk(g, pc), first = chunk_first(g, ch), nl = chunk_layers(g, ch);
    if (ch == g->n_chunks - 1) {
        comp(g, "head.wg", WL_PHASE_WG, mb, ch, -1, g->head.wg_s, g->head.wg_flops, g->head.bwd_bytes / 2, -1);
        if (last_mb) bucket_feed(g, g->head.params, false);
    }
    for (int64_t l = first + nl - 1; l >= first; l--) {
        bool moe = model_layer_is_moe(g->m, l);
        block_w(g, moe ? &g->moe : &g->mlp, moe ? "moe" : "mlp", mb, ch, l, last_mb);
        block_w(g, &g->attn, "attn", mb, ch, l, last_mb);
    }
    if (ch == 0) {
        comp(g, "embed.wg", WL_PHASE_WG, mb, ch, -1, g->embed.wg_s, 0, g->embed.bwd_bytes, -1);
        if (last_mb) bucket_feed(g, g->embed.params, false);
    }
    if (last_mb) bucket_flush(g);
}

/* The backward of path chunk pc on micro-batch mb, its transfers and the
 * last micro-batch's bucket flush aside. */
static void bwd_body(Gen *g, int64_t mb, int64_t pc, bool last_mb)
{
    const ParallelPlan *p = g->p;
    int64_t ch = model_chunk(g, pc), first = chunk_first(g, ch), nl = chunk_layers(g, ch);
    int32_t extra = g->fwd_last[mb * g->n_path + pc];
    if (ch == g->n_chunks - 1) {
        /* (ZeRO-3: embedding and head form the root unit, kept gathered
         * from its forward to its backward as FSDP does) */
        comp(g, "head.ig", WL_PHASE_IG, mb, ch, -1, g->head.ig_s, g->head.ig_flops, g->head.bwd_bytes / 2, extra);
        extra = -1;
        for (int64_t i = 0; i <= g->m->mtp_layers; i++) /* each pass's input gradient */
            if (p->sp) coll(g, "sp.rs", WL_PHASE_IG, mb, TS_COLL_REDUCESCATTER, WL_GROUP_TP, g->t->tp_bytes, true);
            else coll(g, "tp.ar", WL_PHASE_IG, mb, TS_COLL_ALLREDUCE, WL_GROUP_TP, g->t->tp_bytes, true);
        if (!g->split_w)
            comp(g, "head.wg", WL_PHASE_WG, mb, ch, -1, g->head.wg_s, g->head.wg_flops, g->head.bwd_bytes / 2, -1);
        if (ch > 0) fsdp_reduce(g, g->head.params, 0, mb);
        unit_done(g);
        if (last_mb && !g->split_w) bucket_feed(g, g->head.params, false);
    }
    int32_t ag = fsdp_gather(g, layer_params(g, first + nl - 1), layer_eparams(g, first + nl - 1), WL_PHASE_IG, mb);
    for (int64_t l = first + nl - 1; l >= first; l--) {
        bool moe = model_layer_is_moe(g->m, l);
        int32_t next = l > first ? fsdp_gather(g, layer_params(g, l - 1), layer_eparams(g, l - 1), WL_PHASE_IG, mb) : -1;
        unit_wait(g, ag);
        block_bwd(g, moe ? &g->moe : &g->mlp, moe ? "moe" : "mlp", mb, ch, l, moe, last_mb, extra, ag);
        extra = -1;
        block_bwd(g, &g->attn, "attn", mb, ch, l, false, last_mb, -1, -1);
        fsdp_reduce(g, layer_params(g, l), layer_eparams(g, l), mb);
        unit_done(g);
        ag = next;
    }
    if (ch == 0) {
        if (p->sp) coll(g, "sp.ag", WL_PHASE_IG, mb, TS_COLL_ALLGATHER, WL_GROUP_TP, g->t->tp_bytes, true);
        if (!g->split_w) comp(g, "embed.wg", WL_PHASE_WG, mb, ch, -1, g->embed.wg_s, 0, g->embed.bwd_bytes, extra);
        fsdp_reduce(g, g->embed.params + (g->n_chunks == 1 ? g->head.params : 0), 0, mb);
        if (last_mb && !g->split_w) bucket_feed(g, g->embed.params, false);
    }
}

static void chunk_bwd(Gen *g, int64_t mb, int64_t pc, bool last_mb)
{
    bwd_recv(g, mb, pc);
    bwd_body(g, mb, pc, last_mb);
    bwd_send(g, mb, pc);
    if (last_mb && !g->split_w) bucket_flush(g);
}

/* Does model chunk ch move EP all-to-alls (an MoE layer with EP > 1)? */
static bool chunk_ep(const Gen *g, int64_t ch)
{
    if (g->p->ep <= 1 || !(g->t->ep_bytes > 0) || wl_group_size(g->w, WL_GROUP_EP) <= 1) return false;
    for (int64_t l = chunk_first(g, ch); l < chunk_first(g, ch) + chunk_layers(g, ch); l++)
        if (model_layer_is_moe(g->m, l)) return true;
    return false;
}

/* An overlapped F&B pair (DualPipe, DeepSeek-V3 report section 3.2.1;
 * Megatron-Core's combined 1F1B): the forward of path chunk pf on
 * micro-batch mf beside the whole backward of pb on mb, as the simulator
 * prices it (sim_pair_s, max((Fc + Bc) / (1 - share), Fe + Be)): once both
 * inputs are in, the two chunks' work runs on the compute stream, slowed by
 * 1 / (1 - share) while the pair moves EP traffic (the SMs the
 * communication kernels hold): each kernel stretched, and the collectives
 * on the stream (TP) by one "pair.sm" task of their time x share / (1 -
 * share); their all-to-alls (WL_F_PAIR) run one after another on the EP
 * stream from the pair's opening, under the other's compute; a zero-time
 * join waits for both, then both outputs are sent. */
static void pair(Gen *g, int64_t mf, int64_t pf, int64_t mb, int64_t pb, bool last_mb)
{
    fwd_recv(g, mf, pf);
    bwd_recv(g, mb, pb);
    double sh = g->o->pair_sm_share;
    bool ep = chunk_ep(g, model_chunk(g, pf)) || chunk_ep(g, model_chunk(g, pb));
    g->in_pair = true;
    g->pair_ep = g->last;
    g->pair_stretch = ep && sh > 0 && sh < 1 ? 1.0 / (1.0 - sh) : 1.0;
    g->pair_comm_s = 0;
    g->pair_ring_s = 0;
    fwd_body(g, mf, pf);
    bwd_body(g, mb, pb, last_mb);
    g->in_pair = false;
    if (g->pair_stretch > 1 && g->pair_comm_s + g->pair_ring_s > 0)
        comp_f(g, "pair.sm", WL_PHASE_IG, mb, model_chunk(g, pb), -1,
               g->pair_comm_s * (g->pair_stretch - 1) + g->pair_ring_s, 0, 0, -1,
               -1, 0);
    comp_f(g, "pair.join", WL_PHASE_IG, mb, model_chunk(g, pb), -1, 0, 0, 0, g->pair_ep, -1, 0);
    fwd_send(g, mf, pf);
    bwd_send(g, mb, pb);
    if (last_mb) bucket_flush(g);
}

/* Stage s's tasks in plan_order's order (zb-h1, dualpipe, dualpipev,
 * 1f1b-a2a): forwards, whole backwards (B), input-gradient passes (I) whose
 * weight gradients run later (W), and F&B pairs; micro-batches count from
 * the first one of the chunk's copy (path_mb0). */
static void run_order(Gen *g, int64_t s, const int32_t *o, int64_t n)
{
    const int64_t mc = plan_chunk_micro_batches(g->p);
    for (int64_t i = 0; i < n && !g->oom; i++) {
        int64_t pc = path_chunk(g, s, PLAN_TASK_CHUNK(o[i])), mb = PLAN_TASK_MB(o[i]) + path_mb0(g, pc);
        bool last = PLAN_TASK_MB(o[i]) == mc - 1;
        int kind = PLAN_TASK_KIND(o[i]);
        g->split_w = kind == PLAN_TASK_I;
        if (kind == PLAN_TASK_F) chunk_fwd(g, mb, pc);
        else if (kind == PLAN_TASK_W) chunk_w(g, mb, pc, last);
        else if (kind != PLAN_TASK_PF) chunk_bwd(g, mb, pc, last);
        else if (i + 1 < n) { /* the pair's backward is the next entry */
            int32_t b = o[++i];
            int64_t pb = path_chunk(g, s, PLAN_TASK_CHUNK(b));
            pair(g, mb, pc, PLAN_TASK_MB(b) + path_mb0(g, pb), pb, PLAN_TASK_MB(b) == mc - 1);
        }
    }
    g->split_w = false;
}

/* ---- schedule ------------------------------------------------------------------------- */
/* DeepSpeed's PipelineEngine for stage s (plan_ds_step): each step first
 * exchanges with one neighbour as blocking sends and receives (WL_F_SYNC),
 * then computes. Megatron's 1F1B runs the same compute order; only the p2p
 * differ. */
static void ds_schedule(Gen *g, int64_t s)
{
    int64_t pp = g->p->pp, ga = g->p->grad_accum, prev = -1;
    for (int64_t k = 0; k < 2 * (ga + pp - 1) && !g->oom; k++) {
        bool fwd;
        int64_t mb;
        plan_ds_step(k, s, pp, &fwd, &mb);
        bool ok = mb >= 0 && mb < ga, pok = prev >= 0 && prev < ga;
        if (fwd) {
            if (pok && s > 0) p2p(g, "pp.send.b", WL_PHASE_IG, prev, true, s - 1, s - 1, 1);
            if (ok && s > 0) p2p(g, "pp.recv.f", WL_PHASE_FWD, mb, false, s - 1, s - 1, 0);
        } else {
            if (ok && s < pp - 1) p2p(g, "pp.recv.b", WL_PHASE_IG, mb, false, s + 1, s, 1);
            if (pok && s < pp - 1) p2p(g, "pp.send.f", WL_PHASE_FWD, prev, true, s + 1, s, 0);
        }
        if (ok && fwd) chunk_fwd(g, mb, s);
        else if (ok) chunk_bwd(g, mb, s, mb == ga - 1);
        prev = mb;
    }
}

/* The gradient buckets of chunk ch as bucket_feed forms them during its last
 * backward (head, each layer's MLP/MoE then attention tensors, embedding,
 * then the flush), without emitting anything: Megatron's distributed
 * optimizer all-gathers its parameters by the same buckets. log[] receives
 * the buckets in closing order (elements, < 0: expert buffer); per layer of
 * the chunk the number of the dense / expert bucket holding its first
 * backward tensor (the last one of the layer a forward needs), and the
 * embedding's dense bucket. Returns the number of buckets, -1 when out of
 * memory. */
typedef struct BucketWalk {
    double *log;       /* [cap] closing order, < 0: expert */
    int32_t n, cap;
    int32_t nd, ne;    /* dense / expert buckets closed so far */
    double open[2];
} BucketWalk;

static void walk_feed(Gen *g, BucketWalk *w, double t, int e)
{
    if (!(t > 0)) return;
    w->open[e] += t;
    if (w->open[e] < g->bucket_max || w->n >= w->cap) return;
    w->log[w->n++] = e ? -w->open[e] : w->open[e];
    w->open[e] = 0;
    if (e) w->ne++;
    else w->nd++;
}

static void walk_flush(BucketWalk *w)
{
    for (int e = 0; e < 2; e++)
        if (w->open[e] > 0 && w->n < w->cap) {
            w->log[w->n++] = e ? -w->open[e] : w->open[e];
            w->open[e] = 0;
            if (e) w->ne++;
            else w->nd++;
        }
}

static void walk_chunk(Gen *g, int64_t ch, BucketWalk *w, int32_t *dense_of, int32_t *exp_of, int32_t *emb_of)
{
    *w = (BucketWalk){.log = w->log, .cap = w->cap};
    if (ch == g->n_chunks - 1) walk_feed(g, w, g->head.params, 0);
    int64_t first = chunk_first(g, ch);
    for (int64_t l = first + chunk_layers(g, ch) - 1; l >= first; l--) {
        const Block *b = model_layer_is_moe(g->m, l) ? &g->moe : &g->mlp;
        dense_of[l - first] = w->nd;
        exp_of[l - first] = b->egrad_t[0] > 0 ? w->ne : -1;
        for (int i = 0; i < 2; i++) walk_feed(g, w, b->grad_t[i], 0);
        for (int i = 0; i < 2; i++) walk_feed(g, w, b->egrad_t[i], 1);
        for (int i = 0; i < 2; i++) walk_feed(g, w, g->attn.grad_t[i], 0);
    }
    *emb_of = ch == 0 && g->embed.params > 0 ? w->nd : -1;
    if (ch == 0) walk_feed(g, w, g->embed.params, 0);
    walk_flush(w);
}

/* All-gather the updated parameters of chunk ch by its gradient buckets, in
 * forward order (the reverse of the closing order), dense over DP (x CP),
 * experts over DP_EP. With pg_ag (overlapped at the iteration start) each
 * layer's first forward, the embedding and the head wait for the gather of
 * the last bucket holding their parameters. */
static void gather_chunk(Gen *g, int64_t ch, WlPhase ph, bool blocking, int32_t *pg_ag)
{
    int64_t nl = chunk_layers(g, ch), first = chunk_first(g, ch);
    int32_t cap = (int32_t)(6 * nl + 4), emb_of = -1;
    BucketWalk w = {.cap = cap};
    w.log = malloc((size_t)cap * sizeof *w.log);
    int32_t *ix = malloc((size_t)(2 * nl + 2 * cap) * sizeof *ix);
    if (!w.log || !ix) {
        free(w.log);
        free(ix);
        g->oom = true;
        return;
    }
    int32_t *dense_of = ix, *exp_of = ix + nl, *gid_d = ix + 2 * nl, *gid_e = gid_d + cap;
    walk_chunk(g, ch, &w, dense_of, exp_of, &emb_of);
    double db = g->t->act_bytes;
    int32_t kd = w.nd, ke = w.ne;
    for (int32_t i = w.n - 1; i >= 0 && !g->oom; i--) {
        bool e = w.log[i] < 0;
        int32_t id = coll(g, e ? "eparam.ag" : "param.ag", ph, -1, TS_COLL_ALLGATHER, e ? WL_GROUP_DP_EP : g->dpg,
                          fabs(w.log[i]) * db, blocking);
        if (e) gid_e[--ke] = id;
        else gid_d[--kd] = id;
    }
    if (pg_ag) {
        int64_t L = wl_gen_layers(g->m);
        for (int64_t j = 0; j < nl; j++) {
            int32_t a = gid_d[dense_of[j]], b = exp_of[j] >= 0 ? gid_e[exp_of[j]] : -1;
            pg_ag[first + j] = a > b ? a : b;
        }
        if (emb_of >= 0) pg_ag[L] = gid_d[emb_of];
        if (ch == g->n_chunks - 1 && g->head.params > 0) pg_ag[L + 1] = gid_d[0];
    }
    free(w.log);
    free(ix);
}

/* ---- optimizer step ------------------------------------------------------------------- */
static void step(Gen *g, int64_t stage, double params, double eparams)
{
    const ParallelPlan *p = g->p;
    bool sharded = p->dist_opt || p->zero >= 1;
    bool gather_after = sharded && p->zero < 3 && g->o->param_gather_at_step; /* else: param_gathers() */
    int64_t edpn = wl_group_size(g->w, WL_GROUP_DP_EP);
    /* dense parameters sharded over DP (x CP), routed experts over DP_EP */
    double shard = sharded ? (params - eparams) / (double)g->dpn + eparams / (double)(edpn > 0 ? edpn : 1) : params;
    if (g->o->dp_after_backward) { /* the whole reduction, now: after the last backward */
        g->final_flush = true;
        for (int64_t i = 0; i < g->n_deferred && !g->oom; i++)
            bucket_emit(g, fabs(g->deferred[i]), g->deferred[i] < 0);
        g->n_deferred = 0;
        bucket_flush(g);
        g->final_flush = false;
    }
    /* join the stream with every pending gradient reduction */
    int32_t *d = malloc((size_t)(g->n_pending + 1) * sizeof *d);
    if (!d) {
        g->oom = true;
        return;
    }
    int n = 0;
    if (g->last >= 0) d[n++] = g->last;
    for (int64_t i = 0; i < g->n_pending; i++) d[n++] = g->pending[i];
    WlTask t = wl_task_comp("grads.ready", WL_PHASE_OPT, 0, 0, 0);
    int32_t id = wl_task_add(g->w, &t, d, n, NULL, 0);
    free(d);
    if (id < 0) {
        g->oom = true;
        return;
    }
    g->last = id;
    /* tied LM head: stage 0's word embedding and stage pp-1's output layer are
     * one parameter; their gradients (V/TP x H, gradient dtype) are summed
     * over the embedding group once the DP reduction is done */
    if (g->m->tied_embeddings && p->pp > 1 && (stage == 0 || stage == p->pp - 1)) {
        coll(g, "embed_grad.ar", WL_PHASE_OPT, -1, TS_COLL_ALLREDUCE, WL_GROUP_EMB,
             (double)(model_padded_vocab(g->m, p->tp) / p->tp) * (double)g->m->hidden * wl_gen_grad_bytes(g), true);
    }
    /* the global gradient norm (clipping): an all-reduce over every rank, so
     * every stage's step waits for the slowest stage's gradients */
    coll(g, "grad_norm.ar", WL_PHASE_OPT, -1, TS_COLL_ALLREDUCE, WL_GROUP_WORLD, 4, true);
    if (p->optimizer == PLAN_OPTIM_SHAMPOO) {
        /* Distributed Shampoo, as the simulator counts it: each DP rank
         * preconditions its share of the stage's blocks (4.2 x block side
         * FLOPs per parameter, fp32), then the search directions (fp32, one
         * per parameter) are all-gathered, dense over DP, experts over
         * expert DP, before the update */
        double bs = (double)g->m->hidden / (double)(p->shampoo_blocks > 0 ? p->shampoo_blocks : 1);
        double mine = params / (double)g->dpn;
        comp(g, "shampoo.precond", WL_PHASE_OPT, -1, -1, -1, g->o->shampoo_s_per_param * mine, 4.2 * mine * bs,
             mine * 16.0, -1);
        coll(g, "shampoo.ag", WL_PHASE_OPT, -1, TS_COLL_ALLGATHER, g->dpg, (params - eparams) * 4.0, true);
        if (g->edpn > 1 && eparams > 0)
            coll(g, "shampoo.eag", WL_PHASE_OPT, -1, TS_COLL_ALLGATHER, WL_GROUP_DP_EP, eparams * 4.0, true);
    }
    /* fused Adam over the local shard: fp32 param, m, v and the gradient read,
     * param, m, v and the 16-bit copy written, the grad-norm read and the
     * zeroing of the grad buffer; 24 B per parameter as the simulator */
    double ob = g->o->optimizer_bytes > 0 ? g->o->optimizer_bytes : 24.0;
    comp(g, "optimizer", WL_PHASE_OPT, -1, -1, -1, hw_memory_time_s(g->cc->hw, shard * ob), shard * 10.0, shard * ob, -1);
    if (gather_after) /* by the gradient buckets, chunk by chunk in forward order */
        for (int64_t k = 0; k < plan_rank_chunks(p) && !g->oom; k++)
            gather_chunk(g, plan_rank_chunk(p, stage, k), WL_PHASE_OPT, true, NULL);
}

/* Dist-opt / ZeRO-1/2 with the parameter gather overlapped (Megatron
 * --overlap-param-gather): the previous step's updated parameters are
 * gathered at the start of the iteration by the gradient buckets, chunk by
 * chunk and in forward order on the DP stream; the first forward of each
 * layer (the embedding, the head) waits for its last bucket (g->pg_ag). */
static void param_gathers(Gen *g, int64_t stage)
{
    const ParallelPlan *p = g->p;
    int64_t L = wl_gen_layers(g->m);
    for (int64_t i = 0; i < L + 2; i++) g->pg_ag[i] = -1;
    if (!(p->dist_opt || p->zero >= 1) || p->zero >= 3 || g->o->param_gather_at_step) return;
    for (int64_t k = 0; k < plan_rank_chunks(p) && !g->oom; k++)
        gather_chunk(g, plan_rank_chunk(p, stage, k), WL_PHASE_FWD, false, g->pg_ag);
}

/* The plans whose task graph the builder does not write (a message and a hint). */
static TsStatus build_check(const ParallelPlan *p, TsError *err)
{
    if (p->grad_accum < 1)
        return ts_err(err, TS_ERR_PLAN, "the global batch gives no micro-batch per data-parallel rank");
    if (plan_sched_ordered(p->schedule) && (plan_rs_per_microbatch(p) || (p->tp_overlap && p->tp > 1))) {
        /* the W pass would split an FSDP unit's reduce-scatter or a
         * TP-overlap window from the input gradients they follow; an F&B
         * pair would run them inside its stretched compute */
        if (p->zero == 2) {
            ts_err(err, TS_ERR_PLAN,
                   "the task graph of --schedule %s takes no ZeRO-2 over %lld micro-batches (a reduce-scatter per "
                   "micro-batch) yet",
                   plan_sched_name(p->schedule), (long long)p->grad_accum);
            ts_err_hint(err, "'trainsim simulate' runs the plan; write the workload with --schedule 1f1b, or "
                             "with --zero 1");
            return TS_ERR_PLAN;
        }
        ts_err(err, TS_ERR_PLAN, "the task graph of --schedule %s takes no ZeRO-3 or TP overlap yet",
               plan_sched_name(p->schedule));
        ts_err_hint(err, "'trainsim simulate' runs the plan; write the workload without --zero 3 or --tp-overlap, "
                         "or with --schedule 1f1b");
        return TS_ERR_PLAN;
    }
    return TS_OK;
}

/* Stage s's tasks: its parameter gathers, its schedule's compute and
 * pipeline transfers, then (step) its gradient reduction and optimizer. */
static void build_stage(Gen *g, int64_t s, int32_t *steps, int32_t *zorder, int64_t zcap)
{
    const ParallelPlan *p = g->p;
    const ModelSpec *m = g->m;
    const int64_t v = p->vpp > 1 ? p->vpp : 1, n_chunks = g->n_chunks;
    const bool ordered = plan_sched_ordered(p->schedule);
    g->last = -1;
    g->join = -1;
    g->unit_end[0] = g->unit_end[1] = -1;
    g->n_pending = 0;
    g->bucket = g->ebucket = 0;
    g->n_deferred = 0;
    const int64_t grp = plan_interleaved(p) ? plan_vpp_group(p) : 0;
    int64_t n = ordered ? plan_order(p->schedule, p->pp, v, p->grad_accum, grp, s, zorder, zorder + zcap)
                        : plan_order_megatron(p->schedule, p->pp, v, p->grad_accum, grp, s, steps);
    param_gathers(g, s);
    /* the last backward of each chunk triggers its gradient reduction
     * (DualPipe: each of the rank's two copies its own) */
    double params = 0, eparams = 0;
    for (int64_t k = 0; k < plan_rank_chunks(p); k++) {
        int64_t ch = plan_rank_chunk(p, s, k);
        params += (double)chunk_layers(g, ch) * g->attn.params;
        for (int64_t l = chunk_first(g, ch); l < chunk_first(g, ch) + chunk_layers(g, ch); l++) {
            bool moe = model_layer_is_moe(m, l);
            params += moe ? g->moe.params : g->mlp.params;
            eparams += moe ? g->moe.eparams : 0;
        }
        if (ch == 0) params += g->embed.params;
        if (ch == n_chunks - 1) params += g->head.params;
    }
    if (plan_ds_pipe(p)) ds_schedule(g, s);
    if (ordered) run_order(g, s, zorder, n);
    for (int64_t i = 0; i < n && !g->oom && !plan_ds_pipe(p) && !ordered; i++) {
        int64_t mb = PLAN_TASK_MB(steps[i]), ch = plan_rank_chunk(p, s, PLAN_TASK_CHUNK(steps[i]));
        if (PLAN_TASK_KIND(steps[i]) == PLAN_TASK_F) chunk_fwd(g, mb, ch);
        else chunk_bwd(g, mb, ch, mb == p->grad_accum - 1);
    }
    step(g, s, params, eparams);
}

TsStatus wl_build(const WlStep *st, const WlBuildOptions *o, Workload **out, TsError *err)
{
    *out = NULL;
    WlBuildOptions def = {0};
    if (!o) o = &def;
    const ModelSpec *m = st->model;
    const ParallelPlan *p = st->plan;
    int64_t v = p->vpp > 1 ? p->vpp : 1;
    int64_t n_chunks = p->pp * v;
    TsStatus bst = build_check(p, err);
    if (bst) return bst;
    if (m->layers < n_chunks - 2) /* the end chunks may hold the embedding or the loss alone */
        return ts_err(err, TS_ERR_PLAN, "%lld layers cannot fill %lld pipeline chunks",
                      (long long)m->layers, (long long)n_chunks);
    const bool hsdp = p->dp_shard > 0 && p->zero >= 3; /* FSDP over the shard group (plan_fsdp_group) */
    Gen g = {.m = m, .p = p, .t = st->tpl, .cc = &st->cc, .o = o, .last = -1, .join = -1, .n_chunks = n_chunks,
             .n_path = p->schedule == PLAN_SCHED_DUALPIPE ? 2 * n_chunks : n_chunks,
             .dpg = hsdp ? WL_GROUP_SHARD : p->cp > 1 ? WL_GROUP_DP_CP : WL_GROUP_DP,
             .dpn = (hsdp ? p->dp_shard : p->dp) * (p->cp > 1 ? p->cp : 1)};
    /* Megatron-Core's bucket_size over the reduction group (DP x CP), as sim_dp_bucket_bytes */
    g.bucket_max = o->bucket_params > 0 ? o->bucket_params : fmax(4e7, 1e6 * (double)g.dpn);
    /* Megatron's orders (plan_order_megatron): 2 entries a micro-batch and chunk */
    int32_t *steps = malloc((size_t)(2 * p->grad_accum * v) * sizeof *steps);
    const int64_t zcap = plan_order_cap(p->schedule, p->grad_accum, v);
    /* plan_order's order and its W queue (chunks x micro-batches) */
    int32_t *zorder = malloc((size_t)(zcap + 2 * p->grad_accum) * sizeof *zorder);
    g.fwd_last = malloc((size_t)(p->grad_accum * g.n_path) * sizeof *g.fwd_last);
    g.first = malloc((size_t)(n_chunks + 1) * sizeof *g.first);
    g.pg_ag = malloc((size_t)(wl_gen_layers(m) + 2) * sizeof *g.pg_ag);
    g.w = wl_create(p->gpus, err);
    if (!steps || !zorder || !g.fwd_last || !g.first || !g.pg_ag || !g.w) goto oom;
    wl_gen_chunk_split(m, p, n_chunks, g.first);
    Workload *w = g.w;
    w->par = (WlParallel){.world = p->gpus, .tp = p->tp, .cp = p->cp, .pp = p->pp, .dp = p->dp,
                          .ep = p->ep > 0 ? p->ep : 1, .etp = p->etp > 0 && p->etp != p->tp ? p->etp : 0,
                          .vpp = v, .layers_per_stage = m->layers / p->pp, .micro_batch = p->micro_batch,
                          .seq = p->seq, .ga = p->grad_accum, .dp_shard = hsdp ? p->dp_shard : 0,
                          .vpp_group = plan_vpp_group_shown(p)};
    g.edpn = wl_group_size(w, WL_GROUP_DP_EP); /* the layout's expert-DP group, for ZeRO-3 */
    g.rpn = wl_group_size(w, WL_GROUP_REPLICATE);
    wl_gen_blocks(&g, st->cost);
    w->par.pp_comm_bytes = p->pp > 1 ? g.t->boundary_bytes : 0;
    if (m->experts > 0 && p->ep > 1)
        w->par.ep_route = (HwEpRoute){.deepep = p->moe_dispatch == PLAN_MOE_DISPATCH_DEEPEP, .topk = m->topk,
                                      .node_limit = p->moe_node_limit, .load = g.t->moe_load};
    snprintf(w->source, sizeof w->source, "trainsim %s: %s tp%lld cp%lld pp%lld vpp%lld dp%lld ep%lld", TRAINSIM_VERSION,
             m->name, (long long)p->tp, (long long)p->cp, (long long)p->pp, (long long)v, (long long)p->dp,
             (long long)p->ep);
    snprintf(w->policy, sizeof w->policy, "HYBRID_TRANSFORMER_FWD_IN_BCKWD");
    for (int64_t s = 0; s < p->pp; s++) {
        char nm[32];
        snprintf(nm, sizeof nm, "stage%lld", (long long)s);
        if (wl_class_begin(w, nm, (int32_t)s) < 0) goto oom;
        build_stage(&g, s, steps, zorder, zcap);
        if (g.oom) goto oom;
    }
    free(steps);
    free(zorder);
    free(g.fwd_last);
    free(g.first);
    free(g.pg_ag);
    free(g.pending);
    free(g.deferred);
    *out = w;
    return TS_OK;
oom:
    free(steps);
    free(zorder);
    free(g.fwd_last);
    free(g.first);
    free(g.pg_ag);
    free(g.pending);
    free(g.deferred);
    wl_destroy(g.w);
    return ts_err(err, TS_ERR_INTERNAL, "out of memory building the workload");
}
