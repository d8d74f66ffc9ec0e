/* SimAI/AICB and ASTRA-sim 1.0 text workloads: one reader (both share the
 * syntax), two writers. Format: reference/simai_aicb.md §1, §7 and
 * reference/astrasim_chakra.md §2.1.
 *
 *   POLICY [key: value ...]          header (keys looked up by name)
 *   N                                number of item lines
 *   name -1 fwd_t fwd_type fwd_size ig_t ig_type ig_size wg_t wg_type wg_size update_t
 *
 * Times are ns ticks, sizes bytes (whole buffer). Types: ALLREDUCE, ALLGATHER,
 * REDUCESCATTER, ALLTOALL, ALLREDUCEALLTOALL, BROADCAST, NONE/None, with the
 * SimAI group suffixes _EP and _DP_EP; ALLREDUCE_ASYNC (op-table style) is a
 * non-blocking all-reduce. */
#include "wl_internal.h"

/* Largest GPU count a SimAI header may describe (= Chakra's max_ranks). */
#define WL_MAX_WORLD (1 << 20)

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define POLICY_LIST(X)                                                                  \
    X("DATA") X("MODEL") X("HYBRID_DATA_MODEL") X("HYBRID_MODEL_DATA")                  \
    X("HYBRID_TRANSFORMER") X("HYBRID_TRANSFORMER_FWD_IN_BCKWD") X("HYBRID_DLRM")       \
    X("HYBRID_DLRM_ENHANCED") X("MICRO") X("DISTRIBUTED_INFERENCE")
static const char *const POLICIES[] = {
#define X(s) s,
    POLICY_LIST(X)
#undef X
};
enum { N_POLICIES = sizeof POLICIES / sizeof POLICIES[0] };

static const char *const FIELD_NAMES[12] = {
    "name", "dependency", "fwd_compute_time", "fwd_comm_type", "fwd_comm_size", "ig_compute_time",
    "ig_comm_type", "ig_comm_size", "wg_compute_time", "wg_comm_type", "wg_comm_size", "update_time"};

static const char TYPES_HINT[] =
    "comm types are ALLREDUCE, ALLGATHER, REDUCESCATTER, ALLTOALL, ALLREDUCEALLTOALL, BROADCAST "
    "or NONE, optionally with _ASYNC (non-blocking) and the suffix _EP or _DP_EP";

typedef struct Hdr {
    bool has[8]; /* tp ep pp vpp ga all_gpus pp_comm checkpoints */
} Hdr;

static TsStatus parse_header(WlLines *L, Workload *w, TsError *err)
{
    WlTok tk[256];
    int n = wl_tokenize(L, tk, 256);
    if (n == 0) return wl_err_tok(L, NULL, err, "empty header line");
    if (n > 256) return wl_err_tok(L, &tk[255], err, "header has more than 256 tokens");
    int pi = -1;
    for (int i = 0; i < N_POLICIES; i++)
        if (wl_tok_eq(&tk[0], POLICIES[i])) pi = i;
    char buf[80];
    if (pi < 0) {
        wl_err_tok(L, &tk[0], err, "unknown parallelism policy '%s'", wl_tok_str(&tk[0], buf, 40));
        ts_err_hint(err, "the first token names the policy: HYBRID_TRANSFORMER_FWD_IN_BCKWD, "
                         "HYBRID_TRANSFORMER, DATA, MODEL, MICRO, ...");
        return TS_ERR_INPUT;
    }
    snprintf(w->policy, sizeof w->policy, "%s", POLICIES[pi]);
    bool dlrm = strncmp(POLICIES[pi], "HYBRID_DLRM", 11) == 0;
    Hdr h = {0};
    WlParallel *p = &w->par;
    for (int i = 1; i < n; i++) {
        const WlTok *k = &tk[i];
        if (dlrm && i == 1) {
            int64_t v;
            if (!wl_tok_i64(k, &v)) return wl_err_tok(L, k, err, "expected the last bottom-MLP layer index");
            continue;
        }
        static const char *const KEYS[] = {"model_parallel_NPU_group:", "ep:", "pp:", "vpp:", "ga:",
                                           "all_gpus:", "pp_comm:", "checkpoints:", "checkpoint_initiates:",
                                           "pp_comm"};
        int ki = -1;
        for (int j = 0; j < 10; j++)
            if (wl_tok_eq(k, KEYS[j])) ki = j;
        if (ki < 0) {
            wl_err_tok(L, k, err, "unknown header key '%s'", wl_tok_str(k, buf, 60));
            ts_err_hint(err, "header keys: model_parallel_NPU_group: ep: pp: vpp: ga: all_gpus: "
                             "checkpoints: checkpoint_initiates: pp_comm:");
            return TS_ERR_INPUT;
        }
        if (ki == 9) ki = 6;
        if (i + 1 >= n)
            return wl_err_tok(L, k, err, "header key '%s' has no value", wl_tok_str(k, buf, 60));
        const WlTok *v = &tk[++i];
        double d;
        int64_t iv;
        if (ki == 6) {
            if (!wl_tok_f64(v, &d) || d < 0)
                return wl_err_tok(L, v, err, "pp_comm expects a byte count, found '%s'", wl_tok_str(v, buf, 40));
            p->pp_comm_bytes = d;
            h.has[6] = true;
            continue;
        }
        if (!wl_tok_i64(v, &iv) || iv < 0) {
            wl_err_tok(L, v, err, "header key '%s' expects a non-negative integer, found '%s'",
                       wl_tok_str(k, buf, 40), wl_tok_str(v, buf + 40, 40));
            return TS_ERR_INPUT;
        }
        if (ki >= 7) { /* checkpoints: k l1..lk */
            if (iv > n - i - 1)
                return wl_err_tok(L, v, err, "%" PRId64 " layer indices announced, %d tokens follow", iv, n - i - 1);
            for (int64_t j = 0, layer; j < iv; j++) { /* own variable: iv is the loop bound */
                const WlTok *li = &tk[++i];
                if (!wl_tok_i64(li, &layer) || layer < 0)
                    return wl_err_tok(L, li, err, "expected a layer index");
            }
            h.has[7] = true;
            continue;
        }
        if (iv > WL_MAX_WORLD) /* keeps tp*pp*dp and the group walks bounded */
            return wl_err_tok(L, v, err, "header key '%s' is out of range (at most %d)", wl_tok_str(k, buf, 40),
                              WL_MAX_WORLD);
        h.has[ki] = true;
        int64_t *dst[] = {&p->tp, &p->ep, &p->pp, &p->vpp, &p->ga, &p->world};
        *dst[ki] = iv;
    }
    bool hybrid = strncmp(w->policy, "HYBRID_TRANSFORMER", 18) == 0;
    if (hybrid && !h.has[0]) {
        wl_err_tok(L, &tk[0], err, "header lacks model_parallel_NPU_group:");
        ts_err_hint(err, "%s needs the TP size: '%s model_parallel_NPU_group: 8 ...'", w->policy, w->policy);
        return TS_ERR_INPUT;
    }
    w->simai_header = h.has[3] || h.has[6] ? WL_SIMAI_HDR_CURRENT
                      : (h.has[1] || h.has[2] || h.has[4] || h.has[5]) ? WL_SIMAI_HDR_V1_1
                      : hybrid ? WL_SIMAI_HDR_V1_0 : WL_SIMAI_HDR_NONE;
    if (p->tp < 1) p->tp = 1;
    if (p->ep < 1) p->ep = 1;
    if (p->pp < 1) p->pp = 1;
    if (p->ga < 1) p->ga = 1;
    if (p->vpp < 1) p->vpp = 1; /* SimAI's interleaving degree (its bubble divides by it) */
    if (p->tp * p->pp > WL_MAX_WORLD) {
        wl_err_tok(L, &tk[0], err, "model_parallel_NPU_group x pp = %" PRId64 " GPUs is more than %d",
                   p->tp * p->pp, WL_MAX_WORLD);
        return TS_ERR_INPUT;
    }
    if (p->world < p->tp * p->pp) p->world = p->tp * p->pp;
    p->dp = p->world / (p->tp * p->pp);
    if (p->dp < 1) p->dp = 1;
    p->world = p->tp * p->pp * p->dp;
    w->world_unstated = !h.has[5];
    if (w->simai_header == WL_SIMAI_HDR_V1_0)
        snprintf(w->warning, sizeof w->warning,
                 "%s:1: old AICB v1.0 header (July 2024): no ep/pp/ga/all_gpus, assuming pp 1, ga 1, "
                 "%" PRId64 " GPUs", L->name, p->world);
    return TS_OK;
}

static TsStatus parse_item(WlLines *L, WlRowSpec *r, Workload *w, TsError *err)
{
    WlTok tk[13];
    int n = wl_tokenize(L, tk, 13);
    char buf[64];
    if (n != 12) {
        wl_err_tok(L, n > 12 ? &tk[12] : NULL, err, "expected 12 fields, found %d", n);
        ts_err_hint(err, "an item line is: name -1 fwd_time fwd_type fwd_size ig_time ig_type ig_size "
                         "wg_time wg_type wg_size update_time");
        return TS_ERR_INPUT;
    }
    r->name = ts_arena_strdup(w->arena, wl_tok_str(&tk[0], buf, sizeof buf));
    if (!r->name) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    int64_t iv;
    if (!wl_tok_i64(&tk[1], &iv))
        return wl_err_tok(L, &tk[1], err, "expected an integer for %s, found '%s'", FIELD_NAMES[1],
                          wl_tok_str(&tk[1], buf, 40));
    for (int ph = 0; ph < 3; ph++) {
        const WlTok *tt = &tk[2 + 3 * ph], *ty = &tk[3 + 3 * ph], *sz = &tk[4 + 3 * ph];
        double t, s;
        if (!wl_tok_f64(tt, &t)) {
            wl_err_tok(L, tt, err, "expected a number for %s, found '%s'", FIELD_NAMES[2 + 3 * ph],
                       wl_tok_str(tt, buf, 40));
            ts_err_hint(err, "compute times are integer ns ticks, e.g. 5729721");
            return TS_ERR_INPUT;
        }
        if (t < 0) return wl_err_tok(L, tt, err, "%s must be >= 0", FIELD_NAMES[2 + 3 * ph]);
        if (t >= 9.2e18) /* int64 ns ticks (292 years): what the writers and Chakra can carry */
            return wl_err_tok(L, tt, err, "%s is out of range (at most 9.2e18 ns)", FIELD_NAMES[2 + 3 * ph]);
        r->has_comp[ph] = true;
        r->comp_s[ph] = t * 1e-9;
        if (!wl_comm_type_parse(ty, ph, false, &r->coll[ph], &r->group[ph], &r->flags[ph])) {
            wl_err_tok(L, ty, err, "unknown comm type '%s' in %s", wl_tok_str(ty, buf, 40), FIELD_NAMES[3 + 3 * ph]);
            ts_err_hint(err, "%s", TYPES_HINT);
            return TS_ERR_INPUT;
        }
        if (ph == WL_PHASE_WG) r->flags[ph] |= WL_F_ASYNC; /* SimAI issues wg comms non-blocking */
        if (!wl_tok_f64(sz, &s)) {
            wl_err_tok(L, sz, err, "expected a byte count for %s, found '%s'", FIELD_NAMES[4 + 3 * ph],
                       wl_tok_str(sz, buf, 40));
            return TS_ERR_INPUT;
        }
        if (s < 0) return wl_err_tok(L, sz, err, "%s must be >= 0, found %s", FIELD_NAMES[4 + 3 * ph],
                                     wl_tok_str(sz, buf, 40));
        if (s >= 9.2e18) /* Chakra comm_size is an int64 */
            return wl_err_tok(L, sz, err, "%s is out of range (at most 9.2e18 bytes)", FIELD_NAMES[4 + 3 * ph]);
        r->bytes[ph] = s;
    }
    if (!wl_tok_i64(&tk[11], &r->process_time))
        return wl_err_tok(L, &tk[11], err, "expected an integer for %s, found '%s'", FIELD_NAMES[11],
                          wl_tok_str(&tk[11], buf, 40));
    return TS_OK;
}

/* Next non-blank line; false at end of input. */
static bool next_nonblank(WlLines *L)
{
    while (wl_lines_next(L)) {
        for (size_t i = 0; i < L->cur_len; i++)
            if (!strchr(" \t\r\f\v", L->cur[i])) return true;
    }
    return false;
}

TsStatus wl_read_simai(const char *name, const char *text, size_t len, Workload **out, TsError *err)
{
    *out = NULL;
    TsStatus st = wl_check_text(name, text, len, err);
    if (st) return st;
    Workload *w = wl_create(1, err);
    if (!w) return TS_ERR_INTERNAL;
    snprintf(w->source, sizeof w->source, "%s", name);
    w->origin = WL_FMT_SIMAI;
    WlLines L = {.name = name, .text = text, .len = len};
    WlRowSpec *rows = NULL;
    if (!next_nonblank(&L)) {
        ts_err(err, TS_ERR_INPUT, "empty workload file");
        ts_err_at(err, name, 1, 0, NULL);
        ts_err_hint(err, "line 1 is the policy header, e.g. 'HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ...'");
        st = TS_ERR_INPUT;
        goto fail;
    }
    if ((st = wl_lines_check_len(&L, err)) || (st = parse_header(&L, w, err))) goto fail;
    w->origin = (w->simai_header >= WL_SIMAI_HDR_V1_1 || strcmp(w->policy, "MICRO") == 0)
                    ? WL_FMT_SIMAI : WL_FMT_ASTRASIM;
    WlTok tk[2];
    if (!next_nonblank(&L)) {
        ts_err(err, TS_ERR_INPUT, "file ends after the header: the item count line is missing");
        ts_err_at(err, name, L.line, 0, NULL);
        st = TS_ERR_INPUT;
        goto fail;
    }
    int64_t count;
    int nt = wl_tokenize(&L, tk, 2);
    if (nt != 1 || !wl_tok_i64(&tk[0], &count) || count < 0 || count > WL_MAX_ROWS) {
        st = wl_err_tok(&L, nt >= 1 ? &tk[nt > 1 ? 1 : 0] : NULL, err,
                        "expected the number of item lines (an integer 0..%d), found '%.*s'", WL_MAX_ROWS,
                        (int)(L.cur_len < 40 ? L.cur_len : 40), L.cur);
        ts_err_hint(err, "line 2 of a SimAI/ASTRA-sim workload is the item count, e.g. '557'");
        goto fail;
    }
    int count_line = L.line;
    rows = calloc((size_t)(count ? count : 1), sizeof *rows);
    if (!rows) {
        st = ts_err(err, TS_ERR_INTERNAL, "out of memory");
        goto fail;
    }
    for (int64_t i = 0; i < count; i++) {
        if (!next_nonblank(&L)) {
            if (i > 0 && w->simai_header == WL_SIMAI_HDR_V1_0) {
                /* AICB's first release (July 2024) wrote counts its files do
                 * not hold (its L65B sample: 839 announced, 32 written):
                 * take what is there, and say so */
                snprintf(w->warning, sizeof w->warning,
                         "%s:%d: the count line announces %" PRId64 " item lines, the file has %" PRId64
                         " (AICB v1.0 wrote such counts); using %" PRId64,
                         name, count_line, count, i, i);
                count = i;
                break;
            }
            ts_err(err, TS_ERR_INPUT, "file ends after %" PRId64 " of the %" PRId64 " item lines announced on line %d",
                   i, count, count_line);
            ts_err_at(err, name, L.line + 1, 1, NULL);
            ts_err_hint(err, "the file is truncated, or the count %" PRId64 " on line %d is wrong", count, count_line);
            st = TS_ERR_INPUT;
            goto fail;
        }
        if ((st = wl_lines_check_len(&L, err)) || (st = parse_item(&L, &rows[i], w, err))) {
            if (L.pos >= len && len > 0 && text[len - 1] != '\n' && strstr(err->msg, "fields"))
                ts_err_hint(err, "the file ends inside this line: it looks truncated");
            goto fail;
        }
    }
    if (next_nonblank(&L)) {
        WlTok t1;
        wl_tokenize(&L, &t1, 1);
        st = wl_err_tok(&L, &t1, err, "extra line after the %" PRId64 " item lines announced on line %d", count,
                        count_line);
        ts_err_hint(err, "fix the count on line %d", count_line);
        goto fail;
    }
    if (wl_class_begin(w, "stage0", 0) < 0 || !wl_rows_build(w, rows, count)) {
        st = ts_err(err, TS_ERR_INTERNAL, "out of memory");
        goto fail;
    }
    free(rows);
    *out = w;
    return TS_OK;
fail:
    free(rows);
    wl_destroy(w);
    return st;
}

/* ---- writers -------------------------------------------------------------------- */
static void put_type(TsBuf *b, const WlRowSpec *r, int ph, bool suffixes)
{
    TsColl c = r->coll[ph];
    wl_comm_type_put(b, r, ph, suffixes ? WL_TOK_GROUPS : 0);
    ts_buf_printf(b, "\t%.0f", c == TS_COLL_NONE || c == TS_COLL_SENDRECV ? 0.0 : r->bytes[ph]);
}

static void put_rows(TsBuf *b, WlRowSpec *rs, int64_t n, bool suffixes)
{
    ts_buf_printf(b, "%" PRId64 "\n", n);
    for (int64_t i = 0; i < n; i++) {
        WlRowSpec *r = &rs[i];
        /* An op-table async gradient all-reduce sits in the wg slot here. */
        if ((r->flags[WL_PHASE_IG] & WL_F_ASYNC) && r->coll[WL_PHASE_WG] == TS_COLL_NONE) {
            r->coll[WL_PHASE_WG] = r->coll[WL_PHASE_IG];
            r->group[WL_PHASE_WG] = WL_GROUP_DP;
            r->bytes[WL_PHASE_WG] = r->bytes[WL_PHASE_IG];
            r->flags[WL_PHASE_WG] = r->flags[WL_PHASE_IG];
            r->coll[WL_PHASE_IG] = TS_COLL_NONE;
        }
        ts_buf_puts(b, r->name[0] ? r->name : "task");
        ts_buf_puts(b, "\t-1");
        for (int ph = 0; ph < 3; ph++) {
            ts_buf_printf(b, "\t%.0f\t", r->has_comp[ph] ? floor(r->comp_s[ph] * 1e9 + 0.5) : 0.0);
            put_type(b, r, ph, suffixes);
        }
        ts_buf_printf(b, "\t%" PRId64 "\n", r->process_time);
    }
}

static void write_rows_or_oom(TsBuf *out, const Workload *w, bool suffixes)
{
    WlRowSpec *rs;
    int64_t n = wl_rows_collect(w, &rs);
    if (n < 0) {
        out->oom = true;
        return;
    }
    put_rows(out, rs, n, suffixes);
    free(rs);
}

void wl_write_simai(const Workload *w, const WlSimaiOptions *o, TsBuf *out)
{
    WlSimaiHeader h = o && o->header != WL_SIMAI_HDR_NONE ? o->header : WL_SIMAI_HDR_CURRENT;
    const WlParallel *p = &w->par;
    const char *pol = strcmp(w->policy, "MICRO") == 0 ? "MICRO" : "HYBRID_TRANSFORMER_FWD_IN_BCKWD";
    ts_buf_puts(out, pol);
    if (strcmp(pol, "MICRO") != 0) {
        ts_buf_printf(out, " model_parallel_NPU_group: %" PRId64, p->tp);
        if (h >= WL_SIMAI_HDR_V1_1) {
            ts_buf_printf(out, " ep: %" PRId64 " pp: %" PRId64, p->ep, p->pp);
            if (h == WL_SIMAI_HDR_CURRENT)
                ts_buf_printf(out, " vpp: %" PRId64, p->vpp > 0 ? p->vpp : 1);
            ts_buf_printf(out, " ga: %" PRId64 " all_gpus: %" PRId64, p->ga, p->world);
        }
        ts_buf_puts(out, " checkpoints: 0 checkpoint_initiates: 0");
        if (h == WL_SIMAI_HDR_CURRENT)
            ts_buf_printf(out, " pp_comm: %.0f", p->pp > 1 ? floor(p->pp_comm_bytes) : 0.0);
    }
    ts_buf_puts(out, "\n");
    write_rows_or_oom(out, w, true);
}

void wl_write_astrasim(const Workload *w, TsBuf *out)
{
    const char *pol = w->policy[0] && w->origin != WL_FMT_SIMAI ? w->policy : "HYBRID_TRANSFORMER_FWD_IN_BCKWD";
    ts_buf_puts(out, pol);
    if (strncmp(pol, "HYBRID_TRANSFORMER", 18) == 0)
        ts_buf_printf(out, " model_parallel_NPU_group: %" PRId64, w->par.tp);
    if (ts_ends_with(pol, "_FWD_IN_BCKWD")) ts_buf_puts(out, " checkpoints: 0 checkpoint_initiates: 0");
    ts_buf_puts(out, "\n");
    write_rows_or_oom(out, w, false);
}
