/* trainsim simulate — predict one training iteration (sim.h).
 *
 * With no options: GPT-3 175B on 1024 H100s (dgx-h100), TP 8, PP 8, DP 16,
 * global batch 1536, micro-batch 1, seq 2048, SP, distributed optimizer,
 * bf16, 1F1B. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "cli_emit.h"
#include "cli_hw.h"
#include "cli_plan.h"
#include "cli_recipe.h"
#include "cli_sim.h"
#include "cli_train.h"
#include "trainsim/partition.h"
#include "trainsim/report_html.h"
#include "trainsim/report_sim.h"
#include "trainsim/report_trace.h"
#include "trainsim/sim.h"

#define DEFAULT_MODEL "gpt3-175b"
#define DEFAULT_CLUSTER "dgx-h100"

/* --workload: cmd_simulate_wl.c */
int cmd_simulate_workload(const CliHw *ch, const char *path, bool json, int64_t seq, int64_t micro_batch,
                          const char *trace, const char *trace_ranks, double overlap_slowdown);

/* With --workload the file fixes the model, the plan and the schedule: only
 * the hardware (--gpus must then match the workload's ranks), the two
 * figures SimAI also takes from outside (sequence and micro-batch, for
 * tokens/s) and the output options apply. Any other option is refused
 * rather than silently ignored. Returns 0 or the exit code. */
static int workload_options_check(const CliSpec *s)
{
    static const char *const ok[] = {"workload",    "gpu",  "cluster", "gpus",        "calibration",      "busbw", "seq",
                                     "micro-batch", "json", "trace",   "trace-ranks", "overlap-slowdown", NULL};
    return cli_only(s, ok, "the workload file fixes the model and the plan",
                    "to simulate another plan, regenerate the workload with 'trainsim workload'");
}

typedef struct SimCli {
    bool json;
    double headroom;          /* --headroom: bytes a GPU must leave free, 0 */
    const char *trace, *trace_ranks, *workload, *html;
} SimCli;

/* Everything simulate's options fill. */
typedef struct SimArgs {
    CliModel cm;
    CliPlan cp;
    CliHw ch;
    CliSim cs;
    CliTrain ct;
    CliEmit em;
    SimCli o;
} SimArgs;

static void add_options(CliSpec *s, SimArgs *a)
{
    *s = (CliSpec){.cmd = "simulate",
                   .usage = "trainsim simulate [--recipe NAME] [--model M] [model flags] [plan flags] [--gpu G] "
                            "[--cluster C] [--gpus N] [--seq S] [--json] [--trace FILE] [--workload FILE]",
                   .summary = "Simulate one training iteration: pipeline schedule, communication overlap, optimizer "
                              "step. Prints iteration time, tokens/s, MFU/HFU, memory per GPU and where the time "
                              "goes. With no options: GPT-3 175B on 1024 H100s (dgx-h100), TP 8, PP 8, DP 16, "
                              "global batch 1536, distributed optimizer."};
    memset(&a->o, 0, sizeof a->o);
    cli_recipe_add(s);
    cli_model_init(&a->cm);
    cli_model_add(s, &a->cm);
    cli_plan_init(&a->cp);
    cli_plan_add(s, &a->cp, false);
    cli_hw_init(&a->ch);
    cli_hw_add(s, &a->ch);
    cli_sim_init(&a->cs);
    cli_sim_add(s, &a->cs);
    cli_train_init(&a->ct);
    cli_train_add(s, &a->ct);
    cli_emit_add(s, &a->em);
    cli_add(s, "json", CLI_FLAG, &a->o.json, NULL, "JSON output");
    cli_add(s, "headroom", CLI_BYTES, &a->o.headroom, "GIB",
            "memory each GPU must leave free for the plan to fit (as sweep --headroom); GiB, or a size such as "
            "512MiB (default 0)");
    cli_add(s, "trace", CLI_STR, &a->o.trace, "FILE", "write a Chrome trace (Perfetto, chrome://tracing)");
    cli_add(s, "trace-ranks", CLI_STR, &a->o.trace_ranks, "A-B",
            "Chakra replay: the ranks --trace writes (default 0-63)");
    cli_add(s, "html", CLI_STR, &a->o.html, "FILE", "write a self-contained HTML report (timeline, breakdown, memory)");
    cli_add(s, "workload", CLI_STR, &a->o.workload, "FILE",
            "replay a workload: SimAI/ASTRA-sim text, op table, JSON task graph, or a Chakra set (PREFIX)");
}

int cmd_simulate_options(const char *names[], int cap)
{
    CliSpec *s = malloc(sizeof *s);
    SimArgs *a = malloc(sizeof *a);
    int n = 0;
    if (s && a) {
        add_options(s, a);
        for (; n < s->n && n < cap; n++) names[n] = s->opts[n].name;
    }
    free(s);
    free(a);
    return n;
}

/* --html: the report of the simulated plan, written to path. */
static TsStatus write_html(const char *path, const SimSetup *in, const SimResult *r, const char *gpu, TsError *err)
{
    TsArena *ar = ts_arena_create(1 << 16);
    RepPlanView v;
    TsBuf hb = {0};
    char title[200];
    snprintf(title, sizeof title, "%s on %lld x %s", in->model->name, (long long)in->plan.gpus, gpu);
    TsStatus hs = ar ? rep_plan_view_from_sim(in, r, title, ar, &v, err) : ts_err(err, TS_ERR_INTERNAL, "out of memory");
    if (hs == TS_OK) v.generator = "trainsim " TRAINSIM_VERSION " simulate";
    if (hs == TS_OK) hs = rep_html_plan(&v, &hb, err);
    if (hs == TS_OK) hs = ts_write_file_atomic(path, hb.data, hb.len, err);
    ts_buf_free(&hb);
    ts_arena_destroy(ar);
    return hs;
}

/* The simulated timeline as a Chrome trace at `path`, titled with the
 * model and the plan as `memory` and the launch scripts name it. */
static TsStatus write_trace(const char *path, const SimSetup *in, const SimResult *r, TsError *err)
{
    const ModelSpec *m = in->model;
    TsBuf tb = {0}, desc = {0};
    plan_describe(&in->plan, &desc);
    char title[256];
    snprintf(title, sizeof title, "%s %s", m->name, desc.data ? desc.data : "");
    ts_buf_free(&desc);
    int64_t lpc = m->layers / (in->plan.pp * in->plan.vpp);
    rep_trace_chrome(r, title, lpc, &tb);
    TsStatus st = tb.oom ? ts_err(err, TS_ERR_INTERNAL, "out of memory writing the trace")
                         : ts_write_file_atomic(path, tb.data, tb.len, err);
    ts_buf_free(&tb);
    return st;
}

/* A whole run's estimate from the step: the model state a checkpoint writes
 * is every parameter once at the recipe's weight and optimizer bytes. */
static TsStatus train_of(const TrainOptions *topt, const SimSetup *in, const SimResult *r, TrainEstimate *est,
                         TsError *err)
{
    ModelCounts mc;
    model_count_params(in->model, &mc);
    PartParamBytes pb;
    part_param_bytes(&in->plan, NULL, &pb);
    double tokens_step = (double)in->plan.global_batch * (double)in->plan.seq;
    return train_estimate(topt, r->iteration_time_s, tokens_step, in->plan.gpus,
                          (double)mc.total * (pb.weight + pb.optim), est, err);
}

int cmd_simulate(int argc, char **argv)
{
    CliSpec s;
    SimArgs a;
    add_options(&s, &a);
    int rc = cli_parse(&s, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    if ((rc = cli_sim_check(&s, &a.cs))) return rc;
    static const char *const emit_clash[] = {"json", "trace", "html", "train-tokens", NULL};
    if ((rc = cli_emit_check(&s, &a.em, emit_clash, &a.cp.framework, &a.cp.precision))) return rc;
    TrainOptions topt;
    bool want_train = false;
    if ((rc = cli_train_options(&s, &a.ct, &topt, &want_train))) return rc;

    SimOptions so;
    cli_sim_options(&a.cs, &so);
    so.record = a.o.trace != NULL || a.o.html != NULL;
    so.min_headroom_bytes = a.o.headroom;

    int64_t default_gpus = 0;
    if (a.o.workload && a.o.html) {
        TsError e = {.code = TS_ERR_USAGE};
        ts_err(&e, TS_ERR_USAGE, "--html is not available with --workload");
        ts_err_hint(&e, "write the replayed timeline with --trace FILE (Perfetto, chrome://tracing)");
        return cli_fail(&e);
    }
    if (a.o.workload && (rc = workload_options_check(&s))) return rc;
    if (a.o.workload)
        return cmd_simulate_workload(&a.ch, a.o.workload, a.o.json, cli_seen(&s, "seq") ? a.cp.seq : 0,
                                     cli_seen(&s, "micro-batch") ? a.cp.micro_batch : 0, a.o.trace, a.o.trace_ranks,
                                     cli_seen(&s, "overlap-slowdown") ? so.overlap_slowdown : -1);
    if (a.o.trace_ranks) {
        TsError e = {.code = TS_ERR_USAGE};
        ts_err(&e, TS_ERR_USAGE, "--trace-ranks applies to Chakra trace sets (--workload PREFIX)");
        ts_err_hint(&e, "a simulated plan's --trace holds every pipeline stage");
        return cli_fail(&e);
    }

    ModelSpec m;
    bool builtin = !a.cm.model && !a.cm.arch;
    rc = cli_model_load(&a.cm, DEFAULT_MODEL, &m);
    if (rc) return rc;
    static const char *const plan_opts[] = {"tp", "pp", "vpp", "dp", "cp", "ep", "global-batch", "gpus", NULL};
    bool plan_given = false;
    for (int i = 0; plan_opts[i]; i++) plan_given |= cli_seen(&s, plan_opts[i]);
    if (builtin && !plan_given) {
        a.cp.tp = 8;
        a.cp.pp = 8;
        a.cp.global_batch = 1536;
        if (!cli_seen(&s, "seq")) a.cp.seq = 2048; /* the example's length, not a default rule (plan.h) */
        a.cp.dist_opt = true;
        default_gpus = 1024;
    } else {
        default_gpus = a.cp.tp * a.cp.pp * a.cp.cp * (a.cp.dp > 0 ? a.cp.dp : 1);
    }
    CliHwLoaded hl;
    rc = cli_hw_load(&a.ch, DEFAULT_CLUSTER, default_gpus, &hl);
    if (rc) return rc;
    if ((rc = cli_headroom_check(a.o.headroom, &hl.model.gpu)) != 0) {
        cli_hw_free(&hl);
        return rc;
    }
    ParallelPlan p;
    rc = cli_plan_load(&s, &a.cp, &m, hl.cluster.gpus, &p);
    if (!rc) rc = cli_sim_framework(&s, &a.cs, &p.framework);
    if (rc) {
        cli_hw_free(&hl);
        return rc;
    }
    SimSetup in = {.model = &m, .plan = p, .hw = &hl.model, .net = &hl.net, .opt = so};
    TsError err = {0};
    SimResult r;
    if (sim_simulate(&in, NULL, &r, &err) != TS_OK) {
        cli_hw_free(&hl);
        return cli_fail(&err);
    }
    sim_fit_alternatives(&in, &r);
    TsBuf out = {0};
    if (a.o.trace && write_trace(a.o.trace, &in, &r, &err) != TS_OK) {
        sim_result_free(&r);
        cli_hw_free(&hl);
        return cli_fail(&err);
    }
    if (a.o.html && write_html(a.o.html, &in, &r, hl.cluster.gpu.name, &err) != TS_OK) {
        sim_result_free(&r);
        cli_hw_free(&hl);
        return cli_fail(&err);
    }
    TrainEstimate test;
    RepTrain train = {.opt = &topt, .est = &test};
    if (want_train && train_of(&topt, &in, &r, &test, &err) != TS_OK) {
        sim_result_free(&r);
        cli_hw_free(&hl);
        return cli_fail(&err);
    }
    int code = 0;
    if (a.o.json) rep_sim_json(&in, &r, want_train ? &train : NULL, &out);
    else if (a.em.name) code = cli_emit_write(&a.em, &in, &r, &out);
    else rep_sim_text(&in, &r, want_train ? &train : NULL, &out);
    if (!code) code = cli_emit(NULL, &out);
    /* The full result is printed either way; a plan that does not fit in
     * memory is a failed plan for scripts (exit 4, DESIGN.md). */
    if (code == 0 && !r.memory.fits) code = TS_ERR_PLAN;
    ts_buf_free(&out);
    sim_result_free(&r);
    cli_hw_free(&hl);
    return code;
}
