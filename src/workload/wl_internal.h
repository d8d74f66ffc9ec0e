/* Shared between the workload format files; not a public header. */
#ifndef TRAINSIM_WL_INTERNAL_H
#define TRAINSIM_WL_INTERNAL_H

#include "trainsim/workload.h"
#include "trainsim/workload_io.h"

/* One row of a layer format before it becomes tasks. A slot with has_comp
 * false gets no compute task; coll NONE means no collective. */
typedef struct WlRowSpec {
    const char *name;
    bool has_comp[3];
    double comp_s[3];
    TsColl coll[3];
    WlGroup group[3];
    uint32_t flags[3];
    double bytes[3];
    int64_t process_time;
} WlRowSpec;

/* Turn rows into tasks with the SimAI execution order: forward over rows
 * 0..N-1 (compute, then a blocking collective), then backward N-1..0 (ig
 * compute, blocking ig collective, wg compute, non-blocking wg collective).
 * Rows and tasks go to the current class. Returns false on OOM. */
bool wl_rows_build(Workload *w, const WlRowSpec *rows, int64_t n);

/* Line-oriented tokenizer with positions. */
typedef struct WlTok {
    const char *s;  /* start in the source */
    int len;
    int col;        /* 1-based column */
} WlTok;

typedef struct WlLines {
    const char *name, *text;
    size_t len, pos;
    int line;        /* 1-based number of the line last returned */
    const char *cur; /* its start */
    size_t cur_len;
} WlLines;

/* Reject binary input: a NUL or control byte (other than tab, CR, LF, FF, VT)
 * gives a positioned error. */
TsStatus wl_check_text(const char *name, const char *text, size_t len, TsError *err);
/* Next line (without newline / CR); false at end. Errors on over-long lines
 * are reported by wl_lines_too_long. */
bool wl_lines_next(WlLines *L);
TsStatus wl_lines_check_len(WlLines *L, TsError *err);
/* Split the current line on blanks (space, tab, CR, FF, VT); returns the
 * token count (tokens beyond cap are counted but not stored). */
int wl_tokenize(const WlLines *L, WlTok *toks, int cap);
/* Error positioned at a token (or column 1 when tok is NULL). */
TsStatus wl_err_tok(const WlLines *L, const WlTok *tok, TsError *err, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
bool wl_tok_eq(const WlTok *t, const char *s);
/* Copy a token into buf (truncated), always NUL-terminated. */
const char *wl_tok_str(const WlTok *t, char *buf, size_t cap);
bool wl_tok_f64(const WlTok *t, double *out);
bool wl_tok_i64(const WlTok *t, int64_t *out);

/* Python repr() of a float ("0.0", "4.791370158793459e-09", "9.9808843806386"). */
void wl_fmt_pyfloat(TsBuf *b, double v);

/* Upper-case collective name for the text formats: "ALLREDUCE". */
const char *wl_coll_upper(TsColl c);

/* The comm-type token of the layer formats (SimAI and op tables share it):
 * BASE[_ASYNC][_EP|_DP_EP], BASE one of ALLREDUCE ALLGATHER REDUCESCATTER
 * ALLTOALL ALLREDUCEALLTOALL BROADCAST (and SENDRECV, group pp, where
 * sendrecv is true), or None/NONE. Without a group suffix the group is the
 * phase's (wg: dp, else tp), dp for _ASYNC (NeuSight's ALLREDUCE_ASYNC). */
bool wl_comm_type_parse(const WlTok *t, int ph, bool sendrecv, TsColl *c, WlGroup *g, uint32_t *flags);
/* Write the token of slot ph of r, what wl_comm_type_parse reads back to the
 * same collective, group and async flag, with the parts `what` asks for
 * (WL_TOK_*: ASTRA-sim has no group suffixes, SimAI no _ASYNC nor
 * SENDRECV). Groups other than tp, dp, ep, dp_ep and pp have no token and
 * read back as the phase's. */
enum { WL_TOK_GROUPS = 1, WL_TOK_ASYNC = 2, WL_TOK_SENDRECV = 4 };
void wl_comm_type_put(TsBuf *b, const WlRowSpec *r, int ph, unsigned what);

/* Rows of class 0 as specs (rows if present, else one per task). Returns the
 * count; *out is heap memory the caller frees. -1 on OOM. */
int64_t wl_rows_collect(const Workload *w, WlRowSpec **out);

#endif
