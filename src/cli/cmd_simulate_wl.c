/* trainsim simulate --workload FILE — an imported SimAI/AICB, ASTRA-sim 1.0
 * or op-table workload run with SimAI's semantics (sim_replay_simai); a
 * task-graph workload without layer rows (the JSON IR of `trainsim workload
 * --format json`) run as its graph says (sim_replay_dag). */
#include "cli.h"
#include "cli_hw.h"
#include "trainsim/report_sim.h"
#include "trainsim/sim.h"
#include "trainsim/sim_replay.h"
#include "trainsim/workload.h"
#include "trainsim/workload_chakra.h"
#include "trainsim/workload_io.h"

#include <dirent.h>
#include <string.h>

int cmd_simulate_workload(const CliHw *ch, const char *path, bool json, int64_t seq, int64_t micro_batch,
                          const char *trace, const char *trace_ranks, double overlap_slowdown);

/* The replayed task graph as a Chrome trace (rep_replay_trace). */
static int write_trace(const Workload *w, const SimResult *r, const char *path, int64_t first, int64_t count,
                       TsError *err)
{
    TsBuf tb = {0};
    rep_replay_trace(w, r, first, count, &tb);
    if (tb.oom) ts_err(err, TS_ERR_INTERNAL, "out of memory writing the trace");
    int rc = tb.oom || ts_write_file_atomic(path, tb.data, tb.len, err) != TS_OK ? cli_fail(err) : 0;
    ts_buf_free(&tb);
    return rc;
}

/* --gpus, when given, must be the workload's rank count. Returns 0 or 2. */
static int gpus_match(const CliHw *ch, int64_t ranks)
{
    if (ch->gpus == -1 || ranks <= 0 || ch->gpus == ranks) return 0;
    TsError e = {.code = TS_ERR_USAGE};
    ts_err(&e, TS_ERR_USAGE, "--gpus %lld does not match the workload, which has %lld ranks", (long long)ch->gpus,
           (long long)ranks);
    ts_err_hint(&e, "leave --gpus out (the cluster is sized to the workload), or regenerate the workload for "
                    "that many GPUs");
    return cli_fail(&e);
}

/* The file does not give its GPU count (w->world_unstated): --gpus does,
 * as data parallelism over the tp*pp ranks the file describes (SimAI's
 * MICRO collective tests run over all GPUs this way). Returns 0 or 2. */
static int gpus_set(const CliHw *ch, Workload *w)
{
    if (ch->gpus == -1) return 0;
    int64_t mp = w->par.tp * w->par.pp;
    if (ch->gpus < mp || ch->gpus % mp) {
        TsError e = {.code = TS_ERR_USAGE};
        ts_err(&e, TS_ERR_USAGE, "--gpus %lld is not a multiple of the workload's tp x pp = %lld", (long long)ch->gpus,
               (long long)mp);
        ts_err_hint(&e, "the GPUs are tp x pp x dp; the file gives tp and pp, --gpus sets dp");
        return cli_fail(&e);
    }
    w->par.dp = ch->gpus / mp;
    w->par.world = ch->gpus;
    if (w->warning[0]) {
        size_t n = strlen(w->warning);
        snprintf(w->warning + n, sizeof w->warning - n, "; --gpus %lld sets dp %lld", (long long)ch->gpus,
                 (long long)w->par.dp);
    }
    return 0;
}

/* ---- Chakra trace sets -------------------------------------------------------- */

/* `path` is a directory holding Chakra sets: the hint names one prefix. */
static void dir_hint(const char *path, TsError *err)
{
    DIR *d = opendir(path);
    if (!d) return;
    struct dirent *e;
    int n = 0;
    char first[512] = "";
    while ((e = readdir(d)) != NULL) {
        size_t k = strlen(e->d_name);
        if (k > 5 && !strcmp(e->d_name + k - 5, ".0.et") && n++ == 0)
            snprintf(first, sizeof first, "%.*s", (int)(k - 5), e->d_name);
    }
    closedir(d);
    if (n > 0)
        ts_err_hint(err, "%s holds %d Chakra trace set%s; give a set's prefix, e.g. --workload %s/%s", path, n,
                    n > 1 ? "s" : "", path, first);
}

/* Ranks whose timeline --trace writes by default (a trace of every rank of a
 * large set would be gigabytes); --trace-ranks A-B picks others. */
#define CHAKRA_TRACE_RANKS 64

/* "A-B" or "A" -> first rank and count; false when malformed. */
static bool parse_ranks(const char *s, int64_t *first, int64_t *count)
{
    char lo[32];
    const char *dash = strchr(s, '-');
    size_t n = dash ? (size_t)(dash - s) : strlen(s);
    if (n >= sizeof lo) return false;
    memcpy(lo, s, n);
    lo[n] = '\0';
    int64_t a, b;
    if (!ts_parse_i64(lo, &a) || a < 0) return false;
    if (!dash) b = a;
    else if (!ts_parse_i64(dash + 1, &b) || b < a) return false;
    *first = a;
    *count = b - a + 1;
    return true;
}

/* --overlap-slowdown given for a workload whose semantics have none. */
static int no_slowdown(const char *path, const char *what)
{
    TsError e = {0};
    ts_err(&e, TS_ERR_USAGE, "--overlap-slowdown applies to task-graph workloads; '%s' is a %s", path, what);
    ts_err_hint(&e, "the compute slow-down beside collectives is modelled on the JSON task graph "
                    "('trainsim workload --format json'); drop --overlap-slowdown here");
    return cli_fail(&e);
}

/* --trace-ranks: a per-rank workload's ranks to draw (default the first
 * CHAKRA_TRACE_RANKS). Returns 0 or 2. */
static int trace_ranks_of(const Workload *w, const char *path, const char *trace, const char *spec, int64_t *first,
                          int64_t *count)
{
    TsError err = {0};
    *first = 0;
    *count = CHAKRA_TRACE_RANKS;
    if (!spec) return 0;
    if (!w->rank_class) {
        ts_err(&err, TS_ERR_USAGE, "--trace-ranks applies to Chakra sets replayed rank by rank");
        ts_err_hint(&err, "'%s' is replayed as one timeline per pipeline stage: --trace writes all of them", path);
    } else if (!trace) {
        ts_err(&err, TS_ERR_USAGE, "--trace-ranks needs --trace FILE");
        ts_err_hint(&err, "--trace-ranks picks the ranks whose timeline --trace writes");
    } else if (!parse_ranks(spec, first, count)) {
        ts_err(&err, TS_ERR_USAGE, "invalid value '%s' for --trace-ranks", spec);
        ts_err_hint(&err, "give a rank or a range, e.g. --trace-ranks 512 or --trace-ranks 0-63");
    } else if (*first >= w->par.world) {
        ts_err(&err, TS_ERR_USAGE, "--trace-ranks %s: the set has ranks 0-%lld", spec, (long long)w->par.world - 1);
        ts_err_hint(&err, "give ranks of the set");
    }
    return err.code ? cli_fail(&err) : 0;
}

int cmd_simulate_workload(const CliHw *ch, const char *path, bool js, int64_t seq, int64_t micro_batch,
                          const char *trace, const char *trace_ranks, double slowdown)
{
    TsError err = {0};
    char prefix[1024];
    bool chakra = wl_chakra_prefix(path, prefix, sizeof prefix);
    if (trace_ranks && !chakra) {
        ts_err(&err, TS_ERR_USAGE, "--trace-ranks applies to Chakra trace sets only");
        ts_err_hint(&err, "'%s' is replayed as one timeline per pipeline stage: --trace writes all of them", path);
        return cli_fail(&err);
    }
    Workload *w = NULL;
    if ((chakra ? wl_read_chakra(prefix, &w, &err) : wl_read_file(path, &w, &err)) != TS_OK) {
        if (!chakra) dir_hint(path, &err);
        return cli_fail(&err);
    }
    int64_t rec0 = 0, nrec = 0;
    int rc0 = trace_ranks_of(w, path, trace, trace_ranks, &rec0, &nrec);
    if (!rc0 && w->rank_class && (seq > 0 || micro_batch > 0)) {
        ts_err(&err, TS_ERR_USAGE, "--seq / --micro-batch are not available for this Chakra trace set");
        ts_err_hint(&err, "its traces carry no batch layout (trainsim writes one in GlobalMetadata), so tokens/s "
                          "cannot be derived");
        rc0 = cli_fail(&err);
    }
    if (rc0) {
        wl_destroy(w);
        return rc0;
    }
    CliHwLoaded hl;
    int rc = w->world_unstated ? gpus_set(ch, w) : gpus_match(ch, w->par.world);
    if (rc || (rc = cli_hw_load(ch, "dgx-h100", w->par.world > 0 ? w->par.world : 0, &hl))) {
        wl_destroy(w);
        return rc;
    }
    if (slowdown >= 0 && w->n_rows > 0) {
        wl_destroy(w);
        cli_hw_free(&hl);
        return no_slowdown(path, "layer-row workload (SimAI's semantics)");
    }
    SimOptions so;
    sim_options_init(&so);
    if (slowdown < 0) slowdown = so.overlap_slowdown; /* not given: the simulator's default */
    SimResult r = {0};
    TsStatus st = TS_OK;
    if (trace && w->n_rows > 0) {
        st = ts_err(&err, TS_ERR_USAGE, "--trace needs a task-graph workload; '%s' has layer rows (SimAI semantics)",
                    path);
        ts_err_hint(&err, "write a task graph with 'trainsim workload --format json' from the model and plan");
    } else {
        st = w->n_rows > 0 ? sim_replay_simai(w, &hl.net, &r, &err) : sim_replay_dag(w, &hl.net, slowdown, trace != NULL, &r, &err);
    }
    if (st != TS_OK) {
        if (!err.file[0]) ts_err_at(&err, path, 0, 0, NULL);
        rc = cli_fail(&err);
        goto done;
    }
    if (nrec > w->par.world - rec0) nrec = w->par.world - rec0;
    if (trace && (rc = write_trace(w, &r, trace, rec0, nrec, &err)) != 0) goto done;
    /* not given: the workload's own (a generated JSON carries them) */
    RepReplay ro = {.path = path, .cluster = &hl.cluster, .trace = trace, .trace_first = rec0, .trace_count = nrec};
    ro.batch_from_workload = (seq <= 0 || micro_batch <= 0) && w->par.seq > 0 && w->par.micro_batch > 0;
    ro.seq = seq > 0 ? seq : w->par.seq;
    ro.micro_batch = micro_batch > 0 ? micro_batch : w->par.micro_batch;
    sim_replay_throughput(w, ro.seq, ro.micro_batch, &r);
    TsBuf b = {0};
    if (js) rep_replay_json(w, &r, &ro, &b);
    else rep_replay_text(w, &r, &ro, &b);
    rc = cli_emit(NULL, &b);
    ts_buf_free(&b);
done:
    sim_result_free(&r);
    wl_destroy(w);
    cli_hw_free(&hl);
    return rc;
}
