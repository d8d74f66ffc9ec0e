/*
 * runs_csv.c — reads a runs file (runs_csv.h).
 *
 * The CSV reader is written here rather than taken from a library: Debian's
 * one C CSV library (libcsv) hands its callbacks a field's bytes but not its
 * line and column, which every error message here points at.
 */
#include "runs_csv.h"

#include "trainsim/plan.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const RUNS_COLS[RUNS_NCOL] = {
    "id", "source", "model", "layers", "hidden", "heads", "kv_heads", "ffn", "vocab", "seq", "global_batch",
    "micro_batch", "tp", "pp", "vpp", "dp", "cp", "ep", "seq_parallel", "recompute", "dist_opt", "gpu",
    "num_gpus", "metric", "value", "notes", "dtype", "attention", "framework", "software", "flops"};

/* The columns that hold a count (empty: unstated). */
static const char *const COUNTS[] = {"layers", "hidden", "heads", "kv_heads", "ffn", "vocab",
                                     "seq",    "global_batch", "micro_batch", "tp", "pp", "vpp",
                                     "dp",     "cp",  "ep", "num_gpus"};
static const char *const REQUIRED[] = {"id", "model", "gpu", "metric", "value"};

/* The values an enumerated column takes. */
static const struct {
    const char *col, *values;
} ENUMS[] = {
    {"metric", "tflops_per_gpu tokens_per_s_per_gpu iteration_s mem_activation_GiB mem_weights_grads_opt_GiB"},
    {"seq_parallel", "yes no"},
    {"dtype", "fp16 bf16 fp8"},
    {"attention", "flash unfused"},
    {"framework", "megatron torchtitan deepspeed megatron-lm megatron-core mcore nemo megatron-bridge "
                  "megatron-deepspeed fsdp2"},
    {"software", "2024 2025"},
    {"flops", "full causal n21"},
};

enum { MAXFIELD = 64, MAX_FILE_BYTES = 64 << 20 };
#define MAX_COUNT 1000000000LL

typedef struct Field {
    char *s;
    int line, col;   /* 1-based, where the field starts */
    const char *bol; /* the start of that line in the file */
} Field;

typedef struct Record {
    Field f[MAXFIELD];
    int n;
    const char *text; /* the record's first line in the file */
} Record;

typedef struct Reader {
    const char *path, *p, *end, *bol; /* bol: the current line's start */
    int line;
} Reader;

int runs_col(const char *name)
{
    for (int i = 0; i < RUNS_NCOL; i++)
        if (strcmp(RUNS_COLS[i], name) == 0) return i;
    return -1;
}

/* file:line:col: error: MSG, the line that starts at text, a caret under
 * col, then "hint: HINT". */
static void report(const char *path, int line, int col, const char *text, const char *end, const char *hint,
                   const char *fmt, ...)
{
    fprintf(stderr, "%s:%d:%d: error: ", path, line, col);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    if (text) {
        size_t len = 0;
        while (text + len < end && text[len] != '\n' && text[len] != '\r') len++;
        fprintf(stderr, "%.*s\n%*s^\n", (int)len, text, col - 1, "");
    }
    if (hint) fprintf(stderr, "hint: %s\n", hint);
}

static void record_free(Record *r)
{
    for (int i = 0; i < r->n; i++) free(r->f[i].s);
    r->n = 0;
}

/* Appends c to the growing string *s (length *len, capacity *cap). */
static bool put(char **s, size_t *len, size_t *cap, char c)
{
    if (*len + 1 >= *cap) {
        size_t nc = *cap ? 2 * *cap : 32;
        char *ns = realloc(*s, nc);
        if (!ns) return false;
        *s = ns, *cap = nc;
    }
    (*s)[(*len)++] = c;
    (*s)[*len] = 0;
    return true;
}

/* One field at rd->p into f (quoted or not); the reader stops on the
 * character after it. false: reported. */
static bool read_field(Reader *rd, Field *f)
{
    size_t len = 0, cap = 32;
    f->line = rd->line, f->col = (int)(rd->p - rd->bol) + 1, f->bol = rd->bol;
    bool ok = (f->s = calloc(1, cap)) != NULL;
    if (ok && rd->p < rd->end && *rd->p == '"') {
        rd->p++;
        for (;;) {
            if (rd->p == rd->end) {
                report(rd->path, f->line, f->col, f->bol, rd->end,
                       "close the quoted field with '\"' (a quote inside it is written twice: \"\")",
                       "a quoted field has no closing quote");
                return false;
            }
            char c = *rd->p++;
            if (c == '"') {
                if (rd->p < rd->end && *rd->p == '"') rd->p++;
                else break;
            } else if (c == '\n') {
                rd->line++, rd->bol = rd->p;
            }
            if (!(ok = put(&f->s, &len, &cap, c))) break;
        }
        if (ok && rd->p < rd->end && *rd->p != ',' && *rd->p != '\n' && *rd->p != '\r') {
            report(rd->path, rd->line, (int)(rd->p - rd->bol) + 1, rd->bol, rd->end,
                   "a quote inside a quoted field is written twice (\"\")", "text after the closing quote of a field");
            return false;
        }
    } else {
        while (ok && rd->p < rd->end && *rd->p != ',' && *rd->p != '\n' && *rd->p != '\r')
            ok = put(&f->s, &len, &cap, *rd->p++);
    }
    if (!ok) report(rd->path, f->line, f->col, NULL, NULL, NULL, "out of memory");
    return ok;
}

/* The next record into r: 1, 0 at the end of the file, -1 reported. Blank
 * lines between records are skipped. */
static int read_record(Reader *rd, Record *r)
{
    r->n = 0;
    while (rd->p < rd->end && (*rd->p == '\n' || *rd->p == '\r')) {
        if (*rd->p++ == '\n') rd->line++, rd->bol = rd->p;
    }
    if (rd->p == rd->end) return 0;
    r->text = rd->bol;
    for (;;) {
        if (r->n == MAXFIELD) {
            report(rd->path, rd->line, (int)(rd->p - rd->bol) + 1, rd->bol, rd->end,
                   "a runs file has the validation columns and a few more", "more than %d fields", MAXFIELD);
            record_free(r);
            return -1;
        }
        if (!read_field(rd, &r->f[r->n])) {
            free(r->f[r->n].s);
            record_free(r);
            return -1;
        }
        r->n++;
        if (rd->p < rd->end && *rd->p == ',') {
            rd->p++;
            continue;
        }
        if (rd->p < rd->end && *rd->p == '\r') rd->p++;
        if (rd->p < rd->end && *rd->p == '\n') rd->p++, rd->line++, rd->bol = rd->p;
        return 1;
    }
}

/* The file's bytes, NUL-terminated; NULL: reported (*rc set). */
static char *slurp(const char *path, size_t *size, int *rc)
{
    FILE *fp = fopen(path, "rb");
    if (!fp) {
        fprintf(stderr, "accuracy: cannot open %s: %s\nhint: give a CSV with the validation columns (see "
                        "docs/accuracy.md, \"Scoring your own runs\")\n", path, strerror(errno));
        *rc = 1;
        return NULL;
    }
    size_t cap = 1 << 16, len = 0;
    char *buf = malloc(cap + 1);
    for (;;) {
        if (!buf) break;
        len += fread(buf + len, 1, cap - len, fp);
        if (len < cap || cap >= MAX_FILE_BYTES) break;
        char *nb = realloc(buf, 2 * cap + 1);
        if (!nb) free(buf);
        buf = nb, cap *= 2;
    }
    bool err = ferror(fp) != 0, big = buf && len == cap && fgetc(fp) != EOF;
    fclose(fp);
    if (!buf || err || big) {
        if (big) fprintf(stderr, "%s:1:1: error: larger than %d MiB\nhint: split the runs into several files\n",
                         path, MAX_FILE_BYTES >> 20);
        else fprintf(stderr, "accuracy: cannot read %s: %s\n", path, err ? strerror(errno) : "out of memory");
        free(buf);
        *rc = big ? 3 : 1;
        return NULL;
    }
    buf[len] = 0;
    const char *nul = memchr(buf, 0, len);
    if (nul) {
        int line = 1;
        const char *bol = buf;
        for (const char *q = buf; q < nul; q++)
            if (*q == '\n') line++, bol = q + 1;
        fprintf(stderr, "%s:%d:%d: error: a NUL byte\nhint: a runs file is text (CSV)\n", path, line,
                (int)(nul - bol) + 1);
        free(buf);
        *rc = 3;
        return NULL;
    }
    *size = len;
    return buf;
}

/* Is s one of the space-separated words of list? */
static bool one_of(const char *s, const char *list)
{
    size_t len = strlen(s);
    for (const char *w = list; *w;) {
        size_t wl = strcspn(w, " ");
        if (wl == len && strncmp(w, s, len) == 0) return true;
        w += wl;
        while (*w == ' ') w++;
    }
    return false;
}

/* The word s starts with, up to '(', ':', ' ' or its end, is one of list. */
static bool starts_one_of(const char *s, const char *list)
{
    char word[32];
    size_t wl = strcspn(s, "(: ");
    if (wl >= sizeof word) return false;
    memcpy(word, s, wl);
    word[wl] = 0;
    return one_of(word, list);
}

bool runs_rc_modules(const char *cell, uint32_t *mods)
{
    uint32_t m = 0;
    if (mods) *mods = 0;
    if (strncmp(cell, "selective(", 10)) return true;
    const char *open = cell + 9, *close = strrchr(cell, ')');
    if (close != cell + strlen(cell) - 1) return false;
    char in[96];
    size_t n = (size_t)(close - open - 1);
    if (n == 0 || n >= sizeof in) return false;
    memcpy(in, open + 1, n);
    in[n] = 0;
    const char *bad;
    size_t bad_len;
    if (strcmp(in, "op") && !plan_rc_modules_parse(in, &m, &bad, &bad_len)) return false;
    if (mods) *mods = m;
    return true;
}

static bool is_count(const char *s)
{
    if (!*s || strspn(s, "0123456789") != strlen(s) || strlen(s) > 10) return false;
    long long v = strtoll(s, NULL, 10);
    return v >= 1 && v <= MAX_COUNT;
}

static bool is_positive(const char *s)
{
    char *e;
    errno = 0;
    double v = strtod(s, &e);
    return *s && !*e && errno == 0 && isfinite(v) && v > 0;
}

/* The first bad cell of a data record, by column: fld[c] the field of
 * column c, NULL where the file has no such column. Reported: true. */
static bool bad_cell(const Reader *rd, const Field *const fld[RUNS_NCOL])
{
    char hint[512];
    for (size_t i = 0; i < sizeof REQUIRED / sizeof REQUIRED[0]; i++) {
        const Field *f = fld[runs_col(REQUIRED[i])];
        if (f->s[0]) continue;
        report(rd->path, f->line, f->col, f->bol, rd->end,
               "every run names its id, model, gpu, metric and value", "%s is empty", REQUIRED[i]);
        return true;
    }
    for (size_t i = 0; i < sizeof COUNTS / sizeof COUNTS[0]; i++) {
        const Field *f = fld[runs_col(COUNTS[i])];
        if (!f || !f->s[0] || is_count(f->s)) continue;
        snprintf(hint, sizeof hint, "%s is a whole number from 1 to %lld, or empty where the source does not "
                 "state it", COUNTS[i], MAX_COUNT);
        report(rd->path, f->line, f->col, f->bol, rd->end, hint, "%s '%s' is not a count", COUNTS[i], f->s);
        return true;
    }
    const Field *v = fld[runs_col("value")];
    if (!is_positive(v->s)) {
        report(rd->path, v->line, v->col, v->bol, rd->end,
               "value is the published figure of the row's metric, a number above 0 (e.g. 9500 or 1.5e3)",
               "value '%s' is not a positive number", v->s);
        return true;
    }
    for (size_t e = 0; e < sizeof ENUMS / sizeof ENUMS[0]; e++) {
        const Field *f = fld[runs_col(ENUMS[e].col)];
        if (!f || !f->s[0] || one_of(f->s, ENUMS[e].values)) continue;
        snprintf(hint, sizeof hint, "%s is one of: %s", ENUMS[e].col, ENUMS[e].values);
        report(rd->path, f->line, f->col, f->bol, rd->end, hint, "%s '%s' is not known", ENUMS[e].col, f->s);
        return true;
    }
    const Field *rc = fld[runs_col("recompute")], *dopt = fld[runs_col("dist_opt")];
    if (rc->s[0] && (!starts_one_of(rc->s, "none selective full") || !runs_rc_modules(rc->s, NULL))) {
        report(rd->path, rc->line, rc->col, rc->bol, rd->end,
               "recompute is none, selective, selective(op) (PyTorch's op-level SAC), selective(MODULES) "
               "(Megatron-Core's recompute_modules: core_attn, layernorm, moe_act, mla_up_proj, comma-separated), "
               "full or full:N (N layers per chunk)", "recompute '%s' is not known", rc->s);
        return true;
    }
    bool fsdp = starts_one_of(dopt->s, "fsdp"), staged = strstr(dopt->s, "zero2") || strstr(dopt->s, "zero3");
    if (dopt->s[0] && !((fsdp && staged) || starts_one_of(dopt->s, "none distopt zero1 zero2 zero3"))) {
        report(rd->path, dopt->line, dopt->col, dopt->bol, rd->end,
               "dist_opt is none, distopt (Megatron's distributed optimizer), zero1, zero2, zero3, or fsdp(zero2) / "
               "fsdp(zero3) (PyTorch FSDP's SHARD_GRAD_OP / FULL_SHARD)", "dist_opt '%s' is not known", dopt->s);
        return true;
    }
    return false;
}

/* The header record: map[c] the header field of column c, -1 if absent.
 * false: reported. */
static bool read_header(const Reader *rd, const Record *h, int map[RUNS_NCOL])
{
    for (int c = 0; c < RUNS_NCOL; c++) {
        map[c] = -1;
        for (int i = 0; i < h->n; i++) {
            if (strcmp(h->f[i].s, RUNS_COLS[c])) continue;
            if (map[c] >= 0) {
                report(rd->path, h->f[i].line, h->f[i].col, h->f[i].bol, rd->end, "name each column once",
                       "column '%s' appears twice", RUNS_COLS[c]);
                return false;
            }
            map[c] = i;
        }
        if (map[c] >= 0 || c >= RUNS_NREQ) continue;
        char hint[1024] = "a runs file has the columns of validation/calibration_runs.csv:";
        for (int k = 0; k < RUNS_NREQ; k++) strcat(strcat(hint, k ? "," : " "), RUNS_COLS[k]);
        strcat(hint, "; optional:");
        for (int k = RUNS_NREQ; k < RUNS_NCOL; k++) strcat(strcat(hint, " "), RUNS_COLS[k]);
        report(rd->path, h->f[0].line, 1, h->text, rd->end, hint, "no column '%s'", RUNS_COLS[c]);
        return false;
    }
    return true;
}

/* The data records into rows; false: reported (rows[0 .. *n) kept for the
 * caller to free). */
static bool read_rows(Reader *rd, const Record *h, const int map[RUNS_NCOL], RunRow *rows, int *n)
{
    static Record r;
    int got;
    while ((got = read_record(rd, &r)) == 1) {
        bool ok = false;
        if (r.n != h->n) {
            report(rd->path, r.f[0].line, 1, r.text, rd->end, "quote fields that contain commas (\"...\")",
                   "%d fields, the header has %d", r.n, h->n);
        } else if (*n == RUNS_MAXROW) {
            report(rd->path, r.f[0].line, 1, r.text, rd->end, "split the runs into several files",
                   "more than %d runs", RUNS_MAXROW);
        } else {
            const Field *fld[RUNS_NCOL];
            for (int c = 0; c < RUNS_NCOL; c++) fld[c] = map[c] < 0 ? NULL : &r.f[map[c]];
            ok = !bad_cell(rd, fld);
        }
        if (!ok) {
            record_free(&r);
            return false;
        }
        RunRow *row = &rows[(*n)++];
        for (int c = 0; c < RUNS_NCOL; c++) {
            row->f[c] = map[c] < 0 ? calloc(1, 1) : r.f[map[c]].s;
            if (map[c] >= 0) r.f[map[c]].s = NULL;
        }
        record_free(&r);
        for (int c = 0; c < RUNS_NCOL; c++)
            if (!row->f[c]) {
                report(rd->path, rd->line, 1, NULL, NULL, NULL, "out of memory");
                return false;
            }
    }
    return got == 0;
}

int runs_load(const char *path, RunRow *rows, int *n)
{
    int rc = 0;
    size_t size = 0;
    *n = 0;
    char *buf = slurp(path, &size, &rc);
    if (!buf) return rc;
    Reader rd = {.path = path, .p = buf, .end = buf + size, .bol = buf, .line = 1};
    static Record h;
    int map[RUNS_NCOL];
    int got = read_record(&rd, &h);
    if (got == 0) fprintf(stderr, "%s:1:1: error: empty file\nhint: the first line names the columns: id,source,"
                                  "model,...\n", path);
    bool ok = got == 1 && read_header(&rd, &h, map) && read_rows(&rd, &h, map, rows, n);
    if (ok && *n == 0) {
        report(path, rd.line, 1, NULL, NULL, "add one run per line after the header (tests/accuracy/runs_user.csv "
               "is an example)", "no runs after the header");
        ok = false;
    }
    record_free(&h);
    free(buf);
    if (ok) return 0;
    runs_free(rows, *n);
    *n = 0;
    return 3;
}

void runs_free(RunRow *rows, int n)
{
    for (int i = 0; i < n; i++)
        for (int c = 0; c < RUNS_NCOL; c++) free(rows[i].f[c]), rows[i].f[c] = NULL;
}

void runs_put_field(FILE *f, const char *s, bool last)
{
    if (strpbrk(s, ",\"\r\n")) {
        fputc('"', f);
        for (const char *c = s; *c; c++) {
            if (*c == '"') fputc('"', f);
            fputc(*c, f);
        }
        fputc('"', f);
    } else {
        fputs(s, f);
    }
    fputc(last ? '\n' : ',', f);
}
