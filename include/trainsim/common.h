/*
 * trainsim/common.h — the pieces every subsystem shares.
 *
 * What it models: nothing about training; it holds the plumbing.
 *   - TsArena: a bump allocator that owns a whole graph, partition or
 *     workload and is freed at once.
 *   - TsError: errors are values. A library call returns TS_OK or a
 *     TsStatus and fills a caller-supplied TsError with the position in the
 *     input (file, line, col), the offending source line, a message and a
 *     hint. The library never prints and never exits; only main() maps a
 *     status to an exit code (TS_ERR_* values ARE the exit codes).
 *   - TsBuf: a growable string buffer (heap, not arena) for text output.
 *   - Atomic file output: write to "<path>.tmp.<pid>" and rename when
 *     complete, so a failure never leaves a partial output file.
 *   - ts_data_dir: where presets live (env TRAINSIM_DATA, then the install
 *     prefix, then the build tree).
 *   - JSON output helpers (numbers and strings into a TsBuf).
 *
 * Ownership: a TsBuf owns its data (ts_buf_free); an arena owns everything
 * allocated from it (ts_arena_destroy); ts_read_file's text is the caller's
 * (free). Failure: calls that can fail return a TsStatus and fill the
 * caller's TsError (which may be NULL); TsBuf appends never fail loudly, they
 * set TsBuf.oom. The library's internals (the jansson readers, growth
 * helpers, the arena's failure injection) are in src/common/common_int.h.
 *
 * Units: none here. Counts are int64_t.
 *
 * Example:
 *     TsError err = {0};
 *     TsBuf b = {0};
 *     ts_buf_printf(&b, "%d layers\n", 12);
 *     if (ts_write_file_atomic("out.txt", b.data, b.len, &err) != TS_OK)
 *         ts_err_format(&err, stderr_buf);   // "out.txt: error: ..."
 *     ts_buf_free(&b);
 */
#ifndef TRAINSIM_COMMON_H
#define TRAINSIM_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TRAINSIM_VERSION "0.1.0"

/* Status codes double as process exit codes (see DESIGN.md, "Errors are values"). */
typedef enum {
    TS_OK = 0,
    TS_ERR_INTERNAL = 1, /* a bug or an allocation failure */
    TS_ERR_USAGE = 2,    /* bad command line */
    TS_ERR_INPUT = 3,    /* bad input file or value */
    TS_ERR_PLAN = 4      /* invalid plan, or the plan does not fit */
} TsStatus;

#define TS_ERR_MSG_MAX 512
#define TS_ERR_LINE_MAX 240

typedef struct TsError {
    TsStatus code;               /* TS_OK when no error */
    char file[256];              /* input file, "" when not about a file */
    int line;                    /* 1-based; 0 = no position */
    int col;                     /* 1-based; 0 = no column */
    char msg[TS_ERR_MSG_MAX];    /* "expected an integer for 'hidden_size'" */
    char hint[TS_ERR_MSG_MAX];   /* "hidden_size is the model width, e.g. 4096" */
    char src_line[TS_ERR_LINE_MAX]; /* the offending line of input, "" if none */
} TsError;

/* Set an error (printf-style message). Returns code, so callers can
 * `return ts_err(err, TS_ERR_INPUT, ...)`. err may be NULL. */
TsStatus ts_err(TsError *err, TsStatus code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Attach a position; src is the whole input text (or NULL) from which the
 * offending line is copied. */
void ts_err_at(TsError *err, const char *file, int line, int col, const char *src);
void ts_err_hint(TsError *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ts_err_clear(TsError *err);

/* ---- string buffer --------------------------------------------------------- */
typedef struct TsBuf {
    char *data; /* NUL-terminated; NULL until first append */
    size_t len;
    size_t cap;
    bool oom;   /* set when an allocation failed; further appends are no-ops */
} TsBuf;

void ts_buf_append(TsBuf *b, const char *s, size_t n);
void ts_buf_puts(TsBuf *b, const char *s);
void ts_buf_printf(TsBuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void ts_buf_free(TsBuf *b);
/* Render an error the way every tool prints it:
 *   file:line:col: error: msg
 *      <source line>
 *      ^
 *   hint: ...                                                               */
void ts_err_format(const TsError *err, TsBuf *out);

/* ---- arena ----------------------------------------------------------------- */
typedef struct TsArena TsArena;

/* Returns NULL on allocation failure. ts_arena_destroy(NULL) is a no-op. */
TsArena *ts_arena_create(size_t block_bytes);
void ts_arena_destroy(TsArena *a);
/* Zeroed, 16-byte aligned memory; NULL on failure (real or injected). */
void *ts_arena_alloc(TsArena *a, size_t bytes);
char *ts_arena_strdup(TsArena *a, const char *s);
char *ts_arena_printf(TsArena *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
size_t ts_arena_used_bytes(const TsArena *a);

/* ---- files ----------------------------------------------------------------- */
/* Read a whole file (NUL-terminated). Caller frees *out with free().
 * Files larger than max_bytes are rejected with TS_ERR_INPUT. */
TsStatus ts_read_file(const char *path, size_t max_bytes, char **out, size_t *len, TsError *err);
/* Write atomically: temp file in the same directory, fsync-free rename.
 * A missing directory is TS_ERR_USAGE with a clear message. */
TsStatus ts_write_file_atomic(const char *path, const void *data, size_t len, TsError *err);

/* Streaming atomic output for large files (Chakra traces, workloads). */
typedef struct TsOutFile {
    FILE *fp;
    char path[1024];
    char tmp[1100];
} TsOutFile;
TsStatus ts_out_open(TsOutFile *o, const char *path, TsError *err);
TsStatus ts_out_commit(TsOutFile *o, TsError *err); /* fclose + rename */
void ts_out_abort(TsOutFile *o);                    /* fclose + unlink tmp */

/* Directory holding models/, gpus/, clusters/. Never NULL. */
const char *ts_data_dir(void);
/* Resolve "<data>/<sub>/<name>.json" into out; returns false if missing. */
bool ts_data_path(const char *sub, const char *name, char *out, size_t cap);
/* The preset names in "<data>/<sub>" (its *.json files without the
 * extension), sorted; returns how many were written (at most cap). */
int ts_data_names(const char *sub, char names[][64], int cap);
/* Names in "<data>/<sub>" close to `name` (edit distance <= 3, or starting
 * with it when it has 3+ characters), nearest first, for "did you mean"
 * hints; returns how many (at most cap). */
int ts_data_similar(const char *sub, const char *name, char out[][64], int cap);
/* path names a regular file (not a directory). */
bool ts_is_file(const char *path);

/* ---- shared vocabularies ------------------------------------------------------ */
/* An enumeration is one X-macro list, X(NAME, "name", ...), the name string
 * second. Its header declares the enum from the list and
 *     const char *fn_name(E v);              "?" when v is out of range
 *     bool fn_parse(const char *s, E *out);  false (*out untouched) for an
 *                                            unknown name or NULL
 * and one .c file defines them with
 *     TS_ENUM_NAMES(fn, E, LIST, COUNT)      static fn_names[] and fn_name
 *     TS_ENUM_PARSE(fn, E, COUNT)            fn_parse over fn_names
 * (a parser that also takes aliases uses fn_names with ts_name_index).
 * TS_X_NAME(e, n, ...) expands to "n," for an entry of any length (the ~
 * keeps the variadic part of TS_X_NAME_ non-empty, as C11 asks). */
#define TS_X_NAME(e, ...) TS_X_NAME_(__VA_ARGS__, ~)
#define TS_X_NAME_(n, ...) n,
#define TS_ENUM_NAMES(fn, E, LIST, COUNT)                                                 \
    static const char *const fn##_names[] = {LIST(TS_X_NAME)};                            \
    _Static_assert(sizeof fn##_names / sizeof fn##_names[0] == (COUNT), #fn " names");    \
    const char *fn##_name(E v) { return (unsigned)v < (unsigned)(COUNT) ? fn##_names[v] : "?"; }
#define TS_ENUM_PARSE(fn, E, COUNT)                                                       \
    bool fn##_parse(const char *s, E *out)                                                \
    {                                                                                     \
        int i = ts_name_index(s, fn##_names, (COUNT));                                    \
        if (i >= 0) *out = (E)i;                                                          \
        return i >= 0;                                                                    \
    }

/* Numeric formats: X(NAME, "name", bytes per element). TF32 is a compute
 * mode on fp32 storage. */
#define TS_DTYPE_LIST(X) \
    X(FP32, "fp32", 4)   \
    X(TF32, "tf32", 4)   \
    X(BF16, "bf16", 2)   \
    X(FP16, "fp16", 2)   \
    X(FP8, "fp8", 1)
typedef enum {
#define X(e, n, b) TS_DTYPE_##e,
    TS_DTYPE_LIST(X)
#undef X
    TS_DTYPE_COUNT
} TsDtype;
const char *ts_dtype_name(TsDtype d);
/* Bytes per element (0 for an unknown value); inline: every kernel's costing asks. */
static inline int ts_dtype_bytes(TsDtype d)
{
    static const signed char bytes[] = {
#define X(e, n, b) b,
        TS_DTYPE_LIST(X)
#undef X
    };
    return (unsigned)d < TS_DTYPE_COUNT ? bytes[d] : 0;
}
bool ts_dtype_parse(const char *s, TsDtype *out);

/* Collective and point-to-point operations: X(NAME, "name", nccl-tests busbw
 * factor numerator kind). Sizes attached to them are always the whole
 * buffer in bytes (the gathered tensor for all-gather, the input of
 * reduce-scatter), as nccl-tests and SimAI define them. */
#define TS_COLL_LIST(X)                \
    X(NONE, "none")                    \
    X(ALLREDUCE, "allreduce")          \
    X(ALLGATHER, "allgather")          \
    X(REDUCESCATTER, "reducescatter")  \
    X(ALLTOALL, "alltoall")            \
    X(BROADCAST, "broadcast")          \
    X(SENDRECV, "sendrecv")
typedef enum {
#define X(e, n) TS_COLL_##e,
    TS_COLL_LIST(X)
#undef X
    TS_COLL_COUNT
} TsColl;
const char *ts_coll_name(TsColl c);
bool ts_coll_parse(const char *s, TsColl *out);

/* ---- small helpers ----------------------------------------------------------- */
int64_t ts_round_up(int64_t x, int64_t multiple);
/* ceil(a / b) for a >= 0; 0 when b <= 0. Inline: the GEMM model's tile counts
 * call it in every plan's costing. */
static inline int64_t ts_ceil_div(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }
bool ts_str_eq(const char *a, const char *b);
/* Index of s in names[0..n) (the name tables of the X-macro enums), -1 when
 * absent or s is NULL. */
int ts_name_index(const char *s, const char *const *names, int n);
bool ts_ends_with(const char *s, const char *suffix);
/* Levenshtein distance (insert, delete, substitute one byte) between a and b,
 * for "did you mean" hints; TS_EDIT_FAR when either is longer than 63 bytes. */
#define TS_EDIT_FAR 99
int ts_edit_distance(const char *a, const char *b);
/* FNV-1a, 64-bit (Fowler, Noll, Vo): start from TS_FNV_OFFSET and fold in
 * bytes (ts_fnv_bytes) or whole 64-bit words (ts_fnv_word). ts_fnv_mix is the
 * word step followed by h ^= h >> 29, which spreads the product's high bits
 * into the low bits that a table index (h % size) keeps. */
#define TS_FNV_OFFSET 1469598103934665603ull
#define TS_FNV_PRIME 1099511628211ull
static inline uint64_t ts_fnv_word(uint64_t h, uint64_t w) { return (h ^ w) * TS_FNV_PRIME; }
static inline uint64_t ts_fnv_mix(uint64_t h, uint64_t w)
{
    h = ts_fnv_word(h, w);
    return h ^ (h >> 29);
}
uint64_t ts_fnv_bytes(uint64_t h, const void *p, size_t n);
/* ts_fnv_mix over the whole 8-byte words of p[0..n) (native byte order; a
 * tail shorter than a word is left out). */
uint64_t ts_fnv_words(uint64_t h, const void *p, size_t n);
/* Strict parsers: whole string must be consumed. */
bool ts_parse_i64(const char *s, int64_t *out);
bool ts_parse_f64(const char *s, double *out);
/* A size in bytes: a decimal number ("64", "1.5", "2e9"), then, after at most
 * one space, an optional unit: k M G T P (powers of 1000) or Ki Mi Gi Ti Pi
 * (powers of 1024), each with or without a trailing B, or B alone; case does
 * not matter ("512k", "1.5GB", "64MiB", "1 gib"). A bare number counts `unit`
 * bytes (1, or 1e6 for an option given in MB). False, *out untouched, for
 * anything else or a result that is not finite; zero and negative sizes parse
 * (the caller checks the range). */
bool ts_parse_bytes(const char *s, double unit, double *out);

/* ---- JSON output ------------------------------------------------------------- */
/* Numbers formatted for machines: integers exactly, doubles with %.17g
 * trimmed to the shortest form that round-trips. */
void ts_json_fmt_double(TsBuf *b, double v);
void ts_json_escape(TsBuf *b, const char *s);

#endif
