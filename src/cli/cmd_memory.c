/* trainsim memory — memory per GPU of every pipeline stage, by category,
 * against the GPU's capacity (trainsim's model or Megatron's formula). */
#include "cli.h"
#include "cli_hw.h"
#include "cli_plan.h"
#include "cli_recipe.h"
#include "cli_sim.h"
#include "trainsim/hw.h"
#include "trainsim/partition.h"

#include <stdlib.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

static void mem_json(TsBuf *b, const PartMemory *x, double cap, bool detail)
{
    ts_buf_printf(b, "{\"stage\": %d, \"weights_bytes\": ", x->stage);
    ts_json_fmt_double(b, x->weights_bytes);
    ts_buf_puts(b, ", \"gradients_bytes\": ");
    ts_json_fmt_double(b, x->gradients_bytes);
    ts_buf_puts(b, ", \"optimizer_bytes\": ");
    ts_json_fmt_double(b, x->optimizer_bytes);
    ts_buf_puts(b, ", \"activations_bytes\": ");
    ts_json_fmt_double(b, x->activations_bytes);
    ts_buf_puts(b, ", \"other_bytes\": ");
    ts_json_fmt_double(b, x->other_bytes);
    ts_buf_puts(b, ", \"total_bytes\": ");
    ts_json_fmt_double(b, x->total_bytes);
    ts_buf_puts(b, ", \"capacity_bytes\": ");
    ts_json_fmt_double(b, cap);
    ts_buf_printf(b, ", \"fits\": %s, \"headroom_bytes\": ", x->total_bytes <= cap ? "true" : "false");
    ts_json_fmt_double(b, cap - x->total_bytes);
    if (detail) {
        const struct { const char *k; double v; } d[] = {
            {"params", x->params}, {"embed_params", x->embed_params},
            {"expert_params", x->expert_params}, {"act_layers_bytes", x->act_layers_bytes},
            {"act_embed_bytes", x->act_embed_bytes}, {"act_head_bytes", x->act_head_bytes},
            {"inflight_microbatches", x->inflight}, {"workspace_bytes", x->workspace_bytes},
            {"runtime_bytes", x->runtime_bytes}, {"fragmentation_bytes", x->frag_bytes},
        };
        ts_buf_puts(b, ", \"detail\": {");
        for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
            ts_buf_printf(b, "%s\"%s\": ", i ? ", " : "", d[i].k);
            ts_json_fmt_double(b, d[i].v);
        }
        ts_buf_puts(b, "}");
    }
    ts_buf_puts(b, "}");
}

/* One stage: the categories, the total, the headroom (capacity - total,
 * negative when it does not fit) and the verdict. */
static void mem_row(TsBuf *b, const char *label, const PartMemory *x, double cap)
{
    ts_buf_printf(b, "%-7s %9.2f %9.2f %9.2f %11.2f %9.2f %9.2f %9.2f  %s\n", label,
                  x->weights_bytes / GIB, x->gradients_bytes / GIB, x->optimizer_bytes / GIB,
                  x->activations_bytes / GIB, x->other_bytes / GIB, x->total_bytes / GIB,
                  (cap - x->total_bytes) / GIB, x->total_bytes <= cap ? "fits" : "DOES NOT FIT");
}

/* The plan does not fit: say so on stderr (exit code stays 0: memory
 * reports, simulate and sweep decide). */
static void warn_nofit(const PartMemory *peak, int64_t n_over, int64_t pp, double cap, const char *gpu)
{
    fprintf(stderr,
            "trainsim memory: warning: the plan does not fit: %lld of %lld stage%s exceed%s the %.2f GiB of "
            "%s; stage %d needs %.2f GiB, %.2f GiB more\n",
            (long long)n_over, (long long)pp, pp == 1 ? "" : "s", n_over == 1 ? "s" : "", cap / GIB, gpu,
            peak->stage, peak->total_bytes / GIB, (peak->total_bytes - cap) / GIB);
    fprintf(stderr, "hint: use more GPUs (larger tp/pp/dp), --dist-opt or --zero, --recompute selective|full, "
                    "or a smaller --micro-batch\n");
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
    const char *mm = NULL, *out_path = NULL;
    bool json = false, sel_ops = false;
    cli_model_init(&cm);
    cli_plan_init(&cp);
    cli_hw_init(&hw);
    cli_recipe_add(&s);
    cli_model_add(&s, &cm);
    cli_plan_add(&s, &cp, false);
    cli_hw_add(&s, &hw);
    cli_add(&s, "memory-model", CLI_STR, &mm, "M", "trainsim (default) | megatron");
    cli_add(&s, "selective-ops", CLI_FLAG, &sel_ops, NULL, CLI_SEL_OPS_HELP);
    cli_add(&s, "json", CLI_FLAG, &json, NULL, "JSON output");
    cli_add(&s, "output", CLI_STR, &out_path, "FILE", "write to FILE instead of stdout");
    int rc = cli_parse(&s, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;

    PartMemOptions mo;
    part_mem_options_init(&mo);
    mo.selective_ops = sel_ops;
    if (mm && !part_memmodel_parse(mm, &mo.model)) {
        fprintf(stderr, "trainsim: invalid value '%s' for --memory-model (expected trainsim or megatron)\n", mm);
        return 2;
    }
    if (sel_ops && mo.model == PART_MEMMODEL_MEGATRON) {
        TsError e = {0};
        ts_err(&e, TS_ERR_USAGE, "--selective-ops does not apply to --memory-model megatron");
        ts_err_hint(&e, "Megatron's formula knows only its own selective recompute; drop one of the two");
        return cli_fail(&e);
    }
    ModelSpec m;
    if ((rc = cli_model_load(&cm, "gpt2", &m)) != 0) return rc;
    ParallelPlan p;
    if ((rc = cli_plan_load(&s, &cp, &m, hw.gpus > 0 ? hw.gpus : 0, &p)) != 0) return rc;
    CliHwLoaded l;
    if ((rc = cli_hw_load(&hw, "dgx-h100", p.gpus, &l)) != 0) return rc;
    const GpuSpec *g = &l.cluster.gpu;
    double cap = g->hbm_bytes;
    mo.capacity_bytes = cap;

    TsError err = {0};
    PartMemory *st = calloc((size_t)p.pp, sizeof *st), peak;
    if (!st) { cli_hw_free(&l); return 1; }
    if (part_memory(&m, &p, &mo, st, &peak, &err) != TS_OK) {
        free(st);
        cli_hw_free(&l);
        return cli_fail(&err);
    }
    int64_t n_over = 0;
    for (int64_t i = 0; i < p.pp; i++) n_over += st[i].total_bytes > cap;

    TsBuf b = {0}, desc = {0};
    plan_describe(&p, &desc);
    const char *mname = part_memmodel_name(mo.model);
    if (json) {
        ts_buf_puts(&b, "{\"format\": \"trainsim-memory\", \"version\": 1, \"model\": ");
        ts_json_escape(&b, m.name);
        ts_buf_puts(&b, ", \"plan\": ");
        ts_json_escape(&b, desc.data ? desc.data : "");
        ts_buf_printf(&b, ", \"memory_model\": \"%s\", \"selective_recompute\": \"%s\", \"gpu\": ", mname,
                      sel_ops ? "ops" : "attention");
        ts_json_escape(&b, g->name);
        ts_buf_printf(&b, ", \"stages_not_fitting\": %lld", (long long)n_over);
        ts_buf_puts(&b, ",\n \"memory\": ");
        mem_json(&b, &peak, cap, true);
        ts_buf_puts(&b, ",\n \"stages\": [");
        for (int64_t i = 0; i < p.pp; i++) {
            ts_buf_puts(&b, i ? ",\n  " : "\n  ");
            mem_json(&b, &st[i], cap, true);
        }
        ts_buf_puts(&b, "\n ]}\n");
    } else {
        ts_buf_printf(&b, "memory per GPU of %s, %s\n", m.name, desc.data ? desc.data : "");
        ts_buf_printf(&b, "memory model: %s%s; GPU %s with %.2f GiB\n\n", mname,
                      sel_ops ? " (selective recompute as op-level SAC)" : "", g->name, cap / GIB);
        ts_buf_printf(&b, "%-7s %9s %9s %9s %11s %9s %9s %9s\n", "stage", "weights", "grads",
                      "optimizer", "activations", "other", "total", "headroom");
        ts_buf_printf(&b, "%-7s %9s %9s %9s %11s %9s %9s %9s\n", "", "GiB", "GiB", "GiB", "GiB", "GiB",
                      "GiB", "GiB");
        for (int64_t i = 0; i < p.pp; i++) {
            char lab[24];
            snprintf(lab, sizeof lab, "%lld", (long long)i);
            mem_row(&b, lab, &st[i], cap);
        }
        ts_buf_printf(&b, "\nmost loaded GPU: stage %d, %.2f GiB of %.2f GiB (%.1f%%), headroom %.2f GiB: %s\n",
                      peak.stage, peak.total_bytes / GIB, cap / GIB, 100.0 * peak.total_bytes / cap,
                      (cap - peak.total_bytes) / GIB, peak.total_bytes <= cap ? "fits" : "does not fit");
        if (n_over > 0)
            ts_buf_printf(&b, "DOES NOT FIT: %lld of %lld stage%s over capacity\n", (long long)n_over,
                          (long long)p.pp, p.pp == 1 ? "" : "s");
    }
    if (n_over > 0) warn_nofit(&peak, n_over, p.pp, cap, g->name);
    free(st);
    cli_hw_free(&l);
    ts_buf_free(&desc);
    rc = cli_emit(out_path, &b);
    ts_buf_free(&b);
    /* Printed in full either way; for scripts a plan that does not fit is a
     * failed plan (exit 4, DESIGN.md). */
    return rc == 0 && n_over > 0 ? TS_ERR_PLAN : rc;
}
