/*
 * space.c — the plan space: shapes (gpus, tp, pp, cp, ep, dp) and, per shape,
 * the inner knob lists; candidates are numbered shape by shape (see
 * search.h). Only structural rules live here (products, divisibility by the
 * GPU count and the global batch, knobs that are meaningless for a shape);
 * the model-dependent rules (heads divisible by tp, layers by pp*vpp, ...)
 * are the evaluator's, through plan_validate.
 */
#include "search_int.h"

#include <stdlib.h>
#include <string.h>

TS_ENUM_NAMES(search_exposed, SearchExposed, SEARCH_EXPOSED_LIST, SEARCH_EXPOSED_COUNT)
TS_ENUM_NAMES(search_objective, SearchObjective, SEARCH_OBJECTIVE_LIST, SEARCH_OBJ_COUNT)

bool search_objective_parse(const char *s, SearchObjective *out)
{
    int i = ts_name_index(s, search_objective_names, SEARCH_OBJ_COUNT);
    if (i >= 0) return *out = (SearchObjective)i, true;
    if (ts_str_eq(s, "tokens") || ts_str_eq(s, "tokens/s")) return *out = SEARCH_OBJ_THROUGHPUT, true;
    return false;
}

void search_config_init(SearchConfig *c)
{
    memset(c, 0, sizeof *c);
    c->tp.max = 8;
    c->pp.max = 64;
    c->vpp.max = 8;
    c->cp.max = 8;
    c->ep.max = 64;
    c->mbs.max = 8;
    c->gpus.max = 0;
    c->recompute_mask = (1u << PLAN_RECOMPUTE_COUNT) - 1;
    /* gpipe, 1f1b, interleaved; zb-h1, dualpipe and dualpipev when asked (--schedule) */
    c->schedule_mask = 1u << PLAN_SCHED_GPIPE | 1u << PLAN_SCHED_1F1B | 1u << PLAN_SCHED_INTERLEAVED;
    c->zero_mask = 0xF;
    c->sp_mask = 3;
    c->overlap_mask = 3;
    c->cp_comm_mask = 1u << SIM_CP_P2P;
    c->objective = SEARCH_OBJ_THROUGHPUT;
    c->top_k = 10;
    c->threads = 1;
    c->rank = 0;
    c->ranks = 1;
}

/* Values of d that divide `whole` and lie in [lo, hi], ascending. */
static int dim_values(const SearchDim *d, int64_t whole, int64_t lo, int64_t hi, int64_t *out)
{
    int n = 0;
    if (d->n > 0) {
        for (int i = 0; i < d->n; i++) {
            int64_t v = d->v[i];
            if (v >= lo && v <= hi && whole % v == 0 && n < SEARCH_MAX_VALUES) out[n++] = v;
        }
        return n;
    }
    int64_t top = d->max > 0 && d->max < hi ? d->max : hi;
    for (int64_t v = lo; v <= top && n < SEARCH_MAX_VALUES; v++)
        if (whole % v == 0) out[n++] = v;
    return n;
}

/* The vpps the sweep tries over pp stages: up to one layer per chunk, the
 * first and the last chunk may hold only the embedding and the loss (plan.h,
 * the uneven rule); the --vpp list where given. */
static int vpp_values(const SearchConfig *c, int64_t pp, int64_t *v)
{
    int64_t hi = c->layers > 0 ? (c->layers + 2) / pp : 127;
    if (hi > 127) hi = 127;
    int nv = 0;
    if (c->vpp.n == 0) {
        for (int64_t x = 2; x <= (c->vpp.max < hi ? c->vpp.max : hi) && nv < SEARCH_MAX_VALUES; x++) v[nv++] = x;
    } else {
        for (int i = 0; i < c->vpp.n; i++)
            if (c->vpp.v[i] >= 2 && c->vpp.v[i] <= hi && nv < SEARCH_MAX_VALUES) v[nv++] = c->vpp.v[i];
    }
    return nv;
}

static void fill_inner(const SearchConfig *c, SearchShape *sh)
{
    int64_t v[SEARCH_MAX_VALUES];
    int64_t per_dp = c->global_batch / sh->dp;
    int n = dim_values(&c->mbs, per_dp, 1, per_dp, v);
    for (int i = 0; i < n; i++) sh->mbs[i] = (int16_t)v[i];
    sh->n_mbs = (int8_t)n;

    sh->n_sv = 0;
    if (sh->pp == 1) {
        /* no pipeline: the schedule is moot, keep one; and 1F1B with the EP
         * overlap when asked for (it pairs micro-batches without stages) */
        if (c->schedule_mask & ~(1u << PLAN_SCHED_1F1B_A2A)) sh->sv[sh->n_sv++] = (SearchSv){PLAN_SCHED_1F1B, 1};
        if (c->schedule_mask & (1u << PLAN_SCHED_1F1B_A2A))
            sh->sv[sh->n_sv++] = (SearchSv){PLAN_SCHED_1F1B_A2A, 1};
    } else {
        static const PlanSchedule order[] = SEARCH_SCHEDULE_ORDER;
        _Static_assert(sizeof order / sizeof *order == PLAN_SCHED_COUNT, "every schedule in the sweep order");
        for (int k = 0; k < PLAN_SCHED_COUNT; k++) {
            if (!(c->schedule_mask & (1u << order[k]))) continue;
            if (order[k] == PLAN_SCHED_DUALPIPE && sh->pp % 2 != 0) continue; /* its copies meet in the middle */
            if (order[k] == PLAN_SCHED_DUALPIPEV) { /* 2*pp chunks */
                if (c->layers <= 0 || c->layers >= 2 * (int64_t)sh->pp) sh->sv[sh->n_sv++] = (SearchSv){PLAN_SCHED_DUALPIPEV, 2};
                continue;
            }
            if (order[k] != PLAN_SCHED_INTERLEAVED && order[k] != PLAN_SCHED_1F1B_A2A) {
                sh->sv[sh->n_sv++] = (SearchSv){(int8_t)order[k], 1};
                continue;
            }
            /* the interleaved schedule, and with stages 1f1b-a2a, which
             * Megatron-Core runs inside it (plan.c): over their vpps */
            int nv = vpp_values(c, sh->pp, v);
            for (int i = 0; i < nv; i++) sh->sv[sh->n_sv++] = (SearchSv){(int8_t)order[k], (int8_t)v[i]};
        }
    }
    sh->n_rec = 0;
    for (int r = 0; r < PLAN_RECOMPUTE_COUNT; r++)
        if (c->recompute_mask & (1u << r)) sh->rec[sh->n_rec++] = (int8_t)r;
    sh->n_zero = 0;
    if ((int64_t)sh->dp * sh->cp == 1) { /* nothing to shard: every ZeRO stage is plain DP */
        if (c->zero_mask & 0xF) sh->dps[sh->n_zero] = 0, sh->zero[sh->n_zero++] = 0;
    } else {
        for (int z = 0; z < 4; z++)
            if (c->zero_mask & (1u << z)) sh->dps[sh->n_zero] = 0, sh->zero[sh->n_zero++] = (int8_t)z;
        /* HSDP (--dp-shard): ZeRO-3 sharded over S of the dp ranks, S < dp */
        for (int i = 0; i < c->dp_shard.n && (c->zero_mask & 8u); i++) {
            int64_t s = c->dp_shard.v[i];
            if (s >= 1 && s < sh->dp && s <= INT16_MAX && sh->dp % s == 0)
                sh->dps[sh->n_zero] = (int16_t)s, sh->zero[sh->n_zero++] = 3;
        }
    }
    /* (sp, overlap) pairs; without TP both are moot ("off"), and TP
     * overlap needs SP (Megatron asserts --tp-comm-overlap implies
     * --sequence-parallel) */
    sh->n_so = 0;
    if (sh->tp == 1) {
        sh->sp[0] = sh->ov[0] = 0;
        sh->n_so = 1;
    } else {
        for (int a = 0; a < 2; a++)
            for (int b = 0; b < 2; b++)
                if ((c->sp_mask & (1u << a)) && (c->overlap_mask & (1u << b)) && (a || !b))
                    sh->sp[sh->n_so] = (int8_t)a, sh->ov[sh->n_so++] = (int8_t)b;
    }
    sh->n_cx = 0; /* the CP exchange matters only with cp > 1: p2p otherwise */
    for (int x = 0; x < SIM_CP_COMM_COUNT && sh->cp > 1; x++)
        if (c->cp_comm_mask & (1u << x)) sh->cx[sh->n_cx++] = (int8_t)x;
    if (sh->n_cx == 0) sh->cx[sh->n_cx++] = SIM_CP_P2P;
    sh->count = (int64_t)sh->n_mbs * sh->n_sv * sh->n_rec * sh->n_zero * sh->n_so * sh->n_cx;
}

static TsStatus push_shape(SearchSpace *s, int *cap, const SearchShape *sh, TsError *err)
{
    if (s->n_shapes == *cap) {
        int ncap = *cap ? 2 * *cap : 64;
        SearchShape *p = realloc(s->shapes, (size_t)ncap * sizeof *p);
        if (!p) return ts_err(err, TS_ERR_INTERNAL, "out of memory building the plan space");
        s->shapes = p;
        *cap = ncap;
    }
    s->shapes[s->n_shapes++] = *sh;
    return TS_OK;
}

static TsStatus add_shapes_for_gpus(const SearchConfig *c, int64_t g, SearchSpace *s, int *cap, TsError *err)
{
    int64_t tps[SEARCH_MAX_VALUES], pps[SEARCH_MAX_VALUES], cps[SEARCH_MAX_VALUES], eps[SEARCH_MAX_VALUES];
    int ntp = dim_values(&c->tp, g, 1, g, tps);
    for (int a = 0; a < ntp; a++) {
        int64_t pp_hi = c->layers > 0 && c->layers < g / tps[a] ? c->layers : g / tps[a];
        int npp = dim_values(&c->pp, g / tps[a], 1, pp_hi, pps);
        for (int b = 0; b < npp; b++) {
            int64_t rest = g / tps[a] / pps[b];
            int ncp = dim_values(&c->cp, rest, 1, rest, cps);
            for (int d = 0; d < ncp; d++) {
                int64_t dp = rest / cps[d];
                if (c->global_batch % dp != 0) continue;
                int nep = 1;
                eps[0] = 1;
                if (c->experts > 0) nep = dim_values(&c->ep, dp * cps[d], 1, c->experts, eps);
                for (int e = 0; e < nep; e++) {
                    if (c->experts > 0 && c->experts % eps[e] != 0) continue;
                    SearchShape sh = {.gpus = (int32_t)g, .dp = (int32_t)dp, .tp = (int16_t)tps[a],
                                      .pp = (int16_t)pps[b], .cp = (int16_t)cps[d], .ep = (int16_t)eps[e]};
                    fill_inner(c, &sh);
                    if (sh.count == 0) continue;
                    sh.start = s->total;
                    s->total += sh.count;
                    if (push_shape(s, cap, &sh, err) != TS_OK) return TS_ERR_INTERNAL;
                }
            }
        }
    }
    return TS_OK;
}

TsStatus search_space_build(const SearchConfig *c, SearchSpace *s, TsError *err)
{
    memset(s, 0, sizeof *s);
    if (c->gpus.n <= 0 || c->global_batch <= 0 || c->seq <= 0) {
        ts_err(err, TS_ERR_USAGE, "the search needs a GPU count, a global batch and a sequence length");
        ts_err_hint(err, "e.g. --gpus 1024 --global-batch 1024 --seq 8192");
        return TS_ERR_USAGE;
    }
    int cap = 0;
    for (int i = 0; i < c->gpus.n; i++) {
        if (c->gpus.v[i] <= 0 || c->gpus.v[i] > INT32_MAX) continue;
        if (add_shapes_for_gpus(c, c->gpus.v[i], s, &cap, err) != TS_OK) {
            search_space_free(s);
            return TS_ERR_INTERNAL;
        }
    }
    if (s->total == 0) {
        search_space_free(s);
        ts_err(err, TS_ERR_USAGE, "no plan satisfies the limits: tp*pp*cp*dp must equal the GPU count "
                                  "and dp must divide the global batch");
        ts_err_hint(err, "widen --tp/--pp/--cp (or their --max-* bounds) or change --global-batch");
        return TS_ERR_USAGE;
    }
    return TS_OK;
}

void search_space_free(SearchSpace *s)
{
    if (!s) return;
    free(s->shapes);
    s->shapes = NULL;
    s->n_shapes = 0;
    s->total = 0;
}

static void cursor_knobs(const SearchSpace *s, const SearchCursor *c, SearchKnobs *k)
{
    const SearchShape *sh = &s->shapes[c->shape];
    *k = (SearchKnobs){.gpus = sh->gpus, .tp = sh->tp, .pp = sh->pp, .cp = sh->cp, .ep = sh->ep, .dp = sh->dp,
                       .mbs = sh->mbs[c->mbs], .vpp = sh->sv[c->sv].vpp, .sp = sh->sp[c->so],
                       .recompute = sh->rec[c->rec], .zero = sh->zero[c->zero], .dp_shard = sh->dps[c->zero],
                       .schedule = sh->sv[c->sv].schedule, .tp_overlap = sh->ov[c->so], .cp_comm = sh->cx[c->cx]};
}

void search_cursor_seek(const SearchSpace *s, int64_t idx, SearchCursor *c, SearchKnobs *k)
{
    int lo = 0, hi = s->n_shapes - 1;
    while (lo < hi) { /* last shape with start <= idx */
        int mid = (lo + hi + 1) / 2;
        if (s->shapes[mid].start <= idx) lo = mid;
        else hi = mid - 1;
    }
    const SearchShape *sh = &s->shapes[lo];
    int64_t r = idx - sh->start;
    c->idx = idx;
    c->shape = lo;
    c->cx = (int)(r % sh->n_cx);
    r /= sh->n_cx;
    c->so = (int)(r % sh->n_so);
    r /= sh->n_so;
    c->zero = (int)(r % sh->n_zero);
    r /= sh->n_zero;
    c->rec = (int)(r % sh->n_rec);
    r /= sh->n_rec;
    c->sv = (int)(r % sh->n_sv);
    r /= sh->n_sv;
    c->mbs = (int)r;
    cursor_knobs(s, c, k);
}

void search_cursor_next(const SearchSpace *s, SearchCursor *c, SearchKnobs *k)
{
    const SearchShape *sh = &s->shapes[c->shape];
    c->idx++;
    if (++c->cx < sh->n_cx) {
        cursor_knobs(s, c, k);
        return;
    }
    c->cx = 0;
    if (++c->so == sh->n_so) {
        c->so = 0;
        if (++c->zero == sh->n_zero) {
            c->zero = 0;
            if (++c->rec == sh->n_rec) {
                c->rec = 0;
                if (++c->sv == sh->n_sv) {
                    c->sv = 0;
                    if (++c->mbs == sh->n_mbs) {
                        c->mbs = 0;
                        c->shape++;
                    }
                }
            }
        }
    }
    cursor_knobs(s, c, k);
}

void search_space_decode(const SearchSpace *s, int64_t idx, SearchKnobs *k)
{
    SearchCursor c;
    search_cursor_seek(s, idx, &c, k);
}

int64_t search_space_size(const SearchConfig *c, TsError *err)
{
    SearchSpace s;
    if (search_space_build(c, &s, err) != TS_OK) return -1;
    int64_t n = s.total;
    search_space_free(&s);
    return n;
}
