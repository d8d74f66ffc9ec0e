/*
 * trainsim/workload_build.h — the generators: a plan's costed step (the
 * partition's layer template with its costs, cost.h) expanded into a
 * Workload (workload.h). The generators cost nothing themselves, so a
 * generated workload carries the kernel times the simulator assumes
 * (sim_workload.h builds one from a SimSetup).
 *
 *   wl_build          the full per-stage task DAG (the JSON / Chakra workload)
 *   wl_build_aicb     AICB/SimAI layer rows of one pipeline stage
 *   wl_build_optable  NeuSight's per-operator table of a HuggingFace model
 *
 * Units: seconds, bytes, FLOPs (double).
 *
 * Ownership: the WlStep's parts stay the caller's (wl_step_make fills them
 * into a caller-provided WlStepStore); a built Workload is the caller's
 * (wl_destroy). Failure: TS_ERR_USAGE for what a format cannot express,
 * TS_ERR_INTERNAL on allocation failure; *out is NULL on failure.
 */
#ifndef TRAINSIM_WORKLOAD_BUILD_H
#define TRAINSIM_WORKLOAD_BUILD_H

#include "trainsim/common.h"
#include "trainsim/cost.h"
#include "trainsim/hw.h"
#include "trainsim/workload.h"

/* What a generator expands: the model and its resolved plan, the plan's layer
 * template (partition.h) and its costs (cost.h), and the costing context for
 * the step-level kernels (the optimizer). The generators cost nothing
 * themselves, so a generated workload carries the kernel times the simulator
 * assumes. wl_step_make fills one from its parts. */
typedef struct WlStep {
    const ModelSpec *model;
    const ParallelPlan *plan;
    const PartTemplate *tpl;
    const CostStep *cost;
    CostCtx cc;
} WlStep;
/* Storage for wl_step_make (~40 KB: allocate it, or keep it static). */
typedef struct WlStepStore {
    PartTemplate tpl;
    CostStep cost;
} WlStepStore;
/* part_template + cost_step of a resolved plan into st, pointing s at them. */
void wl_step_make(const ModelSpec *m, const ParallelPlan *p, const PartRuntime *rt, const CostCtx *cc,
                  WlStepStore *st, WlStep *s);

typedef struct WlAicbOptions {
    bool compat_1_1;        /* AICB v1.1 (Sep 2024): 2x word embedding, MockedParam sizes, no vpp:
                               in the header, AIOB's arrangement (backward = forward, stale
                               embedding wg time, 0-byte column ig reduce-scatter, final_column
                               timed as attention) */
    const struct WlBuildOptions *build; /* the runtime options the blocks are costed with
                               (wl_build's); NULL = defaults */
} WlAicbOptions;
/* AICB/SimAI layer rows for one pipeline stage (simai_aicb.md §2-3): the
 * stage with the most layers, its blocks costed as wl_build costs them. */
TsStatus wl_build_aicb(const WlStep *s, const WlAicbOptions *o, Workload **out, TsError *err);

/* How context parallelism exchanges K/V (the simulator's SimCpComm, same order). */
typedef enum WlCpComm {
    WL_CP_P2P = 0,   /* ring: the other ranks' K/V as one asynchronous all-gather under (cp-1)/cp of
                        the core; backward the K/V again and a dK/dV reduce-scatter */
    WL_CP_ALLGATHER, /* blocking K/V all-gather before the core; backward again, then a blocking
                        reduce-scatter of dK/dV */
    WL_CP_A2A        /* Ulysses: blocking all-to-alls of Q, K, V before the core and of the output
                        after it (backward: the reverse), core over whole sequences, heads/cp */
} WlCpComm;

typedef struct WlBuildOptions {
    double bucket_params;   /* DP gradient bucket in parameters; 0: Megatron max(4e7, 1e6 x dp*cp) */
    int grad_bytes;         /* bytes per gradient element reduced over DP, 4 (fp32 main grads) */
    bool param_gather_at_step; /* dist-opt / ZeRO-1/2: all-gather the updated parameters after
                               the optimizer step (exposed). false (Megatron
                               --overlap-param-gather, the simulator's default): the gathers
                               open the iteration, one per layer, and each layer's first
                               forward waits only for its own */
    WlCpComm cp_comm;       /* context-parallel K/V exchange, WL_CP_P2P */
    bool dp_after_backward; /* every gradient bucket reduced after the stage's last backward
                               (Megatron 2021, simulate --no-dp-overlap); false: each bucket
                               as soon as it is full, under the backward */
    bool fp32_grad_accum;   /* BF16 optimizer: each micro-batch's bf16 gradients added into
                               fp32 ones after its backward (20 B per parameter) */
    double shampoo_s_per_param; /* Distributed Shampoo's preconditioning, seconds per stage
                               parameter before the split over DP (sim_shampoo_s_per_param) */
    double optimizer_bytes; /* HBM bytes per local parameter of the optimizer step; 0: 24, the
                               simulator's SimOptions.optimizer_bytes_per_param */
    bool selective_ops;     /* selective recompute as op-level SAC (simulate --selective-ops):
                               every second matmul (wk, wo, w3 / fc2) and every non-matmul op
                               of dense layers again in backward */
    bool sequential_experts; /* routed experts one GEMM each, one after another (simulate
                               --sequential-experts, Megatron's SequentialMLP); false: one
                               grouped GEMM over the local experts */
    double pair_sm_share;   /* dualpipe, dualpipev, 1f1b-a2a: the SMs' share the communication
                               kernels hold while an F&B pair runs (simulate --pair-sm-share,
                               sim_pair_s), e.g. 20/132; 0: the pair's compute runs at full speed */
    const HwNet *net;       /* the network the collectives an F&B pair runs on its compute stream
                               are timed on (wl_coll_time_s, as the replay times them), for their
                               share of the pair's SM slow-down; NULL: the pair's kernels alone
                               are slowed (not owned) */
} WlBuildOptions;
/* The full per-stage task DAG: layers with TP/SP/CP/EP collectives, PP
 * send/recv in schedule order, bucketed gradient reduction over DP (DP x CP
 * when cp > 1) overlapped with the last backward, the tied word-embedding
 * gradient all-reduce between the first and last stage (pp > 1), optimizer
 * step (Shampoo preconditioners + gather). */
TsStatus wl_build(const WlStep *s, const WlBuildOptions *o, Workload **out, TsError *err);

/* The per-operator table of a model as NeuSight traces it: the torch.fx
 * nodes of the HuggingFace model of its family (GPT-2 for gpt; LlamaForCausalLM
 * for llama and qwen, with Mixtral / Qwen3-MoE blocks where the spec has
 * experts; BertForPreTraining or BertForMaskedLM for bert), one block per
 * layer. Every row is costed by hw.h (hw_op_time_s on a GraphOp of the row's
 * kind) at the plan's dtype. neusight = reproduce the GPT-2 seed's size
 * quirks (wte grad S*H, lm_head bias) and its MEM-row formula, bytes /
 * (Mem_Bw * 2^30) with Mem_Bw = the GPU's HBM GB/s. Needs dp or tp or pp
 * alone, like NeuSight; no cp, no ep, etp = tp. Other families (gpt_neox,
 * deepseek) and multi-head latent attention: TS_ERR_USAGE. */
typedef struct WlOptableOptions {
    bool neusight;          /* keep the GPT-2 seed's size quirks; MEM rows by NeuSight's formula */
} WlOptableOptions;
TsStatus wl_build_optable(const ModelSpec *m, const ParallelPlan *p, const HwModel *hw,
                          const WlOptableOptions *o, Workload **out, TsError *err);

#endif
