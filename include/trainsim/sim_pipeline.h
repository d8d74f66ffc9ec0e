/*
 * trainsim/sim_pipeline.h — the schedule engine: one training iteration of a
 * pipeline, given what each (stage, chunk) costs for ONE micro-batch, and the
 * SimResult every simulation and replay fills.
 *
 * Input: per-(stage, chunk) costs of one micro-batch (forward, backward,
 * exposed TP/CP/EP communication inside them, pipeline transfer to the
 * neighbour) and per-stage end-of-step costs (DP gradient reduction in
 * buckets, optimizer step, parameter all-gather). sim_pipeline_run runs
 * GPipe, 1F1B, Megatron's interleaved 1F1B, ZB-H1, DualPipe or DualPipeV
 * (plan.h) on (stage, micro-batch, chunk) tasks: forwards, backwards, and
 * for the zero-bubble schedules input-gradient backwards with their weight-
 * gradient W tasks apart, and DualPipe's overlapped forward-and-backward
 * pairs (one task waiting for both inputs, sim_pair_s long). Each stage gets
 * its task order in an array, then stages are swept alternately forward and
 * backward, each task starting at max(stage free, inputs' finish + p2p).
 * No event heap; the full pass costs
 * O(stages * chunks * micro-batches). Identical DP replicas and TP ranks are
 * simulated once. Spans are recorded only when asked for. Without spans, a
 * periodic fast path runs a few periods after the warm-up, detects the
 * steady state (every task repeats with one increment) and extrapolates it
 * exactly, so the cost stops growing with m (docs/simulate.md;
 * SimPipeline.full_pass forces the full pass). sim.h builds the costs from a
 * model, a plan and the hardware.
 *
 * Units: seconds, bytes, FLOPs (double). Stage 0 holds the embedding,
 * stage p-1 the LM head and loss. Micro-batches run in increasing order.
 *
 * Ownership: a SimResult's stages and spans belong to the SimWork it ran on
 * (valid until the next run on it), or, run with w == NULL, to the result
 * itself (SimResult.owned: free with sim_result_free). sim_work_destroy(NULL)
 * and sim_result_free on an unowned result are no-ops. Failure: TS_ERR_PLAN
 * for an impossible pipeline, TS_ERR_INTERNAL on allocation failure, in the
 * caller's TsError.
 *
 * Invariants (tests/unit/test_sim.c): more bandwidth is never slower;
 * pp = 1 has no bubble; uniform stages with free communication give bubble
 * fraction (p-1)/(m+p-1) for 1F1B and (p-1)/(v*m+p-1) interleaved, and the
 * published bubbles (p-1)(F+B-2W) for ZB-H1, (p/2-1)(F&B+B-3W) for DualPipe
 * and (p-1)(F&B+B-3W) for DualPipeV on p ranks (B the whole backward,
 * SimResult.sched_formula_bubble_s; DualPipe's for F = I = W, the case
 * the published table assumes; ZB-H1's for any W); a larger
 * global batch at a fixed plan never lowers tokens/s. The breakdown of the
 * critical stage sums to the iteration time.
 *
 * Example (4 uniform stages, 8 micro-batches, 1F1B, fwd 1 s, bwd 2 s):
 *     SimChunkCost c[4] = {{.fwd_s = 1, .bwd_s = 2, .compute_fwd_s = 1,
 *                           .compute_bwd_s = 2}, ...};
 *     SimStageCost st[4] = {0};
 *     SimPipeline pl = {.stages = 4, .chunks = 1, .micro_batches = 8,
 *                       .schedule = PLAN_SCHED_1F1B, .chunk = c, .stage = st};
 *     SimResult r; sim_pipeline_run(&pl, NULL, &r, &err);
 *     // r.iteration_time_s = (8+3)*3 = 33, r.bubble_fraction = 3/11
 */
#ifndef TRAINSIM_SIM_PIPELINE_H
#define TRAINSIM_SIM_PIPELINE_H

#include "trainsim/common.h"
#include "trainsim/partition.h"
#include "trainsim/plan.h"

/* Streams of one stage (tracks in the Chrome trace). */
#define SIM_STREAM_LIST(X)          \
    X(COMPUTE, "compute")           \
    X(TP, "tp_comm")                \
    X(CP, "cp_comm")                \
    X(EP, "ep_comm")                \
    X(PP, "pp_comm")                \
    X(DP, "dp_comm")
typedef enum {
#define X(e, n) SIM_STREAM_##e,
    SIM_STREAM_LIST(X)
#undef X
    SIM_STREAM_COUNT
} SimStream;
const char *sim_stream_name(SimStream s);

/* Breakdown categories: X(field, json key). Order = report order. They sum to
 * the iteration time of the critical stage. */
#define SIM_BREAKDOWN_LIST(X)                 \
    X(compute_s, "compute")                   \
    X(recompute_s, "recompute")               \
    X(tp_comm_exposed_s, "tp_comm_exposed")   \
    X(cp_comm_exposed_s, "cp_comm_exposed")   \
    X(ep_comm_exposed_s, "ep_comm_exposed")   \
    X(pp_comm_exposed_s, "pp_comm_exposed")   \
    X(dp_comm_exposed_s, "dp_comm_exposed")   \
    X(bubble_s, "bubble")                     \
    X(optimizer_s, "optimizer")               \
    X(overlap_slowdown_s, "overlap_slowdown")
typedef struct SimBreakdown {
#define X(f, k) double f;
    SIM_BREAKDOWN_LIST(X)
#undef X
} SimBreakdown;
enum {
#define X(f, k) SIM_BD_##f,
    SIM_BREAKDOWN_LIST(X)
#undef X
    SIM_BD_COUNT
};
const char *sim_breakdown_key(int i);            /* "compute", ... */
double sim_breakdown_get(const SimBreakdown *b, int i);

/* SimChunkCost.dp_end_s for n equal buckets of dp_s seconds in all, ready
 * evenly through a backward window of window_s (the k-th at k/n of it):
 * max over k of k/n * window_s + (n - k + 1) * dp_s / n. E.g. 4 buckets of
 * 1 s in all under a 2 s backward: 2.25 (only the last one is exposed). */
double sim_dp_end_uniform(int32_t n, double dp_s, double window_s);
/* SimChunkCost.gather_lag_s for a gather of gather_s seconds spread evenly
 * over `layers` layers of a forward of fwd_s seconds (layer k waits for k
 * layers' share): max(a, L*a - (L-1)*f), a = gather_s/L, f = fwd_s/L. E.g.
 * 3 s over 3 layers of a 1 s forward: 7/3. */
double sim_gather_lag_uniform(double gather_s, int32_t layers, double fwd_s);

/* One micro-batch through one (stage, chunk). fwd_s/bwd_s are what the compute
 * stream is busy for (compute + recompute + exposed TP/CP/EP comm); the
 * compute_/recompute_/..._exposed fields split them for the breakdown. */
typedef struct SimChunkCost {
    double fwd_s;           /* busy time of the forward task, e.g. 0.0123 */
    double bwd_s;           /* busy time of the backward task (dgrad+wgrad+recompute) */
    double p2p_fwd_s;       /* sending this chunk's output activation onward, e.g. 1.2e-4;
                               negative: a blocking send inside fwd_s that the receiver's
                               blocking recv (inside its own task) overlaps, so the
                               receiver may start that much before the sender's end */
    double p2p_bwd_s;       /* sending this chunk's input gradient back (likewise) */
    double compute_fwd_s;   /* pure forward compute inside fwd_s */
    double compute_bwd_s;   /* pure backward compute inside bwd_s (no recompute) */
    double recompute_s;     /* recomputed forward inside bwd_s */
    double recompute_comm_s; /* of recompute_s, the exposed collectives a full recompute's
                               forward runs again (TP / CP / EP); 0 = all compute */
    double tp_exposed_s;    /* exposed TP comm inside fwd_s + bwd_s */
    double cp_exposed_s;    /* exposed CP exchange inside fwd_s + bwd_s */
    double ep_exposed_s;    /* exposed EP all-to-all inside fwd_s + bwd_s */
    double dp_grad_s;       /* DP gradient reduction of this chunk's parameters, per iteration */
    double dp_end_s;        /* with DP overlap: when the reduction would end, measured from the
                               start of the layers' part of the chunk's last backward (after
                               head_bwd_s), were the DP stream free then: its buckets, each
                               starting when its gradients are ready and the previous bucket
                               is done (>= dp_grad_s; sim_simulate walks Megatron's buckets,
                               dp_buckets.c; sim_dp_end_uniform for hand-built pipelines) */
    double fsdp_exposed_s;  /* ZeRO-3 gathers/reduces not hidden under compute, inside fwd_s+bwd_s */
    double slowdown_s;      /* compute slow-down from overlapped TP / CP comm and ZeRO-3 gathers,
                               per micro-batch, NOT inside fwd_s + bwd_s: measured on the
                               timeline without slow-down, it ends the stage's pipeline phase
                               (SimStageResult.slowdown_s), as sim_replay_dag holds it */
    double pp_blocked_s;    /* blocking pipeline sends/receives (--framework deepspeed) inside
                               fwd_s + bwd_s; p2p_fwd_s/p2p_bwd_s are then minus one
                               transfer (a send and its recv are one rendezvous) */
    double param_gather_s;  /* dist-opt / ZeRO-1/2: this chunk's share of its stage's parameter
                               all-gather (SimStageCost.param_gather_s); 0 = none */
    double gather_lag_s;    /* with param_gather_s overlapped: how late the chunk's first
                               forward ends at most, were its gathers to start when that
                               forward does: max over its pieces (embedding, layers, LM head)
                               of (gathers up to the one the piece waits for) - (forward
                               before the piece); the buckets arrive in forward order, each
                               piece waits for all its parameters (sim_simulate walks
                               Megatron's buckets; sim_gather_lag_uniform for hand-built
                               pipelines) */
    double head_bwd_s;      /* of bwd_s: the LM head's backward (last chunk), which opens the
                               backward: no layer's gradient bucket is ready before it ends */
    double wgrad_s;         /* of bwd_s: the weight-gradient work (the layers' wgrad GEMMs, the
                               embedding's and LM head's weight gradients), e.g. 0.004: the W
                               task of zb-h1, dualpipe and dualpipev; the rest of bwd_s is
                               their input-gradient task */
    double head_wgrad_s;    /* of wgrad_s: the LM head's (last chunk), which opens a W task */
    double dp_end_w_s;      /* dp_end_s for a chunk whose last gradients come from a W task:
                               from the start of the W's layer part (after head_wgrad_s), the
                               buckets ready through it (wgrad_s - head_wgrad_s) */
    double ep_fwd_s;        /* of ep_exposed_s: the EP all-to-alls inside the forward task */
    double ep_bwd_s;        /* of ep_exposed_s: those inside the backward task (the rest) */
    double dp_beside_s;     /* with DP overlap: of the compute in the last backward's window
                               (bwd_s - head_bwd_s), the seconds the buckets' collectives run
                               beside, were the DP stream free at its start (sim_simulate walks
                               them against the task graph's layout); 0 with dp_within_s 0: by
                               the backward's compute share */
    double dp_within_s;     /* the buckets' seconds inside that window */
    double dp_beside_w_s;   /* the same for a last W task's window (wgrad_s - head_wgrad_s) */
    double dp_within_w_s;
    /* SimPipeline.dp_shared: the reduce-scatters each backward of the chunk
     * issues, on the stage's DP stream: the LM head's when its backward
     * (head_bwd_s) ends, one per layer as the layers' share of the rest
     * ends, the embedding's when the task does */
    int32_t rs_layers;
    double rs_layer_s, rs_head_s, rs_emb_s;
} SimChunkCost;

/* Seconds of an overlapped forward-and-backward pair (DualPipe, DeepSeek-V3
 * report section 3.2.1): the forward of chunk f and the backward of chunk b
 * run together, their compute on the SMs the communication kernels leave,
 * their EP all-to-alls under the other's compute:
 *     max((Fc + Bc) / (1 - share), Fe + Be)
 * with Fe = f->ep_fwd_s, Be = b->ep_bwd_s, Fc = f->fwd_s - Fe, Bc =
 * b->bwd_s - Be; without EP traffic (Fe + Be = 0) no SMs are held: Fc + Bc.
 * E.g. F 1 s with 0.25 s EP, B 2 s with 0.5 s EP, share 20/132: 2.65 s. */
double sim_pair_s(const SimChunkCost *f, const SimChunkCost *b, double share);

/* End-of-step costs of a stage. */
typedef struct SimStageCost {
    double optimizer_s;     /* optimizer step on this rank's shard, e.g. 0.004 */
    double step_comm_s;     /* collectives of the step itself, exposed after it: Distributed
                               Shampoo's all-gather of the search directions, 0 */
    double param_gather_s;  /* dist-opt / ZeRO-1/2 parameter all-gather after the step */
    double embed_sync_s;    /* tied word-embedding gradient all-reduce between the first and
                               last stage (pp > 1), exposed after the DP reduction */
} SimStageCost;

typedef struct SimPipeline {
    int32_t stages;         /* p, >= 1 */
    int32_t chunks;         /* v, model chunks per stage (1 unless interleaved) */
    int64_t micro_batches;  /* m per DP replica, >= 1 */
    int64_t group;          /* interleaved: micro-batches per group (plan_vpp_group); 0 = stages */
    PlanSchedule schedule;  /* plan.h; chunks > 1 needs interleaved; dualpipe and dualpipev run 2
                               chunks (plan_rank_chunk: dualpipe's chunk 1 is the copy entering at
                               the last stage, dualpipev's the V's way back) on m >= 2p
                               micro-batches (dualpipe: an even m, m/2 per copy) */
    const SimChunkCost *chunk; /* [stages * chunks], index s*chunks + c */
    const SimStageCost *stage; /* [stages] */
    bool dp_overlap;        /* gradient reduction overlapped with the backward (bucketed) */
    bool dp_shared;         /* ZeRO-2 under a pipeline: every backward reduce-scatters its chunk's
                               gradients (SimChunkCost.rs_*), first come first served on the
                               stage's DP stream behind the overlapped parameter gathers, walked
                               on the run's finish times (the full pass) */
    bool param_gather_overlap; /* dist-opt all-gather under the next forward: the gathers of
                               the chunks' parameters run back to back from the step on, and
                               each layer's first forward waits for its own (what
                               SimChunkCost.param_gather_s does not hide is exposed) */
    double overlap_slowdown;/* compute slow-down while a collective overlaps it, 0.1 */
    double pair_sm_share;   /* dualpipe, dualpipev: the SMs' share the communication kernels hold
                               while an F&B pair runs (sim_pair_s), 20/132 (DeepSeek-V3 report
                               section 3.2.1: 20 of the H800's 132 SMs) */
    bool ds_pipe;           /* DeepSpeed's PipelineEngine (plan_ds_step; 1f1b, one chunk): each
                               step a stage's blocking exchange with one neighbour, a rendezvous
                               of the two, then its compute; the chunks' pp_blocked_s are the
                               exchanges' transfers */
    bool record;            /* record spans for a trace (implies the full pass) */
    bool full_pass;         /* simulate every micro-batch even when the schedule
                               is periodic (the reference for tests) */
} SimPipeline;

/* One span of the timeline (recorded when SimPipeline.record). */
typedef struct SimSpan {
    int32_t stage;
    int16_t stream;         /* SimStream */
    int16_t chunk;
    int32_t micro_batch;    /* -1 for step-level spans */
    char kind;              /* 'F' forward, 'B' backward (or its input-gradient part), 'W' weight
                               gradient, 'P' / 'Q' the forward / backward of an F&B pair (its time
                               split between them pro rata), 'S' send, 'R' reduce, 'O' optimizer,
                               'G' gather, 'T' a workload task (sim_replay_dag) */
    double start_s, end_s;
    const char *name;       /* 'T': the task's name, borrowed from the workload; else NULL */
} SimSpan;

/* Per-stage outcome. */
typedef struct SimStageResult {
    double busy_s;          /* compute stream busy time over the pipeline phase */
    double pipe_end_s;      /* last backward finished */
    double dp_exposed_s;    /* DP reduction not hidden under the backward */
    double slowdown_s;      /* extra compute from overlapped communication: the chunks' x micro-batches, the DP buckets' */
    double embed_sync_s;    /* tied-embedding gradient all-reduce (SimStageCost) */
    double end_s;           /* pipe_end + slowdown + dp_exposed + embed_sync */
    SimBreakdown breakdown; /* this stage up to end_s (optimizer 0): sums to end_s */
} SimStageResult;

/* What a simulation warns of, as figures: the sentence is the report's
 * (rep_sim_warning, report_sim.h), written only when a warning is shown, so
 * that a sweep pays nothing for the warnings of the plans it ranks. */
typedef enum SimWarnKind {
    SIM_WARN_NO_FIT,          /* a GiB needed, b GiB available, i the stage */
    SIM_WARN_NO_MEMORY,       /* memory not estimated: text the reason */
    SIM_WARN_NO_TENSOR_CORES, /* text the GPU, i the plan's TsDtype, j the one its GEMMs run at */
    SIM_WARN_FEW_MB,          /* i micro-batches for j stages, a the bubble fraction */
    SIM_WARN_BUBBLE_SLOW,     /* a the bubble fraction, b fill and drain, i the slowest stage */
    SIM_WARN_BUBBLE,          /* a the bubble fraction, i 1: interleaving is no option (DeepSpeed pipe) */
    SIM_WARN_BALANCE,         /* SimResult.balance evens the stages' work */
    SIM_WARN_TP_NODES,        /* a TP group of i spans j nodes */
    SIM_WARN_CP_NODES,        /* the CP group spans i nodes */
    SIM_WARN_EP_NODES,        /* the EP all-to-all spans i nodes */
    SIM_WARN_SEQ_EXPERTS,     /* --sequential-experts on text, a model with no routed experts */
    SIM_WARN_SELECTIVE_OPS,   /* --selective-ops without --recompute selective */
    SIM_WARN_CP_COMM,         /* --cp-comm i (SimCpComm) with cp 1 */
    SIM_WARN_FP32_EXPERTS,    /* --framework hf --precision amp on a model with routed experts: they run
                                 in FP32 on the CUDA cores */
    SIM_WARN_SOFTWARE,        /* --software 2024 on text, a GPU whose preset has no 2024 figures */
    SIM_WARN_HOST_US,         /* --host-us without --framework hf (no host in the loop) */
    SIM_WARN_GRADS_FREED,     /* --grads-freed without --framework hf */
    SIM_WARN_CUDA_GRAPHS,     /* --cuda-graphs on a plan Megatron-Core cannot capture (text: why) */
    SIM_WARN_MOE_HOST,        /* Megatron-Core's MoE layers: the GPU waits a (fraction of the step) for
                                 the host */
    SIM_WARN_TP_OVERLAP_PCIE, /* --tp-overlap where the TP group talks over PCIe (text: the cluster) */
} SimWarnKind;
typedef struct SimWarning {
    SimWarnKind kind;
    double a, b;
    int64_t i, j;
    char text[128]; /* the name or reason it quotes, where it has one */
} SimWarning;

#define SIM_MAX_WARNINGS 8
typedef struct SimMemory {
    double weights_bytes, gradients_bytes, optimizer_bytes, activations_bytes, other_bytes;
    double total_bytes, capacity_bytes;
    double min_headroom_bytes; /* what the plan had to leave free (SimOptions), 0 */
    bool fits;                 /* total_bytes <= capacity_bytes - min_headroom_bytes */
    char fit_hint[320]; /* when it does not fit: what makes it fit (part_fit_hint), as
                           sim_fit_alternatives found it; "" when not looked for */
} SimMemory;

/* A split of the layers over the stages (balance.c). */
#define SIM_BALANCE_MAX 128
typedef struct SimBalance {
    int32_t n;              /* stages, 0: none */
    int16_t layers[SIM_BALANCE_MAX];    /* layers per stage, e.g. 5,4,...,4,3,1 */
    double busiest_s;       /* the busiest stage's work per micro-batch under it, e.g. 0.148 */
    double current_s;       /* the same under the plan's split, e.g. 0.187 */
} SimBalance;

typedef struct SimResult {
    /* schedule engine */
    double iteration_time_s;  /* one optimizer step, e.g. 11.9 */
    double pipeline_time_s;   /* forward/backward phase of the slowest stage */
    double bubble_fraction;   /* bubble_s / pipeline phase of the critical stage */
    int32_t critical_stage;   /* stage whose end decides the iteration */
    int32_t slowest_stage;    /* stage with the most busy time: it sets the steady-state pace,
                                 the others wait for it (uneven work per stage) */
    bool periodic;            /* steady state extrapolated (fast path), not every micro-batch run */
    SimBreakdown breakdown;   /* of the critical stage; sums to iteration_time_s */
    /* zb-h1, dualpipe, dualpipev (0 otherwise): the critical stage's seconds per micro-batch
       (the mean of its chunks) of a forward F, a whole backward B, its weight-gradient part W
       and an F&B pair (dualpipe(v)), and the paper's bubble on them: (p-1)(F+B-2W),
       (p/2-1)(F&B+B-3W), (p-1)(F&B+B-3W) (uniform stages, free transfers: the engine's) */
    double sched_f_s, sched_b_s, sched_w_s, sched_pair_s, sched_formula_bubble_s;
    int32_t n_stages;
    SimStageResult *stages;   /* [n_stages], owned by the SimWork */
    int64_t n_spans;
    SimSpan *spans;           /* owned by the SimWork; NULL unless recorded */
    bool owned;               /* stages/spans malloc'd (run with w == NULL): sim_result_free */

    /* filled by sim_simulate */
    double tokens_per_s, tokens_per_s_per_gpu, samples_per_s;
    double model_flops_per_iteration;    /* 6N-style useful FLOPs, attention counted full */
    double hardware_flops_per_iteration; /* + recompute */
    double model_tflops_per_gpu, hardware_tflops_per_gpu, mfu, hfu;
    double host_wait_s;       /* of breakdown.compute, the GPU idle while the host dispatches eager
                                 ops (--framework hf, CostStep.host_wait_s by the micro-batches) */
    double host_wait_optimizer_s; /* of breakdown.optimizer, the GPU idle while the host walks the
                                 parameter tensors (--framework hf, CostStep.host_opt_s) */
    SimMemory memory;
    SimBalance balance;       /* an even split of the work when the plan's is not (n 0: none) */
    int n_warnings;
    SimWarning warnings[SIM_MAX_WARNINGS]; /* their sentences: rep_sim_warning */
} SimResult;

/* Reusable scratch space (task orders, finish times, spans). Create once per
 * thread; NULL is allowed where a function takes one (then it allocates per
 * call). sim_work_destroy(NULL) is a no-op. */
typedef struct SimWork SimWork;
SimWork *sim_work_create(void);
void sim_work_destroy(SimWork *w);

/* Run the schedule. Fills the engine part of *out; stages/spans point into w
 * (valid until the next run on w, or until out is freed by sim_result_free
 * when w was NULL). TS_ERR_PLAN for an impossible pipeline (stages < 1,
 * m < 1, chunks > 1 without INTERLEAVED, dualpipe(v) without 2 chunks or
 * with fewer than 2p micro-batches); TS_ERR_INTERNAL on allocation
 * failure. */
TsStatus sim_pipeline_run(const SimPipeline *pl, SimWork *w, SimResult *out, TsError *err);
/* What sim_pipeline_run's iteration time can never be below, without
 * running it: the busiest stage's compute-stream time (micro-batches x its
 * chunks' fwd_s + bwd_s, tasks that run one after another; an F&B pair
 * counts sim_pair_s) plus the optimizer step. The pipeline need not be
 * checked; pl->stage may not be NULL. */
double sim_pipeline_lower_bound(const SimPipeline *pl);
/* Free what sim_pipeline_run/sim_simulate allocated when called with w == NULL. */
void sim_result_free(SimResult *r);

#endif
