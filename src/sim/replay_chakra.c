/*
 * replay_chakra.c — a Chakra execution-trace set (<prefix>.<rank>.et and
 * <prefix>.comm_groups.json, as ASTRA-sim 2.0 reads it) replayed rank by
 * rank with ASTRA-sim's semantics (reference/astrasim_chakra.md §2.2):
 *   - a node is issued when all its data and control parents are done;
 *   - COMP runs on its rank's GPU (is_cpu_op: its CPU), one at a time in
 *     issue order, for duration_micros (0 µs and no num_ops: 1 ns, as
 *     ASTRA-sim; num_ops / tensor_size without a duration: the GPU
 *     roofline);
 *   - a collective waits for every rank of its group (pg_name in
 *     comm_groups.json; none: all ranks) to issue it — the k-th collective
 *     of a group on each rank is one operation — then takes hw_coll_time_s
 *     over the group's size and node span; collectives of one group on one
 *     rank run one after another (one NCCL communicator stream);
 *   - a send runs on its rank's send stream for the p2p time (across nodes
 *     when the peer is on another node); its receive, matched on (src, dst,
 *     tag) in file order, finishes when both it is issued and the send has
 *     finished;
 *   - the iteration ends when the last node of any rank does.
 * Breakdown of the rank that ends last: its GPU busy time, and every idle
 * gap of its GPU charged to what the next kernel waited for (the parent that
 * finished last: a collective, a send/receive, or anything else).
 *
 * Discrete-event simulation over all ranks: a heap of node completions
 * processed in time order (ties by node order, so runs are deterministic).
 * wl_check_chakra validates the set first (deps exist, acyclic, groups
 * consistent, sends matched), so the replay only meets well-formed input;
 * it still reports a cross-rank deadlock (ranks issuing two groups'
 * collectives in opposite orders).
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim/sim.h"
#include "trainsim/workload.h"

enum { T_COMP = 4, T_SEND = 5, T_RECV = 6, T_COLL = 7 };
enum { S_GPU, S_CPU, S_SEND, S_FIXED }; /* per-rank streams; groups follow */
#define MAX_NODES ((int64_t)1 << 30)

typedef struct CNode {
    double dur;     /* COMP: kernel time; SEND: transfer; COLL: the collective's cost */
    double ready;   /* when the last parent finished, -1 before */
    double fin;     /* finish, -1 before */
    double start;   /* when its stream started it (a collective: its arrival on this rank) */
    int32_t stream; /* global stream index; RECV -1 */
    int32_t next;   /* FIFO link in its stream, or rendezvous chain */
    int32_t pend;   /* parents not finished */
    int32_t child0, nchild;
    int32_t match;  /* COLL: rendezvous slot; SEND: its RECV; RECV: its SEND */
    int32_t rank;
    int32_t lastp;  /* the parent that finished last, -1 */
    uint8_t type, cpu;
} CNode;

typedef struct Stream {
    int32_t head, tail; /* FIFO of ready nodes, -1 = empty */
    int32_t busy;       /* node in flight, -1 = free */
    int32_t group;      /* group of a collective stream, -1 for GPU/CPU/send */
} Stream;

typedef struct Group {
    char *name;         /* pg_name; "" for the all-ranks group */
    int64_t *ranks;
    int64_t size, nodes;
    int64_t ncoll;      /* collectives each member issues */
    double *cost;       /* [k]: the k-th collective's time, costed once for all members */
    int64_t n_cost;
    size_t cap_cost;
    int64_t slot0;      /* first rendezvous slot */
} Group;

typedef struct NameIx {
    const char *name;
    int32_t g;
} NameIx;

typedef struct Slot {
    double tmax;
    int32_t arrived, chain;
} Slot;

typedef struct Edge {
    int32_t parent, child;
} Edge;

typedef struct P2pKey {
    int64_t src, dst, tag, seq;
    int32_t gid;
} P2pKey;

typedef struct Heap {
    double *t;
    int32_t *id;
    int64_t n, cap;
} Heap;

typedef struct Rep {
    const HwModel *hw;
    const HwNet *net;
    int64_t ranks, n;
    size_t cap;
    CNode *nd;
    int32_t *children;
    Edge *edges;
    int64_t n_edges;
    size_t cap_edges;
    Stream *st;         /* a rank's streams are contiguous: GPU, CPU, send, its groups */
    int32_t *rank_st0;  /* rank -> its first stream */
    int64_t *rank_n0;   /* rank -> its first node (global index) */
    const char *prefix;
    int64_t rec0, record; /* ranks rec0 .. rec0+record-1 keep their node names for the timeline */
    const char **names; /* [nodes of the recorded ranks] */
    size_t cap_names;
    TsArena *arena;     /* the names (handed to the result) */
    int64_t n_st;
    size_t cap_st;
    Group *g;
    int64_t n_g;
    NameIx *by_name;    /* groups 1.. sorted by name (group_of) */
    Slot *slots;
    P2pKey *sends, *recvs;
    int64_t n_send, n_recv;
    size_t cap_send, cap_recv;
    Heap h;
} Rep;

static TsStatus oom(TsError *err) { return ts_err(err, TS_ERR_INTERNAL, "out of memory replaying the Chakra traces"); }

/* ---- heap of completions (time, node) ------------------------------------------ */
static bool before(const Heap *h, int64_t a, int64_t b)
{
    return h->t[a] < h->t[b] || (h->t[a] == h->t[b] && h->id[a] < h->id[b]);
}

static void swap_at(Heap *h, int64_t a, int64_t b)
{
    double t = h->t[a];
    int32_t i = h->id[a];
    h->t[a] = h->t[b];
    h->id[a] = h->id[b];
    h->t[b] = t;
    h->id[b] = i;
}

static bool heap_push(Heap *h, double t, int32_t id)
{
    if (h->n == h->cap) {
        int64_t nc = h->cap ? h->cap * 2 : 1024;
        double *tt = realloc(h->t, (size_t)nc * sizeof *tt);
        if (!tt) return false;
        h->t = tt;
        int32_t *ii = realloc(h->id, (size_t)nc * sizeof *ii);
        if (!ii) return false;
        h->id = ii;
        h->cap = nc;
    }
    int64_t i = h->n++;
    h->t[i] = t;
    h->id[i] = id;
    while (i > 0 && before(h, i, (i - 1) / 2)) {
        swap_at(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
    return true;
}

static void heap_pop(Heap *h, double *t, int32_t *id)
{
    *t = h->t[0];
    *id = h->id[0];
    h->n--;
    h->t[0] = h->t[h->n];
    h->id[0] = h->id[h->n];
    for (int64_t i = 0;;) {
        int64_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && before(h, l, m)) m = l;
        if (r < h->n && before(h, r, m)) m = r;
        if (m == i) break;
        swap_at(h, i, m);
        i = m;
    }
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(((const NameIx *)a)->name, ((const NameIx *)b)->name);
}

static bool index_groups(Rep *r)
{
    r->by_name = malloc(((size_t)r->n_g + 1) * sizeof *r->by_name);
    if (!r->by_name) return false;
    for (int64_t k = 1; k < r->n_g; k++) r->by_name[k - 1] = (NameIx){r->g[k].name, (int32_t)k};
    if (r->n_g > 1) qsort(r->by_name, (size_t)(r->n_g - 1), sizeof *r->by_name, name_cmp);
    return true;
}

static int32_t group_of(const Rep *r, const char *pg)
{
    if (!pg || !pg[0]) return 0;
    NameIx key = {pg, 0};
    const NameIx *hit = r->n_g > 1 ? bsearch(&key, r->by_name, (size_t)(r->n_g - 1), sizeof key, name_cmp) : NULL;
    return hit ? hit->g : -1;
}

/* ---- loading ---------------------------------------------------------------------- */
static TsStatus load_groups(Rep *r, const char *prefix, TsError *err)
{
    char path[1100];
    snprintf(path, sizeof path, "%s.comm_groups.json", prefix);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je); /* wl_check_chakra accepted it (or its absence) */
    size_t n = root ? json_object_size(root) : 0;
    r->g = calloc(n + 1, sizeof *r->g);
    if (!r->g) {
        json_decref(root);
        return oom(err);
    }
    /* group 0: collectives without pg_name run over every rank */
    r->g[0].ranks = malloc((size_t)r->ranks * sizeof *r->g[0].ranks);
    if (!r->g[0].ranks) {
        json_decref(root);
        return oom(err);
    }
    for (int64_t i = 0; i < r->ranks; i++) r->g[0].ranks[i] = i;
    r->g[0].size = r->ranks;
    r->g[0].name = strdup("");
    if (!r->g[0].name) {
        json_decref(root);
        return oom(err);
    }
    r->n_g = 1;
    const char *key;
    json_t *arr;
    json_object_foreach(root, key, arr) {
        Group *g = &r->g[r->n_g++];
        g->name = strdup(key);
        g->size = (int64_t)json_array_size(arr);
        g->ranks = malloc(((size_t)g->size + 1) * sizeof *g->ranks);
        if (!g->ranks || !g->name) {
            json_decref(root);
            return oom(err);
        }
        for (int64_t j = 0; j < g->size; j++) g->ranks[j] = json_integer_value(json_array_get(arr, (size_t)j));
    }
    json_decref(root);
    int64_t gpn = r->net->cl.gpus_per_node > 0 ? r->net->cl.gpus_per_node : 1;
    uint8_t *seen = calloc((size_t)(r->ranks / gpn) + 1, 1);
    if (!seen) return oom(err);
    for (int64_t k = 0; k < r->n_g; k++) { /* node span: distinct rank / gpn (ranks checked < ranks) */
        Group *g = &r->g[k];
        for (int64_t j = 0; j < g->size; j++) {
            int64_t node = g->ranks[j] / gpn;
            if (node >= 0 && node <= r->ranks / gpn && !seen[node]) seen[node] = 1, g->nodes++;
        }
        for (int64_t j = 0; j < g->size; j++)
            if (g->ranks[j] / gpn >= 0 && g->ranks[j] / gpn <= r->ranks / gpn) seen[g->ranks[j] / gpn] = 0;
    }
    free(seen);
    if (!index_groups(r)) return oom(err);
    return TS_OK;
}

static bool coll_kind(int64_t t, TsColl *c)
{
    switch (t) {
    case 0: *c = TS_COLL_ALLREDUCE; return true;
    case 2: *c = TS_COLL_ALLGATHER; return true;
    case 5: *c = TS_COLL_BROADCAST; return true;
    case 6: *c = TS_COLL_ALLTOALL; return true;
    case 7: case 8: *c = TS_COLL_REDUCESCATTER; return true;
    case 9: *c = TS_COLL_ALLREDUCE; return true; /* barrier: a one-element all-reduce (torch) */
    default: return false;
    }
}

/* Kernel time of a COMP node: its duration, else the GPU roofline of
 * num_ops (tensor-core peak x GEMM efficiency) and tensor_size (the memory
 * kernel model, hw_memory_time_s), else ASTRA-sim's 1 ns. */
static double comp_time(const Rep *r, const WlChakraNode *n)
{
    if (n->duration_us > 0) return (double)n->duration_us * 1e-6;
    const GpuSpec *g = &r->hw->gpu;
    double f = n->num_ops > 0 && g->peak_flops[TS_DTYPE_BF16] > 0
                   ? (double)n->num_ops / (g->peak_flops[TS_DTYPE_BF16] * g->gemm_eff[TS_DTYPE_BF16]) : 0;
    double m = n->tensor_size > 0 ? hw_memory_time_s(r->hw, (double)n->tensor_size) : 0;
    double t = f > m ? f : m;
    return t > 0 ? t : 1e-9;
}

static bool add_stream(Rep *r, int32_t group)
{
    if (!ts_grow((void **)&r->st, &r->cap_st, (size_t)r->n_st + 1, sizeof *r->st)) return false;
    r->st[r->n_st++] = (Stream){-1, -1, -1, group};
    return true;
}

/* The collective stream of (rank, group), created on first use. -1: out of memory. */
static int32_t group_stream(Rep *r, int64_t rank, int32_t grp)
{
    for (int64_t s = r->rank_st0[rank] + S_FIXED; s < r->n_st; s++)
        if (r->st[s].group == grp) return (int32_t)s;
    return add_stream(r, grp) ? (int32_t)(r->n_st - 1) : -1;
}

static bool add_p2p(P2pKey **v, int64_t *n, size_t *cap, P2pKey k)
{
    if (!ts_grow((void **)v, cap, (size_t)*n + 1, sizeof **v)) return false;
    (*v)[(*n)++] = k;
    return true;
}

/* One rank's nodes, streams, edges and p2p keys. */
static TsStatus load_rank(Rep *r, int64_t rank, const WlChakraTrace *t, int64_t *seq, TsError *err)
{
    int64_t base = r->n, gpn = r->net->cl.gpus_per_node > 0 ? r->net->cl.gpus_per_node : 1;
    if (base + t->n_nodes > MAX_NODES)
        return ts_err(err, TS_ERR_INPUT, "the traces hold more than %" PRId64 " nodes", MAX_NODES);
    if (!t->dep_index) return ts_err(err, TS_ERR_INTERNAL, "a Chakra trace reached the replay unchecked");
    if (!ts_grow((void **)&r->nd, &r->cap, (size_t)(base + t->n_nodes), sizeof *r->nd)) return oom(err);
    r->rank_st0[rank] = (int32_t)r->n_st;
    r->rank_n0[rank] = base;
    TsStatus st = TS_OK;
    for (int k = 0; k < S_FIXED && !st; k++)
        if (!add_stream(r, -1)) st = oom(err);
    int64_t dep = 0;
    bool keep = rank >= r->rec0 && rank < r->rec0 + r->record;
    if (keep && !ts_grow((void **)&r->names, &r->cap_names, (size_t)(base + t->n_nodes), sizeof *r->names)) st = oom(err);
    for (int64_t i = 0; i < t->n_nodes && !st; i++) {
        const WlChakraNode *n = &t->nodes[i];
        int32_t gid = (int32_t)(base + i);
        if (keep && !(r->names[gid] = ts_arena_strdup(r->arena, n->name ? n->name : ""))) st = oom(err);
        CNode *c = &r->nd[gid];
        *c = (CNode){.ready = -1, .fin = -1, .stream = -1, .next = -1, .match = -1, .rank = (int32_t)rank,
                     .lastp = -1,
                     .type = (uint8_t)(n->type >= 0 && n->type < 256 ? n->type : 0)};
        if (n->type == T_COMP) {
            c->cpu = n->has_is_cpu_op && n->is_cpu_op;
            c->stream = r->rank_st0[rank] + (c->cpu ? S_CPU : S_GPU);
            c->dur = comp_time(r, n);
        } else if (n->type == T_COLL) {
            int32_t g = group_of(r, n->pg_name);
            TsColl kind;
            if (g < 0 || !coll_kind(n->comm_type, &kind)) {
                if (g < 0)
                    st = ts_err(err, TS_ERR_INPUT, "rank %" PRId64 " node %" PRIu64 " '%s': unknown process group",
                                rank, n->id, n->name);
                else
                    st = ts_err(err, TS_ERR_INPUT,
                                "rank %" PRId64 " node %" PRIu64 " '%s': collective comm_type %" PRId64
                                " (REDUCE 1, GATHER 3, SCATTER 4) is not replayed",
                                rank, n->id, n->name, n->comm_type);
                ts_err_hint(err, "ASTRA-sim replays all-reduce, all-gather, reduce-scatter and all-to-all "
                                 "(comm_type 0, 2, 7, 6); trainsim also broadcast (5), reduce-scatter-block "
                                 "(8) and barrier (9)");
                char path[1100];
                snprintf(path, sizeof path, "%s.%" PRId64 ".et", r->prefix, rank);
                ts_err_at(err, path, 0, 0, NULL);
                break;
            }
            c->stream = group_stream(r, rank, g);
            if (c->stream < 0) st = oom(err);
            Group *gr = &r->g[g];
            int64_t k = seq[g]++;
            c->match = (int32_t)k;
            /* every member issues the same k-th collective (checked once all
             * ranks are read, before the replay runs): cost it once */
            if (k == gr->n_cost) {
                if (!ts_grow((void **)&gr->cost, &gr->cap_cost, (size_t)k + 1, sizeof *gr->cost)) {
                    st = oom(err);
                    break;
                }
                double bytes = n->comm_type == 9 ? 4.0 : (double)n->comm_size;
                gr->cost[gr->n_cost++] = hw_coll_time_s(r->net, kind, bytes, gr->size, gr->nodes, 1, NULL);
            }
            c->dur = k < gr->n_cost ? gr->cost[k] : 0;
        } else if (n->type == T_SEND) {
            c->stream = r->rank_st0[rank] + S_SEND;
            bool cross = rank / gpn != (int64_t)n->comm_dst / gpn;
            c->dur = hw_p2p_time_s(r->net, (double)n->comm_size, cross);
            if (!add_p2p(&r->sends, &r->n_send, &r->cap_send, (P2pKey){rank, n->comm_dst, n->comm_tag, gid, gid}))
                st = oom(err);
        } else if (n->type == T_RECV) {
            if (!add_p2p(&r->recvs, &r->n_recv, &r->cap_recv, (P2pKey){n->comm_src, rank, n->comm_tag, gid, gid}))
                st = oom(err);
        }
        int32_t nd = n->n_data + n->n_ctrl; /* deps resolved by the check (dep_index) */
        if (!st && !ts_grow((void **)&r->edges, &r->cap_edges, (size_t)(r->n_edges + nd), sizeof *r->edges)) st = oom(err);
        for (int32_t j = 0; j < nd && !st; j++)
            r->edges[r->n_edges++] = (Edge){(int32_t)(base + t->dep_index[dep++]), gid};
        c->pend = nd;
    }
    r->n = base + t->n_nodes;
    return st;
}

static int p2p_cmp(const void *a, const void *b)
{
    const P2pKey *x = a, *y = b;
    if (x->src != y->src) return x->src < y->src ? -1 : 1;
    if (x->dst != y->dst) return x->dst < y->dst ? -1 : 1;
    if (x->tag != y->tag) return x->tag < y->tag ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* Rendezvous slots, send/recv pairs and the children lists. */
static TsStatus link_all(Rep *r, TsError *err)
{
    int64_t slots = 0;
    for (int64_t k = 0; k < r->n_g; k++) {
        r->g[k].slot0 = slots;
        slots += r->g[k].ncoll;
    }
    r->slots = calloc((size_t)slots + 1, sizeof *r->slots);
    r->children = malloc(((size_t)r->n_edges + 1) * sizeof *r->children);
    int32_t *cnt = calloc((size_t)r->n + 1, sizeof *cnt);
    if (!r->slots || !r->children || !cnt) {
        free(cnt);
        return oom(err);
    }
    for (int64_t s = 0; s < slots; s++) r->slots[s] = (Slot){0, 0, -1};
    for (int64_t i = 0; i < r->n; i++)
        if (r->nd[i].type == T_COLL) r->nd[i].match += (int32_t)r->g[r->st[r->nd[i].stream].group].slot0;
    if (r->n_send) qsort(r->sends, (size_t)r->n_send, sizeof *r->sends, p2p_cmp);
    if (r->n_recv) qsort(r->recvs, (size_t)r->n_recv, sizeof *r->recvs, p2p_cmp);
    for (int64_t i = 0; i < r->n_send && i < r->n_recv; i++) {
        r->nd[r->sends[i].gid].match = r->recvs[i].gid;
        r->nd[r->recvs[i].gid].match = r->sends[i].gid;
    }
    for (int64_t e = 0; e < r->n_edges; e++) cnt[r->edges[e].parent]++;
    int32_t at = 0;
    for (int64_t i = 0; i < r->n; i++) {
        r->nd[i].child0 = at;
        at += cnt[i];
        cnt[i] = r->nd[i].child0;
    }
    for (int64_t e = 0; e < r->n_edges; e++) r->children[cnt[r->edges[e].parent]++] = r->edges[e].child;
    for (int64_t i = 0; i < r->n; i++) r->nd[i].nchild = cnt[i] - r->nd[i].child0;
    free(cnt);
    return TS_OK;
}

/* ---- simulation --------------------------------------------------------------------- */
static bool start_next(Rep *r, int32_t s, double t);

static bool ready(Rep *r, int32_t id, double t)
{
    CNode *c = &r->nd[id];
    c->ready = c->start = t;
    if (c->type == T_RECV) {
        const CNode *snd = c->match >= 0 ? &r->nd[c->match] : NULL;
        if (!snd) return heap_push(&r->h, t, id); /* unmatched (checked): completes at once */
        return snd->fin < 0 || heap_push(&r->h, snd->fin > t ? snd->fin : t, id);
    }
    if (c->stream < 0) return heap_push(&r->h, t, id); /* other node types take no time */
    Stream *s = &r->st[c->stream];
    if (s->tail >= 0) r->nd[s->tail].next = id;
    else s->head = id;
    s->tail = id;
    return s->busy >= 0 || start_next(r, c->stream, t);
}

static bool start_next(Rep *r, int32_t s, double t)
{
    Stream *q = &r->st[s];
    int32_t id = q->head;
    if (id < 0) return true;
    q->head = r->nd[id].next;
    if (q->head < 0) q->tail = -1;
    q->busy = id;
    CNode *c = &r->nd[id];
    c->next = -1;
    c->start = t;
    if (c->type != T_COLL) return heap_push(&r->h, t + c->dur, id);
    /* the collective: arrived on this rank; done when the whole group is */
    Slot *sl = &r->slots[c->match];
    const Group *g = &r->g[q->group];
    if (t > sl->tmax) sl->tmax = t;
    c->next = sl->chain;
    sl->chain = id;
    if (++sl->arrived < g->size) return true;
    for (int32_t m = sl->chain; m >= 0; m = r->nd[m].next)
        if (!heap_push(&r->h, sl->tmax + c->dur, m)) return false;
    return true;
}

static bool complete(Rep *r, int32_t id, double t)
{
    CNode *c = &r->nd[id];
    c->fin = t;
    if (c->stream >= 0) {
        r->st[c->stream].busy = -1;
        if (!start_next(r, c->stream, t)) return false;
    }
    if (c->type == T_SEND && c->match >= 0) { /* its receive may be waiting */
        const CNode *rv = &r->nd[c->match];
        if (rv->ready >= 0 && rv->fin < 0 && !heap_push(&r->h, rv->ready > t ? rv->ready : t, c->match)) return false;
    }
    for (int32_t k = 0; k < c->nchild; k++) {
        int32_t ch = r->children[c->child0 + k];
        if (--r->nd[ch].pend == 0) {
            r->nd[ch].lastp = id;
            if (!ready(r, ch, t)) return false;
        }
    }
    return true;
}

/* The first node that was issued but never ran, named by its Chakra id and
 * name (its rank's file decoded again: this is the error path). */
static TsStatus deadlock(const Rep *r, int64_t stuck, TsError *err)
{
    int64_t i = 0;
    while (i < r->n && !(r->nd[i].fin < 0 && r->nd[i].ready >= 0)) i++;
    if (i == r->n) i = 0;
    const CNode *c = &r->nd[i];
    char path[1100], what[160] = "";
    snprintf(path, sizeof path, "%s.%d.et", r->prefix, c->rank);
    char *data = NULL;
    size_t len = 0;
    WlChakraTrace t = {0};
    TsError e2 = {0};
    int64_t k = i - r->rank_n0[c->rank];
    if (ts_read_file(path, (size_t)1 << 32, &data, &len, &e2) == TS_OK &&
        wl_chakra_decode(path, (const uint8_t *)data, len, &t, &e2) == TS_OK && k < t.n_nodes)
        snprintf(what, sizeof what, "node %" PRIu64 " '%s'", t.nodes[k].id, t.nodes[k].name);
    free(data);
    wl_chakra_trace_free(&t);
    if (c->type == T_COLL) {
        const Group *g = &r->g[r->st[c->stream].group];
        ts_err(err, TS_ERR_INPUT,
               "deadlock: %s, a collective of group %s, waits for %" PRId64 " of its %" PRId64
               " ranks, which never reach it (%" PRId64 " of %" PRId64 " nodes never run)",
               what, g->name[0] ? g->name : "(all ranks)", g->size - r->slots[c->match].arrived, g->size, stuck,
               r->n);
        ts_err_hint(err, "ranks issue the collectives of two groups in different orders, or wait on a receive "
                         "first");
    } else {
        ts_err(err, TS_ERR_INPUT, "deadlock: %s%s waits for a %s that never runs (%" PRId64 " of %" PRId64
               " nodes never run)", what, c->type == T_RECV ? ", a receive," : "",
               c->type == T_RECV ? "send" : "stream", stuck, r->n);
        ts_err_hint(err, "every rank waits on another: a receive must not depend on its own rank's later "
                         "sends or collectives");
    }
    ts_err_at(err, path, 0, 0, NULL);
    return TS_ERR_INPUT;
}

static TsStatus run(Rep *r, TsError *err)
{
    for (int64_t i = 0; i < r->n; i++)
        if (r->nd[i].pend == 0 && !ready(r, (int32_t)i, 0)) return oom(err);
    int64_t done = 0;
    while (r->h.n > 0) {
        double t;
        int32_t id;
        heap_pop(&r->h, &t, &id);
        if (r->nd[id].fin >= 0) continue; /* a receive queued twice */
        if (!complete(r, id, t)) return oom(err);
        done++;
    }
    if (done == r->n) return TS_OK;
    return deadlock(r, r->n - done, err);
}

/* ---- breakdown ------------------------------------------------------------------------ */
static int start_cmp(const void *a, const void *b)
{
    double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return x < y ? -1 : x > y;
}

/* Charge [a, b) of the critical rank's GPU idle time, which ended when node
 * `id` finished at b, along the chain of parents that finished last: a
 * collective's own cost and its wait for its stream are collective time, its
 * wait for late ranks of the group is waiting; a send's transfer and stream
 * wait are p2p; a receive whose send ended last passes to the send: its
 * transfer is p2p, before it the peer rank was late (the pipeline bubble). */
static void blame(const Rep *r, SimChakraResult *o, int32_t id, double a, double b)
{
#define TAKE(field, from)                                  \
    do {                                                   \
        double s_ = (from) > a ? (from) : a;               \
        if (b > s_) o->field += b - s_, b = s_;            \
    } while (0)
    while (id >= 0 && b > a) {
        const CNode *c = &r->nd[id];
        if (c->type == T_COLL) {
            TAKE(coll_s, c->fin - c->dur);
            TAKE(wait_s, c->start);
            TAKE(coll_s, c->ready);
        } else if (c->type == T_SEND) {
            TAKE(p2p_s, c->start);
            TAKE(p2p_s, c->ready);
        } else if (c->type == T_RECV && c->match >= 0 && r->nd[c->match].fin >= c->ready) {
            const CNode *snd = &r->nd[c->match];
            TAKE(p2p_s, snd->fin - snd->dur);
            TAKE(wait_s, a);
            return;
        } else if (c->type == T_COMP) {
            break;
        }
        id = c->lastp;
    }
    if (b > a) o->other_s += b - a;
#undef TAKE
}

/* The critical rank: GPU busy time and its idle gaps (blame). */
static TsStatus breakdown(const Rep *r, SimChakraResult *o, TsError *err)
{
    int64_t lo = -1, hi = -1, n = 0;
    int32_t last = -1;
    for (int64_t i = 0; i < r->n; i++)
        if (r->nd[i].fin > o->iteration_time_s) {
            o->iteration_time_s = r->nd[i].fin;
            o->critical_rank = r->nd[i].rank;
            last = (int32_t)i;
        }
    for (int64_t i = 0; i < r->n; i++) {
        if (r->nd[i].rank != o->critical_rank) continue;
        if (lo < 0) lo = i;
        hi = i;
    }
    double *k = malloc(((size_t)(hi - lo + 1) + 1) * 3 * sizeof *k);
    if (!k) return oom(err);
    for (int64_t i = lo; i <= hi && lo >= 0; i++) {
        const CNode *c = &r->nd[i];
        if (c->type != T_COMP) continue;
        if (c->cpu) {
            o->cpu_s += c->dur;
            continue;
        }
        k[3 * n] = c->start;
        k[3 * n + 1] = c->fin;
        k[3 * n + 2] = (double)i;
        n++;
    }
    qsort(k, (size_t)n, 3 * sizeof *k, start_cmp);
    double t = 0;
    for (int64_t j = 0; j < n; j++) {
        const CNode *c = &r->nd[(int64_t)k[3 * j + 2]];
        if (k[3 * j] > t) blame(r, o, c->lastp, t, k[3 * j]);
        o->compute_s += k[3 * j + 1] - k[3 * j];
        t = k[3 * j + 1];
    }
    if (o->iteration_time_s > t) blame(r, o, last, t, o->iteration_time_s);
    free(k);
    return TS_OK;
}

/* The timeline of the recorded ranks: every node that took time. */
static TsStatus spans(Rep *r, SimChakraResult *o, TsError *err)
{
    int64_t first = r->rec0 < r->ranks ? r->rec0 : r->ranks;
    int64_t rec = r->record < r->ranks - first ? r->record : r->ranks - first;
    int64_t beg = first < r->ranks ? r->rank_n0[first] : r->n;
    int64_t end = first + rec < r->ranks ? r->rank_n0[first + rec] : r->n, n = 0;
    o->spans = ts_arena_alloc(r->arena, ((size_t)(end - beg) + 1) * sizeof *o->spans);
    o->group_names = ts_arena_alloc(r->arena, ((size_t)r->n_g + 1) * sizeof *o->group_names);
    if (!o->spans || !o->group_names) return oom(err);
    for (int64_t k = 0; k < r->n_g; k++)
        if (!(o->group_names[k] = ts_arena_strdup(r->arena, r->g[k].name))) return oom(err);
    for (int64_t i = beg; i < end; i++) {
        const CNode *c = &r->nd[i];
        if (c->stream < 0 || !(c->fin > c->start)) continue;
        int32_t th = c->type == T_COLL ? 3 + r->st[c->stream].group : c->type == T_SEND ? 2 : c->cpu ? 1 : 0;
        o->spans[n++] = (SimChakraSpan){c->rank, th, c->start, c->fin, r->names[i]};
    }
    o->n_spans = n;
    o->n_group_names = r->n_g;
    o->recorded_first = first;
    o->recorded_ranks = rec;
    o->arena = r->arena;
    r->arena = NULL;
    return TS_OK;
}

void sim_chakra_result_free(SimChakraResult *r)
{
    if (!r) return;
    ts_arena_destroy(r->arena);
    r->arena = NULL;
    r->spans = NULL;
    r->group_names = NULL;
    r->n_spans = 0;
}

static void rep_free(Rep *r)
{
    free(r->nd);
    free(r->children);
    free(r->edges);
    free(r->st);
    free(r->rank_st0);
    free(r->rank_n0);
    free(r->names);
    ts_arena_destroy(r->arena);
    for (int64_t k = 0; k < r->n_g && r->g; k++) {
        free(r->g[k].ranks);
        free(r->g[k].name);
        free(r->g[k].cost);
    }
    free(r->by_name);
    free(r->g);
    free(r->slots);
    free(r->sends);
    free(r->recvs);
    free(r->h.t);
    free(r->h.id);
}

typedef struct Load {
    Rep *r;
    int64_t *seq; /* per group: collectives of the rank being loaded */
} Load;

static TsStatus visit(void *user, int64_t rank, const WlChakraTrace *t, TsError *err)
{
    Load *l = user;
    Rep *r = l->r;
    if (rank >= r->ranks)
        return ts_err(err, TS_ERR_INPUT, "the trace set changed while it was read (rank %" PRId64 ")", rank);
    memset(l->seq, 0, (size_t)r->n_g * sizeof *l->seq);
    TsStatus st = load_rank(r, rank, t, l->seq, err);
    for (int64_t g = 0; g < r->n_g && !st; g++)
        if (l->seq[g] > r->g[g].ncoll) r->g[g].ncoll = l->seq[g];
    return st;
}

TsStatus sim_replay_chakra(const char *prefix, const HwModel *hw, const HwNet *net, int64_t record_first,
                           int64_t record_ranks, SimChakraResult *out, TsError *err)
{
    memset(out, 0, sizeof *out);
    int64_t ranks = wl_chakra_ranks(prefix); /* first: the all-ranks group needs it */
    Rep r = {.hw = hw, .net = net, .ranks = ranks, .prefix = prefix, .rec0 = record_first > 0 ? record_first : 0,
             .record = record_ranks};
    TsStatus st = TS_OK;
    if (record_ranks > 0 && !(r.arena = ts_arena_create(1 << 16))) st = oom(err);
    r.rank_st0 = calloc((size_t)ranks + 1, sizeof *r.rank_st0);
    r.rank_n0 = calloc((size_t)ranks + 1, sizeof *r.rank_n0);
    if (!st && (!r.rank_st0 || !r.rank_n0)) st = oom(err);
    if (!st) st = load_groups(&r, prefix, err);
    Load l = {&r, calloc((size_t)r.n_g + 1, sizeof *l.seq)};
    if (!st && !l.seq) st = oom(err);
    WlChakraCheck chk;
    if (!st) st = wl_check_chakra_visit(prefix, visit, &l, &chk, err);
    free(l.seq);
    if (!st && chk.ranks != ranks) st = ts_err(err, TS_ERR_INPUT, "the trace set changed while it was read");
    if (!st) st = link_all(&r, err);
    if (!st) st = run(&r, err);
    if (!st) st = breakdown(&r, out, err);
    if (!st && record_ranks > 0) st = spans(&r, out, err);
    if (!st) {
        out->ranks = chk.ranks;
        out->nodes = chk.nodes;
        out->collectives = chk.colls;
        out->sends = chk.sends;
        out->groups = chk.groups;
    }
    rep_free(&r);
    return st;
}
