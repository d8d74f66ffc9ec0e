/* trainsim hw — list GPU and cluster presets, show one, validate calibration
 * and busbw files, and evaluate the cost models for one kernel or collective. */
#include "cli_hw.h"
#include "trainsim/report_hw.h"

#include <stdlib.h>
#include <string.h>

/* The GPU and cluster presets, one table each. Every preset is loaded first so
 * that the name columns are as wide as the longest name in them (a user's
 * preset may be named anything up to 63 bytes); a preset that fails to load is
 * listed by its file name with the reason. */
static void list_all(TsBuf *b)
{
    enum { CAP = 256 }; /* presets listed at most */
    char(*names)[64] = malloc(CAP * sizeof *names);
    char(*why)[TS_ERR_MSG_MAX] = malloc(CAP * sizeof *why); /* "" when the preset loaded */
    GpuSpec *gpus = malloc(CAP * sizeof *gpus);
    ClusterSpec *clusters = malloc(CAP * sizeof *clusters);
    if (!names || !why || !gpus || !clusters) {
        b->oom = true;
        goto done;
    }
    int total = hw_gpu_names(names, CAP), n = total < CAP ? total : CAP;
    for (int i = 0; i < n; i++) {
        TsError e = {0};
        why[i][0] = '\0';
        if (hw_gpu_load(names[i], &gpus[i], &e) != TS_OK) snprintf(why[i], sizeof why[i], "%s", e.msg);
    }
    rep_gpus_table(gpus, (const char(*)[64])names, (const char(*)[TS_ERR_MSG_MAX])why, n, total, b);
    total = hw_cluster_names(names, CAP), n = total < CAP ? total : CAP;
    for (int i = 0; i < n; i++) {
        TsError e = {0};
        why[i][0] = '\0';
        if (hw_cluster_load(names[i], 1, &clusters[i], &e) != TS_OK) snprintf(why[i], sizeof why[i], "%s", e.msg);
    }
    rep_clusters_table(clusters, (const char(*)[64])names, (const char(*)[TS_ERR_MSG_MAX])why, n, total, b);
done:
    free(names);
    free(why);
    free(gpus);
    free(clusters);
}

/* "a,b,c" -> up to n int64 values; returns the count or -1. */
static int parse_list(const char *s, int64_t *v, int n)
{
    int k = 0;
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", s);
    for (char *tok = strtok(tmp, ","); tok; tok = strtok(NULL, ",")) {
        if (k == n || !ts_parse_i64(tok, &v[k]) || v[k] < 1) return -1;
        k++;
    }
    return k;
}

typedef struct HwOpts {
    CliHw hw;
    bool json;
    const char *gemm, *attention, *coll, *dtype, *group_kind;
    double bytes, dropout;
    int64_t group, group_nodes;
    bool causal, backward;
} HwOpts;

/* " (calibrated)" where the file's entries moved the model's time `bare`; an
 * entry speaks only for alike queries (a GEMM of about its batch, an
 * attention of its mask, head dim and parallel work), so a query unlike
 * every entry keeps the model's time and says so. */
static const char *calib_label(const CliHwLoaded *l, double t, double bare)
{
    if (!l->calib) return "";
    return t != bare ? " (calibrated)" : " (the model: no calibration entry is alike)";
}

static int evaluate(const HwOpts *o, const CliHwLoaded *l, TsBuf *b)
{
    HwModel bare = l->model;
    bare.calib = NULL;
    TsDtype dt = TS_DTYPE_BF16;
    if (o->dtype && !ts_dtype_parse(o->dtype, &dt)) {
        fprintf(stderr, "trainsim: unknown dtype '%s' for --dtype (expected fp32, tf32, bf16, fp16 or fp8)\n", o->dtype);
        return 2;
    }
    if (o->gemm) {
        int64_t v[4];
        int k = parse_list(o->gemm, v, 4);
        if (k != 3 && k != 4) {
            fprintf(stderr, "trainsim: --gemm expects M,N,K or BATCH,M,N,K (positive integers), got '%s'\n", o->gemm);
            return 2;
        }
        int64_t bt = k == 4 ? v[0] : 1, *d = k == 4 ? v + 1 : v;
        double t = hw_gemm_time_s(&l->model, bt, d[0], d[1], d[2], dt);
        ts_buf_printf(b, "gemm %lldx(%lldx%lldx%lld) %s on %s: %.3f us, %.1f TFLOP/s%s\n", (long long)bt,
                      (long long)d[0], (long long)d[1], (long long)d[2], ts_dtype_name(dt), l->model.gpu.name,
                      t * 1e6, 2.0 * (double)bt * (double)d[0] * (double)d[1] * (double)d[2] / t / 1e12,
                      calib_label(l, t, hw_gemm_time_s(&bare, bt, d[0], d[1], d[2], dt)));
    }
    if (o->attention) {
        int64_t v[5];
        if (parse_list(o->attention, v, 5) != 5) {
            fprintf(stderr, "trainsim: --attention expects B,HEADS,SQ,SK,D, got '%s'\n", o->attention);
            return 2;
        }
        double t = hw_fused_attention_time_s(&l->model, v[0], v[1], v[2], v[3], v[4], o->causal, o->backward, dt,
                                             o->dropout);
        double t0 = hw_fused_attention_time_s(&bare, v[0], v[1], v[2], v[3], v[4], o->causal, o->backward, dt,
                                              o->dropout);
        double fl = 4.0 * (double)v[0] * (double)v[1] * (double)v[2] * (double)v[3] * (double)v[4] *
                    (o->causal && v[2] == v[3] ? 0.5 : 1.0) * (o->backward ? 2.5 : 1.0);
        char drop[32] = "";
        if (o->dropout > 0) snprintf(drop, sizeof drop, " dropout %g", o->dropout);
        ts_buf_printf(b, "attention %s%s%s B=%lld heads=%lld sq=%lld sk=%lld d=%lld on %s: %.3f us, %.1f TFLOP/s%s\n",
                      o->backward ? "bwd" : "fwd", o->causal ? " causal" : "", drop, (long long)v[0], (long long)v[1],
                      (long long)v[2], (long long)v[3], (long long)v[4], l->model.gpu.name, t * 1e6, fl / t / 1e12,
                      calib_label(l, t, t0));
    }
    if (o->coll) {
        TsColl c;
        if (!ts_coll_parse(o->coll, &c) || c == TS_COLL_NONE) {
            fprintf(stderr, "trainsim: unknown collective '%s' for --coll\n", o->coll);
            return 2;
        }
        if (!(o->bytes > 0) || o->group < 2) {
            fprintf(stderr, "trainsim: --coll needs --bytes > 0 and --group >= 2\n");
            return 2;
        }
        int64_t nodes = o->group_nodes > 0 ? o->group_nodes : ts_ceil_div(o->group, l->cluster.gpus_per_node);
        /* a kind the tables do not name takes their "*" rows; none given: the model */
        HwGroupKind kind = o->group_kind ? HW_GROUP_ANY : HW_GROUP_NONE;
        if (o->group_kind && (!hw_group_parse(o->group_kind, &kind) || kind == HW_GROUP_NONE)) kind = HW_GROUP_ANY;
        HwCollCost r = hw_coll_cost(&l->net, c, o->bytes, o->group, nodes, 1, kind);
        ts_buf_printf(b, "%s of %.0f bytes over %lld GPUs on %lld node%s (%s): %.3f us, busbw %.1f GB/s, %s%s%s\n",
                      ts_coll_name(c), o->bytes, (long long)o->group, (long long)nodes, nodes == 1 ? "" : "s",
                      l->cluster.name, r.time_s * 1e6, r.busbw_bytes_per_s / 1e9,
                      r.algo == HW_ALGO_TABLE ? "measured busbw table" : hw_algo_name(r.algo),
                      r.algo == HW_ALGO_TABLE ? "" : "/", r.algo == HW_ALGO_TABLE ? "" : hw_proto_name(r.proto));
    }
    return 0;
}

/* The model against the file's GEMMs, per dtype, and its attention entries,
 * per pass: measured / model at the entries' own shapes, as the simulator
 * reads them. */
static void calib_fit_note(const HwModel *hw, TsBuf *b)
{
    bool first = true;
    for (int d = 0; d < TS_DTYPE_COUNT; d++) {
        double q[3];
        int n = hw_calib_gemm_fit(hw, (TsDtype)d, q);
        if (n == 0) continue;
        ts_buf_printf(b, "%s%s %d: %.2f (%.2f-%.2f)",
                      first ? "  GEMM entries, measured / model as read (median, 10th-90th percentile): " : "; ",
                      ts_dtype_name((TsDtype)d), n, q[1], q[0], q[2]);
        first = false;
    }
    if (!first) ts_buf_printf(b, "\n");
    first = true;
    for (int bwd = 0; bwd < 2; bwd++) {
        double q[3];
        int n = hw_calib_attn_fit(hw, bwd, q);
        if (n == 0) continue;
        ts_buf_printf(b, "%s%s %d: %.2f (%.2f-%.2f)", first ? "  attention entries, the same: " : "; ",
                      bwd ? "bwd" : "fwd", n, q[1], q[0], q[2]);
        first = false;
    }
    if (!first) ts_buf_printf(b, "\n");
}

/* A reference GEMM's time back to back beside the preset's at its
 * sustained clock (the preset model's time at its clock brought there). */
static void ref_line(const HwModel *hw, const char *name, TsDtype dt, const int64_t d[3], double ref_us, TsBuf *b)
{
    HwModel raw = *hw;
    raw.calib = NULL;
    const GpuSpec *g = &hw->gpu;
    double sus = hw_sustained_clock_mhz(g);
    double at_sus = sus > 0 && g->clock_mhz > 0 ? g->clock_mhz / sus : 1; /* a preset without clocks: 1 */
    double model_us = 1e6 * hw_gemm_time_s(&raw, 1, d[0], d[1], d[2], dt) * at_sus;
    double flop = 2.0 * (double)d[0] * (double)d[1] * (double)d[2];
    char at[48] = "";
    if (sus > 0) snprintf(at, sizeof at, " at %.0f MHz", sus);
    ts_buf_printf(b, "  %s %s %lldx%lldx%lld back to back: %.1f us, %.1f TFLOP/s; the preset%s: %.1f us (%+.1f %% "
                     "against this GPU)\n",
                  name, ts_dtype_name(dt), (long long)d[0], (long long)d[1], (long long)d[2], ref_us,
                  flop / ref_us * 1e-6, at, model_us, 100.0 * (model_us / ref_us - 1.0));
}

/* How the calibration's GEMM entries are brought to one clock: by a
 * reference timed beside each (version 3: its sustained rate beside the
 * preset's at its sustained clock, the GPU's own bias; the fp8 entries by
 * their own reference where the file has one), or by the file's median
 * clock, which does not hold where the sampled clock ranged by more than
 * 10 %. */
static void calib_clock_note(const HwModel *hw, const HwCalib *c, TsBuf *b)
{
    double lo, hi;
    hw_calib_clock_range(c, &lo, &hi);
    int64_t d[3], d8[3];
    TsDtype dt;
    double ref_us = hw_calib_reference(c, d, &dt), ref8_us = hw_calib_fp8_reference(c, d8);
    if (ref_us > 0) {
        const GpuSpec *g = &hw->gpu;
        ts_buf_printf(b, "  GEMM entries: each timed beside a reference GEMM and brought to its time back to back, "
                         "this GPU's sustained rate\n");
        ref_line(hw, "reference", dt, d, ref_us, b);
        if (ref8_us > 0) ref_line(hw, "fp8 entries' reference", TS_DTYPE_FP8, d8, ref8_us, b);
        if (hw_calib_against_units(hw))
            ts_buf_printf(b,
                          "  the preset's units: %.1f us (this GPU %+.1f %%); the entries are read against them, so "
                          "the preset keeps its sustained rate (set from published full-node runs) and takes this "
                          "GPU's shape efficiencies and its distance from those units%s\n",
                          g->calib_ref_s * 1e6, 100.0 * (ref_us / (g->calib_ref_s * 1e6) - 1.0),
                          ref8_us > 0 ? "; the fp8 entries, at fp8's own sustained rate, by the same factor" : "");
    } else if (lo > 0 && hi > 1.1 * lo)
        ts_buf_printf(b,
                      "  GEMM entries: the SM clock ranged %.0f-%.0f MHz while they ran; each is taken at the "
                      "median, so each carries its own clock's error (tools/calibrate writes version 3, which "
                      "times a reference beside each entry)\n",
                      lo, hi);
    calib_fit_note(hw, b);
}

int cmd_hw(int argc, char **argv)
{
    HwOpts o;
    memset(&o, 0, sizeof o);
    cli_hw_init(&o.hw);
    CliSpec s = {.cmd = "hw",
                 .usage = "trainsim hw [--gpu G | --cluster C [--gpus N]] [--json] [--gemm M,N,K] [--coll C --bytes B --group N]",
                 .summary = "Without options: list the GPU and cluster presets. With --gpu or --cluster: show "
                            "one (--json: its file format). --calibration/--busbw validate those files. "
                            "--gemm, --attention and --coll evaluate the cost models."};
    cli_hw_add(&s, &o.hw);
    cli_add(&s, "json", CLI_FLAG, &o.json, NULL, "print the GPU (or cluster) as JSON");
    cli_add(&s, "dtype", CLI_STR, &o.dtype, "T", "fp32|tf32|bf16|fp16|fp8 for --gemm/--attention (bf16)");
    cli_add(&s, "gemm", CLI_STR, &o.gemm, "M,N,K", "time one GEMM ([BATCH,]M,N,K)");
    cli_add(&s, "attention", CLI_STR, &o.attention, "B,H,SQ,SK,D", "time one attention core");
    cli_add(&s, "causal", CLI_FLAG, &o.causal, NULL, "causal mask for --attention");
    cli_add(&s, "backward", CLI_FLAG, &o.backward, NULL, "backward pass for --attention");
    cli_add(&s, "attn-dropout", CLI_DOUBLE, &o.dropout, "P",
            "dropout on the probabilities for --attention: its draws inside the kernel (0: none)");
    cli_add(&s, "coll", CLI_STR, &o.coll, "C", "time one collective (allreduce, allgather, ...)");
    cli_add(&s, "bytes", CLI_BYTES, &o.bytes, "B", "collective size (whole buffer): bytes, or 64MiB, 1.5GB, 512k");
    cli_add(&s, "group", CLI_INT, &o.group, "N", "GPUs in the collective's group");
    cli_add(&s, "group-nodes", CLI_INT, &o.group_nodes, "N", "nodes the group spans (default: packed)");
    cli_add(&s, "group-kind", CLI_STR, &o.group_kind, "K", "tp|dp|ep|pp|cp: selects --busbw rows");
    int rc = cli_parse(&s, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    TsBuf b = {0};
    bool eval = o.gemm || o.attention || o.coll;
    bool any = o.hw.gpu || o.hw.cluster || o.hw.calibration || o.hw.busbw || eval;
    if (!any) {
        list_all(&b);
        rc = cli_emit(NULL, &b);
        ts_buf_free(&b);
        return rc;
    }
    CliHwLoaded l;
    rc = cli_hw_load(&o.hw, "dgx-h100", o.coll && o.group > 1 ? o.group : 0, &l); /* a collective: GPUs that talk */
    if (rc) return rc;
    if (eval) {
        rc = evaluate(&o, &l, &b);
    } else if (o.json) {
        if (o.hw.cluster) hw_cluster_to_json(&l.cluster, &b);
        else hw_gpu_to_json(&l.model.gpu, &b);
    } else {
        if (o.hw.cluster) rep_cluster_text(&l.cluster, &b);
        if (o.hw.gpu || o.hw.cluster) rep_gpu_text(&l.model.gpu, &b);
    }
    /* what the --calibration and --busbw files hold: on stdout after the
     * text, on stderr beside --json (stdout stays one JSON document) */
    TsBuf files = {0}, *fb = o.json ? &files : &b;
    if (!rc && !eval && l.calib) {
        ts_buf_printf(fb, "calibration: %s: %d measurements (gpu \"%s\"", o.hw.calibration,
                      hw_calib_entries(l.calib), hw_calib_gpu(l.calib));
        if (hw_calib_clock_mhz(l.calib) > 0)
            ts_buf_printf(fb, ", SM clock %.0f MHz while measured", hw_calib_clock_mhz(l.calib));
        ts_buf_puts(fb, ")\n");
        calib_clock_note(&l.model, l.calib, fb);
    }
    if (!rc && !eval && l.busbw)
        ts_buf_printf(fb, "busbw: %s: %d rows\n", o.hw.busbw, hw_busbw_entries(l.busbw));
    if (!rc) rc = cli_emit(NULL, &b);
    if (!rc && files.len) fputs(files.data, stderr);
    ts_buf_free(&files);
    ts_buf_free(&b);
    cli_hw_free(&l);
    return rc;
}
