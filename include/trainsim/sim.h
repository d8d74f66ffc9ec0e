/*
 * trainsim/sim.h — one training iteration of a plan, simulated: the cost
 * builder on top of the schedule engine (sim_pipeline.h), with the overlap
 * of communication and compute, the optimizer step and the derived metrics
 * (tokens/s, MFU, HFU, memory, the breakdown of where time goes).
 *
 * sim_simulate: ModelSpec + ParallelPlan (plan.h) + HwModel + HwNet (hw.h)
 * -> per-chunk costs -> engine -> SimResult with throughput, FLOPs, memory
 * and warnings. SimOptions holds what the frameworks do that a plan does not
 * say; each default cites its source (src/sim/cost.c). The same costing
 * feeds the task graph of a plan (sim_workload.h); the replay of workload
 * files is sim_replay.h; the text and JSON of a result are report_sim.h's,
 * its Chrome trace is report_trace.h's.
 *
 * Units: seconds, bytes, FLOPs (double).
 *
 * Ownership: the caller owns the SimSetup and what it points to (model, hw,
 * net); the result's arrays as sim_pipeline.h says (sim_result_free when
 * simulated with w == NULL). Failure: TS_ERR_PLAN naming the knob and the
 * rule it breaks, TS_ERR_INTERNAL on allocation failure; a plan that does
 * not fit in memory is not a failure (memory.fits = false and a warning).
 *
 * Example:
 *     SimSetup in = {.model = &m, .plan = p, .hw = &hw, .net = &net};
 *     sim_options_init(&in.opt);
 *     SimResult r;
 *     if (sim_simulate(&in, NULL, &r, &err) == TS_OK) { ... r.tokens_per_s ... }
 *     sim_result_free(&r);
 */
#ifndef TRAINSIM_SIM_H
#define TRAINSIM_SIM_H

#include "trainsim/common.h"
#include "trainsim/cost.h"
#include "trainsim/hw.h"
#include "trainsim/model.h"
#include "trainsim/plan.h"
#include "trainsim/sim_pipeline.h"

/* Keep the per-layer costs (dense and MoE layer, embedding, head) of the
 * plans simulated on w, keyed by every plan knob and hardware figure the
 * layer costing reads (tp, cp, ep, etp, sp, micro-batch, seq, recompute,
 * dtype, flash, tp-overlap, ZeRO-3 and the DP groups it uses, pp == 1 for
 * tied embeddings, the GPU-count-dependent straggler factor, the costing
 * options, the group sizes and node spans) and by the ADDRESSES of the
 * model, hw and net: the caller promises that the objects at those
 * addresses keep their contents while the cache is on (a sweep does). Off
 * by default; results are bit-identical either way (tests/unit/test_sim_cache.c).
 * sim_work_cost_stats reports hits and misses (NULL-safe). */
void sim_work_cache_costs(SimWork *w, bool on);
void sim_work_cost_stats(const SimWork *w, int64_t *hits, int64_t *misses);

/* What the frameworks do that a ParallelPlan does not say. Defaults in
 * sim_options_init; each one cites its source there (src/sim/cost.c). */
/* How context parallelism exchanges K/V (Transformer Engine's cp_comm_type):
 * X(enum suffix, name).
 *   p2p        ring: cp-1 send/receive steps of the local K/V, under the attention blocks
 *   allgather  all-gather of K/V before the attention (and again in backward, then a
 *              reduce-scatter of dK/dV), exposed
 *   a2a        all-to-all of Q, K, V to whole sequences over heads/cp, and back (DeepSpeed
 *              Ulysses), exposed; needs the heads per TP rank divisible by cp */
#define SIM_CP_COMM_LIST(X) X(P2P, "p2p") X(ALLGATHER, "allgather") X(A2A, "a2a")
typedef enum {
#define X(e, n) SIM_CP_##e,
    SIM_CP_COMM_LIST(X)
#undef X
    SIM_CP_COMM_COUNT
} SimCpComm;
const char *sim_cp_comm_name(SimCpComm c);
bool sim_cp_comm_parse(const char *s, SimCpComm *out);
/* The exchange fits the plan: a2a needs the query and key/value heads per TP
 * rank divisible by cp (TS_ERR_PLAN with a hint otherwise). */
TsStatus sim_cp_comm_check(const ModelSpec *m, const ParallelPlan *p, SimCpComm c, TsError *err);

/* The cross-entropy loss over the vocabulary (Megatron-Core's
 * --cross-entropy-loss-fusion and --cross-entropy-fusion-impl):
 *   none    the vocab-parallel loss in fp32 eager ops (Megatron's default):
 *           the logits upcast, max, exp, sum, log-probability, ~14 B per
 *           logit forward and ~28 backward
 *   native  Megatron-Core's fused one: the same passes fused in place (the
 *           fp32 copy exp'd and normalised, the gradient made in it)
 *   te      Transformer Engine's Triton kernel: an online softmax reads the
 *           16-bit logits once forward; backward reads them once more and
 *           writes the gradient over them */
#define SIM_CE_FUSION_LIST(X) X(NONE, "none") X(NATIVE, "native") X(TE, "te")
typedef enum {
#define X(e, n) SIM_CE_##e,
    SIM_CE_FUSION_LIST(X)
#undef X
    SIM_CE_FUSION_COUNT
} SimCeFusion;
const char *sim_ce_fusion_name(SimCeFusion c);
bool sim_ce_fusion_parse(const char *s, SimCeFusion *out);

typedef struct SimOptions {
    bool dp_overlap;            /* grad reduce overlapped with backward (Megatron
                                   --overlap-grad-reduce, DDP buckets), true */
    bool param_gather_overlap;  /* dist-opt all-gather under the next forward, true */
    double bucket_bytes;        /* DP gradient bucket in bytes; 0 (default): Megatron-Core's
                                   max(4e7, 1e6 x DP size) elements at the reduction dtype
                                   (sim_dp_bucket_bytes) */
    bool fp32_grad_reduce;      /* gradients reduced in fp32 (Megatron DDP default), true */
    double overlap_slowdown;    /* compute slow-down while comm overlaps, 0.10
                                   (calibration_facts.md section 5) */
    double optimizer_bytes_per_param; /* HBM bytes per local parameter for the step, 24 */
    double pair_sm_share;       /* dualpipe, dualpipev: the SMs' share the all-to-all kernels hold
                                   while an F&B pair runs (SimPipeline.pair_sm_share), 20/132:
                                   DeepSeek-V3 report section 3.2.1, 20 of the H800's 132 SMs */
    bool selective_ops;         /* selective recompute is op-level SAC (every second matmul
                                   + all non-matmul ops; torchtitan), not Megatron's core
                                   attention, false */
    double gpu_spread;          /* speed spread (max - min) among the 8 GPUs of a node,
                                   0.05; a synchronous job runs at its slowest GPU's
                                   pace (sim_straggler) */
    SimCpComm cp_comm;          /* context-parallel K/V exchange, SIM_CP_P2P */
    SimCeFusion ce_fusion;      /* the cross-entropy loss's kernels, SIM_CE_NONE */
    bool balance_stages;        /* a plan without --stage-layers (vpp 1) runs on the even split
                                   of its costed work (SimResult.balance) when that is faster,
                                   false */
    bool cuda_graphs;           /* Megatron-Core's layer CUDA graphs (--cuda-graph-impl local,
                                   scope full): each layer pass a graph replay, no host dispatch
                                   (sim_cuda_graphs), false */
    bool sequential_experts;    /* a rank's routed experts one after another, each its own
                                   fc1 / activation / fc2 on its tokens (Megatron-Core
                                   SequentialMLP, i.e. without --moe-grouped-gemm; HF's
                                   expert loop); false: one grouped GEMM per projection
                                   over all local experts (--moe-grouped-gemm) */
    bool grads_freed;           /* --framework hf: the training loop frees the gradients after
                                   each step (zero_grad(set_to_none=True)), so the first
                                   micro-batch's backward stores them and only the others add
                                   into them; false: they stay allocated and every backward
                                   adds (PartRuntime.hf_grads_freed, PartMemOptions.grads_freed) */
    double host_s[2];           /* --framework hf: the host's time to dispatch one eager op
                                   forward / backward (--host-us), COST_HOST_FWD_S /
                                   COST_HOST_BWD_S (cost_ctx_host) */
    bool mfu_causal;            /* model FLOPs count causal attention as half the square
                                   (--mfu-convention causal); false: the full square, as
                                   Megatron's num_floating_point_operations */
    double min_headroom_bytes;  /* memory a GPU must leave free for the plan to fit
                                   (--headroom), 0 */
    bool record;                /* keep spans for --trace */
} SimOptions;
void sim_options_init(SimOptions *o);
/* The warning for SimOptions.grads_freed on a plan other than --framework hf
 * (simulate's, and memory's, which runs no simulation). */
#define SIM_GRADS_FREED_NO_EFFECT                                                                  \
    "--grads-freed has no effect: only --framework hf's loop frees the gradients after each step"

/* Whether Megatron-Core captures plan p's layers under o->cuda_graphs:
 * Megatron, no activation recompute (TransformerConfig raises "CUDA graphs
 * not supported with activation recomputation"), MoE layers only with
 * static shapes (a capacity factor, padded to it; not DeepEP's dispatch:
 * megatron/core/transformer/moe/README.md "CUDA Graph Support"). *why: the
 * reason it does not, else NULL. */
bool sim_cuda_graphs(const SimOptions *o, const ParallelPlan *p, bool moe, const char **why);
/* The cost context of plan p on hw under the simulator's options o: the
 * tensor factor tf, --host-us (host_s) where the host is in the loop (eager
 * HF modules, Megatron-Core's MoE layer), none where CUDA graphs replay the
 * layers; net (NULL: none) the network of the EP all-to-alls the host runs
 * ahead of (cost_ctx_net). */
void sim_cost_ctx(CostCtx *c, const HwModel *hw, const ParallelPlan *p, const SimOptions *o, double tf,
                  const HwNet *net);
/* o's host is the default one (no --host-us) */
bool sim_host_default(const SimOptions *o);
/* The host's dispatch is in plan p's loop (--host-us acts): eager
 * HuggingFace modules (--framework hf), or Megatron-Core's MoE layers that
 * CUDA graphs do not replay. */
bool sim_host_in_loop(const SimOptions *o, const ParallelPlan *p, const ModelSpec *m);
/* Distributed Shampoo's preconditioning per step, in seconds per parameter
 * of a stage (before the split over its DP ranks): the preconditioners
 * applied (4 x block side FLOPs per parameter) and their roots amortized
 * over 100 steps (0.2 x), as fp32 GEMMs on blocks of side hidden/K. 0 for
 * Adam. */
double sim_shampoo_s_per_param(const HwModel *hw, const ModelSpec *m, const ParallelPlan *p);
/* The DP gradient bucket in bytes for a reduction group of dp_size ranks:
 * o->bucket_bytes when set, else Megatron-Core's default bucket_size
 * max(4e7, 1e6 x dp_size) elements at the reduction dtype (fp32 or 16-bit). */
double sim_dp_bucket_bytes(const SimOptions *o, int64_t dp_size);
/* Tensor-core slow-down of the slowest of n GPUs given the per-node spread:
 * spread / 2.85 * sqrt(2 ln n) (0 for n = 1), e.g. 0.05 at n = 64. */
double sim_straggler(double spread, int64_t n);
/* Time factor on tensor-core kernels (GEMMs, attention) of a job on `gpus`
 * GPUs: clock / sustained clock of the GPU preset (power/thermal cap under
 * full-node load; a job of one GPU: its single_clock_mhz where the preset
 * has one), times 1 + sim_straggler(o->gpu_spread, gpus). 1.22 x 1.065
 * for 1024 H100s. The simulator and the workload generators both use it, so
 * a generated workload carries the kernel times `simulate` assumes. */
/* The dtype activations (and what the simulator costs outside the
 * transformer-layer GEMMs: attention core, LM head, TP traffic) are held in:
 * bf16 under fp8 training (Transformer Engine), else the training dtype. */
TsDtype sim_activation_dtype(TsDtype dt);
/* Streaming HBM bytes the fused Adam step costs per local parameter: the
 * precision recipe's (amp: fp32 parameter and moments read and written, the
 * fp32 gradient read, 28 B at 0.9 of the streaming rate: 31; pure: the same
 * at 16 bit, 14 B at 0.74: 19), else o->optimizer_bytes_per_param (mixed,
 * 24). */
double sim_optimizer_bytes(const SimOptions *o, const ParallelPlan *p);
double sim_tensor_factor(const GpuSpec *g, const SimOptions *o, int64_t gpus);
/* The SM clock tensor-core work is timed at (before the slowest GPU's lag):
 * one GPU's single_clock_mhz when gpus == 1 and the preset has it, else its
 * sustained_clock_mhz, else its peak clock_mhz. */
double sim_sm_clock_mhz(const GpuSpec *g, int64_t gpus);
/* The memory options (partition.h) the simulator's options imply for a plan
 * of compute dtype dt: the gradient buffer's dtype, the BF16 optimizer's fp32
 * gradient copy. Leaves the other fields (capacity, ...) as they are. */
struct PartMemOptions;
void sim_mem_options(const SimOptions *o, TsDtype dt, struct PartMemOptions *mo);
/* The layer template's runtime choices (sequential experts, op-level SAC, the
 * CP exchange, the reduced gradient's bytes, HF's freed gradients) from the
 * simulator's options, as the simulator builds its templates. */
struct PartRuntime;
void sim_part_runtime(const SimOptions *o, struct PartRuntime *rt);
/* The per-rank template of plan p (resolved) and its costs, as the simulator
 * builds them: its runtime choices (sim_part_runtime) and cost context
 * (sim_cost_ctx, tensor factor tf, network net). */
void sim_step_cost(const ModelSpec *m, const ParallelPlan *p, const SimOptions *o, const HwModel *hw, double tf,
                   const HwNet *net, PartTemplate *t, CostStep *cs);

typedef struct SimSetup {
    const ModelSpec *model;
    ParallelPlan plan;          /* resolved by sim_simulate (copy) */
    const HwModel *hw;          /* GPU compute model */
    const HwNet *net;           /* cluster and collective model */
    SimOptions opt;
    int64_t stage_buf[SIM_BALANCE_MAX]; /* the even split plan.stage_layers points to under
                                           opt.balance_stages */
} SimSetup;

/* ---- where a pipeline's idle time goes (bubble.c) ---------------------------
 * A stage's bubble is the schedule's own fill and drain plus waiting for
 * slower stages. Fill and drain take (p-1)/(v*m+p-1) of a stage's pipeline
 * phase (p stages, v chunks per stage, m micro-batches per replica; exact for
 * equal stages and free communication): sim_fill_drain_fraction, 0 for p = 1.
 * sim_bubble_split gives a stage's bubble_s (pipeline phase pipe_s, its
 * SimStageResult.pipe_end_s) as fill and drain up to that share and the rest,
 * waiting; e.g. DeepSeek-V3 on 2048 H800 (PP 16, 120 micro-batches): 11 %,
 * the critical stage's 25.3 s bubble is 3.8 s of fill and drain and 21.5 s
 * of waiting for stage 1. */
double sim_fill_drain_fraction(const ParallelPlan *p);
void sim_bubble_split(const ParallelPlan *p, double bubble_s, double pipe_s, double *fill_drain_s, double *waiting_s);

/* The stage the critical one waits for: when another stage's busy time
 * passes the critical stage's by more than SIM_SLOWEST_MARGIN, the critical
 * stage's bubble is mostly waiting for it. */
#define SIM_SLOWEST_MARGIN 1.05
typedef struct SimSlowest {
    int32_t stage;          /* the slowest stage, e.g. 1; -1 when none stands out */
    double busy_s;          /* its busy time, e.g. 30.5 */
    double critical_busy_s; /* the critical stage's, e.g. 8.84 */
    int dominant;           /* SIM_BD_* index of the largest part of its busy time, e.g. SIM_BD_ep_comm_exposed_s */
    double dominant_s;      /* that part, e.g. 17.6 */
} SimSlowest;
/* Fill *out; false (out->stage -1) when no stage stands out, or r has no
 * stage table (a replay). */
bool sim_slowest(const SimResult *r, SimSlowest *out);
/* The critical stage's bubble as fill and drain and waiting (sim_bubble_split
 * on r's critical stage; zb-h1 and dualpipe(v): fill and drain up to their
 * published bubble, SimResult.sched_formula_bubble_s); false when r has no
 * stage table. */
bool sim_critical_bubble(const SimSetup *in, const SimResult *r, double *fill_drain_s, double *waiting_s);
/* Whether breakdown category i is a stage's own work (all but bubble and
 * optimizer), and what it is in words: "the EP all-to-all". */
bool sim_breakdown_busy(int i);
const char *sim_breakdown_what(int i);

/* ---- the stage split that evens the work (balance.c) ----------------------
 * Layers per stage (vpp 1) minimising the busiest stage's work per
 * micro-batch, given each layer's work w[0..n) and the first and last
 * stages' extra (embedding; LM head, loss, MTP blocks). sim_simulate fills
 * SimResult.balance when the plan's stages are uneven in work; e.g.
 * DeepSeek-V3 on 16 H800 stages: 5,4,...,4,3,1 (first: 3 dense + 2 MoE;
 * last: one MoE layer beside MTP and the two heads). below > 0: only a
 * split whose busiest stage is under it is wanted (false, at the cost of one
 * check, when there is none). */
bool sim_balance_layers(const double *w, int64_t n, int64_t c, double first_x, double last_x, double below,
                        SimBalance *out);

/* Resolve and validate the plan against the model (plan_resolve), build
 * per-chunk costs, run the engine, derive metrics, memory and warnings.
 * in->plan is resolved in place (callers may read the derived fields). Errors: TS_ERR_PLAN
 * naming the knob and the rule it breaks. Does not fail when memory does not
 * fit: it sets memory.fits = false and a warning. */
TsStatus sim_simulate(SimSetup *in, SimWork *w, SimResult *out, TsError *err);
/* After sim_simulate of a plan that does not fit: the knobs that would make
 * it fit on the same GPUs (part_fit_alternatives, memory.fit_alt), which the
 * "does not fit" warning then names. A search skips it (the cost of up to a
 * few hundred memory counts). */
void sim_fit_alternatives(const SimSetup *in, SimResult *out);
/* sim_pipeline_lower_bound of the plan's costs: sim_simulate's costing
 * without the schedule engine, never above its iteration time. The search
 * ranks plans against it (search.h: a plan whose bound is already worse than
 * the k-th best cannot enter the top k). Same validation and errors as
 * sim_simulate. */
TsStatus sim_lower_bound(SimSetup *in, SimWork *w, double *lower_bound_s, TsError *err);

#endif
