/* cli_plan.c — the plan option group. */
#include "cli_plan.h"

#include <stdlib.h>
#include <string.h>

void cli_plan_init(CliPlan *cp)
{
    memset(cp, 0, sizeof *cp);
    cp->tp = cp->pp = cp->vpp = cp->cp = cp->ep = 1;
    cp->micro_batch = 1;
    cp->shampoo_blocks = 1;
}

void cli_plan_add(CliSpec *s, CliPlan *cp, bool with_gpus)
{
    cp->with_gpus = with_gpus;
    cli_add(s, "tp", CLI_INT, &cp->tp, "N", "tensor parallel size");
    cli_add(s, "pp", CLI_INT, &cp->pp, "N", "pipeline stages");
    cli_add(s, "vpp", CLI_INT, &cp->vpp, "N", "virtual pipeline chunks per stage (interleaved)");
    cli_add(s, "dp", CLI_INT, &cp->dp, "N", "data parallel size (default: gpus/(tp*pp*cp))");
    cli_add(s, "cp", CLI_INT, &cp->cp, "N", "context parallel size");
    cli_add(s, "ep", CLI_INT, &cp->ep, "N", "expert parallel size");
    cli_add(s, "etp", CLI_INT, &cp->etp, "N", "expert tensor parallel size (default: tp)");
    cli_add(s, "sp", CLI_FLAG, &cp->sp, NULL, "sequence parallelism (default on when tp > 1)");
    cli_add(s, "no-sp", CLI_NOFLAG, &cp->sp, NULL, "no sequence parallelism");
    cli_add(s, "zero", CLI_INT, &cp->zero, "0..3", "DeepSpeed ZeRO stage");
    cli_add(s, "dist-opt", CLI_FLAG, &cp->dist_opt, NULL, "Megatron distributed optimizer");
    cli_add(s, "recompute", CLI_STR, &cp->recompute, "MODE", "none|selective|full");
    cli_add(s, "recompute-layers", CLI_INT, &cp->recompute_layers, "N",
            "full recompute: layers per chunk (0 = all)");
    cli_add(s, "micro-batch", CLI_INT, &cp->micro_batch, "B", "sequences per micro-batch");
    cli_add(s, "global-batch", CLI_INT, &cp->global_batch, "N",
            "sequences per step (default micro-batch*dp)");
    cli_add(s, "seq", CLI_INT, &cp->seq, "S", "sequence length (default min(max positions, 2048))");
    cli_add(s, "dtype", CLI_STR, &cp->dtype, "T", "bf16|fp16|fp8|fp32 (the GEMMs' compute type)");
    cli_add(s, "framework", CLI_STR, &cp->framework, "F",
            "megatron|torchtitan|deepspeed|hf: the code path that runs the step (megatron)");
    cli_add(s, "precision", CLI_STR, &cp->precision, "P",
            "mixed|amp|pure: fp32 main params (mixed), fp32 params with autocast (amp), all 16-bit (pure)");
    cli_add(s, "schedule", CLI_STR, &cp->schedule, "S", "1f1b|interleaved|gpipe");
    cli_add(s, "stage-layers", CLI_STR, &cp->stage_layers, "a,b,...",
            "layers per pipeline chunk (pp*vpp entries)");
    cli_add(s, "uneven-stages", CLI_FLAG, &cp->uneven, NULL,
            "when pp*vpp does not divide the layers: last and first chunks one layer lighter");
    cli_add(s, "optimizer", CLI_STR, &cp->optimizer, "O", "adam|shampoo");
    cli_add(s, "shampoo-blocks", CLI_INT, &cp->shampoo_blocks, "K",
            "Shampoo blocks per layer weight matrix");
    cli_add(s, "tp-overlap", CLI_FLAG, &cp->tp_overlap, NULL, "overlap TP communication with GEMMs");
    cli_add(s, "no-flash", CLI_FLAG, &cp->no_flash, NULL,
            "attention stores its S^2 scores (no FlashAttention)");
    if (with_gpus) cli_add(s, "gpus", CLI_INT, &cp->gpus, "N", "number of GPUs");
}

static int usage(const char *opt, const char *val, const char *expect)
{
    fprintf(stderr, "trainsim: invalid value '%s' for --%s (expected %s)\n", val, opt, expect);
    return 2;
}

bool cli_train_dtype(const char *s, TsDtype *out)
{
    TsDtype d;
    if (!ts_dtype_parse(s, &d) || d == TS_DTYPE_TF32) return false;
    *out = d;
    return true;
}

int cli_plan_load(const CliSpec *s, CliPlan *cp, const ModelSpec *m, int64_t gpus_from_hw,
                  ParallelPlan *p)
{
    plan_init(p);
    p->tp = cp->tp; p->pp = cp->pp; p->vpp = cp->vpp; p->dp = cp->dp; p->cp = cp->cp;
    p->ep = cp->ep; p->etp = cp->etp;
    p->sp = cp->sp;
    p->sp_set = cli_seen(s, "sp") || cli_seen(s, "no-sp");
    p->zero = (int)cp->zero;
    p->dist_opt = cp->dist_opt;
    p->recompute_layers = cp->recompute_layers;
    p->micro_batch = cp->micro_batch;
    p->global_batch = cp->global_batch;
    p->seq = cp->seq;
    p->shampoo_blocks = cp->shampoo_blocks;
    p->tp_overlap = cp->tp_overlap;
    p->flash_attn = !cp->no_flash;
    p->gpus = gpus_from_hw > 0 ? gpus_from_hw : cp->gpus;
    if (cp->recompute && !plan_recompute_parse(cp->recompute, &p->recompute))
        return usage("recompute", cp->recompute, "none, selective or full");
    if (cp->dtype && !cli_train_dtype(cp->dtype, &p->dtype))
        return usage("dtype", cp->dtype, "bf16, fp16, fp8 or fp32");
    if (cp->framework && !plan_framework_parse(cp->framework, &p->framework))
        return usage("framework", cp->framework, "megatron, torchtitan, deepspeed or hf");
    if (cp->precision && !plan_precision_parse(cp->precision, &p->precision))
        return usage("precision", cp->precision, "mixed, amp or pure");
    if (cp->optimizer && !plan_optim_parse(cp->optimizer, &p->optimizer))
        return usage("optimizer", cp->optimizer, "adam or shampoo");
    if (cp->schedule) {
        if (!plan_sched_parse(cp->schedule, &p->schedule))
            return usage("schedule", cp->schedule, "1f1b, interleaved or gpipe");
    } else if (p->vpp > 1) {
        p->schedule = PLAN_SCHED_INTERLEAVED;
    }
    if (cp->stage_layers) {
        const char *q = cp->stage_layers;
        int32_t n = 0;
        while (*q) {
            char *end;
            long long v = strtoll(q, &end, 10);
            if (end == q || (*end != ',' && *end != '\0') || n >= CLI_PLAN_MAX_STAGES)
                return usage("stage-layers", cp->stage_layers, "comma-separated layer counts");
            cp->stage_buf[n++] = (int64_t)v;
            q = *end == ',' ? end + 1 : end;
        }
        p->stage_layers = cp->stage_buf;
        p->n_stage_layers = n;
    }
    p->uneven = cp->uneven;
    /* 0 stands for "the default" in --dp, --etp, --global-batch and --seq
     * inside ParallelPlan; typed, it is out of their range (cli.c) */
    TsError err = {0};
    if (plan_resolve(m, p, &err) != TS_OK) return cli_fail(&err);
    return 0;
}
