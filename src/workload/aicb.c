/* AICB's SimAI workload for one pipeline stage (reference/simai_aicb.md
 * §2-3, the AIOB path of SimAI_training_workload_generator.py), with the
 * compute times from trainsim's compute model instead of AIOB measurements.
 *
 * Legend: B micro-batch, S seq, H hidden, F ffn, V padded vocab, TP, L
 * layers per stage. tp_comm = 2*B*S*H bytes (bf16, full sequence, not /TP). */
#include "wl_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- AIOB-like per-shard times (ns, as AICB writes them) -------------------------- */
typedef struct AiobTimes {
    double emb, attn_fwd, mlp_fwd, grad_fwd, grad_bwd, logit;
} AiobTimes;

static void aiob_times(const WlModelDims *m, const WlPlanDims *p, const WlCost *c, double params,
                       AiobTimes *t)
{
    int64_t T = p->micro_batch * p->seq, H = m->hidden, tp = p->tp, db = p->dtype_bytes;
    int64_t hd = m->head_dim > 0 ? m->head_dim : H / m->heads;
    int64_t q = m->heads * hd / tp, kv = (m->kv_heads > 0 ? m->kv_heads : m->heads) * hd / tp;
    double ln = c->mem_s(c->ctx, 2.0 * (double)(T * H * db));
    t->emb = c->mem_s(c->ctx, 3.0 * (double)(T * H * db)); /* gather rows + position add */
    t->attn_fwd = ln + c->gemm_s(c->ctx, 1, T, q + 2 * kv, H) +
                  c->attn_s(c->ctx, p->micro_batch, m->heads / tp, p->seq, p->seq, hd, true, false) +
                  c->gemm_s(c->ctx, 1, T, H, q);
    int64_t f = m->ffn / tp;
    t->mlp_fwd = ln + c->gemm_s(c->ctx, 1, T, f * (m->swiglu ? 2 : 1), H) +
                 c->mem_s(c->ctx, (double)(T * f * db) * (m->swiglu ? 3.0 : 2.0)) + c->gemm_s(c->ctx, 1, T, H, f);
    /* AIOB param_time: one pass over an fp32 buffer of P/dp elements */
    t->grad_fwd = t->grad_bwd = c->mem_s(c->ctx, 3.0 * 4.0 * params / (double)p->dp);
    t->logit = c->gemm_s(c->ctx, 1, T, m->vocab_padded / tp, H);
    double *v[] = {&t->emb, &t->attn_fwd, &t->mlp_fwd, &t->grad_fwd, &t->grad_bwd, &t->logit};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) *v[i] = floor(*v[i] * 1e9); /* ns, int */
}

/* ---- rows ---------------------------------------------------------------------------- */
typedef struct Rows {
    WlRowSpec *r;
    int64_t n, cap;
} Rows;

static WlRowSpec *row(Rows *rs, const char *name, double f, double i, double w)
{
    if (rs->n == rs->cap) {
        int64_t nc = rs->cap ? rs->cap * 2 : 256;
        WlRowSpec *p = realloc(rs->r, (size_t)nc * sizeof *p);
        if (!p) return NULL;
        rs->r = p;
        rs->cap = nc;
    }
    WlRowSpec *r = &rs->r[rs->n++];
    memset(r, 0, sizeof *r);
    r->name = name;
    double t[3] = {f, i, w};
    for (int ph = 0; ph < 3; ph++) {
        r->has_comp[ph] = true;
        r->comp_s[ph] = t[ph] * 1e-9;
    }
    r->process_time = 100;
    return r;
}

static void comm(WlRowSpec *r, int ph, TsColl c, WlGroup g, double bytes)
{
    r->coll[ph] = c;
    r->group[ph] = g;
    r->bytes[ph] = bytes;
    if (ph == WL_PHASE_WG) r->flags[ph] = WL_F_ASYNC;
}

TsStatus wl_build_aicb(const WlModelDims *m, const WlPlanDims *p, const WlCost *c,
                       const WlAicbOptions *o, Workload **out, TsError *err)
{
    *out = NULL;
    bool compat = o && o->compat_1_1;
    int64_t tp = p->tp, H = m->hidden, S = p->seq, B = p->micro_batch;
    int64_t L = m->layers / p->pp; /* AICB: num_layers // PP; every stage gets embedding and head */
    int64_t V = m->vocab_padded, heads = m->heads, kv_ch = H / heads;
    int64_t F = m->ffn;
    bool moe = m->experts > 0;
    /* per (stage, TP rank) parameter counts, AICB's MockedParam shapes */
    double emb = (compat ? 2.0 : 4.0) * (double)(V / tp) * (double)H + (double)S * (double)H;
    double attn = (double)H * (double)(3 * kv_ch * heads / tp) + (double)H * (double)(kv_ch * heads / tp);
    double ln = p->sp ? 2.0 * (double)H : 0;
    double mlp = 2.0 * (double)H * (double)(F / tp);
    double moe_p = 0;
    if (moe) {
        double e = (double)H * (double)(m->moe_ffn > 0 ? m->moe_ffn : F) * (double)m->experts / (double)p->ep /
                   (double)tp * 2.0;
        moe_p = e * (double)L;
        mlp = 0;
    }
    double P = emb + (double)L * (attn + ln + mlp) + moe_p + (p->sp ? (double)H * (double)(V / tp) : 0);
    double tpc = 2.0 * (double)(B * S * H);
    AiobTimes at;
    aiob_times(m, p, c, P, &at);

    Workload *w = wl_create(p->world, err);
    if (!w) return TS_ERR_INTERNAL;
    w->par = (WlParallel){.world = p->world, .tp = tp, .cp = p->cp, .pp = p->pp, .dp = p->dp, .ep = p->ep,
                          .vpp = p->vpp, .layers_per_stage = L, .ga = p->ga,
                          .pp_comm_bytes = p->pp > 1 ? tpc / (p->sp ? (double)tp : 1.0) : 0};
    snprintf(w->source, sizeof w->source, "trainsim %s: %s (AICB layout)", TRAINSIM_VERSION, m->name);
    snprintf(w->policy, sizeof w->policy, "HYBRID_TRANSFORMER_FWD_IN_BCKWD");
    Rows rs = {0};
    WlRowSpec *r;
    TsColl ar_tp = tp > 1 ? TS_COLL_ALLREDUCE : TS_COLL_NONE;
#define ROW(...) \
    if (!(r = row(&rs, __VA_ARGS__))) goto oom
    ROW("grad_gather", 1, 1, 1);
    comm(r, WL_PHASE_WG, TS_COLL_ALLGATHER, WL_GROUP_DP, 2 * (P - moe_p));
    ROW("grad_param_comm", 1, 1, 1);
    comm(r, WL_PHASE_WG, TS_COLL_REDUCESCATTER, WL_GROUP_DP, 4 * (P - moe_p));
    ROW("grad_param_compute", 1, at.grad_fwd + at.grad_bwd, 1);
    if (!p->sp) {
        ROW("layernorm", 1, 1, 1);
        comm(r, WL_PHASE_IG, TS_COLL_ALLREDUCE, WL_GROUP_TP, 2 * P);
    }
    ROW("embedding_grads", 1, 1, 1);
    comm(r, WL_PHASE_IG, ar_tp, WL_GROUP_TP, ar_tp ? tpc : 0);
    if (p->ep != p->dp) {
        ROW("moe_grad_norm1", 1, 1, 1);
        comm(r, WL_PHASE_WG, TS_COLL_ALLGATHER, WL_GROUP_DP_EP, 2 * moe_p);
        ROW("moe_grad_norm2", 1, 1, 1);
        comm(r, WL_PHASE_WG, TS_COLL_REDUCESCATTER, WL_GROUP_DP_EP, 4 * moe_p);
    }
    bool rec = p->recompute != WL_RECOMPUTE_NONE;
    double a_f = p->sp ? floor((rec ? 2 * at.attn_fwd : at.attn_fwd) / 2) : (rec ? 2 * at.attn_fwd : at.attn_fwd);
    double a_b = p->sp ? floor(at.attn_fwd / 2) : at.attn_fwd;
    double m_f = p->sp ? floor(at.mlp_fwd / 2) : at.mlp_fwd;
    double fin_f = compat ? floor(at.attn_fwd / 2) : at.logit, fin_b = compat ? floor(at.attn_fwd / 2) : 2 * at.logit;
    double col_ig = compat ? 0 : tpc; /* AICB's column ig reduce-scatter is never sized */
    double stale = at.grad_bwd;       /* AICB's stale backward_compute_time (compat) */
    for (int64_t g = 0; g < p->ga; g++) {
        ROW("embedding_layer", at.emb, 1, compat ? stale : at.emb);
        comm(r, WL_PHASE_FWD, ar_tp, WL_GROUP_TP, ar_tp ? tpc : 0);
        for (int64_t l = 0; l < L; l++) {
            if (p->sp) {
                ROW("attention_column", a_f, a_b, a_b);
                comm(r, WL_PHASE_FWD, TS_COLL_ALLGATHER, WL_GROUP_TP, tpc);
                comm(r, WL_PHASE_IG, TS_COLL_REDUCESCATTER, WL_GROUP_TP, col_ig);
                ROW("attention_row", a_f, a_b, a_b);
                comm(r, WL_PHASE_FWD, TS_COLL_REDUCESCATTER, WL_GROUP_TP, tpc);
                comm(r, WL_PHASE_IG, TS_COLL_ALLGATHER, WL_GROUP_TP, tpc);
            } else {
                ROW("attention_layer", a_f, a_b, a_b);
                comm(r, WL_PHASE_FWD, ar_tp, WL_GROUP_TP, ar_tp ? tpc : 0);
            }
            if (moe) {
                double k = (double)m->topk;
                ROW("mlp_moelayer", at.mlp_fwd, at.mlp_fwd, at.mlp_fwd);
                comm(r, WL_PHASE_FWD, tp > 1 || p->ep > 1 ? TS_COLL_ALLGATHER : TS_COLL_NONE, WL_GROUP_TP,
                     2.0 * (double)(p->ep * m->experts * tp));
                ROW("mlp_moelayer", 1, 1, 1);
                comm(r, WL_PHASE_FWD, p->ep > 1 ? TS_COLL_ALLTOALL : TS_COLL_NONE, WL_GROUP_EP, tpc * k / (double)tp);
                comm(r, WL_PHASE_IG, p->ep > 1 ? TS_COLL_ALLTOALL : TS_COLL_NONE, WL_GROUP_EP, tpc * k / (double)tp);
                ROW("mlp_moelayer", 1, 1, 1);
                comm(r, WL_PHASE_FWD, tp > 1 ? TS_COLL_ALLGATHER : TS_COLL_NONE, WL_GROUP_TP, tpc * k);
                comm(r, WL_PHASE_IG, tp > 1 ? TS_COLL_REDUCESCATTER : TS_COLL_NONE, WL_GROUP_TP, tpc * k);
                ROW("mlp_moelayer", 1, 1, 1);
                comm(r, WL_PHASE_FWD, tp > 1 ? TS_COLL_REDUCESCATTER : TS_COLL_NONE, WL_GROUP_TP, tpc * k);
                comm(r, WL_PHASE_IG, tp > 1 ? TS_COLL_ALLGATHER : TS_COLL_NONE, WL_GROUP_TP, tpc * k);
                ROW("mlp_moelayer", 1, 1, 1);
                comm(r, WL_PHASE_FWD, p->ep > 1 ? TS_COLL_ALLTOALL : TS_COLL_NONE, WL_GROUP_EP, tpc * k / (double)tp);
                comm(r, WL_PHASE_IG, p->ep > 1 ? TS_COLL_ALLTOALL : TS_COLL_NONE, WL_GROUP_EP, tpc * k / (double)tp);
            } else if (p->sp) {
                ROW("mlp_column", m_f, m_f, m_f);
                comm(r, WL_PHASE_FWD, TS_COLL_ALLGATHER, WL_GROUP_TP, tpc);
                comm(r, WL_PHASE_IG, TS_COLL_REDUCESCATTER, WL_GROUP_TP, col_ig);
                ROW("mlp_row", m_f, m_f, m_f);
                comm(r, WL_PHASE_FWD, TS_COLL_REDUCESCATTER, WL_GROUP_TP, tpc);
                comm(r, WL_PHASE_IG, TS_COLL_ALLGATHER, WL_GROUP_TP, tpc);
            } else {
                ROW("mlp_layer", m_f, m_f, m_f);
                comm(r, WL_PHASE_FWD, ar_tp, WL_GROUP_TP, ar_tp ? tpc : 0);
            }
        }
        ROW("final_column", fin_f, fin_b, fin_b);
        if (p->sp) {
            comm(r, WL_PHASE_FWD, TS_COLL_ALLGATHER, WL_GROUP_TP, tpc);
            comm(r, WL_PHASE_IG, TS_COLL_REDUCESCATTER, WL_GROUP_TP, col_ig);
        } else {
            comm(r, WL_PHASE_FWD, ar_tp, WL_GROUP_TP, ar_tp ? tpc : 0);
        }
        stale = fin_b;
    }
    for (int i = 1; i <= 3; i++) {
        static const char *const ce[] = {"", "cross_entropy1", "cross_entropy2", "cross_entropy3"};
        ROW(ce[i], 0, 0, 0);
        comm(r, WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_TP, (double)(S * B * 4));
    }
    for (int i = 1; i <= 4; i++) {
        static const char *const op[] = {"", "optimizer1", "optimizer2", "optimizer3", "optimizer4"};
        ROW(op[i], 0, 0, 0);
        comm(r, WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_TP, 4);
    }
#undef ROW
    /* AICB zeroes sizes of NONE types: NONE rows carry no collective here. */
    for (int64_t i = 0; i < rs.n; i++)
        for (int ph = 0; ph < 3; ph++)
            if (rs.r[i].coll[ph] != TS_COLL_NONE && rs.r[i].bytes[ph] == 0 && rs.r[i].coll[ph] != TS_COLL_REDUCESCATTER &&
                rs.r[i].group[ph] != WL_GROUP_DP_EP)
                rs.r[i].coll[ph] = TS_COLL_NONE;
    if (wl_class_begin(w, "stage0", 0) < 0 || !wl_rows_build(w, rs.r, rs.n)) goto oom;
    free(rs.r);
    *out = w;
    return TS_OK;
oom:
    free(rs.r);
    wl_destroy(w);
    return ts_err(err, TS_ERR_INTERNAL, "out of memory building the AICB workload");
}
