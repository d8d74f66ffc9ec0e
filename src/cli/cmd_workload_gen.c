/* trainsim workload: generation from model, plan, hardware and runtime
 * options. The task graph (chakra, json) is sim_workload_build's, the
 * simulator's own; the AICB and op-table layouts take the same dims and cost
 * callbacks (src/sim/generate.c). */
#include "cmd_workload_gen.h"

#include <stdlib.h>
#include <string.h>

#include "cli_recipe.h"
#include "cli_sim.h"
#include "trainsim/hw.h"
#include "trainsim/sim.h"
#include "trainsim/sim_workload.h"
#include "trainsim/workload_build.h"

void wl_gen_cli_init(WlGenCli *g)
{
    memset(g, 0, sizeof *g);
    cli_model_init(&g->model);
    cli_plan_init(&g->plan);
    cli_hw_init(&g->hw);
    cli_sim_init(&g->sim);
}

void wl_gen_cli_add(CliSpec *s, WlGenCli *g)
{
    cli_recipe_add(s);
    cli_model_add(s, &g->model);
    cli_plan_add(s, &g->plan, false);
    cli_hw_add(s, &g->hw);
    cli_sim_add_workload(s, &g->sim);
    g->spec = s;
}

int wl_gen_cli_build(WlGenCli *g, Workload **out)
{
    *out = NULL;
    ModelSpec m;
    int rc = cli_model_load(&g->model, "gpt3-175b", &m);
    if (rc) return rc;
    /* the plan fixes the GPU count when --gpus is not given */
    int64_t gpus = g->hw.gpus > 0 ? g->hw.gpus : 0;
    ParallelPlan p;
    if ((rc = cli_plan_load(g->spec, &g->plan, &m, gpus, &p))) return rc;
    if ((rc = cli_sim_framework(g->spec, &g->sim, &p.framework))) return rc;
    if ((rc = cli_sim_check(g->spec, &g->sim))) return rc;
    SimOptions so;
    cli_sim_options(&g->sim, &so);
    /* what only the task graph (chakra, json) has a place for */
    static const char *const dag_only[] = {"no-dp-overlap", "no-param-gather-overlap", "fp16-grad-reduce", "bucket-mb",
                                           "eager-pytorch", "selective-ops", "cp-comm", "deepspeed-pipe",
                                           "sequential-experts"};
    bool dag = g->fmt == WL_FMT_CHAKRA || g->fmt == WL_FMT_JSON;
    for (size_t i = 0; i < sizeof dag_only / sizeof dag_only[0] && !dag; i++)
        if (cli_seen(g->spec, dag_only[i])) {
            TsError e = {0};
            ts_err(&e, TS_ERR_USAGE, "--%s applies to --format chakra and json", dag_only[i]);
            ts_err_hint(&e, "AICB's SimAI layout (simai, astrasim) fixes its gradient and parameter collectives and "
                            "its compute rows (AICB's own kernels) and has no context-parallel group; the op table "
                            "has neither");
            return cli_fail(&e);
        }
    TsError err = {0};
    if (p.cp > 1 && (g->fmt == WL_FMT_SIMAI || g->fmt == WL_FMT_ASTRASIM))
        fprintf(stderr, "trainsim: warning: AICB's SimAI layout has no context parallelism (AICB ignores "
                        "--context-parallel-size): the %lld CP ranks are written as data-parallel ranks with whole "
                        "%lld-token sequences (%lldx the plan's tokens per step); --format chakra or json models "
                        "the CP exchange\n",
                (long long)p.cp, (long long)p.seq, (long long)p.cp);
    if (plan_ds_pipe(&p) && p.pp > 1 && g->fmt == WL_FMT_CHAKRA)
        fprintf(stderr, "trainsim: warning: Chakra has no rendezvous: ASTRA-sim runs DeepSpeed's blocking sends "
                        "without waiting for their receivers (faster than the engine); --format json keeps them "
                        "as \"sync\" pairs\n");
    if ((rc = cli_hw_load(&g->hw, "dgx-h100", p.gpus, &g->loaded))) return rc;
    snprintf(g->costed_on, sizeof g->costed_on, "%s in %s", g->loaded.cluster.gpu.name, g->loaded.cluster.name);
    TsStatus st;
    if (dag) { /* the task graph of what `simulate` models (generate.c) */
        SimSetup in = {.model = &m, .plan = p, .hw = &g->loaded.model, .net = &g->loaded.net, .opt = so};
        st = sim_workload_build(&in, out, &err);
        cli_hw_free(&g->loaded);
        return st ? cli_fail(&err) : 0;
    }
    if (g->fmt == WL_FMT_SIMAI || g->fmt == WL_FMT_ASTRASIM) {
        SimSetup in = {.model = &m, .plan = p, .hw = &g->loaded.model, .net = &g->loaded.net, .opt = so};
        st = sim_workload_build_aicb(&in, g->aicb_compat, out, &err);
    } else {
        WlOptableOptions oo = {.neusight = g->neusight};
        st = wl_build_optable(&m, &p, &g->loaded.model, &oo, out, &err);
    }
    cli_hw_free(&g->loaded);
    return st ? cli_fail(&err) : 0;
}
