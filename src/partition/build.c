/* build.c — part_build: per-rank op templates, collectives, chunks, memory.
 *
 * Dimension legend: B micro-batch, S seq, H hidden, t TP, c CP, e EP,
 * et ETP, E experts, K top-k, d activation bytes.
 * The graph's first dense layer and first MoE layer are copied once as
 * templates (no per-layer or per-rank lists). Per-rank dims:
 *   tokens          x (B*S)/(B_g*S_g) / c, and / t inside SP regions
 *   column-parallel N / t; row-parallel K / t; heads / t; vocab rows / t
 *   routed experts  per-expert tokens x e (x et/t with SP), width / et,
 *                   repeat = E/e local experts
 * FLOPs scale with the product of the changed dims; GEMM bytes with
 * MK + KN + MN. Collective sizes are whole buffers (nccl-tests). */
#include "part_int.h"
#include "../common/common_int.h"

#include <string.h>

typedef struct Ctx {
    const ModuleGraph *g;
    const ParallelPlan *p;
    TsArena *a;
    double tok;    /* token scale: plan tokens per CP rank / graph tokens */
    double bscale; /* micro-batch / graph batch */
    double d;      /* activation bytes */
} Ctx;

static GraphRole op_role(const ModuleGraph *g, const GraphOp *o)
{
    for (int32_t id = o->module; id >= 0; id = g->mods[id].parent) {
        GraphRole r = g->mods[id].role;
        if (r == GRAPH_ROLE_EMBED || r == GRAPH_ROLE_HEAD || r == GRAPH_ROLE_LAYER) return r;
    }
    return o->layer >= 0 ? GRAPH_ROLE_LAYER : GRAPH_ROLE_EMBED;
}

static bool sp_region(const Ctx *c, const GraphOp *o)
{
    if (!c->p->sp) return false;
    if (o->split == GRAPH_SPLIT_SEQ) return true;
    /* Megatron SP shards every non-TP op of a layer and the final norm. */
    return o->split == GRAPH_SPLIT_NONE && o->kind != GRAPH_OP_GEMM &&
           o->kind != GRAPH_OP_EMBEDDING && o->kind != GRAPH_OP_LOSS;
}

/* Rescale one op to its per-rank shape. */
static void rank_op(const Ctx *c, const GraphOp *src, PartOp *dst)
{
    const ParallelPlan *p = c->p;
    GraphOp o = *src;
    double t = (double)p->tp, ratio = 1, bratio = -1;
    double tok = c->tok * (sp_region(c, src) ? 1.0 / t : 1.0);
    int32_t repeat = 1;
    double ex_tok = c->tok * (double)p->ep * (p->sp ? (double)p->etp / t : 1.0);
    const ModelSpec *m = &c->g->spec;
    switch (o.kind) {
    case GRAPH_OP_GEMM: {
        double M = (double)o.dims[0], K = (double)o.dims[1], N = (double)o.dims[2];
        double M2 = M * (o.expert ? ex_tok : c->tok), K2 = K, N2 = N;
        double tt = o.expert ? (double)p->etp : t;
        if (o.split == GRAPH_SPLIT_COL || o.split == GRAPH_SPLIT_VOCAB) N2 = N / tt;
        else if (o.split == GRAPH_SPLIT_ROW) K2 = K / tt;
        if (o.expert && m->experts > 0) repeat = (int32_t)(m->experts / p->ep);
        o.dims[0] = (int64_t)(M2 + 0.5); o.dims[1] = (int64_t)K2; o.dims[2] = (int64_t)N2;
        ratio = (M * K * N) > 0 ? (M2 * K2 * N2) / (M * K * N) : 0;
        double b0 = M * K + K * N + M * N;
        bratio = b0 > 0 ? (M2 * K2 + K2 * N2 + M2 * N2) / b0 : 0;
        break;
    }
    case GRAPH_OP_BATCHED_GEMM: {
        double bh = (double)o.dims[0] * c->bscale;
        if (o.split == GRAPH_SPLIT_HEADS || o.split == GRAPH_SPLIT_COL) bh /= t;
        double M2 = (double)o.dims[1] / (double)p->cp;
        ratio = (bh * M2) / ((double)o.dims[0] * (double)o.dims[1]);
        o.dims[0] = (int64_t)bh; o.dims[1] = (int64_t)M2;
        break;
    }
    case GRAPH_OP_ATTENTION_CORE: {
        double B2 = (double)o.dims[0] * c->bscale, A2 = (double)o.dims[1] / t;
        double S2 = (double)o.dims[2] / (double)p->cp;
        ratio = (B2 * A2 * S2) / ((double)o.dims[0] * (double)o.dims[1] * (double)o.dims[2]);
        o.dims[0] = (int64_t)B2; o.dims[1] = (int64_t)A2; o.dims[2] = (int64_t)S2;
        break;
    }
    case GRAPH_OP_NORM: case GRAPH_OP_ROUTER: case GRAPH_OP_EMBEDDING: case GRAPH_OP_LOSS:
    case GRAPH_OP_ROPE: {
        double r0 = tok;
        o.dims[0] = (int64_t)((double)o.dims[0] * tok + 0.5);
        if (o.kind == GRAPH_OP_EMBEDDING && o.split == GRAPH_SPLIT_VOCAB) {
            o.dims[2] /= p->tp;
            r0 /= t;
        }
        if (o.kind == GRAPH_OP_LOSS) { o.dims[1] /= p->tp; r0 /= t; }
        if (o.kind == GRAPH_OP_ROPE) { o.dims[1] /= p->tp; r0 /= t; }
        ratio = r0;
        break;
    }
    default: { /* SOFTMAX, ACTIVATION, ELEMENTWISE, DROPOUT: dims[0] = numel */
        double r0 = o.expert ? ex_tok / (double)p->etp : tok;
        if (o.split == GRAPH_SPLIT_COL || o.split == GRAPH_SPLIT_HEADS ||
            o.split == GRAPH_SPLIT_ROW || o.split == GRAPH_SPLIT_VOCAB)
            r0 = o.expert ? r0 : r0 / t;
        if (o.expert && m->experts > 0) repeat = (int32_t)(m->experts / p->ep);
        o.dims[0] = (int64_t)((double)o.dims[0] * r0 + 0.5);
        ratio = r0;
        break;
    }
    }
    if (bratio < 0) bratio = ratio;
    o.ds_flops *= ratio; o.ds_macs *= ratio;
    o.fwd_flops *= ratio; o.dgrad_flops *= ratio; o.wgrad_flops *= ratio;
    o.fwd_bytes *= bratio; o.bwd_bytes *= bratio; o.act_bytes *= ratio;
    dst->op = o;
    dst->repeat = repeat;
}

/* ---- collectives ---------------------------------------------------------------- */
typedef struct CollList {
    PartColl *v;
    int32_t n, cap;
} CollList;

static bool push(Ctx *c, CollList *l, const char *name, TsColl k, PlanGroup gk, double bytes,
                 int32_t count, PartPhase ph, int32_t after, bool ovl)
{
    if (l->n == l->cap) {
        int32_t cap = l->cap ? 2 * l->cap : 16;
        PartColl *v = ts_arena_grow(c->a, l->v, sizeof *v, (size_t)l->n, (size_t)cap);
        if (!v) return false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = (PartColl){name, k, gk, bytes, count, ph, after, ovl, -1};
    return true;
}

/* TP / SP collectives around the column/row GEMM pairs of a segment, CP K/V
 * exchange at the attention core, EP all-to-all around routed experts. */
static bool seg_colls(Ctx *c, PartSegment *s)
{
    const ParallelPlan *p = c->p;
    const ModelSpec *m = &c->g->spec;
    CollList l = {0};
    double toks = (double)(p->micro_batch * p->seq) / (double)p->cp;
    double hb = toks * (double)m->hidden * c->d;
    bool ok = true, ovl = p->tp_overlap;
    for (int32_t i = 0; i < s->n_ops && ok; i++) {
        const GraphOp *o = &s->ops[i].op;
        if (o->kind == GRAPH_OP_GEMM && !o->expert && p->tp > 1 &&
            s->kind != PART_SEG_EMBED) {
            if (o->split == GRAPH_SPLIT_COL && s->kind != PART_SEG_HEAD) {
                if (p->sp) {
                    ok = ok && push(c, &l, "sp_ag_fwd", TS_COLL_ALLGATHER, PLAN_GROUP_TP, hb, 1, PART_PHASE_FWD, i - 1, ovl);
                    ok = ok && push(c, &l, "sp_ag_bwd", TS_COLL_ALLGATHER, PLAN_GROUP_TP, hb, 1, PART_PHASE_BWD, i, ovl);
                    ok = ok && push(c, &l, "sp_rs_bwd", TS_COLL_REDUCESCATTER, PLAN_GROUP_TP, hb, 1, PART_PHASE_BWD, i - 1, ovl);
                } else {
                    ok = ok && push(c, &l, "tp_ar_bwd", TS_COLL_ALLREDUCE, PLAN_GROUP_TP, hb, 1, PART_PHASE_BWD, i - 1, ovl);
                }
            } else if (o->split == GRAPH_SPLIT_ROW) {
                if (p->sp) {
                    ok = ok && push(c, &l, "sp_rs_fwd", TS_COLL_REDUCESCATTER, PLAN_GROUP_TP, hb, 1, PART_PHASE_FWD, i, ovl);
                    ok = ok && push(c, &l, "sp_ag_bwd", TS_COLL_ALLGATHER, PLAN_GROUP_TP, hb, 1, PART_PHASE_BWD, i, ovl);
                } else {
                    ok = ok && push(c, &l, "tp_ar_fwd", TS_COLL_ALLREDUCE, PLAN_GROUP_TP, hb, 1, PART_PHASE_FWD, i, ovl);
                }
            } else if (o->split == GRAPH_SPLIT_COL && s->kind == PART_SEG_HEAD) {
                if (p->sp)
                    ok = ok && push(c, &l, "sp_ag_head", TS_COLL_ALLGATHER, PLAN_GROUP_TP, hb, 1, PART_PHASE_FWD, i - 1, ovl);
                ok = ok && push(c, &l, p->sp ? "sp_rs_head_bwd" : "tp_ar_head_bwd",
                                p->sp ? TS_COLL_REDUCESCATTER : TS_COLL_ALLREDUCE, PLAN_GROUP_TP, hb, 1,
                                PART_PHASE_BWD, i - 1, ovl);
            }
        }
        if (o->kind == GRAPH_OP_EMBEDDING && p->tp > 1 && o->split == GRAPH_SPLIT_VOCAB)
            ok = ok && push(c, &l, p->sp ? "embed_rs" : "embed_ar",
                            p->sp ? TS_COLL_REDUCESCATTER : TS_COLL_ALLREDUCE, PLAN_GROUP_TP, hb, 1,
                            PART_PHASE_FWD, i, false);
        if (o->kind == GRAPH_OP_LOSS && p->tp > 1) /* vocab-parallel CE: max, sum-exp, target logit */
            ok = ok && push(c, &l, "ce_ar", TS_COLL_ALLREDUCE, PLAN_GROUP_TP, toks * 4.0, 3, PART_PHASE_FWD, i, false);
        if (o->kind == GRAPH_OP_ATTENTION_CORE && p->cp > 1) {
            double kv = 2.0 * (double)p->micro_batch * ((double)p->seq / (double)p->cp) *
                        (double)(m->kv_heads * m->head_dim) * c->d / (double)p->tp;
            ok = ok && push(c, &l, "cp_kv_fwd", TS_COLL_SENDRECV, PLAN_GROUP_CP, kv, (int32_t)(p->cp - 1), PART_PHASE_FWD, i - 1, true);
            ok = ok && push(c, &l, "cp_kv_bwd", TS_COLL_SENDRECV, PLAN_GROUP_CP, 2 * kv, (int32_t)(p->cp - 1), PART_PHASE_BWD, i, true);
        }
        if (o->kind == GRAPH_OP_ROUTER && p->ep > 1) {
            double a2a = toks / (p->sp ? (double)p->tp : 1.0) * (double)m->topk * (double)m->hidden * c->d;
            ok = ok && push(c, &l, "ep_dispatch_fwd", TS_COLL_ALLTOALL, PLAN_GROUP_EP, a2a, 1, PART_PHASE_FWD, i, false);
            ok = ok && push(c, &l, "ep_combine_fwd", TS_COLL_ALLTOALL, PLAN_GROUP_EP, a2a, 1, PART_PHASE_FWD, s->n_ops - 1, false);
            ok = ok && push(c, &l, "ep_combine_bwd", TS_COLL_ALLTOALL, PLAN_GROUP_EP, a2a, 1, PART_PHASE_BWD, s->n_ops - 1, false);
            ok = ok && push(c, &l, "ep_dispatch_bwd", TS_COLL_ALLTOALL, PLAN_GROUP_EP, a2a, 1, PART_PHASE_BWD, i, false);
            if (p->etp > 1) {
                double g = a2a * (double)p->etp;
                ok = ok && push(c, &l, "etp_ag_fwd", TS_COLL_ALLGATHER, PLAN_GROUP_ETP, g, 1, PART_PHASE_FWD, i, false);
                ok = ok && push(c, &l, "etp_rs_fwd", TS_COLL_REDUCESCATTER, PLAN_GROUP_ETP, g, 1, PART_PHASE_FWD, s->n_ops - 1, false);
                ok = ok && push(c, &l, "etp_ag_bwd", TS_COLL_ALLGATHER, PLAN_GROUP_ETP, g, 1, PART_PHASE_BWD, s->n_ops - 1, false);
                ok = ok && push(c, &l, "etp_rs_bwd", TS_COLL_REDUCESCATTER, PLAN_GROUP_ETP, g, 1, PART_PHASE_BWD, i, false);
            }
        }
    }
    if (ok && p->zero >= 3 && (s->kind == PART_SEG_DENSE || s->kind == PART_SEG_MOE) &&
        p->dp * p->cp > 1) {
        double pb = (s->params - s->expert_params) * c->d;
        ok = push(c, &l, "zero3_ag_fwd", TS_COLL_ALLGATHER, PLAN_GROUP_DPCP, pb, 1, PART_PHASE_FWD, -1, true) &&
             push(c, &l, "zero3_ag_bwd", TS_COLL_ALLGATHER, PLAN_GROUP_DPCP, pb, 1, PART_PHASE_BWD, s->n_ops - 1, true) &&
             push(c, &l, "zero3_rs_bwd", TS_COLL_REDUCESCATTER, PLAN_GROUP_DPCP, pb, 1, PART_PHASE_BWD, -1, true);
    }
    s->colls = l.v;
    s->n_colls = l.n;
    return ok;
}

/* ---- templates ---------------------------------------------------------------- */

static bool fill_segment(Ctx *c, PartSegment *s, const int32_t *idx, int32_t n)
{
    s->present = n > 0;
    if (n == 0) return true;
    s->ops = ts_arena_alloc(c->a, sizeof *s->ops * (size_t)n);
    if (!s->ops) return false;
    s->n_ops = n;
    for (int32_t i = 0; i < n; i++) {
        rank_op(c, &c->g->ops[idx[i]], &s->ops[i]);
        s->ops[i].graph_op = idx[i];
        const GraphOp *o = &s->ops[i].op;
        double r = (double)s->ops[i].repeat;
        s->fwd_flops += o->fwd_flops * r;
        s->dgrad_flops += o->dgrad_flops * r;
        s->wgrad_flops += o->wgrad_flops * r;
        s->fwd_bytes += o->fwd_bytes * r;
        s->bwd_bytes += o->bwd_bytes * r;
    }
    return true;
}

/* Growable index list in the arena. */
typedef struct IdxList { int32_t *v; int32_t n, cap; } IdxList;

static bool idx_push(TsArena *a, IdxList *l, int32_t x)
{
    if (l->n == l->cap) {
        int32_t cap = l->cap ? 2 * l->cap : 64;
        int32_t *v = ts_arena_grow(a, l->v, sizeof *v, (size_t)l->n, (size_t)cap);
        if (!v) return false;
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return true;
}

/* Collect the op indices of each segment from the graph's per-layer index
 * (layer_first_op, layer_expert_ops): the ops before layer 0, the first
 * dense and the first MoE layer, and the head after the last layer, without
 * scanning the other layers. Routed experts appear once per expert in the
 * graph; the template keeps the first expert's ops (all of them: GEMMs,
 * activation, gating product) and repeats them E/ep times. */
static bool collect(Ctx *c, IdxList l[PART_SEG_COUNT])
{
    const ModuleGraph *g = c->g;
    const ModelSpec *m = &g->spec;
    const int32_t *lf = g->layer_first_op, *x = g->layer_expert_ops;
    int64_t first_dense = -1, first_moe = -1;
    for (int64_t k = 0; k < m->layers && (first_dense < 0 || (m->experts > 0 && first_moe < 0)); k++) {
        if (model_layer_is_moe(m, k)) { if (first_moe < 0) first_moe = k; }
        else if (first_dense < 0) first_dense = k;
    }
    for (int32_t i = 0; i < lf[0]; i++)
        if (op_role(g, &g->ops[i]) == GRAPH_ROLE_EMBED && !idx_push(c->a, &l[PART_SEG_EMBED], i)) return false;
    int64_t seg_layer[2] = {first_dense, first_moe};
    int seg_kind[2] = {PART_SEG_DENSE, PART_SEG_MOE};
    for (int s = 0; s < 2; s++) {
        int64_t L = seg_layer[s];
        if (L < 0) continue;
        int32_t xb = x[2 * L], xe = x[2 * L + 1];
        for (int32_t i = lf[L]; i < lf[L + 1]; i++) {
            if (i == xb && xb < xe) { /* the first expert's run, then past the others */
                int32_t id0 = g->ops[xb].expert_id;
                for (; i < xe && g->ops[i].expert_id == id0; i++)
                    if (!idx_push(c->a, &l[seg_kind[s]], i)) return false;
                i = xe - 1;
                continue;
            }
            if (op_role(g, &g->ops[i]) == GRAPH_ROLE_LAYER && !idx_push(c->a, &l[seg_kind[s]], i)) return false;
        }
    }
    int32_t j = g->n_ops - 1;
    while (j >= lf[m->layers] && op_role(g, &g->ops[j]) != GRAPH_ROLE_LAYER) j--;
    for (int32_t k = j + 1; k < g->n_ops; k++)
        if (op_role(g, &g->ops[k]) == GRAPH_ROLE_HEAD && !idx_push(c->a, &l[PART_SEG_HEAD], k))
            return false;
    return true;
}

static bool build_stage_colls(Ctx *c, Partition *pt)
{
    const ParallelPlan *p = &pt->plan;
    const ModelSpec *m = &c->g->spec;
    CollList l = {0};
    bool ok = true;
    double toks = (double)(p->micro_batch * p->seq) / (double)p->cp;
    if (p->pp > 1) {
        double b = toks * (double)m->hidden * c->d / (p->sp ? (double)p->tp : 1.0);
        ok = ok && push(c, &l, "pp_send_fwd", TS_COLL_SENDRECV, PLAN_GROUP_PP, b, (int32_t)p->vpp, PART_PHASE_FWD, -1, true);
        ok = ok && push(c, &l, "pp_send_bwd", TS_COLL_SENDRECV, PLAN_GROUP_PP, b, (int32_t)p->vpp, PART_PHASE_BWD, -1, true);
    }
    bool shard = p->zero >= 1 || p->dist_opt;
    double gb = p->zero >= 1 ? c->d : 4.0;
    int64_t edp = p->tp * p->cp * p->dp / (p->ep * p->etp);
    for (int64_t s = 0; s < p->pp && ok; s++) {
        double all = 0, ex = 0;
        for (int64_t v = 0; v < p->vpp; v++) {
            const PartChunk *ch = &pt->chunks[v * p->pp + s];
            all += ch->params;
            ex += ch->n_moe * pt->seg[PART_SEG_MOE].expert_params;
        }
        double dense = all - ex;
        struct { double n; PlanGroup g; int64_t size; const char *rs, *ag, *ar; } k[2] = {
            {dense, PLAN_GROUP_DPCP, p->dp * p->cp, "dp_grad_rs", "dp_param_ag", "dp_grad_ar"},
            {ex, PLAN_GROUP_EDP, edp, "edp_grad_rs", "edp_param_ag", "edp_grad_ar"},
        };
        for (int q = 0; q < 2 && ok; q++) {
            if (k[q].n <= 0 || k[q].size <= 1) continue;
            int32_t before = l.n;
            if (shard) {
                ok = push(c, &l, k[q].rs, TS_COLL_REDUCESCATTER, k[q].g, k[q].n * gb, 1, PART_PHASE_STEP, -1, true) &&
                     push(c, &l, k[q].ag, TS_COLL_ALLGATHER, k[q].g, k[q].n * c->d, 1, PART_PHASE_STEP, -1, true);
            } else {
                ok = push(c, &l, k[q].ar, TS_COLL_ALLREDUCE, k[q].g, k[q].n * gb, 1, PART_PHASE_STEP, -1, true);
            }
            for (int32_t x = before; x < l.n; x++) l.v[x].stage = (int32_t)s;
        }
    }
    if (ok && p->pp > 1 && m->tied_embeddings && m->lm_head) {
        double e = (double)model_padded_vocab(m, p->tp) * (double)m->hidden / (double)p->tp;
        ok = push(c, &l, "embed_grad_ar", TS_COLL_ALLREDUCE, PLAN_GROUP_EMBED, e * gb, 1, PART_PHASE_STEP, -1, false);
    }
    pt->stage_colls = l.v;
    pt->n_stage_colls = l.n;
    return ok;
}

TsStatus part_build(const ModuleGraph *g, const ParallelPlan *plan, const PartMemOptions *mo,
                    Partition **out, TsError *err)
{
    *out = NULL;
    ParallelPlan p = *plan;
    if (plan_resolve(&g->spec, &p, err) != TS_OK) return TS_ERR_PLAN;
    TsArena *a = ts_arena_create(64 * 1024);
    if (!a) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    Partition *pt = ts_arena_alloc(a, sizeof *pt);
    if (!pt) goto oom;
    pt->arena = a;
    pt->graph = g;
    if (p.n_stage_layers > 0) {
        int64_t *sl = ts_arena_alloc(a, sizeof *sl * (size_t)p.n_stage_layers);
        if (!sl) goto oom;
        memcpy(sl, p.stage_layers, sizeof *sl * (size_t)p.n_stage_layers);
        p.stage_layers = sl;
    }
    pt->plan = p;
    const ModelSpec *m = &g->spec;
    Ctx c = {g, &pt->plan, a, 1, 1, p.dtype == TS_DTYPE_FP32 ? 4.0 : 2.0};
    double gB = (double)(g->opt.batch > 0 ? g->opt.batch : 1);
    double gS = (double)(g->opt.seq > 0 ? g->opt.seq : p.seq);
    c.bscale = (double)p.micro_batch / gB;
    c.tok = (double)p.micro_batch * (double)p.seq / (gB * gS) / (double)p.cp;

    IdxList idx[PART_SEG_COUNT];
    memset(idx, 0, sizeof idx);
    if (!collect(&c, idx)) goto oom;
    PartCounts pc;
    part_counts(m, p.tp, &pc);
    double t = (double)p.tp;
    for (int k = 0; k < PART_SEG_COUNT; k++) {
        PartSegment *s = &pt->seg[k];
        s->kind = (PartSegKind)k;
        if (!fill_segment(&c, s, idx[k].v, idx[k].n)) goto oom;
    }
    pt->seg[PART_SEG_DENSE].params = pc.dense_tp / t + pc.dense_rep;
    pt->seg[PART_SEG_MOE].expert_params = pc.moe_exp / (double)(p.ep * p.etp);
    pt->seg[PART_SEG_MOE].params = pc.moe_tp / t + pc.moe_rep + pt->seg[PART_SEG_MOE].expert_params;
    pt->seg[PART_SEG_EMBED].params = pc.embed_tp / t + pc.embed_rep;
    pt->seg[PART_SEG_HEAD].params = pc.head_tp / t + pc.head_rep;
    for (int k = 0; k < PART_SEG_COUNT; k++)
        if (!seg_colls(&c, &pt->seg[k])) goto oom;

    pt->n_chunks = (int32_t)p.n_chunks;
    pt->chunks = ts_arena_alloc(a, sizeof *pt->chunks * (size_t)p.n_chunks);
    if (!pt->chunks) goto oom;
    for (int64_t ch = 0; ch < p.n_chunks; ch++) {
        PartChunk *x = &pt->chunks[ch];
        x->chunk = (int32_t)ch;
        x->pp_rank = (int32_t)(ch % p.pp);
        x->vstage = (int32_t)(ch / p.pp);
        x->first_layer = (int32_t)plan_chunk_first_layer(&p, m->layers, ch);
        x->n_layers = (int32_t)plan_chunk_layers(&p, m->layers, ch);
        x->n_moe = (int32_t)part_moe_in_range(m, x->first_layer, x->first_layer + x->n_layers);
        x->n_dense = x->n_layers - x->n_moe;
        x->has_embed = ch == 0;
        x->has_head = ch == p.n_chunks - 1;
        x->params = x->n_dense * pt->seg[PART_SEG_DENSE].params + x->n_moe * pt->seg[PART_SEG_MOE].params +
                    (x->has_embed ? pt->seg[PART_SEG_EMBED].params : 0) +
                    (x->has_head ? pt->seg[PART_SEG_HEAD].params : 0);
        if (x->has_head && p.pp > 1 && m->tied_embeddings && m->lm_head) x->params += pc.embed_tp / t;
    }
    pt->mem = ts_arena_alloc(a, sizeof *pt->mem * (size_t)p.pp);
    if (!pt->mem) goto oom;
    if (part_memory(m, &pt->plan, mo, pt->mem, &pt->peak, err) != TS_OK) {
        ts_arena_destroy(a);
        return TS_ERR_PLAN;
    }
    if (!build_stage_colls(&c, pt)) goto oom;
    *out = pt;
    return TS_OK;
oom:
    ts_arena_destroy(a);
    return ts_err(err, TS_ERR_INTERNAL, "out of memory building the partition");
}

void part_destroy(Partition *pt)
{
    if (pt) ts_arena_destroy(pt->arena);
}
