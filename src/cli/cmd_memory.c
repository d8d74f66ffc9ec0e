/* trainsim memory — memory per GPU of every pipeline stage, by category,
 * against the GPU's capacity (trainsim's model or Megatron's formula). */
#include "cli.h"
#include "cli_hw.h"
#include "cli_plan.h"
#include "cli_recipe.h"
#include "cli_sim.h"
#include "trainsim/hw.h"
#include "trainsim/partition.h"
#include "trainsim/report_memory.h"

#include <stdlib.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

/* The plan does not fit: say so on stderr (exit code stays 0: memory
 * reports, simulate and sweep decide). */
static void warn_nofit(const ParallelPlan *p, const RepMemory *rm, int64_t n_over, double room)
{
    const PartMemory *peak = rm->peak;
    const double cap = rm->capacity_bytes;
    const int64_t pp = p->pp;
    char less[64] = "";
    if (room > 0) snprintf(less, sizeof less, " less the %.2f GiB of --headroom", room / GIB);
    fprintf(stderr,
            "trainsim memory: warning: the plan does not fit: %lld of %lld stage%s exceed%s the %.2f GiB of "
            "%s%s; stage %d needs %.2f GiB, %.2f GiB more\n",
            (long long)n_over, (long long)pp, pp == 1 ? "" : "s", n_over == 1 ? "s" : "", cap / GIB, rm->gpu, less,
            peak->stage, peak->total_bytes / GIB, (peak->total_bytes - (cap - room)) / GIB);
    char hint[320];
    part_fit_hint(p, rm->fit, rm->n_fit, hint, sizeof hint);
    fprintf(stderr, "hint: %s\n", hint);
}

int cmd_memory(int argc, char **argv)
{
    CliSpec s = {.cmd = "memory",
                 .usage = "trainsim memory [--recipe NAME] [--model M] [plan options] [--cluster C] [--gpu G] [--gpus N] "
                          "[--memory-model trainsim|megatron] [--json]",
                 .summary = "Memory per GPU of every pipeline stage by category (weights, gradients, "
                            "optimizer state, activations, other) against the GPU's capacity, with the "
                            "headroom. The capacity is the HBM of --gpu or of the cluster's GPU (default "
                            "dgx-h100: h100-sxm5-80gb, 80 GiB). "
                            "--memory-model megatron reproduces Megatron-LM's theoretical memory formula. "
                            "Exit 0 when every stage fits; 4 when a stage does not fit (the table is printed, with a warning on stderr) or the plan is invalid."};
    CliModel cm;
    CliPlan cp;
    CliHw hw;
    const char *mm = NULL, *out_path = NULL, *ce = NULL;
    bool json = false, sel_ops = false, grads16 = false, freed = false;
    double room = 0; /* --headroom */
    cli_model_init(&cm);
    cli_plan_init(&cp);
    cli_hw_init(&hw);
    cli_recipe_add(&s);
    cli_model_add(&s, &cm);
    cli_plan_add(&s, &cp, false);
    cli_hw_add(&s, &hw);
    cli_add(&s, "memory-model", CLI_STR, &mm, "M", "trainsim (default) | megatron");
    cli_add(&s, "selective-ops", CLI_FLAG, &sel_ops, NULL, CLI_SEL_OPS_HELP);
    cli_add(&s, "fp16-grad-reduce", CLI_FLAG, &grads16, NULL, "gradient buffer at 16 bit (default fp32)");
    cli_add(&s, "ce-fusion", CLI_STR, &ce, "K", CLI_CE_FUSION_HELP);
    cli_add(&s, "grads-freed", CLI_FLAG, &freed, NULL, CLI_GRADS_FREED_HELP);
    cli_add(&s, "headroom", CLI_BYTES, &room, "GIB",
            "memory a stage must leave free to fit (the memory model's error, allocator spikes); GiB, or a size "
            "such as 512MiB (default 0)");
    cli_add(&s, "json", CLI_FLAG, &json, NULL, "JSON output");
    cli_add(&s, "output", CLI_STR, &out_path, "FILE", "write to FILE instead of stdout");
    int rc = cli_parse(&s, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;

    SimCeFusion cef;
    if ((rc = cli_ce_fusion(ce, &cef)) != 0) return rc;
    PartMemOptions mo;
    part_mem_options_init(&mo);
    mo.selective_ops = sel_ops;
    mo.ce_fusion = (int)cef;
    mo.grads_freed = freed;
    if (mm && !part_memmodel_parse(mm, &mo.model)) {
        fprintf(stderr, "trainsim: invalid value '%s' for --memory-model (expected trainsim or megatron)\n", mm);
        return 2;
    }
    if ((sel_ops || grads16 || freed || cef != SIM_CE_NONE) && mo.model == PART_MEMMODEL_MEGATRON) {
        TsError e = {0};
        const char *opt = sel_ops   ? "--selective-ops"
                          : grads16 ? "--fp16-grad-reduce"
                          : freed   ? "--grads-freed"
                                    : "--ce-fusion";
        ts_err(&e, TS_ERR_USAGE, "%s does not apply to --memory-model megatron", opt);
        ts_err_hint(&e, "Megatron's formula knows only its own defaults (selective recompute, fp32 gradients "
                        "kept between steps, its loss); drop one of the two");
        return cli_fail(&e);
    }
    ModelSpec m;
    if ((rc = cli_model_load(&cm, "gpt2", &m)) != 0) return rc;
    ParallelPlan p;
    if ((rc = cli_plan_load(&s, &cp, &m, hw.gpus > 0 ? hw.gpus : 0, &p)) != 0) return rc;
    if (freed && !plan_hf(&p))
        fprintf(stderr, "trainsim memory: warning: %s\n", SIM_GRADS_FREED_NO_EFFECT); /* simulate's warning */
    CliHwLoaded l;
    hw.no_traffic = true;
    if ((rc = cli_hw_load(&hw, "dgx-h100", p.gpus, &l)) != 0) return rc;
    const GpuSpec *g = &l.cluster.gpu;
    /* the gradient buffer at the activation dtype (bf16 under fp8), as simulate's */
    if (grads16) mo.grad_bytes = (double)ts_dtype_bytes(sim_activation_dtype(p.dtype));
    double cap = g->hbm_bytes;
    if ((rc = cli_headroom_check(room, g)) != 0) {
        cli_hw_free(&l);
        return rc;
    }
    mo.capacity_bytes = cap - room; /* what a stage may use: part_fit_alternatives fits plans in it */

    TsError err = {0};
    PartMemory *st = calloc((size_t)p.pp, sizeof *st), peak;
    if (!st) { cli_hw_free(&l); return 1; }
    if (part_memory(&m, &p, &mo, st, &peak, &err) != TS_OK) {
        free(st);
        cli_hw_free(&l);
        return cli_fail(&err);
    }
    TsBuf b = {0}, desc = {0};
    plan_describe(&p, &desc);
    RepMemory rm = {.model = m.name, .plan = desc.data, .memory_model = part_memmodel_name(mo.model),
                    .selective_ops = sel_ops, .grads_16bit = grads16, .grads_freed = freed && plan_hf(&p),
                    .ce_fusion = sim_ce_fusion_name(cef),
                    .gpu = g->name, .capacity_bytes = cap, .min_headroom_bytes = room, .stages = st,
                    .n_stages = p.pp, .peak = &peak};
    int64_t n_over = rep_memory_over(&rm);
    PartFitAlt alt[2];
    if (n_over > 0) { /* what would fit: the JSON's fits_with and the warning's hint */
        rm.fit = alt;
        rm.n_fit = part_fit_alternatives(&m, &p, &mo, alt, 2);
    }
    if (json) rep_memory_json(&rm, &b);
    else rep_memory_text(&rm, &b);
    if (n_over > 0) warn_nofit(&p, &rm, n_over, room);
    free(st);
    cli_hw_free(&l);
    ts_buf_free(&desc);
    rc = cli_emit(out_path, &b);
    ts_buf_free(&b);
    /* Printed in full either way; for scripts a plan that does not fit is a
     * failed plan (exit 4, DESIGN.md). */
    return rc == 0 && n_over > 0 ? TS_ERR_PLAN : rc;
}
