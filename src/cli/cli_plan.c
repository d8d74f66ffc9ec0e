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
    cp->moe_imbalance = 1.0;
}

/* The MoE, FP8, optimizer-state and recompute-module knobs: fixed for a
 * plan, and for every plan of a sweep. */
void cli_plan_add_knobs(CliSpec *s, CliPlan *cp)
{
    cli_add(s, "recompute-modules", CLI_STR, &cp->recompute_modules, "LIST",
            "selective recompute of core_attn,layernorm,moe_act,mla_up_proj (default core_attn)");
    cli_add(s, "fp8-recipe", CLI_STR, &cp->fp8_recipe, "R", "delayed|current|blockwise FP8 scaling (delayed)");
    cli_add(s, "adam-moments", CLI_STR, &cp->adam_moments, "T", "fp32|bf16: the dtype of Adam's two moments (fp32)");
    cli_add(s, "moe-dispatcher", CLI_STR, &cp->moe_dispatch, "D",
            "alltoall|deepep: how tokens reach their experts (alltoall)");
    cli_add(s, "moe-node-limit", CLI_INT, &cp->moe_node_limit, "M", "route each token to experts on at most M nodes");
    cli_add(s, "moe-imbalance", CLI_DOUBLE, &cp->moe_imbalance, "F", "busiest expert's load over the mean (1)");
    cli_add(s, "moe-capacity-factor", CLI_DOUBLE, &cp->moe_capacity, "C",
            "drop tokens beyond C x an expert's mean load (default dropless)");
    cli_add(s, "moe-pad-to-capacity", CLI_FLAG, &cp->moe_pad, NULL, "pad every expert's input to its capacity");
    cli_add_check(s, "recompute-modules", cli_check_rc_modules);
    cli_add_check(s, "fp8-recipe", cli_check_fp8_recipe);
    cli_add_check(s, "adam-moments", cli_check_adam_moments);
    cli_add_check(s, "moe-dispatcher", cli_check_moe_dispatch);
}

void cli_plan_add(CliSpec *s, CliPlan *cp, bool with_gpus)
{
    cp->with_gpus = with_gpus;
    cli_add(s, "tp", CLI_INT, &cp->tp, "N", "tensor parallel size");
    cli_add(s, "pp", CLI_INT, &cp->pp, "N", "pipeline stages");
    cli_add(s, "vpp", CLI_INT, &cp->vpp, "N", "virtual pipeline chunks per stage (interleaved)");
    cli_add(s, "vpp-group", CLI_INT, &cp->vpp_group, "N",
            "interleaved, Megatron-Core: micro-batches run through a chunk before the next, pp..micro-batches "
            "(default pp; torchtitan runs PyTorch's own groups)");
    cli_add(s, "dp", CLI_INT, &cp->dp, "N", "data parallel size (default: gpus/(tp*pp*cp))");
    cli_add(s, "cp", CLI_INT, &cp->cp, "N", "context parallel size");
    cli_add(s, "ep", CLI_INT, &cp->ep, "N", "expert parallel size");
    cli_add(s, "etp", CLI_INT, &cp->etp, "N", "expert tensor parallel size (default: tp)");
    cli_add(s, "sp", CLI_FLAG, &cp->sp, NULL, "sequence parallelism (default on when tp > 1)");
    cli_add(s, "no-sp", CLI_NOFLAG, &cp->sp, NULL, "no sequence parallelism");
    cli_add(s, "zero", CLI_INT, &cp->zero, "0..3", "DeepSpeed ZeRO stage");
    cli_add(s, "dist-opt", CLI_FLAG, &cp->dist_opt, NULL, "Megatron distributed optimizer");
    cli_add(s, "dp-shard", CLI_INT, &cp->dp_shard, "S",
            "HSDP under --zero 3: shard over S DP ranks (x CP), replicate over dp/S (0 = all of DP)");
    cli_add(s, "recompute", CLI_STR, &cp->recompute, "MODE", "none|selective|full");
    cli_add(s, "recompute-layers", CLI_INT, &cp->recompute_layers, "N",
            "full recompute: layers per chunk (0 = all)");
    cli_add(s, "micro-batch", CLI_INT, &cp->micro_batch, "B", "sequences per micro-batch");
    cli_add(s, "global-batch", CLI_INT, &cp->global_batch, "N",
            "sequences per step (default 1024, rounded up to a multiple of micro-batch*dp)");
    cli_add(s, "seq", CLI_INT, &cp->seq, "S", "sequence length (default min(max positions, 4096))");
    cli_add(s, "dtype", CLI_STR, &cp->dtype, "T", "bf16|fp16|fp8|fp32 (the GEMMs' compute type)");
    cli_add(s, "framework", CLI_STR, &cp->framework, "F",
            "megatron|torchtitan|deepspeed|hf: the code path that runs the step (megatron)");
    cli_add(s, "precision", CLI_STR, &cp->precision, "P",
            "mixed|amp|pure: fp32 main params (mixed), fp32 params with autocast (amp), all 16-bit (pure)");
    cli_add(s, "schedule", CLI_STR, &cp->schedule, "S", "1f1b|interleaved|gpipe|zb-h1|dualpipe|dualpipev|1f1b-a2a");
    cli_add(s, "stage-layers", CLI_STR, &cp->stage_layers, "a,b,...",
            "layers per pipeline chunk (pp*vpp entries)");
    cli_add(s, "uneven-stages", CLI_FLAG, &cp->uneven, NULL,
            "when pp*vpp does not divide the layers: last and first chunks one layer lighter (none: the loss, "
            "the embedding alone)");
    cli_add(s, "optimizer", CLI_STR, &cp->optimizer, "O", "adam|shampoo");
    cli_add(s, "shampoo-blocks", CLI_INT, &cp->shampoo_blocks, "K",
            "Shampoo blocks per layer weight matrix");
    cli_add(s, "tp-overlap", CLI_FLAG, &cp->tp_overlap, NULL, "overlap TP communication with GEMMs");
    cli_add(s, "no-flash", CLI_FLAG, &cp->no_flash, NULL,
            "attention stores its S^2 scores (no FlashAttention)");
    cli_plan_add_knobs(s, cp);
    static const struct { const char *opt; CliCheck check; } CHECKS[] = {
        {"recompute", cli_check_recompute}, {"dtype", cli_check_dtype},         {"framework", cli_check_framework},
        {"precision", cli_check_precision}, {"schedule", cli_check_schedule},   {"stage-layers", cli_check_stage_layers},
        {"optimizer", cli_check_optimizer},
    };
    for (size_t i = 0; i < sizeof CHECKS / sizeof CHECKS[0]; i++) cli_add_check(s, CHECKS[i].opt, CHECKS[i].check);
    if (with_gpus) cli_add(s, "gpus", CLI_INT, &cp->gpus, "N", "number of GPUs");
}

/* A value its check refused after all (set without cli_set): the same message. */
static int invalid(CliCheck check, const char *opt, const char *val)
{
    TsError e = {0};
    check(opt, val, &e);
    return cli_fail(&e);
}

int cli_plan_knobs(const CliPlan *cp, ParallelPlan *p)
{
    p->moe_node_limit = cp->moe_node_limit;
    p->moe_imbalance = cp->moe_imbalance;
    p->moe_capacity = cp->moe_capacity;
    p->moe_pad = cp->moe_pad;
    const char *bad = NULL;
    size_t len = 0;
    if (cp->moe_dispatch && !plan_moe_dispatch_parse(cp->moe_dispatch, &p->moe_dispatch))
        return invalid(cli_check_moe_dispatch, "moe-dispatcher", cp->moe_dispatch);
    if (cp->fp8_recipe && !plan_fp8_parse(cp->fp8_recipe, &p->fp8_recipe))
        return invalid(cli_check_fp8_recipe, "fp8-recipe", cp->fp8_recipe);
    if (cp->adam_moments && !cli_adam_moments(cp->adam_moments, &p->adam_moments))
        return invalid(cli_check_adam_moments, "adam-moments", cp->adam_moments);
    if (cp->recompute_modules && !plan_rc_modules_parse(cp->recompute_modules, &p->recompute_modules, &bad, &len))
        return invalid(cli_check_rc_modules, "recompute-modules", cp->recompute_modules);
    return 0;
}

int cli_plan_load(const CliSpec *s, CliPlan *cp, const ModelSpec *m, int64_t gpus_from_hw,
                  ParallelPlan *p)
{
    plan_init(p);
    p->tp = cp->tp; p->pp = cp->pp; p->vpp = cp->vpp; p->vpp_group = cp->vpp_group; p->dp = cp->dp; p->cp = cp->cp;
    p->ep = cp->ep; p->etp = cp->etp;
    p->sp = cp->sp;
    p->sp_set = cli_seen(s, "sp") || cli_seen(s, "no-sp");
    p->zero = (int)cp->zero;
    p->dist_opt = cp->dist_opt;
    p->dp_shard = cp->dp_shard;
    p->recompute_layers = cp->recompute_layers;
    p->micro_batch = cp->micro_batch;
    p->global_batch = cp->global_batch;
    p->seq = cp->seq;
    p->shampoo_blocks = cp->shampoo_blocks;
    p->tp_overlap = cp->tp_overlap;
    p->flash_attn = !cp->no_flash;
    int rc = cli_plan_knobs(cp, p);
    if (rc) return rc;
    p->gpus = gpus_from_hw > 0 ? gpus_from_hw : cp->gpus;
    if (cp->recompute && !plan_recompute_parse(cp->recompute, &p->recompute))
        return invalid(cli_check_recompute, "recompute", cp->recompute);
    if (cp->dtype && !cli_train_dtype(cp->dtype, &p->dtype)) return invalid(cli_check_dtype, "dtype", cp->dtype);
    if (cp->framework && !plan_framework_parse(cp->framework, &p->framework))
        return invalid(cli_check_framework, "framework", cp->framework);
    if (cp->precision && !plan_precision_parse(cp->precision, &p->precision))
        return invalid(cli_check_precision, "precision", cp->precision);
    if (cp->optimizer && !plan_optim_parse(cp->optimizer, &p->optimizer))
        return invalid(cli_check_optimizer, "optimizer", cp->optimizer);
    if (cp->schedule && !plan_sched_parse(cp->schedule, &p->schedule))
        return invalid(cli_check_schedule, "schedule", cp->schedule);
    if (!cp->schedule && p->vpp > 1) p->schedule = PLAN_SCHED_INTERLEAVED;
    if (cp->stage_layers) {
        int n = cli_stage_layers(cp->stage_layers, cp->stage_buf, CLI_PLAN_MAX_STAGES);
        if (n < 0) return invalid(cli_check_stage_layers, "stage-layers", cp->stage_layers);
        p->stage_layers = cp->stage_buf;
        p->n_stage_layers = n;
    }
    p->uneven = cp->uneven;
    /* 0 stands for "the default" in --dp, --etp, --global-batch and --seq
     * inside ParallelPlan; typed, it is out of their range (cli.c) */
    TsError err = {0};
    if (plan_resolve(m, p, &err) != TS_OK) return cli_fail(&err);
    if (!cp->global_batch && p->global_batch != PLAN_DEFAULT_GLOBAL_BATCH)
        fprintf(stderr,
                "trainsim %s: note: --global-batch defaults to %d sequences, here rounded up to %lld "
                "(a multiple of micro-batch x dp = %lld); give --global-batch to set it\n",
                s->cmd, PLAN_DEFAULT_GLOBAL_BATCH, (long long)p->global_batch,
                (long long)(p->micro_batch * p->dp));
    return 0;
}
