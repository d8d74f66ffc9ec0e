/*
 * trainsim/partition.h — a plan applied to a model: pipeline stages,
 * per-rank ops with the collectives they imply, memory per GPU, and the
 * per-rank parameter table (with Shampoo preconditioner blocks).
 *
 * Two paths, both cheap:
 *   part_memory(model, plan, opts)   memory per stage from per-layer counts
 *       of the ModelSpec alone (no graph, no allocation): the plan search
 *       calls it millions of times (< 1 us).
 *   part_build(graph, plan)          the full Partition, in one arena:
 *       - chunks (pp*vpp; layer ranges, embedding on chunk 0, final norm +
 *         LM head + loss on the last chunk, both when pp = 1);
 *       - per-rank op TEMPLATES, one per distinct segment kind (dense layer,
 *         MoE layer, embedding, head), copied from the graph's first layer of
 *         that kind with per-rank dims under TP/SP/CP/EP and FLOPs/bytes
 *         rescaled — never one list per layer or per rank;
 *       - the collectives each template implies (TP all-reduce or SP
 *         all-gather/reduce-scatter, CP K/V ring exchange, EP all-to-all),
 *         and per pipeline stage the PP send/recv and DP gradient reduce;
 *       - memory per pipeline stage (part_memory of the same plan).
 *
 * Units: bytes (double), FLOPs (double), parameter counts in elements
 * (double: fractional only in the Megatron formula). Collective sizes are
 * the whole buffer in bytes (nccl-tests convention, see TsColl).
 * Activation terms follow Korthikanti et al. 2022 (Table 2), generalized to
 * GQA/MLA, gated MLPs, MoE, FlashAttention and CP; see docs/memory.md.
 *
 * Example (memory of GPT-3 175B, Megatron's formula):
 *     PartMemOptions mo; part_mem_options_init(&mo); mo.model = PART_MEMMODEL_MEGATRON;
 *     PartMemory peak; part_memory(&gpt3, &plan, &mo, NULL, &peak, &err);
 *     // peak.weights+gradients+optimizer = 18 * 2796626304 B,
 *     // peak.activations_bytes = 13294916266.67 B (12.38 GiB)
 */
#ifndef TRAINSIM_PARTITION_H
#define TRAINSIM_PARTITION_H

#include "trainsim/graph.h"
#include "trainsim/plan.h"

/* ---- memory ------------------------------------------------------------------ */
/* Memory models: X(enum suffix, name). trainsim: our own (docs/memory.md);
 * megatron: Megatron-LM's theoretical_memory_usage.py, exactly. */
#define PART_MEMMODEL_LIST(X) X(TRAINSIM, "trainsim") X(MEGATRON, "megatron")
typedef enum {
#define X(e, n) PART_MEMMODEL_##e,
    PART_MEMMODEL_LIST(X)
#undef X
    PART_MEMMODEL_COUNT
} PartMemModel;

typedef struct PartMemOptions {
    PartMemModel model;        /* trainsim | megatron */
    double capacity_bytes;     /* GPU HBM, e.g. 85899345920 (80 GiB); 0 = unknown (fits) */
    double cuda_context_bytes; /* CUDA context + cuBLAS/cuDNN handles, 0.75 GiB default */
    double nccl_comm_bytes;    /* NCCL buffers per communicator of size > 1, 64 MiB default */
    double frag_fraction;      /* allocator fragmentation on dynamic memory, 0.05 */
    double grad_bytes;         /* bytes per gradient element without ZeRO (Megatron grad
                                  buffer): 4 (fp32, default, 0 = this), 2 when gradients
                                  are accumulated and reduced in bf16 */
    bool grads_freed;          /* --framework hf: the loop frees the gradients after each step
                                  (zero_grad(set_to_none=True), HF Trainer); false: they stay
                                  allocated between steps, false */
    bool selective_ops;        /* selective recompute is op-level SAC (torchtitan's policy):
                                  a layer keeps its input, every second matmul output and
                                  the attention output; dense non-MLA layers, false */
    int ce_fusion;             /* the loss's kernels (PART_CE_*): what they keep of the logits
                                  (fp32, or the 16-bit logits themselves under TE's) and the
                                  gradient they make beside them */
} PartMemOptions;
void part_mem_options_init(PartMemOptions *o);
const char *part_memmodel_name(PartMemModel m);
bool part_memmodel_parse(const char *s, PartMemModel *out);

/* Memory of one GPU (one pipeline rank; all TP/CP/DP ranks of a stage are
 * alike). The five category fields add up to total_bytes. */
typedef struct PartMemory {
    int32_t stage;             /* pipeline rank */
    double weights_bytes;      /* parameters at their storage dtype (after ZeRO-3 sharding) */
    double gradients_bytes;    /* gradient buffers (fp32 main grads unless ZeRO-2/3) */
    double optimizer_bytes;    /* Adam: fp32 master + 2 moments; Shampoo: + factors */
    double activations_bytes;  /* stored activations of in-flight micro-batches + logits/loss */
    double other_bytes;        /* workspace + CUDA context + NCCL + fragmentation */
    double total_bytes;
    /* details */
    double params;             /* parameter elements held by this GPU (before ZeRO-3) */
    double embed_params;       /* of which word/position embeddings and LM head */
    double expert_params;      /* of which routed-expert weights (after EP/ETP split) */
    double act_layers_bytes;   /* activations of transformer layers */
    double act_embed_bytes;    /* embedding-stage activations */
    double act_head_bytes;     /* final norm, LM head input, logits and loss */
    double inflight;           /* micro-batches (chunk units / vpp) in flight on this stage */
    double workspace_bytes;    /* transient buffers (activation gradients, logits grads) */
    double runtime_bytes;      /* CUDA context + NCCL buffers (+ DeepEP's under --moe-dispatcher deepep) */
    double frag_bytes;         /* fragmentation allowance */
} PartMemory;

/* Memory of every pipeline stage (stages: NULL or p->pp entries) and of the
 * most loaded one (*peak). Needs a resolved plan (plan_resolve). No
 * allocation; TS_ERR_PLAN only for plans plan_validate would reject. */
TsStatus part_memory(const ModelSpec *m, const ParallelPlan *p, const PartMemOptions *o,
                     PartMemory *stages, PartMemory *peak, TsError *err);
/* For a plan whose most loaded stage exceeds o->capacity_bytes: up to max
 * ways to make it fit on the same GPUs and layout, one knob each (the
 * optimizer state sharded, selective recompute, half the micro-batch, full
 * recompute, ZeRO-3, cheapest in step time first), else two together; each
 * a valid plan (plan_validate). Returns how many (0: none). */
typedef struct PartFitAlt {
    char flags[192];    /* e.g. "--dist-opt --recompute full" */
    double total_bytes; /* the most loaded stage's memory with them */
} PartFitAlt;
int part_fit_alternatives(const ModelSpec *m, const ParallelPlan *p, const PartMemOptions *o, PartFitAlt *out,
                          int max);
/* A full-recompute plan p (resolved): the fewest layers per chunk it can
 * recompute and still fit in cap bytes (Megatron's --recompute-method block
 * --recompute-num-layers N), set in p->recompute_layers with its memory in
 * *bytes; 0 (p->recompute_layers 0: every layer) when no fewer than a
 * chunk's layers fit. What the fit hint and sweep's full-recompute plans
 * recompute. */
int64_t part_fewest_recompute_layers(const ModelSpec *m, ParallelPlan *p, const PartMemOptions *o, double cap,
                                     double *bytes);
/* "fits with --dist-opt (61.3 GiB) or --recompute selective (72.0 GiB);
 * `trainsim sweep` searches every plan", or, when n is 0, what plan p then
 * needs (more GPUs: model parallelism, or under --framework hf, ZeRO-3). */
void part_fit_hint(const ParallelPlan *p, const PartFitAlt *alt, int n, char *buf, size_t cap);

/* Model FLOPs (the MFU convention): forward FLOPs per token of one layer
 * (dense or MoE) at sequence S, from the model alone, never the plan: 2 x
 * the matmul weights a token meets at TP 1 (top-k routed experts, router,
 * shared experts; MLA's projections) plus 2H, and the attention core, Q.K at
 * the query-key head dim and P.V at the value head dim over S keys, or S/2
 * when `causal` (the causal-halving convention). Megatron's
 * num_floating_point_operations and torchtitan's 6N + 12 L H Q T count the
 * full square (causal false); training is 3x the forward. */
double part_layer_model_flops(const ModelSpec *m, int64_t S, bool moe, bool causal);
/* The same for the whole model per token: every layer and the LM head
 * (2 H V, V padded as Megatron pads it at TP 1). */
double part_model_flops_token(const ModelSpec *m, int64_t S, bool causal);

/* Bytes per parameter of the plan's precision recipe (ParallelPlan.precision):
 * mixed 16-bit weights, fp32 main gradients (16-bit under ZeRO; o->grad_bytes
 * when set), fp32 master + Adam moments 12 B; amp 4 + 4 + 8; pure 2 + 2 + 4
 * (the training dtype's width; fp32 training: 4 + 4 + 8); mixed with bf16
 * Adam moments (--adam-moments bf16): fp32 master + 2 + 2 = 8 B; o may be
 * NULL. */
/* Eager PyTorch (--framework hf) with the gradients freed after each step:
 * at the end of the backward, the tied word embedding's backward holds its
 * dense gradient in fp32, 4 B per vocab x hidden element, on top of every
 * gradient, while it is added into the .grad the LM head made. Allocator
 * traces of one step (torch.cuda.memory._record_memory_history; H200,
 * PyTorch 2.11, transformers 5.17; GPT-2 pure and amp, BERT-base amp, Llama
 * 3.2 1B pure; bench/data/gpu/peak_2026-11-26_h200.jsonl): beyond what
 * was resident before the step (weights, Adam states, workspaces) and the
 * gradients, the peak holds 151-156 MiB (GPT-2), 96-99 (BERT-base) and
 * 1005 (Llama 3.2 1B), where vocab x hidden x 4 B is 147, 89 and 1002 MiB. */
#define PART_TIED_GRAD_BYTES 4.0
/* Of the CUDA context's estimate (PartMemOptions.cuda_context_bytes), what
 * PyTorch allocates through its caching allocator, so that
 * torch.cuda.max_memory_allocated counts it: the cuBLAS / cuBLASLt
 * workspaces of the threads that run GEMMs (the forward's, autograd's).
 * Resident before a step beyond parameters and Adam states: 68-69 MiB (GPT-2
 * amp, BERT-base amp, Llama 3.2 1B pure), 89 (GPT-2 pure), same traces. */
#define PART_ALLOCATOR_WORKSPACE_BYTES (68.0 * 1048576.0)

typedef struct PartParamBytes {
    double weight, grad, optim;
} PartParamBytes;
void part_param_bytes(const ParallelPlan *p, const PartMemOptions *o, PartParamBytes *out);
/* The pieces of Megatron's formula, for tests and docs (bytes). */
double part_megatron_weight_optimizer_bytes(const ModelSpec *m, const ParallelPlan *p);
double part_megatron_activation_bytes(const ModelSpec *m, const ParallelPlan *p);

/* ---- layer templates ------------------------------------------------------------ */
/* The per-rank work of one micro-batch, block by block: the attention and the
 * MLP halves of a dense layer, the attention and the MoE halves of an MoE
 * layer, the embedding, the final norm + LM head + loss. For each block its
 * kernels (shapes, FLOPs, bytes), its collectives (bytes per occurrence),
 * its parameters by sharding and its gradient tensors in backward order.
 * part_template is the one place per-rank shapes are derived: the costing
 * (cost.h) turns its kernels into seconds for the simulator and the
 * workload writers alike. Pure and allocation-free. */
#define PART_BLOCK_LIST(X) X(ATTN, "attn") X(MLP, "mlp") X(MOE, "moe") X(EMBED, "embed") X(HEAD, "head")
typedef enum {
#define X(e, n) PART_BLOCK_##e,
    PART_BLOCK_LIST(X)
#undef X
    PART_BLOCK_COUNT
} PartBlock;
const char *part_block_name(PartBlock b);

typedef enum {
    PART_K_GEMM, /* batch products (m x k) @ (k x n) forward; dgrad (m x n) @ (n x k), wgrad (k x m) @ (m x n) */
    PART_K_ATTN, /* fused attention core: batch x heads, sq x sk, head dim d */
    PART_K_MEM   /* memory-bound: fwd_bytes forward, bwd_bytes by its gradient kernel (0: none) */
} PartKernelKind;
/* The sum of its block a kernel's time joins (overlap rules read them):
 * GEMMs (what TP overlap hides under), the attention core (what the CP ring
 * hides under; selective recompute runs it again), memory-bound kernels. */
typedef enum { PART_KP_GEMM, PART_KP_CORE, PART_KP_MEM } PartKernelPart;
enum {
    PART_KF_ACT = 1,      /* GEMM at the activation dtype (LM head, unfused core), not the layer dtype */
    PART_KF_SAC_ONLY = 2, /* not in the forward: a GEMM op-level SAC runs again in backward */
    PART_KF_FSDP = 4,     /* ZeRO-3 copy-out / copy-in of the gathered flat buffer */
    PART_KF_PERMUTE = 8,  /* MoE token permutation (counts as the routed experts' traffic) */
    PART_KF_WGRAD = 16,   /* MEM whose backward kernel computes a weight gradient (the embedding's
                             scatter-add): its time is weight-gradient, not input-gradient, work */
    PART_KF_NORM = 32,    /* eager: a norm module with its own weight (and LayerNorm's bias):
                             parameter tensors of the block (tpl_hf_accumulate) */
    PART_KF_INNER = 64,   /* eager: kernels another op dispatches from C++ (autocast's casts),
                             no Python of their own on the host */
    PART_KF_GROUPED = 128, /* GEMM: one grouped kernel (torch._grouped_mm) over batch groups whose
                              rows m differ by m_sd from group to group (hw_grouped_gemm_time_s) */
    PART_KF_ROW_OUT = 256, /* GEMM: the attention's row-parallel output projection, whose forward
                              output TP reduces (under --tp-overlap TE overlaps that reduce-scatter
                              with the GEMM: cost.h COST_UB_*) */
    PART_KF_ROW_OUT_MLP = 512, /* GEMM: the same, the dense MLP's fc2 */
    PART_KF_COL_IN = 1024,     /* GEMM: a column-parallel input projection (fused QKV, the dense MLP's
                                  fc1), whose input TP all-gathers with SP */
    PART_KF_FP32 = 2048,       /* GEMM in FP32 whatever the plan's dtype (eager code on fp32 operands
                                  that autocast leaves alone) */
    PART_KF_GENERIC = 4096,    /* MEM, eager: PyTorch's generic elementwise kernel (a row mask, a
                                  broadcast operand), bound by elements / eager_generic_gelem_per_ms
                                  where that is slower than its bytes (elems[]) */
    PART_KF_ROWNORM = 8192,    /* MEM, eager: PyTorch's fused LayerNorm kernel over elems[] rows
                                  forward / backward (hw_norm_time_s) */
    PART_KF_PYLOOP = 16384,    /* eager: ops a Python loop calls one by one, no module of their
                                  own (transformers' per-expert fallback): COST_HOST_LOOP_S */
    PART_KF_AFTER_SYNC = 32768, /* Megatron-Core MoE: dispatched after the forward's host sync on
                                   the token counts (cost_step) */
    PART_KF_STREAMS = 65536,    /* GEMM: one GEMM per batch entry, launched over COST_TE_STREAMS
                                   streams (Transformer Engine's GroupedLinear): the streams' GEMMs
                                   share the SMs' waves, not the whole batch's */
    PART_KF_SINK = 131072,      /* ATTN: the learned sink's backward alone (GPT-OSS): batch x heads (m) x
                                   query rows (n) at the GPU's attn_sink_bwd_row_s, no FLOPs */
    PART_KF_FWD_ONLY = 262144,  /* a kernel of the forward alone (its backward is another's) */
    PART_KF_BWD_ONLY = 524288,  /* a kernel of the backward alone (its forward is another's) */
    PART_KF_DUPS = 1048576,     /* MEM, eager: the backward is PyTorch's sort-based index_put_
                                   with accumulate into a few rows, elems[1] duplicates on the
                                   busiest one walked one after another (index_put_dup_s) */
    PART_KF_ODD_LDA = 2097152   /* GEMM: the forward's A operand is a slice whose rows are an odd
                                   number of elements apart, which cuBLAS runs on its 2-byte-aligned
                                   path (hw_gemm_odd_lda_time_s); the backward's GEMMs are aligned */
};
typedef struct PartKernel {
    const char *name;         /* "qkv", "core", "fc1", "experts.fc1", ... (static) */
    uint8_t kind, part;
    uint8_t rc;               /* the PLAN_RC_* module it belongs to (plan.h): selective recompute of
                                 that module runs its forward again in the backward; 0 none */
    int32_t count;            /* launches per micro-batch (SequentialMLP: one per local expert), >= 1 */
    double share;             /* its time's weight in the block's mean layer, 0 = 1 (sliding-window
                                 models: the full and the windowed layers' attention cores, each
                                 at its layers' share; flops[] already weighted) */
    int64_t batch, m, n, k;   /* GEMM; ATTN: batch = B, m = heads, n = sq, k = sk */
    int64_t d;                /* ATTN: q.k head dim */
    double m_sd;              /* GEMM with PART_KF_GROUPED: standard deviation of the rows per group */
    bool causal;              /* ATTN */
    double drop;              /* ATTN: dropout probability on its probabilities (its draws cost
                                 hw_attn_dropout_time_s), 0 none */
    uint32_t flags;           /* PART_KF_* (beside causal: no padding added) */
    double fwd_bytes, bwd_bytes; /* MEM, per launch */
    double flops[3];          /* fwd, input-grad, weight-grad FLOPs of all launches */
    /* eager code (--framework hf): what the host dispatches and what the
     * kernel keeps for the backward; 0 elsewhere */
    int16_t launches[2];      /* kernels the op runs forward / backward, all launches (--framework
                                 hf: the ATen calls the host dispatches) */
    int16_t host_calls[2];    /* calls the host dispatches beside its launches (Megatron-Core's
                                 MoE layer: Python-level calls that launch nothing) */
    double saved_bytes;       /* tensors autograd keeps for the backward (new ones only) */
    double elems[2];          /* PART_KF_GENERIC: elements its kernels process forward / backward;
                                 PART_KF_ROWNORM: rows; PART_KF_DUPS: [1] the busiest row's
                                 duplicates, summed over the op's index_put_ calls */
    const char *calib;        /* a fused memory-bound kernel the calibration file times by name
                                 ("layernorm", "rmsnorm", "gelu", "swiglu": its _fwd and _bwd
                                 tables; "add" both passes), NULL for none (static) */
} PartKernel;
/* A launch count as PartKernel.launches holds it (int16_t): at most 30000,
 * past any model's (30000 local experts' GEMMs). */
static inline int16_t part_launches(int64_t n)
{
    return (int16_t)(n < 0 ? 0 : n < 30000 ? n : 30000);
}

#define PART_MAX_KERNELS 24
typedef struct PartBlockT {
    PartKernel k[PART_MAX_KERNELS];
    int32_t n_k;
    double params;            /* per-rank parameter elements, routed experts included */
    double expert_params;     /* of which routed experts (reduced over the expert-DP group) */
    double grad_t[2];         /* dense tensors in backward order (DP buckets): attention: output
                                 projection, then QKV + norm; MLP: fc2, then fc1 + norm; MoE:
                                 router + shared experts + norm as one; embedding, head: all */
    double egrad_t[2];        /* routed experts: all local fc2, then all local fc1 */
    double fsdp_params;       /* ZeRO-3: dense elements gathered over DP x CP (0: DP 1) */
    double fsdp_eparams;      /* ZeRO-3: expert elements gathered over expert DP (0: EDP 1) */
    int32_t param_tensors;    /* --framework hf: its parameter tensors (the optimizer's host loop
                                 and autograd's accumulations run per tensor); 0 elsewhere */
    int32_t modules;          /* --framework hf: the nn.Module calls of its forward (each a Python
                                 __call__ and body, its backward's nodes: COST_HOST_MODULE_*); 0 elsewhere */
} PartBlockT;

/* The keys a windowed attention kernel walks per query: whole tiles of
 * 128 keys (cuDNN's and FlashAttention's), so a query tile's window of w
 * keys spans w + 128 of them, not w. cuDNN 9.14's windowed backwards with a
 * window of 128 took 0.13-0.17x the causal backward at 1 x 4096 tokens and
 * 0.15 at 4 x 4096 on an H200 and an H100 (bench/data/gpu/
 * sink_2026-11-27{i,j,l}_*.jsonl): 0.125 by tiles, 0.062 by the band alone. */
#define PART_ATTN_KEY_TILE 128

/* The mean keys a windowed layer's kernel walks per query at S tokens with
 * a window of w (model_attn_keys' causal band widened by one key tile), and
 * the widest row of them (*wide). */
double part_swa_keys(int64_t S, int64_t w, double *wide);

/* cuDNN's sliding-window attention forward (9.14, the frontend's fused
 * SDPA with a window of W keys, causal) over the causal kernel's time at the
 * same shape: in 21 of 28 timings on an H200 and an H100 it skipped no tile
 * left of the band, taking 1.14-1.23x the causal forward where the same run
 * timed that (median 1.16; GPT-OSS's shape, 4 x 4096 tokens, 64 heads of 64,
 * window 128: 1.33-1.35 ms against 1.15-1.16); in the other 7 it skipped
 * them (0.06-0.27 ms), which process got which not predictable
 * (bench/data/gpu/sink_2026-11-27{i,j,l}_*.jsonl). The backward skipped them
 * in every timing. */
#define PART_CUDNN_SWA_FWD 1.16

/* Runtime choices that change the kernels (the framework's code path). */
/* PartRuntime.ce_fusion: the cross-entropy as fp32 eager ops, Megatron-Core's
 * fused kernels, Transformer Engine's (SimCeFusion, sim.h) */
enum { PART_CE_EAGER = 0, PART_CE_NATIVE = 1, PART_CE_TE = 2 };

typedef struct PartRuntime {
    bool sequential_experts;  /* routed experts one GEMM each (Megatron SequentialMLP) */
    bool selective_ops;       /* selective recompute as op-level SAC (torchtitan) */
    int cp_comm;              /* 0 ring (p2p), 1 all-gather, 2 all-to-all (Ulysses) */
    int ce_fusion;            /* the loss's kernels: PART_CE_* (SimCeFusion's order) */
    double grad_bytes;        /* bytes per gradient element reduced (4: fp32 main grads; 0: the
                                 activation dtype's) */
    bool hf_grads_freed;      /* --framework hf: gradients freed after each step, so autograd's
                                 AccumulateGrad adds into .grad on grad_accum - 1 of the
                                 grad_accum micro-batches; false: on every one */
} PartRuntime;

/* The token-expert pairs of the busiest EP rank over the mean (>= 1): the
 * expert at moe_imbalance x its mean load, capped at moe_capacity when
 * tokens are dropped (every expert at the capacity when padded), beside
 * E/EP - 1 experts at the mean on its rank. 1 for a balanced or dense
 * model. E.g. 256 experts on EP 64 (4 per rank), imbalance 2: 1.25. */
double part_moe_rank_load(const ModelSpec *m, const ParallelPlan *p);

typedef struct PartTemplate {
    PartBlockT b[PART_BLOCK_COUNT];
    int64_t tokens;           /* T = B * S / CP, the rank's tokens of one micro-batch */
    int64_t tokens_sp;        /* T / TP under sequence parallelism, else T */
    double act_bytes;         /* bytes per activation element (bf16 under fp8: 2) */
    double tp_bytes;          /* one TP collective of a block: the activation B*S/CP*H, 0 at TP 1 */
    double ep_bytes;          /* one EP all-to-all per rank in the activation dtype: the routed
                                 token copies the rank sends (the combine, and the dispatch's
                                 backward), 0 at EP 1 */
    double ep_dispatch_bytes; /* the dispatch (and the combine's backward): ep_bytes, or its FP8
                                 size (1 B per element + an fp32 scale per 128) under DeepEP in
                                 FP8 training (DeepSeek-V3 §3.3.3) */
    double moe_load;          /* the busiest EP rank's token-expert pairs over the mean
                                 (part_moe_rank_load), >= 1; 1 without experts */
    double cp_kv_bytes;       /* CP: the K/V of all CP ranks of one micro-batch on this rank */
    double cp_q_bytes, cp_o_bytes; /* CP all-to-all (Ulysses): the rank's Q and output buffers */
    double embed_tp_bytes;    /* the embedding's TP collective (reduce-scatter with SP, else all-reduce) */
    double head_sp_bytes;     /* the head's SP all-gather, 0 without SP */
    double vocab_ar_bytes;    /* each of the 3 vocab-parallel cross-entropy all-reduces */
    double boundary_bytes;    /* the pipeline message of one micro-batch */
    double fsdp_layer_params[2]; /* ZeRO-3 copies of a dense / MoE layer: the elements gathered */
    double loss_workspace_bytes; /* --framework hf: what the loss's backward holds at its start
                                    beyond what its forward kept (template_hf.c hf_loss), 0 elsewhere */
} PartTemplate;

/* The template of plan p (resolved) for model m and runtime rt (NULL:
 * Megatron-Core defaults). */
void part_template(const ModelSpec *m, const ParallelPlan *p, const PartRuntime *rt, PartTemplate *out);
/* How many times each block of a template runs in the whole model (one
 * stage): attention every layer, the MLP in the dense layers, the MoE block
 * in the MoE layers, the embedding and the head once. */
void part_block_counts(const ModelSpec *m, double n[PART_BLOCK_COUNT]);
void part_runtime_init(PartRuntime *rt);
/* ZeRO-3's copy-out / copy-in kernel of a unit of `params` elements on this
 * rank (one kernel per unit: a layer, or the root unit of a stage, the
 * embedding, final norm and output layer in torchtitan); act_bytes per
 * parameter gathered, grad_bytes per gradient element reduced; `full`: full
 * recompute (the backward's copy-out is the recompute's). */
void part_fsdp_copy_kernel(double params, double act_bytes, double grad_bytes, bool full, PartKernel *out);
/* Does the plan's ZeRO-3 copy into and out of its communication buffers?
 * FSDP2 (torchtitan: per-parameter DTensors, all-gather copy-out and
 * reduce-scatter copy-in) and DeepSpeed ZeRO-3 (its gather and gradient
 * buckets) do; Megatron-FSDP gathers into and reduces from flat per-unit
 * buffers that the parameters and TE's main gradients are views of
 * (Megatron-LM docs/user-guide/features/megatron_fsdp.md: "FSDP2 requires
 * COPY operations ... Megatron-FSDP assigns sliced views of contiguous
 * communication buffers"), as PyTorch FSDP1's flat parameters are
 * (--framework hf: accelerate's default FSDP). */
bool part_fsdp_copies(const ParallelPlan *p);

/* ---- the partition ------------------------------------------------------------- */
/* Segment templates: one per kind of repeated work. */
#define PART_SEG_LIST(X)                                  \
    X(DENSE, "dense", "one dense transformer layer")      \
    X(MOE, "moe", "one MoE transformer layer")            \
    X(EMBED, "embed", "embedding (first chunk)")          \
    X(HEAD, "head", "final norm, LM head, loss (last chunk)")
typedef enum {
#define X(e, n, d) PART_SEG_##e,
    PART_SEG_LIST(X)
#undef X
    PART_SEG_COUNT
} PartSegKind;

/* When a template collective runs: in every micro-batch's forward or
 * backward, or once per step. Coarser than the workload's WlPhase (fwd, ig,
 * wg, opt: the backward split into input and weight gradients), which only
 * the workload and the stages after it use. */
typedef enum { PART_PHASE_FWD, PART_PHASE_BWD, PART_PHASE_STEP } PartPhase;

typedef struct PartOp {
    GraphOp op;       /* per-rank copy: dims divided by TP/SP/CP/EP, FLOPs/bytes rescaled */
    int32_t graph_op; /* index of the source op in graph->ops */
    int32_t repeat;   /* times it runs per micro-batch (local experts for expert ops), >= 1 */
} PartOp;

typedef struct PartColl {
    const char *name; /* "tp_ar_attn", "sp_ag_mlp", "cp_kv", "ep_dispatch", "pp_send_fwd" */
    TsColl coll;      /* allreduce, allgather, reducescatter, alltoall, sendrecv */
    PlanGroup group;  /* which process group */
    double bytes;     /* whole buffer, bytes, per occurrence */
    int32_t count;    /* occurrences per micro-batch (per step for PART_PHASE_STEP) */
    PartPhase phase;  /* fwd / bwd per micro-batch, or once per step */
    int32_t after_op; /* template op index it follows (-1: before the first op; -1 in stage_colls) */
    int32_t stage;    /* stage_colls: pipeline rank it belongs to, -1 = every rank */
    bool overlappable;/* may hide behind compute (tp_overlap, DP buckets, CP ring) */
} PartColl;

typedef struct PartSegment {
    PartSegKind kind;
    bool present;             /* the model has this segment */
    PartOp *ops;   int32_t n_ops;
    PartColl *colls; int32_t n_colls;
    double fwd_flops, dgrad_flops, wgrad_flops; /* per rank per micro-batch, sum over ops*repeat */
    double fwd_bytes, bwd_bytes;
    double params;            /* per-rank parameter elements */
    double expert_params;     /* of which routed experts */
} PartSegment;

typedef struct PartChunk {
    int32_t chunk;            /* vstage*pp + pp_rank */
    int32_t pp_rank, vstage;
    int32_t first_layer, n_layers;
    int32_t n_dense, n_moe;   /* layers of each kind */
    bool has_embed, has_head;
    double params;            /* per-rank parameter elements */
} PartChunk;

typedef struct Partition {
    TsArena *arena;            /* owns everything below */
    const ModuleGraph *graph;  /* borrowed; must outlive the partition */
    ParallelPlan plan;         /* resolved copy (stage_layers copied into the arena) */
    PartSegment seg[PART_SEG_COUNT];
    PartChunk *chunks; int32_t n_chunks;      /* pp*vpp */
    PartColl *stage_colls; int32_t n_stage_colls; /* PP p2p, DP grad reduce, tied embed */
    PartMemory *mem;           /* p.pp entries, per pipeline rank */
    PartMemory peak;           /* most loaded GPU */
} Partition;

/* Build the partition of graph g under plan p (resolved here on a copy).
 * The graph should be built with batch = 1 (ops are rescaled to
 * p->micro_batch) and seq = p->seq. On failure returns TS_ERR_PLAN (invalid
 * plan) or TS_ERR_INTERNAL (allocation) and *out is NULL. Caller owns *out. */
TsStatus part_build(const ModuleGraph *g, const ParallelPlan *p, const PartMemOptions *mo,
                    Partition **out, TsError *err);
void part_destroy(Partition *pt);  /* NULL is a no-op */

/* ---- the parameter table (trainsim params) -------------------------------------- */
#define PART_MAX_BLOCKS 64

typedef struct PartParamRow {
    const char *name;     /* dotted module path, "module.2.attention.query_key_value" */
    const char *module;   /* module repr, "ColumnParallelLinear()" */
    int32_t graph_param;  /* index in graph->params */
    int64_t shape[3];     /* per-rank shape (TP/EP split); unused dims 1 */
    int ndim;             /* 1, 2, or 3 (every local expert's tensor stacked on dim 0) */
    bool expert;          /* a routed expert's tensor (owner is an expert-DP rank) */
    int32_t n_blocks;     /* Shampoo blocks (0: no preconditioner: embeddings, norms, biases) */
    int block_dim;        /* dim split into blocks: the model-parallel one (0 rows of a
                             column-parallel weight, 1 its columns when row-parallel; the last of
                             a stacked column-parallel tensor); block i has extent ceil(d/K) (the
                             last one the rest), one factor d x d per dim d of the block's shape */
    double cost;          /* sum over blocks and their dims of d^3 (preconditioner root cost) */
    int64_t owner;        /* rank, within the group replicating the tensor, computing its
                             preconditioners (LPT): a DP rank, or an expert-DP rank for experts */
} PartParamRow;

typedef struct PartParamTable {
    PartParamRow *rows; int32_t n_rows; /* module order */
    int64_t stage;        /* pipeline rank of the table's rank */
    int64_t dp;           /* DP ranks sharing the dense tensors' preconditioner work */
    double *load;         /* dp entries: sum of cost per DP rank (dense tensors) */
    double imbalance;     /* max load / mean load (1.0 = perfect) */
    /* ---- routed experts (Megatron layout: EP rank e holds experts
     *      e*E/ep .. (e+1)*E/ep - 1, replicated over the EDP group) ---- */
    int64_t ep_rank;      /* the rank's expert-parallel index */
    int64_t first_expert; /* global index of its first local expert, ep_rank*E/ep */
    int64_t n_local_experts; /* E/ep (0 for dense models) */
    int64_t edp;          /* expert-DP ranks sharing the experts' preconditioner work */
    double *expert_load;  /* edp entries: sum of cost per expert-DP rank */
    double expert_imbalance; /* max/mean of expert_load (1.0 when no expert work) */
} PartParamTable;

/* Parameter tensors of `rank`'s stage in module order, with per-rank shapes,
 * Shampoo blocks (when p->optimizer is shampoo) and LPT owners. Routed
 * experts: only the rank's E/ep local experts, named by their global index
 * (the graph's names). Allocated in arena a. TS_ERR_PLAN for a bad plan or a
 * rank out of range. */
TsStatus part_params(const ModuleGraph *g, const ParallelPlan *p, int64_t rank, TsArena *a,
                     PartParamTable *out, TsError *err);
/* Write the table in the seed format, header line included:
 *   name;module;shape;partitioning_ranks;precs                                  */
void part_params_write(const PartParamTable *t, TsBuf *out);

#endif
