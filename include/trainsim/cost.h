/*
 * trainsim/cost.h — the costed step: a plan's layer template (partition.h,
 * part_template) in seconds on a GPU (hw.h), kernel by kernel. The
 * simulator's schedule and the workload builder both read these times, so a
 * kernel is costed one way only.
 *
 * A GEMM costs its forward (m x k) @ (k x n), input gradient (m x n) @ (n x
 * k) and weight gradient (k x m) @ (m x n) at the plan's dtype (FP8 layer
 * GEMMs with Transformer Engine's casts: the input cast with its amax, 3 B
 * per input element, forward; the output gradient cast and transposed, 4 B,
 * into the input gradient; the saved input transposed, 2 B, into the weight
 * gradient), or at the activation dtype (PART_KF_ACT: the LM head, the
 * unfused attention core). GEMMs and attention are scaled by
 * tensor_factor (the GPU's clock over its sustained clock under load, and
 * the slowest GPU of the job: sim_tensor_factor). Memory-bound kernels take
 * hw_memory_time_s of their bytes, forward and backward (PART_KF_WGRAD: the
 * backward is weight-gradient work). Every time is per micro-batch, all
 * launches of the kernel (PartKernel.count) included.
 *
 * Example:
 *     PartTemplate t; part_template(&model, &plan, NULL, &t);
 *     CostCtx c = {.hw = &hw, .dtype = plan.dtype, .act_dtype = TS_DTYPE_BF16, .tensor_factor = 1.0};
 *     CostBlock a; cost_block(&c, &t.b[PART_BLOCK_ATTN], &a);
 *     // a.fwd, a.ig, a.wg: the attention half of a layer, one micro-batch
 */
#ifndef TRAINSIM_COST_H
#define TRAINSIM_COST_H

#include "trainsim/hw.h"
#include "trainsim/partition.h"

typedef struct CostCtx {
    const HwModel *hw;
    TsDtype dtype;          /* the plan's GEMM dtype, e.g. bf16 or fp8 */
    TsDtype act_dtype;      /* activations, attention core, LM head: bf16 under fp8 */
    PlanFp8Recipe fp8;      /* the FP8 scaling recipe (its casts' traffic) */
    bool fp8_non_tn;        /* the GPU runs FP8 GEMMs in every layout (Blackwell): per-tensor
                               scaling casts one FP8 copy, no transposed one */
    double tensor_factor;   /* time factor on GEMMs and attention, e.g. 1.22 x 1.065 */
    double host_s[3][2];    /* host time to dispatch one op forward / backward (eager PyTorch:
                               [0] COST_HOST_FWD_S, COST_HOST_BWD_S; [1] a PART_KF_INNER kernel,
                               COST_HOST_INNER_*; [2] a PART_KF_PYLOOP op, COST_HOST_LOOP_S;
                               Megatron-Core: [0] and [1] x COST_HOST_MCORE, [2] as is);
                               0: the GPU never waits on the host */
    double host_mod_s[2];   /* host time of a module call, forward / backward (PartBlockT.modules;
                               COST_HOST_MODULE_FWD_S, _BWD_S under --framework hf, else 0) */
    double host_opt_s;      /* host time of the optimizer step per parameter tensor
                               (COST_HOST_OPT_TENSOR_S under --framework hf, else 0) */
    bool host_sync;         /* Megatron-Core: only the MoE layer's ops have a host time (the
                               template's launches), and its forward syncs the host on the token
                               counts (cost_step) */
    const HwNet *net;       /* the network of the EP all-to-alls (cost_ctx_net), NULL: none; an
                               MoE layer's forward dispatch and combine are GPU work after the
                               sync that the host runs ahead of (cost_step) */
    int64_t ep_nodes;       /* nodes the EP group spans */
    int64_t ub_tp;          /* --tp-overlap: TP size (TE's ring exchange runs a GEMM in ub_tp
                               chunks), 1 without */
    double ub_stretch[2];   /* forward time factor of the attention's and the MLP's output
                               projection (PART_KF_ROW_OUT, _MLP) under TE's pipelined TP overlap:
                               1 + COST_UB_BETA x k / (SMs - k), k = COST_UB_*_SMS; 1 without */
} CostCtx;

/* --tp-overlap: Transformer Engine's userbuffers overlap (Megatron-Bridge /
 * NeMo's configurations, comm_overlap.py) runs the all-gather-side GEMMs
 * (QKV and fc1 forward, projection and fc2 data gradient) as ring exchange:
 * tp GEMMs of 1/tp of the rows, each on the chunk a peer just sent.
 * With 16-bit GEMMs it overlaps the reduce-
 * scatter after the attention's and the MLP's output projection with the
 * GEMM by its "pipeline" method: the GEMM in 4 chunks on the SMs the
 * communication kernel leaves (set_sm_margin: cuBLAS told the SM count),
 * the reduce-scatter on num_sm SMs. Megatron-Bridge's H100 BF16
 * configurations (src/megatron/bridge/training/comm_overlap.py,
 * userbuffers_bf16_h100_h8192_tp4_mbs1_seqlen8192, as NeMo's): proj_fprop
 * 24 SMs, fc2_fprop 16 (other shapes 16-32 and 1-24). Its FP8
 * configurations run both as ring exchange on 1 SM: no margin. The other
 * overlaps (ring exchange of the all-gathers, bulk ones in the backward on
 * 2-4 SMs) hold few SMs: the overlap slow-down covers them.
 * The GEMM on k fewer SMs takes 1 + beta x k / (SMs - k) of its time, beta
 * 0.55: tools/calibrate/sm_margin on an H100 (bench/data/gpu/
 * sm_margin_2026-11-26_h100.jsonl: BF16 GEMMs of Llama-3 70B / 405B output
 * projections, cuBLASLt told SMs - k, k held by other kernels; median
 * stretch 1.07 at 16, 1.11 at 24, 1.22 at 32 held, where SMs / (SMs - k)
 * gives 1.14, 1.22, 1.32: at the 700 W cap fewer busy SMs clock higher). */
/* Transformer Engine's GroupedLinear (Megatron-Core's TEGroupedMLP) runs its
 * experts' GEMMs one cuBLAS GEMM per expert, round robin over 4 compute
 * streams (TE 2.9-2.11 general_grouped_gemm -> multi_stream_cublas_gemm,
 * num_compute_streams 4): at most 4 GEMMs share the SMs at a time, so each
 * round of 4 fills its own waves (PART_KF_STREAMS). */
#define COST_TE_STREAMS 4
#define COST_UB_PROJ_SMS 24
#define COST_UB_FC2_SMS 16
#define COST_UB_SPLITS 4
#define COST_UB_BETA 0.55

/* Eager PyTorch's host time, forward and backward, as two costs: each ATen
 * op that launches work (autocast's own casts apart: PART_KF_INNER) and
 * each nn.Module call (PartBlockT.modules): forward its Python __call__ and
 * body, the views and reshapes that launch nothing, HF's glue; backward the
 * autograd nodes that launch nothing (views, transposes, AccumulateGrad of
 * its parameters) and what recording them cost the forward. transformers
 * 5 on PyTorch 2.11 take about 24 us an op forward, 25 an op backward
 * (autograd's engine) and 54 us a module call: fitted to the host-bound
 * small steps of bench/data/gpu/measurements_2026-11-26_h{1,2}00_small.jsonl
 * (GPT-2, BERT-base, Llama 3.2 1B, 14 rows on two hosts: 9.4 % MAPE, bias 0),
 * with every op counted as torch.profiler counts it in the steps of
 * hostbound_2026-11-27e_*.jsonl. The module's share is split between the
 * passes by the same rows' forwards timed under torch.no_grad()
 * (fwd_nograd_ms): at 24 us an op they leave 11.5 us a module forward (the
 * forward then within 13 %, bias -3 %, where 55 us made it +72 %), and the
 * steps' forward + backward (fwd_bwd_ms) 42.2 us a module backward (within
 * 10.3 %, bias -1.9 %). Per op alone, without the module term, the
 * families need 28-40 us (Llama, Qwen3), 44-47 (GPT-2, Mixtral) and 48-63
 * (BERT): their modules hold 11, 5 and 3 ops each. Hosts differ: the same
 * steps on the 2026-11-27 machines took 10-40 % longer (those rows score
 * -21 % bias). A pass whose kernels take less GPU time than their dispatch
 * runs at the host's pace (cost_step). */
#define COST_HOST_FWD_S 24e-6
#define COST_HOST_BWD_S 25.2e-6
#define COST_HOST_MODULE_FWD_S 11.5e-6
#define COST_HOST_MODULE_BWD_S 42.2e-6
/* Megatron-Core's MoE layer dispatches its calls (the template's counts,
 * from its token dispatcher, router and Transformer Engine's GroupedLinear)
 * at this factor of an eager op's host time: Transformer Engine's modules
 * carry more Python per call than PyTorch's (a te.Linear forward takes 2.7x
 * the host time of a torch.nn.Linear on the same host,
 * NVIDIA/TransformerEngine#2053: 99.7 against 37.1 us on GB200, 90.5
 * against 33.2 on GH200). Calibrated on Megatron-Bridge's DGX-B200
 * Qwen3-30B-A3B rows that differ only in the micro-batch (8 GPUs, EP 8,
 * MXFP8; 26.02 micro-batch 1: 9,691 tokens/s per GPU, host-bound; 26.02.01
 * micro-batch 4: 26,695, GPU-bound): 1.9, to a tenth, centres them (+6.1 /
 * -4.3 %, mean +0.9 %); docs/accuracy.md "MoE rows on DGX-B200" checks it on the other
 * models. */
#define COST_HOST_MCORE 1.9
/* The host time of a kernel that another op dispatches from C++ with no
 * Python of its own (PART_KF_INNER: autocast's casts of a linear's input,
 * weight and bias, and their gradients' casts back), forward / backward:
 * 200 nn.Linear(256, 256) layers on 4 tokens took 21.3 us a layer forward in
 * fp32 and 41.9 under torch.autocast(bf16), three casts more (6.9 us each);
 * backward 66.6 and 83.5 us, three cast gradients (5.6 us each) (an H100
 * machine, PyTorch 2.11; bench/data/gpu/host_2026-11-26_h100.jsonl). */
#define COST_HOST_INNER_FWD_S 6.9e-6
#define COST_HOST_INNER_BWD_S 5.6e-6
/* The host time of an eager training loop's optimizer step per parameter
 * tensor: torch.optim.AdamW(fused=True).step() walks the tensors in Python
 * (its _init_group: the gradient, the state's moments and step, list
 * appends), groups them by device and dtype and launches the fused kernel
 * over them; zero_grad(set_to_none=True) walks them again. The GPU waits for
 * it unless the backward's kernels keep it busy that long (cost_step). Set
 * from the optimizer's own time in the measured HF steps (opt_ms of
 * bench/data/gpu, PyTorch 2.11, 201 rows on six lent machines): where the
 * backward was host-bound it took 3-14 us a tensor more than its kernels
 * (median 6.5); the optimizer's time over all rows (217 now) comes out 7.8 %
 * (bias -5.2: the backward's host, at COST_HOST_BWD_S, now hides more of
 * it) against 12.7 % (-10.8) without it; fitted on the 2026-11-26 rows alone
 * (7 us) the 2026-11-27 rows score 8.8 % (11.6 without), fitted on those (5
 * us) the 2026-11-26 rows 8.9 % (15.0). */
#define COST_HOST_OPT_TENSOR_S 6.5e-6
/* The host time of an op a Python loop calls directly, with no module of
 * its own around it (PART_KF_PYLOOP: transformers' fallback for fp32
 * experts, a slice and torch.mm(out=) per expert, and its Python backward;
 * Megatron-Core's per-expert fc2 bias, template.c grouped_fc2_bias),
 * forward and backward alike. Between autocast's C++ casts (6.9 / 5.6 us)
 * and a module's op (COST_HOST_FWD_S); what the Qwen3-30B-A3B amp steps
 * leave per fallback call once their other ops are counted: 23 and 34 us at
 * 1 x 256 tokens on two hosts, at most 12 at 1 x 1024 on a third
 * (bench/data/gpu/hostbound_2026-11-27e_*.jsonl, moe_amp_2026-11-27_h200.jsonl):
 * the hosts differ by as much as the figures. */
#define COST_HOST_LOOP_S 20e-6

/* The context of plan p on hw: the plan's GEMM dtype, activations in bf16
 * under fp8, the host's dispatch time where the framework runs eager
 * HuggingFace modules (--framework hf). */
void cost_ctx_init(CostCtx *c, const HwModel *hw, const ParallelPlan *p, double tensor_factor);
/* The network of the plan's EP all-to-alls, the EP group spanning ep_nodes
 * nodes (plan_group): Megatron-Core's host wait subtracts the forward's
 * dispatch and combine (cost_step). */
void cost_ctx_net(CostCtx *c, const HwNet *net, int64_t ep_nodes);
/* The route of plan p's EP all-to-alls (DeepEP's dispatch, top-k, node
 * limit, the busiest rank's load from template t) for hw_ep_a2a_time_s. */
void cost_ep_route(const ModelSpec *m, const ParallelPlan *p, const PartTemplate *t, HwEpRoute *r);
/* Another host: host_s[2] seconds to dispatch an eager op forward /
 * backward instead of COST_HOST_FWD_S / COST_HOST_BWD_S (either not above
 * 0: the defaults stay); autocast's C++
 * casts (COST_HOST_INNER_*) and Python loops' ops (COST_HOST_LOOP_S) at the
 * same ratio, the optimizer's loop
 * (COST_HOST_OPT_TENSOR_S) at the forward's. Nothing where c has no host
 * in the loop (not --framework hf). */
void cost_ctx_host(CostCtx *c, const double host_s[2]);

/* Seconds of a block's kernels for one micro-batch; the parts add up:
 * fwd = gemm_fwd + core_fwd + mem_fwd, ig = gemm_ig + core_ig + mem_ig,
 * wg = gemm_wg + mem_wg. Backward-only kernels (PART_KF_SAC_ONLY) are not in
 * them: sac_fwd is their forward time. */
typedef struct CostBlock {
    double fwd, ig, wg;
    double gemm_fwd, gemm_ig, gemm_wg;
    double core_fwd, core_ig;
    double mem_fwd, mem_ig, mem_wg;
    double fsdp_fwd, fsdp_bwd;  /* of the memory-bound parts: ZeRO-3 copies */
    double host_fwd, host_bwd;  /* the host's time to dispatch the block's kernels (launches x
                                   CostCtx.host_s), forward / backward */
    double wait_fwd, wait_bwd;  /* of the memory-bound parts: the GPU idle while the host dispatches
                                   (cost_step: the whole pass's dispatch beyond its kernels' time,
                                   shared by the blocks as their dispatch time) */
    double sac_fwd;
    double k[PART_MAX_KERNELS][3]; /* each kernel: fwd, ig, wg seconds (the first n_k of the block) */
} CostBlock;

/* Every block of a template, costed, with what each block's backward runs
 * again first: selective recompute the attention core's forward; op-level SAC
 * (PartRuntime.selective_ops, models without experts or MLA) the block's SAC
 * GEMMs and every non-GEMM kernel of its forward; full recompute the block's
 * whole forward (a replay runs it with its collectives). */
typedef struct CostStep {
    CostBlock b[PART_BLOCK_COUNT];
    double recompute[PART_BLOCK_COUNT];
    double host_wait_s; /* of one micro-batch's forward and backward over the whole model, the GPU
                           idle while the host dispatches (the blocks' wait_* by their counts;
                           --framework hf, else 0) */
    double host_opt_s;  /* the optimizer step's host time (its parameter tensors at host_opt_s)
                           beyond the GPU work the last backward leaves queued: the GPU idle
                           before the optimizer's kernels (--framework hf, else 0) */
} CostStep;
void cost_step(const CostCtx *c, const ModelSpec *m, const ParallelPlan *p, const PartRuntime *rt,
               const PartTemplate *t, CostStep *out);
/* Op-level SAC applies to this model and plan (its per-block recompute). */
bool cost_sac(const ModelSpec *m, const ParallelPlan *p, const PartRuntime *rt);

/* t[0..2]: forward, input-gradient, weight-gradient seconds of all launches. */
void cost_kernel(const CostCtx *c, const PartKernel *k, double t[3]);
void cost_block(const CostCtx *c, const PartBlockT *b, CostBlock *out);

#endif
