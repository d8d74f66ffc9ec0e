/*
 * trainsim sweep — search the plan space of a model on a cluster and rank
 * the plans (search.h). stdout is deterministic (no timings, no thread
 * count) so runs with any -j or any number of MPI ranks can be compared;
 * the timing note goes to stderr.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "cli_hw.h"
#include "cli_plan.h"
#include "cli_emit.h"
#include "cli_recipe.h"
#include "cli_train.h"
#include "cli_sim.h"
#include "trainsim/partition.h"
#include "trainsim/report.h"
#include "trainsim/report_sweep.h"
#include "trainsim/search.h"

typedef struct SweepOpts {
    CliModel cm;
    CliHw hw;                 /* --gpu --cluster --gpus LIST --calibration --busbw */
    CliSim sim;               /* runtime behaviours (--deepspeed-pipe, --no-dp-overlap, ...) */
    CliEmit emit;             /* --emit F: the best plan as F's launch recipe */
    CliTrain train;           /* --train-tokens and the run's options */
    TrainOptions topt;        /* parsed; want_train: --train-tokens given */
    bool want_train;
    CliPlan knobs;            /* --moe-*, --fp8-recipe, --adam-moments, --recompute-modules: every plan's */
    ParallelPlan kp;          /* those knobs, parsed */
    const char *cluster;      /* name of the loaded cluster (for the output) */
    const char *gpus;         /* the --gpus list as given, "64" by default */
    const char *objective, *csv, *html, *dtype, *framework_s, *precision_s;
    PlanFramework framework;  /* --framework (or its alias), megatron by default */
    PlanPrecision precision;  /* --precision, mixed by default */
    TsDtype dt;               /* --dtype, resolved (bf16 by default) */
    const char *tp, *pp, *vpp, *cp, *ep, *mbs, *recompute, *schedule, *zero, *dp_shard, *sp, *overlap, *cp_comm;
    int64_t max_tp, max_pp, max_vpp, max_cp, max_ep, max_mbs;
    int64_t seq, global_batch, top, jobs;
    double headroom;          /* --headroom: bytes each GPU keeps free, 0 by default */
    bool seq_given;           /* --seq on the command line (else plan_default_seq) */
    bool json;
} SweepOpts;

static int usage(const char *fmt, const char *a)
{
    fprintf(stderr, "trainsim sweep: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, " (see 'trainsim sweep --help')\n");
    return 2;
}

/* "1,2,4,8" -> d->v; positive integers only. */
static int parse_ints(const char *opt, const char *s, SearchDim *d)
{
    if (!s) return 0;
    char tmp[512];
    snprintf(tmp, sizeof tmp, "%s", s);
    d->n = 0;
    for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int64_t v;
        if (!ts_parse_i64(t, &v) || v < 1 || v > 1 << 24 || d->n >= SEARCH_MAX_VALUES) {
            char msg[160];
            snprintf(msg, sizeof msg, "option '--%s' expects a comma-separated list of positive integers, got '%%s'", opt);
            return usage(msg, s);
        }
        d->v[d->n++] = v;
    }
    return d->n ? 0 : usage("empty list '%s'", s);
}

/* "none,full" -> bit mask over names[]; also "0,1" / "off,on" for booleans. */
/* A comma list of names[0..n) into a bit mask: bit[i] for names[i] (bit i when
 * bit is NULL). The message for an unknown value lists the names in order. */
static int parse_mask(const char *opt, const char *s, const char *const *names, const int *bit, int n, unsigned *mask)
{
    if (!s) return 0;
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", s);
    *mask = 0;
    for (char *save = NULL, *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        int hit = -1;
        for (int i = 0; i < n; i++)
            if (ts_str_eq(t, names[i])) hit = i;
        if (hit < 0 && n == 2) hit = ts_str_eq(t, "0") || ts_str_eq(t, "false") ? 0 : ts_str_eq(t, "1") || ts_str_eq(t, "true") ? 1 : -1;
        if (hit < 0) {
            char msg[200], list[120] = "";
            for (int i = 0; i < n; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? "," : "", names[i]);
            snprintf(msg, sizeof msg, "option '--%s': unknown value '%%s' (expected a list of %s)", opt, list);
            return usage(msg, t);
        }
        *mask |= 1u << (bit ? bit[hit] : hit);
    }
    return 0;
}

static void progress(void *user, int64_t done, int64_t total, double elapsed_s)
{
    (void)user;
    double f = total > 0 ? (double)done / (double)total : 1.0, rate = elapsed_s > 0 ? (double)done / elapsed_s : 0;
    double left = rate > 0 ? (double)(total - done) / rate : 0;
    char bar[31];
    int w = (int)(f * 30.0);
    for (int i = 0; i < 30; i++) bar[i] = i < w ? '#' : '.';
    bar[30] = '\0';
    char r[32];
    rep_fmt_si(r, sizeof r, rate);
    fprintf(stderr, "\r[%s] %5.1f%%  %s plans/s  %.0f s left   ", bar, 100.0 * f, r, left);
    fflush(stderr);
}

/* ---- output ------------------------------------------------------------------ */
/* The HTML report (rep_sweep_html), with the best plan simulated again with
 * its timeline recorded. */
static int write_html(const char *path, const RepSweep *rs, const SearchEvalCtx *x, const SearchConfig *c,
                      const SearchResult *r)
{
    TsError err = {0};
    SimResult sr;
    SimSetup in;
    bool have_sr = false;
    if (r->n_top > 0 && search_sim_setup(x, &r->top[0].k, &in)) {
        in.opt.record = true;
        TsError serr = {0}; /* a best plan that does not simulate is left out of the report */
        have_sr = sim_simulate(&in, NULL, &sr, &serr) == TS_OK;
    }
    TsBuf b = {0};
    int rc = 0;
    if (rep_sweep_html(rs, c, r, have_sr ? &in : NULL, have_sr ? &sr : NULL, &b, &err) != TS_OK ||
        ts_write_file_atomic(path, b.data, b.len, &err) != TS_OK)
        rc = cli_fail(&err);
    ts_buf_free(&b);
    if (have_sr) sim_result_free(&sr);
    return rc;
}

/* ---- the command ------------------------------------------------------------- */
static void add_options(CliSpec *s, SweepOpts *o)
{
    cli_recipe_add(s);
    cli_model_add(s, &o->cm);
    cli_hw_add_list(s, &o->hw, "GPU counts to plan for, default 64 (several: compare by --objective cost)");
    cli_add(s, "seq", CLI_INT, &o->seq, "S", "tokens per sequence; default min(max positions, 4096)");
    cli_add(s, "global-batch", CLI_INT, &o->global_batch, "B", "sequences per step (default 1024)");
    cli_add(s, "dtype", CLI_STR, &o->dtype, "T", "training dtype of every plan: bf16 (default), fp16, fp8 or fp32");
    cli_add(s, "framework", CLI_STR, &o->framework_s, "F",
            "megatron|torchtitan|deepspeed|hf: the code path of every plan (megatron)");
    cli_add(s, "precision", CLI_STR, &o->precision_s, "P", "mixed|amp|pure: the precision recipe of every plan (mixed)");
    cli_add(s, "tp", CLI_STR, &o->tp, "LIST", "tensor-parallel sizes to try, e.g. 1,2,4,8");
    cli_add(s, "pp", CLI_STR, &o->pp, "LIST", "pipeline-parallel sizes to try");
    cli_add(s, "vpp", CLI_STR, &o->vpp, "LIST", "virtual stages per pipeline rank (interleaved schedule)");
    cli_add(s, "cp", CLI_STR, &o->cp, "LIST", "context-parallel sizes to try");
    cli_add(s, "ep", CLI_STR, &o->ep, "LIST", "expert-parallel sizes to try (MoE models)");
    cli_add(s, "micro-batch", CLI_STR, &o->mbs, "LIST", "micro-batch sizes to try");
    cli_add(s, "max-tp", CLI_INT, &o->max_tp, "N", "largest tp when --tp is not given (default 8)");
    cli_add(s, "max-pp", CLI_INT, &o->max_pp, "N", "largest pp when --pp is not given (default 64)");
    cli_add(s, "max-vpp", CLI_INT, &o->max_vpp, "N", "largest vpp when --vpp is not given (default 8)");
    cli_add(s, "max-cp", CLI_INT, &o->max_cp, "N", "largest cp when --cp is not given (default 8)");
    cli_add(s, "max-ep", CLI_INT, &o->max_ep, "N", "largest ep when --ep is not given (default 64)");
    cli_add(s, "max-micro-batch", CLI_INT, &o->max_mbs, "N", "largest micro-batch (default 8)");
    cli_add(s, "recompute", CLI_STR, &o->recompute, "LIST", "recompute modes: none,selective,full");
    cli_add(s, "schedule", CLI_STR, &o->schedule, "LIST", "pipeline schedules: gpipe,1f1b,interleaved (default), zb-h1, dualpipe, dualpipev, 1f1b-a2a (pp 1)");
    cli_add(s, "zero", CLI_STR, &o->zero, "LIST", "ZeRO stages 0-3 (default: what --framework runs; megatron: 0, 1 = distributed optimizer, 3)");
    cli_add(s, "dp-shard", CLI_STR, &o->dp_shard, "LIST",
            "HSDP shard degrees to try beside plain ZeRO-3, e.g. 8,16 (default: none)");
    cli_add(s, "sp", CLI_STR, &o->sp, "LIST", "sequence parallel: off,on");
    cli_add(s, "tp-overlap", CLI_STR, &o->overlap, "LIST", "TP communication overlap: off,on");
    cli_add(s, "cp-comm", CLI_STR, &o->cp_comm, "LIST",
            "context-parallel K/V exchanges to try when cp > 1: p2p,allgather,a2a (default p2p)");
    cli_add(s, "objective", CLI_STR, &o->objective, "O",
            "rank by throughput (default), time, memory, cost (the run's GPU-hours with --train-tokens, else "
            "GPU-seconds per token) or time-to-train (wall clock with goodput; needs --train-tokens)");
    cli_add(s, "top", CLI_INT, &o->top, "K", "plans in the ranking (default 10)");
    cli_add(s, "headroom", CLI_BYTES, &o->headroom, "GIB",
            "memory each GPU keeps free (the memory model's error, allocator spikes): plans must fit in the "
            "capacity less it; GiB, or a size such as 512MiB (default 0)");
    cli_add(s, "jobs", CLI_INT, &o->jobs, "N", "threads (also -j N); default: all cores");
    cli_sim_add_sweep(s, &o->sim);
    cli_plan_add_knobs(s, &o->knobs);
    cli_train_add(s, &o->train);
    cli_add(s, "json", CLI_FLAG, &o->json, NULL, "print JSON (every simulated plan and stats) instead of the table");
    cli_add(s, "csv", CLI_STR, &o->csv, "FILE", "write every simulated plan as CSV");
    cli_add(s, "html", CLI_STR, &o->html, "FILE", "write a self-contained HTML report");
    cli_emit_add(s, &o->emit);
    cli_add_check(s, "dtype", cli_check_dtype);
    cli_add_check(s, "framework", cli_check_framework);
    cli_add_check(s, "precision", cli_check_precision);
}

/* -j N / -jN -> --jobs N (the option parser knows long options only). */
static char **rewrite_j(int argc, char **argv, char *store)
{
    char **av = malloc((size_t)(argc + 2) * sizeof *av);
    if (!av) return NULL;
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "-j") == 0) av[n++] = "--jobs";
        else if (strncmp(argv[i], "-j", 2) == 0 && argv[i][2] >= '0' && argv[i][2] <= '9') {
            snprintf(store, 64, "--jobs=%.50s", argv[i] + 2);
            av[n++] = store;
        } else av[n++] = argv[i];
    }
    av[n] = NULL;
    return av;
}

static int configure(SweepOpts *o, const ModelSpec *m, SearchConfig *c)
{
    static const PlanSchedule order[] = SEARCH_SCHEDULE_ORDER;
    static const char *const ZER[] = {"0", "1", "2", "3"};
    static const char *const OFFON[] = {"off", "on"};
    const char *rec[PLAN_RECOMPUTE_COUNT], *sch[PLAN_SCHED_COUNT], *cpx[SIM_CP_COMM_COUNT];
    int sch_bit[PLAN_SCHED_COUNT];
    for (int i = 0; i < PLAN_RECOMPUTE_COUNT; i++) rec[i] = plan_recompute_name((PlanRecompute)i);
    for (int i = 0; i < PLAN_SCHED_COUNT; i++) sch[i] = plan_sched_name(order[i]), sch_bit[i] = (int)order[i];
    for (int i = 0; i < SIM_CP_COMM_COUNT; i++) cpx[i] = sim_cp_comm_name((SimCpComm)i);
    search_config_init(c);
    int rc = parse_ints("gpus", o->gpus, &c->gpus) || parse_ints("tp", o->tp, &c->tp) ||
             parse_ints("pp", o->pp, &c->pp) || parse_ints("vpp", o->vpp, &c->vpp) ||
             parse_ints("cp", o->cp, &c->cp) || parse_ints("ep", o->ep, &c->ep) ||
             parse_ints("micro-batch", o->mbs, &c->mbs) ||
             parse_mask("recompute", o->recompute, rec, NULL, PLAN_RECOMPUTE_COUNT, &c->recompute_mask) ||
             parse_mask("schedule", o->schedule, sch, sch_bit, PLAN_SCHED_COUNT, &c->schedule_mask) ||
             parse_mask("zero", o->zero, ZER, NULL, 4, &c->zero_mask) ||
             parse_ints("dp-shard", o->dp_shard, &c->dp_shard) ||
             parse_mask("sp", o->sp, OFFON, NULL, 2, &c->sp_mask) ||
             parse_mask("tp-overlap", o->overlap, OFFON, NULL, 2, &c->overlap_mask) ||
             parse_mask("cp-comm", o->cp_comm, cpx, NULL, SIM_CP_COMM_COUNT, &c->cp_comm_mask);
    if (rc) return 2;
    /* DeepSpeed's pipeline engine has one schedule, 1F1B, ZeRO stage 0 or 1
     * and no TP communication overlap */
    if (o->framework == PLAN_FRAMEWORK_DEEPSPEED && !o->schedule) c->schedule_mask = 1u << PLAN_SCHED_1F1B;
    if (o->framework == PLAN_FRAMEWORK_DEEPSPEED && !o->zero) c->zero_mask = 3u;
    if (o->framework == PLAN_FRAMEWORK_DEEPSPEED && !o->overlap) c->overlap_mask = 1u;
    /* the sharding each framework runs: Megatron-Core its distributed
     * optimizer (ZeRO 1, fp32 main gradients) and FSDP (3), no ZeRO-2;
     * torchtitan FSDP2 (3) or DDP (0); HF under DeepSpeed or FSDP all four */
    if (o->framework == PLAN_FRAMEWORK_MEGATRON && !o->zero) c->zero_mask = 0xBu;
    if (o->framework == PLAN_FRAMEWORK_TORCHTITAN && !o->zero) c->zero_mask = 0x9u;
    if (c->dp_shard.n > 0 && !(c->zero_mask & 8u))
        return usage("--dp-shard shards ZeRO-3 (FSDP) over smaller groups: add 3 to --zero (got --zero %s)",
                     o->zero ? o->zero : "the framework's default");
    if (c->sp_mask == 1u && c->overlap_mask == 2u)
        return usage("--tp-overlap on needs --sp on (Megatron overlaps TP communication only under sequence "
                     "parallelism)%s", "");
    o->dt = TS_DTYPE_BF16;
    if (o->dtype && !cli_train_dtype(o->dtype, &o->dt))
        return usage("invalid value '%s' for --dtype (expected bf16, fp16, fp8 or fp32)", o->dtype);
    if (o->objective && !search_objective_parse(o->objective, &c->objective))
        return usage("unknown objective '%s' (expected throughput, time, memory, cost or time-to-train)", o->objective);
    if (c->objective == SEARCH_OBJ_TIME_TO_TRAIN && !o->want_train)
        return usage("--objective time-to-train needs --train-tokens N%s", "");
    if (o->max_tp) c->tp.max = o->max_tp;
    if (o->max_pp) c->pp.max = o->max_pp;
    if (o->max_vpp) c->vpp.max = o->max_vpp;
    if (o->max_cp) c->cp.max = o->max_cp;
    if (o->max_ep) c->ep.max = o->max_ep;
    if (o->max_mbs) c->mbs.max = o->max_mbs;
    c->global_batch = o->global_batch;
    c->seq = o->seq;
    c->layers = m->layers;
    c->experts = m->experts;
    c->top_k = (int)o->top;
    c->keep_all = o->json || o->csv || o->html;
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    c->threads = o->jobs > 0 ? (int)(o->jobs < 1024 ? o->jobs : 1024) : (int)(cores > 0 ? cores : 1);
    return 0;
}

/* The knobs every plan shares, against the model and dtype up front (not
 * "no valid plan" after the search): recompute modules need selective
 * recompute among the modes searched. */
static int check_knobs(const SweepOpts *o, const ModelSpec *m, const SearchConfig *c)
{
    ParallelPlan k = o->kp;
    k.dtype = o->dt;
    k.recompute = PLAN_RECOMPUTE_SELECTIVE;
    TsError err = {0};
    if (plan_check_knobs(m, &k, &err) != TS_OK) return cli_fail(&err);
    if (k.recompute_modules && !(c->recompute_mask & (1u << PLAN_RECOMPUTE_SELECTIVE)))
        return usage("--recompute-modules needs selective among the --recompute modes%s", "");
    return 0;
}

static int run_search(SweepOpts *o, const ModelSpec *mp, const HwModel *hwp, const SearchEvalCtx *x,
                      const SearchConfig *cp, const SearchEvaluator *ev, int rank, SearchResult *rp);

static int run(SweepOpts *o, int rank)
{
    ModelSpec m;
    int rc = cli_model_load(&o->cm, "llama3-8b", &m);
    if (rc) return rc;
    /* the default length fits the model (min(max positions, 4096): a GPT
     * with 2048 learned positions sweeps at 2048); a length given that does
     * not is an error up front, not "no valid plan" after the search */
    if (!o->seq_given) o->seq = plan_default_seq(&m);
    TsError serr = {0};
    if (plan_check_seq(&m, o->seq, &serr) != TS_OK) return cli_fail(&serr);
    if (o->hw.gpus_list) o->gpus = o->hw.gpus_list;
    SearchConfig c;
    if ((rc = configure(o, &m, &c)) != 0) return rc;
    if ((rc = check_knobs(o, &m, &c)) != 0) return rc;
    if (rank == 0 && isatty(2)) c.progress = progress;
    /* the hardware group, loaded once (GPU, calibration, busbw); then one
     * network model per GPU count (the cluster is sized to it) */
    o->hw.gpus = c.gpus.v[0];
    CliHwLoaded l;
    if ((rc = cli_hw_load(&o->hw, "dgx-h100", c.gpus.v[0], &l)) != 0) return rc;
    o->cluster = l.cluster.name;
    if ((rc = cli_headroom_check(o->headroom, &l.model.gpu)) != 0) {
        cli_hw_free(&l);
        return rc;
    }
    /* Transformer Engine's TP overlap (Userbuffers) is built on CUDA
     * multicast within an NVLink domain (TransformerEngine#1071): not offered
     * where the GPUs talk over PCIe, unless --tp-overlap asks */
    if (l.cluster.scaleup_link == HW_LINK_PCIE && !o->overlap) c.overlap_mask = 1u;
    HwNet *nets = calloc((size_t)c.gpus.n, sizeof *nets);
    if (!nets) {
        cli_hw_free(&l);
        return cli_fail(&(TsError){.code = TS_ERR_INTERNAL, .msg = "out of memory"});
    }
    for (int i = 0; i < c.gpus.n; i++) cli_hw_net_sized(&l, c.gpus.v[i], &nets[i]);
    SearchEvalCtx x;
    search_eval_init(&x, &m, &l.model, o->global_batch, o->seq);
    x.dtype = o->dt;
    x.framework = o->framework;
    x.precision = o->precision;
    x.knobs = o->kp;
    x.train = o->want_train ? &o->topt : NULL;
    cli_sim_options(&o->sim, &x.sim_opts);
    x.sim_opts.min_headroom_bytes = o->headroom;
    x.rc_all = c.objective == SEARCH_OBJ_MEMORY; /* the least memory: every layer recomputed */
    sim_mem_options(&x.sim_opts, x.dtype, &x.mem_opts); /* prune with the memory the simulator will count */
    for (int i = 0; i < c.gpus.n; i++) search_eval_add_net(&x, c.gpus.v[i], &nets[i]);
    SearchEvaluator ev = search_eval_sim(&x);
    SearchResult r;
    rc = run_search(o, &m, &l.model, &x, &c, &ev, rank, &r);
    free(nets);
    cli_hw_free(&l);
    return rc;
}

/* No plan fits: the leanest one the memory check saw, and how far it is
 * from the GPU's memory. */
static void nofit_hint(const SearchEvalCtx *x, const SearchStats *st, double cap, TsError *err)
{
    if (!(st->leanest_bytes > 0) || !(cap > 0)) {
        ts_err_hint(err, "use more GPUs, allow recompute / ZeRO / larger tp or pp, or a smaller micro-batch");
        return;
    }
    ParallelPlan p;
    search_plan_from_knobs(x, &st->leanest, &p);
    TsBuf d = {0};
    plan_describe(&p, &d);
    char h[512];
    snprintf(h, sizeof h,
             "the leanest plan (%s) needs %.1f GiB per GPU of %.1f: memory per GPU must fall %.1fx, with more GPUs "
             "per model replica (larger --gpus for pp, or ZeRO-3 over more dp) or a GPU with more memory; "
             "the knob lists (--tp, --pp, --recompute, --zero, --micro-batch) may also be too narrow",
             d.data ? d.data : "?", st->leanest_bytes / 1073741824.0, cap / 1073741824.0, st->leanest_bytes / cap);
    ts_buf_free(&d);
    ts_err_hint(err, "%s", h);
}

static int run_search(SweepOpts *o, const ModelSpec *mp, const HwModel *hwp, const SearchEvalCtx *x,
                      const SearchConfig *cp, const SearchEvaluator *ev, int rank, SearchResult *rp)
{
    ModelSpec m = *mp;
    const GpuSpec *gpu = &hwp->gpu;
    SearchConfig c = *cp;
    SearchResult r;
    TsError err = {0};
    int rc;
    (void)rp;
#ifdef TS_HAVE_MPI
    TsStatus st = search_mpi_run(&c, ev, &r, &err);
#else
    TsStatus st = search_run(&c, ev, &r, &err);
#endif
    if (c.progress) fprintf(stderr, "\r%70s\r", "");
    if (st != TS_OK) return rank == 0 ? cli_fail(&err) : (int)st;
    if (rank != 0) {
        search_result_free(&r);
        return 0;
    }
    fprintf(stderr, "sweep: %lld valid plans in %.3g s (%.0f plans/s), %d thread%s x %d rank%s\n",
            (long long)r.stats.enumerated, r.stats.elapsed_s, r.stats.plans_per_s, r.stats.threads,
            r.stats.threads == 1 ? "" : "s", r.stats.ranks, r.stats.ranks == 1 ? "" : "s");
    if (r.n_top == 0) {
        ts_err(&err, TS_ERR_PLAN, "no plan fits: %lld valid plans, all %lld need more than the GPU's memory",
               (long long)r.stats.enumerated, (long long)r.stats.pruned);
        nofit_hint(x, &r.stats, gpu->hbm_bytes - x->sim_opts.min_headroom_bytes, &err);
        if (r.stats.enumerated == 0) {
            ts_err(&err, TS_ERR_PLAN, "no valid plan among %lld candidates", (long long)r.stats.candidates);
            ts_err_hint(&err, "every candidate breaks a plan rule (tp must divide the heads, dp x micro-batch the "
                              "global batch, ...): widen the knob lists or change --gpus / --global-batch; "
                              "'trainsim simulate' with one plan names the rule");
        }
        search_result_free(&r);
        return cli_fail(&err);
    }
    RepSweep rs = {.model = &m, .gpu = gpu, .cluster = o->cluster, .gpus = o->gpus, .seq = o->seq,
                   .headroom_bytes = o->headroom,
                   .global_batch = o->global_batch, .dtype = o->dt};
    TsBuf b = {0};
    rc = 0;
    if (o->csv) {
        rep_sweep_csv(&r, &b);
        if (ts_write_file_atomic(o->csv, b.data, b.len, &err) != TS_OK) rc = cli_fail(&err);
        ts_buf_free(&b);
    }
    if (!rc && o->html) rc = write_html(o->html, &rs, x, &c, &r);
    if (!rc) {
        if (o->json) rep_sweep_json(&rs, &c, &r, &b);
        else if (o->emit.name) rc = cli_emit_sweep(&o->emit, x, &r, &b);
        else rep_sweep_text(&rs, &c, &r, &b);
        if (!rc) rc = cli_emit(NULL, &b);
    }
    ts_buf_free(&b);
    search_result_free(&r);
    return rc;
}

int cmd_sweep(int argc, char **argv)
{
    SweepOpts o = {.cluster = "dgx-h100", .gpus = "64", .global_batch = PLAN_DEFAULT_GLOBAL_BATCH, .top = 10};
    cli_model_init(&o.cm);
    cli_hw_init(&o.hw);
    cli_sim_init(&o.sim);
    cli_plan_init(&o.knobs);
    cli_train_init(&o.train);
    CliSpec s = {.cmd = "sweep",
                 .usage = "trainsim sweep [--recipe NAME] [--model M] [--cluster C] [--gpu G] [--gpus N[,N..]] [--seq S] [--global-batch B] "
                          "[limits] [-j N] [--json] [--csv FILE] [--html FILE]",
                 .summary = "Enumerate every valid parallel plan (tp, pp, vpp, cp, ep, dp, micro-batch, sp, "
                            "recompute, ZeRO, schedule, TP overlap), prune those that do not fit in memory, "
                            "simulate the rest and rank them. Under mpirun the plan space is split over the ranks."};
    add_options(&s, &o);
    char store[64];
    char **av = rewrite_j(argc, argv, store);
    if (!av) return 1;
    int rc = cli_parse(&s, argc, av);
    free(av);
    if (rc) return rc < 0 ? 0 : rc;
    if ((rc = cli_sim_check(&s, &o.sim))) return rc;
    static const char *const emit_clash[] = {"json", "csv", "html", NULL};
    if ((rc = cli_emit_check(&s, &o.emit, emit_clash, &o.framework_s, &o.precision_s))) return rc;
    if (o.framework_s && !plan_framework_parse(o.framework_s, &o.framework))
        return usage("invalid value '%s' for --framework (expected megatron, torchtitan, deepspeed or hf)",
                     o.framework_s);
    if (o.precision_s && !plan_precision_parse(o.precision_s, &o.precision))
        return usage("invalid value '%s' for --precision (expected mixed, amp or pure)", o.precision_s);
    if ((rc = cli_sim_framework(&s, &o.sim, &o.framework))) return rc;
    plan_init(&o.kp);
    if ((rc = cli_plan_knobs(&o.knobs, &o.kp))) return rc;
    if ((rc = cli_train_options(&s, &o.train, &o.topt, &o.want_train))) return rc;
    o.seq_given = cli_seen(&s, "seq");
    int rank = 0, ranks = 1;
#ifdef TS_HAVE_MPI
    search_mpi_init(NULL, NULL, &rank, &ranks);
#endif
    (void)ranks;
    rc = run(&o, rank);
#ifdef TS_HAVE_MPI
    search_mpi_finalize();
#endif
    return rc;
}
