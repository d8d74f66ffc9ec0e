/* cost_int.h — the simulator's costing context and per-layer costs, shared
 * by cost.c (chunks, the step, the simulation) and layer_cost.c (one layer,
 * the embedding and head, the layer-cost cache). Not a public header. */
#ifndef TRAINSIM_COST_INT_H
#define TRAINSIM_COST_INT_H

#include <string.h>

#include "sim_internal.h"
#include "trainsim/cost.h"

typedef struct Ctx {
    const ModelSpec *m;
    const ParallelPlan *p;
    const HwModel *hw;
    const HwNet *net;
    const SimOptions *o;
    TsDtype dt;             /* GEMM dtype */
    TsDtype adt;            /* attention / activation dtype (bf16 under fp8) */
    double tc;              /* tensor-core time factor: clock / sustained clock x (1 + straggler) */
    double ab;              /* activation bytes per element, 2 */
    int64_t t, T, Tsp, S, Sl, B;
    PlanGroupInfo tpg, cpg, epg, dpg, edpg, ppg;
    PlanGroupInfo rpg;      /* HSDP replicas (size 1 without --dp-shard); dpg is then the shard group */
    bool gated;
    const PartTemplate *tpl; /* the plan's per-rank kernels, while the layers are costed */
    const CostStep *cs;      /* and their costs */
} Ctx;

/* sim_layer_costs' edges: embedding forward / backward / TP forward / TP
 * backward / parameters, the same of the head (TP: its passes' collectives,
 * layer_cost.c edge_costs), the pipeline message in bytes, the embedding's
 * and the head's weight-gradient parts of their backward, of the head's
 * forward TP the input's all-gathers; and, cached with them, the whole
 * model's wait on the host per micro-batch (CostStep.host_wait_s) and
 * its wait on the optimizer's host loop (CostStep.host_opt_s). */
enum {
    SIM_E_EMB_F, SIM_E_EMB_B, SIM_E_EMB_TP_F, SIM_E_EMB_TP_B, SIM_E_EMB_PARAMS,
    SIM_E_HEAD_F, SIM_E_HEAD_B, SIM_E_HEAD_TP_F, SIM_E_HEAD_TP_B, SIM_E_HEAD_PARAMS,
    SIM_E_P2P_BYTES, SIM_E_EMB_WG, SIM_E_HEAD_WG, SIM_E_HEAD_AG_F, SIM_E_HOST_WAIT,
    SIM_E_HOST_OPT, SIM_EDGES
};

/* A window of a layer's stream time in the task graph's order
 * (layer_segs.c): d > 0 compute, d < 0 the stream waiting for a collective. */
#define SIM_SEGS 20
typedef struct SimSegs {
    int32_t n;
    double len, comp; /* seconds in all, of them compute (kept by sim_seg_add) */
    double d[SIM_SEGS];
} SimSegs;

/* Collectives running on other streams, as time spans in issue order
 * (back-to-back ones of one stream merged when pushed so), walked against
 * the compute windows they meet (layer_segs.c). */
#define SIM_SPANS 16
typedef struct SimSpans {
    int32_t n;
    double s[SIM_SPANS], e[SIM_SPANS];
} SimSpans;

typedef struct LayerCost {
    double fwd, bwd;           /* compute busy (no comm), one micro-batch */
    double attn_fwd, attn_bwd; /* attention core alone */
    double gemm_fwd, gemm_bwd; /* GEMMs alone (what TP overlap can hide under) */
    double wgrad;              /* of bwd: the weight-gradient kernels (the costed step's wg), the
                                  W task of zb-h1 and dualpipe(v); the rest is input gradient */
    double tp_f, tp_b;         /* exposed TP */
    double cp_f, cp_b;         /* exposed CP */
    double ep_f, ep_b;         /* exposed EP */
    double slow;               /* slow-down from overlapped TP/CP */
    double recompute;          /* extra forward in backward */
    double fsdp_ag, fsdp_rs;   /* ZeRO-3 all-gather / reduce-scatter of this layer */
    double params;             /* parameter elements on this GPU */
    double expert_params;      /* of which routed experts */
    double grad_t[4];          /* its dense parameter tensors in backward order (DP buckets):
                                  fc2, fc1 + norm (MoE: router + shared experts + norm),
                                  attention output projection + norm, QKV; sum params - expert_params */
    int32_t n_grad_t;
    double egrad_t[2];         /* routed experts: all local fc2, all local fc1; sum expert_params */
    double bwd_mlp_s;          /* of the layer's backward stream time, the MLP / MoE block's part
                                  (it runs first: its recompute, exposed TP and EP, compute) */
    double wgrad_mlp_s;        /* of wgrad, the MLP / MoE block's (a W pass runs it first) */
    double bwd_span_s;         /* the layer's backward stream time without slow-down and ZeRO-3:
                                  bwd + recompute + tp_b + cp_b + ep_b */
    double fwd_flops_token;    /* model FLOPs per token, forward, whole layer (unsharded) */
    double recompute_flops_token;
    SimSegs seg[2];            /* the forward's and the backward's stream time (fwd + tp_f + cp_f + ep_f;
                                  bwd_span_s) in the task graph's order */
} LayerCost;

/* One layer's collectives as layer_cost times them, for its segments: one
 * block's TP all-gather, reduce-scatter, all-reduce per pass (sp, ov:
 * --tp-overlap, half: a block's chain), the EP dispatch and combine, the CP
 * exchange (ring: hidden parts and exposures; exposed: before and after the
 * block, forward and backward). */
enum { SIM_CP_NO_SEGS, SIM_CP_RING_SEGS, SIM_CP_EXPOSED_SEGS };
typedef struct SimLayerComm {
    bool sp, ov;
    double ag, rs, ar, half, ep_d, ep_c;
    int cp_mode;
    double ring_hid_f, ring_hid_b, cp_f, cp_b;
    double cp_pre_f, cp_post_f, cp_pre_b, cp_post_b;
} SimLayerComm;
void sim_layer_segs(const Ctx *x, bool moe, const SimLayerComm *c, LayerCost *lc);
void sim_seg_add(SimSegs *s, double d, bool comp);
/* A full list: two back-to-back spans (one ends where the next starts: a
 * stream's queue, ZeRO-2's reduce-scatters behind each other) become one,
 * which meets the same compute; failing that, the oldest goes. */
void sim_spans_make_room(SimSpans *p);
/* A span [s, e) issued; merge: joined to the last one when it starts by its
 * end (one stream's back-to-back collectives). Inline: the bucket walk
 * pushes one per bucket. */
static inline void sim_spans_push(SimSpans *p, double s, double e, bool merge)
{
    if (!(e > s)) return;
    if (merge && p->n > 0 && s <= p->e[p->n - 1]) {
        p->e[p->n - 1] = e;
        return;
    }
    if (p->n == SIM_SPANS) sim_spans_make_room(p);
    p->s[p->n] = s, p->e[p->n] = e, p->n++;
}
/* A window of len seconds from t, laid out as sg (NULL: uniform, compute
 * when comp, else a wait): the compute seconds the spans meet there; the
 * spans ending inside it are dropped. */
double sim_spans_walk(SimSpans *p, double t, double len, const SimSegs *sg, bool comp);

/* Megatron-Core's gradient buckets of one chunk (dp_buckets.c): layers
 * [l0, l0 + nl) with the LM head first (head_params > 0) and the embedding
 * last (emb_params > 0), reduced with collective rc at gbytes per element
 * over DP (experts over expert DP). */
typedef struct SimBuckets {
    double t_dp;   /* every bucket's collective, summed */
    double t_ag;   /* with gather_bytes > 0: the dense buckets' parameter all-gathers */
    double t_eag;  /* and the expert buckets' */
    double end_s;  /* when the last bucket's collective ends, from the start of the layers'
                      backward (window_s long), the DP stream free before: each bucket is
                      ready when its last tensor's gradient is, at the end of its block's
                      backward as the task graph feeds them (LayerCost.bwd_mlp_s,
                      bwd_span_s; in a W pass wgrad_mlp_s, wgrad; the LM head's at 0, the
                      embedding's at window_s), and starts when ready and the previous one
                      is done (SimChunkCost.dp_end_s) */
    double lag_s;  /* with gather_bytes > 0: SimChunkCost.gather_lag_s, the buckets gathered
                      in reverse order of closing (t_ag + t_eag in all) under a forward of
                      emb_fwd_s, then layer_fwd_s per layer, then the head */
    int32_t n;     /* buckets */
    double beside_s; /* compute seconds of the window (and no further) that the buckets' collectives
                        run beside, the DP stream free at its start (layer_segs.c) */
    double within_s; /* the collectives' seconds inside the window */
} SimBuckets;
#define SIM_BUCKET_MEMO 8
typedef struct SimBucketMemo { /* collective times by bucket size (< 0: expert buffer), one plan */
    double size[SIM_BUCKET_MEMO], t[SIM_BUCKET_MEMO], t_ag[SIM_BUCKET_MEMO];
    int n;
} SimBucketMemo;
typedef struct SimBucketTiming {
    double window_s;    /* the layers' part of the chunk's last backward */
    double emb_fwd_s;   /* the embedding's forward (first chunk), before the layers */
    double layer_fwd_s; /* one layer's forward */
    bool w_pass;        /* the last gradients come from a W task (weight gradients only) */
    double tail_wait_s; /* after the layers, the stream waiting on a collective first (the
                           embedding's input-gradient all-gather), then compute */
} SimBucketTiming;
/* A chunk's layers as costed: dense and MoE (moe NULL without experts);
 * under --recompute-layers k the first k layers of the chunk fully
 * recomputed (Megatron's block method, as the task graph runs them) and the
 * rest without recompute (the _nr costs). */
typedef struct SimLayerSet {
    const LayerCost *dense, *moe;       /* the plan's recompute */
    const LayerCost *dense_nr, *moe_nr; /* no recompute (the same as dense, moe when rk < 0) */
    int64_t l0, rk;                     /* the chunk's first layer; layers recomputed, < 0 all */
} SimLayerSet;

static inline const LayerCost *sim_layer_at(const Ctx *x, const SimLayerSet *s, int64_t l)
{
    bool moe = s->moe && model_layer_is_moe(x->m, l), rc = s->rk < 0 || l - s->l0 < s->rk;
    return rc ? (moe ? s->moe : s->dense) : (moe ? s->moe_nr : s->dense_nr);
}

void sim_chunk_buckets(const Ctx *x, const SimLayerSet *ls, int64_t l0, int64_t nl,
                       double head_params, double emb_params, TsColl rc, double gbytes, double bucket_elems,
                       double gather_bytes, const SimBucketTiming *tm, SimBucketMemo *memo, SimBuckets *out);

/* A collective of `bytes` over group g, as hw_coll_time_s costs it. */
double sim_coll(const Ctx *x, TsColl c, double bytes, const PlanGroupInfo *g, HwGroupKind kind);
/* The EP route of the plan (deepep, node limit, the busiest rank's load). */
void sim_ep_route(const Ctx *x, HwEpRoute *r);
/* The dense and MoE layer costs of x and its edges (SIM_EDGES), through the
 * layer-cost cache of w when it is on. */
void sim_layer_costs(const Ctx *x, SimWork *w, LayerCost *dense, LayerCost *moe, double edge[SIM_EDGES]);
/* The layers as runs of equal weight (a model's dense and MoE layers come
 * in a few runs), so that a check costs stages + runs, not layers. */
typedef struct SimRun {
    double w;
    int64_t n;
} SimRun;
/* One more layer of weight w: the last run grows, or a new one starts. */
static inline void sim_run_push(SimRun *r, int32_t *nr, double w)
{
    if (*nr > 0 && r[*nr - 1].w == w) r[*nr - 1].n++;
    else r[(*nr)++] = (SimRun){.w = w, .n = 1};
}
/* sim_balance_layers over runs r[0..nr) (balance.c) */
bool sim_balance_runs(const SimRun *r, int32_t nr, int64_t c, double first_x, double last_x, double below,
                      SimBalance *out);

/* The per-micro-batch reduce-scatter chain of a chunk (ZeRO-3's gathers
 * too; plan_rs_per_microbatch) over n_mb micro-batches, its DP stream busy
 * for dp_busy_s from the start (ZeRO-2: the step's parameter gathers): adds
 * the exposed time, the slow-down and ZeRO-3's root-unit copies to c;
 * *fwd_exposed_s the forward's part, *tail_s what runs after the last
 * backward. */
void sim_fsdp_chain(const Ctx *x, int64_t nl, const SimLayerSet *ls, const double edge[SIM_EDGES], int64_t n_mb,
                    double dp_busy_s, SimChunkCost *c, double *fwd_exposed_s, double *tail_s);
/* ZeRO-2 under a pipeline: the reduce-scatters one backward of the chunk
 * issues (SimChunkCost.rs_*), which the engine walks on the stage's
 * timeline (SimPipeline.dp_shared). */
void sim_chunk_rs(const Ctx *x, int64_t nl, const SimLayerSet *ls, const double edge[SIM_EDGES], SimChunkCost *c);

/* ZeRO-2 under a pipeline: the engine walks each backward's reduce-scatters
 * on the stage's timeline (SimPipeline.dp_shared). */
static inline bool sim_rs_timeline(const ParallelPlan *p)
{
    return plan_rs_per_microbatch(p) && p->zero < 3 && p->pp * p->vpp > 1;
}

/* What cost.c's simulate hands the chunk assembly (chunk.c). */
typedef struct SimChunkIn {
    const SimSetup *in;
    const LayerCost *dense, *moe;       /* one layer of each kind; moe NULL without experts */
    const LayerCost *dense_nr, *moe_nr; /* --recompute-layers: a layer that keeps its activations
                                           (dense, moe otherwise) */
    const double *edge;                 /* sim_layer_costs' SIM_E_* */
    SimChunkCost *cc;                   /* [pp * plan_rank_chunks] the engine's chunks, filled */
    SimStageCost *sc;                   /* [pp] the stages' steps, added to */
} SimChunkIn;
/* Every model chunk's costs (cc), each rank's step (sc); *fl_token and
 * *rfl_token the whole model's model and recompute FLOPs per token.
 * TS_ERR_INTERNAL when out of memory. */
TsStatus sim_assemble_chunks(const Ctx *x, const SimChunkIn *ci, double *fl_token, double *rfl_token, TsError *err);

#endif
