/* Reading Chakra traces back, and checking a trace set for what ASTRA-sim
 * needs: every dep inside the file, no cycle, matching collectives across
 * each process group, and a receive for every send. */
#include "trainsim/workload.h"
#include "trainsim/workload_chakra.h"
#include "../common/common_int.h"

#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "et_def.pb-c.h"

static bool get_varint(const uint8_t *d, size_t len, size_t *pos, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        if (*pos >= len) return false;
        uint8_t b = d[(*pos)++];
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

static TsStatus bad(TsError *err, const char *name, size_t off, const char *what)
{
    ts_err(err, TS_ERR_INPUT, "malformed Chakra trace: %s at byte %zu", what, off);
    ts_err_at(err, name, 0, 0, NULL);
    ts_err_hint(err, "a trace is varint(length) + GlobalMetadata, then varint(length) + Node until EOF");
    return TS_ERR_INPUT;
}

static void take_attrs(WlChakraTrace *t, WlChakraNode *n, const ChakraProtoMsg__Node *m)
{
    for (size_t i = 0; i < m->n_attr; i++) {
        const ChakraProtoMsg__AttributeProto *a = m->attr[i];
        const char *k = a->name;
        int64_t iv = 0;
        switch (a->value_case) {
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL: iv = a->int64_val; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL: iv = a->int32_val; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL: iv = (int64_t)a->uint64_val; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT32_VAL: iv = a->uint32_val; break;
        case CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL: iv = a->bool_val; break;
        default: break;
        }
        if (!strcmp(k, "comm_type")) n->comm_type = iv;
        else if (!strcmp(k, "comm_size")) n->comm_size = iv;
        else if (!strcmp(k, "num_ops")) n->num_ops = iv;
        else if (!strcmp(k, "tensor_size")) n->tensor_size = (uint64_t)iv;
        else if (!strcmp(k, "comm_src")) n->comm_src = (int32_t)iv;
        else if (!strcmp(k, "comm_dst")) n->comm_dst = (int32_t)iv;
        else if (!strcmp(k, "comm_tag")) n->comm_tag = (int32_t)iv;
        else if (!strcmp(k, "trainsim_pair")) n->pair = iv != 0;
        else if (!strcmp(k, "is_cpu_op")) {
            n->is_cpu_op = iv != 0;
            n->has_is_cpu_op = true;
        } else if (!strcmp(k, "pg_name") &&
                   a->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
            n->pg_name = ts_arena_strdup(t->arena, a->string_val);
    }
}

TsStatus wl_chakra_decode(const char *name, const uint8_t *data, size_t len, WlChakraTrace *out,
                          TsError *err)
{
    memset(out, 0, sizeof *out);
    out->arena = ts_arena_create(1 << 20);
    if (!out->arena) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    size_t pos = 0;
    int64_t cap = 0;
    bool first = true;
    while (pos < len) {
        size_t at = pos;
        uint64_t n;
        if (!get_varint(data, len, &pos, &n) || n > len - pos) return bad(err, name, at, "bad message length");
        if (n == 0) return bad(err, name, at, "zero-length message");
        if (first) {
            ChakraProtoMsg__GlobalMetadata *g = chakra_proto_msg__global_metadata__unpack(NULL, n, data + pos);
            if (!g) return bad(err, name, at, "GlobalMetadata does not decode");
            snprintf(out->version, sizeof out->version, "%s", g->version);
            for (size_t i = 0; i < g->n_attr; i++)
                if (!strcmp(g->attr[i]->name, "trainsim_layout") &&
                    g->attr[i]->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
                    snprintf(out->layout, sizeof out->layout, "%s", g->attr[i]->string_val);
                else if (!strcmp(g->attr[i]->name, "trainsim_groups") &&
                         g->attr[i]->value_case == CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL)
                    snprintf(out->groups, sizeof out->groups, "%s", g->attr[i]->string_val);
            chakra_proto_msg__global_metadata__free_unpacked(g, NULL);
            first = false;
            pos += n;
            continue;
        }
        ChakraProtoMsg__Node *m = chakra_proto_msg__node__unpack(NULL, n, data + pos);
        if (!m) return bad(err, name, at, "Node does not decode");
        if (out->n_nodes == cap) {
            int64_t nc = cap ? cap * 2 : 256;
            WlChakraNode *p = ts_arena_grow(out->arena, out->nodes, sizeof *p, (size_t)cap, (size_t)nc);
            if (!p) {
                chakra_proto_msg__node__free_unpacked(m, NULL);
                return ts_err(err, TS_ERR_INTERNAL, "out of memory");
            }
            out->nodes = p;
            cap = nc;
        }
        WlChakraNode *nd = &out->nodes[out->n_nodes++];
        memset(nd, 0, sizeof *nd);
        nd->id = m->id;
        nd->name = ts_arena_strdup(out->arena, m->name);
        nd->type = (int)m->type;
        nd->duration_us = m->duration_micros;
        nd->n_data = (int32_t)m->n_data_deps;
        nd->n_ctrl = (int32_t)m->n_ctrl_deps;
        nd->data_deps = ts_arena_alloc(out->arena, (m->n_data_deps + 1) * sizeof(uint64_t));
        nd->ctrl_deps = ts_arena_alloc(out->arena, (m->n_ctrl_deps + 1) * sizeof(uint64_t));
        if (!nd->data_deps || !nd->ctrl_deps || !nd->name) {
            chakra_proto_msg__node__free_unpacked(m, NULL);
            return ts_err(err, TS_ERR_INTERNAL, "out of memory");
        }
        if (m->n_data_deps) memcpy(nd->data_deps, m->data_deps, m->n_data_deps * sizeof(uint64_t));
        if (m->n_ctrl_deps) memcpy(nd->ctrl_deps, m->ctrl_deps, m->n_ctrl_deps * sizeof(uint64_t));
        take_attrs(out, nd, m);
        chakra_proto_msg__node__free_unpacked(m, NULL);
        pos += n;
    }
    if (first) return bad(err, name, 0, "empty file (no GlobalMetadata)");
    return TS_OK;
}

void wl_chakra_trace_free(WlChakraTrace *t)
{
    if (t) {
        ts_arena_destroy(t->arena);
        memset(t, 0, sizeof *t);
    }
}

/* ---- checker ----------------------------------------------------------------- */
typedef struct PgSeq {
    char name[32];
    int64_t count;
    uint64_t hash;
} PgSeq;

typedef struct RankInfo {
    PgSeq *pg;
    int n_pg;
} RankInfo;

typedef struct P2p {
    int64_t src, dst, tag, size;
} P2p;

static int p2p_cmp(const void *a, const void *b)
{
    const P2p *x = a, *y = b;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst) return x->dst < y->dst ? -1 : 1;
    if (x->tag != y->tag) return x->tag < y->tag ? -1 : 1;
    if (x->size != y->size) return x->size < y->size ? -1 : 1;
    return 0;
}

static int id_cmp(const void *a, const void *b)
{
    uint64_t x = ((const uint64_t *)a)[0], y = ((const uint64_t *)b)[0];
    return x < y ? -1 : x > y;
}

/* Map node ids to indices (sorted (id, index) pairs); deps must exist; Kahn's
 * algorithm proves the graph acyclic. Leaves the resolved deps in
 * t->dep_index (the trace's arena) for readers that need the graph. */
static TsStatus check_graph(const char *file, WlChakraTrace *t, TsError *err)
{
    int64_t n = t->n_nodes;
    uint64_t *ix = malloc((size_t)(n + 1) * 2 * sizeof *ix);
    int64_t *indeg = calloc((size_t)n + 1, sizeof *indeg);
    int64_t *queue = malloc(((size_t)n + 1) * sizeof *queue);
    int64_t *adj_n = calloc((size_t)n + 2, sizeof *adj_n);
    TsStatus st = TS_OK;
    int64_t *adj = NULL, *dep_idx = NULL;
    int64_t total = 0;
    if (!ix || !indeg || !queue || !adj_n) goto oom;
    for (int64_t i = 0; i < n; i++) {
        ix[2 * i] = t->nodes[i].id;
        ix[2 * i + 1] = (uint64_t)i;
        total += t->nodes[i].n_data + t->nodes[i].n_ctrl;
    }
    qsort(ix, (size_t)n, 2 * sizeof *ix, id_cmp);
    for (int64_t i = 1; i < n; i++)
        if (ix[2 * i] == ix[2 * i - 2]) {
            st = ts_err(err, TS_ERR_INPUT, "%s: node id %" PRIu64 " appears twice", file, ix[2 * i]);
            goto done;
        }
    dep_idx = ts_arena_alloc(t->arena, ((size_t)total + 1) * sizeof *dep_idx);
    adj = malloc(((size_t)total + 1) * sizeof *adj);
    if (!dep_idx || !adj) goto oom;
    int64_t k = 0;
    for (int64_t i = 0; i < n; i++) {
        const WlChakraNode *nd = &t->nodes[i];
        for (int32_t j = 0; j < nd->n_data + nd->n_ctrl; j++) {
            uint64_t key[2] = {j < nd->n_data ? nd->data_deps[j] : nd->ctrl_deps[j - nd->n_data], 0};
            uint64_t *hit = bsearch(key, ix, (size_t)n, 2 * sizeof *ix, id_cmp);
            if (!hit) {
                st = ts_err(err, TS_ERR_INPUT, "%s: node %" PRIu64 " '%s' depends on node %" PRIu64
                            " which is not in the file", file, nd->id, nd->name, key[0]);
                goto done;
            }
            dep_idx[k++] = (int64_t)hit[1];
            indeg[i]++;
            adj_n[hit[1] + 1]++;
        }
    }
    for (int64_t i = 0; i < n; i++) adj_n[i + 1] += adj_n[i];
    /* fill adjacency (parent -> children) using a cursor copy */
    int64_t *cur = malloc(((size_t)n + 1) * sizeof *cur);
    if (!cur) goto oom;
    memcpy(cur, adj_n, ((size_t)n + 1) * sizeof *cur);
    k = 0;
    for (int64_t i = 0; i < n; i++) {
        const WlChakraNode *nd = &t->nodes[i];
        for (int32_t j = 0; j < nd->n_data + nd->n_ctrl; j++) adj[cur[dep_idx[k++]]++] = i;
    }
    free(cur);
    int64_t qh = 0, qt = 0;
    for (int64_t i = 0; i < n; i++)
        if (indeg[i] == 0) queue[qt++] = i;
    if (n > 0 && qt == 0) {
        st = ts_err(err, TS_ERR_INPUT, "%s: no node is free of dependencies", file);
        goto done;
    }
    while (qh < qt) {
        int64_t u = queue[qh++];
        for (int64_t e = adj_n[u]; e < adj_n[u + 1]; e++)
            if (--indeg[adj[e]] == 0) queue[qt++] = adj[e];
    }
    if (qt != n) {
        for (int64_t i = 0; i < n; i++)
            if (indeg[i] > 0) {
                st = ts_err(err, TS_ERR_INPUT, "%s: dependency cycle through node %" PRIu64 " '%s'", file,
                            t->nodes[i].id, t->nodes[i].name);
                break;
            }
    }
    goto done;
oom:
    st = ts_err(err, TS_ERR_INTERNAL, "out of memory checking '%s'", file);
done:
    free(ix);
    free(indeg);
    free(queue);
    free(adj_n);
    free(adj);
    t->dep_index = st == TS_OK ? dep_idx : NULL;
    return st;
}

static PgSeq *pg_slot(RankInfo *ri, const char *name)
{
    for (int i = 0; i < ri->n_pg; i++)
        if (!strcmp(ri->pg[i].name, name)) return &ri->pg[i];
    PgSeq *p = realloc(ri->pg, (size_t)(ri->n_pg + 1) * sizeof *p);
    if (!p) return NULL;
    ri->pg = p;
    PgSeq *s = &p[ri->n_pg++];
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    s->hash = TS_FNV_OFFSET;
    return s;
}

static const PgSeq *pg_find(const RankInfo *ri, const char *name)
{
    for (int i = 0; i < ri->n_pg; i++)
        if (!strcmp(ri->pg[i].name, name)) return &ri->pg[i];
    return NULL;
}

static TsStatus compare_group(const char *gname, const int64_t *mem, int64_t k, const RankInfo *ri,
                              int64_t nranks, TsError *err)
{
    const PgSeq *ref = NULL;
    for (int64_t j = 0; j < k; j++) {
        if (mem[j] < 0 || mem[j] >= nranks)
            return ts_err(err, TS_ERR_INPUT, "group %s lists rank %" PRId64 " but there are %" PRId64 " traces",
                          gname, mem[j], nranks);
        const PgSeq *s = pg_find(&ri[mem[j]], gname);
        static const PgSeq empty = {{0}, 0, TS_FNV_OFFSET};
        if (!s) s = &empty;
        if (!ref) ref = s;
        else if (s->count != ref->count || s->hash != ref->hash)
            return ts_err(err, TS_ERR_INPUT,
                          "group %s: rank %" PRId64 " issues %" PRId64 " collectives, rank %" PRId64
                          " issues %" PRId64 " (or their order, types or sizes differ)",
                          gname, mem[0], ref->count, mem[j], s->count);
    }
    return TS_OK;
}

int64_t wl_chakra_ranks(const char *prefix)
{
    char path[1100];
    int64_t n = 0;
    for (;; n++) {
        snprintf(path, sizeof path, "%s.%" PRId64 ".et", prefix, n);
        if (!ts_is_file(path)) return n;
    }
}

bool wl_chakra_prefix(const char *path, char *buf, size_t cap)
{
    size_t n = strlen(path);
    if (n >= cap) return false;
    if (n > 3 && !strcmp(path + n - 3, ".et")) {
        size_t e = n - 3, d = e;
        while (d > 0 && path[d - 1] >= '0' && path[d - 1] <= '9') d--;
        size_t cut = d < e && d > 0 && path[d - 1] == '.' ? d - 1 : e;
        memcpy(buf, path, cut);
        buf[cut] = '\0';
        return true;
    }
    char probe[1100];
    snprintf(probe, sizeof probe, "%s.0.et", path);
    if (ts_is_file(path) || !ts_is_file(probe)) return false;
    snprintf(buf, cap, "%s", path);
    return true;
}

TsStatus wl_check_chakra(const char *prefix, WlChakraCheck *out, TsError *err)
{
    return wl_check_chakra_visit(prefix, NULL, NULL, out, err);
}

/* What a trace set's ranks hold, rank by rank: each rank's process groups
 * (their collectives' sequence) and every send and receive. */
typedef struct Scan {
    RankInfo *ri;
    int64_t nranks, cap;
    P2p *p2p[2];    /* sends, receives */
    int64_t n[2], pcap[2];
} Scan;

static void scan_free(Scan *sc)
{
    for (int64_t i = 0; i < sc->nranks && sc->ri; i++) free(sc->ri[i].pg);
    free(sc->ri);
    free(sc->p2p[0]);
    free(sc->p2p[1]);
}

/* Rank sc->nranks's trace t (read from path) into sc and the counts. */
static TsStatus scan_trace(Scan *sc, const char *path, const WlChakraTrace *t, WlChakraCheck *out, TsError *err)
{
    const int64_t rank = sc->nranks;
    if (rank == sc->cap) {
        int64_t cap = sc->cap ? sc->cap * 2 : 64;
        RankInfo *p = realloc(sc->ri, (size_t)cap * sizeof *p);
        if (!p) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
        sc->ri = p, sc->cap = cap;
    }
    sc->ri[rank] = (RankInfo){0};
    sc->nranks++;
    for (int64_t i = 0; i < t->n_nodes; i++) {
        const WlChakraNode *n = &t->nodes[i];
        out->nodes++;
        if (n->type == 7) {
            out->colls++;
            PgSeq *s = pg_slot(&sc->ri[rank], n->pg_name ? n->pg_name : "");
            if (!s) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
            s->count++;
            s->hash = ts_fnv_word(s->hash, (uint64_t)n->comm_type);
            s->hash = ts_fnv_word(s->hash, (uint64_t)n->comm_size);
        } else if (n->type == 5 || n->type == 6) {
            int k = n->type == 5 ? 0 : 1; /* send, receive */
            if (k == 0 && n->comm_src != rank)
                return ts_err(err, TS_ERR_INPUT, "%s: send node %" PRIu64 " has comm_src %d, not its own rank", path,
                              n->id, n->comm_src);
            if (sc->n[k] == sc->pcap[k]) {
                int64_t cap = sc->pcap[k] ? sc->pcap[k] * 2 : 1024;
                P2p *p = realloc(sc->p2p[k], (size_t)cap * sizeof *p);
                if (!p) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
                sc->p2p[k] = p, sc->pcap[k] = cap;
            }
            sc->p2p[k][sc->n[k]++] = (P2p){n->comm_src, n->comm_dst, n->comm_tag, n->comm_size};
        }
    }
    return TS_OK;
}

/* Every rank's trace PREFIX.<rank>.et: decoded, its graph checked, handed to
 * visit, scanned. */
static TsStatus scan_ranks(const char *prefix, WlChakraVisit visit, void *user, Scan *sc, WlChakraCheck *out,
                           TsError *err)
{
    char path[1100];
    for (const int64_t count = wl_chakra_ranks(prefix); sc->nranks < count;) {
        snprintf(path, sizeof path, "%s.%" PRId64 ".et", prefix, sc->nranks);
        char *data;
        size_t len;
        TsStatus st = ts_read_file(path, (size_t)1 << 32, &data, &len, err);
        if (st) return st;
        WlChakraTrace t;
        st = wl_chakra_decode(path, (const uint8_t *)data, len, &t, err);
        free(data);
        out->bytes += (double)len;
        if (!st) st = check_graph(path, &t, err);
        if (!st && visit) st = visit(user, sc->nranks, &t, err);
        if (!st) st = scan_trace(sc, path, &t, out, err);
        wl_chakra_trace_free(&t);
        if (st) return st;
    }
    if (sc->nranks > 0) return TS_OK;
    ts_err(err, TS_ERR_INPUT, "no trace '%s.0.et'", prefix);
    ts_err_hint(err, "give the prefix used with --output, e.g. DIR/gpt3 for DIR/gpt3.0.et");
    return TS_ERR_INPUT;
}

/* The groups of PREFIX.comm_groups.json: each group's members run the same
 * collectives, every rank naming a group is listed in it, every group named
 * is in the file (which may be absent only where no collective names a
 * group). */
static TsStatus check_groups_file(const char *prefix, const Scan *sc, WlChakraCheck *out, TsError *err)
{
    const RankInfo *ri = sc->ri;
    const int64_t nranks = sc->nranks;
    char path[1100];
    snprintf(path, sizeof path, "%s.comm_groups.json", prefix);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        bool any = false;
        for (int64_t i = 0; i < nranks && !any; i++) any = ri[i].n_pg > 1 || (ri[i].n_pg == 1 && ri[i].pg[0].name[0]);
        if (!any) return TS_OK;
        return ts_err(err, TS_ERR_INPUT, "'%s' is missing or invalid (%s) but collectives name process groups", path,
                      je.text);
    }
    TsStatus st = TS_OK;
    const char *key;
    json_t *arr;
    json_object_foreach(root, key, arr) {
        size_t k = json_array_size(arr);
        int64_t *mem = malloc((k + 1) * sizeof *mem);
        if (!mem) {
            st = ts_err(err, TS_ERR_INTERNAL, "out of memory");
            break;
        }
        for (size_t j = 0; j < k; j++) mem[j] = json_integer_value(json_array_get(arr, j));
        st = compare_group(key, mem, (int64_t)k, ri, nranks, err);
        /* every rank naming this group must be a member */
        for (int64_t r = 0; r < nranks && !st; r++) {
            if (!pg_find(&ri[r], key)) continue;
            bool in = false;
            for (size_t j = 0; j < k; j++) in |= mem[j] == r;
            if (!in) st = ts_err(err, TS_ERR_INPUT, "rank %" PRId64 " uses group %s but is not listed in it", r, key);
        }
        free(mem);
        if (st) break;
        out->groups++;
    }
    for (int64_t r = 0; r < nranks && !st; r++)
        for (int i = 0; i < ri[r].n_pg && !st; i++)
            if (ri[r].pg[i].name[0] && !json_object_get(root, ri[r].pg[i].name))
                st = ts_err(err, TS_ERR_INPUT, "rank %" PRId64 " uses group '%s' missing from %s", r, ri[r].pg[i].name,
                            path);
    json_decref(root);
    return st;
}

/* Every send has its receive (source, destination, tag, size), and the
 * other way round. */
static TsStatus check_pairs(Scan *sc, TsError *err)
{
    P2p *sends = sc->p2p[0], *recvs = sc->p2p[1];
    const int64_t ns = sc->n[0], nr = sc->n[1];
    if (ns) qsort(sends, (size_t)ns, sizeof *sends, p2p_cmp);
    if (nr) qsort(recvs, (size_t)nr, sizeof *recvs, p2p_cmp);
    for (int64_t i = 0; i < ns || i < nr; i++) {
        if (i < ns && i < nr && p2p_cmp(&sends[i], &recvs[i]) == 0) continue;
        const P2p *x = i < ns ? &sends[i] : &recvs[i];
        return ts_err(err, TS_ERR_INPUT,
                      "%s %" PRId64 " -> %" PRId64 " (tag %" PRId64 ", %" PRId64 " bytes) has no matching %s",
                      i < ns ? "send" : "receive", x->src, x->dst, x->tag, x->size, i < ns ? "receive" : "send");
    }
    return TS_OK;
}

TsStatus wl_check_chakra_visit(const char *prefix, WlChakraVisit visit, void *user, WlChakraCheck *out,
                               TsError *err)
{
    memset(out, 0, sizeof *out);
    Scan sc = {0};
    TsStatus st = scan_ranks(prefix, visit, user, &sc, out, err);
    if (!st) {
        out->ranks = sc.nranks;
        out->sends = sc.n[0];
        out->recvs = sc.n[1];
        /* collectives without pg_name run over every rank */
        int64_t *all = malloc((size_t)sc.nranks * sizeof *all);
        if (!all) st = ts_err(err, TS_ERR_INTERNAL, "out of memory");
        for (int64_t i = 0; all && i < sc.nranks; i++) all[i] = i;
        if (all) st = compare_group("", all, sc.nranks, sc.ri, sc.nranks, err);
        free(all);
    }
    if (!st) st = check_groups_file(prefix, &sc, out, err);
    if (!st) st = check_pairs(&sc, err);
    scan_free(&sc);
    return st;
}
