/* kernels.c — a layer template's kernels in seconds (cost.h). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "trainsim/cost.h"

void cost_ctx_init(CostCtx *c, const HwModel *hw, const ParallelPlan *p, double tensor_factor)
{
    bool hf = plan_hf(p), mc = p->framework == PLAN_FRAMEWORK_MEGATRON, h = hf || mc;
    double f = hf ? 1.0 : COST_HOST_MCORE;
    *c = (CostCtx){.hw = hw, .dtype = p->dtype, .act_dtype = p->dtype == TS_DTYPE_FP8 ? TS_DTYPE_BF16 : p->dtype,
                   .tensor_factor = tensor_factor,
                   .host_s = {{h ? f * COST_HOST_FWD_S : 0, h ? f * COST_HOST_BWD_S : 0},
                              {h ? f * COST_HOST_INNER_FWD_S : 0, h ? f * COST_HOST_INNER_BWD_S : 0},
                              {h ? COST_HOST_LOOP_S : 0, h ? COST_HOST_LOOP_S : 0}},
                   .host_mod_s = {hf ? COST_HOST_MODULE_FWD_S : 0, hf ? COST_HOST_MODULE_BWD_S : 0},
                   .host_opt_s = hf ? COST_HOST_OPT_TENSOR_S : 0,
                   /* token drop padded to capacity: static shapes, no sync */
                   .host_sync = mc && !(p->moe_capacity > 0 && p->moe_pad),
                   .fp8 = p->fp8_recipe, .fp8_non_tn = !strcmp(hw->gpu.arch, "blackwell"),
                   .ub_tp = p->tp_overlap && p->tp > 1 ? p->tp : 1, .ub_stretch = {1, 1}};
    int64_t sms = hw->gpu.sm_count;
    if (p->tp_overlap && p->tp > 1 && p->dtype != TS_DTYPE_FP8 && sms > COST_UB_PROJ_SMS) {
        c->ub_stretch[0] = 1.0 + COST_UB_BETA * COST_UB_PROJ_SMS / (double)(sms - COST_UB_PROJ_SMS);
        c->ub_stretch[1] = 1.0 + COST_UB_BETA * COST_UB_FC2_SMS / (double)(sms - COST_UB_FC2_SMS);
    }
}

void cost_ctx_net(CostCtx *c, const HwNet *net, int64_t ep_nodes)
{
    c->net = net;
    c->ep_nodes = ep_nodes;
}

void cost_ctx_host(CostCtx *c, const double host_s[2])
{
    if (!(c->host_s[0][0] > 0)) return;
    const double def[2] = {COST_HOST_FWD_S, COST_HOST_BWD_S};
    for (int i = 0; i < 2; i++)
        if (!(host_s[i] > 0)) return; /* unset (a zeroed SimOptions): the defaults */
    c->host_opt_s *= host_s[0] / def[0];
    for (int i = 0; i < 2; i++) {
        c->host_mod_s[i] *= host_s[i] / def[i];
        c->host_s[1][i] *= host_s[i] / def[i];
        c->host_s[2][i] *= host_s[i] / def[i];
        c->host_s[0][i] *= host_s[i] / def[i]; /* Megatron-Core's keep their COST_HOST_MCORE */
    }
}

/* Memory-bound bytes over `launches` kernels (eager ops: each its own
 * launch and ramp), or one; kernels on PyTorch's generic elementwise path
 * (PART_KF_GENERIC) take the longer of that and their `elements` at its
 * rate. */
static double mem_time(const HwModel *hw, double bytes, int launches, double elements)
{
    double t = launches <= 1 ? hw_memory_time_s(hw, bytes)
                             : (double)launches * hw_memory_time_s(hw, bytes / (double)launches);
    double g = elements > 0 ? hw_generic_time_s(hw, elements) + (double)(launches > 1 ? launches : 1) * hw->gpu.launch_s
                            : 0;
    return g > t ? g : t;
}

/* The FP8 casts around a GEMM (Transformer Engine; the weights' are cached
 * per step), in bytes per element. Per-tensor scaling (delayed, current):
 * Hopper and Ada run FP8 GEMMs in the TN layout only, so the input and the
 * output gradient, each also read along its other axis by the weight
 * gradient, are cast and transposed in one kernel (read bf16, write two FP8
 * copies: 4 B each; the input's transposed copy is saved for the weight
 * gradient); Blackwell runs every layout and casts one copy (3 B; TE docs,
 * developer/cpp_core/scaling_modes and quantization/rowwise_columnwise).
 * Current scaling reads each cast tensor once more for its amax (+2 B).
 * Blockwise scaling (DeepSeek-V3 §3.3.2: 1x128 tiles forward, 128x1
 * backward) casts the input (3 B) and writes an fp32 scale per 128 FP8
 * elements (+1/32 B), casts and transposes the output gradient (4 B + 2/32),
 * and quantizes the weight gradient's operand along its other axis from the
 * FP8 copy (2 B + 1/32). Transformer Engine's GroupedLinear
 * (PART_KF_STREAMS) quantizes the experts' splits in split_quantize (TE
 * 2.9-2.11, csrc/extensions/cast.cpp): under delayed scaling one fused
 * multi-tensor cast-transpose over all splits; otherwise each split apart,
 * one kernel a split, four under current scaling (zero the amax, amax,
 * scale, cast), each with its own launch and ramp. */
static void fp8_casts(const CostCtx *c, const PartKernel *k, double t[3])
{
    const HwModel *hw = c->hw;
    double mk = (double)k->batch * (double)k->m * (double)k->k, mn = (double)k->batch * (double)k->m * (double)k->n;
    double in = c->fp8_non_tn ? 3 : 4, go = in, wg = 0;
    if (c->fp8 == PLAN_FP8_CURRENT) in += 2, go += 2;
    if (c->fp8 == PLAN_FP8_BLOCKWISE) in = 3 + 1.0 / 32, go = 4 + 2.0 / 32, wg = 2 + 1.0 / 32;
    int launches = 1;
    if ((k->flags & PART_KF_STREAMS) && c->fp8 != PLAN_FP8_DELAYED)
        launches = part_launches(k->batch * (c->fp8 == PLAN_FP8_CURRENT ? 4 : 1));
    t[0] += mem_time(hw, in * mk, launches, 0);
    t[1] += mem_time(hw, go * mn, launches, 0);
    if (wg > 0) t[2] += mem_time(hw, wg * mk, k->flags & PART_KF_STREAMS ? (int)k->batch : 1, 0);
}

/* The GEMMs of a PART_KF_STREAMS kernel's batch entries (pass 0 forward,
 * 1 data gradient, 2 weight gradient), COST_TE_STREAMS at a time. */
static double stream_gemm(const HwModel *hw, const PartKernel *k, int pass, TsDtype dt)
{
    int64_t s = COST_TE_STREAMS, n[2] = {k->batch / s, k->batch % s}, b[2] = {s, k->batch % s};
    double t = 0;
    for (int i = 0; i < 2; i++) {
        if (!(n[i] > 0 && b[i] > 0)) continue;
        double g = pass == 0   ? hw_gemm_time_s(hw, b[i], k->m, k->n, k->k, dt)
                   : pass == 1 ? hw_gemm_time_s(hw, b[i], k->m, k->k, k->n, dt)
                               : hw_gemm_wgrad_time_s(hw, b[i], k->k, k->n, k->m, dt);
        t += (double)(i ? 1 : n[i]) * g;
    }
    return t;
}

/* `parts` GEMMs of M/parts rows each, x stretch. */
static double gemm_parts(const CostCtx *c, const PartKernel *k, int64_t parts, double stretch, bool dgrad, TsDtype dt)
{
    int64_t mc = (k->m + parts - 1) / parts;
    double g = dgrad ? hw_gemm_time_s(c->hw, k->batch, mc, k->k, k->n, dt) : hw_gemm_time_s(c->hw, k->batch, mc, k->n, k->k, dt);
    return c->tensor_factor * stretch * (double)parts * g;
}

/* A GEMM whose TP collective Transformer Engine overlaps with it
 * (--tp-overlap, cost.h COST_UB_*): ring exchange runs it as tp GEMMs of
 * 1/tp of the rows, one per peer's chunk (the forward of the column-
 * parallel QKV and fc1 under their input's all-gather, the data gradient of
 * the row-parallel projection and fc2, and at FP8 their forward under the
 * reduce-scatter); the 16-bit pipeline method runs the row-parallel
 * forward in COST_UB_SPLITS chunks on the SMs the reduce-scatter leaves.
 * The other data and weight gradients overlap in bulk, whole. */
static void ub_gemm(const CostCtx *c, const PartKernel *k, TsDtype dt, double t[3])
{
    const int64_t tp = c->ub_tp;
    const bool row = (k->flags & (PART_KF_ROW_OUT | PART_KF_ROW_OUT_MLP)) != 0;
    if (!row) t[0] = gemm_parts(c, k, tp, 1, false, dt);
    else if (c->ub_stretch[0] > 1)
        t[0] = gemm_parts(c, k, COST_UB_SPLITS, c->ub_stretch[(k->flags & PART_KF_ROW_OUT_MLP) ? 1 : 0], false, dt);
    else t[0] = gemm_parts(c, k, tp, 1, false, dt);
    t[1] = gemm_parts(c, k, row ? tp : 1, 1, true, dt);
    t[2] = c->tensor_factor * hw_gemm_wgrad_time_s(c->hw, k->batch, k->k, k->n, k->m, dt);
}

/* A fused kernel's time from the calibration file's table of the kernel it
 * is (PartKernel.calib; pass 0 forward, 1 backward) at `bytes`, each tensor
 * counted once as the file counts them; 0 where the file has none. */
static double calib_named(const CostCtx *c, const PartKernel *k, int pass, double bytes)
{
    if (!c->hw->calib || !k->calib || k->launches[pass] > 1) return 0;
    char name[32];
    if (!strcmp(k->calib, "add")) snprintf(name, sizeof name, "add");
    else snprintf(name, sizeof name, "%s_%s", k->calib, pass ? "bwd" : "fwd");
    return hw_calib_memory_kernel_s(c->hw->calib, name, bytes);
}

void cost_kernel(const CostCtx *c, const PartKernel *k, double t[3])
{
    const HwModel *hw = c->hw;
    double n = (double)(k->count > 0 ? k->count : 1), f = c->tensor_factor;
    t[0] = t[1] = t[2] = 0;
    switch (k->kind) {
    case PART_K_GEMM: {
        TsDtype dt = (k->flags & PART_KF_FP32) ? TS_DTYPE_FP32 : (k->flags & PART_KF_ACT) ? c->act_dtype : c->dtype;
        if (k->flags & PART_KF_GROUPED) { /* rows per group spread; the weight gradient grouped along K */
            t[0] = f * hw_grouped_gemm_time_s(hw, k->batch, k->m, k->m_sd, k->n, k->k, false, dt);
            t[1] = f * hw_grouped_gemm_time_s(hw, k->batch, k->m, k->m_sd, k->k, k->n, false, dt);
            t[2] = f * hw_grouped_gemm_time_s(hw, k->batch, k->k, k->m_sd, k->n, k->m, true, dt);
        } else if (c->ub_tp > 1 && (k->flags & (PART_KF_COL_IN | PART_KF_ROW_OUT | PART_KF_ROW_OUT_MLP))) {
            ub_gemm(c, k, dt, t);
        } else if (k->flags & PART_KF_STREAMS) {
            for (int i = 0; i < 3; i++) t[i] = f * stream_gemm(hw, k, i, dt);
        } else {
            t[0] = f * ((k->flags & PART_KF_ODD_LDA) ? hw_gemm_odd_lda_time_s(hw, k->batch, k->m, k->n, k->k, dt)
                                                      : hw_gemm_time_s(hw, k->batch, k->m, k->n, k->k, dt));
            t[1] = f * hw_gemm_time_s(hw, k->batch, k->m, k->k, k->n, dt);
            t[2] = f * hw_gemm_wgrad_time_s(hw, k->batch, k->k, k->n, k->m, dt);
        }
        if (dt == TS_DTYPE_FP8) fp8_casts(c, k, t);
        break;
    }
    case PART_K_ATTN:
        if (k->flags & PART_KF_SINK) { /* the learned sink's gradient: a cost per query row */
            t[1] = f * (double)k->batch * (double)k->m * (double)k->n * hw->gpu.attn_sink_bwd_row_s;
            break;
        }
        /* each pass the kernel runs (PART_KF_FWD_ONLY, _BWD_ONLY: one) */
        for (int bwd = 0; bwd < 2; bwd++)
            if (!(k->flags & (bwd ? PART_KF_FWD_ONLY : PART_KF_BWD_ONLY)))
                t[bwd] = f * hw_fused_attention_time_s(hw, k->batch, k->m, k->n, k->k, k->d, k->causal, bwd,
                                                       c->act_dtype, k->drop);
        break;
    default: {
        bool gen = (k->flags & PART_KF_GENERIC) != 0;
        int bi = (k->flags & PART_KF_WGRAD) ? 2 : 1;
        if (k->flags & PART_KF_ROWNORM) {
            t[0] = hw_norm_time_s(hw, k->fwd_bytes, k->elems[0], 0);
            t[bi] = hw_norm_time_s(hw, k->bwd_bytes, k->elems[1], 1);
            break;
        }
        t[0] = mem_time(hw, k->fwd_bytes, k->launches[0], gen ? k->elems[0] : 0);
        t[bi] = mem_time(hw, k->bwd_bytes, k->launches[1], gen ? k->elems[1] : 0);
        if (k->flags & PART_KF_DUPS) { /* the busiest row's duplicates, one after another */
            double d = k->elems[1] * hw->gpu.index_put_dup_s;
            if (d > t[bi]) t[bi] = d;
        }
        double nf = calib_named(c, k, 0, k->fwd_bytes), nb = calib_named(c, k, 1, k->bwd_bytes);
        if (nf > 0) t[0] = nf;
        if (nb > 0) t[bi] = nb;
        break;
    }
    }
    if (k->share > 0) n *= k->share;
    for (int i = 0; i < 3; i++) t[i] *= n;
    if (k->flags & PART_KF_FWD_ONLY) t[1] = t[2] = 0;
    if (k->flags & PART_KF_BWD_ONLY) t[0] = 0;
}

/* What the host takes to dispatch kernel k's pass (0 forward, 1 backward):
 * its launches and other calls at the cost of their kind. */
static double kernel_host_s(const CostCtx *c, const PartKernel *k, int pass)
{
    int how = (k->flags & PART_KF_INNER) ? 1 : (k->flags & PART_KF_PYLOOP) ? 2 : 0;
    return (double)(k->launches[pass] + k->host_calls[pass]) * c->host_s[how][pass];
}

void cost_block(const CostCtx *c, const PartBlockT *b, CostBlock *o)
{
    memset(o, 0, offsetof(CostBlock, k)); /* the sums; k[] is written kernel by kernel */
    o->host_fwd = (double)b->modules * c->host_mod_s[0];
    o->host_bwd = (double)b->modules * c->host_mod_s[1];
    for (int32_t i = 0; i < b->n_k; i++) {
        const PartKernel *k = &b->k[i];
        double *t = o->k[i];
        cost_kernel(c, k, t);
        if (k->flags & PART_KF_SAC_ONLY) {
            o->sac_fwd += t[0];
            continue;
        }
        if (k->part == PART_KP_GEMM) o->gemm_fwd += t[0], o->gemm_ig += t[1], o->gemm_wg += t[2];
        else if (k->part == PART_KP_CORE) o->core_fwd += t[0], o->core_ig += t[1] + t[2];
        else o->mem_fwd += t[0], o->mem_ig += t[1], o->mem_wg += t[2];
        if (k->flags & PART_KF_FSDP) o->fsdp_fwd += t[0], o->fsdp_bwd += t[1] + t[2];
        o->fwd += t[0];
        o->ig += t[1];
        o->wg += t[2];
        o->host_fwd += kernel_host_s(c, k, 0);
        o->host_bwd += kernel_host_s(c, k, 1);
    }
}

/* The GPU waits on the host when dispatching a pass's kernels takes longer
 * than running them. The host runs ahead through long kernels (the launch
 * queue holds about a thousand), so the pass's totals count, not a
 * layer's: the whole model (one pipeline stage, --framework hf), its layers
 * n[b] times. The wait is shared by the blocks in proportion to their
 * dispatch time, on their memory-bound part. One pass (0 forward, 1
 * backward); returns its whole wait, *ahead how far its GPU work runs
 * behind its dispatch. */
static double pass_wait(CostBlock *b, const double n[PART_BLOCK_COUNT], int pass, double *ahead)
{
    double h = 0, g = 0;
    for (int i = 0; i < PART_BLOCK_COUNT; i++) {
        h += n[i] * (pass ? b[i].host_bwd : b[i].host_fwd);
        g += n[i] * (pass ? b[i].ig + b[i].wg : b[i].fwd);
    }
    for (int i = 0; i < PART_BLOCK_COUNT; i++) {
        CostBlock *c = &b[i];
        double w = h > g ? (h - g) * (pass ? c->host_bwd : c->host_fwd) / h : 0;
        if (pass) c->wait_bwd = w, c->mem_ig += w, c->ig += w;
        else c->wait_fwd = w, c->mem_fwd += w, c->fwd += w;
    }
    *ahead = g > h ? g - h : 0;
    return h > g ? h - g : 0;
}

void cost_ep_route(const ModelSpec *m, const ParallelPlan *p, const PartTemplate *t, HwEpRoute *r)
{
    *r = (HwEpRoute){.deepep = p->moe_dispatch == PLAN_MOE_DISPATCH_DEEPEP, .topk = m->topk,
                     .node_limit = p->moe_node_limit, .load = t->moe_load};
}

/* An MoE layer's forward dispatch and combine all-to-alls on c's network
 * (hw_ep_a2a_time_s, the route the simulator's layers take); 0 without. */
static double ep_fwd_s(const CostCtx *c, const ModelSpec *m, const ParallelPlan *p, const PartTemplate *t)
{
    if (!c->net || !(t->ep_bytes > 0) || p->ep < 2) return 0;
    HwEpRoute r;
    cost_ep_route(m, p, t, &r);
    return hw_ep_a2a_time_s(c->net, t->ep_dispatch_bytes, p->ep, c->ep_nodes, &r) +
           hw_ep_a2a_time_s(c->net, t->ep_bytes, p->ep, c->ep_nodes, &r);
}

/* Megatron-Core's MoE layer forward (CostCtx.host_sync): the token
 * dispatcher copies the tokens per expert to the host and waits for them
 * (the all-to-all's split sizes, the grouped GEMMs' m_splits), so the host
 * cannot run ahead across it. At the sync the GPU's queue is empty: the ops
 * after it (PART_KF_AFTER_SYNC) keep the GPU idle for what dispatching them
 * takes beyond running them, the dispatch and combine all-to-alls among
 * them (ep_fwd_s: NCCL's kernels on the compute stream, which the host
 * runs ahead of as of any long kernel); the ops before it (router,
 * auxiliary loss, the count exchange) hide under the attention block's GPU
 * time, through whose long kernels the host runs ahead. Seconds per MoE
 * layer and micro-batch. */
static double sync_wait(const CostCtx *c, const ModelSpec *m, const ParallelPlan *p, const PartTemplate *tpl,
                        const CostBlock *moe, const CostBlock *attn)
{
    const PartBlockT *t = &tpl->b[PART_BLOCK_MOE];
    double h[2] = {0, 0}, g[2] = {0, 0};
    for (int32_t i = 0; i < t->n_k; i++) {
        const PartKernel *k = &t->k[i];
        if (k->flags & PART_KF_SAC_ONLY) continue;
        int s = (k->flags & PART_KF_AFTER_SYNC) ? 1 : 0;
        h[s] += kernel_host_s(c, k, 0);
        g[s] += moe->k[i][0];
    }
    double pre = h[0] + attn->host_fwd - attn->fwd - g[0];
    double post = h[1] - g[1] - ep_fwd_s(c, m, p, tpl);
    return (post > 0 ? post : 0) + (pre > 0 ? pre : 0);
}

/* The backward has no sync (the split sizes are the forward's): the host
 * falls behind only where the whole pass dispatches longer than it runs,
 * as under --framework hf; the forward waits per MoE layer (sync_wait). */
static double mcore_host_wait(const CostCtx *c, const ModelSpec *m, const ParallelPlan *p, const PartTemplate *t,
                              CostBlock *b, const double n[PART_BLOCK_COUNT], double *ahead)
{
    CostBlock *moe = &b[PART_BLOCK_MOE];
    double w = n[PART_BLOCK_MOE] > 0 ? sync_wait(c, m, p, t, moe, &b[PART_BLOCK_ATTN]) : 0;
    moe->wait_fwd = w;
    moe->mem_fwd += w, moe->fwd += w;
    return n[PART_BLOCK_MOE] * w + pass_wait(b, n, 1, ahead);
}

bool cost_sac(const ModelSpec *m, const ParallelPlan *p, const PartRuntime *rt)
{
    return p->recompute == PLAN_RECOMPUTE_SELECTIVE && rt && rt->selective_ops && m->experts == 0 &&
           m->kv_lora_rank == 0;
}

/* Selective recompute: the forward of the block's kernels of the modules
 * `mods` (PLAN_RC_*; the attention core is core_attn). */
static double module_recompute(const PartBlockT *b, const CostBlock *cb, uint32_t mods)
{
    double rc = 0;
    for (int32_t i = 0; i < b->n_k; i++) {
        const PartKernel *k = &b->k[i];
        if (k->flags & PART_KF_SAC_ONLY) continue;
        if ((k->rc & mods) || (k->part == PART_KP_CORE && (mods & PLAN_RC_CORE_ATTN))) rc += cb->k[i][0];
    }
    return rc;
}

void cost_step(const CostCtx *c, const ModelSpec *m, const ParallelPlan *p, const PartRuntime *rt,
               const PartTemplate *t, CostStep *o)
{
    bool sac = cost_sac(m, p, rt);
    o->host_wait_s = o->host_opt_s = 0;
    for (int b = 0; b < PART_BLOCK_COUNT; b++) {
        CostBlock *cb = &o->b[b];
        cost_block(c, &t->b[b], cb);
        double rc = 0;
        if (sac && (b == PART_BLOCK_ATTN || b == PART_BLOCK_MLP))
            rc = cb->sac_fwd + (cb->fwd - cb->gemm_fwd - cb->core_fwd);
        else if (p->recompute == PLAN_RECOMPUTE_SELECTIVE)
            rc = module_recompute(&t->b[b], cb, plan_rc_modules(p));
        else if (p->recompute == PLAN_RECOMPUTE_FULL && b != PART_BLOCK_EMBED && b != PART_BLOCK_HEAD)
            rc = cb->fwd;
        o->recompute[b] = rc;
    }
    if (c->host_s[0][0] > 0 || c->host_s[0][1] > 0) {
        double n[PART_BLOCK_COUNT];
        part_block_counts(m, n);
        double ahead = 0, tensors = 0;
        if (c->host_sync) {
            o->host_wait_s = mcore_host_wait(c, m, p, t, o->b, n, &ahead);
        } else {
            double fwd_ahead;
            o->host_wait_s = pass_wait(o->b, n, 0, &fwd_ahead) + pass_wait(o->b, n, 1, &ahead);
        }
        /* the optimizer's loop over the parameter tensors, after the last
         * backward: hidden while the GPU still runs what was dispatched */
        for (int b = 0; b < PART_BLOCK_COUNT; b++) tensors += n[b] * (double)t->b[b].param_tensors;
        /* a full recompute runs the forward again, its host's wait (the MoE
         * layer's sync) included */
        if (p->recompute == PLAN_RECOMPUTE_FULL)
            for (int b = 0; b < PART_BLOCK_COUNT; b++)
                if (b != PART_BLOCK_EMBED && b != PART_BLOCK_HEAD) o->recompute[b] += o->b[b].wait_fwd;
        double host_opt = tensors * c->host_opt_s;
        o->host_opt_s = host_opt > ahead ? host_opt - ahead : 0;
    }
}
