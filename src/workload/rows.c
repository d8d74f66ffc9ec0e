/* Rows of the layer formats <-> tasks; the line tokenizer the text readers
 * share; Python float formatting for op tables. */
#include "wl_internal.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---- rows -> tasks -------------------------------------------------------------- */
static int32_t add_comm(Workload *w, const WlRowSpec *r, int ph, int32_t row, int32_t dep)
{
    WlTask t = wl_task_coll(r->name, (WlPhase)ph, r->coll[ph], r->group[ph], r->bytes[ph]);
    t.flags = r->flags[ph];
    t.row = row;
    return wl_task_add(w, &t, &dep, dep >= 0 ? 1 : 0, NULL, 0);
}

static int32_t add_comp(Workload *w, const WlRowSpec *r, int ph, int32_t row, int32_t dep)
{
    WlTask t = wl_task_comp(r->name, (WlPhase)ph, 0, 0, r->comp_s[ph]);
    t.row = row;
    return wl_task_add(w, &t, &dep, dep >= 0 ? 1 : 0, NULL, 0);
}

bool wl_rows_build(Workload *w, const WlRowSpec *rows, int64_t n)
{
    int32_t first_row = w->n_rows;
    for (int64_t i = 0; i < n; i++)
        if (wl_row_add(w, rows[i].name, rows[i].process_time) < 0) return false;
    int32_t last = -1;
    for (int64_t i = 0; i < n; i++) { /* forward */
        const WlRowSpec *r = &rows[i];
        WlRow *row = &w->rows[first_row + i];
        int32_t rid = first_row + (int32_t)i;
        if (r->has_comp[WL_PHASE_FWD]) {
            if ((last = add_comp(w, r, WL_PHASE_FWD, rid, last)) < 0) return false;
            row->comp[WL_PHASE_FWD] = last;
        }
        if (r->coll[WL_PHASE_FWD] != TS_COLL_NONE) {
            if ((last = add_comm(w, r, WL_PHASE_FWD, rid, last)) < 0) return false;
            row->comm[WL_PHASE_FWD] = last;
        }
    }
    for (int64_t i = n - 1; i >= 0; i--) { /* backward */
        const WlRowSpec *r = &rows[i];
        WlRow *row = &w->rows[first_row + i];
        int32_t rid = first_row + (int32_t)i;
        for (int ph = WL_PHASE_IG; ph <= WL_PHASE_WG; ph++) {
            if (r->has_comp[ph]) {
                if ((last = add_comp(w, r, ph, rid, last)) < 0) return false;
                row->comp[ph] = last;
            }
            if (r->coll[ph] != TS_COLL_NONE) {
                int32_t c = add_comm(w, r, ph, rid, last);
                if (c < 0) return false;
                row->comm[ph] = c;
                /* blocking unless async (wg collectives overlap what follows) */
                if (ph == WL_PHASE_IG && !(r->flags[ph] & WL_F_ASYNC)) last = c;
            }
        }
    }
    return true;
}

static void fill_slot(const Workload *w, WlRowSpec *s, int ph, int32_t comp, int32_t comm)
{
    if (comp >= 0) {
        s->has_comp[ph] = true;
        s->comp_s[ph] = w->tasks[comp].duration_s;
    }
    if (comm >= 0) {
        const WlTask *t = &w->tasks[comm];
        s->coll[ph] = t->coll;
        s->group[ph] = t->group;
        s->flags[ph] = t->flags;
        s->bytes[ph] = t->comm_bytes;
    }
}

int64_t wl_rows_collect(const Workload *w, WlRowSpec **out)
{
    *out = NULL;
    if (w->n_classes == 0) return 0;
    const WlClass *c = &w->classes[0];
    int64_t n = c->n_rows ? c->n_rows : c->n_tasks;
    WlRowSpec *rs = calloc((size_t)(n ? n : 1), sizeof *rs);
    if (!rs) return -1;
    if (c->n_rows) {
        for (int64_t i = 0; i < n; i++) {
            const WlRow *r = &w->rows[c->first_row + i];
            rs[i].name = r->name;
            rs[i].process_time = r->process_time;
            for (int ph = 0; ph < 3; ph++) fill_slot(w, &rs[i], ph, r->comp[ph], r->comm[ph]);
        }
    } else {
        for (int64_t i = 0; i < n; i++) {
            const WlTask *t = &w->tasks[c->first_task + i];
            int ph = t->phase == WL_PHASE_OPT ? WL_PHASE_WG : (int)t->phase;
            rs[i].name = t->name;
            rs[i].process_time = 100;
            int32_t id = c->first_task + (int32_t)i;
            if (t->kind == WL_KIND_COMP) fill_slot(w, &rs[i], ph, id, -1);
            else if (t->kind == WL_KIND_COLL) fill_slot(w, &rs[i], ph, -1, id);
        }
    }
    *out = rs;
    return n;
}

/* ---- tokenizer -------------------------------------------------------------------- */
TsStatus wl_check_text(const char *name, const char *text, size_t len, TsError *err)
{
    int line = 1, col = 1;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)text[i];
        if (c == '\n') {
            line++;
            col = 1;
            continue;
        }
        if (c == 0 || (c < 0x20 && c != '\t' && c != '\r' && c != '\f' && c != '\v') || c == 0x7f) {
            ts_err(err, TS_ERR_INPUT, "binary data (byte 0x%02x) in a text workload", c);
            ts_err_at(err, name, line, col, NULL);
            ts_err_hint(err, "SimAI/ASTRA-sim workloads and op tables are text; Chakra traces (.et) "
                             "are read with --check-chakra");
            return TS_ERR_INPUT;
        }
        col++;
    }
    return TS_OK;
}

bool wl_lines_next(WlLines *L)
{
    if (L->pos >= L->len) return false;
    const char *p = L->text + L->pos;
    const char *nl = memchr(p, '\n', L->len - L->pos);
    size_t n = nl ? (size_t)(nl - p) : L->len - L->pos;
    L->pos += n + (nl ? 1 : 0);
    if (n && p[n - 1] == '\r') n--;
    L->cur = p;
    L->cur_len = n;
    L->line++;
    return true;
}

TsStatus wl_lines_check_len(WlLines *L, TsError *err)
{
    if (L->cur_len <= WL_MAX_LINE_BYTES) return TS_OK;
    ts_err(err, TS_ERR_INPUT, "line is longer than %d bytes", WL_MAX_LINE_BYTES);
    ts_err_at(err, L->name, L->line, 1, NULL);
    ts_err_hint(err, "workload lines hold 12 short fields; is this the right file?");
    return TS_ERR_INPUT;
}

static bool blank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v'; }

int wl_tokenize(const WlLines *L, WlTok *toks, int cap)
{
    int n = 0;
    size_t i = 0;
    while (i < L->cur_len) {
        while (i < L->cur_len && blank(L->cur[i])) i++;
        if (i >= L->cur_len) break;
        size_t s = i;
        while (i < L->cur_len && !blank(L->cur[i])) i++;
        if (n < cap) toks[n] = (WlTok){L->cur + s, (int)(i - s), (int)s + 1};
        n++;
    }
    return n;
}

TsStatus wl_err_tok(const WlLines *L, const WlTok *tok, TsError *err, const char *fmt, ...)
{
    if (!err) return TS_ERR_INPUT;
    err->code = TS_ERR_INPUT;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    ts_err_at(err, L->name, L->line, tok ? tok->col : 1, L->text);
    return TS_ERR_INPUT;
}

bool wl_tok_eq(const WlTok *t, const char *s)
{
    return (size_t)t->len == strlen(s) && memcmp(t->s, s, (size_t)t->len) == 0;
}

const char *wl_tok_str(const WlTok *t, char *buf, size_t cap)
{
    size_t n = (size_t)t->len < cap - 1 ? (size_t)t->len : cap - 1;
    memcpy(buf, t->s, n);
    buf[n] = '\0';
    return buf;
}

bool wl_tok_f64(const WlTok *t, double *out)
{
    char buf[64];
    if (t->len >= (int)sizeof buf) return false;
    wl_tok_str(t, buf, sizeof buf);
    if (!ts_parse_f64(buf, out)) return false;
    return isfinite(*out);
}

bool wl_tok_i64(const WlTok *t, int64_t *out)
{
    char buf[64];
    if (t->len >= (int)sizeof buf) return false;
    return ts_parse_i64(wl_tok_str(t, buf, sizeof buf), out);
}

/* Python repr: shortest digits that round-trip; fixed notation when
 * -4 <= exponent < 16 (always with a '.'), else d.ddde[+-]XX. */
void wl_fmt_pyfloat(TsBuf *b, double v)
{
    if (v == 0) {
        ts_buf_puts(b, signbit(v) ? "-0.0" : "0.0");
        return;
    }
    char e[40];
    int p;
    for (p = 1; p <= 17; p++) {
        snprintf(e, sizeof e, "%.*e", p - 1, v);
        if (strtod(e, NULL) == v) break;
    }
    /* e = [-]d[.ddd]e[+-]XX */
    const char *s = e;
    bool neg = (*s == '-');
    if (neg) s++;
    char digits[32];
    int nd = 0;
    for (; *s && *s != 'e'; s++)
        if (*s != '.') digits[nd++] = *s;
    digits[nd] = '\0';
    int exp = atoi(s + 1);
    if (neg) ts_buf_puts(b, "-");
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            ts_buf_puts(b, "0.");
            for (int i = 0; i < -exp - 1; i++) ts_buf_puts(b, "0");
            ts_buf_puts(b, digits);
        } else if (nd <= exp + 1) {
            ts_buf_puts(b, digits);
            for (int i = nd; i < exp + 1; i++) ts_buf_puts(b, "0");
            ts_buf_puts(b, ".0");
        } else {
            ts_buf_append(b, digits, (size_t)exp + 1);
            ts_buf_puts(b, ".");
            ts_buf_puts(b, digits + exp + 1);
        }
    } else {
        ts_buf_append(b, digits, 1);
        if (nd > 1) {
            ts_buf_puts(b, ".");
            ts_buf_puts(b, digits + 1);
        }
        ts_buf_printf(b, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
}

const char *wl_coll_upper(TsColl c)
{
    switch (c) {
    case TS_COLL_ALLREDUCE: return "ALLREDUCE";
    case TS_COLL_ALLGATHER: return "ALLGATHER";
    case TS_COLL_REDUCESCATTER: return "REDUCESCATTER";
    case TS_COLL_ALLTOALL: return "ALLTOALL";
    case TS_COLL_BROADCAST: return "BROADCAST";
    case TS_COLL_SENDRECV: return "SENDRECV";
    default: return "NONE";
    }
}

bool wl_comm_type_parse(const WlTok *t, int ph, bool sendrecv, TsColl *c, WlGroup *g, uint32_t *flags)
{
    char buf[48];
    *flags = 0;
    *c = TS_COLL_NONE;
    *g = ph == WL_PHASE_WG ? WL_GROUP_DP : WL_GROUP_TP;
    if (t->len >= (int)sizeof buf) return false;
    wl_tok_str(t, buf, sizeof buf);
    if (strcmp(buf, "NONE") == 0 || strcmp(buf, "None") == 0) return true;
    if (sendrecv && strcmp(buf, "SENDRECV") == 0) {
        *c = TS_COLL_SENDRECV;
        *g = WL_GROUP_PP;
        return true;
    }
    bool grp = true;
    if (ts_ends_with(buf, "_DP_EP")) {
        *g = WL_GROUP_DP_EP;
        buf[strlen(buf) - 6] = '\0';
    } else if (ts_ends_with(buf, "_EP")) {
        *g = WL_GROUP_EP;
        buf[strlen(buf) - 3] = '\0';
    } else {
        grp = false;
    }
    if (ts_ends_with(buf, "_ASYNC")) {
        *flags |= WL_F_ASYNC;
        if (!grp) *g = WL_GROUP_DP;
        buf[strlen(buf) - 6] = '\0';
    }
    if (strcmp(buf, "ALLREDUCEALLTOALL") == 0) { /* SimAI's, kept for round trips */
        *c = TS_COLL_ALLREDUCE;
        *flags |= WL_F_AR_A2A;
        return true;
    }
    /* the upper-case spelling of a collective (wl_coll_upper), but not the
     * two handled above */
    for (int i = 0; i < TS_COLL_COUNT; i++)
        if (i != TS_COLL_NONE && i != TS_COLL_SENDRECV && strcmp(buf, wl_coll_upper((TsColl)i)) == 0) {
            *c = (TsColl)i;
            return true;
        }
    return false;
}

void wl_comm_type_put(TsBuf *b, const WlRowSpec *r, int ph, unsigned what)
{
    TsColl c = r->coll[ph];
    if (c == TS_COLL_NONE || (c == TS_COLL_SENDRECV && !(what & WL_TOK_SENDRECV))) {
        ts_buf_puts(b, "NONE");
        return;
    }
    if (c == TS_COLL_SENDRECV) {
        ts_buf_puts(b, "SENDRECV");
        return;
    }
    WlGroup g = r->group[ph];
    ts_buf_puts(b, (r->flags[ph] & WL_F_AR_A2A) ? "ALLREDUCEALLTOALL" : wl_coll_upper(c));
    if ((what & WL_TOK_ASYNC) && (r->flags[ph] & WL_F_ASYNC)) ts_buf_puts(b, "_ASYNC");
    if ((what & WL_TOK_GROUPS) && g == WL_GROUP_EP) ts_buf_puts(b, "_EP");
    if ((what & WL_TOK_GROUPS) && g == WL_GROUP_DP_EP) ts_buf_puts(b, "_DP_EP");
}
