/* Calibration tables: measured kernel times ("trainsim-calibration" version 3,
 * versions 1 and 2 still read), written by tools/calibrate (and, for
 * attention, tools/measure/measure.py attention-calibration), read with
 * --calibration.
 *
 *   {"format": "trainsim-calibration", "version": 3, "gpu": "NVIDIA H100 80GB HBM3",
 *    "generator": "...", "notes": "...",
 *    "clock_mhz": {"median": 1755, "min": 1590, "max": 1980, "samples": 412},
 *    "attention_clock_mhz": 1980,
 *    "reference": {"dtype": "bf16", "m": 4096, "n": 4096, "k": 4096, "time_us": 196.0,
 *                  "seconds": 5, "clock_mhz": 1530},
 *    "gemm":      [{"dtype": "bf16", "batch": 1, "m": 4096, "n": 4096, "k": 4096, "time_us": 178.4,
 *                   "ref_us": 180.2}],
 *    "attention": [{"dtype": "bf16", "pass": "fwd", "batch": 4, "heads": 32, "sq": 4096,
 *                   "sk": 4096, "d": 128, "causal": true, "time_us": 950.0}],
 *    "memory":    [{"kernel": "copy", "bytes": 1048576, "time_us": 4.2},
 *                  {"kernel": "rmsnorm_fwd", "bytes": 2101248, "time_us": 5.1}]}
 *
 * GEMM, attention and copy entries correct the model by the ratio
 * measured/model at the nearest entries (inverse squared log-distance
 * weights, compute.c); an exact match returns the measurement. Named
 * memory kernels are looked up on their own (hw_calib_memory_kernel_s,
 * interpolated in log(bytes)). Version 1 has no "clock_mhz".
 *
 * Version 3's "reference" is one GEMM timed back to back for "seconds", so
 * at the GPU's sustained (power-capped) clock, and each GEMM entry's
 * "ref_us" is that reference timed alternately with the entry, so at the
 * entry's own clock. A grid of short GEMMs runs at clocks that wander
 * between the boost clock and the cap (an H100's: 1215-1980 MHz in one
 * run), which one median clock cannot undo; the ratio time_us / ref_us
 * does not depend on the clock both ran at, and time_us x reference
 * time_us / ref_us is the entry's time at the sustained clock. Such
 * entries are loaded that way (hw_calib_sustained). */
#include "hw_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Memory kernels a "memory" entry may name: X(enum suffix, JSON name). */
#define HW_MEM_KERNELS(X)                                                                  \
    X(COPY, "copy")                                                                        \
    X(LAYERNORM_FWD, "layernorm_fwd")                                                      \
    X(LAYERNORM_BWD, "layernorm_bwd")                                                      \
    X(RMSNORM_FWD, "rmsnorm_fwd")                                                          \
    X(RMSNORM_BWD, "rmsnorm_bwd")                                                          \
    X(GELU_FWD, "gelu_fwd")                                                                \
    X(GELU_BWD, "gelu_bwd")                                                                \
    X(SWIGLU_FWD, "swiglu_fwd")                                                            \
    X(SWIGLU_BWD, "swiglu_bwd")                                                            \
    X(ADD, "add")                                                                          \
    X(CAST, "cast")

typedef enum {
#define X(e, s) HW_MEMK_##e,
    HW_MEM_KERNELS(X)
#undef X
    HW_MEMK_COUNT
} HwMemKernel;

static const char *const MEMK_NAMES[] = {
#define X(e, s) s,
    HW_MEM_KERNELS(X)
#undef X
    NULL};
_Static_assert(sizeof MEMK_NAMES / sizeof *MEMK_NAMES == HW_MEMK_COUNT + 1, "one name per memory kernel");

typedef struct CalEntry {
    HwCalKind kind;
    TsDtype dt;
    HwMemKernel kernel; /* memory entries */
    double logd[HW_CAL_DIMS]; /* log2 of dims; causal flag as 0/8 */
    double dims[HW_CAL_DIMS];
    int n;
    double time_s;
} CalEntry;

struct HwCalib {
    char gpu[128];
    int64_t version;   /* 1 to 3 */
    double clock_mhz;  /* median SM clock while the GEMMs ran; 0 = not recorded */
    double clock_lo, clock_hi; /* the lowest and highest sampled */
    double attn_clock_mhz; /* median SM clock while the attention entries ran; 0 = clock_mhz */
    bool attn_flash;   /* the attention entries time SDPA's flash backend (FlashAttention-2) */
    double ref_s;      /* version 3: the reference GEMM's sustained time; 0 = none */
    int64_t ref_dims[3]; /* its m, n, k */
    TsDtype ref_dt;
    double ref8_s;     /* version 3: the fp8 reference's sustained time; 0 = none */
    int64_t ref8_dims[3];
    CalEntry *e;
    int n, cap;
};

static const char *const TOP_KEYS[] = {"format",    "version",   "gpu",
                                       "generator", "notes",     "clock_mhz",
                                       "gemm",      "attention", "attention_backend",
                                       "attention_clock_mhz",    "memory",
                                       "reference", "fp8_reference", NULL};
static const char *const CLOCK_KEYS[] = {"median", "min", "max", "samples", NULL};
static const char *const GEMM_KEYS[] = {"dtype", "batch", "m", "n", "k", "time_us", "ref_us", NULL};
static const char *const REF_KEYS[] = {"dtype", "m", "n", "k", "time_us", "seconds", "clock_mhz", NULL};
static const char *const ATTN_KEYS[] = {"dtype", "pass", "batch", "heads", "sq", "sk",
                                        "d", "causal", "time_us", NULL};
static const char *const MEM_KEYS[] = {"bytes", "time_us", "kernel", NULL};

static void set_logs(CalEntry *e)
{
    for (int i = 0; i < e->n; i++) e->logd[i] = log2(e->dims[i] > 0 ? e->dims[i] : 1);
    if (e->kind == HW_CAL_ATTN_FWD || e->kind == HW_CAL_ATTN_BWD) e->logd[5] = e->dims[5] * 8.0;
}

static TsStatus push(HwCalib *c, const CalEntry *e, TsError *err)
{
    if (c->n == c->cap) {
        int cap = c->cap ? c->cap * 2 : 64;
        CalEntry *p = realloc(c->e, (size_t)cap * sizeof *p);
        if (!p) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
        c->e = p;
        c->cap = cap;
    }
    c->e[c->n++] = *e;
    return TS_OK;
}

/* Typed field of array element `path` ("gemm[3]"). */
static TsStatus fint(const TsJsonDoc *doc, json_t *o, const char *path, const char *key, bool req,
                     int64_t *out, TsError *err)
{
    char p[160];
    snprintf(p, sizeof p, "%s.%s", path, key);
    TsStatus st = ts_json_int(doc, o, key, p, req, 1, (int64_t)1 << 50, out, err);
    if (st) hw_fix_pos(doc, st == TS_ERR_INPUT && !json_object_get(o, key) ? path : p, err);
    return st;
}

/* A positive number `key` of object `o` at `path` (0 when absent and not
 * required). */
static TsStatus fpos(const TsJsonDoc *doc, json_t *o, const char *path, const char *key, bool req,
                     const char *hint, double *out, TsError *err)
{
    char p[160];
    snprintf(p, sizeof p, "%s%s%s", path, path[0] ? "." : "", key);
    *out = 0;
    TsStatus st = ts_json_num(doc, o, key, p, req, 1e-6, 1e12, out, err);
    if (st) {
        hw_fix_pos(doc, json_object_get(o, key) || !path[0] ? p : path, err);
        if (json_object_get(o, key)) ts_err_hint(err, hint);
    }
    return st;
}

/* An entry's "time_us", in seconds. */
static TsStatus ftime(const TsJsonDoc *doc, json_t *o, const char *path, double *out, TsError *err)
{
    double v;
    TsStatus st = fpos(doc, o, path, "time_us", true, "a measured kernel time in microseconds, > 0", &v, err);
    if (!st) *out = v * 1e-6;
    return st;
}

static TsStatus fdtype(const TsJsonDoc *doc, json_t *o, const char *path, TsDtype *out, TsError *err)
{
    char p[160], s[32] = "bf16";
    snprintf(p, sizeof p, "%s.dtype", path);
    TsStatus st = ts_json_str(doc, o, "dtype", p, false, s, sizeof s, err);
    if (st) {
        hw_fix_pos(doc, p, err);
        return st;
    }
    if (!ts_dtype_parse(s, out)) {
        char msg[300];
        snprintf(msg, sizeof msg, "unknown dtype '%s' in '%s'", s, p);
        return hw_err_path(doc, p, err, msg, "one of fp32, tf32, bf16, fp16, fp8");
    }
    return TS_OK;
}

static TsStatus elem(const TsJsonDoc *doc, json_t *arr, const char *name, size_t i, char *path,
                     size_t cap, const char *const *keys, json_t **o, TsError *err)
{
    snprintf(path, cap, "%s[%zu]", name, i);
    *o = json_array_get(arr, i);
    if (!json_is_object(*o)) {
        char msg[200];
        snprintf(msg, sizeof msg, "'%s' must be an object", path);
        return hw_err_path(doc, path, err, msg, "each measurement is {\"...\": value, \"time_us\": t}");
    }
    return hw_check_keys(doc, *o, path, keys, err);
}

static json_t *array_of(const TsJsonDoc *doc, const char *key, TsStatus *st, TsError *err)
{
    json_t *a = json_object_get(doc->root, key);
    *st = TS_OK;
    if (a && !json_is_array(a)) {
        char msg[200];
        snprintf(msg, sizeof msg, "'%s' must be an array of measurements", key);
        *st = hw_err_path(doc, key, err, msg, "write [ {...}, {...} ]");
        return NULL;
    }
    return a;
}

/* A top-level field `key` of file version `since` and later, in a file of
 * an earlier version: its error. */
static TsStatus since_version(const TsJsonDoc *doc, const HwCalib *c, const char *key, int since, TsError *err)
{
    if (c->version >= since) return TS_OK;
    char msg[120], hint[120];
    snprintf(msg, sizeof msg, "'%s' is a version %d field", key, since);
    snprintf(hint, sizeof hint, "set \"version\": %d (what tools/calibrate writes)", since);
    return hw_err_path(doc, key, err, msg, hint);
}

/* The top-level object `key` of a version `since` field with the given keys
 * into *o; *o NULL when the file has none. */
static TsStatus top_object(const TsJsonDoc *doc, const HwCalib *c, const char *key, int since,
                           const char *const *keys, json_t **o, TsError *err)
{
    *o = NULL;
    if (!json_object_get(doc->root, key)) return TS_OK;
    TsStatus st = since_version(doc, c, key, since, err);
    if (st) return st;
    st = hw_json_obj(doc, doc->root, key, key, true, o, err);
    return st ? st : hw_check_keys(doc, *o, key, keys, err);
}

/* "clock_mhz": {"median", "min", "max", "samples"} (version 2). */
static TsStatus parse_clock(const TsJsonDoc *doc, HwCalib *c, TsError *err)
{
    json_t *o;
    TsStatus st = top_object(doc, c, "clock_mhz", 2, CLOCK_KEYS, &o, err);
    if (st || !o) return st;
    static const char *const names[3] = {"median", "min", "max"};
    double v[3];
    for (int i = 0; i < 3; i++) {
        char p[64];
        snprintf(p, sizeof p, "clock_mhz.%s", names[i]);
        if ((st = ts_json_num(doc, o, names[i], p, true, 1.0, 100000.0, &v[i], err))) {
            if (json_object_get(o, names[i])) ts_err_hint(err, "an SM clock in MHz, as NVML reports it");
            return st;
        }
    }
    int64_t samples;
    if ((st = ts_json_int(doc, o, "samples", "clock_mhz.samples", true, 1, (int64_t)1 << 40, &samples, err)))
        return st;
    if (!(v[1] <= v[0] && v[0] <= v[2])) {
        char msg[200];
        snprintf(msg, sizeof msg, "'clock_mhz' needs min <= median <= max, got min %g, median %g, max %g", v[1],
                 v[0], v[2]);
        return hw_err_path(doc, "clock_mhz.median", err, msg, "the median, lowest and highest sampled SM clock");
    }
    c->clock_mhz = v[0], c->clock_lo = v[1], c->clock_hi = v[2];
    return TS_OK;
}

/* "attention_clock_mhz": the median SM clock while the attention entries
 * ran (version 2; absent: "clock_mhz", the GEMMs'). */
static TsStatus parse_attn_clock(const TsJsonDoc *doc, HwCalib *c, TsError *err)
{
    if (!json_object_get(doc->root, "attention_clock_mhz")) return TS_OK;
    TsStatus st = since_version(doc, c, "attention_clock_mhz", 2, err);
    if (st) return st;
    st = ts_json_num(doc, doc->root, "attention_clock_mhz", "attention_clock_mhz", true, 1.0, 100000.0,
                              &c->attn_clock_mhz, err);
    if (st) ts_err_hint(err, "the median SM clock in MHz, as NVML reports it, while the attention entries ran");
    return st;
}

/* A reference GEMM `key` (version 3): its dtype, m, n, k and its time back
 * to back (the sustained clock) into *time_s. */
static TsStatus parse_ref_object(const TsJsonDoc *doc, HwCalib *c, const char *key, TsDtype *dt, int64_t d[3],
                                 double *time_s, TsError *err)
{
    json_t *o;
    TsStatus st = top_object(doc, c, key, 3, REF_KEYS, &o, err);
    if (st || !o) return st;
    double v;
    char p[64];
    snprintf(p, sizeof p, "%s.clock_mhz", key);
    if ((st = fdtype(doc, o, key, dt, err)) || (st = fint(doc, o, key, "m", true, &d[0], err)) ||
        (st = fint(doc, o, key, "n", true, &d[1], err)) || (st = fint(doc, o, key, "k", true, &d[2], err)) ||
        (st = fpos(doc, o, key, "seconds", false, "how long the reference ran back to back, in seconds", &v, err)) ||
        (st = fpos(doc, o, key, "time_us", true,
                   "the reference GEMM's time back to back (sustained clock), in microseconds", time_s, err)))
        return st;
    if ((st = ts_json_num(doc, o, "clock_mhz", p, false, 1.0, 100000.0, &v, err))) {
        ts_err_hint(err, "the median SM clock in MHz, as NVML reports it, while the reference ran back to back");
        return st;
    }
    *time_s *= 1e-6;
    return TS_OK;
}

/* "reference" (version 3): the GEMM every entry's "ref_us" times, and its
 * time back to back at the sustained clock. "fp8_reference" (optional, with
 * it): an fp8 GEMM the fp8 entries' "ref_us" time instead, since fp8 holds a
 * lower clock under the power cap than bf16 (tools/calibrate). */
static TsStatus parse_reference(const TsJsonDoc *doc, HwCalib *c, TsError *err)
{
    TsStatus st = parse_ref_object(doc, c, "reference", &c->ref_dt, c->ref_dims, &c->ref_s, err);
    if (st) return st;
    TsDtype dt = TS_DTYPE_FP8;
    if ((st = parse_ref_object(doc, c, "fp8_reference", &dt, c->ref8_dims, &c->ref8_s, err))) return st;
    if (!(c->ref8_s > 0)) return TS_OK;
    if (dt != TS_DTYPE_FP8)
        return hw_err_path(doc, "fp8_reference.dtype", err, "'fp8_reference.dtype' must be \"fp8\"",
                           "the fp8 entries' own reference GEMM; the bf16 one is \"reference\"");
    if (!(c->ref_s > 0))
        return hw_err_path(doc, "fp8_reference", err, "'fp8_reference' needs the file's \"reference\"",
                           "a version 3 file names the bf16 reference GEMM too (docs/hardware.md)");
    return TS_OK;
}

/* A GEMM entry's "ref_us": its time brought to the reference's sustained
 * clock (time x reference time / ref_us). Every entry of a file with a
 * "reference" has one; no entry of a file without. */
static TsStatus fref(const TsJsonDoc *doc, const HwCalib *c, json_t *o, const char *path, TsDtype dt,
                     double *time_s, TsError *err)
{
    /* an fp8 entry was timed beside the fp8 reference where the file has one */
    bool r8 = dt == TS_DTYPE_FP8 && c->ref8_s > 0;
    double ref_s = r8 ? c->ref8_s : c->ref_s;
    char p[160];
    snprintf(p, sizeof p, "%s.ref_us", path);
    bool has = json_object_get(o, "ref_us") != NULL;
    if (!has && !(c->ref_s > 0)) return TS_OK;
    if (has && !(c->ref_s > 0)) {
        char msg[200];
        snprintf(msg, sizeof msg, "'%s' needs the file's \"reference\"", p);
        return hw_err_path(doc, p, err, msg, "a version 3 file names the reference GEMM and its sustained time_us");
    }
    if (!has) {
        char msg[200];
        snprintf(msg, sizeof msg, "'%s' has no \"ref_us\"", path);
        return hw_err_path(doc, path, err, msg,
                           "a file with a \"reference\" times it beside every GEMM entry (docs/hardware.md)");
    }
    double r;
    TsStatus st = fpos(doc, o, path, "ref_us", true, "the reference GEMM's time beside this entry, in microseconds",
                       &r, err);
    if (st) return st;
    /* the same GEMM at two clocks of one GPU: its clock range (1215-1980
     * MHz on an H100) moves it by well under 2x */
    double f = ref_s / (r * 1e-6);
    if (!(f >= 0.5 && f <= 2.0)) {
        char msg[400];
        snprintf(msg, sizeof msg, "'%s' is %g us, %.3gx the %s's sustained time_us %g", p, r, 1 / f,
                 r8 ? "fp8_reference" : "reference", ref_s * 1e6);
        return hw_err_path(doc, p, err, msg,
                           "the reference GEMM timed beside this entry: within 2x of its time back to back");
    }
    *time_s *= f;
    return TS_OK;
}

/* A memory entry's "kernel" (absent = "copy"). */
static TsStatus fkernel(const TsJsonDoc *doc, json_t *o, const char *path, HwMemKernel *out, TsError *err)
{
    char p[160], s[48] = "copy";
    snprintf(p, sizeof p, "%s.kernel", path);
    TsStatus st = ts_json_str(doc, o, "kernel", p, false, s, sizeof s, err);
    if (st) {
        hw_fix_pos(doc, p, err);
        return st;
    }
    for (int i = 0; i < HW_MEMK_COUNT; i++)
        if (!strcmp(s, MEMK_NAMES[i])) {
            *out = (HwMemKernel)i;
            return TS_OK;
        }
    char msg[300], hint[400];
    snprintf(msg, sizeof msg, "unknown memory kernel '%s' in '%s'", s, p);
    const char *near = hw_nearest_name(s, MEMK_NAMES, 3);
    int n = 0;
    if (near) n = snprintf(hint, sizeof hint, "did you mean '%s'? ", near);
    n += snprintf(hint + n, sizeof hint - (size_t)n, "one of");
    for (int i = 0; i < HW_MEMK_COUNT && n > 0 && (size_t)n < sizeof hint; i++)
        n += snprintf(hint + n, sizeof hint - (size_t)n, "%s %s", i ? "," : "", MEMK_NAMES[i]);
    return hw_err_path(doc, p, err, msg, hint);
}

static TsStatus parse(const TsJsonDoc *doc, HwCalib *c, TsError *err)
{
    TsStatus st;
    /* the format first: another trainsim file (a GPU preset) is named as such */
    json_t *fmt = json_object_get(doc->root, "format");
    if (!fmt)
        return hw_err_path(doc, "", err, "missing required field 'format'",
                           "a calibration file starts {\"format\": \"trainsim-calibration\", \"version\": 1, ...}");
    if ((st = hw_check_format_version(doc, "trainsim-calibration", 3, &c->version, err))) return st;
    if ((st = hw_check_keys(doc, doc->root, "", TOP_KEYS, err))) return st;
    if ((st = ts_json_str(doc, doc->root, "gpu", "gpu", false, c->gpu, sizeof c->gpu, err))) return st;
    char text[8];
    if ((st = ts_json_str(doc, doc->root, "generator", "generator", false, text, sizeof text, err)) ||
        (st = ts_json_str(doc, doc->root, "notes", "notes", false, text, sizeof text, err)) ||
        (st = parse_clock(doc, c, err)) || (st = parse_attn_clock(doc, c, err)) ||
        (st = parse_reference(doc, c, err)))
        return st;
    char be[16] = "";
    if ((st = ts_json_str(doc, doc->root, "attention_backend", "attention_backend", false, be, sizeof be, err)))
        return st;
    if (be[0] && strcmp(be, "flash") && strcmp(be, "default"))
        return hw_err_path(doc, "attention_backend", err, "'attention_backend' is \"flash\" or \"default\"",
                           "the PyTorch SDPA backend the attention entries were timed on");
    c->attn_flash = !strcmp(be, "flash");
    char path[96];
    json_t *a, *o;
    if (!(a = array_of(doc, "gemm", &st, err)) && st) return st;
    for (size_t i = 0; a && i < json_array_size(a); i++) {
        if ((st = elem(doc, a, "gemm", i, path, sizeof path, GEMM_KEYS, &o, err))) return st;
        CalEntry e = {.kind = HW_CAL_GEMM, .n = 4};
        int64_t b = 1, m, n, k;
        if ((st = fdtype(doc, o, path, &e.dt, err)) || (st = fint(doc, o, path, "batch", false, &b, err)) ||
            (st = fint(doc, o, path, "m", true, &m, err)) || (st = fint(doc, o, path, "n", true, &n, err)) ||
            (st = fint(doc, o, path, "k", true, &k, err)) || (st = ftime(doc, o, path, &e.time_s, err)) ||
            (st = fref(doc, c, o, path, e.dt, &e.time_s, err)))
            return st;
        e.dims[0] = (double)b, e.dims[1] = (double)m, e.dims[2] = (double)n, e.dims[3] = (double)k;
        set_logs(&e);
        if ((st = push(c, &e, err))) return st;
    }
    if (!(a = array_of(doc, "attention", &st, err)) && st) return st;
    for (size_t i = 0; a && i < json_array_size(a); i++) {
        if ((st = elem(doc, a, "attention", i, path, sizeof path, ATTN_KEYS, &o, err))) return st;
        CalEntry e = {.kind = HW_CAL_ATTN_FWD, .n = 6};
        int64_t v[5] = {1, 0, 0, 0, 0};
        static const char *const names[5] = {"batch", "heads", "sq", "sk", "d"};
        if ((st = fdtype(doc, o, path, &e.dt, err))) return st;
        for (int j = 0; j < 5; j++)
            if ((st = fint(doc, o, path, names[j], j > 0, &v[j], err))) return st;
        char p[160], pass[16] = "fwd";
        snprintf(p, sizeof p, "%s.pass", path);
        if ((st = ts_json_str(doc, o, "pass", p, false, pass, sizeof pass, err))) {
            hw_fix_pos(doc, p, err);
            return st;
        }
        if (strcmp(pass, "fwd") && strcmp(pass, "bwd"))
            return hw_err_path(doc, p, err, "'pass' must be \"fwd\" or \"bwd\"", NULL);
        if (!strcmp(pass, "bwd")) e.kind = HW_CAL_ATTN_BWD;
        bool causal = false;
        snprintf(p, sizeof p, "%s.causal", path);
        if ((st = ts_json_bool(doc, o, "causal", p, false, &causal, err))) {
            hw_fix_pos(doc, p, err);
            return st;
        }
        if ((st = ftime(doc, o, path, &e.time_s, err))) return st;
        for (int j = 0; j < 5; j++) e.dims[j] = (double)v[j];
        e.dims[5] = causal ? 1.0 : 0.0;
        set_logs(&e);
        if ((st = push(c, &e, err))) return st;
    }
    if (!(a = array_of(doc, "memory", &st, err)) && st) return st;
    for (size_t i = 0; a && i < json_array_size(a); i++) {
        if ((st = elem(doc, a, "memory", i, path, sizeof path, MEM_KEYS, &o, err))) return st;
        CalEntry e = {.kind = HW_CAL_MEMORY, .n = 1, .dt = TS_DTYPE_BF16};
        int64_t bytes;
        if ((st = fkernel(doc, o, path, &e.kernel, err)) || (st = fint(doc, o, path, "bytes", true, &bytes, err)) ||
            (st = ftime(doc, o, path, &e.time_s, err)))
            return st;
        if (e.kernel != HW_MEMK_COPY) e.kind = HW_CAL_MEMKERNEL;
        e.dims[0] = (double)bytes;
        set_logs(&e);
        if ((st = push(c, &e, err))) return st;
    }
    if (c->n == 0)
        return hw_err_path(doc, "", err, "calibration file holds no measurements",
                           "give at least one entry in \"gemm\", \"attention\" or \"memory\"");
    return TS_OK;
}

static TsStatus load_doc(TsJsonDoc *doc, HwCalib **out, TsError *err)
{
    HwCalib *c = calloc(1, sizeof *c);
    if (!c) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    TsStatus st = parse(doc, c, err);
    if (st) {
        hw_calib_free(c);
        return st;
    }
    *out = c;
    return TS_OK;
}

TsStatus hw_calib_load(const char *path, HwCalib **out, TsError *err)
{
    *out = NULL;
    TsJsonDoc doc;
    TsStatus st = ts_json_load(&doc, path, err);
    if (!st) st = load_doc(&doc, out, err);
    ts_json_free(&doc);
    return st;
}

TsStatus hw_calib_load_text(const char *name, const char *text, HwCalib **out, TsError *err)
{
    *out = NULL;
    TsJsonDoc doc;
    TsStatus st = ts_json_load_text(&doc, name, text, err);
    if (!st) st = load_doc(&doc, out, err);
    ts_json_free(&doc);
    return st;
}

void hw_calib_free(HwCalib *c)
{
    if (!c) return;
    free(c->e);
    free(c);
}

int hw_calib_entries(const HwCalib *c) { return c ? c->n : 0; }
const char *hw_calib_gpu(const HwCalib *c) { return c ? c->gpu : ""; }
double hw_calib_clock_mhz(const HwCalib *c) { return c ? c->clock_mhz : 0; }
void hw_calib_clock_range(const HwCalib *c, double *lo, double *hi)
{
    *lo = c ? c->clock_lo : 0;
    *hi = c ? c->clock_hi : 0;
}
double hw_calib_attn_clock_mhz(const HwCalib *c)
{
    return !c ? 0 : c->attn_clock_mhz > 0 ? c->attn_clock_mhz : c->clock_mhz;
}
bool hw_calib_attn_flash(const HwCalib *c) { return c && c->attn_flash; }
bool hw_calib_sustained(const HwCalib *c) { return c && c->ref_s > 0; }
double hw_calib_reference(const HwCalib *c, int64_t dims[3], TsDtype *dt)
{
    if (!hw_calib_sustained(c)) return 0;
    if (dims) memcpy(dims, c->ref_dims, sizeof c->ref_dims);
    if (dt) *dt = c->ref_dt;
    return c->ref_s * 1e6;
}
double hw_calib_fp8_reference(const HwCalib *c, int64_t dims[3])
{
    if (!c || !(c->ref8_s > 0)) return 0;
    if (dims) memcpy(dims, c->ref8_dims, sizeof c->ref8_dims);
    return c->ref8_s * 1e6;
}

/* Piecewise power law through the kernel's measurements: log(time) linear in
 * log(bytes) between the two entries around `bytes`; below the smallest the
 * smallest time (launch-bound), above the largest its bandwidth. */
double hw_calib_memory_kernel_s(const HwCalib *c, const char *kernel, double bytes)
{
    if (!c || !kernel || !(bytes > 0)) return 0;
    int k = -1;
    for (int i = 0; i < HW_MEMK_COUNT; i++)
        if (!strcmp(kernel, MEMK_NAMES[i])) k = i;
    if (k < 0) return 0;
    const CalEntry *lo = NULL, *hi = NULL;
    for (int i = 0; i < c->n; i++) {
        const CalEntry *e = &c->e[i];
        if ((e->kind != HW_CAL_MEMORY && e->kind != HW_CAL_MEMKERNEL) || (int)e->kernel != k) continue;
        if (e->dims[0] <= bytes && (!lo || e->dims[0] > lo->dims[0])) lo = e;
        if (e->dims[0] >= bytes && (!hi || e->dims[0] < hi->dims[0])) hi = e;
    }
    if (!lo && !hi) return 0;
    if (!lo) return hi->time_s;
    if (!hi) return lo->time_s * bytes / lo->dims[0];
    if (hi->dims[0] == lo->dims[0]) return lo->time_s;
    double f = log(bytes / lo->dims[0]) / log(hi->dims[0] / lo->dims[0]);
    return exp(log(lo->time_s) + f * log(hi->time_s / lo->time_s));
}

int hw_calib_nearest(const HwCalib *c, HwCalKind kind, const double *dims, int n, TsDtype dt,
                     bool any_dtype, int *idx, double *d2)
{
    double q[HW_CAL_DIMS];
    for (int i = 0; i < n; i++) q[i] = log2(dims[i] > 0 ? dims[i] : 1);
    if (kind == HW_CAL_ATTN_FWD || kind == HW_CAL_ATTN_BWD) q[5] = dims[5] * 8.0;
    int k = 0;
    for (int i = 0; i < c->n; i++) {
        const CalEntry *e = &c->e[i];
        if (e->kind != kind || (!any_dtype && e->dt != dt)) continue;
        double d = 0;
        for (int j = 0; j < n; j++) d += (q[j] - e->logd[j]) * (q[j] - e->logd[j]);
        /* insertion into the sorted top-HW_CAL_NEAR list */
        int pos = k < HW_CAL_NEAR ? k : HW_CAL_NEAR;
        while (pos > 0 && d2[pos - 1] > d) {
            if (pos < HW_CAL_NEAR) {
                d2[pos] = d2[pos - 1];
                idx[pos] = idx[pos - 1];
            }
            pos--;
        }
        if (pos < HW_CAL_NEAR) {
            d2[pos] = d;
            idx[pos] = i;
            if (k < HW_CAL_NEAR) k++;
        }
    }
    return k;
}

HwCalKind hw_calib_entry_kind(const HwCalib *c, int i) { return c->e[i].kind; }

void hw_calib_entry(const HwCalib *c, int i, double *dims, TsDtype *dt, double *time_s)
{
    const CalEntry *e = &c->e[i];
    for (int j = 0; j < HW_CAL_DIMS; j++) dims[j] = e->dims[j];
    *dt = e->dt;
    *time_s = e->time_s;
}
