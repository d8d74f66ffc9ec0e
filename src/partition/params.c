/* params.c — the per-rank parameter table (trainsim params).
 *
 * One row per parameter tensor of a rank's pipeline stage, in module order,
 * in the seed format of a DeepSpeed GPT2ModelPipe run with distributed
 * Shampoo:   name;module;shape;partitioning_ranks;precs
 *   name      dotted module path (weight and bias rows share it)
 *   module    the module's repr: Class(extra_repr)
 *   shape     per-rank shape after TP (and EP/ETP for experts), "(a, b)" / "(a,)"
 *   partitioning_ranks  the DP rank computing the tensor's preconditioners,
 *             assigned longest-processing-time first on sum(a^3 + b^3)
 *   precs     Kronecker factors per block: "[torch.Size([a, a]), torch.Size([b, b]), ...]"
 * Shampoo blocks: every 2-D weight inside a transformer layer is split into
 * K blocks along its model-parallel dim (rows for column-parallel, cols for
 * row-parallel, rows otherwise); embeddings, norms and biases get "[]".
 * Routed experts (Megatron layout): EP rank e holds experts e*E/ep ..
 * (e+1)*E/ep - 1, listed under their global index as the graph names them;
 * they are replicated over the expert-DP group only, so their
 * preconditioners are shared out over the EDP ranks (partitioning_ranks is
 * then an expert-DP index), the dense tensors' over the DP ranks. */
#include "part_int.h"

#include <stdlib.h>
#include <string.h>

/* Role of a module, inherited from the nearest ancestor that has one. */
static GraphRole module_role(const ModuleGraph *g, int32_t id, int32_t *layer)
{
    while (id >= 0) {
        const GraphModule *md = &g->mods[id];
        if (md->role == GRAPH_ROLE_EMBED || md->role == GRAPH_ROLE_HEAD ||
            md->role == GRAPH_ROLE_LAYER) {
            *layer = md->layer;
            return md->role;
        }
        id = md->parent;
    }
    *layer = -1;
    return GRAPH_ROLE_EMBED;
}

static char *module_path(const ModuleGraph *g, int32_t id, TsArena *a)
{
    int32_t chain[64];
    int n = 0;
    for (int32_t x = id; x >= 0 && n < 64; x = g->mods[x].parent) chain[n++] = x;
    TsBuf b = {0};
    bool first = true;
    /* DeepSpeed: the engine holds the PipelineModule as `module`, so every
     * named parameter starts with "module." (as in the seed table). */
    if (g->opt.naming == GRAPH_NAMING_DEEPSPEED) {
        ts_buf_puts(&b, "module");
        first = false;
    }
    for (int i = n - 1; i >= 0; i--) {
        const char *nm = g->mods[chain[i]].name;
        if (!nm || !*nm) continue;
        if (!first) ts_buf_puts(&b, ".");
        ts_buf_puts(&b, nm);
        first = false;
    }
    char *s = ts_arena_strdup(a, b.data ? b.data : "");
    ts_buf_free(&b);
    return s;
}

static char *module_repr(const ModuleGraph *g, int32_t id, TsArena *a)
{
    const GraphModule *md = &g->mods[id];
    return ts_arena_printf(a, "%s(%s)", md->cls ? md->cls : "Module",
                           md->extra_repr ? md->extra_repr : "");
}

static int64_t block_extent(int64_t d, int64_t K, int64_t i)
{
    int64_t bs = (d + K - 1) / K;
    int64_t rest = d - bs * i;
    return rest < bs ? rest : bs;
}

static double cube(double x) { return x * x * x; }

typedef struct { double cost; int32_t idx; } CostIdx;

static int by_cost_desc(const void *a, const void *b)
{
    const CostIdx *x = a, *y = b;
    if (x->cost != y->cost) return x->cost < y->cost ? 1 : -1;
    return x->idx - y->idx;
}

/* LPT over the rows of one kind (expert or dense): heaviest first, each to
 * the least-loaded of n ranks (lowest index on ties); *imb = max/mean. */
static TsStatus lpt(PartParamTable *t, bool expert, int64_t n, double *load, double *imb)
{
    CostIdx *order = malloc(sizeof *order * (size_t)(t->n_rows > 0 ? t->n_rows : 1));
    if (!order) return TS_ERR_INTERNAL;
    int32_t k = 0;
    for (int32_t i = 0; i < t->n_rows; i++)
        if (t->rows[i].expert == expert) order[k++] = (CostIdx){t->rows[i].cost, i};
    qsort(order, (size_t)k, sizeof *order, by_cost_desc);
    for (int32_t i = 0; i < k; i++) {
        int64_t best = 0;
        for (int64_t d = 1; d < n; d++)
            if (load[d] < load[best]) best = d;
        t->rows[order[i].idx].owner = best;
        load[best] += order[i].cost;
    }
    free(order);
    double mx = 0, sum = 0;
    for (int64_t d = 0; d < n; d++) {
        sum += load[d];
        if (load[d] > mx) mx = load[d];
    }
    *imb = sum > 0 ? mx / (sum / (double)n) : 1.0;
    return TS_OK;
}

TsStatus part_params(const ModuleGraph *g, const ParallelPlan *plan, int64_t rank, TsArena *a,
                     PartParamTable *out, TsError *err)
{
    memset(out, 0, sizeof *out);
    ParallelPlan p = *plan;
    if (plan_resolve(&g->spec, &p, err) != TS_OK) return TS_ERR_PLAN;
    if (rank < 0 || rank >= p.gpus)
        return ts_err(err, TS_ERR_PLAN, "--rank %lld is outside 0..%lld (the plan has %lld GPUs)",
                      (long long)rank, (long long)(p.gpus - 1), (long long)p.gpus);
    PlanCoord c;
    plan_rank_coord(&p, rank, &c);
    out->stage = c.pp;
    out->dp = p.dp;
    int64_t E = g->spec.experts;
    out->ep_rank = c.ep;
    out->n_local_experts = E > 0 ? E / p.ep : 0;
    out->first_expert = c.ep * out->n_local_experts;
    out->edp = p.tp * p.cp * p.dp / (p.etp * p.ep);
    if (out->edp < 1) out->edp = 1;
    out->rows = ts_arena_alloc(a, sizeof *out->rows * (size_t)(g->n_params > 0 ? g->n_params : 1));
    out->load = ts_arena_alloc(a, sizeof *out->load * (size_t)p.dp);
    out->expert_load = ts_arena_alloc(a, sizeof *out->expert_load * (size_t)out->edp);
    if (!out->rows || !out->load || !out->expert_load)
        return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    memset(out->load, 0, sizeof *out->load * (size_t)p.dp);
    memset(out->expert_load, 0, sizeof *out->expert_load * (size_t)out->edp);
    bool shampoo = p.optimizer == PLAN_OPTIM_SHAMPOO;
    int64_t K = p.shampoo_blocks, L = g->spec.layers;
    for (int32_t i = 0; i < g->n_params; i++) {
        const GraphParam *gp = &g->params[i];
        int32_t layer;
        GraphRole role = module_role(g, gp->module, &layer);
        int64_t chunk = role == GRAPH_ROLE_HEAD ? p.n_chunks - 1
                      : role == GRAPH_ROLE_LAYER ? plan_layer_chunk(&p, L, layer) : 0;
        if (chunk % p.pp != c.pp) continue;
        /* routed experts: only this EP rank's slice */
        if (gp->expert && (gp->expert_id < out->first_expert ||
                           gp->expert_id >= out->first_expert + out->n_local_experts))
            continue;
        PartParamRow *r = &out->rows[out->n_rows++];
        r->graph_param = i;
        r->name = module_path(g, gp->module, a);
        r->module = module_repr(g, gp->module, a);
        if (!r->name || !r->module) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
        r->ndim = gp->ndim;
        for (int d = 0; d < 3; d++) r->shape[d] = d < gp->ndim ? gp->shape[d] : 1;
        /* a stacked experts tensor holds this EP rank's experts; its
         * column-parallel dim is the last, its row-parallel one dim 1 */
        int col = gp->packed ? gp->ndim - 1 : 0, row = 1;
        if (gp->packed) r->shape[0] = out->n_local_experts;
        int64_t t = gp->expert || gp->packed ? p.etp : p.tp;
        if (gp->split == GRAPH_SPLIT_COL || gp->split == GRAPH_SPLIT_VOCAB) r->shape[col] /= t;
        else if (gp->split == GRAPH_SPLIT_ROW && gp->ndim > 1) r->shape[row] /= t;
        r->expert = gp->expert || gp->packed;
        /* preconditioned: matrices (each expert's own, for a stacked tensor) */
        if (shampoo && role == GRAPH_ROLE_LAYER && gp->ndim - (gp->packed ? 1 : 0) >= 2) {
            r->n_blocks = (int32_t)K;
            r->block_dim = gp->split == GRAPH_SPLIT_ROW ? row : gp->split == GRAPH_SPLIT_COL ? col : 0;
            for (int64_t k = 0; k < K; k++)
                for (int d = 0; d < r->ndim; d++)
                    r->cost += cube((double)(d == r->block_dim ? block_extent(r->shape[d], K, k) : r->shape[d]));
        }
    }
    if (lpt(out, false, p.dp, out->load, &out->imbalance) != TS_OK ||
        lpt(out, true, out->edp, out->expert_load, &out->expert_imbalance) != TS_OK)
        return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    return TS_OK;
}

void part_params_write(const PartParamTable *t, TsBuf *b)
{
    ts_buf_puts(b, "name;module;shape;partitioning_ranks;precs\n");
    for (int32_t i = 0; i < t->n_rows; i++) {
        const PartParamRow *r = &t->rows[i];
        ts_buf_printf(b, "%s;%s;", r->name, r->module);
        if (r->ndim == 1) ts_buf_printf(b, "(%lld,)", (long long)r->shape[0]);
        else
            for (int d = 0; d < r->ndim; d++)
                ts_buf_printf(b, "%s%lld%s", d ? ", " : "(", (long long)r->shape[d], d == r->ndim - 1 ? ")" : "");
        ts_buf_printf(b, ";%lld;[", (long long)r->owner);
        for (int32_t k = 0; k < r->n_blocks; k++)
            for (int d = 0; d < r->ndim; d++) {
                long long ext = d == r->block_dim ? block_extent(r->shape[d], r->n_blocks, k) : r->shape[d];
                ts_buf_printf(b, "%storch.Size([%lld, %lld])", k || d ? ", " : "", ext, ext);
            }
        ts_buf_puts(b, "]\n");
    }
}
