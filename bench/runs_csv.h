/*
 * runs_csv.h — a runs file: published training runs in the columns of
 * validation/calibration_runs.csv (validation/README.md), read by
 * build/accuracy --runs.
 *
 * A runs file is CSV (RFC 4180): the first record names the columns, in any
 * order; every column of RUNS_COLS[0 .. RUNS_NREQ) is required, the rest are
 * optional knobs, other columns are ignored. A field in double quotes may
 * hold commas, line breaks and doubled quotes. Each data record becomes a
 * RunRow whose f[c] is the field of column RUNS_COLS[c] ("" where the column
 * is absent or the cell empty: the source does not state it).
 *
 * Checked on loading, each failure a `file:line:col: error:` on stderr with
 * the line, a caret under the field and a hint:
 *   - the header is followed by at least one run;
 *   - the record has as many fields as the header;
 *   - id, model, gpu, metric and value are not empty;
 *   - counts (layers .. num_gpus) are empty or whole numbers 1 .. 10^9;
 *   - value is a positive number;
 *   - enumerated columns (metric, seq_parallel, dtype, attention, framework,
 *     software, flops) hold one of their values; recompute starts none, selective
 *     or full; dist_opt starts none, distopt, zero1..3 or fsdp(zeroN).
 *
 * runs_put_field writes the same format (build/accuracy --csv).
 *
 * Example: "id,model,...\nLAB-01,GPT-7B,..." gives one row with
 * f[runs_col("id")] = "LAB-01", in table LAB (the id up to its last '-').
 */
#ifndef TRAINSIM_BENCH_RUNS_CSV_H
#define TRAINSIM_BENCH_RUNS_CSV_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

enum {
    RUNS_NREQ = 26,    /* required columns, RUNS_COLS' first */
    RUNS_NCOL = 31,    /* all columns read */
    RUNS_MAXROW = 4096 /* data records per file */
};

extern const char *const RUNS_COLS[RUNS_NCOL];

/* One run: f[c] the cell of column RUNS_COLS[c], never NULL once loaded. */
typedef struct RunRow {
    char *f[RUNS_NCOL];
} RunRow;

/* The index of a column of RUNS_COLS, -1 if it is not one. */
int runs_col(const char *name);
/* A recompute cell's modules: selective(MODULES) gives Megatron-Core's
 * recompute_modules as PLAN_RC_* bits (core_attn, layernorm, moe_act,
 * mla_up_proj, comma-separated); any other cell, selective(op) included,
 * gives 0. False where the parentheses hold neither op nor such a list. */
bool runs_rc_modules(const char *cell, uint32_t *mods);

/* Read the runs file at path into rows[0 .. *n) (room for RUNS_MAXROW).
 * Returns 0; 1 when the file cannot be read; 3 when it is malformed (the
 * error, the line and a hint on stderr; *n = 0, nothing kept). On success
 * the caller owns the cells: runs_free(rows, *n). */
int runs_load(const char *path, RunRow *rows, int *n);
/* Frees the cells of rows[0 .. n); the rows themselves are the caller's. */
void runs_free(RunRow *rows, int n);

/* Writes one CSV field to f as RFC 4180 has it (quoted, quotes doubled,
 * where it holds a comma, a quote or a line break), then ',' or, when
 * last, a line end. */
void runs_put_field(FILE *f, const char *s, bool last);

#endif
