/*
 * cli_plan.h — the plan option group (--tp --pp ... --optimizer), shared by
 * memory, params, workload, simulate and sweep. cli_plan_load() turns the
 * options into a resolved ParallelPlan: a bad value is a usage error (exit
 * 2), a plan that breaks a rule is printed with the rule (exit 4).
 */
#ifndef TRAINSIM_CLI_PLAN_H
#define TRAINSIM_CLI_PLAN_H

#include "cli.h"
#include "cli_values.h"
#include "trainsim/plan.h"


typedef struct CliPlan {
    int64_t tp, pp, vpp, vpp_group, dp, cp, ep, etp, zero, recompute_layers;
    int64_t micro_batch, global_batch, seq, shampoo_blocks, gpus;
    int64_t moe_node_limit, dp_shard;
    double moe_imbalance, moe_capacity;
    bool sp, dist_opt, tp_overlap, no_flash, uneven, moe_pad;
    const char *recompute, *dtype, *schedule, *stage_layers, *optimizer, *framework, *precision;
    const char *recompute_modules, *fp8_recipe, *adam_moments, *moe_dispatch;
    bool with_gpus;                       /* this group owns --gpus (no hw group) */
    int64_t stage_buf[CLI_PLAN_MAX_STAGES]; /* parsed --stage-layers */
} CliPlan;

void cli_plan_init(CliPlan *cp);
/* Add the options. with_gpus: also add --gpus (commands without the hw group). */
void cli_plan_add(CliSpec *s, CliPlan *cp, bool with_gpus);
/* The knobs a sweep holds fixed for every plan (--recompute-modules, --fp8-recipe,
 * --adam-moments, --moe-*): added by cli_plan_add; cli_plan_knobs sets them on p
 * (0, or the usage error printed and 2). */
void cli_plan_add_knobs(CliSpec *s, CliPlan *cp);
int cli_plan_knobs(const CliPlan *cp, ParallelPlan *p);
/* Build and resolve the plan; gpus_from_hw > 0 overrides --gpus. Returns 0,
 * or the exit code after printing the error (2 usage, 4 invalid plan).
 * out->stage_layers points into cp (keep cp alive). */
int cli_plan_load(const CliSpec *s, CliPlan *cp, const ModelSpec *m, int64_t gpus_from_hw,
                  ParallelPlan *out);

#endif
