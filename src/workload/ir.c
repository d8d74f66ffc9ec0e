/* The workload IR: arena-held rank classes, tasks, deps and rows; rank
 * layout and process groups (Megatron order tp, cp, dp, pp). */
#include "trainsim/workload.h"
#include "../common/common_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

TS_ENUM_NAMES(wl_phase, WlPhase, WL_PHASE_LIST, WL_PHASE_COUNT)
TS_ENUM_PARSE(wl_phase, WlPhase, WL_PHASE_COUNT)
TS_ENUM_NAMES(wl_kind, WlKind, WL_KIND_LIST, WL_KIND_COUNT)
TS_ENUM_PARSE(wl_kind, WlKind, WL_KIND_COUNT)
TS_ENUM_NAMES(wl_group, WlGroup, WL_GROUP_LIST, WL_GROUP_COUNT)
TS_ENUM_PARSE(wl_group, WlGroup, WL_GROUP_COUNT)
static const HwGroupKind GROUP_HW[] = {
#define X(e, n, h) HW_GROUP_##h,
    WL_GROUP_LIST(X)
#undef X
};
_Static_assert(sizeof GROUP_HW / sizeof GROUP_HW[0] == WL_GROUP_COUNT, "group kinds");
HwGroupKind wl_group_hw(WlGroup g) { return (unsigned)g < WL_GROUP_COUNT ? GROUP_HW[g] : HW_GROUP_ANY; }
TS_ENUM_NAMES(wl_format, WlFormat, WL_FMT_LIST, WL_FMT_COUNT)
TS_ENUM_PARSE(wl_format, WlFormat, WL_FMT_COUNT)

Workload *wl_create(int64_t world, TsError *err)
{
    TsArena *a = ts_arena_create(1 << 20);
    Workload *w = a ? ts_arena_alloc(a, sizeof *w) : NULL;
    if (!w) {
        ts_arena_destroy(a);
        ts_err(err, TS_ERR_INTERNAL, "out of memory creating a workload");
        return NULL;
    }
    w->arena = a;
    w->optable_elem_bytes = 4;
    w->par = (WlParallel){.world = world > 0 ? world : 1, .tp = 1, .cp = 1, .pp = 1,
                          .dp = world > 0 ? world : 1, .ep = 1, .vpp = 1, .layers_per_stage = 0, .ga = 1};
    return w;
}

void wl_destroy(Workload *w)
{
    if (w) ts_arena_destroy(w->arena);
}

/* Grow an arena array to hold one more element. */
static bool grow(TsArena *a, void **arr, size_t elem, int32_t n, int32_t *cap)
{
    if (n < *cap) return true;
    if (*cap > INT32_MAX / 2) return false;
    int32_t nc = *cap ? *cap * 2 : 64;
    void *p = ts_arena_grow(a, *arr, elem, (size_t)n, (size_t)nc);
    if (!p) return false;
    *arr = p;
    *cap = nc;
    return true;
}

int32_t wl_class_begin(Workload *w, const char *name, int32_t stage)
{
    if (!grow(w->arena, (void **)&w->classes, sizeof *w->classes, w->n_classes, &w->cap_classes))
        return -1;
    const char *nm = ts_arena_strdup(w->arena, name);
    if (!nm) return -1;
    w->classes[w->n_classes] = (WlClass){nm, stage, w->n_tasks, 0, w->n_rows, 0, -1};
    return w->n_classes++;
}

int32_t wl_class_begin_rank(Workload *w, const char *name, int64_t rank)
{
    int32_t c = wl_class_begin(w, name, 0);
    if (c >= 0) w->classes[c].rank = rank;
    return c;
}

int32_t wl_xgroup_add(Workload *w, const char *name, const int64_t *members, int64_t n)
{
    if (!grow(w->arena, (void **)&w->xgroups, sizeof *w->xgroups, w->n_xgroups, &w->cap_xgroups)) return -1;
    const char *nm = ts_arena_strdup(w->arena, name);
    int64_t *m = ts_arena_alloc(w->arena, (size_t)(n > 0 ? n : 1) * sizeof *m);
    if (!nm || !m) return -1;
    if (n > 0) memcpy(m, members, (size_t)n * sizeof *m);
    w->xgroups[w->n_xgroups] = (WlXGroup){nm, m, n};
    return ++w->n_xgroups;
}

int64_t wl_xgroup_nodes(const Workload *w, int32_t xg, int64_t gpus_per_node)
{
    const WlXGroup *g = &w->xgroups[xg - 1];
    if (gpus_per_node <= 0 || g->n <= 1) return 1;
    int64_t nodes = 1; /* members ascending: a new node wherever the node index changes */
    for (int64_t i = 1; i < g->n; i++) nodes += g->members[i] / gpus_per_node != g->members[i - 1] / gpus_per_node;
    return nodes;
}

int32_t wl_task_add(Workload *w, const WlTask *t, const int32_t *data_deps, int n_data,
                    const int32_t *ctrl_deps, int n_ctrl)
{
    if (w->n_classes == 0 && wl_class_begin(w, "all", 0) < 0) return -1;
    if (!grow(w->arena, (void **)&w->tasks, sizeof *w->tasks, w->n_tasks, &w->cap_tasks)) return -1;
    while (w->n_deps + n_data + n_ctrl > w->cap_deps)
        if (!grow(w->arena, (void **)&w->deps, sizeof *w->deps, w->cap_deps, &w->cap_deps)) return -1;
    WlTask nt = *t;
    if (t->name) {
        nt.name = ts_arena_strdup(w->arena, t->name);
        if (!nt.name) return -1;
    } else {
        nt.name = "";
    }
    nt.dep_first = w->n_deps;
    nt.n_data_deps = n_data;
    nt.n_ctrl_deps = n_ctrl;
    if (n_data) memcpy(w->deps + w->n_deps, data_deps, (size_t)n_data * sizeof *data_deps);
    w->n_deps += n_data;
    if (n_ctrl) memcpy(w->deps + w->n_deps, ctrl_deps, (size_t)n_ctrl * sizeof *ctrl_deps);
    w->n_deps += n_ctrl;
    w->tasks[w->n_tasks] = nt;
    w->classes[w->n_classes - 1].n_tasks++;
    return w->n_tasks++;
}

int32_t wl_row_add(Workload *w, const char *name, int64_t process_time)
{
    if (w->n_classes == 0 && wl_class_begin(w, "all", 0) < 0) return -1;
    if (!grow(w->arena, (void **)&w->rows, sizeof *w->rows, w->n_rows, &w->cap_rows)) return -1;
    const char *nm = ts_arena_strdup(w->arena, name);
    if (!nm) return -1;
    w->rows[w->n_rows] = (WlRow){nm, {-1, -1, -1}, {-1, -1, -1}, process_time};
    w->classes[w->n_classes - 1].n_rows++;
    return w->n_rows++;
}

WlTask wl_task_comp(const char *name, WlPhase ph, double flops, double mem_bytes, double dur_s)
{
    return (WlTask){.kind = WL_KIND_COMP, .phase = ph, .name = name, .micro = -1, .layer = -1,
                    .row = -1, .flops = flops, .mem_bytes = mem_bytes, .duration_s = dur_s,
                    .peer_stage = -1};
}

WlTask wl_task_coll(const char *name, WlPhase ph, TsColl c, WlGroup g, double bytes)
{
    return (WlTask){.kind = WL_KIND_COLL, .phase = ph, .name = name, .micro = -1, .layer = -1,
                    .row = -1, .coll = c, .group = g, .comm_bytes = bytes, .peer_stage = -1};
}

WlTask wl_task_p2p(const char *name, WlPhase ph, bool send, int32_t peer_stage, double bytes, int32_t tag)
{
    return (WlTask){.kind = send ? WL_KIND_SEND : WL_KIND_RECV, .phase = ph, .name = name,
                    .micro = -1, .layer = -1, .row = -1, .coll = TS_COLL_SENDRECV,
                    .group = WL_GROUP_PP, .comm_bytes = bytes, .peer_stage = peer_stage, .tag = tag};
}

/* ---- rank layout ------------------------------------------------------------ */
typedef struct Coord {
    int64_t tp, cp, dp, pp;
} Coord;

static Coord coord_of(const WlParallel *p, int64_t r)
{
    Coord c;
    c.tp = r % p->tp;
    r /= p->tp;
    c.cp = r % p->cp;
    r /= p->cp;
    c.dp = r % p->dp;
    c.pp = r / p->dp;
    return c;
}

static int64_t rank_of(const WlParallel *p, Coord c)
{
    return c.tp + p->tp * (c.cp + p->cp * (c.dp + p->dp * c.pp));
}

int64_t wl_rank_stage(const Workload *w, int64_t rank) { return coord_of(&w->par, rank).pp; }

int32_t wl_rank_class(const Workload *w, int64_t rank)
{
    if (w->rank_class) return rank >= 0 && rank < w->par.world ? w->rank_class[rank] : 0;
    int64_t st = wl_rank_stage(w, rank);
    for (int32_t i = 0; i < w->n_classes; i++)
        if (w->classes[i].stage == st) return i;
    return 0;
}

int64_t wl_stage_peer(const Workload *w, int64_t rank, int64_t stage)
{
    Coord c = coord_of(&w->par, rank);
    c.pp = stage;
    return rank_of(&w->par, c);
}

/* The expert tensor-parallel size: its own ETP, else TP. */
static int64_t etp_of(const WlParallel *p) { return p->etp > 0 ? p->etp : p->tp; }

/* Expert layout (ETP != TP, or CP > 1): EP and DP_EP follow Megatron's
 * etp-ep-edp order over the stage's TP*CP*DP ranks (plan.h), so with CP the
 * expert groups draw from the CP ranks too; with ETP = TP and CP = 1 that
 * order is the blocks of EP consecutive DP indices of the plain layout. */
static bool expert_layout(const WlParallel *p)
{
    int64_t ep = p->ep > 0 ? p->ep : 1, local = p->tp * p->cp * p->dp;
    return ((p->etp > 0 && p->etp != p->tp) || p->cp > 1) && local % (etp_of(p) * ep) == 0;
}

int64_t wl_group_size(const Workload *w, WlGroup g)
{
    const WlParallel *p = &w->par;
    int64_t ep = p->ep > 0 ? p->ep : 1;
    if (expert_layout(p) && (g == WL_GROUP_EP || g == WL_GROUP_DP_EP))
        return g == WL_GROUP_EP ? ep : p->tp * p->cp * p->dp / (etp_of(p) * ep);
    switch (g) {
    case WL_GROUP_TP: return p->tp;
    case WL_GROUP_CP: return p->cp;
    case WL_GROUP_DP: return p->dp;
    case WL_GROUP_PP: return p->pp;
    case WL_GROUP_EP: return p->dp % ep == 0 ? ep : 1;
    case WL_GROUP_DP_EP: return p->dp % ep == 0 ? p->dp / ep : p->dp;
    case WL_GROUP_WORLD: return p->world;
    case WL_GROUP_DP_CP: return p->dp * p->cp;
    case WL_GROUP_EMB: return p->pp > 1 ? 2 : 1;
    case WL_GROUP_SHARD: return (p->dp_shard > 0 ? p->dp_shard : p->dp) * p->cp;
    case WL_GROUP_REPLICATE: return p->dp_shard > 0 ? p->dp / p->dp_shard : 1;
    default: return 1;
    }
}

int64_t wl_group_members(const Workload *w, WlGroup g, int64_t rank, int64_t *out,
                         int64_t cap, int64_t *gid)
{
    const WlParallel *p = &w->par;
    Coord c = coord_of(p, rank);
    int64_t n = wl_group_size(w, g), k = 0;
    int64_t ep = wl_group_size(w, WL_GROUP_EP);
    if (expert_layout(p) && (g == WL_GROUP_EP || g == WL_GROUP_DP_EP)) {
        int64_t local_n = p->tp * p->cp * p->dp, base = c.pp * local_n;
        int64_t l = c.tp + p->tp * (c.cp + p->cp * c.dp), et = etp_of(p);
        int64_t ei = l % et, epi = (l / et) % ep, edi = l / (et * ep);
        for (int64_t i = 0; i < n; i++) {
            int64_t r = base + (g == WL_GROUP_EP ? ei + et * (i + ep * edi) : ei + et * (epi + ep * i));
            if (k < cap) out[k] = r;
            k++;
        }
        if (gid) *gid = (int64_t)g * p->world + (k > 0 && cap > 0 ? out[0] : rank);
        return k;
    }
    /* The group id is the rank of the member with index 0, offset by kind. */
    for (int64_t i = 0; i < n; i++) {
        Coord m = c;
        switch (g) {
        case WL_GROUP_TP: m.tp = i; break;
        case WL_GROUP_CP: m.cp = i; break;
        case WL_GROUP_DP: m.dp = i; break;
        case WL_GROUP_PP: m.pp = i; break;
        case WL_GROUP_EP: m.dp = (c.dp / ep) * ep + i; break;
        case WL_GROUP_DP_EP: m.dp = c.dp % ep + i * ep; break;
        case WL_GROUP_DP_CP: m.cp = i % p->cp, m.dp = i / p->cp; break;
        case WL_GROUP_EMB: m.pp = i == 0 ? 0 : p->pp - 1; break;
        case WL_GROUP_SHARD: { /* dp_shard consecutive DP ranks x CP */
            int64_t sd = p->dp_shard > 0 ? p->dp_shard : p->dp;
            m.cp = i % p->cp, m.dp = (c.dp / sd) * sd + i / p->cp;
            break;
        }
        case WL_GROUP_REPLICATE: m.dp = c.dp % p->dp_shard + i * p->dp_shard; break;
        case WL_GROUP_WORLD: {
            if (k < cap) out[k] = i;
            k++;
            continue;
        }
        default: m = c; break;
        }
        int64_t r = rank_of(p, m);
        if (k < cap) out[k] = r;
        k++;
    }
    if (gid) *gid = (int64_t)g * p->world + (k > 0 && cap > 0 ? out[0] : rank);
    return k;
}

/* ---- summaries and checks ---------------------------------------------------- */
void wl_summary(const Workload *w, int32_t cls, WlSummary *out)
{
    memset(out, 0, sizeof *out);
    if (cls < 0 || cls >= w->n_classes) return;
    const WlClass *c = &w->classes[cls];
    for (int32_t i = c->first_task; i < c->first_task + c->n_tasks; i++) {
        const WlTask *t = &w->tasks[i];
        out->n_tasks++;
        if (t->kind == WL_KIND_COMP) {
            out->n_comp++;
            out->comp_s += t->duration_s;
            out->flops += t->flops;
        } else if (t->kind == WL_KIND_COLL) {
            out->n_coll++;
            out->coll_bytes += t->comm_bytes;
        } else {
            out->n_p2p++;
        }
    }
}

TsStatus wl_validate(const Workload *w, TsError *err)
{
    for (int32_t ci = 0; ci < w->n_classes; ci++) {
        const WlClass *c = &w->classes[ci];
        for (int32_t i = c->first_task; i < c->first_task + c->n_tasks; i++) {
            const WlTask *t = &w->tasks[i];
            if (t->xgroup < 0 || t->xgroup > w->n_xgroups)
                return ts_err(err, TS_ERR_INTERNAL, "class %s: task %d '%s' names group %d of %d", c->name, i,
                              t->name, t->xgroup, w->n_xgroups);
            const int32_t *d = wl_task_deps(w, t);
            for (int32_t k = 0; k < t->n_data_deps + t->n_ctrl_deps; k++)
                if (d[k] < c->first_task || d[k] >= i)
                    return ts_err(err, TS_ERR_INTERNAL,
                                  "class %s: task %d '%s' depends on task %d outside [%d, %d)",
                                  c->name, i, t->name, d[k], c->first_task, i);
        }
        for (int32_t r = c->first_row; r < c->first_row + c->n_rows; r++)
            for (int ph = 0; ph < 3; ph++) {
                int32_t a = w->rows[r].comp[ph], b = w->rows[r].comm[ph];
                if ((a >= 0 && (a < c->first_task || a >= c->first_task + c->n_tasks)) ||
                    (b >= 0 && (b < c->first_task || b >= c->first_task + c->n_tasks)))
                    return ts_err(err, TS_ERR_INTERNAL, "class %s: row %d refers to a task of another class",
                                  c->name, r);
            }
    }
    return TS_OK;
}

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

bool wl_group_span(const Workload *w, WlGroup g, int64_t gpus_per_node, int64_t *size, int64_t *nodes)
{
    int64_t n = wl_group_size(w, g), nn = 1;
    if (n > 1 && gpus_per_node > 0) {
        int64_t *m = malloc((size_t)n * sizeof *m);
        if (!m) return false;
        int64_t k = wl_group_members(w, g, 0, m, n, NULL);
        if (k > n) k = n;
        for (int64_t i = 0; i < k; i++) m[i] /= gpus_per_node;
        qsort(m, (size_t)k, sizeof *m, i64_cmp);
        nn = k > 0 ? 1 : 0;
        for (int64_t i = 1; i < k; i++) nn += m[i] != m[i - 1];
        free(m);
    }
    *size = n > 0 ? n : 1;
    *nodes = nn > 0 ? nn : 1;
    return true;
}

double wl_coll_time_s(const Workload *w, const HwNet *net, const WlTask *t, int64_t size, int64_t nodes)
{
    if (size <= 1 || !(t->comm_bytes > 0) || t->coll == TS_COLL_NONE) return 0;
    if (t->group == WL_GROUP_EP && t->coll == TS_COLL_ALLTOALL)
        return hw_ep_a2a_time_s(net, t->comm_bytes, size, nodes, &w->par.ep_route);
    return hw_coll_time_s(net, t->coll, t->comm_bytes, size, nodes, 1, wl_group_hw(t->group));
}

/* ---- send / recv pairing ------------------------------------------------------ */
typedef struct P2pKey {
    int64_t from, to, tag;
    int32_t id;
} P2pKey;

static int p2p_cmp(const void *a, const void *b)
{
    const P2pKey *x = a, *y = b;
    if (x->from != y->from) return x->from < y->from ? -1 : 1;
    if (x->to != y->to) return x->to < y->to ? -1 : 1;
    return x->tag < y->tag ? -1 : x->tag > y->tag;
}

static int p2p_sort_cmp(const void *a, const void *b)
{
    int c = p2p_cmp(a, b);
    return c ? c : ((const P2pKey *)a)->id < ((const P2pKey *)b)->id ? -1 : 1;
}

/* A class's place in send/recv addresses: its stage, or in a per-rank
 * workload its rank. */
static int64_t p2p_self(const Workload *w, const WlClass *c) { return w->rank_class ? c->rank : c->stage; }

int32_t wl_pair_p2p(const Workload *w, int32_t *send_of)
{
    int32_t ns = 0;
    for (int32_t i = 0; i < w->n_tasks; i++) ns += w->tasks[i].kind == WL_KIND_SEND;
    P2pKey *k = ns ? malloc((size_t)ns * sizeof *k) : NULL;
    bool *used = ns ? calloc((size_t)ns, sizeof *used) : NULL;
    if (ns && (!k || !used)) {
        free(k);
        free(used);
        return -2;
    }
    int32_t n = 0;
    for (int32_t c = 0; c < w->n_classes; c++)
        for (int32_t i = w->classes[c].first_task; i < w->classes[c].first_task + w->classes[c].n_tasks; i++)
            if (w->tasks[i].kind == WL_KIND_SEND)
                k[n++] = (P2pKey){p2p_self(w, &w->classes[c]), w->tasks[i].peer_stage, w->tasks[i].tag, i};
    /* sends of one address in task order, so the k-th receive of an address
     * pairs with its k-th send */
    if (n > 1) qsort(k, (size_t)n, sizeof *k, p2p_sort_cmp);
    int32_t bad = -1;
    for (int32_t c = 0; c < w->n_classes && bad < 0; c++)
        for (int32_t i = w->classes[c].first_task; i < w->classes[c].first_task + w->classes[c].n_tasks; i++) {
            const WlTask *t = &w->tasks[i];
            if (send_of) send_of[i] = -1;
            if (t->kind != WL_KIND_RECV) continue;
            P2pKey q = {t->peer_stage, p2p_self(w, &w->classes[c]), t->tag, 0};
            int32_t lo = 0, hi = n; /* first send of the address */
            while (lo < hi) {
                int32_t mid = (lo + hi) / 2;
                if (p2p_cmp(&k[mid], &q) < 0) lo = mid + 1;
                else hi = mid;
            }
            while (lo < n && p2p_cmp(&k[lo], &q) == 0 && used[lo]) lo++;
            if (lo >= n || p2p_cmp(&k[lo], &q) != 0) {
                bad = i;
                break;
            }
            used[lo] = true;
            if (send_of) send_of[i] = k[lo].id;
        }
    free(k);
    free(used);
    return bad;
}

/* ---- the layout line (Chakra's trainsim_layout) ------------------------------- */
void wl_layout_format(const WlParallel *p, char *out, size_t cap)
{
    snprintf(out, cap,
             "world=%" PRId64 " tp=%" PRId64 " cp=%" PRId64 " pp=%" PRId64 " dp=%" PRId64 " ep=%" PRId64
             " etp=%" PRId64 " vpp=%" PRId64 " ga=%" PRId64 " micro_batch=%" PRId64 " seq=%" PRId64,
             p->world, p->tp, p->cp, p->pp, p->dp, p->ep, p->etp, p->vpp, p->ga, p->micro_batch, p->seq);
    const HwEpRoute *r = &p->ep_route;
    size_t n = strlen(out);
    if (wl_ep_route_set(r) && n < cap) /* the load in millionths: the line holds integers */
        snprintf(out + n, cap - n, " ep_deepep=%d ep_topk=%" PRId64 " ep_node_limit=%" PRId64 " ep_load_ppm=%lld",
                 r->deepep ? 1 : 0, r->topk, r->node_limit, (long long)llround(r->load * 1e6));
    n = strlen(out);
    if (p->dp_shard > 0 && n < cap) snprintf(out + n, cap - n, " dp_shard=%" PRId64, p->dp_shard);
    n = strlen(out);
    if (p->vpp_group > 0 && n < cap) snprintf(out + n, cap - n, " vpp_group=%" PRId64, p->vpp_group);
}

bool wl_layout_parse(const char *s, WlParallel *p)
{
    /* the first 11 keys required; the EP route's 4, HSDP's shard and the
     * interleaved group optional */
    enum { NK = 17 };
    static const char *const KEYS[NK] = {"world", "tp", "cp", "pp", "dp", "ep", "etp", "vpp", "ga", "micro_batch",
                                         "seq", "ep_deepep", "ep_topk", "ep_node_limit", "ep_load_ppm", "dp_shard",
                                         "vpp_group"};
    int64_t v[NK] = {0};
    bool seen[NK] = {false};
    WlParallel q = *p;
    while (*s) {
        while (*s == ' ') s++;
        if (!*s) break;
        const char *eq = strchr(s, '=');
        if (!eq) return false;
        int k = -1;
        for (int i = 0; i < NK; i++)
            if ((size_t)(eq - s) == strlen(KEYS[i]) && !strncmp(s, KEYS[i], (size_t)(eq - s))) k = i;
        char *end;
        long long x = strtoll(eq + 1, &end, 10);
        if (k < 0 || end == eq + 1 || (*end && *end != ' ') || x < 0 || x > (1LL << 40)) return false;
        v[k] = x;
        seen[k] = true;
        s = end;
    }
    for (int i = 0; i < 11; i++)
        if (!seen[i]) return false;
    q.world = v[0], q.tp = v[1], q.cp = v[2], q.pp = v[3], q.dp = v[4], q.ep = v[5], q.etp = v[6], q.vpp = v[7];
    q.ga = v[8], q.micro_batch = v[9], q.seq = v[10];
    q.ep_route = (HwEpRoute){.deepep = v[11] != 0, .topk = v[12], .node_limit = v[13], .load = (double)v[14] / 1e6};
    q.dp_shard = v[15];
    q.vpp_group = v[16];
    if (q.tp < 1 || q.cp < 1 || q.pp < 1 || q.dp < 1 || q.ep < 1 || q.vpp < 1 || q.ga < 1 ||
        q.tp * q.cp * q.pp * q.dp != q.world || (q.dp_shard > 0 && q.dp % q.dp_shard != 0) || q.vpp_group > q.ga)
        return false;
    *p = q;
    return true;
}
