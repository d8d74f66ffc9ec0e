/* The per-operator table of a GPT-2 model as NeuSight traces it with
 * torch.fx (reference/optable.md §1.2-1.4): the fx node names of HF GPT-2,
 * one block replicated per layer, DP gradient rows `<op>_grad` before each
 * parameterized op, TP all-reduce rows, a PP send/recv row. Times come from
 * the compute model (ms in the table); forward, input-gradient and
 * weight-gradient are all filled. neusight = keep the seed's size quirks
 * (wte grad S*H instead of V*H, a bias on the tied lm_head).
 *
 * Legend: B micro-batch, S seq, H hidden, A heads, D head dim, V vocab. */
#include "wl_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Row kinds: X(kind) */
typedef enum { R_MEM, R_VEC, R_GEMM, R_BMM, R_GRAD, R_TPAR, R_PP } RKind;

typedef struct OpRow {
    const char *name;
    RKind kind;
    double a, b, c, d; /* MEM: elements moved; VEC: elements, tensors; GEMM: M N K; BMM: batch M N K; GRAD: elements */
} OpRow;

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

static double neusight_mem(const void *ctx, double bytes)
{
    const WlOptableOptions *o = ctx;
    return bytes / (o->mem_gb_per_s * 1073741824.0);
}

static void times(const WlCost *c, const WlCost *mc, const OpRow *o, double db, double t[3])
{
    t[0] = t[1] = t[2] = 0;
    switch (o->kind) {
    case R_MEM: t[0] = mc->mem_s(mc->ctx, o->a * db); t[1] = t[0]; break;
    case R_VEC: t[0] = c->mem_s(c->ctx, o->a * o->b * db); t[1] = t[0] * 1.5; break;
    case R_GEMM:
        t[0] = c->gemm_s(c->ctx, 1, (int64_t)o->a, (int64_t)o->b, (int64_t)o->c);
        t[1] = c->gemm_s(c->ctx, 1, (int64_t)o->a, (int64_t)o->c, (int64_t)o->b);
        t[2] = c->gemm_s(c->ctx, 1, (int64_t)o->c, (int64_t)o->b, (int64_t)o->a);
        break;
    case R_BMM:
        t[0] = c->gemm_s(c->ctx, (int64_t)o->a, (int64_t)o->b, (int64_t)o->c, (int64_t)o->d);
        t[1] = c->gemm_s(c->ctx, (int64_t)o->a, (int64_t)o->b, (int64_t)o->d, (int64_t)o->c) +
               c->gemm_s(c->ctx, (int64_t)o->a, (int64_t)o->d, (int64_t)o->c, (int64_t)o->b);
        break;
    default: break;
    }
}

static bool add_op(Tab *t, const WlCost *c, const WlCost *mc, double db, const OpRow *o)
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
    times(c, mc, o, db, tm);
    for (int ph = 0; ph < 3; ph++) {
        s.has_comp[ph] = true;
        s.comp_s[ph] = tm[ph];
    }
    return push(t, o->name, &s);
}

TsStatus wl_build_optable(const WlModelDims *m, const WlPlanDims *p, const WlCost *c,
                          const WlOptableOptions *oo, Workload **out, TsError *err)
{
    *out = NULL;
    bool neusight = oo && oo->neusight;
    /* NeuSight's MEM rows: elements*4 / (Mem_Bw * 2^30) s, no learned part */
    WlCost nc = *c;
    if (neusight && oo->mem_gb_per_s > 0) {
        nc.ctx = oo;
        nc.mem_s = neusight_mem;
    }
    double B = (double)p->micro_batch, S = (double)p->seq, H = (double)m->hidden, V = (double)m->vocab;
    double tp = (double)p->tp, A = (double)m->heads / tp, D = H / (double)m->heads, F = (double)m->ffn;
    double T = B * S, db = p->dtype_bytes;
    bool dp = p->dp > 1, tpm = p->tp > 1;
    if ((dp ? 1 : 0) + (tpm ? 1 : 0) + (p->pp > 1 ? 1 : 0) > 1)
        return ts_err(err, TS_ERR_PLAN, "op tables describe one kind of parallelism at a time (dp, tp or pp), "
                                        "as NeuSight does");
    Workload *w = wl_create(p->world, err);
    if (!w) return TS_ERR_INTERNAL;
    w->par = (WlParallel){.world = p->world, .tp = p->tp, .cp = 1, .pp = p->pp, .dp = p->dp, .ep = 1,
                          .vpp = 1, .layers_per_stage = m->layers, .ga = p->ga};
    w->optable_elem_bytes = 4;
    snprintf(w->source, sizeof w->source, "trainsim %s: %s op table", TRAINSIM_VERSION, m->name);
    Tab t = {0};
    bool ok = true;
#define OP(...) ok = ok && add_op(&t, c, &nc, db, &(OpRow){__VA_ARGS__})
#define GRAD(nm, n) \
    if (dp) OP(nm, R_GRAD, n, 0, 0, 0)
    char nm[96];
    const double tiny = 2; /* fx getitem of a shape tuple: 2 elements */
    OP("getitem", R_MEM, tiny, 0, 0, 0);
    OP("getitem_1", R_MEM, tiny, 0, 0, 0);
    OP("getitem_2", R_MEM, tiny, 0, 0, 0);
    GRAD("transformer_wte_grad", neusight ? S * H : V * H);
    OP("transformer_wte", R_MEM, T + T * H, 0, 0, 0);
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
        OP(nm, R_VEC, T * H, 2, 0, 0);
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
        OP(N("softmax"), R_VEC, B * A * S * S, 3, 0, 0); /* max pass, sum pass, write */
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
        OP(nm, R_VEC, T * H, 2, 0, 0);
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
        OP(N("tanh"), R_VEC, Fe, 2, 0, 0);
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
    OP("transformer_ln_f", R_VEC, T * H, 2, 0, 0);
    if (neusight || !m->tied) GRAD("lm_head_grad", neusight ? H * V + V : H * V);
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
