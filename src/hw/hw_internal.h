/* hw_internal.h — helpers shared by the hw sources (not public). */
#ifndef TRAINSIM_HW_INTERNAL_H
#define TRAINSIM_HW_INTERNAL_H

#include "trainsim/hw.h"
#include "../common/common_int.h"

#include <jansson.h>

/* Resolve a preset name in <data>/<sub>/ or accept a path to a file. On an
 * unknown name: TS_ERR_INPUT listing the presets of `sub`. */
TsStatus hw_resolve(const char *sub, const char *what, const char *name_or_path, char *path,
                    size_t cap, TsError *err);
/* Sorted preset names of the JSON files in <data>/<sub>/ (ts_data_names). */
int hw_list_names(const char *sub, char names[][64], int cap);
/* Reject keys of obj not in allowed (NULL-terminated), positioned, with a
 * "did you mean" hint. prefix is the dotted path of obj ("" at top). */
TsStatus hw_check_keys(const TsJsonDoc *doc, json_t *obj, const char *prefix,
                       const char *const *allowed, TsError *err);
/* Require "format": fmt and "version": 1 (positioned errors otherwise). */
TsStatus hw_check_format(const TsJsonDoc *doc, const char *fmt, TsError *err);
/* The same for formats with several versions: "version" from 1 to
 * max_version (absent = 1), returned in *version. */
TsStatus hw_check_format_version(const TsJsonDoc *doc, const char *fmt, int64_t max_version, int64_t *version,
                                 TsError *err);
/* The name in the NULL-terminated list `names` closest to s by edit
 * distance, or NULL when none is within max_distance (for "did you mean"). */
const char *hw_nearest_name(const char *s, const char *const *names, int max_distance);
/* Positioned error at a dotted path. */
TsStatus hw_err_path(const TsJsonDoc *doc, const char *path, TsError *err, const char *msg,
                     const char *hint);
/* Get an object member (must be an object when present); *out NULL if absent. */
TsStatus hw_json_obj(const TsJsonDoc *doc, json_t *obj, const char *key, const char *path,
                     bool required, json_t **out, TsError *err);

/* Locate a path with array indices ("gemm[3].m") in the source text: line and
 * column of the value (or of the deepest container found). */
void hw_locate(const TsJsonDoc *doc, const char *path, int *line, int *col);
/* Re-point an error produced by ts_json_* at `path` (which may hold array
 * indices that ts_json_locate cannot follow). */
void hw_fix_pos(const TsJsonDoc *doc, const char *path, TsError *err);

/* ---- GEMM model internals (compute.c, grouped.c) ---- */
/* The alignment factor of a GEMM's N and K (vectorized / TMA loads). */
double hw_align_factor(const GpuSpec *g, int64_t n, int64_t k, TsDtype dt);
/* The uncalibrated GEMM model (tiles, waves, split-K, stream-K, memory, launch). */
double hw_gemm_model(const GpuSpec *g, int64_t batch, int64_t M, int64_t N, int64_t K, TsDtype dt);
/* The same with the operands' second row length named: K (forward, input
 * gradient) or M (a weight gradient, whose K is the tokens). */
double hw_gemm_model_rows(const GpuSpec *g, int64_t batch, int64_t M, int64_t N, int64_t K, int64_t row2, TsDtype dt);

/* Attention-core time (attention.c): B x heads, query / key length, head
 * dim; the backward when `backward`; at the preset's clock, plus launch. */
double hw_attn_drop_model(const GpuSpec *g, int64_t B, int64_t heads, int64_t sq, int64_t sk, bool causal,
                          bool backward);
double hw_attn_model(const GpuSpec *g, int64_t B, int64_t heads, int64_t sq, int64_t sk, int64_t d, bool causal,
                     bool backward, TsDtype dt);

/* ---- calibration internals (calib.c <-> compute.c) ---- */
/* HW_CAL_MEMORY: the copy kernel, which corrects every memory-bound op;
 * HW_CAL_MEMKERNEL: a named kernel (rmsnorm_fwd, ...), read only through
 * hw_calib_memory_kernel_s. */
typedef enum { HW_CAL_GEMM, HW_CAL_ATTN_FWD, HW_CAL_ATTN_BWD, HW_CAL_MEMORY, HW_CAL_MEMKERNEL, HW_CAL_KINDS } HwCalKind;
#define HW_CAL_DIMS 6
#define HW_CAL_NEAR 4
/* Up to HW_CAL_NEAR entries of `kind` (and dtype unless any_dtype) nearest to
 * dims in log2 space; returns how many, fills indices and squared distances. */
int hw_calib_nearest(const HwCalib *c, HwCalKind kind, const double *dims, int n, TsDtype dt,
                     bool any_dtype, int *idx, double *d2);
/* Entry i: dims, dtype, measured seconds; its kind. */
void hw_calib_entry(const HwCalib *c, int i, double *dims, TsDtype *dt, double *time_s);
HwCalKind hw_calib_entry_kind(const HwCalib *c, int i);
/* Correct a model time with the calibration table (compute.c); where the
 * table answers, its time is multiplied by `scale` (the measuring clock over
 * the preset's, the flash-backend factor). */
double hw_calib_correct(const HwModel *m, HwCalKind kind, const double *dims, int n, TsDtype dt,
                        bool any_dtype, double scale, double model_t);

#endif
