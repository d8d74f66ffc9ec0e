/* ModuleGraph core: storage, builders that infer costs, totals, lookups.
 *
 * Legend: T tokens (rows of a GEMM), K in features, N out features,
 * dt bytes per element of the graph dtype.
 *
 * Cost rules (sources: reference/flops_profiler.md §1.2 for the DeepSpeed
 * counts, §4 and Korthikanti et al. 2022 for the exact/training ones):
 *   GEMM      ds_macs = T*K*N, ds_flops = 2*ds_macs (bias never counted);
 *             fwd = dgrad = wgrad = 2*T*K*N; saves its input (T*K*dt).
 *   BMM       of two activations: fwd 2bmkn, dgrad 4bmkn (both inputs), no wgrad;
 *             saves both inputs.
 *   ATTENTION fused softmax(QK^T)V: ds = SDPA (two matmuls, no causal halving);
 *             fwd = 2*B*A*Sq*Sk*(Dqk+Dv), halved when o.causal; dgrad = 2.5*fwd
 *             (FlashAttention backward: 5 matmuls for 2 forward).
 *   others    fwd = per-element count (LN 5, RMSNorm 4, softmax 5, else 1),
 *             dgrad = 2*fwd; ds per the framework rule the builder passes.
 */
#include "graph_int.h"
#include "../common/common_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim/plan.h"

TS_ENUM_NAMES(graph_op, GraphOpKind, GRAPH_OP_LIST, GRAPH_OP_COUNT)
TS_ENUM_NAMES(graph_naming, GraphNaming, GRAPH_NAMING_LIST, GRAPH_NAMING_COUNT)
TS_ENUM_PARSE(graph_naming, GraphNaming, GRAPH_NAMING_COUNT)

void graph_options_init(GraphOptions *o)
{
    memset(o, 0, sizeof *o);
    o->batch = 1;
    o->seq = 0; /* graph_build: plan_default_seq(m) */
    o->dtype_bytes = 2;
    o->causal = false;
    o->flash = true;
    o->tp = 1;
}

/* ---- storage -------------------------------------------------------------------- */

static bool grow(ModuleGraph *g, void **arr, size_t elem, int32_t n, int32_t *cap)
{
    if (n < *cap) return true;
    int32_t nc = *cap ? *cap * 2 : 64;
    void *p = ts_arena_grow(g->arena, *arr, elem, (size_t)n, (size_t)nc);
    if (!p) {
        g->oom = true;
        return false;
    }
    *arr = p;
    *cap = nc;
    return true;
}

int32_t graph_add_module(ModuleGraph *g, int32_t parent, const char *name, const char *cls,
                         const char *extra_repr)
{
    if (g->oom || !grow(g, (void **)&g->mods, sizeof *g->mods, g->n_mods, &g->cap_mods)) return -1;
    int32_t id = g->n_mods++;
    GraphModule *m = &g->mods[id];
    memset(m, 0, sizeof *m);
    m->name = name;
    m->cls = cls;
    m->extra_repr = extra_repr ? extra_repr : "";
    m->parent = parent;
    m->first_child = m->next_sibling = m->last_child = -1;
    m->first_op = -1;
    m->first_param = g->n_params;
    m->end_mod = id + 1;
    m->layer = g->at.layer;
    m->role = g->at.role;
    m->depth = 0;
    if (parent >= 0) {
        GraphModule *p = &g->mods[parent];
        m->depth = p->depth + 1;
        if (p->last_child < 0)
            p->first_child = id;
        else
            g->mods[p->last_child].next_sibling = id;
        p->last_child = id;
    }
    return id;
}

static int32_t push_param(ModuleGraph *g, int32_t module)
{
    if (g->oom || module < 0) return -1;
    if (!grow(g, (void **)&g->params, sizeof *g->params, g->n_params, &g->cap_params)) return -1;
    GraphModule *m = &g->mods[module];
    /* params are appended to the newest module only, so they stay contiguous */
    if (m->n_params == 0) m->first_param = g->n_params;
    m->n_params++;
    int32_t id = g->n_params++;
    GraphParam *p = &g->params[id];
    memset(p, 0, sizeof *p);
    p->module = module;
    p->layer = m->layer;
    p->tied_to = -1;
    p->expert_id = g->at.expert_id;
    p->expert = g->at.expert_id >= 0;
    return id;
}

int32_t graph_add_param(ModuleGraph *g, int32_t module, const char *name, int64_t d0, int64_t d1,
                        GraphSplit split)
{
    int32_t id = push_param(g, module);
    if (id < 0) return -1;
    GraphParam *p = &g->params[id];
    p->name = name;
    p->shape[0] = d0;
    p->shape[1] = d1 > 0 ? d1 : 0;
    p->ndim = d1 > 0 ? 2 : 1;
    p->split = split;
    p->numel = d0 * (d1 > 0 ? d1 : 1);
    return id;
}

int32_t graph_add_packed_param(ModuleGraph *g, int32_t module, const char *name, int64_t experts, int64_t d1,
                               int64_t d2, GraphSplit split)
{
    int32_t id = graph_add_param(g, module, name, experts, d1, split);
    if (id < 0) return -1;
    GraphParam *p = &g->params[id];
    p->packed = true;
    p->expert = false;
    p->expert_id = -1;
    if (d2 > 0) {
        p->shape[2] = d2;
        p->ndim = 3;
        p->numel *= d2;
    }
    return id;
}

int32_t graph_add_tied_param(ModuleGraph *g, int32_t module, const char *name, int32_t owner)
{
    if (owner < 0 || owner >= g->n_params) return -1;
    int32_t id = push_param(g, module);
    if (id < 0) return -1;
    GraphParam *p = &g->params[id];
    const GraphParam *o = &g->params[owner];
    p->name = name;
    memcpy(p->shape, o->shape, sizeof p->shape);
    p->ndim = o->ndim;
    p->split = o->split;
    p->numel = o->numel;
    p->tied = true;
    p->tied_to = owner;
    return id;
}

GraphOp *graph_add_op(ModuleGraph *g, int32_t module, GraphOpKind kind, const char *name)
{
    if (g->oom || module < 0) return NULL;
    if (!grow(g, (void **)&g->ops, sizeof *g->ops, g->n_ops, &g->cap_ops)) return NULL;
    GraphOp *op = &g->ops[g->n_ops++];
    memset(op, 0, sizeof *op);
    op->kind = kind;
    op->module = module;
    op->name = name;
    op->layer = g->at.layer;
    op->part = g->at.part;
    op->role = g->at.role;
    op->expert_id = g->at.expert_id;
    op->expert = g->at.expert_id >= 0;
    return op;
}

/* ---- op builders ------------------------------------------------------------------- */

static double dtb(const ModuleGraph *g) { return (double)g->opt.dtype_bytes; }

GraphOp *graph_op_gemm(ModuleGraph *g, int32_t module, const char *name, double tokens, int64_t in,
                       int64_t out, bool bias, GraphSplit split)
{
    GraphOp *op = graph_add_op(g, module, GRAPH_OP_GEMM, name);
    if (!op) return NULL;
    double M = tokens, K = (double)in, N = (double)out, dt = dtb(g);
    op->dims[0] = (int64_t)llround(tokens);
    op->dims[1] = in;
    op->dims[2] = out;
    op->dims[3] = bias;
    op->split = split;
    op->ds_macs = M * K * N;
    op->ds_flops = 2 * op->ds_macs;
    op->fwd_flops = op->dgrad_flops = op->wgrad_flops = 2 * M * K * N;
    op->fwd_bytes = dt * (M * K + K * N + M * N + (bias ? N : 0));
    op->bwd_bytes = 2 * dt * (M * K + K * N + M * N);
    op->act_bytes = dt * M * K;
    return op;
}

int32_t graph_add_linear(ModuleGraph *g, int32_t parent, const char *name, const char *cls,
                         const char *extra_repr, double tokens, int64_t in, int64_t out, bool bias,
                         GraphSplit split)
{
    int32_t id = graph_add_module(g, parent, name, cls, extra_repr);
    if (id < 0) return -1;
    graph_add_param(g, id, "weight", out, in, split);
    if (bias) graph_add_param(g, id, "bias", out, 0, split == GRAPH_SPLIT_ROW ? GRAPH_SPLIT_NONE : split);
    graph_op_gemm(g, id, name, tokens, in, out, bias, split);
    return g->oom ? -1 : id;
}

GraphOp *graph_op_norm(ModuleGraph *g, int32_t module, const char *name, double rows, int64_t width,
                       bool layernorm, double ds_per_elem)
{
    GraphOp *op = graph_add_op(g, module, GRAPH_OP_NORM, name);
    if (!op) return NULL;
    double n = rows * (double)width, dt = dtb(g);
    op->dims[0] = (int64_t)llround(rows);
    op->dims[1] = width;
    op->dims[2] = layernorm;
    op->dims[3] = 1;
    op->split = GRAPH_SPLIT_SEQ;
    op->ds_flops = ds_per_elem * n;
    op->fwd_flops = (layernorm ? 5.0 : 4.0) * n;
    op->dgrad_flops = 2 * op->fwd_flops;
    op->fwd_bytes = dt * 2 * n;
    op->bwd_bytes = dt * 3 * n;
    op->act_bytes = dt * n;
    return op;
}

GraphOp *graph_op_eltwise(ModuleGraph *g, int32_t module, GraphOpKind kind, const char *name,
                          double numel, int inputs, double ds_per_elem, GraphSplit split)
{
    GraphOp *op = graph_add_op(g, module, kind, name);
    if (!op) return NULL;
    double n = numel, dt = dtb(g), k = (double)(inputs > 0 ? inputs : 1);
    op->dims[0] = (int64_t)llround(numel);
    op->dims[1] = inputs;
    op->split = split;
    op->ds_flops = ds_per_elem * n;
    op->fwd_flops = (kind == GRAPH_OP_SOFTMAX ? 5.0 : 1.0) * n;
    op->dgrad_flops = 2 * op->fwd_flops;
    op->fwd_bytes = dt * (k + 1) * n;
    op->bwd_bytes = dt * (k + 1) * n;
    switch (kind) {
    case GRAPH_OP_ACTIVATION:
    case GRAPH_OP_SOFTMAX: op->act_bytes = dt * n; break; /* input / output */
    case GRAPH_OP_DROPOUT:                                 /* 1-byte mask */
        op->act_bytes = n;
        op->fwd_bytes += n;
        break;
    case GRAPH_OP_EMBEDDING:
        op->fwd_flops = op->dgrad_flops = 0;
        break;
    default: break;
    }
    return op;
}

GraphOp *graph_op_rope(ModuleGraph *g, int32_t module, double tokens, int64_t heads, int64_t dim)
{
    GraphOp *op = graph_op_eltwise(g, module, GRAPH_OP_ROPE, "rotary", tokens * (double)heads * (double)dim, 1, 0.0,
                                   GRAPH_SPLIT_HEADS);
    if (!op) return NULL;
    /* the shape the cost model and the per-rank split read (graph.h) */
    op->dims[0] = (int64_t)llround(tokens);
    op->dims[1] = heads;
    op->dims[2] = dim;
    return op;
}

GraphOp *graph_op_bmm(ModuleGraph *g, int32_t module, const char *name, int64_t b, int64_t m, int64_t k,
                      int64_t n, bool ds_baddbmm)
{
    GraphOp *op = graph_add_op(g, module, GRAPH_OP_BATCHED_GEMM, name);
    if (!op) return NULL;
    double B = (double)b, M = (double)m, K = (double)k, N = (double)n, dt = dtb(g);
    op->dims[0] = b;
    op->dims[1] = m;
    op->dims[2] = k;
    op->dims[3] = n;
    op->split = GRAPH_SPLIT_HEADS;
    op->ds_macs = B * M * K * N;
    op->ds_flops = 2 * op->ds_macs + (ds_baddbmm ? B * M * N : 0); /* addmm rule: + numel(input) */
    op->fwd_flops = 2 * B * M * K * N;
    op->dgrad_flops = 2 * op->fwd_flops;
    op->fwd_bytes = dt * B * (M * K + K * N + M * N);
    op->bwd_bytes = 2 * op->fwd_bytes;
    op->act_bytes = dt * B * (M * K + K * N);
    return op;
}

GraphOp *graph_op_attention(ModuleGraph *g, int32_t module, const char *name, int64_t B, int64_t A,
                            int64_t G, int64_t Sq, int64_t Sk, int64_t Dqk, int64_t Dv)
{
    GraphOp *op = graph_add_op(g, module, GRAPH_OP_ATTENTION_CORE, name);
    if (!op) return NULL;
    double b = (double)B, a = (double)A, gg = (double)G, sq = (double)Sq, sk = (double)Sk;
    double dq = (double)Dqk, dv = (double)Dv, dt = dtb(g);
    op->dims[0] = B;
    op->dims[1] = A;
    op->dims[2] = Sq;
    op->dims[3] = Sk;
    op->dims[4] = Dqk;
    op->dims[5] = Dv;
    op->split = GRAPH_SPLIT_HEADS;
    op->drop = g->spec.attn_dropout;
    op->ds_macs = b * a * sq * sk * (dq + dv);
    op->ds_flops = 2 * op->ds_macs;
    op->fwd_flops = 2 * b * a * sq * sk * (dq + dv) * (g->opt.causal ? 0.5 : 1.0);
    op->dgrad_flops = 2.5 * op->fwd_flops;
    double q = b * sq * a * dq, kv = b * sk * gg * (dq + dv), o = b * sq * a * dv;
    op->fwd_bytes = dt * (q + kv + o);
    op->bwd_bytes = dt * 2 * (q + kv + o);
    op->act_bytes = dt * (q + kv + o) + 4 * b * a * sq; /* Q, K, V, O and the fp32 logsumexp */
    return op;
}

void gb_attn_window(ModuleGraph *g, GraphOp *op, const ModelSpec *m, int64_t layer)
{
    if (!op || !model_layer_windowed(m, layer)) return;
    double S = (double)g->opt.seq;
    op->fwd_flops *= model_attn_keys(m, layer, g->opt.seq, g->opt.causal) / (g->opt.causal ? S / 2 : S);
    op->dgrad_flops = 2.5 * op->fwd_flops;
}

/* ---- routed experts: build one, copy the rest ------------------------------------ */

static bool reserve(ModuleGraph *g, void **arr, size_t elem, int32_t n, int32_t *cap, int64_t need)
{
    if (need <= *cap) return true;
    if (need > INT32_MAX) {
        g->oom = true;
        return false;
    }
    int64_t nc = (int64_t)*cap * 2 > need ? (int64_t)*cap * 2 : need;
    if (nc > INT32_MAX) nc = INT32_MAX;
    void *p = ts_arena_grow(g->arena, *arr, elem, (size_t)n, (size_t)nc);
    if (!p) {
        g->oom = true;
        return false;
    }
    *arr = p;
    *cap = (int32_t)nc;
    return true;
}

bool gb_clone_experts(ModuleGraph *g, int32_t list, int32_t m0, int32_t o0, int32_t p0, int64_t n,
                      const GraphNames *idx)
{
    if (g->oom) return false;
    int32_t bm = g->n_mods - m0, bo = g->n_ops - o0, bp = g->n_params - p0;
    if (bm <= 0 || n <= 1) return true;
    int64_t k = n - 1;
    if (!reserve(g, (void **)&g->mods, sizeof *g->mods, g->n_mods, &g->cap_mods, g->n_mods + k * bm) ||
        !reserve(g, (void **)&g->ops, sizeof *g->ops, g->n_ops, &g->cap_ops, g->n_ops + k * bo) ||
        !reserve(g, (void **)&g->params, sizeof *g->params, g->n_params, &g->cap_params, g->n_params + k * bp))
        return false;
    for (int64_t e = 1; e < n; e++) {
        int32_t dm = (int32_t)e * bm, dox = (int32_t)e * bo, dp = (int32_t)e * bp, eid = (int32_t)e;
        GraphModule *md = &g->mods[m0 + dm];
        memcpy(md, &g->mods[m0], sizeof *md * (size_t)bm);
        for (int32_t i = 0; i < bm; i++) {
            GraphModule *x = &md[i];
            if (i > 0) x->parent += dm;
            if (x->first_child >= 0) x->first_child += dm, x->last_child += dm;
            if (i > 0 && x->next_sibling >= 0) x->next_sibling += dm;
            x->first_param += dp;
            x->end_mod += dm;
        }
        md->name = graph_idx(g, idx, e);
        md->next_sibling = -1;
        g->mods[g->mods[list].last_child].next_sibling = m0 + dm;
        g->mods[list].last_child = m0 + dm;
        GraphOp *op = &g->ops[o0 + dox];
        memcpy(op, &g->ops[o0], sizeof *op * (size_t)bo);
        for (int32_t i = 0; i < bo; i++) {
            op[i].module += dm;
            op[i].expert_id = eid;
        }
        GraphParam *pr = &g->params[p0 + dp];
        memcpy(pr, &g->params[p0], sizeof *pr * (size_t)bp);
        for (int32_t i = 0; i < bp; i++) {
            pr[i].module += dm;
            pr[i].expert_id = eid;
            if (pr[i].tied && pr[i].tied_to >= p0) pr[i].tied_to += dp;
        }
    }
    g->n_mods += (int32_t)k * bm;
    g->n_ops += (int32_t)k * bo;
    g->n_params += (int32_t)k * bp;
    return true;
}

/* ---- small helpers ----------------------------------------------------------------- */

bool graph_names_init(ModuleGraph *g, GraphNames *nm, int64_t n)
{
    nm->n = n;
    nm->idx = ts_arena_alloc(g->arena, sizeof *nm->idx * (size_t)(n > 0 ? n : 1));
    if (!nm->idx) {
        g->oom = true;
        return false;
    }
    for (int64_t i = 0; i < n; i++) {
        nm->idx[i] = ts_arena_printf(g->arena, "%lld", (long long)i);
        if (!nm->idx[i]) {
            g->oom = true;
            return false;
        }
    }
    return true;
}

const char *graph_idx(ModuleGraph *g, const GraphNames *nm, int64_t i)
{
    if (i >= 0 && i < nm->n) return nm->idx[i];
    const char *s = ts_arena_printf(g->arena, "%lld", (long long)i);
    if (!s) g->oom = true;
    return s ? s : "?";
}

void graph_at(ModuleGraph *g, int32_t layer, GraphPart part, GraphRole role)
{
    g->at.layer = layer;
    g->at.part = part;
    g->at.role = role;
    g->at.expert_id = -1;
}

void graph_fmt_eps(char *out, size_t cap, double eps)
{
    /* Python repr: shortest round-trip; exponent form below 1e-4 ("1e-05"). */
    for (int p = 1; p <= 17; p++) {
        snprintf(out, cap, "%.*g", p, eps);
        if (strtod(out, NULL) == eps) return;
    }
}

const char *gb_drop_extra(ModuleGraph *g, double p)
{
    char num[32];
    graph_fmt_eps(num, sizeof num, p);
    return ts_arena_printf(g->arena, "p=%s%s, inplace=False", num, strpbrk(num, ".e") ? "" : ".0");
}

GraphOp *gb_dropout_op(ModuleGraph *g, int32_t module, const char *name, double numel, double p, GraphSplit split)
{
    /* PyTorch's dropout returns its input when p == 0: no kernel, no mask */
    return p > 0 ? graph_op_eltwise(g, module, GRAPH_OP_DROPOUT, name, numel, 1, 0.0, split) : NULL;
}

/* ---- build --------------------------------------------------------------------------- */

/* Op spans and the per-layer index, in O(modules + ops): each module's own
 * ops first, then children merged into parents bottom-up (pre-order ids:
 * children come after their parent). n_ops holds the span end meanwhile. */
static bool finish_spans(ModuleGraph *g)
{
    for (int32_t i = g->n_mods - 1; i > 0; i--) {
        int32_t p = g->mods[i].parent;
        if (p >= 0 && g->mods[i].end_mod > g->mods[p].end_mod) g->mods[p].end_mod = g->mods[i].end_mod;
    }
    for (int32_t i = 0; i < g->n_ops; i++) {
        GraphModule *md = &g->mods[g->ops[i].module];
        if (md->first_op < 0) md->first_op = i;
        md->n_ops = i + 1;
    }
    for (int32_t i = g->n_mods - 1; i > 0; i--) {
        const GraphModule *c = &g->mods[i];
        if (c->first_op < 0 || c->parent < 0) continue;
        GraphModule *p = &g->mods[c->parent];
        if (p->first_op < 0 || c->first_op < p->first_op) p->first_op = c->first_op;
        if (c->n_ops > p->n_ops) p->n_ops = c->n_ops;
    }
    for (int32_t m = 0; m < g->n_mods; m++) {
        GraphModule *md = &g->mods[m];
        if (md->first_op < 0) {
            md->first_op = 0;
            md->n_ops = 0;
        } else {
            md->n_ops -= md->first_op;
        }
    }
    /* per-layer index: layer l runs ops [lf[l], lf[l+1]); expert runs [x[2l], x[2l+1]) */
    int64_t L = g->spec.layers > 0 ? g->spec.layers : 0;
    g->layer_first_op = ts_arena_alloc(g->arena, sizeof *g->layer_first_op * (size_t)(L + 1));
    g->layer_expert_ops = ts_arena_alloc(g->arena, sizeof *g->layer_expert_ops * (size_t)(2 * L + 1));
    if (!g->layer_first_op || !g->layer_expert_ops) return false;
    int32_t *lf = g->layer_first_op, *x = g->layer_expert_ops;
    for (int64_t l = 0; l <= L; l++) lf[l] = -1;
    for (int64_t l = 0; l < 2 * L; l++) x[l] = -1;
    int32_t end = -1;
    for (int32_t i = 0; i < g->n_ops; i++) {
        int32_t l = g->ops[i].layer;
        if (l < 0 || l >= L) continue;
        if (lf[l] < 0) lf[l] = i;
        end = i + 1;
        if (g->ops[i].expert) {
            if (x[2 * l] < 0) x[2 * l] = i;
            x[2 * l + 1] = i + 1;
        }
    }
    lf[L] = end >= 0 ? end : g->n_ops;
    for (int64_t l = L - 1; l >= 0; l--) {
        if (lf[l] < 0) lf[l] = lf[l + 1];
        if (x[2 * l] < 0) x[2 * l] = x[2 * l + 1] = lf[l];
    }
    return true;
}

TsStatus graph_build(const ModelSpec *m, const GraphOptions *o, ModuleGraph **out, TsError *err)
{
    *out = NULL;
    GraphOptions opt;
    if (o)
        opt = *o;
    else
        graph_options_init(&opt);
    if (!opt.naming_set) graph_naming_parse(model_arch_default_naming(m->arch), &opt.naming);
    if (opt.seq <= 0) opt.seq = plan_default_seq(m);
    if (opt.batch <= 0) return ts_err(err, TS_ERR_USAGE, "batch size must be positive (got %lld)", (long long)opt.batch);
    if (opt.dtype_bytes <= 0) opt.dtype_bytes = 2;
    if (opt.tp <= 0) opt.tp = 1;
    if (m->arch == MODEL_ARCH_BERT && opt.naming != GRAPH_NAMING_HF) {
        ts_err(err, TS_ERR_USAGE, "naming '%s' has no BERT model", graph_naming_name(opt.naming));
        ts_err_hint(err, "use --naming hf for BERT");
        return TS_ERR_USAGE;
    }
    TsArena *a = ts_arena_create(1u << 20);
    if (!a) return ts_err(err, TS_ERR_INTERNAL, "out of memory building the module graph");
    ModuleGraph *g = ts_arena_alloc(a, sizeof *g);
    if (!g) {
        ts_arena_destroy(a);
        return ts_err(err, TS_ERR_INTERNAL, "out of memory building the module graph");
    }
    g->arena = a;
    g->spec = *m;
    g->opt = opt;
    g->root = 0;
    g->tokens = opt.batch * opt.seq;
    g->vocab = opt.naming == GRAPH_NAMING_HF ? m->vocab : model_padded_vocab(m, opt.tp);
    graph_at(g, -1, GRAPH_PART_NONE, GRAPH_ROLE_ROOT);

    /* Pre-size from the shape (routed experts dominate MoE models: at most
     * 5 modules, 5 ops and 3 tensors each); arrays still grow if needed. */
    int64_t xe = model_moe_layer_count(m) * m->experts;
    int64_t em = 64 + m->layers * 40 + xe * (opt.naming == GRAPH_NAMING_HF ? 5 : 3);
    int64_t ep = 64 + m->layers * 30 + xe * (opt.naming == GRAPH_NAMING_HF ? 3 : 2);
    if (em > 4000000) em = 4000000;
    if (ep > 4000000) ep = 4000000;
    g->mods = ts_arena_alloc(a, sizeof *g->mods * (size_t)em);
    g->ops = ts_arena_alloc(a, sizeof *g->ops * (size_t)em);
    g->params = ts_arena_alloc(a, sizeof *g->params * (size_t)ep);
    if (!g->mods || !g->ops || !g->params) {
        ts_arena_destroy(a);
        return ts_err(err, TS_ERR_INTERNAL, "out of memory building the module graph");
    }
    g->cap_mods = g->cap_ops = (int32_t)em;
    g->cap_params = (int32_t)ep;

    TsStatus st;
    switch (opt.naming) {
    case GRAPH_NAMING_HF: st = graph_build_hf(g, err); break;
    case GRAPH_NAMING_DEEPSPEED: st = graph_build_deepspeed(g, err); break;
    case GRAPH_NAMING_MEGATRON:
    default: st = graph_build_megatron(g, err); break;
    }
    if (st == TS_OK && g->oom) st = ts_err(err, TS_ERR_INTERNAL, "out of memory building the module graph");
    if (st != TS_OK) {
        ts_arena_destroy(a);
        return st;
    }
    if (!finish_spans(g)) {
        ts_arena_destroy(a);
        return ts_err(err, TS_ERR_INTERNAL, "out of memory building the module graph");
    }
    *out = g;
    return TS_OK;
}

void graph_destroy(ModuleGraph *g)
{
    if (g) ts_arena_destroy(g->arena);
}

/* ---- queries --------------------------------------------------------------------------- */

int64_t graph_params(const ModuleGraph *g, int32_t module)
{
    const GraphModule *m = &g->mods[module];
    int64_t n = 0;
    for (int32_t i = module; i < m->end_mod; i++) {
        const GraphModule *c = &g->mods[i];
        for (int32_t p = c->first_param; p < c->first_param + c->n_params; p++) {
            const GraphParam *gp = &g->params[p];
            if (gp->tied) {
                int32_t om = g->params[gp->tied_to].module;
                if (om >= module && om < m->end_mod) continue; /* owner already counted */
            }
            n += gp->numel;
        }
    }
    return n;
}

void graph_totals(const ModuleGraph *g, int32_t module, GraphTotals *t)
{
    memset(t, 0, sizeof *t);
    const GraphModule *m = &g->mods[module];
    for (int32_t i = m->first_op; i < m->first_op + m->n_ops; i++) {
        const GraphOp *op = &g->ops[i];
        t->ds_flops += op->ds_flops;
        t->ds_macs += op->ds_macs;
        t->fwd_flops += op->fwd_flops;
        t->dgrad_flops += op->dgrad_flops;
        t->wgrad_flops += op->wgrad_flops;
        t->fwd_bytes += op->fwd_bytes;
        t->bwd_bytes += op->bwd_bytes;
        t->act_bytes += op->act_bytes;
    }
    t->params = graph_params(g, module);
}

void graph_model_totals(const ModuleGraph *g, GraphTotals *out) { graph_totals(g, g->root, out); }

size_t graph_module_path(const ModuleGraph *g, int32_t module, char *out, size_t cap)
{
    int32_t chain[64];
    int n = 0;
    for (int32_t m = module; m > 0 && g->mods[m].parent >= 0 && n < 64; m = g->mods[m].parent) chain[n++] = m;
    size_t len = 0;
    if (cap) out[0] = '\0';
    for (int i = n - 1; i >= 0; i--) {
        int w = snprintf(out + (len < cap ? len : cap), len < cap ? cap - len : 0, "%s%s", i == n - 1 ? "" : ".",
                         g->mods[chain[i]].name);
        if (w > 0) len += (size_t)w;
    }
    return len;
}

int32_t graph_find(const ModuleGraph *g, const char *path)
{
    int32_t cur = g->root;
    const char *p = path;
    while (*p) {
        const char *dot = strchr(p, '.');
        size_t len = dot ? (size_t)(dot - p) : strlen(p);
        int32_t c = g->mods[cur].first_child;
        while (c >= 0 && !(strlen(g->mods[c].name) == len && strncmp(g->mods[c].name, p, len) == 0))
            c = g->mods[c].next_sibling;
        if (c < 0) return -1;
        cur = c;
        p += len;
        if (*p == '.') p++;
    }
    return cur;
}

/* ---- module helpers for the naming builders -------------------------------------------- */

int32_t gb_linear_mod(ModuleGraph *g, int32_t parent, const char *name, const char *cls, const char *extra,
                      int64_t in, int64_t out, bool bias, GraphSplit split)
{
    int32_t id = graph_add_module(g, parent, name, cls, extra);
    if (id < 0) return -1;
    graph_add_param(g, id, "weight", out, in, split);
    if (bias) graph_add_param(g, id, "bias", out, 0, split == GRAPH_SPLIT_ROW ? GRAPH_SPLIT_NONE : split);
    return id;
}

int32_t gb_norm_mod(ModuleGraph *g, int32_t parent, const char *name, const char *cls, const char *extra,
                    int64_t width, bool layernorm)
{
    int32_t id = graph_add_module(g, parent, name, cls, extra);
    if (id < 0) return -1;
    graph_add_param(g, id, "weight", width, 0, GRAPH_SPLIT_NONE);
    if (layernorm) graph_add_param(g, id, "bias", width, 0, GRAPH_SPLIT_NONE);
    return id;
}

GraphOp *gb_router_op(ModuleGraph *g, int32_t module, double tokens, int64_t H, int64_t E, int64_t K,
                      bool ds_gemm, double ds_softmax_per_elem)
{
    GraphOp *op = graph_add_op(g, module, GRAPH_OP_ROUTER, "router");
    if (!op) return NULL;
    double T = tokens, h = (double)H, e = (double)E, dt = dtb(g);
    op->dims[0] = (int64_t)llround(tokens);
    op->dims[1] = H;
    op->dims[2] = E;
    op->dims[3] = K;
    op->split = GRAPH_SPLIT_NONE;
    op->ds_macs = ds_gemm ? T * h * e : 0;
    op->ds_flops = 2 * op->ds_macs + ds_softmax_per_elem * T * e;
    op->fwd_flops = 2 * T * h * e + 5 * T * e; /* gating GEMM + softmax/top-k */
    op->dgrad_flops = 2 * T * h * e + 10 * T * e;
    op->wgrad_flops = 2 * T * h * e;
    op->fwd_bytes = dt * (T * h + h * e + T * e) + 8 * T * (double)K;
    op->bwd_bytes = 2 * dt * (T * h + h * e + T * e);
    op->act_bytes = dt * (T * h + T * e);
    return op;
}

GraphOp *gb_loss_op(ModuleGraph *g, int32_t module, double tokens, int64_t V)
{
    GraphOp *loss = graph_add_op(g, module, GRAPH_OP_LOSS, "cross_entropy");
    if (!loss) return NULL;
    double T = tokens, v = (double)V, dt = dtb(g);
    loss->dims[0] = (int64_t)llround(tokens);
    loss->dims[1] = V;
    loss->split = GRAPH_SPLIT_VOCAB;
    loss->fwd_flops = 3 * T * v; /* max, exp-sum, log: Megatron vocab-parallel CE */
    loss->dgrad_flops = 2 * T * v;
    loss->fwd_bytes = dt * T * v + 4 * T * v;
    loss->bwd_bytes = 2 * dt * T * v;
    loss->act_bytes = 4 * T * v; /* fp32 softmax of the logits */
    return loss;
}
