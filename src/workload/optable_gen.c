/* The per-operator table of a GPT-2 model as NeuSight traces it with
 * torch.fx (reference/optable.md §1.2-1.4): the fx node names of HF GPT-2,
 * one block replicated per layer, DP gradient rows `<op>_grad` before each
 * parameterized op, TP all-reduce rows, a PP send/recv row. Every time comes
 * from hw.h's compute model (hw_op_time_s on a GraphOp of the row's kind;
 * ms in the table); forward, input-gradient and weight-gradient are all
 * filled. neusight = keep the seed's size quirks (wte grad S*H instead of
 * V*H, a bias on the tied lm_head) and NeuSight's formula for its MEM rows
 * (elements*4 / (Mem_Bw * 2^30) s, no efficiency or launch; optable.md 1.3).
 *
 * Legend: B micro-batch, S seq, H hidden, A heads, D head dim, V vocab. */
#include "wl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Row kinds: MEM a pure copy/view (NeuSight's MEM); EMB the word-embedding
 * gather (a MEM row for NeuSight); VEC elementwise, SOFTMAX, NORM, ACT
 * (tanh) memory-bound kernels; GEMM, BMM; GRAD, TPAR, PP communication. */
typedef enum { R_MEM, R_EMB, R_VEC, R_SOFTMAX, R_NORM, R_ACT, R_GEMM, R_BMM, R_GRAD, R_TPAR, R_PP } RKind;

typedef struct OpRow {
    const char *name;
    RKind kind;
    double a, b, c, d; /* MEM: elements moved; EMB: tokens, width; VEC: elements, tensors (inputs +
                          output); SOFTMAX/ACT: elements; NORM: rows, width; GEMM: M N K; BMM: batch M N K;
                          GRAD/TPAR/PP: elements */
} OpRow;

/* What the rows are costed with. */
typedef struct Cost {
    const HwModel *hw;
    TsDtype dt;
    bool neusight_mem;  /* MEM rows by NeuSight's formula */
    double elem_bytes;  /* of MEM rows: 4 for NeuSight (fp32 tables), else the plan's dtype */
    double mem_bw_gib;  /* its Mem_Bw (the datasheet GB/s, read as GiB/s), 1555 */
} Cost;

typedef struct Tab {
    WlRowSpec *r;
    int64_t n, cap;
    char **names; /* owned name strings */
} Tab;

static bool push(Tab *t, const char *name, const WlRowSpec *spec)
{
    if (t->n == t->cap) {
        int64_t nc = t->cap ? t->cap * 2 : 128;
        WlRowSpec *p = realloc(t->r, (size_t)nc * sizeof *p);
        char **q = realloc(t->names, (size_t)nc * sizeof *q);
        if (p) t->r = p;
        if (q) t->names = q;
        if (!p || !q) return false;
        t->cap = nc;
    }
    t->names[t->n] = strdup(name);
    if (!t->names[t->n]) return false;
    t->r[t->n] = *spec;
    t->r[t->n].name = t->names[t->n];
    t->n++;
    return true;
}

static double mem_row_s(const Cost *c, double bytes)
{
    if (c->neusight_mem) return bytes / (c->mem_bw_gib * 1073741824.0);
    return hw_memory_time_s(c->hw, bytes);
}

/* fwd / input-grad / weight-grad seconds of a compute row */
static void times(const Cost *c, const OpRow *o, double t[3])
{
    t[0] = t[1] = t[2] = 0;
    GraphOp op = {.layer = -1, .expert_id = -1};
    double fl;
    switch (o->kind) {
    case R_MEM: t[0] = t[1] = mem_row_s(c, o->a * c->elem_bytes); return;
    case R_EMB:
        if (c->neusight_mem) { /* NeuSight: indices + output rows, 4 B each */
            t[0] = t[1] = mem_row_s(c, (o->a + o->a * o->b) * 4.0);
            return;
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
    case R_NORM:
        op.kind = GRAPH_OP_NORM;
        op.dims[0] = (int64_t)o->a, op.dims[1] = (int64_t)o->b, op.dims[2] = 1, op.dims[3] = 1;
        break;
    case R_GEMM: /* {M tokens, K in, N out, bias} */
        op.kind = GRAPH_OP_GEMM;
        op.dims[0] = (int64_t)o->a, op.dims[1] = (int64_t)o->c, op.dims[2] = (int64_t)o->b, op.dims[3] = 1;
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
    default: return;
    }
    t[0] = hw_op_time_s(c->hw, &op, HW_PASS_FWD, c->dt);
    t[1] = hw_op_time_s(c->hw, &op, HW_PASS_DGRAD, c->dt);
    t[2] = hw_op_time_s(c->hw, &op, HW_PASS_WGRAD, c->dt);
}

static bool add_op(Tab *t, const Cost *c, const OpRow *o)
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
        return push(t, o->name, &s);
    }
    double tm[3];
    times(c, o, tm);
    for (int ph = 0; ph < 3; ph++) {
        s.has_comp[ph] = true;
        s.comp_s[ph] = tm[ph];
    }
    return push(t, o->name, &s);
}

TsStatus wl_build_optable(const ModelSpec *m, const ParallelPlan *p, const HwModel *hw, const WlOptableOptions *oo,
                          Workload **out, TsError *err)
{
    *out = NULL;
    bool neusight = oo && oo->neusight;
    TsDtype dt = p->dtype;
    double db = (double)ts_dtype_bytes(dt == TS_DTYPE_FP8 ? TS_DTYPE_BF16 : dt);
    Cost cost = {.hw = hw, .dt = dt, .neusight_mem = neusight,
                 .elem_bytes = neusight ? 4.0 : db, .mem_bw_gib = hw->gpu.hbm_bw_bytes_per_s / 1e9};
    double B = (double)p->micro_batch, S = (double)p->seq, H = (double)m->hidden, V = (double)m->vocab;
    double tp = (double)p->tp, A = (double)m->heads / tp, D = H / (double)m->heads, F = (double)m->ffn;
    double T = B * S;
    bool dp = p->dp > 1, tpm = p->tp > 1;
    if (p->cp > 1) {
        ts_err(err, TS_ERR_PLAN, "op tables have no context parallelism (NeuSight's tables are dp, tp or pp)");
        ts_err_hint(err, "--format chakra or json models the CP exchange");
        return TS_ERR_PLAN;
    }
    if ((dp ? 1 : 0) + (tpm ? 1 : 0) + (p->pp > 1 ? 1 : 0) > 1)
        return ts_err(err, TS_ERR_PLAN, "op tables describe one kind of parallelism at a time (dp, tp or pp), "
                                        "as NeuSight does");
    Workload *w = wl_create(p->gpus, err);
    if (!w) return TS_ERR_INTERNAL;
    w->par = (WlParallel){.world = p->gpus, .tp = p->tp, .cp = 1, .pp = p->pp, .dp = p->dp, .ep = 1,
                          .vpp = 1, .layers_per_stage = m->layers, .ga = p->grad_accum};
    w->optable_elem_bytes = 4;
    snprintf(w->source, sizeof w->source, "trainsim %s: %s op table", TRAINSIM_VERSION, m->name);
    Tab t = {0};
    bool ok = true;
#define OP(...) ok = ok && add_op(&t, &cost, &(OpRow){__VA_ARGS__})
#define GRAD(nm, n) \
    if (dp) OP(nm, R_GRAD, n, 0, 0, 0)
    char nm[96];
    const double tiny = 2; /* fx getitem of a shape tuple: 2 elements */
    OP("getitem", R_MEM, tiny, 0, 0, 0);
    OP("getitem_1", R_MEM, tiny, 0, 0, 0);
    OP("getitem_2", R_MEM, tiny, 0, 0, 0);
    GRAD("transformer_wte_grad", neusight ? S * H : V * H);
    OP("transformer_wte", R_EMB, T, H, 0, 0);
    OP("add_1", R_VEC, T * H, 3, 0, 0);
    OP("getitem_3", R_MEM, tiny, 0, 0, 0);
    for (int64_t l = 0; l < m->layers && ok; l++) {
        /* fx numbering inside a block is per traced layer; blocks after the
         * first get a ".<layer>" suffix (NeuSight's replicate_layer copies rows) */
        char sfx[24] = "";
        if (l > 0) snprintf(sfx, sizeof sfx, ".%lld", (long long)l);
#define N(s) (snprintf(nm, sizeof nm, "%s%s", s, sfx), nm)
        snprintf(nm, sizeof nm, "transformer_h_%lld_ln_1_grad", (long long)l);
        GRAD(nm, 2 * H);
        snprintf(nm, sizeof nm, "transformer_h_%lld_ln_1", (long long)l);
        OP(nm, R_NORM, T, H, 0, 0);
        OP(N("getitem_4"), R_MEM, tiny, 0, 0, 0);
        GRAD(N("addmm_grad"), H * 3 * H + 3 * H);
        OP(N("addmm"), R_GEMM, T, 3 * H / tp, H, 0);
        OP(N("getitem_5"), R_MEM, T * H / tp, 0, 0, 0);
        OP(N("getitem_6"), R_MEM, T * H / tp, 0, 0, 0);
        OP(N("getitem_7"), R_MEM, T * H / tp, 0, 0, 0);
        OP(N("getitem_8"), R_MEM, tiny, 0, 0, 0);
        OP(N("getitem_9"), R_MEM, tiny, 0, 0, 0);
        OP(N("getitem_10"), R_MEM, tiny, 0, 0, 0);
        OP(N("matmul"), R_BMM, B * A, S, S, D);
        OP(N("truediv"), R_VEC, B * A * S * S, 2, 0, 0);
        OP(N("getitem_11"), R_MEM, 2 * S * S, 0, 0, 0);
        OP(N("where"), R_MEM, 2 * B * A * S * S, 0, 0, 0);
        OP(N("softmax"), R_SOFTMAX, B * A * S * S, 0, 0, 0);
        OP(N("matmul_1"), R_BMM, B * A, S, D, S);
        OP(N("contiguous"), R_MEM, 2 * T * H / tp, 0, 0, 0);
        OP(N("getitem_12"), R_MEM, tiny, 0, 0, 0);
        OP(N("getitem_13"), R_MEM, tiny, 0, 0, 0);
        GRAD(N("addmm_1_grad"), H * H + H);
        OP(N("addmm_1"), R_GEMM, T, H, H / tp, 0);
        if (tpm) OP(N("reduce_from_tensor_model_parallel_region"), R_TPAR, T * H, 0, 0, 0);
        OP(N("add_10"), R_VEC, T * H, 3, 0, 0);
        snprintf(nm, sizeof nm, "transformer_h_%lld_ln_2_grad", (long long)l);
        GRAD(nm, 2 * H);
        snprintf(nm, sizeof nm, "transformer_h_%lld_ln_2", (long long)l);
        OP(nm, R_NORM, T, H, 0, 0);
        OP(N("getitem_14"), R_MEM, tiny, 0, 0, 0);
        GRAD(N("addmm_2_grad"), H * F + F);
        OP(N("addmm_2"), R_GEMM, T, F / tp, H, 0);
        /* gelu_new: 0.5*x*(1+tanh(sqrt(2/pi)*(x+0.044715*x^3))) */
        double Fe = T * F / tp;
        OP(N("mul"), R_VEC, Fe, 2, 0, 0);
        OP(N("pow_2"), R_VEC, Fe, 2, 0, 0);
        OP(N("mul_1"), R_VEC, Fe, 2, 0, 0);
        OP(N("add_12"), R_VEC, Fe, 3, 0, 0);
        OP(N("mul_2"), R_VEC, Fe, 2, 0, 0);
        OP(N("tanh"), R_ACT, Fe, 0, 0, 0);
        OP(N("add_13"), R_VEC, Fe, 2, 0, 0);
        OP(N("mul_3"), R_VEC, Fe, 3, 0, 0);
        OP(N("getitem_15"), R_MEM, tiny, 0, 0, 0);
        GRAD(N("addmm_3_grad"), F * H + H);
        OP(N("addmm_3"), R_GEMM, T, H, F / tp, 0);
        if (tpm) OP(N("reduce_from_tensor_model_parallel_region_1"), R_TPAR, T * H, 0, 0, 0);
        OP(N("add_15"), R_VEC, T * H, 3, 0, 0);
        if (p->pp > 1 && l == m->layers / 2 - 1) OP("sendrecv", R_PP, T * H, 0, 0, 0);
#undef N
    }
    GRAD("transformer_ln_f_grad", 2 * H);
    OP("transformer_ln_f", R_NORM, T, H, 0, 0);
    if (neusight || !m->tied_embeddings) GRAD("lm_head_grad", neusight ? H * V + V : H * V);
    OP("lm_head", R_GEMM, T, V / tp, H, 0);
#undef OP
#undef GRAD
    if (!ok || wl_class_begin(w, "stage0", 0) < 0 || !wl_rows_build(w, t.r, t.n)) {
        ok = false;
        ts_err(err, TS_ERR_INTERNAL, "out of memory building the op table");
    }
    for (int64_t i = 0; i < t.n; i++) free(t.names[i]);
    free(t.names);
    free(t.r);
    if (!ok) {
        wl_destroy(w);
        return TS_ERR_INTERNAL;
    }
    *out = w;
    return TS_OK;
}
