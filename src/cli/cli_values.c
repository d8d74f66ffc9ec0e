/* cli_values.c — the checks of the plan's named values (cli_values.h): each
 * accepts what its parser accepts and, otherwise, says what the option takes,
 * listing the names from the enum itself so the list cannot go stale. */
#include "cli_values.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* "invalid value 'X' for --opt", with "--opt takes a, b or c" as the hint. */
static TsStatus bad(const char *opt, const char *val, const char *const *names, int n, TsError *err)
{
    char list[320] = "";
    size_t k = 0;
    for (int i = 0; i < n && k < sizeof list; i++)
        k += (size_t)snprintf(list + k, sizeof list - k, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", names[i]);
    ts_err(err, TS_ERR_USAGE, "invalid value '%s' for --%s", val, opt);
    ts_err_hint(err, "--%s takes %s", opt, list);
    return TS_ERR_USAGE;
}

/* One check per enum: its parser, and its names for the hint. */
#define ENUM_CHECK(fn, Type, parse, name, count)                                   \
    TsStatus fn(const char *opt, const char *val, TsError *err)                    \
    {                                                                              \
        Type v;                                                                    \
        if (parse(val, &v)) return TS_OK;                                          \
        const char *names[count];                                                  \
        for (int i = 0; i < (count); i++) names[i] = name((Type)i);                \
        return bad(opt, val, names, count, err);                                   \
    }
ENUM_CHECK(cli_check_recompute, PlanRecompute, plan_recompute_parse, plan_recompute_name, PLAN_RECOMPUTE_COUNT)
ENUM_CHECK(cli_check_schedule, PlanSchedule, plan_sched_parse, plan_sched_name, PLAN_SCHED_COUNT)
ENUM_CHECK(cli_check_framework, PlanFramework, plan_framework_parse, plan_framework_name, PLAN_FRAMEWORK_COUNT)
ENUM_CHECK(cli_check_precision, PlanPrecision, plan_precision_parse, plan_precision_name, PLAN_PRECISION_COUNT)
ENUM_CHECK(cli_check_optimizer, PlanOptimizer, plan_optim_parse, plan_optim_name, PLAN_OPTIM_COUNT)
ENUM_CHECK(cli_check_moe_dispatch, PlanMoeDispatch, plan_moe_dispatch_parse, plan_moe_dispatch_name,
           PLAN_MOE_DISPATCH_COUNT)
ENUM_CHECK(cli_check_fp8_recipe, PlanFp8Recipe, plan_fp8_parse, plan_fp8_name, PLAN_FP8_COUNT)
#undef ENUM_CHECK

TsStatus cli_check_software(const char *opt, const char *val, TsError *err)
{
    static const char *const names[] = {"2025", "2024"};
    HwSoftware sw;
    return hw_software_parse(val, &sw) ? TS_OK : bad(opt, val, names, 2, err);
}

bool cli_train_dtype(const char *s, TsDtype *out)
{
    TsDtype d;
    if (!ts_dtype_parse(s, &d) || d == TS_DTYPE_TF32) return false;
    *out = d;
    return true;
}

TsStatus cli_check_dtype(const char *opt, const char *val, TsError *err)
{
    static const char *const names[] = {"bf16", "fp16", "fp8", "fp32"};
    TsDtype d;
    return cli_train_dtype(val, &d) ? TS_OK : bad(opt, val, names, 4, err);
}

bool cli_adam_moments(const char *s, TsDtype *out)
{
    if (!strcmp(s, "fp32")) *out = TS_DTYPE_FP32;
    else if (!strcmp(s, "bf16")) *out = TS_DTYPE_BF16;
    else return false;
    return true;
}

TsStatus cli_check_adam_moments(const char *opt, const char *val, TsError *err)
{
    static const char *const names[] = {"fp32", "bf16"};
    TsDtype d;
    return cli_adam_moments(val, &d) ? TS_OK : bad(opt, val, names, 2, err);
}

TsStatus cli_check_rc_modules(const char *opt, const char *val, TsError *err)
{
    uint32_t mods;
    const char *bad_at = NULL;
    size_t len = 0;
    if (plan_rc_modules_parse(val, &mods, &bad_at, &len)) return TS_OK;
    ts_err(err, TS_ERR_USAGE, "unknown module '%.*s' in --%s %s", (int)len, bad_at, opt, val);
    ts_err_hint(err, "the modules are core_attn, layernorm, moe_act and mla_up_proj");
    return TS_ERR_USAGE;
}

int cli_stage_layers(const char *s, int64_t *out, int cap)
{
    int n = 0;
    while (*s) {
        char *end;
        long long v = strtoll(s, &end, 10);
        if (end == s || (*end != ',' && *end != '\0') || n >= cap) return -1;
        out[n++] = (int64_t)v;
        s = *end == ',' ? end + 1 : end;
    }
    return n;
}

TsStatus cli_check_stage_layers(const char *opt, const char *val, TsError *err)
{
    int64_t tmp[CLI_PLAN_MAX_STAGES];
    if (cli_stage_layers(val, tmp, CLI_PLAN_MAX_STAGES) >= 0) return TS_OK;
    ts_err(err, TS_ERR_USAGE, "invalid value '%s' for --%s", val, opt);
    ts_err_hint(err, "--%s takes comma-separated layer counts, one per pipeline chunk (at most %d), e.g. 5,4,4,3", opt,
                CLI_PLAN_MAX_STAGES);
    return TS_ERR_USAGE;
}
