/* The NeuSight-style per-operator table (reference/optable.md §1): a header
 * line and 11 tab-separated columns per op. Times are ms (Python floats),
 * comm sizes are element counts (fp32: 4 bytes each). Comm types: None,
 * ALLREDUCE (TP, blocking), ALLREDUCE_ASYNC (DP gradient bucket, in the
 * backward column), SENDRECV (pipeline); tables converted from other
 * formats also carry the SimAI collectives with _ASYNC and group suffixes
 * (wl_comm_type_parse), so conversions round-trip. Rows with no compute
 * print their times as the integer 0, as the seed does. */
#include "wl_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define OPT_COLS(X)                                                                   \
    X("name") X("forward_compute_time") X("forward_comm_type") X("forward_comm_size")   \
    X("backward_compute_time") X("backward_comm_type") X("backward_comm_size")           \
    X("weight_grad_compute_time") X("weight_grad_comm_type") X("weight_grad_comm_size")  \
    X("process_time")
static const char *const COLS[] = {
#define X(s) s,
    OPT_COLS(X)
#undef X
};
enum { N_COLS = sizeof COLS / sizeof COLS[0] };
_Static_assert(N_COLS == 11, "op table has 11 columns");

bool wl_optable_sniff(const char *text, size_t len);
bool wl_optable_sniff(const char *text, size_t len)
{
    return len >= 5 && strncmp(text, "name", 4) == 0 && (text[4] == '\t' || text[4] == ' ');
}

/* "0" (an int) marks a row without compute in that slot. */
static bool is_int_zero(const WlTok *t) { return wl_tok_eq(t, "0"); }

TsStatus wl_read_optable(const char *name, const char *text, size_t len, Workload **out, TsError *err)
{
    *out = NULL;
    TsStatus st = wl_check_text(name, text, len, err);
    if (st) return st;
    Workload *w = wl_create(1, err);
    if (!w) return TS_ERR_INTERNAL;
    w->world_unstated = true; /* an op table has no layout */
    snprintf(w->source, sizeof w->source, "%s", name);
    w->origin = WL_FMT_OPTABLE;
    WlLines L = {.name = name, .text = text, .len = len};
    WlTok tk[12];
    char buf[64];
    WlRowSpec *rows = NULL;
    int64_t n = 0, cap = 0;
    if (!wl_lines_next(&L)) {
        ts_err(err, TS_ERR_INPUT, "empty op table");
        ts_err_at(err, name, 1, 0, NULL);
        st = TS_ERR_INPUT;
        goto fail;
    }
    int nt = wl_tokenize(&L, tk, 12);
    for (int i = 0; i < N_COLS; i++)
        if (i >= nt || !wl_tok_eq(&tk[i], COLS[i])) {
            st = wl_err_tok(&L, i < nt ? &tk[i] : NULL, err, "op table header: expected column %d '%s'", i + 1, COLS[i]);
            ts_err_hint(err, "the header is: name forward_compute_time forward_comm_type ... process_time (11 columns)");
            goto fail;
        }
    if (nt != N_COLS) {
        st = wl_err_tok(&L, &tk[N_COLS], err, "op table header has %d columns, expected 11", nt);
        goto fail;
    }
    while (wl_lines_next(&L)) {
        if ((st = wl_lines_check_len(&L, err))) goto fail;
        nt = wl_tokenize(&L, tk, 12);
        if (nt == 0) continue;
        if (nt != N_COLS) {
            st = wl_err_tok(&L, nt > N_COLS ? &tk[N_COLS] : NULL, err, "expected 11 fields, found %d", nt);
            ts_err_hint(err, "columns: name, then time/comm type/comm size for forward, backward and "
                             "weight-grad, then process_time");
            goto fail;
        }
        if (n >= WL_MAX_ROWS) {
            st = wl_err_tok(&L, NULL, err, "more than %d rows", WL_MAX_ROWS);
            goto fail;
        }
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            WlRowSpec *nr = realloc(rows, (size_t)cap * sizeof *nr);
            if (!nr) {
                st = ts_err(err, TS_ERR_INTERNAL, "out of memory");
                goto fail;
            }
            rows = nr;
        }
        WlRowSpec *r = &rows[n];
        memset(r, 0, sizeof *r);
        r->name = ts_arena_printf(w->arena, "%.*s", tk[0].len, tk[0].s); /* whole: fx names run long */
        if (!r->name) {
            st = ts_err(err, TS_ERR_INTERNAL, "out of memory");
            goto fail;
        }
        for (int ph = 0; ph < 3; ph++) {
            const WlTok *tt = &tk[1 + 3 * ph], *ty = &tk[2 + 3 * ph], *sz = &tk[3 + 3 * ph];
            double t, s;
            if (!wl_tok_f64(tt, &t) || t < 0) {
                st = wl_err_tok(&L, tt, err, "expected a time in ms >= 0 for %s, found '%s'", COLS[1 + 3 * ph],
                                wl_tok_str(tt, buf, 40));
                goto fail;
            }
            if (t >= 9.2e15) { /* int64 ns ticks downstream (SimAI, Chakra) */
                st = wl_err_tok(&L, tt, err, "%s is out of range (at most 9.2e15 ms)", COLS[1 + 3 * ph]);
                goto fail;
            }
            r->has_comp[ph] = !is_int_zero(tt);
            r->comp_s[ph] = t * 1e-3;
            if (!wl_comm_type_parse(ty, ph, true, &r->coll[ph], &r->group[ph], &r->flags[ph])) {
                st = wl_err_tok(&L, ty, err, "unknown comm type '%s' in %s", wl_tok_str(ty, buf, 40), COLS[2 + 3 * ph]);
                ts_err_hint(err, "op tables use None, ALLREDUCE, ALLREDUCE_ASYNC or SENDRECV (NeuSight), or in tables "
                                 "converted by trainsim ALLGATHER, REDUCESCATTER, ALLTOALL, ALLREDUCEALLTOALL, "
                                 "BROADCAST, with _ASYNC and _EP or _DP_EP");
                goto fail;
            }
            if (!wl_tok_f64(sz, &s) || s < 0) {
                st = wl_err_tok(&L, sz, err, "expected an element count >= 0 for %s, found '%s'",
                                COLS[3 + 3 * ph], wl_tok_str(sz, buf, 40));
                goto fail;
            }
            if (s * (double)w->optable_elem_bytes >= 9.2e18) { /* Chakra comm_size is an int64 */
                st = wl_err_tok(&L, sz, err, "%s is out of range (at most 9.2e18 bytes)", COLS[3 + 3 * ph]);
                goto fail;
            }
            r->bytes[ph] = s * (double)w->optable_elem_bytes;
        }
        if (!wl_tok_i64(&tk[10], &r->process_time)) {
            st = wl_err_tok(&L, &tk[10], err, "expected an integer process_time, found '%s'", wl_tok_str(&tk[10], buf, 40));
            goto fail;
        }
        n++;
    }
    if (wl_class_begin(w, "stage0", 0) < 0 || !wl_rows_build(w, rows, n)) {
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

static void put_time(TsBuf *b, const WlRowSpec *r, int ph)
{
    if (r->has_comp[ph]) wl_fmt_pyfloat(b, r->comp_s[ph] * 1e3);
    else ts_buf_puts(b, "0");
}

void wl_write_optable(const Workload *w, TsBuf *out)
{
    for (int i = 0; i < N_COLS; i++) ts_buf_printf(out, "%s%s", i ? "\t" : "", COLS[i]);
    ts_buf_puts(out, "\n");
    WlRowSpec *rs;
    int64_t n = wl_rows_collect(w, &rs);
    if (n < 0) {
        out->oom = true;
        return;
    }
    double eb = (double)(w->optable_elem_bytes > 0 ? w->optable_elem_bytes : 4);
    for (int64_t i = 0; i < n; i++) {
        const WlRowSpec *r = &rs[i];
        ts_buf_puts(out, r->name);
        for (int ph = 0; ph < 3; ph++) {
            ts_buf_puts(out, "\t");
            put_time(out, r, ph);
            TsColl c = r->coll[ph];
            ts_buf_puts(out, "\t");
            if (c == TS_COLL_NONE) ts_buf_puts(out, "None"); /* NeuSight's spelling */
            else wl_comm_type_put(out, r, ph, WL_TOK_GROUPS | WL_TOK_ASYNC | WL_TOK_SENDRECV);
            /* element counts are integers in NeuSight's tables; a byte count
             * that is not a whole number of elements (converted workloads)
             * keeps its fraction so that it reads back exactly */
            double el = c == TS_COLL_NONE ? 0.0 : r->bytes[ph] / eb;
            ts_buf_puts(out, "\t");
            if (el == floor(el)) ts_buf_printf(out, "%.0f", el);
            else wl_fmt_pyfloat(out, el);
        }
        ts_buf_printf(out, "\t%" PRId64 "\n", r->process_time);
    }
    free(rs);
}
