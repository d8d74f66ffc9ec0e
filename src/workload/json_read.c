/* Reading the IR back from its JSON form ("trainsim-workload", version
 * WL_JSON_VERSION, written by json.c). Every field is checked: names of
 * kinds, phases, groups and collectives, dependency ids (in range and
 * earlier than the task, so the DAG is acyclic), ids equal to positions,
 * row slots pointing at tasks of the right kind, sizes and times finite and
 * non-negative, and array lengths within the WL_JSON_MAX_* limits. Errors
 * are TS_ERR_INPUT positioned at the offending value (line:col from
 * ts_json_locate), with the JSON path in the message. */
#include "wl_internal.h"
#include "../common/common_int.h"

#include <float.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define WL_JSON_FORMAT "trainsim-workload"
#define DEFAULT_POLICY "HYBRID_TRANSFORMER_FWD_IN_BCKWD"

typedef struct Rd {
    const TsJsonDoc *doc;
    Workload *w;
    TsError *err;
    char path[192];   /* JSON path of the object being read */
    int32_t *dbuf;    /* scratch for one task's deps (heap) */
    size_t dcap;
} Rd;

/* An error positioned at `path` (the value, or its object when missing). */
static TsStatus rd_err(Rd *r, const char *path, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static TsStatus rd_err(Rd *r, const char *path, const char *hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    TsStatus st = ts_json_verr(r->doc, path, hint, r->err, fmt, ap);
    va_end(ap);
    return st;
}

static TsStatus oom(Rd *r) { return ts_err(r->err, TS_ERR_INTERNAL, "out of memory reading a JSON workload"); }

/* A required key: absent (or null) is a positioned "missing" error. */
static json_t *need(Rd *r, json_t *obj, const char *key, TsStatus *st)
{
    json_t *v = json_object_get(obj, key);
    if (!v || json_is_null(v)) {
        *st = rd_err(r, r->path, "docs/workloads.md lists the fields of a JSON workload",
                     "missing required field '%s%s%s'", r->path, r->path[0] ? "." : "", key);
        return NULL;
    }
    return v;
}

static void sub(char *out, size_t cap, const char *base, const char *key)
{
    snprintf(out, cap, "%s%s%s", base, base[0] && key[0] != '[' ? "." : "", key);
}

static TsStatus get_int(Rd *r, json_t *obj, const char *key, int64_t min, int64_t max, int64_t *out)
{
    char p[256];
    sub(p, sizeof p, r->path, key);
    return ts_json_int(r->doc, obj, key, p, true, min, max, out, r->err);
}

static TsStatus get_i32(Rd *r, json_t *obj, const char *key, int64_t min, int64_t max, int32_t *out)
{
    int64_t v = 0;
    TsStatus st = get_int(r, obj, key, min, max, &v);
    if (!st) *out = (int32_t)v;
    return st;
}

/* Sizes, FLOPs and times: finite, >= 0, at most 1e30. */
static TsStatus get_size(Rd *r, json_t *obj, const char *key, double *out)
{
    char p[256];
    sub(p, sizeof p, r->path, key);
    double x = 0;
    TsStatus st = ts_json_num(r->doc, obj, key, p, true, -DBL_MAX, DBL_MAX, &x, r->err);
    if (st) return st;
    if (x < 0 || x > 1e30) {
        char got[40];
        snprintf(got, sizeof got, "%.17g", x);
        return rd_err(r, p, "sizes, FLOPs and times are finite and non-negative (bytes, FLOPs, seconds)",
                      "'%s' must be %s, found %s", p, x < 0 ? ">= 0" : "at most 1e30", got);
    }
    *out = x;
    return TS_OK;
}

/* A string field; *out points into the JSON document. */
static TsStatus get_str(Rd *r, json_t *obj, const char *key, size_t max_len, const char **out)
{
    TsStatus st = TS_OK;
    json_t *v = need(r, obj, key, &st);
    if (!v) return st;
    char p[256];
    sub(p, sizeof p, r->path, key);
    if (!json_is_string(v)) return rd_err(r, p, NULL, "'%s' must be a string", p);
    if (json_string_length(v) > max_len || strlen(json_string_value(v)) != json_string_length(v))
        return rd_err(r, p, NULL, "'%s' must be a string of at most %zu bytes without NUL", p, max_len);
    *out = json_string_value(v);
    return TS_OK;
}

/* A name from a fixed list. */
static TsStatus get_enum(Rd *r, json_t *obj, const char *key, const char *what, const char *allowed,
                         bool (*parse)(const char *, int *), int *out)
{
    const char *s;
    TsStatus st = get_str(r, obj, key, 64, &s);
    if (st) return st;
    if (parse(s, out)) return TS_OK;
    char p[256], hint[200];
    sub(p, sizeof p, r->path, key);
    snprintf(hint, sizeof hint, "%s is one of: %s", what, allowed);
    return rd_err(r, p, hint, "unknown %s '%s' in '%s'", what, s, p);
}

static bool parse_kind(const char *s, int *o)
{
    WlKind k;
    if (!wl_kind_parse(s, &k)) return false;
    *o = (int)k;
    return true;
}
static bool parse_phase(const char *s, int *o)
{
    WlPhase ph;
    if (!wl_phase_parse(s, &ph)) return false;
    *o = (int)ph;
    return true;
}
static bool parse_group(const char *s, int *o)
{
    WlGroup g;
    if (!wl_group_parse(s, &g)) return false;
    *o = (int)g;
    return true;
}
/* Collectives of COLL tasks: every TsColl but none. */
static bool parse_coll(const char *s, int *o)
{
    TsColl c;
    if (!ts_coll_parse(s, &c) || c == TS_COLL_NONE) return false;
    *o = (int)c;
    return true;
}
static bool parse_origin(const char *s, int *o)
{
    WlFormat f; /* the layer formats, whose writers read it */
    if (!wl_format_parse(s, &f) || (f != WL_FMT_SIMAI && f != WL_FMT_ASTRASIM && f != WL_FMT_OPTABLE)) return false;
    *o = (int)f;
    return true;
}

static TsStatus get_bool_opt(Rd *r, json_t *obj, const char *key, bool *out)
{
    char p[256];
    sub(p, sizeof p, r->path, key);
    return ts_json_bool(r->doc, obj, key, p, false, out, r->err);
}

/* An array field with at most max elements. */
static TsStatus get_array(Rd *r, json_t *obj, const char *key, size_t max, json_t **out)
{
    TsStatus st = TS_OK;
    json_t *v = need(r, obj, key, &st);
    if (!v) return st;
    char p[256];
    sub(p, sizeof p, r->path, key);
    if (!json_is_array(v)) return rd_err(r, p, NULL, "'%s' must be an array", p);
    if (json_array_size(v) > max) {
        char hint[160];
        snprintf(hint, sizeof hint, "JSON workloads hold at most %zu entries here (docs/workloads.md, limits)", max);
        return rd_err(r, p, hint, "'%s' has %zu entries, more than %zu", p, json_array_size(v), max);
    }
    *out = v;
    return TS_OK;
}

/* An object at path r->path (already set by the caller). */
static TsStatus want_object(Rd *r, json_t *v)
{
    if (json_is_object(v)) return TS_OK;
    return rd_err(r, r->path, NULL, "'%s' must be an object", r->path);
}

/* parallel.ep_route: how the EP all-to-alls travel (WlParallel.ep_route). */
static TsStatus read_ep_route(Rd *r, json_t *po, HwEpRoute *er)
{
    TsStatus st = TS_OK;
    json_t *o = need(r, po, "ep_route", &st);
    if (!o) return st;
    snprintf(r->path, sizeof r->path, "parallel.ep_route");
    if ((st = want_object(r, o)) || (st = get_bool_opt(r, o, "deepep", &er->deepep)) ||
        (st = get_int(r, o, "topk", 1, 1 << 20, &er->topk)) || (st = get_int(r, o, "node_limit", 0, 1 << 20, &er->node_limit)) ||
        (st = get_size(r, o, "load", &er->load)))
        return st;
    if (er->load < 1.0)
        return rd_err(r, "parallel.ep_route.load", "the busiest rank's load over the mean is at least 1",
                      "'parallel.ep_route.load' must be >= 1, found %.17g", er->load);
    return TS_OK;
}

static TsStatus read_parallel(Rd *r, json_t *root)
{
    TsStatus st = TS_OK;
    json_t *po = need(r, root, "parallel", &st);
    if (!po) return st;
    snprintf(r->path, sizeof r->path, "parallel");
    if ((st = want_object(r, po))) return st;
    WlParallel *p = &r->w->par;
    const int64_t M = (int64_t)1 << 31;
    if ((st = get_int(r, po, "world", 1, M, &p->world)) || (st = get_int(r, po, "tp", 1, M, &p->tp)) ||
        (st = get_int(r, po, "cp", 1, M, &p->cp)) || (st = get_int(r, po, "pp", 1, M, &p->pp)) ||
        (st = get_int(r, po, "dp", 1, M, &p->dp)) || (st = get_int(r, po, "ep", 1, M, &p->ep)) ||
        (st = get_int(r, po, "vpp", 1, 1 << 20, &p->vpp)) ||
        (st = get_int(r, po, "layers_per_stage", 0, 1 << 24, &p->layers_per_stage)) ||
        (st = get_int(r, po, "ga", 1, 1 << 24, &p->ga)) || (st = get_size(r, po, "pp_comm_bytes", &p->pp_comm_bytes)))
        return st;
    if (p->tp * p->cp > M || p->tp * p->cp * p->pp > M || p->tp * p->cp * p->pp * p->dp != p->world) {
        char hint[200];
        snprintf(hint, sizeof hint, "world = tp*cp*pp*dp; here tp*cp*pp*dp = %lld", (long long)(p->tp * p->cp * p->pp > M ? -1 : p->tp * p->cp * p->pp * p->dp));
        return rd_err(r, "parallel.world", hint, "'parallel.world' is %lld, not tp*cp*pp*dp", (long long)p->world);
    }
    if (json_object_get(po, "micro_batch") || json_object_get(po, "seq")) {
        if ((st = get_int(r, po, "micro_batch", 1, 1 << 24, &p->micro_batch)) ||
            (st = get_int(r, po, "seq", 1, (int64_t)1 << 30, &p->seq)))
            return st;
    }
    if (json_object_get(po, "ep_route") && (st = read_ep_route(r, po, &p->ep_route))) return st;
    snprintf(r->path, sizeof r->path, "parallel");
    if (json_object_get(po, "dp_shard")) {
        if ((st = get_int(r, po, "dp_shard", 1, p->dp, &p->dp_shard))) return st;
        if (p->dp % p->dp_shard != 0)
            return rd_err(r, "parallel.dp_shard", "HSDP cuts DP into dp/dp_shard replicas of dp_shard ranks",
                          "'parallel.dp_shard' (%lld) does not divide dp (%lld)", (long long)p->dp_shard,
                          (long long)p->dp);
    }
    if (json_object_get(po, "vpp_group")) {
        if ((st = get_int(r, po, "vpp_group", 1, p->ga, &p->vpp_group))) return st;
        if (p->vpp < 2)
            return rd_err(r, "parallel.vpp_group", "the micro-batch group is the interleaved schedule's: give "
                          "'parallel.vpp' > 1 or drop 'vpp_group'",
                          "'parallel.vpp_group' (%lld) with 'parallel.vpp' %lld", (long long)p->vpp_group,
                          (long long)p->vpp);
    }
    if (json_object_get(po, "etp")) {
        if ((st = get_int(r, po, "etp", 1, M, &p->etp))) return st;
        if ((p->tp * p->cp * p->dp) % (p->etp * p->ep) != 0)
            return rd_err(r, "parallel.etp", "etp*ep divides tp*cp*dp (the expert layout of one pipeline stage)",
                          "'parallel.etp' * 'parallel.ep' (%lld) does not divide tp*cp*dp (%lld)",
                          (long long)(p->etp * p->ep), (long long)(p->tp * p->cp * p->dp));
        if (p->etp == p->tp) p->etp = 0;
        return TS_OK;
    }
    if ((p->dp * p->cp) % p->ep != 0)
        return rd_err(r, "parallel.ep", "ep divides dp*cp (experts are sharded over data-parallel ranks)",
                      "'parallel.ep' (%lld) does not divide dp*cp (%lld)", (long long)p->ep,
                      (long long)(p->dp * p->cp));
    return TS_OK;
}

/* deps / ctrl_deps of task `local` of a class: ids in [0, local). */
static TsStatus read_deps(Rd *r, json_t *to, const char *key, int32_t local, int32_t first, size_t at, size_t *n)
{
    json_t *arr;
    TsStatus st = get_array(r, to, key, WL_JSON_MAX_DEPS, &arr);
    if (st) return st;
    size_t k;
    json_t *v;
    json_array_foreach(arr, k, v)
    {
        char p[256];
        snprintf(p, sizeof p, "%s.%s[%zu]", r->path, key, k);
        if (!json_is_integer(v)) return rd_err(r, p, "dependencies are task ids (integers) of the same class", "'%s' must be an integer task id", p);
        json_int_t d = json_integer_value(v);
        if (d < 0 || d >= local) {
            char hint[160];
            snprintf(hint, sizeof hint, "a task depends only on earlier tasks of its class: ids 0..%d here", local - 1);
            if (local == 0) snprintf(hint, sizeof hint, "the first task of a class has no dependencies");
            return rd_err(r, p, hint, "'%s' is %lld, not an earlier task of this class", p, (long long)d);
        }
        if (at + *n >= r->dcap) {
            size_t nc = r->dcap ? r->dcap * 2 : 64;
            int32_t *nb = realloc(r->dbuf, nc * sizeof *nb);
            if (!nb) return oom(r);
            r->dbuf = nb;
            r->dcap = nc;
        }
        r->dbuf[at + (*n)++] = first + (int32_t)d;
    }
    return TS_OK;
}

static TsStatus read_task(Rd *r, json_t *to, const WlClass *c, int32_t local)
{
    TsStatus st;
    if ((st = want_object(r, to))) return st;
    const WlParallel *p = &r->w->par;
    int64_t id;
    if ((st = get_int(r, to, "id", 0, INT32_MAX, &id))) return st;
    if (id != local) {
        char pp[256];
        sub(pp, sizeof pp, r->path, "id");
        return rd_err(r, pp, "task ids are local to their class and count up from 0 in order",
                      "'%s' is %lld, expected %d", pp, (long long)id, local);
    }
    int kind = 0, phase = 0;
    if ((st = get_enum(r, to, "kind", "task kind", "comp, coll, send, recv", parse_kind, &kind)) ||
        (st = get_enum(r, to, "phase", "phase", "fwd, ig, wg, opt", parse_phase, &phase)))
        return st;
    WlTask t = {.kind = (WlKind)kind, .phase = (WlPhase)phase, .row = -1, .peer_stage = -1};
    if ((st = get_str(r, to, "name", WL_JSON_MAX_NAME, &t.name)) ||
        (st = get_i32(r, to, "micro", -1, p->ga - 1, &t.micro)) ||
        (st = get_i32(r, to, "chunk", -1, p->pp * p->vpp - 1, &t.chunk)) ||
        (st = get_i32(r, to, "layer", -1, INT32_MAX, &t.layer)))
        return st;
    if (t.kind == WL_KIND_COMP) {
        if ((st = get_size(r, to, "flops", &t.flops)) || (st = get_size(r, to, "mem_bytes", &t.mem_bytes)) ||
            (st = get_size(r, to, "duration_s", &t.duration_s)))
            return st;
    } else if (t.kind == WL_KIND_COLL) {
        int coll, group;
        bool async = false, a2a = false, pair = false;
        if ((st = get_enum(r, to, "coll", "collective", "allreduce, allgather, reducescatter, alltoall, broadcast, sendrecv",
                           parse_coll, &coll)) ||
            (st = get_enum(r, to, "group", "process group",
                           "none, tp, dp, pp, ep, dp_ep, cp, world, dp_cp, emb", parse_group, &group)) ||
            (st = get_size(r, to, "bytes", &t.comm_bytes)))
            return st;
        TsStatus st2 = TS_OK;
        if (!need(r, to, "async", &st2)) return st2;
        if ((st = get_bool_opt(r, to, "async", &async)) || (st = get_bool_opt(r, to, "ar_a2a", &a2a)) ||
            (st = get_bool_opt(r, to, "pair", &pair)))
            return st;
        t.coll = (TsColl)coll;
        t.group = (WlGroup)group;
        t.flags = (async ? WL_F_ASYNC : 0u) | (a2a ? WL_F_AR_A2A : 0u) | (pair ? WL_F_PAIR : 0u);
    } else {
        t.coll = TS_COLL_SENDRECV;
        t.group = WL_GROUP_PP;
        if ((st = get_i32(r, to, "peer_stage", -1, p->pp - 1, &t.peer_stage)) ||
            (st = get_i32(r, to, "tag", 0, INT32_MAX, &t.tag)) || (st = get_size(r, to, "bytes", &t.comm_bytes)))
            return st;
        bool sync = false;
        if ((st = get_bool_opt(r, to, "sync", &sync))) return st;
        if (sync) t.flags |= WL_F_SYNC;
    }
    bool rec = false;
    if ((st = get_bool_opt(r, to, "recompute", &rec))) return st;
    if (rec) t.flags |= WL_F_RECOMPUTE;
    size_t nd = 0, nc = 0;
    if ((st = read_deps(r, to, "deps", local, c->first_task, 0, &nd)) ||
        (st = read_deps(r, to, "ctrl_deps", local, c->first_task, nd, &nc)))
        return st;
    const int32_t *dd = nd ? r->dbuf : NULL, *cd = nc ? r->dbuf + nd : NULL;
    if (wl_task_add(r->w, &t, dd, (int)nd, cd, (int)nc) < 0) return oom(r);
    return TS_OK;
}

/* comp/comm slots of a row: -1 or a task id of the class of the right kind. */
static TsStatus read_slots(Rd *r, json_t *ro, const char *key, const WlClass *c, int32_t *slots, int32_t row)
{
    json_t *arr;
    TsStatus st = get_array(r, ro, key, 3, &arr);
    if (st) return st;
    char p[256];
    sub(p, sizeof p, r->path, key);
    if (json_array_size(arr) != 3)
        return rd_err(r, p, "one task id per phase fwd, ig, wg; -1 for an empty slot",
                      "'%s' must have 3 entries, found %zu", p, json_array_size(arr));
    bool comp = strcmp(key, "comp") == 0;
    for (size_t k = 0; k < 3; k++) {
        json_t *v = json_array_get(arr, k);
        snprintf(p, sizeof p, "%s.%s[%zu]", r->path, key, k);
        if (!json_is_integer(v)) return rd_err(r, p, NULL, "'%s' must be an integer task id or -1", p);
        json_int_t id = json_integer_value(v);
        if (id == -1) {
            slots[k] = -1;
            continue;
        }
        if (id < 0 || id >= c->n_tasks)
            return rd_err(r, p, "row slots name tasks of the same class (or -1)",
                          "'%s' is %lld, not a task of this class (0..%d)", p, (long long)id, c->n_tasks - 1);
        WlTask *t = &r->w->tasks[c->first_task + id];
        if ((t->kind == WL_KIND_COMP) != comp)
            return rd_err(r, p, comp ? "comp slots name comp tasks" : "comm slots name coll, send or recv tasks",
                          "'%s' names task %lld, a %s task", p, (long long)id, wl_kind_name(t->kind));
        slots[k] = c->first_task + (int32_t)id;
        t->row = row;
    }
    return TS_OK;
}

static TsStatus read_row(Rd *r, json_t *ro, const WlClass *c)
{
    TsStatus st;
    if ((st = want_object(r, ro))) return st;
    const char *name;
    int64_t pt;
    if ((st = get_str(r, ro, "name", WL_JSON_MAX_NAME, &name)) ||
        (st = get_int(r, ro, "process_time", 0, INT64_MAX / 2, &pt)))
        return st;
    int32_t row = wl_row_add(r->w, name, pt);
    if (row < 0) return oom(r);
    WlRow *rw = &r->w->rows[row];
    if ((st = read_slots(r, ro, "comp", c, rw->comp, row)) || (st = read_slots(r, ro, "comm", c, rw->comm, row)))
        return st;
    return TS_OK;
}

static TsStatus read_class(Rd *r, json_t *co, size_t ci, int64_t *total_tasks)
{
    char base[64];
    snprintf(base, sizeof base, "classes[%zu]", ci);
    snprintf(r->path, sizeof r->path, "%s", base);
    TsStatus st;
    if ((st = want_object(r, co))) return st;
    const char *name;
    int64_t stage;
    json_t *tasks, *rows;
    if ((st = get_str(r, co, "name", 255, &name)) ||
        (st = get_int(r, co, "stage", 0, r->w->par.pp - 1, &stage)) ||
        (st = get_array(r, co, "tasks", WL_JSON_MAX_TASKS, &tasks)) ||
        (st = get_array(r, co, "rows", WL_MAX_ROWS, &rows)))
        return st;
    if (*total_tasks + (int64_t)json_array_size(tasks) > WL_JSON_MAX_TASKS) {
        char p[96];
        snprintf(p, sizeof p, "%s.tasks", base);
        return rd_err(r, p, "docs/workloads.md lists the limits of JSON workloads",
                      "more than %d tasks in all classes together", WL_JSON_MAX_TASKS);
    }
    *total_tasks += (int64_t)json_array_size(tasks);
    int32_t cid = wl_class_begin(r->w, name, (int32_t)stage);
    if (cid < 0) return oom(r);
    size_t i;
    json_t *v;
    json_array_foreach(tasks, i, v)
    {
        snprintf(r->path, sizeof r->path, "%s.tasks[%zu]", base, i);
        if ((st = read_task(r, v, &r->w->classes[cid], (int32_t)i))) return st;
    }
    json_array_foreach(rows, i, v)
    {
        snprintf(r->path, sizeof r->path, "%s.rows[%zu]", base, i);
        if ((st = read_row(r, v, &r->w->classes[cid]))) return st;
    }
    return TS_OK;
}

static TsStatus read_doc(Rd *r)
{
    json_t *root = r->doc->root;
    TsStatus st = TS_OK;
    r->path[0] = '\0';
    const char *fmt;
    if ((st = get_str(r, root, "format", 64, &fmt))) {
        ts_err_hint(r->err, "a JSON workload starts with \"format\": \"%s\", \"version\": %d", WL_JSON_FORMAT,
                    WL_JSON_VERSION);
        return st;
    }
    if (strcmp(fmt, WL_JSON_FORMAT) != 0) {
        char hint[128];
        snprintf(hint, sizeof hint, "JSON workloads have \"format\": \"%s\"", WL_JSON_FORMAT);
        return rd_err(r, "format", hint, "unknown format '%s'", fmt);
    }
    int64_t ver = 0;
    if ((st = ts_json_int(r->doc, root, "version", "version", true, 1, 1000000, &ver, r->err))) return st;
    if (ver != WL_JSON_VERSION) {
        char hint[160];
        snprintf(hint, sizeof hint, "this trainsim reads version %d; regenerate the file with 'trainsim workload "
                 "--format json'", WL_JSON_VERSION);
        return rd_err(r, "version", hint, "unsupported %s version %lld", WL_JSON_FORMAT, (long long)ver);
    }
    const char *src, *gen;
    if ((st = get_str(r, root, "generator", 255, &gen)) ||
        (st = get_str(r, root, "source", sizeof r->w->source - 1, &src)))
        return st;
    snprintf(r->w->source, sizeof r->w->source, "%s", src);
    if (json_object_get(root, "origin")) {
        int o = 0;
        if ((st = get_enum(r, root, "origin", "origin", "simai, astrasim, optable", parse_origin, &o))) return st;
        r->w->origin = (WlFormat)o;
    }
    snprintf(r->w->policy, sizeof r->w->policy, "%s", DEFAULT_POLICY);
    if (json_object_get(root, "policy")) {
        const char *pol;
        if ((st = get_str(r, root, "policy", sizeof r->w->policy - 1, &pol))) return st;
        static const char *const POL[] = {"HYBRID_TRANSFORMER_FWD_IN_BCKWD", "HYBRID_TRANSFORMER", "DATA",
                                          "MODEL", "HYBRID_DATA_MODEL", "HYBRID_MODEL_DATA", "MICRO"};
        bool ok = false;
        for (size_t i = 0; i < sizeof POL / sizeof POL[0]; i++) ok = ok || strcmp(pol, POL[i]) == 0;
        if (!ok)
            return rd_err(r, "policy", "policy is an ASTRA-sim/SimAI policy token, e.g. HYBRID_TRANSFORMER_FWD_IN_BCKWD, "
                          "DATA, MODEL, MICRO", "unknown policy '%s'", pol);
        snprintf(r->w->policy, sizeof r->w->policy, "%s", pol);
    }
    if ((st = read_parallel(r, root))) return st;
    r->path[0] = '\0';
    json_t *classes;
    if ((st = get_array(r, root, "classes", WL_JSON_MAX_CLASSES, &classes))) return st;
    int64_t total = 0;
    size_t i;
    json_t *v;
    json_array_foreach(classes, i, v)
    {
        if ((st = read_class(r, v, i, &total))) return st;
    }
    return TS_OK;
}

/* Every recv needs a send from its peer stage with the same tag (what the
 * Chakra writer and the task-graph replay pair up), and the two sides agree
 * on "sync" (a rendezvous is a property of the pair). */
static TsStatus check_p2p(Rd *r)
{
    const Workload *w = r->w;
    int32_t *send_of = malloc((size_t)(w->n_tasks > 0 ? w->n_tasks : 1) * sizeof *send_of);
    if (!send_of) return oom(r);
    int32_t bad = wl_pair_p2p(w, send_of);
    bool mismatch = false;
    for (int32_t i = 0; bad == -1 && i < w->n_tasks; i++)
        if (send_of[i] >= 0 && ((w->tasks[i].flags ^ w->tasks[send_of[i]].flags) & WL_F_SYNC)) {
            bad = i;
            mismatch = true;
        }
    free(send_of);
    if (bad == -2) return oom(r);
    if (bad < 0) return TS_OK;
    int32_t c = 0;
    while (c + 1 < w->n_classes && bad >= w->classes[c + 1].first_task) c++;
    const WlTask *t = &w->tasks[bad];
    char path[96], hint[192];
    snprintf(path, sizeof path, "classes[%d].tasks[%d].tag", c, bad - w->classes[c].first_task);
    if (mismatch) {
        bool sync = t->flags & WL_F_SYNC;
        snprintf(hint, sizeof hint, "give both the send and the recv \"sync\": true (a rendezvous), or neither");
        return rd_err(r, path, hint, "recv from stage %d with tag %d is %s but its send is %s", t->peer_stage, t->tag,
                      sync ? "sync" : "not sync", sync ? "not" : "sync");
    }
    snprintf(hint, sizeof hint, "the class of stage %d needs a send with \"peer_stage\": %d and \"tag\": %d "
             "(sends and receives pair up by stage and tag)", t->peer_stage, w->classes[c].stage, t->tag);
    return rd_err(r, path, hint, "recv from stage %d with tag %d has no matching send", t->peer_stage, t->tag);
}

TsStatus wl_read_json(const char *name, const char *text, size_t len, Workload **out, TsError *err)
{
    *out = NULL;
    if (len > WL_JSON_MAX_BYTES) {
        ts_err(err, TS_ERR_INPUT, "JSON workload of %zu bytes is larger than the %d MiB limit", len,
               (int)(WL_JSON_MAX_BYTES >> 20));
        ts_err_at(err, name, 0, 0, NULL);
        ts_err_hint(err, "convert very large workloads to SimAI text or Chakra traces instead");
        return TS_ERR_INPUT;
    }
    const char *nul = memchr(text, '\0', len);
    if (nul) {
        int line = 1, col = 1;
        for (const char *q = text; q < nul; q++) {
            if (*q == '\n') line++, col = 1;
            else if (((unsigned char)*q & 0xC0) != 0x80) col++;
        }
        ts_err(err, TS_ERR_INPUT, "binary data (a NUL byte) in a JSON workload");
        ts_err_at(err, name, line, col, NULL);
        ts_err_hint(err, "JSON workloads are text written by 'trainsim workload --format json'");
        return TS_ERR_INPUT;
    }
    TsJsonDoc doc;
    TsStatus st = ts_json_load_text(&doc, name, text, err);
    if (st) return st;
    Workload *w = wl_create(1, err);
    if (!w) {
        ts_json_free(&doc);
        return TS_ERR_INTERNAL;
    }
    Rd r = {.doc = &doc, .w = w, .err = err};
    st = read_doc(&r);
    if (st == TS_OK) st = check_p2p(&r);
    free(r.dbuf);
    ts_json_free(&doc);
    if (st == TS_OK) st = wl_validate(w, err);
    if (st) {
        wl_destroy(w);
        return st;
    }
    *out = w;
    return TS_OK;
}
