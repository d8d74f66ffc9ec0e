/*
 * trainsim/workload_io.h — the workload formats as text: readers of SimAI/AICB
 * and ASTRA-sim 1.0 text, NeuSight-style op tables and our JSON into a
 * Workload (workload.h), and their writers. wl_read_file sniffs the format
 * (a Chakra set too: workload_chakra.h).
 *
 * Units: the formats' own at the edge (SimAI/ASTRA-sim ns ticks, op tables
 * ms and element counts); seconds, bytes and FLOPs in the Workload.
 *
 * Ownership: a Workload read is the caller's (wl_destroy); *out is NULL on
 * failure. Writers append text to the caller's TsBuf (TsBuf.oom on
 * allocation failure). Failure: readers return TS_ERR_INPUT positioned at
 * the line and column (or JSON path) of the offending value, within the
 * limits below; TS_ERR_INTERNAL on allocation failure.
 */
#ifndef TRAINSIM_WORKLOAD_IO_H
#define TRAINSIM_WORKLOAD_IO_H

#include "trainsim/common.h"
#include "trainsim/workload.h"

#define WL_JSON_VERSION 1          /* "trainsim-workload" JSON schema version */

/* Input limits of the text readers (documented in docs/workloads.md). */
#define WL_MAX_FILE_BYTES ((size_t)1 << 30) /* 1 GiB */
#define WL_MAX_LINE_BYTES 65536             /* one line, without its newline */
#define WL_MAX_ROWS 10000000                /* item lines / table rows */
/* Limits of the JSON reader (docs/workloads.md). */
#define WL_JSON_MAX_BYTES ((size_t)256 << 20) /* 256 MiB of JSON */
#define WL_JSON_MAX_CLASSES 65536           /* rank classes */
#define WL_JSON_MAX_TASKS 10000000          /* tasks, all classes together */
#define WL_JSON_MAX_DEPS 65536              /* data (or control) deps of one task */
#define WL_JSON_MAX_NAME 4096               /* bytes of a task or row name */

/* ---- readers ---------------------------------------------------------------- */
/* SimAI/AICB text (all header generations, MICRO) and ASTRA-sim 1.0 text are
 * one syntax; the reader accepts both and records origin/policy/header.
 * `name` is used in messages. Malformed input: TS_ERR_INPUT positioned at
 * line and column (of the field). The v1.0 header sets w->warning.
 * `text` must be NUL-terminated at text[len] (as ts_read_file returns it):
 * error messages copy the offending line up to the NUL. */
TsStatus wl_read_simai(const char *name, const char *text, size_t len, Workload **out, TsError *err);
TsStatus wl_read_optable(const char *name, const char *text, size_t len, Workload **out, TsError *err);
/* Our JSON ("trainsim-workload", WL_JSON_VERSION), as wl_write_json writes
 * it: every field checked (names, dependency ids earlier than their task,
 * sizes and times finite and >= 0, WL_JSON_MAX_* limits). Malformed input:
 * TS_ERR_INPUT at the line:col of the value, with its JSON path. The
 * workload keeps the origin/policy recorded in the file (origin NONE when
 * the file was generated), so conversions match those of the original.
 * `text` must be NUL-terminated at text[len]; a NUL before it is an error. */
TsStatus wl_read_json(const char *name, const char *text, size_t len, Workload **out, TsError *err);
/* Sniff the format: a Chakra set (a path PREFIX with PREFIX.0.et beside it,
 * or one of its PREFIX.<rank>.et files: wl_read_chakra), JSON, an op table
 * header, else SimAI text. */
TsStatus wl_read_file(const char *path, Workload **out, TsError *err);

/* ---- writers ---------------------------------------------------------------- */
typedef struct WlSimaiOptions {
    WlSimaiHeader header;   /* CURRENT (default when NONE), V1_1 (--aicb-compat 1.1), V1_0 */
} WlSimaiOptions;
/* Row formats use the rows of class 0 (or one row per task when there are
 * none). Text appended to out. */
void wl_write_simai(const Workload *w, const WlSimaiOptions *o, TsBuf *out);
void wl_write_astrasim(const Workload *w, TsBuf *out);
void wl_write_optable(const Workload *w, TsBuf *out);
void wl_write_json(const Workload *w, TsBuf *out);

#endif
