/* cli_emit.c — the --emit option (cli_emit.h). */
#include "cli_emit.h"

#include <string.h>

void cli_emit_add(CliSpec *s, CliEmit *r)
{
    *r = (CliEmit){0};
    cli_add(s, "emit", CLI_STR, &r->name, "F",
            "print only the plan as megatron|nemo|torchtitan|deepspeed launch arguments (sets --framework)");
}

int cli_emit_check(const CliSpec *s, CliEmit *r, const char *const clash[], const char **framework,
                     const char **precision)
{
    if (!r->name) return 0;
    TsError e = {0};
    if (!rep_emit_parse(r->name, &r->target)) {
        ts_err(&e, TS_ERR_USAGE, "invalid value '%s' for --emit", r->name);
        ts_err_hint(&e, "--emit takes megatron (pretrain_gpt.py flags), nemo (Megatron-Bridge overrides), torchtitan "
                        "(a TOML job config) or deepspeed (ds_config.json and Megatron-DeepSpeed flags)");
        return cli_fail(&e);
    }
    for (int i = 0; clash[i]; i++)
        if (cli_seen(s, clash[i])) {
            ts_err(&e, TS_ERR_USAGE, "--%s does not apply with --emit, which prints only the launch recipe", clash[i]);
            ts_err_hint(&e, "run once with --emit and once with --%s", clash[i]);
            return cli_fail(&e);
        }
    if (!cli_seen(s, "framework") && !cli_seen(s, "eager-pytorch") && !cli_seen(s, "deepspeed-pipe"))
        *framework = plan_framework_name(rep_emit_framework(r->target));
    if (!cli_seen(s, "precision")) *precision = plan_precision_name(rep_emit_precision(r->target));
    return 0;
}

static const char *generator(const char *cmd, char *buf, size_t cap)
{
    snprintf(buf, cap, "trainsim %s %s", TRAINSIM_VERSION, cmd);
    return buf;
}

int cli_emit_write(const CliEmit *r, const SimSetup *in, const SimResult *res, TsBuf *out)
{
    char gen[64];
    TsError err = {0};
    if (rep_emit(r->target, in, generator("simulate", gen, sizeof gen), out, &err) != TS_OK) return cli_fail(&err);
    if (!res->memory.fits)
        fprintf(stderr, "trainsim simulate: warning: the plan needs %.1f GiB per GPU, more than the GPU's %.1f GiB "
                        "(the summary without --emit shows where it goes)\n",
                res->memory.total_bytes / 0x1p30, res->memory.capacity_bytes / 0x1p30);
    return 0;
}

/* err's message without its "--emit F: " prefix */
static const char *reason(const TsError *err, const char *name)
{
    size_t n = strlen("--emit ") + strlen(name) + 2;
    return strlen(err->msg) > n ? err->msg + n : err->msg;
}

int cli_emit_sweep(const CliEmit *r, const SearchEvalCtx *x, const SearchResult *res, TsBuf *out)
{
    char gen[64];
    generator("sweep", gen, sizeof gen);
    TsError first = {0};
    for (int i = 0; i < res->n_top; i++) {
        SimSetup in;
        TsError err = {0};
        if (!search_sim_setup(x, &res->top[i].k, &in)) continue;
        /* the split --balance-stages ranked the plan on, not the default one */
        const SearchPoint *pt = &res->top[i];
        int64_t split[SIM_BALANCE_MAX];
        if (pt->n_stage_layers > 0) {
            for (int32_t s = 0; s < pt->n_stage_layers; s++) split[s] = pt->stage_layers[s];
            in.plan.stage_layers = split;
            in.plan.n_stage_layers = pt->n_stage_layers;
        }
        if (rep_emit(r->target, &in, gen, out, &err) == TS_OK) {
            if (i > 0)
                fprintf(stderr, "sweep: --emit %s writes plan %d of the ranking; the better ones cannot run under %s "
                                "(plan 1: %s)\n",
                        r->name, i + 1, r->name, reason(&first, r->name));
            return 0;
        }
        if (err.code != TS_ERR_PLAN) return cli_fail(&err);
        if (i == 0) first = err;
    }
    if (!first.code) return cli_fail(&(TsError){.code = TS_ERR_INTERNAL, .msg = "no ranked plan to write"});
    fprintf(stderr, "sweep: none of the %d ranked plans can be written for %s; the best one:\n", res->n_top,
            r->name);
    return cli_fail(&first);
}
