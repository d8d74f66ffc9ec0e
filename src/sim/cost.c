/*
 * cost.c — from (model, plan, hardware) to per-(stage, chunk) task costs,
 * then the schedule engine, then metrics (sim.h layer 2). One layer's costs
 * (and the layer-cost cache) are layer_cost.c's; the chunks, their DP
 * reduction and each rank's step are chunk.c's; this file sets up the
 * context, runs the engine and turns its result into metrics, memory and
 * warnings.
 *
 * Legend: L layers, H hidden, A heads, G kv heads, D head dim, F ffn,
 * V padded vocab, E experts, K top-k, B micro-batch, S seq, t TP, c CP.
 * T = B*S/c tokens of one micro-batch on one GPU (before SP splitting);
 * Tsp = T/t under sequence parallelism (norms, dropout, residuals).
 *
 * Each distinct layer kind (dense, MoE) is costed ONCE per plan with the hw
 * model (hw_gemm_time_s, hw_attention_time_s, hw_memory_time_s per kernel)
 * and the collective model (hw_coll_time_s, hw_p2p_time_s,
 * hw_alltoall_time_s); chunks are sums of layers plus the
 * embedding (first chunk) and LM head + loss (last chunk).
 *
 * Overlap rules (docs/simulate.md):
 *   TP  exposed unless plan.tp_overlap; then hidden up to the layer's GEMM
 *       time, and the hidden part slows compute by opt.overlap_slowdown.
 *   CP  K/V ring steps hidden under the attention core (exposed remainder).
 *   EP  all-to-all dispatch + combine exposed (fwd 2, bwd 2 per MoE layer).
 *   PP  activation send per micro-batch and chunk: dependency delay in the
 *       schedule (SP-sharded tensor, Megatron scatter/gather).
 *   DP  per-chunk gradient reduce in buckets under the last backward
 *       (schedule.c); dist-opt / ZeRO-1/2: reduce-scatter + parameter
 *       all-gather after the step (hidden under the next forward when
 *       opt.param_gather_overlap); ZeRO-3: per-layer gathers and reduces
 *       every micro-batch, hidden under the layer's compute where they fit.
 *   Recompute: selective = attention core forward again; full = the whole
 *       layer forward again, including its TP/CP/EP forward communication.
 *   Optimizer: HBM bytes per local parameter (sim_optimizer_bytes) over HBM;
 *       Shampoo adds preconditioner GEMM work spread over DP ranks.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost_int.h"
#include "trainsim/partition.h"

void sim_options_init(SimOptions *o)
{
    memset(o, 0, sizeof *o);
    o->dp_overlap = true;           /* Megatron --overlap-grad-reduce; PyTorch DDP/FSDP default */
    o->param_gather_overlap = true; /* Megatron --overlap-param-gather (NeMo recipes) */
    o->bucket_bytes = 0;            /* Megatron-Core's rule, sim_dp_bucket_bytes */
    o->fp32_grad_reduce = true;     /* Megatron accumulate_allreduce_grads_in_fp32 (bf16 runs) */
    /* calibration_facts.md section 5: Lee et al. measure 18.9 % mean compute
     * slow-down under overlap with SM-driven collectives on 4 GPUs; Calculon
     * uses 0.15 for NVLink and 0.02 for IB. Our overlapped traffic is mostly
     * NIC-bound DP buckets and TE TP overlap on few SMs: 0.10. */
    o->overlap_slowdown = 0.10;
    o->host_s[0] = COST_HOST_FWD_S, o->host_s[1] = COST_HOST_BWD_S;
    o->pair_sm_share = 20.0 / 132.0;
    /* calibration_facts.md section 6: fused Adam moves ~16-18 B per parameter
     * (fp32 master, m, v read+written, bf16 param written, grad read) plus
     * the grad-norm read and the zeroing of the fp32 grad buffer: 24 B. */
    o->optimizer_bytes_per_param = 24;
    /* calibration_facts.md section 0: "5 %+ MAMF spread between GPUs" of one
     * node (persistent chip-to-chip variation). The microbenchmarks time one
     * typical GPU; a synchronous job runs at the pace of its slowest GPU. */
    o->gpu_spread = 0.05;
    o->cp_comm = SIM_CP_P2P; /* Megatron / Transformer Engine default cp_comm_type "p2p" */
}

double sim_dp_bucket_bytes(const SimOptions *o, int64_t dp_size)
{
    if (o->bucket_bytes > 0) return o->bucket_bytes;
    /* megatron/core/distributed/distributed_data_parallel.py: bucket_size =
     * max(40000000, 1000000 * data-parallel world size) elements */
    return fmax(4e7, 1e6 * (double)dp_size) * (o->fp32_grad_reduce ? 4.0 : 2.0);
}

TS_ENUM_NAMES(sim_cp_comm, SimCpComm, SIM_CP_COMM_LIST, SIM_CP_COMM_COUNT)
TS_ENUM_PARSE(sim_cp_comm, SimCpComm, SIM_CP_COMM_COUNT)
TS_ENUM_NAMES(sim_ce_fusion, SimCeFusion, SIM_CE_FUSION_LIST, SIM_CE_FUSION_COUNT)
TS_ENUM_PARSE(sim_ce_fusion, SimCeFusion, SIM_CE_FUSION_COUNT)

TsStatus sim_cp_comm_check(const ModelSpec *m, const ParallelPlan *p, SimCpComm c, TsError *err)
{
    if (p->cp <= 1 || c != SIM_CP_A2A) return TS_OK;
    int64_t ah = m->heads / p->tp, gh = (m->kv_lora_rank > 0 ? m->heads : m->kv_heads) / p->tp;
    if (ah % p->cp == 0 && gh >= 1 && gh % p->cp == 0) return TS_OK;
    ts_err(err, TS_ERR_PLAN, "--cp-comm a2a splits the heads over --cp %lld: %lld query and %lld key/value heads per TP rank",
           (long long)p->cp, (long long)ah, (long long)gh);
    ts_err_hint(err, "the all-to-all (Ulysses) needs both divisible by cp: use --cp-comm p2p or allgather, "
                     "or a cp that divides them");
    return TS_ERR_PLAN;
}


/* Slow-down of the slowest of n GPUs against a typical one, when the spread
 * (max - min) among the 8 GPUs of a node is `spread`: chip speeds ~ normal,
 * the range of 8 samples is ~2.85 sigma, the slowest of n lies
 * sigma * sqrt(2 ln n) below the mean. 8 GPUs: 3.6 %, 64: 5.0 %, 1024: 6.5 %
 * at spread 0.05. */
double sim_straggler(double spread, int64_t n)
{
    if (n <= 1 || !(spread > 0)) return 0;
    return spread / 2.85 * sqrt(2.0 * log((double)n));
}

TsDtype sim_activation_dtype(TsDtype dt) { return dt == TS_DTYPE_FP8 ? TS_DTYPE_BF16 : dt; }

double sim_optimizer_bytes(const SimOptions *o, const ParallelPlan *p)
{
    /* PyTorch's fused AdamW (multi_tensor_apply) moves 28 B per fp32
     * parameter (p, m, v read and written, the gradient read) and 14 B at
     * 16 bit, but at a fixed number of elements per thread and iteration:
     * the measured steps (bench/data/gpu: opt_ms of the HF rows, H100 and
     * H200) reach 0.9 of the streaming rate in fp32 and 0.74 in bf16, i.e.
     * 31 and 19 streaming bytes */
    if (p->precision == PLAN_PRECISION_AMP) return 31.0;
    if (p->precision == PLAN_PRECISION_PURE) return 19.0;
    /* bf16 moments: m and v read and written at 2 B instead of 4 */
    if (p->adam_moments == TS_DTYPE_BF16) return o->optimizer_bytes_per_param - 8.0;
    return o->optimizer_bytes_per_param;
}

void sim_mem_options(const SimOptions *o, TsDtype dt, PartMemOptions *mo)
{
    /* Megatron's grad buffer has the reduction dtype (grad_reduce_in_fp32) */
    TsDtype adt = sim_activation_dtype(dt);
    mo->grad_bytes = o->fp32_grad_reduce ? 4.0 : (double)ts_dtype_bytes(adt);
    mo->selective_ops = o->selective_ops;
    mo->grads_freed = o->grads_freed;
    mo->ce_fusion = (int)o->ce_fusion;
}

bool sim_cuda_graphs(const SimOptions *o, const ParallelPlan *p, bool moe, const char **why)
{
    const char *w = NULL;
    if (!o->cuda_graphs) return false;
    if (p->framework != PLAN_FRAMEWORK_MEGATRON) w = "only Megatron-Core captures its layers (--cuda-graph-impl)";
    else if (p->recompute != PLAN_RECOMPUTE_NONE) w = "Megatron-Core captures no layer under activation recompute";
    else if (moe && p->moe_dispatch == PLAN_MOE_DISPATCH_DEEPEP) w = "DeepEP's dispatch cannot be captured";
    else if (moe && !(p->moe_capacity > 0))
        w = "dropless MoE layers have dynamic shapes: give --moe-capacity-factor and --moe-pad-to-capacity";
    else if (moe && !p->moe_pad)
        w = "MoE layers without padding to capacity have dynamic shapes: give --moe-pad-to-capacity";
    if (why) *why = w;
    return w == NULL;
}

void sim_cost_ctx(CostCtx *c, const HwModel *hw, const ParallelPlan *p, const SimOptions *o, double tf,
                  const HwNet *net)
{
    cost_ctx_init(c, hw, p, tf);
    cost_ctx_host(c, o->host_s);
    if (net) {
        PlanGroupInfo epg;
        plan_group(p, PLAN_GROUP_EP, 0, net->cl.gpus_per_node, &epg);
        cost_ctx_net(c, net, epg.nodes);
    }
    /* a dense layer has no host time to remove; an MoE one only where its
     * shapes are static (sim_cuda_graphs with moe) */
    if (sim_cuda_graphs(o, p, true, NULL)) {
        memset(c->host_s, 0, sizeof c->host_s);
        c->host_sync = false;
    }
}

bool sim_host_in_loop(const SimOptions *o, const ParallelPlan *p, const ModelSpec *m)
{
    return plan_hf(p) ||
           (p->framework == PLAN_FRAMEWORK_MEGATRON && m->experts > 0 && !sim_cuda_graphs(o, p, true, NULL));
}

bool sim_host_default(const SimOptions *o)
{
    return o->host_s[0] == COST_HOST_FWD_S && o->host_s[1] == COST_HOST_BWD_S;
}

double sim_sm_clock_mhz(const GpuSpec *g, int64_t gpus)
{
    /* one GPU alone holds a higher clock than a node of them at the cap */
    return gpus == 1 && g->single_clock_mhz > 0 ? g->single_clock_mhz : hw_sustained_clock_mhz(g);
}

double sim_tensor_factor(const GpuSpec *g, const SimOptions *o, int64_t gpus)
{
    double clk = sim_sm_clock_mhz(g, gpus);
    double f = clk > 0 && g->clock_mhz > 0 ? g->clock_mhz / clk : 1.0;
    return f * (1.0 + sim_straggler(o->gpu_spread, gpus));
}

double sim_shampoo_s_per_param(const HwModel *hw, const ModelSpec *m, const ParallelPlan *p)
{
    if (p->optimizer != PLAN_OPTIM_SHAMPOO) return 0;
    /* apply L^-1/4 G R^-1/4 on blocks of side bs: 4*P*bs FLOPs per step;
     * root (eigendecomposition ~10 n^3 per factor) every 100 steps: 0.2*P*bs;
     * fp32 GEMMs of side bs */
    double bs = (double)m->hidden / (double)(p->shampoo_blocks > 0 ? p->shampoo_blocks : 1);
    int64_t n = (int64_t)bs;
    if (n < 1) return 0;
    double one = hw_gemm_time_s(hw, 1, n, n, n, TS_DTYPE_FP32);
    return one * 4.2 * bs / (2.0 * (double)n * (double)n * (double)n);
}

/* A warning as its figures (SimWarning); text: a name or reason it quotes, or NULL. */
static void warn(SimResult *r, SimWarnKind kind, double a, double b, int64_t i, int64_t j, const char *text)
{
    if (r->n_warnings >= SIM_MAX_WARNINGS) return;
    SimWarning *w = &r->warnings[r->n_warnings++];
    w->kind = kind, w->a = a, w->b = b, w->i = i, w->j = j;
    snprintf(w->text, sizeof w->text, "%.*s", (int)sizeof w->text - 1, text ? text : "");
}

TsStatus sim_setup_resolve(SimSetup *in, TsError *err)
{
    const ModelSpec *m = in->model;
    ParallelPlan *p = &in->plan;
    TsStatus st = plan_resolve(m, p, err);
    if (st) return st;
    if (p->cp > 1 && p->seq % p->cp)
        return ts_err(err, TS_ERR_PLAN, "--seq %lld is not a multiple of --cp %lld", (long long)p->seq, (long long)p->cp);
    if ((st = sim_cp_comm_check(m, p, in->opt.cp_comm, err))) return st;
    if (in->opt.ce_fusion != SIM_CE_NONE && p->framework != PLAN_FRAMEWORK_MEGATRON) {
        ts_err(err, TS_ERR_PLAN, "--ce-fusion %s is Megatron-Core's loss; --framework %s runs its own",
               sim_ce_fusion_name(in->opt.ce_fusion), plan_framework_name(p->framework));
        ts_err_hint(err, "drop --ce-fusion, or use --framework megatron");
        return TS_ERR_PLAN;
    }
    if (plan_ds_pipe(p) && (p->vpp > 1 || p->schedule != PLAN_SCHED_1F1B)) {
        ts_err(err, TS_ERR_PLAN, "--deepspeed-pipe runs DeepSpeed's 1F1B schedule only (got %s, vpp %lld)",
               plan_sched_name(p->schedule), (long long)p->vpp);
        ts_err_hint(err, "DeepSpeed's PipelineEngine (TrainSchedule) has no interleaved or GPipe schedule: drop "
                         "--schedule and --vpp");
        return TS_ERR_PLAN;
    }
    if (plan_ds_pipe(p) && (p->zero >= 2 || p->dist_opt)) {
        ts_err(err, TS_ERR_PLAN, "--deepspeed-pipe takes ZeRO stage 0 or 1 (got %s)",
               p->dist_opt ? "--dist-opt" : p->zero == 2 ? "--zero 2" : "--zero 3");
        ts_err_hint(err, "DeepSpeed's PipelineEngine asserts that ZeRO-2 and ZeRO-3 are incompatible with pipeline "
                         "parallelism; its ZeRO-1 shards the optimizer state (--zero 1)");
        return TS_ERR_PLAN;
    }
    if (plan_ds_pipe(p) && p->tp_overlap) {
        ts_err(err, TS_ERR_PLAN, "--deepspeed-pipe has no TP communication overlap (got --tp-overlap)");
        ts_err_hint(err, "Megatron-DeepSpeed runs its TP all-reduces / reduce-scatters on the compute stream; "
                         "the overlapped GEMMs (Transformer Engine userbuffers) are Megatron-Core's: drop --tp-overlap");
        return TS_ERR_PLAN;
    }
    return TS_OK;
}

/* One layer's work per micro-batch on its stage (what SimChunkCost sums). */
static double layer_work(const LayerCost *c)
{
    return c->fwd + c->bwd + c->recompute + c->tp_f + c->tp_b + c->cp_f + c->cp_b + c->ep_f + c->ep_b +
           c->slow;
}

/* The split that evens the stages' work (vpp 1), kept in out->balance when
 * it lowers the busiest stage by more than 2 % (sim_balance_layers). */
static void balance(const ModelSpec *m, const ParallelPlan *p, const LayerCost *dense, const LayerCost *moe,
                    const double *edge, const SimChunkCost *cc, SimResult *out)
{
    if (p->vpp != 1 || p->pp < 2 || p->pp > SIM_BALANCE_MAX || m->layers < p->pp) return;
    SimRun stack[256], *r = m->layers <= 256 ? stack : malloc((size_t)m->layers * sizeof *r);
    if (!r) return;
    double wd = layer_work(dense), wm = m->experts > 0 ? layer_work(moe) : wd;
    int32_t nr = 0;
    if (m->experts > 0)
        for (int64_t l = 0; l < m->layers; l++) sim_run_push(r, &nr, model_layer_is_moe(m, l) ? wm : wd);
    else
        r[nr++] = (SimRun){.w = wd, .n = m->layers}; /* a dense model: one run */
    double first_x = edge[SIM_E_EMB_F] + edge[SIM_E_EMB_B] + edge[SIM_E_EMB_TP_F] + edge[SIM_E_EMB_TP_B];
    double last_x = edge[SIM_E_HEAD_F] + edge[SIM_E_HEAD_B] + edge[SIM_E_HEAD_TP_F] + edge[SIM_E_HEAD_TP_B] +
                    (double)m->mtp_layers * wm;
    double cur = 0;
    for (int32_t s = 0; s < p->pp; s++) {
        const SimChunkCost *c = &cc[s];
        double x = c->compute_fwd_s + c->compute_bwd_s + c->recompute_s + c->tp_exposed_s + c->cp_exposed_s +
                   c->ep_exposed_s + c->fsdp_exposed_s + c->slowdown_s;
        if (x > cur) cur = x;
    }
    SimBalance b;
    if (sim_balance_runs(r, nr, p->pp, first_x, last_x, 0.98 * cur, &b)) {
        b.current_s = cur;
        if (b.busiest_s < 0.98 * cur) out->balance = b;
    }
    if (r != stack) free(r);
}

/* The result outlives the work it was run in (sim_simulate without a
 * SimWork): copy what it keeps, then destroy the work. On failure the
 * result is cleared. */
static TsStatus keep_result(SimWork *w, int32_t pp, SimResult *out, TsError *err)
{
    SimResult tmp = *out;
    SimStageResult *stages = malloc((size_t)pp * sizeof *stages);
    SimSpan *spans = tmp.n_spans ? malloc((size_t)tmp.n_spans * sizeof *spans) : NULL;
    if (!stages || (tmp.n_spans && !spans)) {
        free(stages);
        free(spans);
        sim_work_destroy(w);
        memset(out, 0, sizeof *out);
        return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    }
    memcpy(stages, tmp.stages, (size_t)pp * sizeof *stages);
    if (spans) memcpy(spans, tmp.spans, (size_t)tmp.n_spans * sizeof *spans);
    out->stages = stages;
    out->spans = spans;
    out->owned = true;
    sim_work_destroy(w);
    return TS_OK;
}

/* The step's rates from its time: tokens, samples, FLOPs (fl_token and
 * rfl_token: model and recompute FLOPs per token of the whole model),
 * MFU / HFU, and the host's waits. */
static void result_metrics(const SimSetup *in, double fl_token, double rfl_token, const double edge[SIM_EDGES],
                           SimResult *out)
{
    const ParallelPlan *p = &in->plan;
    double T = out->iteration_time_s, tokens = (double)p->global_batch * (double)p->seq;
    double gpus = (double)p->gpus;
    out->tokens_per_s = tokens / T;
    out->tokens_per_s_per_gpu = out->tokens_per_s / gpus;
    out->samples_per_s = (double)p->global_batch / T;
    /* fl_token summed the layers of every chunk once: it is the whole model */
    out->model_flops_per_iteration = 3.0 * fl_token * tokens;
    out->hardware_flops_per_iteration = out->model_flops_per_iteration + rfl_token * tokens;
    /* the whole model's per micro-batch (--framework hf: one stage; a
     * pipeline stage of Megatron-Core's MoE layers about 1/pp of it); the
     * optimizer's host loop once a step */
    out->host_wait_s = edge[SIM_E_HOST_WAIT] * (double)p->grad_accum / (double)p->pp;
    out->host_wait_optimizer_s = edge[SIM_E_HOST_OPT];
    const TsDtype gdt = hw_usable_dtype(&in->hw->gpu, p->dtype); /* fp8 on an A100: bf16 */
    double peak = in->hw->gpu.peak_flops[gdt];
    out->model_tflops_per_gpu = out->model_flops_per_iteration / T / gpus / 1e12;
    out->hardware_tflops_per_gpu = out->hardware_flops_per_iteration / T / gpus / 1e12;
    out->mfu = out->model_tflops_per_gpu * 1e12 / peak;
    out->hfu = out->hardware_tflops_per_gpu * 1e12 / peak;

}

/* The most loaded stage's memory (partition.h) against the GPU's, or why
 * it could not be counted. */
static void result_memory(const SimSetup *in, SimResult *out)
{
    const ModelSpec *m = in->model;
    const ParallelPlan *p = &in->plan;
    PartMemOptions mo;
    part_mem_options_init(&mo);
    mo.capacity_bytes = in->hw->gpu.hbm_bytes;
    sim_mem_options(&in->opt, p->dtype, &mo);
    PartMemory pk;
    TsError merr; /* only its message is read (not zeroed whole: a plan's costing runs this) */
    merr.msg[0] = '\0';
    if (part_memory(m, p, &mo, NULL, &pk, &merr) == TS_OK) {
        SimMemory *sm = &out->memory;
        sm->weights_bytes = pk.weights_bytes;
        sm->gradients_bytes = pk.gradients_bytes;
        sm->optimizer_bytes = pk.optimizer_bytes;
        sm->activations_bytes = pk.activations_bytes;
        sm->other_bytes = pk.other_bytes;
        sm->total_bytes = pk.total_bytes;
        sm->capacity_bytes = in->hw->gpu.hbm_bytes;
        sm->min_headroom_bytes = in->opt.min_headroom_bytes;
        double lim = sm->capacity_bytes - sm->min_headroom_bytes;
        sm->fits = sm->capacity_bytes <= 0 || sm->total_bytes <= lim;
        if (!sm->fits) warn(out, SIM_WARN_NO_FIT, sm->total_bytes / 1073741824.0, lim / 1073741824.0, pk.stage, 0, NULL);
    } else {
        warn(out, SIM_WARN_NO_MEMORY, 0, 0, 0, 0, merr.msg);
    }
}

void sim_fit_alternatives(const SimSetup *in, SimResult *out)
{
    if (out->memory.fits || out->memory.capacity_bytes <= 0) return;
    PartMemOptions mo;
    part_mem_options_init(&mo);
    mo.capacity_bytes = out->memory.capacity_bytes - out->memory.min_headroom_bytes;
    sim_mem_options(&in->opt, in->plan.dtype, &mo);
    PartFitAlt alt[2];
    int n = part_fit_alternatives(in->model, &in->plan, &mo, alt, 2);
    part_fit_hint(&in->plan, alt, n, out->memory.fit_hint, sizeof out->memory.fit_hint);
}

/* What the plan should know: memory, tensor cores, bubbles, groups across
 * nodes, options with nothing to act on, the host. */
static void result_warnings(const SimSetup *in, const Ctx *x, SimResult *out)
{
    const ModelSpec *m = in->model;
    const ParallelPlan *p = &in->plan;
    const TsDtype gdt = hw_usable_dtype(&in->hw->gpu, p->dtype); /* fp8 on an A100: bf16 */
    if (gdt != p->dtype)
        warn(out, SIM_WARN_NO_TENSOR_CORES, 0, 0, p->dtype, gdt, in->hw->gpu.name);
    if (p->pp > 1 && p->grad_accum < p->pp)
        warn(out, SIM_WARN_FEW_MB, out->bubble_fraction, 0, p->grad_accum, p->pp, NULL);
    else if (out->bubble_fraction > 0.25) {
        /* the schedule's own fill and drain; beyond that, stages wait for slower ones */
        double fill = sim_fill_drain_fraction(p);
        if (out->bubble_fraction > 2 * fill)
            warn(out, SIM_WARN_BUBBLE_SLOW, out->bubble_fraction, fill, out->slowest_stage, 0, NULL);
        else
            warn(out, SIM_WARN_BUBBLE, out->bubble_fraction, 0, plan_ds_pipe(p), 0, NULL);
    }
    if (out->balance.n) warn(out, SIM_WARN_BALANCE, 0, 0, 0, 0, NULL);
    if (x->tpg.nodes > 1)
        warn(out, SIM_WARN_TP_NODES, 0, 0, x->tpg.size, x->tpg.nodes, NULL);
    if (p->tp > 1 && p->tp_overlap && in->net && in->net->cl.scaleup_link == HW_LINK_PCIE)
        warn(out, SIM_WARN_TP_OVERLAP_PCIE, 0, 0, 0, 0, in->net->cl.name);
    if (p->cp > 1 && x->cpg.nodes > 1)
        warn(out, SIM_WARN_CP_NODES, 0, 0, x->cpg.nodes, 0, NULL);
    if (p->ep > 1 && x->epg.nodes > 1)
        warn(out, SIM_WARN_EP_NODES, 0, 0, x->epg.nodes, 0, NULL);
    /* runtime options this plan gives nothing to act on */
    if (in->opt.sequential_experts && m->experts == 0)
        warn(out, SIM_WARN_SEQ_EXPERTS, 0, 0, 0, 0, m->name);
    if (in->opt.selective_ops && p->recompute != PLAN_RECOMPUTE_SELECTIVE)
        warn(out, SIM_WARN_SELECTIVE_OPS, 0, 0, 0, 0, NULL);
    if (in->opt.cp_comm != SIM_CP_P2P && p->cp == 1)
        warn(out, SIM_WARN_CP_COMM, 0, 0, in->opt.cp_comm, 0, NULL);
    bool host = sim_host_in_loop(&in->opt, p, m), mcore_host = host && !plan_hf(p);
    if (!sim_host_default(&in->opt) && !host) warn(out, SIM_WARN_HOST_US, 0, 0, 0, 0, NULL);
    if (in->opt.grads_freed && !plan_hf(p)) warn(out, SIM_WARN_GRADS_FREED, 0, 0, 0, 0, NULL);
    /* a step the host holds back by a tenth or more (the threshold of a
     * warning worth acting on, as the bubble's) */
    if (mcore_host && out->iteration_time_s > 0 && out->host_wait_s >= 0.1 * out->iteration_time_s)
        warn(out, SIM_WARN_MOE_HOST, out->host_wait_s / out->iteration_time_s, 0, 0, 0, NULL);
    const char *graphs_why = NULL;
    if (in->opt.cuda_graphs && !sim_cuda_graphs(&in->opt, p, m->experts > 0, &graphs_why))
        warn(out, SIM_WARN_CUDA_GRAPHS, 0, 0, 0, 0, graphs_why);
    if (in->hw->gpu.software == HW_SOFTWARE_2024 && !hw_gpu_has_2024(&in->hw->gpu))
        warn(out, SIM_WARN_SOFTWARE, 0, 0, 0, 0, in->hw->gpu.name);
    /* the experts' FP32 path under amp (template_hf.c, hf_experts) */
    if (plan_hf(p) && p->precision == PLAN_PRECISION_AMP && m->experts > 0)
        warn(out, SIM_WARN_FP32_EXPERTS, 0, 0, 0, 0, NULL);
}

/* The costing context of a resolved plan: its dtypes, token counts per
 * micro-batch and its groups' sizes and spans over nodes. */
static void sim_ctx_of(const SimSetup *in, Ctx *x)
{
    const ModelSpec *m = in->model;
    const ParallelPlan *p = &in->plan;
    *x = (Ctx){.m = m, .p = p, .hw = in->hw, .net = in->net, .o = &in->opt};
    x->dt = p->dtype;
    x->adt = sim_activation_dtype(p->dtype);
    x->ab = (double)ts_dtype_bytes(x->adt);
    const GpuSpec *g = &in->hw->gpu;
    x->tc = sim_tensor_factor(g, &in->opt, p->gpus);
    x->t = p->tp;
    x->B = p->micro_batch;
    x->S = p->seq;
    x->Sl = p->seq / p->cp;
    x->T = x->B * x->Sl;
    x->Tsp = p->sp ? x->T / p->tp : x->T;
    x->gated = model_act_gated(m->act);
    int64_t gpn = in->net->cl.gpus_per_node;
    plan_group(p, PLAN_GROUP_TP, 0, gpn, &x->tpg);
    plan_group(p, PLAN_GROUP_CP, 0, gpn, &x->cpg);
    plan_group(p, PLAN_GROUP_EP, 0, gpn, &x->epg);
    plan_group(p, plan_fsdp_group(p), 0, gpn, &x->dpg);
    plan_group(p, PLAN_GROUP_EDP, 0, gpn, &x->edpg);
    if (plan_dp_replicas(p) > 1) plan_group(p, PLAN_GROUP_REPLICATE, 0, gpn, &x->rpg);
    else x->rpg = (PlanGroupInfo){.size = 1, .nodes = 1, .per_node = 1};
    plan_group(p, PLAN_GROUP_PP, 0, gpn, &x->ppg);
}

/* sim_simulate, or with lb != NULL sim_lower_bound: stop after the costing. */
static TsStatus simulate(SimSetup *in, SimWork *wk, SimResult *out, double *lb, TsError *err)
{
    sim_result_clear(out);
    const ModelSpec *m = in->model;
    ParallelPlan *p = &in->plan;
    TsStatus st = sim_setup_resolve(in, err);
    if (st) return st;
    Ctx x;
    sim_ctx_of(in, &x);

    SimWork *w = wk ? wk : sim_work_create();
    if (!w) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    LayerCost dense, moe;
    bool has_moe = m->experts > 0;
    double edge[SIM_EDGES];
    sim_layer_costs(&x, w, &dense, &moe, edge);
    /* --recompute-layers k: the layers past the first k of a chunk keep their
     * activations (no recompute) */
    LayerCost dense_nr_s, moe_nr_s; /* filled only with --recompute-layers */
    const LayerCost *dense_nr = &dense, *moe_nr = &moe;
    const bool partial_rc = p->recompute == PLAN_RECOMPUTE_FULL && p->recompute_layers > 0;
    if (partial_rc) {
        ParallelPlan pn = *p;
        pn.recompute = PLAN_RECOMPUTE_NONE;
        pn.recompute_layers = 0;
        Ctx xn = x;
        xn.p = &pn;
        double edge_nr[SIM_EDGES];
        sim_layer_costs(&xn, w, &dense_nr_s, &moe_nr_s, edge_nr);
        dense_nr = &dense_nr_s, moe_nr = &moe_nr_s;
    }
    /* v model chunks per rank (vpp); the engine runs ve per rank: dualpipe's
     * second copy of the stage (plan_rank_chunks) */
    const int32_t pp = (int32_t)p->pp, ve = (int32_t)plan_rank_chunks(p);
    SimStageCost *sc = NULL;
    SimChunkCost *cc = sim_work_costs(w, pp * ve, pp, &sc);
    double fl_token = 0, rfl_token = 0; /* model / recompute FLOPs per token, whole model */
    const SimChunkIn ci = {.in = in, .dense = &dense, .moe = has_moe ? &moe : NULL, .dense_nr = dense_nr,
                           .moe_nr = has_moe ? moe_nr : NULL, .edge = edge, .cc = cc, .sc = sc};
    st = cc ? sim_assemble_chunks(&x, &ci, &fl_token, &rfl_token, err) : ts_err(err, TS_ERR_INTERNAL, "out of memory");
    if (st) {
        if (!wk) sim_work_destroy(w);
        return st;
    }
    SimPipeline pl = {.stages = pp, .chunks = ve, .micro_batches = p->grad_accum, .schedule = p->schedule,
                      .group = plan_interleaved(p) ? plan_vpp_group(p) : 0,
                      .pair_sm_share = in->opt.pair_sm_share,
                      .chunk = cc, .stage = sc, .dp_overlap = in->opt.dp_overlap && !plan_ds_pipe(p),
                      .dp_shared = sim_rs_timeline(p),
                      .param_gather_overlap = in->opt.param_gather_overlap && !plan_ds_pipe(p),
                      .overlap_slowdown = in->opt.overlap_slowdown, .ds_pipe = plan_ds_pipe(p) && pp > 1,
                      .record = in->opt.record};
    if (lb) { /* sim_lower_bound: the engine's bound on these costs, no run */
        *lb = sim_pipeline_lower_bound(&pl);
        if (!wk) sim_work_destroy(w);
        return TS_OK;
    }
    st = sim_pipeline_run(&pl, w, out, err);
    if (st) {
        if (!wk) sim_work_destroy(w);
        return st;
    }
    balance(m, p, &dense, &moe, edge, cc, out);
    if (!wk && (st = keep_result(w, pp, out, err))) return st;

    result_metrics(in, fl_token, rfl_token, edge, out);
    result_memory(in, out);
    result_warnings(in, &x, out);
    return TS_OK;
}


/* --balance-stages: the plan again on its even split (SimResult.balance),
 * kept when it is faster and fits (or the plan's own split does not). */
static TsStatus rebalance(SimSetup *in, SimWork *w, SimResult *out, TsError *err)
{
    SimBalance b = out->balance;
    double t0 = out->iteration_time_s;
    bool fit0 = out->memory.fits;
    for (int32_t s = 0; s < b.n; s++) in->stage_buf[s] = b.layers[s];
    in->plan.stage_layers = in->stage_buf;
    in->plan.n_stage_layers = b.n;
    sim_result_free(out);
    TsStatus st = simulate(in, w, out, NULL, err);
    if (st == TS_OK && out->iteration_time_s < t0 && (out->memory.fits || !fit0)) {
        out->balance = b;
        return TS_OK;
    }
    if (st == TS_OK) sim_result_free(out);
    in->plan.stage_layers = NULL;
    in->plan.n_stage_layers = 0;
    return simulate(in, w, out, NULL, err);
}

TsStatus sim_simulate(SimSetup *in, SimWork *w, SimResult *out, TsError *err)
{
    bool own_split = in->plan.n_stage_layers > 0;
    TsStatus st = simulate(in, w, out, NULL, err);
    if (st != TS_OK || !in->opt.balance_stages || own_split || !out->balance.n) return st;
    return rebalance(in, w, out, err);
}

TsStatus sim_lower_bound(SimSetup *in, SimWork *w, double *lower_bound_s, TsError *err)
{
    SimResult r;
    *lower_bound_s = 0;
    return simulate(in, w, &r, lower_bound_s, err);
}
