/* The per-operator table of a model as NeuSight traces it with torch.fx
 * (reference/optable.md §1.2-1.4): the fx node names of the HuggingFace
 * model of the architecture, one block replicated per layer, DP gradient
 * rows `<op>_grad` before each parameterized op, TP all-reduce rows, a PP
 * send/recv row. GPT-2 here (the seed's table); the Llama family with MoE
 * in optable_llama.c, BERT in optable_bert.c; the row machinery they share
 * below. Every time comes from hw.h's compute model (hw_op_time_s on a
 * GraphOp of the row's kind; ms in the table); forward, input-gradient and
 * weight-gradient are all filled. neusight = keep the seed's size quirks
 * (wte grad S*H instead of V*H, a bias on the tied lm_head) and NeuSight's
 * formula for its MEM rows (elements*4 / (Mem_Bw * 2^30) s, no efficiency
 * or launch; optable.md 1.3).
 *
 * Legend: B micro-batch, S seq, H hidden, A heads, D head dim, V vocab. */
#include "optable_int.h"

#include <assert.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- rows ---------------------------------------------------------------------- */

static void push(OtGen *g, const char *name, const WlRowSpec *spec)
{
    if (!g->ok) return;
    if (g->n == g->cap) {
        int64_t nc = g->cap ? g->cap * 2 : 128;
        WlRowSpec *p = realloc(g->r, (size_t)nc * sizeof *p);
        if (p) g->r = p;
        char **q = realloc(g->names, (size_t)nc * sizeof *q);
        if (q) g->names = q;
        if (!p || !q) {
            g->ok = false;
            return;
        }
        g->cap = nc;
    }
    g->names[g->n] = strdup(name);
    if (!g->names[g->n]) {
        g->ok = false;
        return;
    }
    g->r[g->n] = *spec;
    g->r[g->n].name = g->names[g->n];
    g->n++;
}

static double mem_row_s(const OtGen *g, double bytes)
{
    if (g->neusight) return bytes / (g->mem_bw_gib * 1073741824.0);
    return hw_memory_time_s(g->hw, bytes);
}

/* fwd / input-grad / weight-grad seconds of a compute row */
static void times(const OtGen *g, const OpRow *o, double t[3])
{
    t[0] = t[1] = t[2] = 0;
    GraphOp op = {.layer = -1, .expert_id = -1};
    TsDtype dt = o->flags & OT_FP32 ? TS_DTYPE_FP32 : g->dt;
    double eb = g->neusight || (o->flags & OT_FP32) ? 4.0 : g->act_bytes, fl;
    switch (o->kind) {
    case R_VIEW: return;
    case R_MEM: t[0] = t[1] = mem_row_s(g, o->a * eb + o->b); break;
    case R_CAST: /* activation dtype <-> fp32; nothing to do when they are one */
        if (g->act_bytes == 4.0) return;
        t[0] = t[1] = mem_row_s(g, o->a * (g->neusight ? 8.0 : g->act_bytes + 4.0));
        break;
    case R_EMB:
        if (g->neusight) { /* NeuSight: indices + output rows, 4 B each */
            t[0] = t[1] = mem_row_s(g, (o->a + o->a * o->b) * 4.0);
            break;
        }
        op.kind = GRAPH_OP_EMBEDDING;
        op.dims[0] = (int64_t)o->a, op.dims[1] = (int64_t)o->b;
        break;
    case R_VEC:
        op.kind = GRAPH_OP_ELEMENTWISE;
        op.dims[0] = (int64_t)o->a, op.dims[1] = (int64_t)o->b - 1;
        break;
    case R_SOFTMAX: op.kind = GRAPH_OP_SOFTMAX, op.dims[0] = (int64_t)o->a; break;
    case R_ACT: op.kind = GRAPH_OP_ACTIVATION, op.dims[0] = (int64_t)o->a; break;
    case R_DROP: op.kind = GRAPH_OP_DROPOUT, op.dims[0] = (int64_t)o->a; break;
    case R_NORM:
        op.kind = GRAPH_OP_NORM;
        op.dims[0] = (int64_t)o->a, op.dims[1] = (int64_t)o->b, op.dims[2] = 1, op.dims[3] = 1;
        break;
    case R_GEMM: /* {M tokens, K in, N out, bias} */
        op.kind = GRAPH_OP_GEMM;
        op.dims[0] = llround(o->a), op.dims[1] = (int64_t)o->c, op.dims[2] = (int64_t)o->b, op.dims[3] = 1;
        fl = 2.0 * o->a * o->b * o->c;
        op.fwd_flops = op.dgrad_flops = op.wgrad_flops = fl;
        break;
    case R_BMM: /* {batch, M, K, N}; both operands are activations: two products in DGRAD */
        op.kind = GRAPH_OP_BATCHED_GEMM;
        op.dims[0] = (int64_t)o->a, op.dims[1] = (int64_t)o->b, op.dims[2] = (int64_t)o->d;
        op.dims[3] = (int64_t)o->c;
        fl = 2.0 * o->a * o->b * o->c * o->d;
        op.fwd_flops = fl, op.dgrad_flops = 2.0 * fl;
        break;
    case R_ATTN: /* {B, heads, Sq, Sk, D, Dv}, causal: half the full FLOPs */
        op.kind = GRAPH_OP_ATTENTION_CORE;
        op.dims[0] = (int64_t)o->a, op.dims[1] = (int64_t)o->b, op.dims[2] = op.dims[3] = (int64_t)o->c;
        op.dims[4] = op.dims[5] = (int64_t)o->d;
        op.fwd_flops = 2.0 * o->a * o->b * o->c * o->c * o->d;
        break;
    default: return;
    }
    if (o->kind != R_MEM && o->kind != R_CAST && !(o->kind == R_EMB && g->neusight)) {
        t[0] = hw_op_time_s(g->hw, &op, HW_PASS_FWD, dt);
        t[1] = hw_op_time_s(g->hw, &op, HW_PASS_DGRAD, dt);
        t[2] = hw_op_time_s(g->hw, &op, HW_PASS_WGRAD, dt);
    }
    if (o->flags & OT_NOGRAD) t[1] = t[2] = 0;
}

/* The nearest time the table reads back unchanged: the writer prints
 * s * 1e3 (ms, shortest repr) and the reader takes ms * 1e-3, so s must be
 * a fixed point of that; a few ulps away at most (9 steps over 2e5 random
 * times), so a generated table round-trips byte for byte. */
static double ms_exact(double s)
{
    for (int i = 0; i < 64; i++) {
        double y = (s * 1e3) * 1e-3;
        if (y == s) break;
        s = y;
    }
    return s;
}

void wl_ot_row(OtGen *g, const OpRow *o)
{
    WlRowSpec s = {0};
    if (o->kind == R_GRAD || o->kind == R_TPAR || o->kind == R_PP) {
        int ph = o->kind == R_GRAD ? WL_PHASE_IG : WL_PHASE_FWD;
        s.coll[ph] = o->kind == R_PP ? TS_COLL_SENDRECV : TS_COLL_ALLREDUCE;
        s.group[ph] = o->kind == R_GRAD ? WL_GROUP_DP : o->kind == R_PP ? WL_GROUP_PP : WL_GROUP_TP;
        s.flags[ph] = o->kind == R_GRAD ? WL_F_ASYNC : 0;
        s.bytes[ph] = o->a * 4.0;
        if (o->kind != R_GRAD) { /* blocking in both directions */
            s.coll[WL_PHASE_IG] = s.coll[ph];
            s.group[WL_PHASE_IG] = s.group[ph];
            s.bytes[WL_PHASE_IG] = s.bytes[ph];
        }
        push(g, o->name, &s);
        return;
    }
    double tm[3];
    times(g, o, tm);
    for (int ph = 0; ph < 3; ph++) {
        s.has_comp[ph] = true;
        s.comp_s[ph] = ms_exact(tm[ph]);
    }
    push(g, o->name, &s);
}

/* ---- names ----------------------------------------------------------------------- */

/* Python builtins an fx name must not shadow (those our models call). */
static bool py_builtin(const char *s)
{
    static const char *const b[] = {"pow", "float", "getattr", "sum", "abs", "max", "min", "round", "slice",
                                    "type", "len", "int", "bool", "iter", "all", "any"};
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++)
        if (strcmp(s, b[i]) == 0) return true;
    return false;
}

/* The n-th (0-based) fx name of `base`: base, base_1, ...; builtins base_1, base_2, ... */
static int32_t fx_next(OtGen *g, const char *base)
{
    OtFx *f = &g->fx;
    int i = 0;
    while (i < f->nb && strcmp(f->base[i], base) != 0) i++;
    if (i == f->nb) {
        assert(f->nb < OT_FX_MAX);
        if (f->nb == OT_FX_MAX) return 0;
        f->base[f->nb] = base;
        f->used[f->nb++] = 0;
    }
    return f->used[i]++ + (py_builtin(base) ? 1 : 0);
}

const char *wl_ot_fn(OtGen *g, const char *base)
{
    int32_t k = fx_next(g, base);
    if (k == 0) snprintf(g->nm, sizeof g->nm, "%s%s", base, g->sfx);
    else snprintf(g->nm, sizeof g->nm, "%s_%d%s", base, (int)k, g->sfx);
    return g->nm;
}

void wl_ot_host(OtGen *g, const char *base) { (void)fx_next(g, base); }

const char *wl_ot_mod(OtGen *g, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(g->nm, sizeof g->nm, fmt, ap);
    va_end(ap);
    return g->nm;
}

void wl_ot_grad(OtGen *g, const char *node, double elems)
{
    if (!g->dp) return;
    char nm[sizeof g->nm + 8];
    snprintf(nm, sizeof nm, "%s_grad", node);
    OT(g, nm, R_GRAD, elems);
}

void wl_ot_tp_allreduce(OtGen *g, double elems)
{
    if (g->tpm) OT(g, wl_ot_fn(g, "reduce_from_tensor_model_parallel_region"), R_TPAR, elems);
}

void wl_ot_pp(OtGen *g, int64_t l, double elems)
{
    if (g->p->pp > 1 && l == g->m->layers / 2 - 1) OT(g, "sendrecv", R_PP, elems);
}

void wl_ot_layer(OtGen *g, const OtFx *after_prologue, int64_t l)
{
    g->fx = *after_prologue;
    g->sfx[0] = 0;
    if (l > 0) snprintf(g->sfx, sizeof g->sfx, ".%lld", (long long)l);
}

/* ---- GPT-2 (the seed's table) ------------------------------------------------------ */

/* HF GPT2LMHeadModel's fx rows, with NeuSight's own names and its MEM rows
 * (getitem of shape tuples and of the split QKV, where, contiguous) as the
 * seed lists them. */
static void gpt2(OtGen *g)
{
    const ModelSpec *m = g->m;
    const ParallelPlan *p = g->p;
    bool neusight = g->neusight;
    double B = (double)p->micro_batch, S = (double)p->seq, H = (double)m->hidden, V = (double)m->vocab;
    double tp = g->tp, A = (double)m->heads / tp, D = H / (double)m->heads, F = (double)m->ffn;
    double T = B * S;
    char nm[96];
#define GRAD(nm, n) \
    if (g->dp) OT(g, nm, R_GRAD, n)
    const double tiny = 2; /* fx getitem of a shape tuple: 2 elements */
    OT(g, "getitem", R_MEM, tiny);
    OT(g, "getitem_1", R_MEM, tiny);
    OT(g, "getitem_2", R_MEM, tiny);
    GRAD("transformer_wte_grad", neusight ? S * H : V * H);
    OT(g, "transformer_wte", R_EMB, T, H);
    OT(g, "add_1", R_VEC, T * H, 3);
    OT(g, "getitem_3", R_MEM, tiny);
    for (int64_t l = 0; l < m->layers && g->ok; l++) {
        /* fx numbering inside a block is per traced layer; blocks after the
         * first get a ".<layer>" suffix (NeuSight's replicate_layer copies rows) */
        char sfx[24] = "";
        if (l > 0) snprintf(sfx, sizeof sfx, ".%lld", (long long)l);
#define N(s) (snprintf(nm, sizeof nm, "%s%s", s, sfx), nm)
        snprintf(nm, sizeof nm, "transformer_h_%lld_ln_1_grad", (long long)l);
        GRAD(nm, 2 * H);
        snprintf(nm, sizeof nm, "transformer_h_%lld_ln_1", (long long)l);
        OT(g, nm, R_NORM, T, H);
        OT(g, N("getitem_4"), R_MEM, tiny);
        GRAD(N("addmm_grad"), H * 3 * H + 3 * H);
        OT(g, N("addmm"), R_GEMM, T, 3 * H / tp, H);
        OT(g, N("getitem_5"), R_MEM, T * H / tp);
        OT(g, N("getitem_6"), R_MEM, T * H / tp);
        OT(g, N("getitem_7"), R_MEM, T * H / tp);
        OT(g, N("getitem_8"), R_MEM, tiny);
        OT(g, N("getitem_9"), R_MEM, tiny);
        OT(g, N("getitem_10"), R_MEM, tiny);
        OT(g, N("matmul"), R_BMM, B * A, S, S, D);
        OT(g, N("truediv"), R_VEC, B * A * S * S, 2);
        OT(g, N("getitem_11"), R_MEM, 2 * S * S);
        OT(g, N("where"), R_MEM, 2 * B * A * S * S);
        OT(g, N("softmax"), R_SOFTMAX, B * A * S * S);
        OT(g, N("matmul_1"), R_BMM, B * A, S, D, S);
        OT(g, N("contiguous"), R_MEM, 2 * T * H / tp);
        OT(g, N("getitem_12"), R_MEM, tiny);
        OT(g, N("getitem_13"), R_MEM, tiny);
        GRAD(N("addmm_1_grad"), H * H + H);
        OT(g, N("addmm_1"), R_GEMM, T, H, H / tp);
        if (g->tpm) OT(g, N("reduce_from_tensor_model_parallel_region"), R_TPAR, T * H);
        OT(g, N("add_10"), R_VEC, T * H, 3);
        snprintf(nm, sizeof nm, "transformer_h_%lld_ln_2_grad", (long long)l);
        GRAD(nm, 2 * H);
        snprintf(nm, sizeof nm, "transformer_h_%lld_ln_2", (long long)l);
        OT(g, nm, R_NORM, T, H);
        OT(g, N("getitem_14"), R_MEM, tiny);
        GRAD(N("addmm_2_grad"), H * F + F);
        OT(g, N("addmm_2"), R_GEMM, T, F / tp, H);
        /* gelu_new: 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))) */
        double Fe = T * F / tp;
        OT(g, N("mul"), R_VEC, Fe, 2);
        OT(g, N("pow_2"), R_VEC, Fe, 2);
        OT(g, N("mul_1"), R_VEC, Fe, 2);
        OT(g, N("add_12"), R_VEC, Fe, 3);
        OT(g, N("mul_2"), R_VEC, Fe, 2);
        OT(g, N("tanh"), R_ACT, Fe);
        OT(g, N("add_13"), R_VEC, Fe, 2);
        OT(g, N("mul_3"), R_VEC, Fe, 3);
        OT(g, N("getitem_15"), R_MEM, tiny);
        GRAD(N("addmm_3_grad"), F * H + H);
        OT(g, N("addmm_3"), R_GEMM, T, H, F / tp);
        if (g->tpm) OT(g, N("reduce_from_tensor_model_parallel_region_1"), R_TPAR, T * H);
        OT(g, N("add_15"), R_VEC, T * H, 3);
        wl_ot_pp(g, l, T * H);
#undef N
    }
    GRAD("transformer_ln_f_grad", 2 * H);
    OT(g, "transformer_ln_f", R_NORM, T, H);
    if (neusight || !m->tied_embeddings) GRAD("lm_head_grad", neusight ? H * V + V : H * V);
    OT(g, "lm_head", R_GEMM, T, V / tp, H);
#undef GRAD
}

/* ---- the table ----------------------------------------------------------------------- */

TsStatus wl_build_optable(const ModelSpec *m, const ParallelPlan *p, const HwModel *hw, const WlOptableOptions *oo,
                          Workload **out, TsError *err)
{
    *out = NULL;
    void (*gen)(OtGen *) = NULL;
    switch (m->arch) {
    case MODEL_ARCH_GPT: gen = gpt2; break;
    case MODEL_ARCH_LLAMA:
    case MODEL_ARCH_QWEN:
    case MODEL_ARCH_MIXTRAL: gen = wl_ot_llama; break;
    case MODEL_ARCH_BERT: gen = wl_ot_bert; break;
    default: break;
    }
    if (!gen || m->q_lora_rank > 0 || m->kv_lora_rank > 0) {
        ts_err(err, TS_ERR_USAGE, "op tables are written for the gpt (GPT-2), llama (Llama, Mistral), qwen, mixtral "
                                  "and bert families; not for %s%s",
               model_arch_name(m->arch), gen ? " with multi-head latent attention" : "");
        ts_err_hint(err, "--format simai, chakra or json describe every architecture");
        return TS_ERR_USAGE;
    }
    if (m->norm_layout != MODEL_NORM_LAYOUT_PRE && m->arch != MODEL_ARCH_BERT) {
        ts_err(err, TS_ERR_USAGE, "op tables trace pre-norm layers; not %s norms (Gemma, OLMo 2)",
               model_norm_layout_name(m->norm_layout));
        ts_err_hint(err, "--format simai, chakra or json describe every architecture");
        return TS_ERR_USAGE;
    }
    if (m->qk_norm_full || m->act == MODEL_ACT_GEGLU) {
        ts_err(err, TS_ERR_USAGE, "op tables trace per-head q/k norms and SiLU or GeLU MLPs; not %s",
               m->qk_norm_full ? "q/k norms over all heads (OLMo 2)" : "GeGLU (Gemma)");
        ts_err_hint(err, "--format simai, chakra or json describe every architecture");
        return TS_ERR_USAGE;
    }
    if (p->cp > 1) {
        ts_err(err, TS_ERR_PLAN, "op tables have no context parallelism (NeuSight's tables are dp, tp or pp)");
        ts_err_hint(err, "--format chakra or json models the CP exchange");
        return TS_ERR_PLAN;
    }
    if (p->ep > 1) {
        ts_err(err, TS_ERR_PLAN, "op tables have no expert parallelism (NeuSight's tables are dp, tp or pp)");
        ts_err_hint(err, "--format simai, chakra or json model the expert all-to-all");
        return TS_ERR_PLAN;
    }
    if (m->experts > 0 && p->etp != p->tp) {
        ts_err(err, TS_ERR_PLAN, "op tables split the experts like the dense MLP: --etp %lld must equal --tp %lld",
               (long long)p->etp, (long long)p->tp);
        ts_err_hint(err, "--format simai, chakra or json model expert tensor parallelism");
        return TS_ERR_PLAN;
    }
    bool dp = p->dp > 1, tpm = p->tp > 1;
    if ((dp ? 1 : 0) + (tpm ? 1 : 0) + (p->pp > 1 ? 1 : 0) > 1)
        return ts_err(err, TS_ERR_PLAN, "op tables describe one kind of parallelism at a time (dp, tp or pp), "
                                        "as NeuSight does");
    TsDtype dt = p->dtype;
    OtGen g = {.m = m, .p = p, .hw = hw, .dt = dt, .neusight = oo && oo->neusight,
               .act_bytes = (double)ts_dtype_bytes(dt == TS_DTYPE_FP8 ? TS_DTYPE_BF16 : dt),
               .mem_bw_gib = hw->gpu.hbm_bw_bytes_per_s / 1e9, .dp = dp, .tpm = tpm, .tp = (double)p->tp,
               .ok = true};
    Workload *w = wl_create(p->gpus, err);
    if (!w) return TS_ERR_INTERNAL;
    w->par = (WlParallel){.world = p->gpus, .tp = p->tp, .cp = 1, .pp = p->pp, .dp = p->dp, .ep = 1,
                          .vpp = 1, .layers_per_stage = m->layers, .ga = p->grad_accum};
    w->optable_elem_bytes = 4;
    snprintf(w->source, sizeof w->source, "trainsim %s: %s op table", TRAINSIM_VERSION, m->name);
    gen(&g);
    bool ok = g.ok;
    if (!ok || wl_class_begin(w, "stage0", 0) < 0 || !wl_rows_build(w, g.r, g.n)) {
        ok = false;
        ts_err(err, TS_ERR_INTERNAL, "out of memory building the op table");
    }
    for (int64_t i = 0; i < g.n; i++) free(g.names[i]);
    free(g.names);
    free(g.r);
    if (!ok) {
        wl_destroy(w);
        return TS_ERR_INTERNAL;
    }
    *out = w;
    return TS_OK;
}
