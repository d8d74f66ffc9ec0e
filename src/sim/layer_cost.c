/*
 * layer_cost.c — what one transformer layer (dense or MoE), the embedding
 * and the LM head cost on one GPU for one micro-batch, with the hw model
 * (hw_gemm_time_s, hw_attention_time_s, hw_memory_time_s per kernel) and
 * the collective model; the overlap rules of TP, CP, EP and ZeRO-3 within a
 * layer; and the layer-cost cache a sweep reuses (docs/sweep.md). cost.c
 * assembles chunks from these. Legend as in cost.c.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"

double sim_coll(const Ctx *x, TsColl c, double bytes, const PlanGroupInfo *g, HwGroupKind kind)
{
    return hw_coll_time_s(x->net, c, bytes, g->size, g->nodes, 1, kind);
}

void sim_ep_route(const Ctx *x, HwEpRoute *r) { cost_ep_route(x->m, x->p, x->tpl, r); }

/* The runtime choices of the simulator's options as the template takes them. */
void sim_part_runtime(const SimOptions *o, PartRuntime *rt)
{
    part_runtime_init(rt);
    rt->sequential_experts = o->sequential_experts;
    rt->selective_ops = o->selective_ops;
    rt->cp_comm = (int)o->cp_comm;
    _Static_assert((int)SIM_CE_NONE == PART_CE_EAGER && (int)SIM_CE_NATIVE == PART_CE_NATIVE &&
                       (int)SIM_CE_TE == PART_CE_TE,
                   "PartRuntime.ce_fusion follows SimCeFusion");
    rt->ce_fusion = (int)o->ce_fusion;
    rt->grad_bytes = o->fp32_grad_reduce ? 4.0 : 0;
    rt->hf_grads_freed = o->grads_freed;
}

/* Model FLOPs per token of one layer's forward (unsharded: 2 FLOPs per
 * multiply-accumulate of its projections, the attention counted full),
 * and what its recomputation adds (hardware FLOPs). */
/* Model FLOPs per token of a layer: the model's alone (part_layer_model_flops,
 * the MFU convention of SimOptions.mfu_causal); recompute FLOPs are the
 * plan's. */
/* FLOPs per token (all TP ranks) of the kernels outside the attention core
 * that selective recompute's modules run again (layernorm, moe_act,
 * mla_up_proj). */
static double module_flops_token(const Ctx *x, bool moe)
{
    uint32_t mods = plan_rc_modules(x->p);
    double fl = 0;
    const PartBlockT *bl[2] = {&x->tpl->b[PART_BLOCK_ATTN], &x->tpl->b[moe ? PART_BLOCK_MOE : PART_BLOCK_MLP]};
    for (int j = 0; j < 2; j++)
        for (int32_t i = 0; i < bl[j]->n_k; i++)
            if (bl[j]->k[i].rc & mods) fl += bl[j]->k[i].flops[0];
    return fl / (double)x->tpl->tokens * (double)x->t;
}

static void layer_flops(const Ctx *x, bool moe, LayerCost *lc)
{
    const ModelSpec *m = x->m;
    int64_t H = m->hidden, t = 1, A = m->heads, G = m->kv_heads, D = m->head_dim;
    lc->fwd_flops_token = part_layer_model_flops(m, x->S, moe, x->o->mfu_causal);
    PartRuntime rt;
    sim_part_runtime(x->o, &rt);
    if (cost_sac(m, x->p, &rt))
        lc->recompute_flops_token = 2.0 * ((double)(G * D * H + H * A * D + m->ffn * H) / (double)t) * (double)t;
    else if (x->p->recompute == PLAN_RECOMPUTE_SELECTIVE)
        lc->recompute_flops_token = ((plan_rc_modules(x->p) & PLAN_RC_CORE_ATTN) ? 4.0 * model_attn_keys_mean(m, x->S, false) * (double)A * (double)D : 0) +
                                    module_flops_token(x, moe);
    else if (x->p->recompute == PLAN_RECOMPUTE_FULL)
        lc->recompute_flops_token = lc->fwd_flops_token;
}

/* The layer's blocks (attention, MLP or MoE) as the costed step times them:
 * forward, backward, its W part, GEMMs and the attention core, parameters,
 * DP bucket tensors, FLOPs. */
static void layer_blocks(const Ctx *x, bool moe, LayerCost *lc)
{
    const PartTemplate *tpl = x->tpl;
    memset(lc, 0, sizeof *lc);
    const CostBlock *a = &x->cs->b[PART_BLOCK_ATTN], *f = &x->cs->b[moe ? PART_BLOCK_MOE : PART_BLOCK_MLP];
    const PartBlockT *ta = &tpl->b[PART_BLOCK_ATTN], *tf = &tpl->b[moe ? PART_BLOCK_MOE : PART_BLOCK_MLP];
    lc->fwd = a->fwd + f->fwd;
    lc->bwd = a->ig + a->wg + f->ig + f->wg;
    /* the W of the zero-bubble split (Qi et al. 2024 section 2): the weight-
     * gradient kernels the costed step times per kernel (wgrad GEMMs and
     * their casts); the input-gradient GEMMs and every non-GEMM backward
     * kernel are the I part */
    lc->wgrad = a->wg + f->wg;
    lc->attn_fwd = a->core_fwd;
    lc->attn_bwd = a->core_ig;
    lc->gemm_fwd = a->gemm_fwd + f->gemm_fwd;
    lc->gemm_bwd = a->gemm_ig + a->gemm_wg + f->gemm_ig + f->gemm_wg;
    lc->params = ta->params + tf->params;
    lc->expert_params = ta->expert_params + tf->expert_params;
    /* DP bucket tensors in backward order (dp_buckets.c): the MLP (MoE:
     * router and shared experts as one), then the attention */
    lc->grad_t[0] = tf->grad_t[0];
    lc->grad_t[1] = tf->grad_t[1];
    lc->grad_t[2] = ta->grad_t[0];
    lc->grad_t[3] = ta->grad_t[1];
    lc->n_grad_t = 4;
    lc->egrad_t[0] = tf->egrad_t[0];
    lc->egrad_t[1] = tf->egrad_t[1];
    layer_flops(x, moe, lc);
}

/* EP: dispatch + combine forward; backward the combine's gradient travels
 * as a dispatch and the dispatch's as a combine. */
static void layer_ep(const Ctx *x, bool moe, SimLayerComm *sc, LayerCost *lc)
{
    const PartTemplate *tpl = x->tpl;
    if (!moe || tpl->ep_bytes <= 0) return;
    HwEpRoute r;
    sim_ep_route(x, &r);
    sc->ep_d = hw_ep_a2a_time_s(x->net, tpl->ep_dispatch_bytes, x->p->ep, x->epg.nodes, &r);
    sc->ep_c = hw_ep_a2a_time_s(x->net, tpl->ep_bytes, x->p->ep, x->epg.nodes, &r);
    lc->ep_f = lc->ep_b = sc->ep_d + sc->ep_c;
}

/* TP: 2 all-reduces per pass, or 2 all-gathers + 2 reduce-scatters with SP;
 * exposed, or (--tp-overlap) each block's half hidden under that block's
 * own GEMMs (Transformer Engine overlaps a GEMM with its own communication),
 * not the layer's, the hidden part slowing the compute. tpx_f / tpx_b: each
 * block's exposed part (attention, MLP); *slow_f the forward's slow-down. */
static void layer_tp(const Ctx *x, const CostBlock *a, const CostBlock *f, SimLayerComm *sc, LayerCost *lc,
                     double tpx_f[2], double tpx_b[2], double *slow_f)
{
    const ParallelPlan *p = x->p;
    double X = x->tpl->tp_bytes, tpc = 0;
    if (X > 0) {
        if (p->sp) {
            sc->ag = sim_coll(x, TS_COLL_ALLGATHER, X, &x->tpg, HW_GROUP_TP);
            sc->rs = sim_coll(x, TS_COLL_REDUCESCATTER, X, &x->tpg, HW_GROUP_TP);
            sc->half = sc->ag + sc->rs;
        } else {
            sc->half = sc->ar = sim_coll(x, TS_COLL_ALLREDUCE, X, &x->tpg, HW_GROUP_TP);
        }
        tpc = 2 * sc->half;
    }
    double sig = x->o->overlap_slowdown;
    sc->ov = p->tp_overlap && tpc > 0;
    if (sc->ov) {
        double half = tpc / 2, gb_a = a->gemm_ig + a->gemm_wg, gb_f = f->gemm_ig + f->gemm_wg;
        double hf = fmin(half, a->gemm_fwd) + fmin(half, f->gemm_fwd), hb = fmin(half, gb_a) + fmin(half, gb_f);
        lc->tp_f = tpc - hf;
        lc->tp_b = tpc - hb;
        tpx_f[0] = half - fmin(half, a->gemm_fwd), tpx_f[1] = half - fmin(half, f->gemm_fwd);
        tpx_b[0] = half - fmin(half, gb_a), tpx_b[1] = half - fmin(half, gb_f);
        lc->slow += sig * (hf + hb);
        *slow_f += sig * hf;
    } else {
        lc->tp_f = lc->tp_b = tpc;
        tpx_f[0] = tpx_f[1] = tpx_b[0] = tpx_b[1] = tpc / 2;
    }
}

/* CP: (c-1) ring steps of the local K and V, hidden under the attention;
 * or an exposed all-gather (backward: again, and a reduce-scatter of the
 * K/V gradients); or all-to-alls of Q, K, V and of the output, forward and
 * backward (Ulysses). *slow_f: the forward's slow-down under the ring. */
static void layer_cp(const Ctx *x, SimLayerComm *sc, LayerCost *lc, double *slow_f)
{
    const ParallelPlan *p = x->p;
    const PartTemplate *tpl = x->tpl;
    if (p->cp <= 1) return;
    double kv = tpl->cp_kv_bytes;
    if (x->o->cp_comm == SIM_CP_ALLGATHER) {
        double ag = sim_coll(x, TS_COLL_ALLGATHER, kv, &x->cpg, HW_GROUP_CP);
        sc->cp_pre_f = sc->cp_pre_b = ag;
        sc->cp_post_b = sim_coll(x, TS_COLL_REDUCESCATTER, kv, &x->cpg, HW_GROUP_CP);
        lc->cp_f = ag;
        lc->cp_b = ag + sc->cp_post_b;
        sc->cp_mode = SIM_CP_EXPOSED_SEGS;
    } else if (x->o->cp_comm == SIM_CP_A2A) {
        double per = kv / (double)p->cp;
        sc->cp_pre_f = sc->cp_post_b = hw_alltoall_time_s(x->net, tpl->cp_q_bytes + per, p->cp, x->cpg.nodes);
        sc->cp_post_f = sc->cp_pre_b = hw_alltoall_time_s(x->net, tpl->cp_o_bytes, p->cp, x->cpg.nodes);
        lc->cp_f = lc->cp_b = sc->cp_pre_f + sc->cp_post_f;
        sc->cp_mode = SIM_CP_EXPOSED_SEGS;
    } else {
        /* the ring's cp - 1 steps move what an all-gather of the K/V
         * blocks moves, over the same links: costed as that all-gather
         * (as the task graph's replay costs its "cp.kv") */
        double step = sim_coll(x, TS_COLL_ALLGATHER, kv, &x->cpg, HW_GROUP_CP);
        double hid_f = fmin(step, lc->attn_fwd * (double)(p->cp - 1) / (double)p->cp);
        double hid_b = fmin(2 * step, lc->attn_bwd * (double)(p->cp - 1) / (double)p->cp);
        lc->cp_f = step - hid_f;
        lc->cp_b = 2 * step - hid_b;
        sc->cp_mode = SIM_CP_RING_SEGS;
        sc->ring_hid_f = lc->attn_fwd * (double)(p->cp - 1) / (double)p->cp;
        sc->ring_hid_b = lc->attn_bwd * (double)(p->cp - 1) / (double)p->cp;
        sc->cp_f = lc->cp_f, sc->cp_b = lc->cp_b;
        double sig = x->o->overlap_slowdown;
        lc->slow += sig * (hid_f + hid_b);
        *slow_f += sig * hid_f;
    }
}

/* ZeRO-3 / FSDP: gather this layer's parameters in forward and backward,
 * reduce-scatter its gradients, every micro-batch (dense ones over DP x CP,
 * experts over expert DP); prefetch hides them under the layer's compute
 * where they fit. The copies are in the layer's compute. ZeRO-2 over
 * several micro-batches: the reduce-scatters alone. */
static void layer_fsdp(const Ctx *x, bool moe, LayerCost *lc)
{
    const PartBlockT *ta = &x->tpl->b[PART_BLOCK_ATTN], *tf = &x->tpl->b[moe ? PART_BLOCK_MOE : PART_BLOCK_MLP];
    double dense_p = ta->fsdp_params + tf->fsdp_params, exp_p = ta->fsdp_eparams + tf->fsdp_eparams;
    if (!(dense_p > 0 || exp_p > 0)) return;
    double gr = x->o->fp32_grad_reduce ? 4.0 : x->ab;
    bool gather = x->p->zero >= 3;
    if (dense_p > 0) {
        if (gather) lc->fsdp_ag += sim_coll(x, TS_COLL_ALLGATHER, dense_p * x->ab, &x->dpg, HW_GROUP_DP);
        lc->fsdp_rs += sim_coll(x, TS_COLL_REDUCESCATTER, dense_p * gr, &x->dpg, HW_GROUP_DP);
    }
    if (exp_p > 0) {
        if (gather) lc->fsdp_ag += sim_coll(x, TS_COLL_ALLGATHER, exp_p * x->ab, &x->edpg, HW_GROUP_DP);
        lc->fsdp_rs += sim_coll(x, TS_COLL_REDUCESCATTER, exp_p * gr, &x->edpg, HW_GROUP_DP);
    }
}

static void layer_cost(const Ctx *x, bool moe, LayerCost *lc)
{
    const ParallelPlan *p = x->p;
    const CostBlock *a = &x->cs->b[PART_BLOCK_ATTN], *f = &x->cs->b[moe ? PART_BLOCK_MOE : PART_BLOCK_MLP];
    layer_blocks(x, moe, lc);
    SimLayerComm sc = {.sp = p->sp};
    double tpx_f[2] = {0, 0}, tpx_b[2] = {0, 0};
    double slow_f = 0; /* of slow, the forward's (a full recompute runs it again) */
    layer_ep(x, moe, &sc, lc);
    layer_tp(x, a, f, &sc, lc, tpx_f, tpx_b, &slow_f);
    layer_cp(x, &sc, lc, &slow_f);
    layer_fsdp(x, moe, lc);
    /* recompute: the blocks' (cost_step), full recompute with the forward's
     * exposed collectives */
    if (p->recompute == PLAN_RECOMPUTE_FULL) lc->recompute = lc->fwd + lc->tp_f + lc->cp_f + lc->ep_f;
    /* and its overlapped TP / CP windows slow it as they slow the forward */
    if (p->recompute == PLAN_RECOMPUTE_FULL) lc->slow += slow_f;
    else lc->recompute = x->cs->recompute[PART_BLOCK_ATTN] + x->cs->recompute[moe ? PART_BLOCK_MOE : PART_BLOCK_MLP];
    /* the backward's stream time, the MLP / MoE block's first (the DP
     * buckets' ready times, dp_buckets.c): the task graph's block_bwd order */
    double rc_f = p->recompute == PLAN_RECOMPUTE_FULL ? f->fwd + tpx_f[1] + lc->ep_f
                                                      : x->cs->recompute[moe ? PART_BLOCK_MOE : PART_BLOCK_MLP];
    lc->bwd_mlp_s = rc_f + f->ig + f->wg + tpx_b[1] + lc->ep_b;
    lc->wgrad_mlp_s = f->wg;
    lc->bwd_span_s = lc->bwd + lc->recompute + lc->tp_b + lc->cp_b + lc->ep_b;
    sim_layer_segs(x, moe, &sc, lc);
}

/* Embedding (first chunk) and final norm + LM head + loss (last chunk), with
 * their TP collectives as the task graph emits them (src/workload/builder.c):
 * the embedding's output reduce-scattered with SP (backward: its gradient
 * all-gathered), else all-reduced (backward: none, Megatron's
 * reduce_from_tensor_model_parallel_region); per pass through the head (the
 * model's, each MTP module's) the input all-gathered with SP and the three
 * vocab-parallel cross-entropy all-reduces, backward the input gradient
 * reduce-scattered with SP, else all-reduced (the loss has no backward
 * collective). edge[]: SIM_EDGES' order. */
static void edge_costs(const Ctx *x, double edge[SIM_EDGES])
{
    const PartTemplate *t = x->tpl;
    const CostBlock *e = &x->cs->b[PART_BLOCK_EMBED], *h = &x->cs->b[PART_BLOCK_HEAD];
    const bool sp = x->p->sp;
    const double passes = (double)(1 + x->m->mtp_layers), X = t->embed_tp_bytes;
    edge[SIM_E_EMB_F] = e->fwd;
    edge[SIM_E_EMB_B] = e->ig + e->wg;
    edge[SIM_E_EMB_TP_F] = X > 0 ? sim_coll(x, sp ? TS_COLL_REDUCESCATTER : TS_COLL_ALLREDUCE, X, &x->tpg, HW_GROUP_TP) : 0;
    edge[SIM_E_EMB_TP_B] = X > 0 && sp ? sim_coll(x, TS_COLL_ALLGATHER, X, &x->tpg, HW_GROUP_TP) : 0;
    edge[SIM_E_EMB_PARAMS] = t->b[PART_BLOCK_EMBED].params;
    edge[SIM_E_HEAD_F] = h->fwd;
    edge[SIM_E_HEAD_B] = h->ig + h->wg;
    double tp = 0;
    if (t->head_sp_bytes > 0) tp += sim_coll(x, TS_COLL_ALLGATHER, t->head_sp_bytes, &x->tpg, HW_GROUP_TP);
    edge[SIM_E_HEAD_AG_F] = tp * passes;
    edge[SIM_E_HOST_WAIT] = x->cs->host_wait_s;
    edge[SIM_E_HOST_OPT] = x->cs->host_opt_s;
    if (t->vocab_ar_bytes > 0) /* vocab-parallel CE */
        tp += 3 * sim_coll(x, TS_COLL_ALLREDUCE, t->vocab_ar_bytes, &x->tpg, HW_GROUP_TP);
    edge[SIM_E_HEAD_TP_F] = tp * passes;
    edge[SIM_E_HEAD_TP_B] =
        t->tp_bytes > 0 ? passes * sim_coll(x, sp ? TS_COLL_REDUCESCATTER : TS_COLL_ALLREDUCE, t->tp_bytes, &x->tpg, HW_GROUP_TP) : 0;
    edge[SIM_E_HEAD_PARAMS] = t->b[PART_BLOCK_HEAD].params;
    edge[SIM_E_P2P_BYTES] = t->boundary_bytes;
    edge[SIM_E_EMB_WG] = e->wg;
    edge[SIM_E_HEAD_WG] = h->wg;
}

/* ZeRO-3 / FSDP on a stage of one chunk (ZeRO-3 takes no pipeline,
 * plan.c; ZeRO-2 over several micro-batches runs the same chain without
 * gathers, also only without a pipeline): the prefetch chain of the task
 * graph (src/workload/builder.c, fsdp_gather and fsdp_reduce), walked micro-batch by micro-batch with the
 * replay's rules, so that both give one answer. The units are the layers
 * and the root (embedding, final norm, LM head: torchtitan's fully_shard on
 * every block, then on the whole model). On one DP stream, first come first
 * served: the root's all-gather opens each forward (ready when the last
 * unit's backward ends; FSDP2 keeps the root gathered until its backward);
 * a layer's all-gather is issued when the layer before it starts (forward
 * prefetch: FSDP frees a unit after use, so at most two are gathered), the
 * backward's in reverse order; a layer's reduce-scatter follows its
 * backward, the root's the embedding's backward. A unit's whole forward or
 * backward, its TP / CP / EP collectives included, waits for its gather
 * (FSDP's pre-forward / pre-backward hook). The stage's compute runs its
 * windows back to back: a window is a unit's stream time, laid out as the
 * task graph's compute and exposed collectives (LayerCost.seg); a
 * collective slows the compute it meets (the replay's measure). */
typedef struct FsdpWalk {
    double C, D, U;     /* compute stream free, DP (HSDP: shard) stream free, end of the last unit (s) */
    double R;           /* HSDP: the replicas' stream free */
    int32_t last;       /* the step's last micro-batch: HSDP's replica all-reduces */
    double beside_s;    /* collective seconds beside compute */
    double idle_s[2];   /* compute waiting for a gather: forward, backward */
    int32_t bwd;        /* in the backward */
    SimSpans sp;        /* collectives issued that may still meet a window (two streams: unmerged) */
} FsdpWalk;

static double walk_issue_on(FsdpWalk *k, double *stream, double ready, double dur)
{
    double s = *stream > ready ? *stream : ready;
    *stream = s + dur;
    sim_spans_push(&k->sp, s, *stream, false);
    return *stream;
}

static double walk_issue(FsdpWalk *k, double ready, double dur) { return walk_issue_on(k, &k->D, ready, dur); }

/* A window laid out as segments: each collective issued meets only its
 * compute (the replay's measure). */
static void walk_segs(FsdpWalk *k, const SimSegs *sg)
{
    k->beside_s += sim_spans_walk(&k->sp, k->C, sg->len, sg, true);
    k->C += sg->len;
}

/* A window of len seconds, all compute or all collective. */
static void walk_window(FsdpWalk *k, double len, bool comp)
{
    if (!(len > 0)) len = 0;
    k->beside_s += sim_spans_walk(&k->sp, k->C, len, NULL, comp);
    k->C += len;
}

static void walk_wait(FsdpWalk *k, double t)
{
    if (t > k->C) k->idle_s[k->bwd] += t - k->C, k->C = t;
}


/* One micro-batch of the chain (walk state k carried over). */
/* HSDP: after the last micro-batch's reduce-scatter of a unit, its 1/S
 * shard all-reduced over the replicas (dense parameters), ready when the
 * unit's backward ends (the task graph's "hsdp.ar"). */
static void walk_replica(const Ctx *x, FsdpWalk *k, double params)
{
    if (!k->last || x->rpg.size <= 1 || !(params > 0)) return;
    double gr = x->o->fp32_grad_reduce ? 4.0 : x->ab;
    walk_issue_on(k, &k->R, k->C, sim_coll(x, TS_COLL_ALLREDUCE, params * gr / (double)x->dpg.size, &x->rpg, HW_GROUP_DP));
}

/* A unit's gather issued when the unit before it starts; its end (0: none). */
static double walk_gather(FsdpWalk *k, bool ag, double dur) { return ag ? walk_issue(k, k->U, dur) : 0; }

static void walk_micro(const Ctx *x, int64_t L, const SimLayerSet *ls,
                       const double edge[SIM_EDGES], const double root[4], FsdpWalk *k)
{
    const bool ag = x->p->zero >= 3; /* ZeRO-2's units gather nothing: no wait on the DP stream */
    /* forward: the root's gather, the embedding, the layers prefetching */
    walk_wait(k, walk_gather(k, ag, root[0]));
    walk_window(k, edge[SIM_E_EMB_F] + root[2], true);
    walk_window(k, edge[SIM_E_EMB_TP_F], false);
    k->U = k->C;
    const int64_t l0 = ls->l0; /* the chunk's first layer */
    const LayerCost *lc = L > 0 ? sim_layer_at(x, ls, l0) : NULL; /* none: an end chunk's edge alone */
    double g = lc ? walk_gather(k, ag, lc->fsdp_ag) : 0;
    for (int64_t l = 0; l < L; l++) {
        const LayerCost *nx = l + 1 < L ? sim_layer_at(x, ls, l0 + l + 1) : NULL;
        double gn = nx ? walk_gather(k, ag, nx->fsdp_ag) : 0;
        walk_wait(k, g);
        walk_segs(k, &lc->seg[0]);
        k->U = k->C;
        g = gn, lc = nx;
    }
    /* the head: its input's gathers, its compute, the loss's all-reduces;
     * backward its input gradient, the collectives, its weight gradient */
    double hag = edge[SIM_E_HEAD_AG_F], hwg = edge[SIM_E_HEAD_WG];
    walk_window(k, hag, false);
    walk_window(k, edge[SIM_E_HEAD_F], true);
    walk_window(k, edge[SIM_E_HEAD_TP_F] - hag, false);
    /* backward: the head, the layers last to first, the embedding */
    k->bwd = 1;
    walk_window(k, edge[SIM_E_HEAD_B] - hwg, true);
    walk_window(k, edge[SIM_E_HEAD_TP_B], false);
    walk_window(k, hwg, true);
    k->U = k->C;
    lc = L > 0 ? sim_layer_at(x, ls, l0 + L - 1) : NULL;
    g = lc ? walk_gather(k, ag, lc->fsdp_ag) : 0;
    for (int64_t l = L - 1; l >= 0; l--) {
        const LayerCost *nx = l > 0 ? sim_layer_at(x, ls, l0 + l - 1) : NULL;
        double gn = nx ? walk_gather(k, ag, nx->fsdp_ag) : 0;
        walk_wait(k, g);
        walk_segs(k, &lc->seg[1]);
        walk_issue(k, k->C, lc->fsdp_rs);
        walk_replica(x, k, lc->params - lc->expert_params);
        k->U = k->C;
        g = gn, lc = nx;
    }
    walk_window(k, edge[SIM_E_EMB_TP_B], false);
    walk_window(k, edge[SIM_E_EMB_B] + root[3], true);
    walk_issue(k, k->C, root[1]);
    walk_replica(x, k, edge[SIM_E_EMB_PARAMS] + edge[SIM_E_HEAD_PARAMS]);
    k->bwd = 0;
}

/* A unit's gradient reduce-scatter over the DP group (0: no parameters). */
static double unit_rs_s(const Ctx *x, double params)
{
    double gr = x->o->fp32_grad_reduce ? 4.0 : x->ab;
    return params > 0 ? sim_coll(x, TS_COLL_REDUCESCATTER, params * gr, &x->dpg, HW_GROUP_DP) : 0;
}

void sim_chunk_rs(const Ctx *x, int64_t nl, const SimLayerSet *ls, const double edge[SIM_EDGES], SimChunkCost *c)
{
    double t = 0;
    for (int64_t l = 0; l < nl; l++) t += sim_layer_at(x, ls, ls->l0 + l)->fsdp_rs;
    c->rs_layers = (int32_t)nl;
    c->rs_layer_s = nl > 0 ? t / (double)nl : 0;
    c->rs_head_s = unit_rs_s(x, edge[SIM_E_HEAD_PARAMS]);
    c->rs_emb_s = unit_rs_s(x, edge[SIM_E_EMB_PARAMS]);
}

/* The walk over the step's n micro-batches into chunk c: the exposed FSDP
 * time per micro-batch (c->fsdp_exposed_s, the forward's part in
 * fwd_exposed_s),
 * the slow-down of what hides (c->slowdown_s) and the reduce-scatters' tail
 * after the last backward (tail_s), with
 * the root unit's copies in the compute. The chain repeats once a
 * micro-batch starts from the state the one before started from: the rest
 * is that micro-batch again. */
void sim_fsdp_chain(const Ctx *x, int64_t nl, const SimLayerSet *ls,
                    const double edge[SIM_EDGES], int64_t n_mb, double dp_busy_s, SimChunkCost *c,
                    double *fwd_exposed_s, double *tail_s)
{
    double rp = edge[SIM_E_EMB_PARAMS] + edge[SIM_E_HEAD_PARAMS], gr = x->o->fp32_grad_reduce ? 4.0 : x->ab;
    double root[4] = {0, 0, 0, 0}; /* gather, reduce-scatter, copy-out, copy-in */
    root[1] = unit_rs_s(x, rp);
    if (rp > 0 && x->p->zero >= 3) /* ZeRO-2's units reduce-scatter only */
        root[0] = sim_coll(x, TS_COLL_ALLGATHER, rp * x->ab, &x->dpg, HW_GROUP_DP);
    if (rp > 0 && part_fsdp_copies(x->p)) {
        PartKernel kc; /* the root unit's copies: the layers' rule, never under recompute */
        part_fsdp_copy_kernel(rp, x->ab, gr, true, &kc);
        CostCtx cc;
        sim_cost_ctx(&cc, x->hw, x->p, x->o, x->tc, x->net);
        double t[3];
        cost_kernel(&cc, &kc, t);
        root[2] = t[0], root[3] = t[1] + t[2];
        c->compute_fwd_s += root[2];
        c->compute_bwd_s += root[3];
    }
    FsdpWalk k = {.D = dp_busy_s}, prev = {0};
    double d_idle[2] = {0, 0}, d_beside = 0; /* the last micro-batch walked */
    int64_t i = 0;
    for (; i < n_mb - 1; i++) {
        if (i > 1 && k.sp.n == prev.sp.n) { /* the same start, relative to the compute stream: periodic */
            double tol = 1e-12 * (k.C > 1 ? k.C : 1);
            bool same = fabs((k.D - k.C) - (prev.D - prev.C)) <= tol && fabs((k.U - k.C) - (prev.U - prev.C)) <= tol;
            for (int32_t j = 0; j < k.sp.n && same; j++)
                same = fabs((k.sp.s[j] - k.C) - (prev.sp.s[j] - prev.C)) <= tol &&
                       fabs((k.sp.e[j] - k.C) - (prev.sp.e[j] - prev.C)) <= tol;
            if (same) break;
        }
        prev = k;
        walk_micro(x, nl, ls, edge, root, &k);
        d_idle[0] = k.idle_s[0] - prev.idle_s[0];
        d_idle[1] = k.idle_s[1] - prev.idle_s[1];
        d_beside = k.beside_s - prev.beside_s;
    }
    if (i < n_mb - 1) { /* the micro-batches up to the last as the one before */
        double rest = (double)(n_mb - 1 - i), dc = rest * (k.C - prev.C);
        k.idle_s[0] += rest * d_idle[0];
        k.idle_s[1] += rest * d_idle[1];
        k.beside_s += rest * d_beside;
        k.C += dc, k.D += dc, k.U += dc;
        for (int32_t j = 0; j < k.sp.n; j++) k.sp.s[j] += dc, k.sp.e[j] += dc;
    }
    k.last = 1;
    k.R = k.C;
    walk_micro(x, nl, ls, edge, root, &k);
    double n = (double)(n_mb > 0 ? n_mb : 1);
    c->fsdp_exposed_s = (k.idle_s[0] + k.idle_s[1]) / n;
    *fwd_exposed_s = k.idle_s[0] / n;
    c->slowdown_s += x->o->overlap_slowdown * k.beside_s / n;
    /* the reduce-scatters (and HSDP's all-reduces) still running after the
     * last backward */
    double end = k.D > k.R ? k.D : k.R;
    *tail_s = end > k.C ? end - k.C : 0;
}

/* ---- layer-cost cache (sim_work_cache_costs) ---------------------------
 * layer_cost and edge_costs read the model, hw and net (by address), the
 * Ctx scalars (dtypes, tc, t, B, S, Sl; T, Tsp and ab follow from them and
 * sp), the plan knobs sp, cp, ep, etp, flash_attn, tp_overlap, the FSDP units (fsdp),
 * recompute and its modules, the MoE routing knobs, the FP8 recipe, pp == 1
 * (tied embeddings), the costing options below, and the
 * size / node span of the TP, CP, EP groups and, where gradients are
 * reduce-scattered per micro-batch (plan_rs_per_microbatch; fsdp 1, ZeRO-3
 * 2), of the DP and expert-DP groups. The key holds exactly these; it is zeroed before
 * filling so it compares with memcmp. */
typedef struct CostKey {
    const void *m, *hw, *net;
    double tc, overlap_slowdown, moe_imbalance, moe_capacity;
    int64_t t, B, S, Sl, cp, ep, etp, moe_node_limit;
    uint32_t rc_modules;
    uint8_t moe_dispatch, moe_pad, fp8_recipe;
    int64_t tp_size, tp_nodes, cp_nodes, ep_nodes, dp_size, dp_nodes, edp_size, edp_nodes;
    int32_t dt, adt, recompute;
    uint8_t sp, flash, tp_overlap, fsdp, pp1, framework, precision, selective_ops, fp32_grad, cp_comm, seq_experts;
    uint8_t ce_fusion, cuda_graphs;
} CostKey;

typedef struct CostEntry {
    CostKey key;
    bool valid;
    LayerCost dense, moe;
    double edge[SIM_EDGES];
} CostEntry;

#define COST_CACHE_SIZE 1024 /* entries, direct-mapped: ~650 KB per work space */

typedef struct CostCache {
    int64_t hits, misses;
    CostEntry e[COST_CACHE_SIZE];
} CostCache;

static void cost_key(const Ctx *x, CostKey *k)
{
    const ParallelPlan *p = x->p;
    memset(k, 0, sizeof *k);
    k->m = x->m;
    k->hw = x->hw;
    k->net = x->net;
    k->tc = x->tc;
    k->overlap_slowdown = x->o->overlap_slowdown;
    k->t = x->t;
    k->B = x->B;
    k->S = x->S;
    k->Sl = x->Sl;
    k->cp = p->cp;
    k->ep = p->ep;
    k->etp = p->etp;
    k->tp_size = x->tpg.size;
    k->tp_nodes = x->tpg.nodes;
    k->cp_nodes = x->cpg.nodes;
    k->ep_nodes = x->epg.nodes;
    k->fsdp = p->zero >= 3 ? 2 : plan_rs_per_microbatch(p) ? 1 : 0;
    if (k->fsdp) {
        k->dp_size = x->dpg.size;
        k->dp_nodes = x->dpg.nodes;
        k->edp_size = x->edpg.size;
        k->edp_nodes = x->edpg.nodes;
    }
    k->dt = (int32_t)x->dt;
    k->adt = (int32_t)x->adt;
    k->recompute = (int32_t)p->recompute;
    k->rc_modules = plan_rc_modules(p);
    k->moe_imbalance = p->moe_imbalance;
    k->moe_capacity = p->moe_capacity;
    k->moe_node_limit = p->moe_node_limit;
    k->moe_dispatch = (uint8_t)p->moe_dispatch;
    k->moe_pad = p->moe_pad;
    k->fp8_recipe = (uint8_t)p->fp8_recipe;
    k->sp = p->sp;
    k->flash = p->flash_attn;
    k->tp_overlap = p->tp_overlap;
    k->pp1 = p->pp == 1;
    k->framework = (uint8_t)p->framework;
    k->precision = (uint8_t)p->precision;
    k->selective_ops = x->o->selective_ops;
    k->fp32_grad = x->o->fp32_grad_reduce;
    k->cp_comm = (uint8_t)x->o->cp_comm;
    k->seq_experts = x->o->sequential_experts;
    k->ce_fusion = (uint8_t)x->o->ce_fusion;
    k->cuda_graphs = x->o->cuda_graphs;
}

static size_t cost_hash(const CostKey *k)
{
    return (size_t)(ts_fnv_words(TS_FNV_OFFSET, k, sizeof *k) % COST_CACHE_SIZE);
}

void sim_step_cost(const ModelSpec *m, const ParallelPlan *p, const SimOptions *o, const HwModel *hw, double tf,
                   const HwNet *net, PartTemplate *t, CostStep *cs)
{
    PartRuntime rt;
    sim_part_runtime(o, &rt);
    part_template(m, p, &rt, t);
    CostCtx cc;
    sim_cost_ctx(&cc, hw, p, o, tf, net);
    cost_step(&cc, m, p, &rt, t, cs);
}

/* Cost the layers and edges of x, through the cache of w when it is on. */
void sim_layer_costs(const Ctx *x, SimWork *w, LayerCost *dense, LayerCost *moe, double edge[SIM_EDGES])
{
    void **slot = sim_work_cost_cache(w);
    CostEntry *e = NULL;
    CostKey k;
    if (slot) {
        if (!*slot) *slot = calloc(1, sizeof(CostCache));
        if (*slot) {
            CostCache *cc = *slot;
            cost_key(x, &k);
            e = &cc->e[cost_hash(&k)];
            if (e->valid && memcmp(&e->key, &k, sizeof k) == 0) {
                cc->hits++;
                *dense = e->dense;
                *moe = e->moe;
                memcpy(edge, e->edge, sizeof e->edge);
                return;
            }
            cc->misses++;
        }
    }
    /* the plan's per-rank kernels (partition.h), costed here */
    PartTemplate tpl;
    CostStep cs;
    sim_step_cost(x->m, x->p, x->o, x->hw, x->tc, x->net, &tpl, &cs);
    Ctx y = *x;
    y.tpl = &tpl;
    y.cs = &cs;
    layer_cost(&y, false, dense);
    if (x->m->experts > 0) layer_cost(&y, true, moe);
    else memset(moe, 0, sizeof *moe);
    edge_costs(&y, edge);
    if (e) {
        e->key = k;
        e->valid = true;
        e->dense = *dense;
        e->moe = *moe;
        memcpy(e->edge, edge, sizeof e->edge);
    }
}

void sim_work_cost_stats(const SimWork *w, int64_t *hits, int64_t *misses)
{
    void **slot = sim_work_cost_cache((SimWork *)w);
    const CostCache *cc = slot ? *slot : NULL;
    if (hits) *hits = cc ? cc->hits : 0;
    if (misses) *misses = cc ? cc->misses : 0;
}
