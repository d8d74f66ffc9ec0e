/* A Chakra trace set as the workload IR (wl_read_chakra): the reader every
 * replay, conversion and check of Chakra input goes through.
 *
 * Two shapes come out. A set trainsim wrote carries its rank layout in
 * GlobalMetadata (trainsim_layout); when every rank of a pipeline stage has
 * the graph of the stage's first rank, with each collective's group the
 * rank's group of one kind of that layout, the set is one class per stage,
 * exactly the JSON task graph of the same plan. Any other set (ASTRA-sim's
 * microbenchmarks, traces of real runs) is a per-rank workload: one class per
 * rank, comm_groups.json's entries as explicit groups, sends and receives
 * addressed by rank. */
#include "trainsim/workload.h"
#include "trainsim/workload_chakra.h"
#include "../common/common_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "et_def.pb-c.h"

/* comm_groups.json, names sorted for lookup. */
typedef struct PgEntry {
    const char *name;
    int64_t *members; /* ascending */
    int64_t n;
    int32_t xgroup;   /* per-rank shape: its WlTask.xgroup, 0 before use */
} PgEntry;

typedef struct Rd {
    const char *prefix;
    Workload *w;
    int64_t nranks;
    bool per_rank;      /* the per-rank shape (else one class per stage) */
    bool differs;       /* stage shape: a rank is not its stage's class: start over per rank */
    PgEntry *pg;
    int64_t n_pg;
    int32_t all_xgroup; /* per-rank shape: the all-ranks group, 0 before use */
    int64_t *order;     /* scratch: dependency order of one trace */
    int32_t *task_of;   /* scratch: node index -> task id in its class (or its place in order) */
    int64_t *dep0;      /* scratch: node index -> its first entry in the trace's dep_index */
    int64_t scratch_cap;
    uint64_t *stage_sig;/* stage shape: each stage's signature, from its first rank */
    int32_t kind_first[WL_GROUP_COUNT]; /* stage shape: the first pg id of each group kind
                                           (trainsim_groups), 0 = kind not used */
} Rd;

static int pg_cmp(const void *a, const void *b)
{
    return strcmp(((const PgEntry *)a)->name, ((const PgEntry *)b)->name);
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static const PgEntry *pg_find(const Rd *r, const char *name)
{
    PgEntry key = {.name = name};
    return r->n_pg ? bsearch(&key, r->pg, (size_t)r->n_pg, sizeof key, pg_cmp) : NULL;
}

/* Load comm_groups.json (absent: no groups) into r->pg, members checked
 * against the rank count. */
static TsStatus load_groups(Rd *r, TsArena *a, TsError *err)
{
    char path[1100];
    snprintf(path, sizeof path, "%s.comm_groups.json", r->prefix);
    if (!ts_is_file(path)) return TS_OK;
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root || !json_is_object(root)) {
        ts_err(err, TS_ERR_INPUT, "%s", root ? "expected an object of groups" : je.text);
        ts_err_at(err, path, root ? 1 : je.line, root ? 1 : je.column, NULL);
        ts_err_hint(err, "comm_groups.json maps each pg_name to its ranks: {\"1\": [0, 1, 2, 3], ...}");
        json_decref(root);
        return TS_ERR_INPUT;
    }
    size_t n = json_object_size(root);
    r->pg = ts_arena_alloc(a, (n + 1) * sizeof *r->pg);
    TsStatus st = r->pg ? TS_OK : ts_err(err, TS_ERR_INTERNAL, "out of memory");
    const char *key;
    json_t *arr;
    json_object_foreach(root, key, arr) {
        if (st) break;
        size_t k = json_array_size(arr);
        PgEntry *e = &r->pg[r->n_pg];
        e->name = ts_arena_strdup(a, key);
        e->members = ts_arena_alloc(a, (k + 1) * sizeof *e->members);
        if (!e->name || !e->members) {
            st = ts_err(err, TS_ERR_INTERNAL, "out of memory");
            break;
        }
        if (!json_is_array(arr) || k == 0)
            st = ts_err(err, TS_ERR_INPUT, "%s: group \"%s\" is not a non-empty array of ranks", path, key);
        for (size_t j = 0; j < k && !st; j++) {
            json_t *v = json_array_get(arr, j);
            json_int_t x = json_is_integer(v) ? json_integer_value(v) : -1;
            if (x < 0 || x >= r->nranks)
                st = ts_err(err, TS_ERR_INPUT, "%s: group \"%s\" lists '%s' but the ranks are 0-%" PRId64, path, key,
                            json_is_integer(v) ? "out of range" : "a non-integer", r->nranks - 1);
            else e->members[j] = (int64_t)x;
        }
        e->n = (int64_t)k;
        qsort(e->members, k, sizeof *e->members, i64_cmp);
        r->n_pg++;
    }
    json_decref(root);
    if (!st && r->n_pg > 1) qsort(r->pg, (size_t)r->n_pg, sizeof *r->pg, pg_cmp);
    return st;
}

static bool coll_of(int64_t t, TsColl *c)
{
    switch (t) {
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE: *c = TS_COLL_ALLREDUCE; return true;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER: *c = TS_COLL_ALLGATHER; return true;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST: *c = TS_COLL_BROADCAST; return true;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL: *c = TS_COLL_ALLTOALL; return true;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER:
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER_BLOCK: *c = TS_COLL_REDUCESCATTER; return true;
    case CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BARRIER: *c = TS_COLL_ALLREDUCE; return true; /* 4 bytes */
    default: return false;
    }
}

static TsStatus node_err(const Rd *r, int64_t rank, const WlChakraNode *n, TsError *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static TsStatus node_err(const Rd *r, int64_t rank, const WlChakraNode *n, TsError *err, const char *fmt, ...)
{
    char path[1100], what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    snprintf(path, sizeof path, "%s.%" PRId64 ".et", r->prefix, rank);
    ts_err(err, TS_ERR_INPUT, "node %" PRIu64 " '%s': %s", n->id, n->name ? n->name : "", what);
    ts_err_at(err, path, 0, 0, NULL);
    return TS_ERR_INPUT;
}

/* The dependency order of t's nodes: Kahn's algorithm taking the lowest
 * ready index first, so a file already in order keeps it. */
static bool dep_order(Rd *r, const WlChakraTrace *t)
{
    int64_t n = t->n_nodes;
    if (n > r->scratch_cap) {
        int64_t *o = realloc(r->order, (size_t)n * sizeof *o);
        if (o) r->order = o;
        int32_t *m = o ? realloc(r->task_of, (size_t)n * sizeof *m) : NULL;
        if (m) r->task_of = m;
        int64_t *d = m ? realloc(r->dep0, (size_t)n * sizeof *d) : NULL;
        if (d) r->dep0 = d;
        if (!o || !m || !d) return false;
        r->scratch_cap = n;
    }
    for (int64_t i = 0, k = 0; i < n; i++) {
        r->dep0[i] = k;
        k += t->nodes[i].n_data + t->nodes[i].n_ctrl;
    }
    int64_t *indeg = calloc((size_t)n + 1, sizeof *indeg), *first = calloc((size_t)n + 2, sizeof *first);
    int64_t *child = NULL, *heap = malloc(((size_t)n + 1) * sizeof *heap);
    int64_t total = 0, k = 0, hn = 0, out = 0;
    bool ok = indeg && first && heap;
    for (int64_t i = 0; i < n && ok; i++) total += t->nodes[i].n_data + t->nodes[i].n_ctrl;
    ok = ok && (child = malloc(((size_t)total + 1) * sizeof *child));
    for (int64_t i = 0; i < n && ok; i++)
        for (int32_t j = 0; j < t->nodes[i].n_data + t->nodes[i].n_ctrl; j++) {
            first[t->dep_index[k++] + 1]++;
            indeg[i]++;
        }
    for (int64_t i = 0; i < n && ok; i++) first[i + 1] += first[i];
    k = 0;
    for (int64_t i = 0; i < n && ok; i++) /* children lists, filled with a moving cursor (first[p]) */
        for (int32_t j = 0; j < t->nodes[i].n_data + t->nodes[i].n_ctrl; j++) child[first[t->dep_index[k++]]++] = i;
    for (int64_t i = n; i > 0 && ok; i--) first[i] = first[i - 1]; /* back to the starts */
    if (ok) first[0] = 0;
    for (int64_t i = 0; i < n && ok; i++)
        if (indeg[i] == 0) heap[hn++] = i; /* ascending: already a min-heap */
    while (ok && hn > 0) {
        int64_t u = heap[0];
        heap[0] = heap[--hn];
        for (int64_t p = 0;;) { /* sift down */
            int64_t a = 2 * p + 1, b = a + 1, m = p;
            if (a < hn && heap[a] < heap[m]) m = a;
            if (b < hn && heap[b] < heap[m]) m = b;
            if (m == p) break;
            int64_t x = heap[m];
            heap[m] = heap[p];
            heap[p] = x;
            p = m;
        }
        r->order[out++] = u;
        for (int64_t e = first[u]; e < first[u + 1]; e++)
            if (--indeg[child[e]] == 0) {
                int64_t p = hn++; /* sift up */
                heap[p] = child[e];
                while (p > 0 && heap[(p - 1) / 2] > heap[p]) {
                    int64_t x = heap[p];
                    heap[p] = heap[(p - 1) / 2];
                    heap[(p - 1) / 2] = x;
                    p = (p - 1) / 2;
                }
            }
    }
    ok = ok && out == n; /* the check proved the graph acyclic */
    free(indeg);
    free(first);
    free(child);
    free(heap);
    return ok;
}

/* Stage shape: the kind of `rank`'s group pg: the kind whose ids
 * (trainsim_groups) hold pg's, if that kind's group of the rank has exactly
 * pg's members; else WL_GROUP_NONE. */
static WlGroup kind_of(const Rd *r, int64_t rank, const PgEntry *pg)
{
    char *end;
    long id = strtol(pg->name, &end, 10);
    if (*end || id < 1) return WL_GROUP_NONE;
    int best = -1;
    for (int g = 0; g < WL_GROUP_COUNT; g++)
        if (r->kind_first[g] > 0 && r->kind_first[g] <= id && (best < 0 || r->kind_first[g] > r->kind_first[best]))
            best = g;
    if (best < 0 || wl_group_size(r->w, (WlGroup)best) != pg->n) return WL_GROUP_NONE;
    int64_t buf[64], n = pg->n;
    int64_t *mem = n <= 64 ? buf : malloc((size_t)n * sizeof *mem);
    if (!mem) return WL_GROUP_NONE;
    int64_t got = wl_group_members(r->w, (WlGroup)best, rank, mem, n, NULL);
    bool same = got == n && !memcmp(mem, pg->members, (size_t)n * sizeof *mem);
    if (mem != buf) free(mem);
    return same ? (WlGroup)best : WL_GROUP_NONE;
}

/* One node as a task of the current class. Stage shape: collectives get
 * their group kind, sends their peer stage (false: the rank does not fit the
 * layout); per-rank shape: explicit groups, peers by rank. *sig folds in
 * what must match across the ranks of a stage. */
static TsStatus node_task(Rd *r, int64_t rank, const WlChakraTrace *t, int64_t i, int64_t pos, bool emit,
                          uint64_t *sig, TsError *err)
{
    const WlChakraNode *n = &t->nodes[i];
    Workload *w = r->w;
    WlTask k = wl_task_comp(n->name ? n->name : "", WL_PHASE_FWD, (double)(n->num_ops > 0 ? n->num_ops : 0),
                            (double)n->tensor_size, 0);
    uint64_t h = ts_fnv_word(*sig, (uint64_t)n->type);
    h = ts_fnv_word(h, (uint64_t)n->n_data);
    switch (n->type) {
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE:
        k.duration_s = n->duration_us > 0                       ? (double)n->duration_us * 1e-6
                       : n->num_ops > 0 || n->tensor_size > 0 ? -1 /* the replay's roofline */
                                                                : 1e-9; /* ASTRA-sim's 1 ns */
        if (n->has_is_cpu_op && n->is_cpu_op) k.flags |= WL_F_CPU;
        h = ts_fnv_word(h, n->duration_us);
        h = ts_fnv_word(h, (uint64_t)n->num_ops);
        h = ts_fnv_word(h, n->tensor_size);
        break;
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE: {
        TsColl c;
        if (!coll_of(n->comm_type, &c)) {
            node_err(r, rank, n, err, "collective comm_type %" PRId64 " is not replayed", n->comm_type);
            ts_err_hint(err, "ASTRA-sim runs all-reduce (0), all-gather (2), reduce-scatter (7) and all-to-all (6); "
                             "trainsim also broadcast (5), reduce-scatter-block (8) and barrier (9), not REDUCE (1), "
                             "GATHER (3) or SCATTER (4)");
            return TS_ERR_INPUT;
        }
        const PgEntry *pg = n->pg_name && n->pg_name[0] ? pg_find(r, n->pg_name) : NULL;
        if (n->pg_name && n->pg_name[0] && !pg) return node_err(r, rank, n, err, "its pg_name is not in comm_groups.json");
        int64_t gsize = pg ? pg->n : r->nranks;
        double bytes = n->comm_type == CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BARRIER ? 4.0 : (double)n->comm_size;
        if (c == TS_COLL_ALLGATHER) bytes *= (double)gsize; /* comm_size: each rank's input */
        k = wl_task_coll(n->name ? n->name : "", WL_PHASE_FWD, c, WL_GROUP_WORLD, bytes);
        if (n->pair) k.flags |= WL_F_PAIR;
        if (r->per_rank) {
            int32_t *xg = pg ? &((PgEntry *)pg)->xgroup : &r->all_xgroup;
            if (*xg == 0) {
                int64_t *all = NULL;
                if (!pg && !(all = malloc((size_t)r->nranks * sizeof *all))) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
                for (int64_t j = 0; all && j < r->nranks; j++) all[j] = j;
                *xg = pg ? wl_xgroup_add(w, pg->name, pg->members, pg->n) : wl_xgroup_add(w, "", all, r->nranks);
                free(all);
                if (*xg < 0) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
            }
            k.xgroup = *xg;
            k.group = WL_GROUP_NONE;
        } else if (pg) {
            k.group = kind_of(r, rank, pg);
            if (k.group == WL_GROUP_NONE) r->differs = true;
        }
        h = ts_fnv_word(h, (uint64_t)n->comm_type);
        h = ts_fnv_word(h, (uint64_t)n->comm_size);
        h = ts_fnv_word(h, (uint64_t)k.group);
        h = ts_fnv_word(h, (uint64_t)n->pair);
        break;
    }
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE:
    case CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE: {
        bool send = n->type == CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE;
        int64_t peer = send ? n->comm_dst : n->comm_src;
        if (peer < 0 || peer >= r->nranks) return node_err(r, rank, n, err, "its peer rank is not in the set");
        int32_t ps = (int32_t)peer;
        if (!r->per_rank) {
            ps = (int32_t)wl_rank_stage(w, peer);
            if (wl_stage_peer(w, rank, ps) != peer) r->differs = true;
        }
        k = wl_task_p2p(n->name ? n->name : "", WL_PHASE_FWD, send, ps, (double)n->comm_size, n->comm_tag);
        h = ts_fnv_word(h, (uint64_t)ps);
        h = ts_fnv_word(h, (uint64_t)n->comm_tag);
        h = ts_fnv_word(h, (uint64_t)n->comm_size);
        break;
    }
    default: /* metadata, memory, ... nodes: no time, their dependencies kept */
        break;
    }
    /* deps as task ids, in dependency order (earlier in the class) */
    int32_t nd = n->n_data + n->n_ctrl, dbuf[64];
    int32_t *deps = nd <= 64 ? dbuf : malloc((size_t)nd * sizeof *deps);
    if (!deps) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    const int64_t *di = t->dep_index + r->dep0[i];
    int32_t base = emit ? w->classes[w->n_classes - 1].first_task : 0;
    for (int32_t j = 0; j < nd; j++) {
        deps[j] = r->task_of[di[j]];
        h = ts_fnv_word(h, (uint64_t)(deps[j] - base)); /* the dep's place in dependency order */
    }
    *sig = h;
    TsStatus st = TS_OK;
    if (emit) {
        int32_t id = wl_task_add(w, &k, deps, n->n_data, deps + n->n_data, n->n_ctrl);
        if (id < 0) st = ts_err(err, TS_ERR_INTERNAL, "out of memory");
        else r->task_of[i] = id;
    } else {
        r->task_of[i] = (int32_t)pos; /* only the signature: places in dependency order */
    }
    if (deps != dbuf) free(deps);
    return st;
}

static TsStatus visit(void *user, int64_t rank, const WlChakraTrace *t, TsError *err)
{
    Rd *r = user;
    Workload *w = r->w;
    if (r->differs) return TS_OK; /* starting over per rank once the check ends */
    if (!dep_order(r, t)) return ts_err(err, TS_ERR_INTERNAL, "out of memory ordering a Chakra trace");
    bool emit = true;
    int64_t stage = 0;
    if (r->per_rank) {
        char nm[32];
        snprintf(nm, sizeof nm, "rank%" PRId64, rank);
        if (wl_class_begin_rank(w, nm, rank) < 0) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
        w->rank_class[rank] = w->n_classes - 1;
    } else {
        stage = wl_rank_stage(w, rank);
        emit = rank % (w->par.tp * w->par.cp * w->par.dp) == 0; /* the stage's first rank */
        if (emit) {
            char nm[32];
            snprintf(nm, sizeof nm, "stage%" PRId64, stage);
            if (wl_class_begin(w, nm, (int32_t)stage) < 0) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
        }
    }
    uint64_t sig = TS_FNV_OFFSET;
    for (int64_t j = 0; j < t->n_nodes; j++) {
        int64_t i = r->order[j];
        /* keep dependency order: a node's deps are mapped before it */
        TsStatus st = node_task(r, rank, t, i, j, emit, &sig, err);
        if (st) return st;
    }
    if (!r->per_rank) {
        if (emit) r->stage_sig[stage] = sig;
        else if (sig != r->stage_sig[stage]) r->differs = true;
    }
    return TS_OK;
}

/* One pass over the set in the chosen shape. */
static TsStatus read_pass(Rd *r, const WlParallel *layout, Workload **out, TsError *err)
{
    *out = NULL;
    Workload *w = wl_create(r->nranks, err);
    if (!w) return TS_ERR_INTERNAL;
    r->w = w;
    r->differs = false;
    r->all_xgroup = 0;
    for (int64_t i = 0; i < r->n_pg; i++) r->pg[i].xgroup = 0;
    snprintf(w->source, sizeof w->source, "%s", r->prefix);
    w->origin = WL_FMT_CHAKRA;
    snprintf(w->policy, sizeof w->policy, "HYBRID_TRANSFORMER_FWD_IN_BCKWD");
    TsStatus st = TS_OK;
    if (r->per_rank) {
        w->par = (WlParallel){.world = r->nranks, .tp = 1, .cp = 1, .pp = 1, .dp = r->nranks, .ep = 1, .vpp = 1, .ga = 1};
        w->rank_class = ts_arena_alloc(w->arena, (size_t)r->nranks * sizeof *w->rank_class);
        if (!w->rank_class) st = ts_err(err, TS_ERR_INTERNAL, "out of memory");
    } else {
        w->par = *layout;
        free(r->stage_sig);
        r->stage_sig = calloc((size_t)layout->pp, sizeof *r->stage_sig);
        if (!r->stage_sig) st = ts_err(err, TS_ERR_INTERNAL, "out of memory");
    }
    WlChakraCheck ck;
    if (!st) st = wl_check_chakra_visit(r->prefix, visit, r, &ck, err);
    if (st) {
        wl_destroy(w);
        return st;
    }
    *out = w;
    return TS_OK;
}

/* trainsim_groups, "tp:1 dp:9 world:13": the first pg id of each kind. */
static bool parse_kinds(const char *s, int32_t first[WL_GROUP_COUNT])
{
    memset(first, 0, WL_GROUP_COUNT * sizeof *first);
    while (*s) {
        while (*s == ' ') s++;
        if (!*s) break;
        const char *colon = strchr(s, ':');
        if (!colon || colon - s >= 16) return false;
        char kind[16];
        memcpy(kind, s, (size_t)(colon - s));
        kind[colon - s] = '\0';
        WlGroup g;
        char *end;
        long id = strtol(colon + 1, &end, 10);
        if (!wl_group_parse(kind, &g) || end == colon + 1 || id < 1 || id > INT32_MAX || (*end && *end != ' '))
            return false;
        first[g] = (int32_t)id;
        s = end;
    }
    return true;
}

/* The layout of rank 0's GlobalMetadata when it describes this set. */
static bool set_layout(const char *prefix, int64_t nranks, WlParallel *p, int32_t kind_first[WL_GROUP_COUNT])
{
    char path[1100];
    snprintf(path, sizeof path, "%s.0.et", prefix);
    char *data;
    size_t len;
    TsError e = {0};
    if (ts_read_file(path, (size_t)1 << 32, &data, &len, &e)) return false;
    WlChakraTrace t;
    bool ok = !wl_chakra_decode(path, (const uint8_t *)data, len, &t, &e) && t.layout[0];
    free(data);
    *p = (WlParallel){0};
    ok = ok && wl_layout_parse(t.layout, p) && p->world == nranks && parse_kinds(t.groups, kind_first);
    wl_chakra_trace_free(&t);
    return ok;
}

TsStatus wl_read_chakra(const char *prefix, Workload **out, TsError *err)
{
    *out = NULL;
    Rd r = {.prefix = prefix, .nranks = wl_chakra_ranks(prefix)};
    if (r.nranks == 0) {
        ts_err(err, TS_ERR_INPUT, "no trace '%s.0.et'", prefix);
        ts_err_hint(err, "give the prefix used with --output, e.g. DIR/gpt3 for DIR/gpt3.0.et");
        return TS_ERR_INPUT;
    }
    TsArena *a = ts_arena_create(1 << 16);
    if (!a) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    TsStatus st = load_groups(&r, a, err);
    WlParallel layout;
    r.per_rank = !set_layout(prefix, r.nranks, &layout, r.kind_first);
    if (!st) st = read_pass(&r, &layout, out, err);
    if (!st && !r.per_rank && r.differs) { /* ranks of a stage differ: the per-rank shape */
        wl_destroy(*out);
        r.per_rank = true;
        st = read_pass(&r, &layout, out, err);
    }
    free(r.order);
    free(r.task_of);
    free(r.dep0);
    free(r.stage_sig);
    ts_arena_destroy(a);
    return st;
}
