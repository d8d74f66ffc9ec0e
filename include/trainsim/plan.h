/*
 * trainsim/plan.h — ParallelPlan: how one training job is split over GPUs,
 * its validation, and Megatron's rank layout with its process groups.
 *
 * A plan is flat data: the parallel degrees (TP, PP, VPP, DP, CP, EP, ETP),
 * sequence parallelism, ZeRO stage / distributed optimizer, recompute,
 * batch geometry, dtype, pipeline schedule, optimizer. plan_resolve() fills
 * the derived fields (dp from the GPU count, sp default, grad_accum) and
 * checks every rule; an error names the knob and the rule it breaks
 * (TS_ERR_PLAN, exit code 4).
 *
 * Rank layout (Megatron-Core order "tp-cp-dp-pp", tp innermost):
 *     rank = tp_i + TP*(cp_i + CP*(dp_i + DP*pp_i))
 * Expert layers re-carve the TP*CP*DP ranks of one pipeline stage as
 * "etp-ep-edp" (etp innermost):  local = rank mod (TP*CP*DP),
 *     etp_i = local mod ETP, ep_i = (local/ETP) mod EP, edp_i = local/(ETP*EP)
 * so EDP = TP*CP*DP / (ETP*EP). Every process group is then an arithmetic
 * progression base + i*stride (i < size): the common queries (size, nodes
 * spanned, GPUs per node) are O(1) and need no per-rank arrays; member lists
 * are produced on demand (plan_group_members).
 *
 * Units: batch sizes in sequences, seq in tokens. Counts are int64_t.
 *
 * Example (GPT-3 175B on 64 GPUs):
 *     ParallelPlan p; plan_init(&p);
 *     p.tp = 8; p.pp = 8; p.vpp = 3; p.gpus = 64; p.seq = 2048;
 *     p.micro_batch = 1; p.global_batch = 64; p.schedule = PLAN_SCHED_INTERLEAVED;
 *     if (plan_resolve(&gpt3, &p, &err) != TS_OK) ...   // p.dp = 1, p.grad_accum = 64
 *     PlanGroupInfo gi; plan_group(&p, PLAN_GROUP_TP, 0, 8, &gi);
 *     // gi.size 8, gi.stride 1, gi.nodes 1, gi.per_node 8
 *     plan_group(&p, PLAN_GROUP_PP, 0, 8, &gi);
 *     // gi.size 8, gi.stride 8, members 0,8,...,56, gi.nodes 8, gi.per_node 1
 */
#ifndef TRAINSIM_PLAN_H
#define TRAINSIM_PLAN_H

#include "trainsim/model.h"

/* X(NAME, "name") tables. */
#define PLAN_RECOMPUTE_LIST(X) \
    X(NONE, "none")            \
    X(SELECTIVE, "selective")  \
    X(FULL, "full")
typedef enum {
#define X(e, n) PLAN_RECOMPUTE_##e,
    PLAN_RECOMPUTE_LIST(X)
#undef X
    PLAN_RECOMPUTE_COUNT
} PlanRecompute;

/* Pipeline schedules (docs/simulate.md, "Schedules"): GPipe; 1F1B; Megatron's
 * interleaved 1F1B; ZB-H1 (Qi et al. 2024, arXiv 2401.10241 section 3.1: the
 * backward split into input-gradient B and weight-gradient W passes, the W
 * passes deferred into 1F1B's cool-down bubble); DualPipe (DeepSeek-V3 report
 * section 3.2.1, arXiv 2412.19437; github deepseek-ai/DualPipe, dualpipe.py:
 * two copies of the pipeline run in opposite directions, forward and backward
 * chunks overlapped in pairs); DualPipeV (the same repository's
 * dualpipev.py: the model cut into 2*pp chunks placed in a V). */
#define PLAN_SCHED_LIST(X)          \
    X(1F1B, "1f1b")                 \
    X(INTERLEAVED, "interleaved")   \
    X(GPIPE, "gpipe")               \
    X(ZBH1, "zb-h1")                \
    X(DUALPIPE, "dualpipe")         \
    X(DUALPIPEV, "dualpipev")       \
    X(1F1B_A2A, "1f1b-a2a")
typedef enum {
#define X(e, n) PLAN_SCHED_##e,
    PLAN_SCHED_LIST(X)
#undef X
    PLAN_SCHED_COUNT
} PlanSchedule;

/* The framework whose code path runs the step (its kernels, pipeline engine
 * and defaults):
 * - megatron: Megatron-Core with Transformer Engine's fused kernels;
 * - torchtitan: eager PyTorch model code (unfused RMSNorm with fp32 upcast,
 *   complex RoPE, silu * mul, repeat_kv; separate wq/wk/wv and w1/w3 GEMMs);
 * - deepspeed: Megatron-DeepSpeed's PipelineEngine (2022): pipeline sends and
 *   receives block the compute stream and every TP rank sends the whole
 *   boundary activation; DP gradients are all-reduced after the pipeline
 *   flush (also under ZeRO-1), the ZeRO-1 parameter all-gather is exposed at
 *   the step; with bf16 the BF16 optimizer adds each micro-batch's gradients
 *   into fp32 ones (update_hp_grads) on the compute stream;
 * - hf: HuggingFace transformers' own modules in eager mode (the model's
 *   separate projections, unfused activations and norms, the loss on fp32
 *   logits, SDPA attention) with eager PyTorch's host dispatch per kernel. */
#define PLAN_FRAMEWORK_LIST(X)      \
    X(MEGATRON, "megatron")         \
    X(TORCHTITAN, "torchtitan")     \
    X(DEEPSPEED, "deepspeed")       \
    X(HF, "hf")
typedef enum {
#define X(e, n) PLAN_FRAMEWORK_##e,
    PLAN_FRAMEWORK_LIST(X)
#undef X
    PLAN_FRAMEWORK_COUNT
} PlanFramework;

/* The precision recipe (--dtype stays the GEMMs' compute type): mixed = 16-bit
 * parameters and gradients with fp32 main parameters and fp32 Adam states
 * (Megatron, DeepSpeed); amp = fp32 parameters, gradients and Adam states,
 * matmuls autocast to 16 bit, norms, softmax and loss in fp32 (torch AMP, HF
 * Trainer --bf16); pure = parameters, gradients and Adam states all 16 bit. */
#define PLAN_PRECISION_LIST(X) \
    X(MIXED, "mixed")          \
    X(AMP, "amp")              \
    X(PURE, "pure")
typedef enum {
#define X(e, n) PLAN_PRECISION_##e,
    PLAN_PRECISION_LIST(X)
#undef X
    PLAN_PRECISION_COUNT
} PlanPrecision;

#define PLAN_OPTIM_LIST(X) \
    X(ADAM, "adam")        \
    X(SHAMPOO, "shampoo")
typedef enum {
#define X(e, n) PLAN_OPTIM_##e,
    PLAN_OPTIM_LIST(X)
#undef X
    PLAN_OPTIM_COUNT
} PlanOptimizer;

/* How MoE tokens travel to their experts and back:
 * - alltoall: NCCL all-to-all of every token-expert copy (Megatron's
 *   alltoall dispatcher);
 * - deepep: DeepEP's dispatch and combine (DeepSeek-V3 report §3.2.2): one
 *   copy of a token per destination node over InfiniBand, forwarded over
 *   NVLink to the GPUs of its experts there; the dispatch in FP8 under FP8
 *   training, the combine in BF16. */
#define PLAN_MOE_DISPATCH_LIST(X) \
    X(ALLTOALL, "alltoall")       \
    X(DEEPEP, "deepep")
typedef enum {
#define X(e, n) PLAN_MOE_DISPATCH_##e,
    PLAN_MOE_DISPATCH_LIST(X)
#undef X
    PLAN_MOE_DISPATCH_COUNT
} PlanMoeDispatch;

/* The FP8 scaling recipe (under --dtype fp8):
 * - delayed: per-tensor scales from an amax history (Transformer Engine's
 *   default DelayedScaling);
 * - current: per-tensor scales from the tensor itself (TE
 *   Float8CurrentScaling): one more read of each cast tensor for its amax,
 *   the amax all-reduced over the TP group;
 * - blockwise: 1x128 tiles of activations and gradients, 128x128 blocks of
 *   weights (DeepSeek-V3 §3.3.2, TE Float8BlockScaling): scales computed in
 *   the cast kernel, a per-tile scale (fp32) per 128 elements. */
#define PLAN_FP8_LIST(X)        \
    X(DELAYED, "delayed")       \
    X(CURRENT, "current")       \
    X(BLOCKWISE, "blockwise")
typedef enum {
#define X(e, n) PLAN_FP8_##e,
    PLAN_FP8_LIST(X)
#undef X
    PLAN_FP8_COUNT
} PlanFp8Recipe;

/* Modules recomputed in the backward instead of stored (Megatron-Core
 * --recompute-modules, under selective recompute), as bits:
 * X(NAME, "name", bit). core_attn: the attention scores (selective's
 * default); layernorm: the norms' outputs (the next GEMM's input); moe_act:
 * the experts' activation function output; mla_up_proj: MLA's query and
 * key/value up-projections (the latents are kept). */
#define PLAN_RC_MOD_LIST(X)              \
    X(CORE_ATTN, "core_attn", 1u)        \
    X(LAYERNORM, "layernorm", 2u)        \
    X(MOE_ACT, "moe_act", 4u)            \
    X(MLA_UP_PROJ, "mla_up_proj", 8u)
enum {
#define X(e, n, b) PLAN_RC_##e = b,
    PLAN_RC_MOD_LIST(X)
#undef X
};

/* Process-group kinds: X(NAME, "name", what it is). */
#define PLAN_GROUP_LIST(X)                                              \
    X(TP, "tp", "tensor parallel")                                      \
    X(CP, "cp", "context parallel")                                     \
    X(DP, "dp", "data parallel (dense params, without CP)")             \
    X(PP, "pp", "pipeline stages (send/recv neighbours)")               \
    X(DPCP, "dp_cp", "data x context parallel: dense gradient reduce")  \
    X(EP, "ep", "expert parallel (all-to-all)")                         \
    X(ETP, "etp", "expert tensor parallel")                             \
    X(EDP, "edp", "expert data parallel: expert gradient reduce")       \
    X(EMBED, "embed", "first and last pipeline stage: tied embedding")  \
    X(SHARD, "dp_shard", "HSDP shard group: dp_shard consecutive DP ranks x CP") \
    X(REPLICATE, "dp_replicate", "HSDP replicas: one rank per shard group")
typedef enum {
#define X(e, n, d) PLAN_GROUP_##e,
    PLAN_GROUP_LIST(X)
#undef X
    PLAN_GROUP_COUNT
} PlanGroup;

typedef struct ParallelPlan {
    /* ---- parallel degrees (1 = off) ---- */
    int64_t gpus;           /* world size, e.g. 64; 0 = tp*pp*cp*dp */
    int64_t tp;             /* tensor parallel, e.g. 8 */
    int64_t pp;             /* pipeline stages, e.g. 8 */
    int64_t vpp;            /* virtual stages (model chunks) per pipeline rank, e.g. 3; 1 = off */
    int64_t vpp_group;      /* interleaved: micro-batches a rank runs through one model chunk before
                               the next (Megatron-Core microbatch_group_size_per_vp_stage, in
                               [pp, micro-batches]); 0 = the framework's (plan_vpp_group): pp,
                               torchtitan's PyTorch rounds */
    int64_t dp;             /* data parallel, e.g. 16; 0 = gpus/(tp*pp*cp) */
    int64_t cp;             /* context parallel (sequence split for attention), e.g. 2 */
    int64_t ep;             /* expert parallel, e.g. 8 (carved from dp*cp*tp/etp) */
    int64_t etp;            /* expert tensor parallel, e.g. 1; 0 = tp */
    bool sp;                /* sequence parallel (needs tp > 1); default: tp > 1 */
    bool sp_set;            /* sp given explicitly (else plan_resolve sets sp = tp > 1) */
    /* ---- optimizer state sharding ---- */
    int zero;               /* DeepSpeed ZeRO stage 0..3 (1: optimizer, 2: +grads, 3: +params) */
    bool dist_opt;          /* Megatron distributed optimizer (like ZeRO-1 over dp*cp) */
    int64_t dp_shard;       /* HSDP (--zero 3 only): parameters, gradients and optimizer state
                               sharded over dp_shard consecutive DP ranks x CP (the shard group),
                               replicated over dp/dp_shard such groups, e.g. 8; 0 = all of DP
                               (plain FSDP) */
    PlanOptimizer optimizer;/* adam | shampoo */
    int64_t shampoo_blocks; /* K blocks per layer weight matrix, e.g. 2 (Shampoo only) */
    /* ---- activations ---- */
    PlanRecompute recompute;/* none | selective | full */
    int64_t recompute_layers;/* full recompute: layers per chunk recomputed, 0 = all */
    bool flash_attn;        /* FlashAttention: no S^2 scores stored; default true */
    bool tp_overlap;        /* overlap TP collectives with GEMMs (Megatron --tp-comm-overlap) */
    uint32_t recompute_modules; /* selective recompute: PLAN_RC_* bits; 0 = core_attn only */
    /* ---- MoE runtime ---- */
    PlanMoeDispatch moe_dispatch; /* alltoall (default) | deepep */
    int64_t moe_node_limit; /* each token routed to experts on at most this many nodes
                               (DeepSeek-V3: 4); 0 = no limit */
    double moe_imbalance;   /* load of the busiest expert over the mean, >= 1 (dropless); the
                               EP rank holding it sets the pace; 1 = balanced */
    double moe_capacity;    /* expert capacity factor: tokens beyond capacity x the mean are
                               dropped; 0 = dropless */
    bool moe_pad;           /* every expert's input padded to its capacity (needs moe_capacity) */
    /* ---- precision details ---- */
    PlanFp8Recipe fp8_recipe; /* under fp8: delayed (default) | current | blockwise */
    TsDtype adam_moments;   /* Adam's two moments: fp32 (default) or bf16 (DeepSeek-V3) */
    /* ---- batch geometry ---- */
    int64_t micro_batch;    /* B, sequences per micro-batch per DP rank, e.g. 1 */
    int64_t global_batch;   /* sequences per optimizer step, e.g. 1536 */
    int64_t seq;            /* S, tokens per sequence, e.g. 2048 */
    TsDtype dtype;          /* compute/weight dtype, bf16 */
    PlanSchedule schedule;  /* 1f1b | interleaved | gpipe | zb-h1 | dualpipe | dualpipev; vpp > 1
                               needs interleaved or dualpipev (which sets vpp 2) */
    PlanFramework framework;/* megatron (default) | torchtitan | deepspeed | hf */
    PlanPrecision precision;/* mixed (default) | amp | pure */
    /* ---- uneven pipeline stages ---- */
    const int64_t *stage_layers; /* borrowed: layers per chunk (pp*vpp entries, chunk
                                    c = vstage*pp + pp_rank); NULL = even split */
    int32_t n_stage_layers;      /* entries in stage_layers, 0 = even split */
    bool uneven;                 /* no stage_layers and pp*vpp does not divide the layers:
                                    chunks get ceil(L/(pp*vpp)) layers, one fewer on the
                                    d = ceil*pp*vpp - L chunks taken in the order last,
                                    first, second to last, second, ... (the chunks that
                                    also hold the LM head and the embedding first, as
                                    Megatron's uneven pipeline does; with L = pp*vpp - 1
                                    or - 2 they hold no layer: the output and loss, the
                                    embedding alone); false: refuse */
    /* ---- derived by plan_resolve ---- */
    int64_t grad_accum;     /* micro-batches per DP rank per step = global/(micro*dp), e.g. 64 */
    int64_t n_chunks;       /* pp*vpp */
} ParallelPlan;

/* Defaults: all degrees 1 (dp, gpus 0 = derive, etp 0 = tp), sp auto, zero 0,
 * adam, recompute none, flash on, micro 1, global 0 (plan_resolve takes
 * plan_default_global_batch), seq 0
 * (plan_resolve takes plan_default_seq(m)), bf16, 1f1b
 * (interleaved when vpp > 1 and schedule not set). */
void plan_init(ParallelPlan *p);

/* Derive dp/gpus/etp/sp/global_batch/grad_accum/n_chunks, then validate all
 * rules against the model. Returns TS_OK or TS_ERR_PLAN with err->msg like
 * "--tp 3 does not divide the 16 attention heads" and a hint. m may be NULL
 * (then the model-dependent rules are skipped). Cheap: no allocation. */
TsStatus plan_resolve(const ModelSpec *m, ParallelPlan *p, TsError *err);

/* ---- the default sequence length ----
 * One rule for every command that takes --seq (simulate, memory, params,
 * workload, sweep through plan_resolve or directly; model and profile
 * through graph_build): min(max_positions, PLAN_DEFAULT_SEQ), and
 * PLAN_DEFAULT_SEQ when the model gives no max_positions. gpt2 1024,
 * gpt3-175b 2048, llama3-8b 4096. simulate's built-in example (gpt3-175b,
 * tp8 pp8, no plan options) sets seq 2048 itself: the example's length. */
#define PLAN_DEFAULT_SEQ 4096
int64_t plan_default_seq(const ModelSpec *m);

/* ---- the default global batch ----
 * One rule for every command (simulate, memory, params, workload and sweep):
 * PLAN_DEFAULT_GLOBAL_BATCH sequences per optimizer step, rounded up to a
 * whole number of micro-batches per DP rank (micro_dp = micro-batch x DP):
 * 1024 for micro_dp 1..1024 that divides it, 1026 for micro_dp 3, micro_dp
 * itself above 1024. sweep keeps 1024 for every plan and enumerates only the
 * plans whose micro-batch x DP divides it, so its winner pasted into simulate
 * trains the same batch. */
#define PLAN_DEFAULT_GLOBAL_BATCH 1024
int64_t plan_default_global_batch(int64_t micro_dp);

/* The sequence-length rule alone (plan_resolve applies it too): a model with
 * learned position embeddings takes at most max_positions tokens. TS_OK or
 * TS_ERR_PLAN ("--seq 4096 exceeds the model's 2048 learned positions"). */
TsStatus plan_check_seq(const ModelSpec *m, int64_t seq, TsError *err);
/* The MoE, FP8 and recompute-module knobs against the model and the dtype
 * (part of plan_validate; sweep checks its fixed knobs with it up front). */
TsStatus plan_check_knobs(const ModelSpec *m, const ParallelPlan *p, TsError *err);
/* Validate an already derived plan (what plan_resolve does after deriving). */
TsStatus plan_validate(const ModelSpec *m, const ParallelPlan *p, TsError *err);

const char *plan_recompute_name(PlanRecompute r);
bool plan_recompute_parse(const char *s, PlanRecompute *out);
const char *plan_sched_name(PlanSchedule s);
bool plan_sched_parse(const char *s, PlanSchedule *out);
const char *plan_framework_name(PlanFramework f);
bool plan_framework_parse(const char *s, PlanFramework *out);
const char *plan_precision_name(PlanPrecision p);
bool plan_precision_parse(const char *s, PlanPrecision *out);
/* The framework's code path: eager PyTorch model code (torchtitan, hf);
 * DeepSpeed's pipeline engine (deepspeed); HuggingFace's own modules (hf). */
/* Schedules whose per-rank order plan_order writes (W tasks, F&B pairs), and
 * those of them that run F&B pairs (sim_pair_s). */
static inline bool plan_sched_ordered(PlanSchedule s)
{
    return s == PLAN_SCHED_ZBH1 || s == PLAN_SCHED_DUALPIPE || s == PLAN_SCHED_DUALPIPEV || s == PLAN_SCHED_1F1B_A2A;
}
static inline bool plan_sched_pairs(PlanSchedule s)
{
    return s == PLAN_SCHED_DUALPIPE || s == PLAN_SCHED_DUALPIPEV || s == PLAN_SCHED_1F1B_A2A;
}
/* Gradients reduce-scattered per unit (a layer; the embedding and head) after
 * every micro-batch's backward: ZeRO-3 / FSDP, and ZeRO-2 with more than one
 * micro-batch a step (gradients kept sharded between micro-batches must be
 * reduced as they are made: DeepSpeed stage 2, deepspeedai/DeepSpeed#2252;
 * FSDP SHARD_GRAD_OP; under a pipeline, Llama 3 405B's FSDP, arXiv
 * 2407.21783 §3.3.2). With one micro-batch ZeRO-2 reduces once, by the
 * gradient buckets, as ZeRO-1. Needs a resolved plan (grad_accum). */
static inline bool plan_rs_per_microbatch(const ParallelPlan *p)
{
    return p->zero >= 3 || (p->zero == 2 && p->grad_accum > 1);
}
/* PyTorch's interleaved schedules (torch.distributed.pipelining
 * ScheduleInterleaved1F1B, what torchtitan runs) split m micro-batches into
 * max(1, m / pp) rounds of equal groups: m / rounds micro-batches a group,
 * fewer than pp when m is; 0 when the rounds do not divide m (PyTorch
 * refuses it). */
static inline int64_t plan_pytorch_vpp_group(int64_t pp, int64_t m)
{
    int64_t r = pp > 0 && m / pp > 1 ? m / pp : 1;
    return m > 0 && m % r == 0 ? m / r : 0;
}
/* Megatron's interleaved table runs the plan: the interleaved schedule, or
 * 1F1B with EP overlap over vpp > 1 chunks a rank (Megatron-Core's combined
 * 1F1B inside its interleaved schedule). */
static inline bool plan_interleaved(const ParallelPlan *p)
{
    return p->schedule == PLAN_SCHED_INTERLEAVED || (p->schedule == PLAN_SCHED_1F1B_A2A && p->vpp > 1);
}
/* The interleaved schedule's micro-batch group: vpp_group, torchtitan's
 * PyTorch group (needs a resolved plan: grad_accum), or pp. */
static inline int64_t plan_vpp_group(const ParallelPlan *p)
{
    if (p->vpp_group > 0) return p->vpp_group;
    int64_t g = p->framework == PLAN_FRAMEWORK_TORCHTITAN ? plan_pytorch_vpp_group(p->pp, p->grad_accum) : 0;
    return g > 0 ? g : p->pp;
}
/* The group as the outputs show it: an interleaved plan's when set or
 * other than pp; 0 otherwise. */
static inline int64_t plan_vpp_group_shown(const ParallelPlan *p)
{
    if (!plan_interleaved(p)) return 0;
    int64_t g = plan_vpp_group(p);
    return p->vpp_group > 0 || g != p->pp ? g : 0;
}
/* The smallest group Megatron-Core runs m micro-batches per pipeline in on
 * pp stages when m is no multiple of pp (in [pp, m], a last group of 0 or at
 * least pp: the fewest in flight); 0 when pp's own groups do, or m < pp. */
int64_t plan_least_vpp_group(int64_t pp, int64_t m);
bool plan_eager(const ParallelPlan *p);
bool plan_ds_pipe(const ParallelPlan *p);
bool plan_hf(const ParallelPlan *p);
const char *plan_moe_dispatch_name(PlanMoeDispatch d);
bool plan_moe_dispatch_parse(const char *s, PlanMoeDispatch *out);
const char *plan_fp8_name(PlanFp8Recipe r);
bool plan_fp8_parse(const char *s, PlanFp8Recipe *out);
/* Parse a comma-separated --recompute-modules list into PLAN_RC_* bits;
 * false (with *bad the offending name) for an unknown module. */
bool plan_rc_modules_parse(const char *s, uint32_t *out, const char **bad, size_t *bad_len);
/* mods as a comma-separated list ("layernorm,mla_up_proj"), "" for none. */
void plan_rc_modules_format(uint32_t mods, char *out, size_t cap);
/* The modules selective recompute recomputes: recompute_modules, or
 * core_attn alone when none is given; 0 unless recompute is selective. */
uint32_t plan_rc_modules(const ParallelPlan *p);
const char *plan_optim_name(PlanOptimizer o);
bool plan_optim_parse(const char *s, PlanOptimizer *out);
const char *plan_group_name(PlanGroup g);

/* Layers in chunk c (0 <= c < pp*vpp) and the first layer of the chunk. */
int64_t plan_chunk_layers(const ParallelPlan *p, int64_t n_layers, int64_t chunk);
int64_t plan_chunk_first_layer(const ParallelPlan *p, int64_t n_layers, int64_t chunk);
/* Transformer layers chunk c runs: plan_chunk_layers of the model's layers,
 * plus the multi-token-prediction modules' layers (ModelSpec.mtp_layers) on
 * the last chunk; they are layers m->layers.. in model_layer_is_moe's
 * numbering. */
int64_t plan_model_chunk_layers(const ParallelPlan *p, const ModelSpec *m, int64_t chunk);
/* Pipeline rank of a layer (for interleaved, the rank holding its chunk). */
int64_t plan_layer_chunk(const ParallelPlan *p, int64_t n_layers, int64_t layer);

/* ---- which model chunks a pipeline rank holds ----
 * A rank holds plan_rank_chunks(p) chunks: vpp (interleaved: chunks s, s+pp,
 * ...; dualpipev: vpp 2, chunks s and 2*pp-1-s, the V), 2 for dualpipe (model
 * chunk s of the copy run from rank 0 and chunk pp-1-s of the copy run from
 * rank pp-1: every model chunk is held twice), else 1. plan_rank_chunk is the
 * model chunk (0 .. pp*vpp-1, the order of plan_chunk_layers) of rank s's
 * k-th chunk, k < plan_rank_chunks(p). Example: pp 4, dualpipev: rank 1
 * holds chunks 1 and 6; dualpipe: rank 1 holds chunks 1 and 2. */
int64_t plan_rank_chunks(const ParallelPlan *p);
int64_t plan_rank_chunk(const ParallelPlan *p, int64_t s, int64_t k);
/* Micro-batches through each of a rank's chunks: grad_accum, or half of it
 * under dualpipe (each copy of the pipeline takes half). */
int64_t plan_chunk_micro_batches(const ParallelPlan *p);

/* ---- the task order of the zero-bubble, DualPipe and EP-overlap schedules ----
 * One pipeline rank's tasks, in the order it runs them, as int32 entries
 * PLAN_TASK(mb, k, kind): mb the micro-batch of the rank's chunk k (both
 * counted from 0; dualpipe: within the copy's half of the micro-batches) and
 * kind one of PLAN_TASK_F (forward), _B (whole backward), _I (the input-
 * gradient part of a backward, its weight-gradient W runs later), _W, and
 * _PF: the forward of an overlapped forward-and-backward pair, whose
 * backward (a _B entry) is the next entry. mb < 2^21, k < 128.
 *   zb-h1 (k = 0): Qi et al. 2024 section 3.1, as the authors' DeepSpeed port
 *     orders it (sail-sg/zero-bubble-pipeline-parallelism, ZeroBubbleH1Pipeline
 *     with exact semantics): 1F1B's pp-s-1 warm-up forwards, then s (F, I)
 *     pairs whose W wait, then (F, I, W) with W the oldest waiting one, then
 *     (I, W), then the remaining W;
 *   dualpipe / dualpipev: the eight steps of DualPipe.step / DualPipeV.step
 *     (github deepseek-ai/DualPipe): n F0; F0 F1 pairs; I1 W1 F1 (zero bubble);
 *     the main step (F0&B1, F1&B0 overlapped pairs; the middle rank runs its
 *     first F0 and B1 apart); B1 F1&B0; B1 B0 with the second half input-
 *     gradient only; W I0; the remaining W (first in, first out). Phase 0 is
 *     the chunk whose micro-batches reach the rank first: dualpipev chunk 0;
 *     dualpipe the copy run from rank 0 on the first half of the ranks, the
 *     other copy on the second half (k = 0: the copy entering at rank 0);
 *   1f1b-a2a: Megatron-Core's 1F1B (v = 1) or interleaved schedule (v > 1,
 *     micro-batch groups of `group`) with its EP communication overlap: the
 *     table of plan_order_megatron with one warm-up forward more
 *     (plan_order_warmup), each steady-state forward a _PF with the backward
 *     after it.
 * v is the rank's model chunks and group the interleaved micro-batch group
 * (0: pp); both matter to 1f1b-a2a alone. out holds plan_order_cap entries;
 * fifo (the W queue) chunks x micro-batches. Returns the number of entries,
 * 0 for the other schedules. */
#define PLAN_TASK_MAX_CHUNKS 128 /* k < 128: a rank's model chunks (--vpp) at most */
#define PLAN_TASK(mb, k, kind) ((int32_t)(((int32_t)(mb) << 10) | ((int32_t)(k) << 3) | (int32_t)(kind)))
#define PLAN_TASK_MB(t) ((t) >> 10)
#define PLAN_TASK_CHUNK(t) (((t) >> 3) & 127)
#define PLAN_TASK_KIND(t) ((t) & 7)
enum { PLAN_TASK_F = 0, PLAN_TASK_B = 1, PLAN_TASK_I = 2, PLAN_TASK_W = 3, PLAN_TASK_PF = 4 };
int64_t plan_order_cap(PlanSchedule sched, int64_t micro_batches, int64_t v);
int64_t plan_order(PlanSchedule sched, int64_t pp, int64_t v, int64_t micro_batches, int64_t group, int64_t s,
                   int32_t *out, int32_t *fifo);
/* Megatron's own orders for rank s of pp, v model chunks a rank, m
 * micro-batches, in PLAN_TASK entries (F and B; k the rank's chunk):
 *   gpipe: every forward (chunk by chunk), then every backward;
 *   1f1b (v = 1) and interleaved (v > 1): Megatron-Core's
 *     get_pp_rank_microbatches and get_schedule_table: a warm-up of
 *     pp - s - 1 forwards (interleaved: 2(pp - s - 1) + (v - 1)N, all of them
 *     where that reaches m*v), then forward-backward pairs, then the
 *     cool-down backwards; interleaved runs groups of N = `group` micro-batches
 *     (0: pp; the last group the remainder) through chunk 0, 1, ... in turn,
 *     backwards through the chunks in reverse.
 * out holds 2*m*v entries. Returns the count. The schedule engine and the
 * workload builder both run it. */
int64_t plan_order_megatron(PlanSchedule sched, int64_t pp, int64_t v, int64_t m, int64_t group, int64_t s,
                            int32_t *out);
/* Its warm-up forwards on rank s (1f1b, interleaved; capped at m*v). */
int64_t plan_megatron_warmup(int64_t pp, int64_t v, int64_t m, int64_t group, int64_t s);
/* The same for schedule `sched` (1f1b-a2a: one more, capped at m*v). */
int64_t plan_order_warmup(PlanSchedule sched, int64_t pp, int64_t v, int64_t m, int64_t group, int64_t s);
/* The overlapped pairs of rank s's order without writing it: fn(ctx, kf,
 * kb, n) for n _PF entries that run a forward of the rank's chunk kf with a
 * backward of its chunk kb (dualpipe, dualpipev: twice, O(1); 1f1b-a2a:
 * once a steady step, O(m v); the other schedules: never). */
typedef void (*PlanPairFn)(void *ctx, int32_t kf, int32_t kb, int64_t n);
void plan_order_pairs(PlanSchedule sched, int64_t pp, int64_t v, int64_t micro_batches, int64_t group, int64_t s,
                      PlanPairFn fn, void *ctx);

/* DeepSpeed's PipelineEngine (deepspeed/runtime/pipe/schedule.py,
 * TrainSchedule) on stage s of pp: 2 (m + pp - 1) steps; step k runs a
 * forward (*fwd) when k and s have the same parity, else a backward, on
 * micro-batch *mb (_step_to_micro_batch; out of [0, m): an idle step). A
 * forward step first sends the previous step's input gradient back and
 * receives its input, a backward step receives its output gradient and sends
 * the previous step's output on, all blocking: neighbours are in opposite
 * phases, so every send meets the receive its peer posts in the same step.
 * The workload builder and the schedule engine walk it. */
void plan_ds_step(int64_t k, int64_t s, int64_t pp, bool *fwd, int64_t *mb);

/* ---- rank layout ---- */
typedef struct PlanCoord {
    int64_t tp, cp, dp, pp; /* dense layout coordinates */
    int64_t etp, ep, edp;   /* expert layout coordinates (same pp) */
} PlanCoord;

void plan_rank_coord(const ParallelPlan *p, int64_t rank, PlanCoord *out);
/* Inverse of the dense part (tp, cp, dp, pp) of plan_rank_coord. */
int64_t plan_rank_of(const ParallelPlan *p, int64_t tp, int64_t cp, int64_t dp, int64_t pp);

typedef struct PlanGroupInfo {
    int64_t size;     /* members, e.g. 8 */
    int64_t base;     /* lowest member rank of the group holding `rank` */
    int64_t stride;   /* members are base + i*stride, i < size */
    int64_t index;    /* position of `rank` in the group */
    int64_t nodes;    /* distinct nodes spanned (given gpus_per_node) */
    int64_t per_node; /* most members of the group on one node */
} PlanGroupInfo;

/* The group of kind `kind` containing `rank`, with its node footprint for
 * gpus_per_node GPUs per node (<= 0: one node holds everything). O(1) for
 * power-of-two layouts; O(size) only when the stride and gpus_per_node do
 * not divide each other. The EMBED group has size 1 when pp == 1, else 2
 * (first and last stage, same tp/cp/dp). */
void plan_group(const ParallelPlan *p, PlanGroup kind, int64_t rank, int64_t gpus_per_node,
                PlanGroupInfo *out);
/* The group ZeRO-3 shards dense parameters over: the HSDP shard group
 * (PLAN_GROUP_SHARD) under dp_shard, else DP x CP (PLAN_GROUP_DPCP); and the
 * number of HSDP replicas dp/dp_shard (1 without dp_shard). */
PlanGroup plan_fsdp_group(const ParallelPlan *p);
int64_t plan_dp_replicas(const ParallelPlan *p);
/* Write up to cap member ranks of that group into out (ascending); returns
 * the group size. */
int64_t plan_group_members(const ParallelPlan *p, PlanGroup kind, int64_t rank, int64_t *out,
                           int64_t cap);

/* One-line summary "tp8 pp8 vpp3 dp1 cp1 ep1 sp zero0 ..." into out. */
/* The layers of every chunk, separated by sep (as --stage-layers takes them),
 * when they are not the even split (--stage-layers, or the uneven rule);
 * false and nothing written for an even split. */
bool plan_split_format(const ParallelPlan *p, int64_t n_layers, const char *sep, TsBuf *out);
void plan_describe(const ParallelPlan *p, TsBuf *out);

#endif
