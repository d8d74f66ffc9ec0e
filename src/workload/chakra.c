/* Chakra execution traces for ASTRA-sim 2.0 (reference/astrasim_chakra.md
 * §2.2): one <prefix>.<rank>.et per rank, a stream of varint-length-delimited
 * protobuf messages (GlobalMetadata, then one Node per task), encoded with
 * protobuf-c from src/workload/et_def.proto; plus <prefix>.comm_groups.json.
 *
 * Mapping: COMP -> COMP_NODE (duration_micros = whole µs, at least 1;
 * num_ops int64, at least one op per 16-bit element moved so that ASTRA-sim's
 * roofline mode never divides 0 by 0; tensor_size uint64; is_cpu_op false).
 * COLL -> COMM_COLL_NODE (comm_type; comm_size int64 as ASTRA-sim's
 * collectives and Chakra's PyTorch converter read it: ALL_GATHER the input of
 * one rank, the whole buffer / group size, every other type the whole
 * buffer; pg_name = the group's id in comm_groups.json, on every collective,
 * the all-ranks group included; involved_dim bool list). SEND/RECV ->
 * COMM_SEND/RECV_NODE (comm_src, comm_dst, comm_tag int32; comm_size int64).
 * Group ids are small and count from 1 (ASTRA-sim multiplies an id by 10^6
 * in a 32-bit int). Node ids are task ids local to the rank's class; task
 * deps become data_deps / ctrl_deps. GlobalMetadata carries the generator
 * and the rank layout (attribute trainsim_layout), from which wl_read_chakra
 * rebuilds one class per pipeline stage. WlChakraOptions.world_pg false
 * leaves the all-ranks collectives without pg_name, as ASTRA-sim's own
 * microbenchmark traces are. A collective of an overlapped F&B pair
 * (WL_F_PAIR) carries the bool attribute trainsim_pair. */
#include "trainsim/workload.h"
#include "trainsim/workload_chakra.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "et_def.pb-c.h"

typedef ChakraProtoMsg__AttributeProto Attr;
typedef ChakraProtoMsg__Node Node;

void wl_chakra_options_init(WlChakraOptions *o)
{
    memset(o, 0, sizeof *o);
    o->max_ranks = 1 << 20;
    o->comm_groups = true;
    o->involved_dims = 1;
    o->generator_attr = true;
    o->world_pg = true;
}

static int64_t chakra_coll(TsColl c)
{
    switch (c) {
    case TS_COLL_ALLREDUCE: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_REDUCE;
    case TS_COLL_ALLGATHER: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_GATHER;
    case TS_COLL_REDUCESCATTER: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__REDUCE_SCATTER;
    case TS_COLL_ALLTOALL: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__ALL_TO_ALL;
    case TS_COLL_BROADCAST: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BROADCAST;
    default: return CHAKRA_PROTO_MSG__COLLECTIVE_COMM_TYPE__BARRIER;
    }
}

/* Scratch space reused across nodes of one encode call. */
typedef struct Enc {
    TsBuf *out;
    uint8_t *buf;
    size_t cap;
    uint64_t *deps;
    size_t deps_cap;
} Enc;

static void put_varint(TsBuf *b, uint64_t v)
{
    uint8_t tmp[10];
    size_t n = 0;
    do {
        tmp[n] = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) tmp[n] |= 0x80;
        n++;
    } while (v);
    ts_buf_append(b, (const char *)tmp, n);
}

static bool emit(Enc *e, const ProtobufCMessage *m)
{
    size_t n = protobuf_c_message_get_packed_size(m);
    if (n > e->cap) {
        size_t nc = n * 2 + 256;
        uint8_t *p = realloc(e->buf, nc);
        if (!p) return false;
        e->buf = p;
        e->cap = nc;
    }
    protobuf_c_message_pack(m, e->buf);
    put_varint(e->out, n);
    ts_buf_append(e->out, (const char *)e->buf, n);
    return !e->out->oom;
}

static Attr attr_named(const char *name)
{
    Attr a = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__INIT;
    a.name = (char *)name;
    return a;
}

/* Small group ids from 1: every group of every kind the collectives use,
 * kinds in enum order, the groups of a kind by their first member; the
 * all-ranks group too when world_pg. ids[g][rank] = the id of the rank's
 * group of kind g (kinds not used: NULL). */
typedef struct GroupIds {
    int32_t *ids[WL_GROUP_COUNT];
    int32_t first[WL_GROUP_COUNT]; /* the first id of each kind, 0 = not used */
} GroupIds;

static void group_ids_free(GroupIds *gi)
{
    for (int g = 0; g < WL_GROUP_COUNT; g++) free(gi->ids[g]);
    memset(gi, 0, sizeof *gi);
}

static bool group_ids(const Workload *w, const WlChakraOptions *o, GroupIds *gi)
{
    memset(gi, 0, sizeof *gi);
    bool used[WL_GROUP_COUNT] = {false};
    for (int32_t i = 0; i < w->n_tasks; i++)
        if (w->tasks[i].kind == WL_KIND_COLL) used[w->tasks[i].group] = true;
    used[WL_GROUP_NONE] = false;
    if (!o->world_pg) used[WL_GROUP_WORLD] = false;
    int64_t world = w->par.world;
    int32_t next = 1;
    for (int g = 0; g < WL_GROUP_COUNT; g++) {
        if (!used[g]) continue;
        if (!(gi->ids[g] = malloc((size_t)(world > 0 ? world : 1) * sizeof *gi->ids[g]))) {
            group_ids_free(gi);
            return false;
        }
        gi->first[g] = next;
        for (int64_t r = 0; r < world; r++) {
            int64_t first, gid;
            wl_group_members(w, (WlGroup)g, r, &first, 1, &gid);
            gi->ids[g][r] = first == r ? next++ : gi->ids[g][first]; /* first <= r: already numbered */
        }
    }
    return true;
}

typedef struct RankGroups {
    char pg[WL_GROUP_COUNT][16]; /* pg_name of the rank's group of each kind, "" = none */
    int64_t size[WL_GROUP_COUNT];
} RankGroups;

static void rank_groups(const Workload *w, const GroupIds *gi, int64_t rank, RankGroups *rg)
{
    for (int g = 0; g < WL_GROUP_COUNT; g++) {
        rg->pg[g][0] = '\0';
        rg->size[g] = g == WL_GROUP_NONE ? 1 : wl_group_size(w, (WlGroup)g);
        if (gi->ids[g]) snprintf(rg->pg[g], sizeof rg->pg[g], "%d", (int)gi->ids[g][rank]);
    }
}

/* Encoded nodes of the current class, reused across its ranks: a COMP node
 * is the same on every rank, a group collective on every rank of the group;
 * only sends and receives (and DP/CP/EP collectives, whose group changes
 * from one rank to the next) are re-encoded. */
typedef struct Slot {
    uint8_t *p;
    size_t len, cap;
    int64_t key;      /* -2: empty */
} Slot;

typedef struct Cache {
    int32_t cls;      /* class the slots belong to, -1 */
    Slot *slots;
    int32_t n;
} Cache;

static void cache_free(Cache *c)
{
    for (int32_t i = 0; i < c->n; i++) free(c->slots[i].p);
    free(c->slots);
    memset(c, 0, sizeof *c);
    c->cls = -1;
}

typedef struct NodeCtx {
    const Workload *w;
    const WlClass *c;
    int64_t rank;
    const RankGroups *rg;
    ChakraProtoMsg__BoolList *dims;
    int ndims;
} NodeCtx;

static bool encode_node(Enc *e, const NodeCtx *x, int32_t i)
{
    const Workload *w = x->w;
    const WlClass *c = x->c;
    const WlTask *t = &w->tasks[c->first_task + i];
    Node n = CHAKRA_PROTO_MSG__NODE__INIT;
    n.id = (uint64_t)i;
    n.name = (char *)(t->name[0] ? t->name : "task");
    size_t nd = (size_t)(t->n_data_deps + t->n_ctrl_deps);
    if (nd > e->deps_cap) {
        uint64_t *p = realloc(e->deps, (nd * 2 + 16) * sizeof *p);
        if (!p) return false;
        e->deps = p;
        e->deps_cap = nd * 2 + 16;
    }
    const int32_t *d = wl_task_deps(w, t);
    for (size_t k = 0; k < nd; k++) e->deps[k] = (uint64_t)(d[k] - c->first_task);
    n.n_data_deps = (size_t)t->n_data_deps;
    n.data_deps = e->deps;
    n.n_ctrl_deps = (size_t)t->n_ctrl_deps;
    n.ctrl_deps = e->deps ? e->deps + t->n_data_deps : NULL; /* no deps yet: NULL + 0 is UB */
    Attr a[7];
    Attr *ap[7];
    int na = 0;
    a[na] = attr_named("is_cpu_op");
    a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
    a[na++].bool_val = 0;
    if (t->kind == WL_KIND_COMP) {
        n.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMP_NODE;
        double us = ceil(t->duration_s * 1e6 - 1e-6);
        n.duration_micros = us < 1 ? 1 : (uint64_t)us;
        /* a memory-bound kernel does at least one op per 16-bit element it
         * moves: ASTRA-sim's roofline mode then gives it bytes / bandwidth
         * (0 ops would be 0 / 0) */
        double ops = t->flops > t->mem_bytes / 2 ? t->flops : ceil(t->mem_bytes / 2);
        a[na] = attr_named("num_ops");
        a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
        a[na++].int64_val = (int64_t)llround(ops);
        a[na] = attr_named("tensor_size");
        a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_UINT64_VAL;
        a[na++].uint64_val = (uint64_t)llround(t->mem_bytes);
    } else if (t->kind == WL_KIND_COLL) {
        n.type = CHAKRA_PROTO_MSG__NODE_TYPE__COMM_COLL_NODE;
        a[na] = attr_named("comm_type");
        a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
        a[na++].int64_val = chakra_coll(t->coll);
        /* ALL_GATHER: each rank's input (ASTRA-sim gathers N x comm_size) */
        double size = t->comm_bytes;
        if (t->coll == TS_COLL_ALLGATHER && x->rg->size[t->group] > 1) size /= (double)x->rg->size[t->group];
        a[na] = attr_named("comm_size");
        a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
        a[na++].int64_val = (int64_t)llround(size);
        if (x->rg->pg[t->group][0]) {
            a[na] = attr_named("pg_name");
            a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
            a[na++].string_val = (char *)x->rg->pg[t->group];
            if (x->ndims > 0) {
                a[na] = attr_named("involved_dim");
                a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_LIST;
                a[na++].bool_list = x->dims;
            }
        }
        if (t->flags & WL_F_PAIR) {
            a[na] = attr_named("trainsim_pair");
            a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_BOOL_VAL;
            a[na++].bool_val = 1;
        }
    } else {
        bool send = t->kind == WL_KIND_SEND;
        n.type = send ? CHAKRA_PROTO_MSG__NODE_TYPE__COMM_SEND_NODE : CHAKRA_PROTO_MSG__NODE_TYPE__COMM_RECV_NODE;
        int64_t peer = wl_stage_peer(w, x->rank, t->peer_stage);
        a[na] = attr_named("comm_src");
        a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
        a[na++].int32_val = (int32_t)(send ? x->rank : peer);
        a[na] = attr_named("comm_dst");
        a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
        a[na++].int32_val = (int32_t)(send ? peer : x->rank);
        a[na] = attr_named("comm_tag");
        a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT32_VAL;
        a[na++].int32_val = t->tag;
        a[na] = attr_named("comm_size");
        a[na].value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_INT64_VAL;
        a[na++].int64_val = (int64_t)llround(t->comm_bytes);
    }
    for (int k = 0; k < na; k++) ap[k] = &a[k];
    n.n_attr = (size_t)na;
    n.attr = ap;
    return emit(e, &n.base);
}

/* Key under which a node's encoding may be reused, -1 = never. */
static int64_t node_key(const WlTask *t, const RankGroups *rg)
{
    if (t->kind == WL_KIND_COMP) return 0;
    if (t->kind != WL_KIND_COLL) return -1;
    return rg->pg[t->group][0] ? atoll(rg->pg[t->group]) : 0;
}

static TsStatus encode_rank(const Workload *w, const WlChakraOptions *o, const GroupIds *gi, int64_t rank,
                            Cache *cache, TsBuf *out, TsError *err)
{
    Enc e = {.out = out};
    TsBuf scratch = {0};
    TsStatus st = TS_OK;
    ChakraProtoMsg__GlobalMetadata gm = CHAKRA_PROTO_MSG__GLOBAL_METADATA__INIT;
    gm.version = (char *)WL_CHAKRA_VERSION;
    Attr gen = attr_named("generator"), lay = attr_named("trainsim_layout"), grp = attr_named("trainsim_groups");
    Attr *gattrs[3] = {&gen, &lay, &grp};
    char gen_s[64], lay_s[256], grp_s[256] = "";
    if (o->generator_attr) {
        snprintf(gen_s, sizeof gen_s, "trainsim %s", TRAINSIM_VERSION);
        gen.value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
        gen.string_val = gen_s;
        wl_layout_format(&w->par, lay_s, sizeof lay_s);
        lay.value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
        lay.string_val = lay_s;
        for (int g = 0; g < WL_GROUP_COUNT; g++)
            if (gi->first[g] > 0)
                snprintf(grp_s + strlen(grp_s), sizeof grp_s - strlen(grp_s), "%s%s:%d", grp_s[0] ? " " : "",
                         wl_group_name((WlGroup)g), (int)gi->first[g]);
        grp.value_case = CHAKRA_PROTO_MSG__ATTRIBUTE_PROTO__VALUE_STRING_VAL;
        grp.string_val = grp_s;
        gm.n_attr = 3;
        gm.attr = gattrs;
    }
    if (!emit(&e, &gm.base)) goto oom;
    if (w->n_classes == 0) goto done;
    int32_t ci = wl_rank_class(w, rank);
    const WlClass *c = &w->classes[ci];
    if (cache->cls != ci) {
        cache_free(cache);
        cache->slots = calloc((size_t)c->n_tasks + 1, sizeof *cache->slots);
        if (!cache->slots) goto oom;
        cache->n = c->n_tasks;
        cache->cls = ci;
        for (int32_t i = 0; i < c->n_tasks; i++) cache->slots[i].key = -2;
    }
    RankGroups rg;
    rank_groups(w, gi, rank, &rg);
    protobuf_c_boolean dims[16];
    int ndims = o->involved_dims < 0 ? 0 : o->involved_dims > 16 ? 16 : o->involved_dims;
    for (int i = 0; i < 16; i++) dims[i] = 1;
    ChakraProtoMsg__BoolList dimlist = CHAKRA_PROTO_MSG__BOOL_LIST__INIT;
    dimlist.n_values = (size_t)ndims;
    dimlist.values = dims;
    NodeCtx x = {w, c, rank, &rg, &dimlist, ndims};
    for (int32_t i = 0; i < c->n_tasks; i++) {
        Slot *sl = &cache->slots[i];
        int64_t key = node_key(&w->tasks[c->first_task + i], &rg);
        if (key >= 0 && sl->key == key) {
            ts_buf_append(out, (const char *)sl->p, sl->len);
            continue;
        }
        scratch.len = 0;
        e.out = &scratch;
        bool ok = encode_node(&e, &x, i);
        e.out = out;
        if (!ok || scratch.oom) goto oom;
        ts_buf_append(out, scratch.data, scratch.len);
        if (key >= 0) {
            if (scratch.len > sl->cap) {
                uint8_t *p = realloc(sl->p, scratch.len);
                if (!p) goto oom;
                sl->p = p;
                sl->cap = scratch.len;
            }
            memcpy(sl->p, scratch.data, scratch.len);
            sl->len = scratch.len;
            sl->key = key;
        }
    }
    if (out->oom) goto oom;
    goto done;
oom:
    st = ts_err(err, TS_ERR_INTERNAL, "out of memory encoding the Chakra trace of rank %" PRId64, rank);
done:
    ts_buf_free(&scratch);
    free(e.buf);
    free(e.deps);
    return st;
}

TsStatus wl_chakra_encode_rank(const Workload *w, const WlChakraOptions *o, int64_t rank,
                               TsBuf *out, TsError *err)
{
    WlChakraOptions def;
    if (!o) {
        wl_chakra_options_init(&def);
        o = &def;
    }
    GroupIds gi;
    if (!group_ids(w, o, &gi)) return ts_err(err, TS_ERR_INTERNAL, "out of memory numbering the groups");
    Cache cache = {.cls = -1};
    TsStatus st = encode_rank(w, o, &gi, rank, &cache, out, err);
    cache_free(&cache);
    group_ids_free(&gi);
    return st;
}

/* comm_groups.json: every numbered group once, from its first member. */
static TsStatus write_groups(const Workload *w, const GroupIds *gi, const char *path, int64_t *bytes, TsError *err)
{
    TsBuf b = {0};
    ts_buf_puts(&b, "{");
    bool first = true;
    int64_t world = w->par.world;
    int64_t *mem = malloc((size_t)(world > 0 ? world : 1) * sizeof *mem);
    if (!mem) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    for (int g = 0; g < WL_GROUP_COUNT; g++) {
        if (!gi->ids[g]) continue;
        for (int64_t r = 0; r < world; r++) {
            int64_t gid, k = wl_group_members(w, (WlGroup)g, r, mem, world, &gid);
            if (mem[0] != r) continue; /* list each group once, from its first member */
            ts_buf_printf(&b, "%s\n  \"%d\": [", first ? "" : ",", (int)gi->ids[g][r]);
            for (int64_t j = 0; j < k; j++) ts_buf_printf(&b, "%s%" PRId64, j ? ", " : "", mem[j]);
            ts_buf_puts(&b, "]");
            first = false;
        }
    }
    free(mem);
    ts_buf_puts(&b, first ? "}\n" : "\n}\n");
    TsStatus st = b.oom ? ts_err(err, TS_ERR_INTERNAL, "out of memory")
                        : ts_write_file_atomic(path, b.data, b.len, err);
    if (!st && bytes) *bytes += (int64_t)b.len;
    ts_buf_free(&b);
    return st;
}

TsStatus wl_write_chakra(const Workload *w, const WlChakraOptions *o, const char *prefix,
                         int64_t *bytes_out, TsError *err)
{
    WlChakraOptions def;
    if (!o) {
        wl_chakra_options_init(&def);
        o = &def;
    }
    int64_t world = w->par.world, total = 0;
    if (world > o->max_ranks)
        return ts_err(err, TS_ERR_USAGE, "%" PRId64 " ranks exceed the limit of %" PRId64 " trace files",
                      world, o->max_ranks);
    char path[1100];
    TsBuf b = {0};
    TsStatus st = TS_OK;
    Cache cache = {.cls = -1};
    GroupIds gi;
    if (!group_ids(w, o, &gi)) return ts_err(err, TS_ERR_INTERNAL, "out of memory numbering the groups");
    int64_t r;
    for (r = 0; r < world; r++) {
        b.len = 0;
        if (b.data) b.data[0] = '\0';
        if ((st = encode_rank(w, o, &gi, r, &cache, &b, err))) break;
        snprintf(path, sizeof path, "%s.%" PRId64 ".et", prefix, r);
        TsOutFile f;
        if ((st = ts_out_open(&f, path, err))) break;
        if (b.len && fwrite(b.data, 1, b.len, f.fp) != b.len) {
            ts_out_abort(&f);
            st = ts_err(err, TS_ERR_INTERNAL, "write error on '%s'", path);
            break;
        }
        if ((st = ts_out_commit(&f, err))) break;
        total += (int64_t)b.len;
    }
    ts_buf_free(&b);
    cache_free(&cache);
    if (!st && o->comm_groups) {
        snprintf(path, sizeof path, "%s.comm_groups.json", prefix);
        st = write_groups(w, &gi, path, &total, err);
    }
    group_ids_free(&gi);
    if (st) { /* no partial output: remove the traces already committed */
        for (int64_t k = 0; k < r; k++) {
            snprintf(path, sizeof path, "%s.%" PRId64 ".et", prefix, k);
            unlink(path);
        }
        return st;
    }
    if (bytes_out) *bytes_out = total;
    return TS_OK;
}
