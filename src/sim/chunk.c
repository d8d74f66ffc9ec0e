/*
 * chunk.c — a plan's pipeline chunks from its layer costs (sim.h layer 2,
 * for cost.c's simulate): each model chunk's task times (its layers by
 * kind and recompute, the embedding on the model's first chunk, the head
 * on its last), its pipeline messages, its DP gradient reduction
 * (Megatron's buckets, dp_buckets.c; ZeRO-2 / 3 chains, fsdp.c) and each
 * rank's step (optimizer, tied embeddings, the gradient norm).
 *
 * Model chunk ch (0 .. pp*vpp) sits on pipeline rank s in slot vs
 * (chunk_slot); the engine's SimChunkCost is cc[s * ve + vs], ve the
 * engine's chunks per rank (dualpipe: a second copy of the stage).
 */
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"

/* DP gradient reduction, parameter gather and optimizer step of a chunk
 * holding params parameter elements (eparams of them routed experts). */
typedef struct ChunkDp {
    bool valid, has_ag, has_eag, has_shampoo;
    double params, eparams;
    double opt, shampoo, shampoo_ag;
} ChunkDp;

/* The last bucket timing sim_chunk_buckets ran, to skip equal chunks. */
typedef struct BucketKey {
    bool valid;
    double params, eparams;
    SimBucketTiming tm;
    bool first, last;
} BucketKey;

/* What every chunk shares while they are assembled, and what they add up. */
typedef struct Asm {
    const Ctx *x;
    const SimChunkIn *ci;
    const int64_t *node;       /* [pp] the node of stage s on rank 0's path, -1 without nodes */
    double p2p_near, p2p_far;  /* one pipeline message within a node / across */
    bool partial_rc;           /* --recompute-layers: the layers past the first k keep theirs */
    TsColl grad_rc;            /* the buckets' reduction (TS_COLL_NONE: the units reduce-scatter) */
    double gbytes;             /* bytes per reduced gradient element */
    int32_t ve;                /* the engine's chunks per rank */
    int64_t l0;                /* the next chunk's first layer */
    double fl_token, rfl_token; /* model / recompute FLOPs per token, whole model */
    double *rank_params;       /* [2 * pp] each rank's parameters, of them routed experts */
    ChunkDp dpm;
    SimBuckets bk;
    SimBucketMemo bmemo;
    BucketKey bkey;
} Asm;

/* One chunk while it is costed. */
typedef struct Chunk {
    int64_t ch, nl;            /* model chunk, its layers */
    int32_t s, vs;             /* its rank and slot there */
    bool first, last;          /* the model's first / last chunk */
    SimLayerSet ls;
    double nd, nm;             /* its dense and MoE layers */
    double params, eparams;    /* its parameters, of them routed experts */
    double tp_f;               /* its forward's TP collectives */
    double emb_fwd, head_fwd;  /* the edges' forward tasks */
    double fsdp_f, fsdp_tail;  /* ZeRO-3 (-2) chain: exposed in the forward, after the last backward */
    bool chain;                /* units reduce-scatter every micro-batch over a DP group */
    double cedge[SIM_EDGES];   /* the edges it runs */
    SimChunkCost *c;
} Chunk;

static void chunk_dp_costs(const Ctx *x, const SimSetup *in, double params, double eparams, ChunkDp *d)
{
    const ParallelPlan *p = x->p;
    const ModelSpec *m = x->m;
    memset(d, 0, sizeof *d);
    d->valid = true;
    d->params = params;
    d->eparams = eparams;
    bool shard_opt = p->dist_opt || p->zero >= 1;
    /* not for ZeRO-3 (per layer in layer_cost): the distributed optimizer
     * all-gathers the updated parameters by the gradient buckets
     * (sim_chunk_buckets sums both) */
    if (p->zero < 3) {
        d->has_ag = shard_opt && x->dpg.size > 1 && params - eparams > 0;
        d->has_eag = shard_opt && x->edpg.size > 1 && eparams > 0;
    }
    /* optimizer on the local shard */
    double local = shard_opt ? (params - eparams) / (double)x->dpg.size + eparams / (double)x->edpg.size : params;
    d->opt = hw_memory_time_s(in->hw, local * sim_optimizer_bytes(&in->opt, p));
    if (p->optimizer == PLAN_OPTIM_SHAMPOO) {
        /* Distributed Shampoo: each DP rank preconditions its share of the
         * blocks, then the search directions (fp32, one per parameter) are
         * all-gathered: dense over DP, experts over expert DP */
        d->has_shampoo = true;
        d->shampoo = sim_shampoo_s_per_param(in->hw, m, p) * params / (double)x->dpg.size;
        if (x->dpg.size > 1 && params - eparams > 0)
            d->shampoo_ag += sim_coll(x, TS_COLL_ALLGATHER, (params - eparams) * 4.0, &x->dpg, HW_GROUP_DP);
        if (x->edpg.size > 1 && eparams > 0)
            d->shampoo_ag += sim_coll(x, TS_COLL_ALLGATHER, eparams * 4.0, &x->edpg, HW_GROUP_DP);
    }
}

/* The edges a pipeline chunk runs: the embedding on the model's first chunk,
 * the head on its last (one chunk: both). */
static void chunk_edges(const double edge[SIM_EDGES], bool first, bool last, double out[SIM_EDGES])
{
    memcpy(out, edge, SIM_EDGES * sizeof *out);
    static const int emb[] = {SIM_E_EMB_F, SIM_E_EMB_B, SIM_E_EMB_TP_F, SIM_E_EMB_TP_B, SIM_E_EMB_PARAMS, SIM_E_EMB_WG};
    static const int head[] = {SIM_E_HEAD_F,      SIM_E_HEAD_B,  SIM_E_HEAD_TP_F, SIM_E_HEAD_TP_B,
                               SIM_E_HEAD_PARAMS, SIM_E_HEAD_WG, SIM_E_HEAD_AG_F};
    if (!first)
        for (size_t i = 0; i < sizeof emb / sizeof *emb; i++) out[emb[i]] = 0;
    if (!last)
        for (size_t i = 0; i < sizeof head / sizeof *head; i++) out[head[i]] = 0;
}

/* The pipeline rank holding model chunk ch and its slot among the rank's
 * chunks (SimPipeline.chunk's index s*chunks + slot): plan_rank_chunk's
 * inverse for the copy entering at rank 0 (dualpipe's other copy is placed
 * beside it). */
static void chunk_slot(const ParallelPlan *p, int64_t ch, int32_t *s, int32_t *k)
{
    int64_t pp = p->pp;
    if (p->schedule == PLAN_SCHED_DUALPIPEV && ch >= pp) *s = (int32_t)(2 * pp - 1 - ch), *k = 1;
    else *s = (int32_t)(ch % pp), *k = (int32_t)(ch / pp);
}

/* The transfer from rank s to rank s + dir (cyclic): NVLink within a node,
 * else the network, along rank 0's path through the layout (node[s]: the
 * node of stage s there, -1 without nodes). */
static double p2p_link(const int64_t *node, int64_t pp, int32_t s, int32_t dir, double near, double far)
{
    int64_t a = node[s], b = node[(s + dir + pp) % pp];
    return a >= 0 && a == b ? near : far;
}

/* DeepSpeed's BF16 optimizer after every micro-batch's backward
 * (update_hp_grads): a block's bf16 gradients cast and added into its fp32
 * ones (read 2 write 4, read 8 write 4) and zeroed (write 2), 20 B per
 * parameter, one kernel per block as the task graph runs them (wl_gen_blocks);
 * a layer holds an attention block and an MLP / MoE block. */
static double ds_hp_kernel_s(const HwModel *hw, double params)
{
    return params > 0 ? hw_memory_time_s(hw, 20.0 * params) : 0;
}

static double ds_hp_grads_s(const HwModel *hw, const LayerCost *lc)
{
    double attn = 0;
    for (int32_t i = 2; i < lc->n_grad_t; i++) attn += lc->grad_t[i];
    return ds_hp_kernel_s(hw, attn) + ds_hp_kernel_s(hw, lc->grad_t[0] + lc->grad_t[1] + lc->egrad_t[0] + lc->egrad_t[1]);
}

/* The chunk's layers summed into its costs: by kind (dense, MoE) and, under
 * --recompute-layers k, the first k recomputed (r) and the rest not (n). */
static void chunk_layers(Asm *a, Chunk *k)
{
    const Ctx *x = a->x;
    const ParallelPlan *p = x->p;
    const SimChunkIn *ci = a->ci;
    const LayerCost *dense = ci->dense, *moe = ci->moe, *dense_nr = ci->dense_nr, *moe_nr = ci->moe_nr;
    const bool has_moe = moe != NULL;
    const int64_t nl = k->nl, l0 = a->l0;
    k->ls = (SimLayerSet){.dense = dense, .moe = moe, .dense_nr = dense_nr, .moe_nr = moe_nr, .l0 = l0,
                          .rk = a->partial_rc && p->recompute_layers < nl ? p->recompute_layers : -1};
    const int64_t nrc = k->ls.rk < 0 ? nl : k->ls.rk; /* layers recomputed */
    int64_t mr = 0, mn = 0;
    if (has_moe)
        for (int64_t l = l0; l < l0 + nl; l++)
            if (model_layer_is_moe(x->m, l)) *(l - l0 < nrc ? &mr : &mn) += 1;
    const double ndr = (double)(nrc - mr), nmr = (double)mr, ndn = (double)(nl - nrc - mn), nmn = (double)mn;
    a->l0 += nl;
    k->nd = ndr + ndn, k->nm = nmr + nmn;
    SimChunkCost *c = k->c;
#define SUMR(f) (ndr * dense->f + (has_moe ? nmr * moe->f : 0))
#define SUM(f) (SUMR(f) + ndn * dense_nr->f + (has_moe ? nmn * moe_nr->f : 0))
    c->compute_fwd_s = SUM(fwd);
    c->compute_bwd_s = SUM(bwd);
    c->recompute_s = SUM(recompute);
    /* of it, a full recompute's exposed TP / CP / EP collectives */
    if (p->recompute == PLAN_RECOMPUTE_FULL) c->recompute_comm_s = SUMR(recompute) - SUMR(fwd);
    c->tp_exposed_s = SUM(tp_f) + SUM(tp_b);
    c->cp_exposed_s = SUM(cp_f) + SUM(cp_b);
    c->ep_exposed_s = SUM(ep_f) + SUM(ep_b);
    c->ep_fwd_s = SUM(ep_f);
    c->ep_bwd_s = SUM(ep_b);
    c->wgrad_s = SUM(wgrad);
    c->slowdown_s = SUM(slow);
    k->params = SUM(params), k->eparams = SUM(expert_params);
    a->fl_token += SUM(fwd_flops_token);
    a->rfl_token += SUM(recompute_flops_token);
#undef SUM
#undef SUMR
    k->tp_f = ndr * dense->tp_f + ndn * dense_nr->tp_f + (has_moe ? nmr * moe->tp_f + nmn * moe_nr->tp_f : 0);
}

/* The embedding on the model's first chunk, the head (and the MTP modules'
 * FLOPs) on its last, and DeepSpeed's BF16 optimizer's accumulation. */
static void chunk_add_edges(Asm *a, Chunk *k)
{
    const Ctx *x = a->x;
    const ParallelPlan *p = x->p;
    const ModelSpec *m = x->m;
    const double *edge = a->ci->edge;
    SimChunkCost *c = k->c;
    k->emb_fwd = k->head_fwd = 0;
    if (k->first) {
        double emb_tp = edge[SIM_E_EMB_TP_F];
        k->emb_fwd = edge[SIM_E_EMB_F] + emb_tp;
        c->compute_fwd_s += edge[SIM_E_EMB_F];
        c->compute_bwd_s += edge[SIM_E_EMB_B];
        c->wgrad_s += edge[SIM_E_EMB_WG];
        c->tp_exposed_s += emb_tp + edge[SIM_E_EMB_TP_B];
        k->tp_f += emb_tp;
        k->params += edge[SIM_E_EMB_PARAMS];
    }
    if (k->last) {
        double head_tp = edge[SIM_E_HEAD_TP_F];
        k->head_fwd = edge[SIM_E_HEAD_F] + head_tp;
        c->head_bwd_s = edge[SIM_E_HEAD_B] + edge[SIM_E_HEAD_TP_B];
        c->compute_fwd_s += edge[SIM_E_HEAD_F];
        c->compute_bwd_s += edge[SIM_E_HEAD_B];
        c->wgrad_s += edge[SIM_E_HEAD_WG];
        c->head_wgrad_s = edge[SIM_E_HEAD_WG];
        c->tp_exposed_s += head_tp + edge[SIM_E_HEAD_TP_B];
        k->tp_f += head_tp;
        k->params += edge[SIM_E_HEAD_PARAMS];
        /* as part_model_flops_token: the head, and each MTP module's
         * projection and head (its layer is the chunk's) */
        double H = (double)m->hidden, head = 2.0 * H * (double)model_padded_vocab(m, 1);
        a->fl_token += head + (double)m->mtp_layers * (4.0 * H * H + head);
    }
    /* BF16 optimizer under DeepSpeed's pipeline engine: after each
     * micro-batch's backward, update_hp_grads adds the bf16 gradients
     * into the fp32 ones (cast: read 2 write 4; add: read 8 write 4)
     * and the bf16 grads are zeroed (write 2): 20 B per parameter */
    if (plan_ds_pipe(p) && p->dtype == TS_DTYPE_BF16) {
        const HwModel *hw = a->ci->in->hw;
        c->compute_bwd_s += k->nd * ds_hp_grads_s(hw, a->ci->dense) +
                            (a->ci->moe ? k->nm * ds_hp_grads_s(hw, a->ci->moe) : 0) +
                            (k->first ? ds_hp_kernel_s(hw, edge[SIM_E_EMB_PARAMS]) : 0) +
                            (k->last ? ds_hp_kernel_s(hw, edge[SIM_E_HEAD_PARAMS]) : 0);
    }
}

/* The chunk's forward and backward tasks: its exposed forward collectives
 * and ZeRO-3 gathers, its pipeline messages (DeepSpeed's engine: blocking,
 * on the compute stream); the backward task holds the rest. */
static void chunk_tasks(Asm *a, Chunk *k)
{
    const Ctx *x = a->x;
    const ParallelPlan *p = x->p;
    const LayerCost *dense = a->ci->dense, *moe = a->ci->moe;
    const int32_t pp = (int32_t)p->pp;
    SimChunkCost *c = k->c;
    /* ZeRO-3 (and ZeRO-2 over several micro-batches): exposed in the
     * forward, after the last backward */
    k->fsdp_f = k->fsdp_tail = 0;
    k->chain = plan_rs_per_microbatch(p) && (x->dpg.size > 1 || x->edpg.size > 1) && (k->nl > 0 || k->first || k->last);
    chunk_edges(a->ci->edge, k->first, k->last, k->cedge);
    if (k->chain && p->zero >= 3)
        sim_fsdp_chain(x, k->nl, &k->ls, k->cedge, p->grad_accum, 0, c, &k->fsdp_f, &k->fsdp_tail);
    double exp_fwd_comm = k->tp_f + (k->nd * dense->cp_f + k->nm * (moe ? moe->cp_f : 0)) + (moe ? k->nm * moe->ep_f : 0);
    c->fwd_s = c->compute_fwd_s + exp_fwd_comm + k->fsdp_f;
    /* this stage's boundaries: to the next stage (forward sends) and
     * from the previous one (backward sends go back over it) */
    double p2p_out = 0, p2p_in = 0;
    if (pp > 1) {
        /* the V's way back (dualpipev chunk 1) sends to rank s-1 */
        int32_t dn = p->schedule == PLAN_SCHED_DUALPIPEV && k->vs == 1 ? -1 : 1;
        p2p_out = p2p_link(a->node, pp, k->s, dn, a->p2p_near, a->p2p_far);
        p2p_in = p2p_link(a->node, pp, k->s, -dn, a->p2p_near, a->p2p_far);
    }
    c->p2p_fwd_s = p2p_out;
    c->p2p_bwd_s = p2p_in;
    if (plan_ds_pipe(p) && pp > 1) {
        /* blocking sends/receives on the compute stream: the forward
         * receives its input and sends its output, the backward
         * receives the output gradient and sends the input gradient
         * (none beyond the first / last chunk of the model) */
        double blk = (!k->first ? p2p_in : 0.0) + (!k->last ? p2p_out : 0.0);
        c->pp_blocked_s = 2.0 * blk;
        c->fwd_s += blk;
        /* a send and the neighbour's recv are one rendezvous: the
         * receiver's recv overlaps the sender's send */
        c->p2p_fwd_s = -p2p_out;
        c->p2p_bwd_s = -p2p_in;
    }
    /* everything else runs in the backward task; the parts sum to fwd_s + bwd_s
     * (the overlap slow-down is not in them: it ends the stage, schedule.c) */
    c->bwd_s = c->compute_fwd_s + c->compute_bwd_s + c->recompute_s + c->tp_exposed_s + c->cp_exposed_s +
               c->ep_exposed_s + c->fsdp_exposed_s + c->pp_blocked_s - c->fwd_s;
}

/* Megatron's gradient buckets of the chunk (dp_buckets.c), under the last
 * backward (and, for the zero-bubble schedules, its W task): a function of
 * the chunk's layers and edges, shared by the middle chunks. */
static void chunk_buckets(Asm *a, Chunk *k)
{
    const Ctx *x = a->x;
    const ParallelPlan *p = x->p;
    const SimSetup *in = a->ci->in;
    const double *edge = a->ci->edge;
    SimChunkCost *c = k->c;
    const double head_params = k->last ? edge[SIM_E_HEAD_PARAMS] : 0, emb_params = k->first ? edge[SIM_E_EMB_PARAMS] : 0;
    const double units = sim_dp_bucket_bytes(&in->opt, x->dpg.size) / a->gbytes;
    const double ab = p->dist_opt || p->zero >= 1 ? x->ab : 0;
    /* the layers' part of the last backward; the first forward: embedding,
     * layers, head */
    SimBucketTiming tm = {.window_s = c->bwd_s - c->head_bwd_s, .emb_fwd_s = k->emb_fwd,
                          .layer_fwd_s = k->nl > 0 ? (c->fwd_s - k->emb_fwd - k->head_fwd) / (double)k->nl : 0,
                          .tail_wait_s = k->first ? edge[SIM_E_EMB_TP_B] : 0};
    BucketKey *bkey = &a->bkey;
    if (!bkey->valid || k->params != bkey->params || k->eparams != bkey->eparams || k->first != bkey->first ||
        k->last != bkey->last || memcmp(&tm, &bkey->tm, sizeof tm) != 0) {
        sim_chunk_buckets(x, &k->ls, a->l0 - k->nl, k->nl, head_params, emb_params, a->grad_rc, a->gbytes, units, ab,
                          &tm, &a->bmemo, &a->bk);
        *bkey = (BucketKey){.valid = true, .params = k->params, .eparams = k->eparams, .tm = tm, .first = k->first,
                            .last = k->last};
    }
    c->dp_grad_s = a->bk.t_dp;
    c->dp_end_s = a->bk.end_s;
    c->dp_beside_s = a->bk.beside_s;
    c->dp_within_s = a->bk.within_s;
    if (plan_sched_ordered(p->schedule)) { /* the last gradients come from a W task: its layer part is the window */
        SimBucketTiming tw = tm;
        tw.window_s = c->wgrad_s - c->head_wgrad_s;
        tw.w_pass = true;
        SimBuckets bw;
        sim_chunk_buckets(x, &k->ls, a->l0 - k->nl, k->nl, head_params, emb_params, a->grad_rc, a->gbytes, units, ab,
                          &tw, &a->bmemo, &bw);
        c->dp_end_w_s = bw.end_s;
        c->dp_beside_w_s = bw.beside_s;
        c->dp_within_w_s = bw.within_s;
    }
    c->param_gather_s = (a->dpm.has_ag ? a->bk.t_ag : 0) + (a->dpm.has_eag ? a->bk.t_eag : 0);
    c->gather_lag_s = c->param_gather_s > 0 ? a->bk.lag_s : 0;
    a->ci->sc[k->s].param_gather_s += c->param_gather_s;
}

/* The chunk's DP gradient reduction: the buckets below ZeRO-3; the
 * reduce-scatters of units that reduce every micro-batch (ZeRO-2 over
 * several: queued on the DP stream behind the step's overlapped parameter
 * gathers, which the first forward has waited for, gather_lag_s; under a
 * pipeline the engine walks them on the stage's timeline, rs_timeline); the
 * last reduce-scatters after the last backward. */
static void chunk_dp(Asm *a, Chunk *k)
{
    const Ctx *x = a->x;
    const ParallelPlan *p = x->p;
    const SimSetup *in = a->ci->in;
    SimChunkCost *c = k->c;
    /* the DP costs are a function of (params, eparams) alone, which most
     * chunks share (equal layer counts): computed once per distinct pair */
    if (!a->dpm.valid || k->params != a->dpm.params || k->eparams != a->dpm.eparams)
        chunk_dp_costs(x, in, k->params, k->eparams, &a->dpm);
    if (p->zero < 3) chunk_buckets(a, k);
    if (k->chain && p->zero < 3 && sim_rs_timeline(p)) {
        sim_chunk_rs(x, k->nl, &k->ls, k->cedge, c);
    } else if (k->chain && p->zero < 3) {
        double busy = in->opt.param_gather_overlap ? c->param_gather_s - c->gather_lag_s : 0;
        sim_fsdp_chain(x, k->nl, &k->ls, k->cedge, p->grad_accum, busy > 0 ? busy : 0, c, &k->fsdp_f, &k->fsdp_tail);
    }
    if (k->fsdp_tail > 0) { /* the last reduce-scatters, after the last backward */
        c->dp_end_s = c->bwd_s - c->head_bwd_s + k->fsdp_tail;
        c->dp_grad_s = k->fsdp_tail;
        if (plan_sched_ordered(p->schedule)) c->dp_end_w_s = c->dp_end_s;
    }
}

/* Model chunk ch: its costs into cc, its parameters to its rank's (and,
 * under dualpipe, the copy's on rank pp-1-s). */
static void chunk_assemble(Asm *a, int64_t ch)
{
    const ParallelPlan *p = a->x->p;
    const int32_t pp = (int32_t)p->pp;
    Chunk k = {.ch = ch, .nl = plan_model_chunk_layers(p, a->x->m, ch), .first = ch == 0,
               .last = ch == (int64_t)pp * p->vpp - 1};
    chunk_slot(p, ch, &k.s, &k.vs);
    k.c = &a->ci->cc[k.s * a->ve + k.vs];
    chunk_layers(a, &k);
    chunk_add_edges(a, &k);
    chunk_tasks(a, &k);
    chunk_dp(a, &k);
    a->rank_params[2 * k.s] += k.params;
    a->rank_params[2 * k.s + 1] += k.eparams;
    if (p->schedule == PLAN_SCHED_DUALPIPE) { /* the copy entering at rank pp-1, on rank pp-1-s */
        const int32_t r = pp - 1 - k.s;
        SimChunkCost *d = &a->ci->cc[r * a->ve + 1];
        *d = *k.c;
        d->p2p_fwd_s = pp > 1 ? p2p_link(a->node, pp, r, -1, a->p2p_near, a->p2p_far) : 0;
        d->p2p_bwd_s = pp > 1 ? p2p_link(a->node, pp, r, 1, a->p2p_near, a->p2p_far) : 0;
        /* each copy's gradients reduced and its parameters stepped as
         * its own (the two copies' exchange of gradients, over 2 ranks
         * per DP replica, is not modelled) */
        a->ci->sc[r].param_gather_s += d->param_gather_s;
        a->rank_params[2 * r] += k.params;
        a->rank_params[2 * r + 1] += k.eparams;
    }
}

/* Each rank's step: the optimizer on its shard of its parameters (once over
 * all its chunks, as the task graph's), Shampoo's preconditioning and its
 * search directions' all-gather; the tied embeddings' gradient all-reduce
 * between the first and last stage; the global gradient norm. */
static void stage_steps(Asm *a)
{
    const Ctx *x = a->x;
    const ParallelPlan *p = x->p;
    const ModelSpec *m = x->m;
    const SimSetup *in = a->ci->in;
    SimStageCost *sc = a->ci->sc;
    const int32_t pp = (int32_t)p->pp;
    for (int32_t s = 0; s < pp; s++) {
        const double *rp = &a->rank_params[2 * s];
        if (!a->dpm.valid || rp[0] != a->dpm.params || rp[1] != a->dpm.eparams)
            chunk_dp_costs(x, in, rp[0], rp[1], &a->dpm);
        sc[s].optimizer_s += a->dpm.opt + (a->dpm.has_shampoo ? a->dpm.shampoo : 0) + a->ci->edge[SIM_E_HOST_OPT];
        sc[s].step_comm_s += a->dpm.has_shampoo ? a->dpm.shampoo_ag : 0;
    }
    /* tied word embeddings split over the first and last stage: Megatron
     * (_allreduce_embedding_grads) and DeepSpeed (_exec_reduce_tied_grads)
     * all-reduce their gradients in the main-grad dtype over that 2-rank
     * group, on both stages, outside any overlap */
    if (m->tied_embeddings && pp > 1 && p->zero < 3) {
        double wbytes = (double)(model_padded_vocab(m, x->t) / x->t) * (double)m->hidden *
                        (in->opt.fp32_grad_reduce ? 4.0 : x->ab);
        PlanGroupInfo eg = {.size = 2, .nodes = x->ppg.nodes > 1 ? 2 : 1, .per_node = x->ppg.nodes > 1 ? 1 : 2};
        double t_emb = sim_coll(x, TS_COLL_ALLREDUCE, wbytes, &eg, HW_GROUP_PP);
        sc[0].embed_sync_s += t_emb;
        sc[pp - 1].embed_sync_s += t_emb;
    }
    /* the global gradient norm (clipping, Megatron's clip_grad_norm_fp32): a
     * 4-byte all-reduce over every rank at each stage's step, exposed (the
     * task graph's grad_norm.ar) */
    if (p->gpus > 1) {
        int64_t gpn = in->net->cl.gpus_per_node;
        PlanGroupInfo wg = {.size = p->gpus, .nodes = (p->gpus + gpn - 1) / gpn, .per_node = p->gpus < gpn ? p->gpus : gpn};
        double t_gn = sim_coll(x, TS_COLL_ALLREDUCE, 4.0, &wg, HW_GROUP_ANY);
        for (int32_t s = 0; s < pp; s++) sc[s].step_comm_s += t_gn;
    }
}

/* Stages up to which the per-stage scratch lives on the stack. */
#define PP_STACK 64

TsStatus sim_assemble_chunks(const Ctx *x, const SimChunkIn *ci, double *fl_token, double *rfl_token, TsError *err)
{
    const ParallelPlan *p = x->p;
    const SimSetup *in = ci->in;
    const int32_t pp = (int32_t)p->pp;
    /* pipeline transfer: SP-sharded (or scatter/gather) boundary activation;
     * DeepSpeed's pipeline engine sends the whole tensor from every TP rank;
     * within a node or across, boundary by boundary: along rank 0's path
     * through the layout (the task-graph replay's rule), stage s sits on
     * ranks s*tp*cp*dp..., so with fewer than a node's GPUs per stage some
     * boundaries stay on NVLink */
    const double p2p_bytes = ci->edge[SIM_E_P2P_BYTES];
    Asm a = {.x = x, .ci = ci, .ve = (int32_t)plan_rank_chunks(p),
             .p2p_near = pp > 1 ? hw_p2p_time_s(in->net, p2p_bytes, false) : 0,
             .p2p_far = pp > 1 ? hw_p2p_time_s(in->net, p2p_bytes, true) : 0,
             .partial_rc = p->recompute == PLAN_RECOMPUTE_FULL && p->recompute_layers > 0,
             .gbytes = in->opt.fp32_grad_reduce ? 4.0 : 2.0, .bmemo = {.n = 0}};
    /* the buckets' reduction; none where the units reduce-scatter every
     * micro-batch (ZeRO-2 over several: the buckets carry the step's gather) */
    a.grad_rc = plan_rs_per_microbatch(p)                             ? TS_COLL_NONE
                : (p->dist_opt || p->zero >= 1) && !plan_ds_pipe(p) ? TS_COLL_REDUCESCATTER
                                                                    : TS_COLL_ALLREDUCE;
    double rp_stack[2 * PP_STACK];
    int64_t node_stack[PP_STACK];
    double *rank_params = pp <= PP_STACK ? rp_stack : malloc(2 * (size_t)pp * sizeof *rank_params);
    int64_t *node = pp <= PP_STACK ? node_stack : malloc((size_t)pp * sizeof *node);
    TsStatus st = TS_OK;
    if (!rank_params || !node) {
        st = ts_err(err, TS_ERR_INTERNAL, "out of memory");
    } else {
        memset(rank_params, 0, 2 * (size_t)pp * sizeof *rank_params);
        const int64_t gpn = in->net->cl.gpus_per_node;
        for (int32_t k = 0; k < pp; k++) node[k] = gpn > 0 ? plan_rank_of(p, 0, 0, 0, k) / gpn : -1;
        a.rank_params = rank_params, a.node = node;
        for (int64_t ch = 0; ch < (int64_t)pp * p->vpp; ch++) chunk_assemble(&a, ch);
        stage_steps(&a);
        *fl_token = a.fl_token, *rfl_token = a.rfl_token;
    }
    if (rank_params != rp_stack) free(rank_params);
    if (node != node_stack) free(node);
    return st;
}
