/*
 * cli_values.h — the plan's named option values (--recompute, --schedule,
 * --dtype, --framework, --precision, --optimizer, --moe-dispatcher,
 * --fp8-recipe, --adam-moments, --recompute-modules, --stage-layers): their
 * parsers where the plan module has none, and one CliCheck each
 * (cli_add_check), so a bad value is refused where it is given — on the
 * command line, or at a recipe's file:line:col — with what the option takes.
 */
#ifndef TRAINSIM_CLI_VALUES_H
#define TRAINSIM_CLI_VALUES_H

#include "cli.h"
#include "trainsim/plan.h"
#include "trainsim/hw.h"

#define CLI_PLAN_MAX_STAGES 1024

/* A training dtype (--dtype): bf16, fp16, fp8 or fp32 (tf32 is a compute
 * mode, not a training dtype). False for anything else. */
bool cli_train_dtype(const char *s, TsDtype *out);
/* --adam-moments: fp32 or bf16. */
bool cli_adam_moments(const char *s, TsDtype *out);
/* --stage-layers "5,4,4,3" into out[0..cap): the count, or -1 when malformed or longer. */
int cli_stage_layers(const char *s, int64_t *out, int cap);

TsStatus cli_check_recompute(const char *opt, const char *val, TsError *err);
TsStatus cli_check_schedule(const char *opt, const char *val, TsError *err);
TsStatus cli_check_framework(const char *opt, const char *val, TsError *err);
TsStatus cli_check_precision(const char *opt, const char *val, TsError *err);
TsStatus cli_check_optimizer(const char *opt, const char *val, TsError *err);
TsStatus cli_check_moe_dispatch(const char *opt, const char *val, TsError *err);
TsStatus cli_check_fp8_recipe(const char *opt, const char *val, TsError *err);
TsStatus cli_check_dtype(const char *opt, const char *val, TsError *err);
/* --software: 2025 or 2024 (hw_software_parse). */
TsStatus cli_check_software(const char *opt, const char *val, TsError *err);
TsStatus cli_check_adam_moments(const char *opt, const char *val, TsError *err);
TsStatus cli_check_rc_modules(const char *opt, const char *val, TsError *err);
TsStatus cli_check_stage_layers(const char *opt, const char *val, TsError *err);

#endif
