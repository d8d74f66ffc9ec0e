/*
 * trainsim/report_emit.h — a simulated plan as a training framework's launch
 * recipe (`simulate --emit F`, `sweep --emit F`).
 *
 * Targets (REP_EMIT_LIST) and what each writes:
 *   megatron    a bash fragment: MEGATRON_ARGS=( ... ), the model, parallel,
 *               batch and precision flags of Megatron-LM's pretrain_gpt.py
 *               (megatron/training/arguments.py), and the environment they
 *               need (CUDA_DEVICE_MAX_CONNECTIONS=1 with TP or CP);
 *   nemo        a bash fragment: NEMO_OVERRIDES=( key=value ... ), the
 *               Megatron-Bridge ConfigContainer overrides run_recipe.py takes
 *               (model.*, train.*, ddp.*, optimizer.*, comm_overlap.*,
 *               mixed_precision) on a recipe of the model's architecture;
 *   torchtitan  a TOML fragment of torchtitan's job config
 *               (torchtitan/config/job_config.py): [model] name and flavor,
 *               [training], [parallelism], [activation_checkpoint], [compile];
 *   deepspeed   a bash fragment that writes ds_config.json (DeepSpeed's
 *               config: batch, ZeRO stage, bf16/fp16, gradient accumulation
 *               dtype) and sets DEEPSPEED_ARGS=( ... ), the Megatron-DeepSpeed
 *               pretrain_gpt.py flags that load it.
 * Each names itself, the plan and what wrote it in comment lines at the top;
 * data, tokenizer, optimizer hyper-parameters and checkpoints stay the
 * user's. Every flag's source file is cited in src/report/emit.c.
 *
 * A plan, model or runtime option the target cannot express (torchtitan
 * with ZeRO-1, DeepSpeed's pipeline with the interleaved schedule, Megatron
 * with ZeRO-2, a plan simulated with another framework's code path) is an
 * error naming the knob and the target, never a silent omission. Options
 * that only tune the simulator's own model (the overlap slow-down, the GPU
 * speed spread, the MFU convention) have no framework setting and are not
 * written.
 *
 * Ownership: the recipe is appended to the caller's TsBuf; nothing else is
 * allocated. Failure: TS_ERR_PLAN (err names the knob and the target, with a
 * hint) and nothing appended; TS_ERR_INTERNAL when out of memory.
 *
 * Example:
 *     SimSetup in = {.model = &m, .plan = p, .hw = &hw, .net = &net};
 *     sim_options_init(&in.opt);
 *     TsBuf b = {0};
 *     if (rep_emit(REP_EMIT_TORCHTITAN, &in, "trainsim 0.1.0 simulate", &b, &err) == TS_OK)
 *         fputs(b.data, stdout);   // [model] name = "llama3" flavor = "8B" ...
 */
#ifndef TRAINSIM_REPORT_EMIT_H
#define TRAINSIM_REPORT_EMIT_H

#include "trainsim/common.h"
#include "trainsim/plan.h"
#include "trainsim/sim.h"

/* X(NAME, "name", the PlanFramework whose code path it runs, its default
 * PlanPrecision): torchtitan keeps fp32 parameters and casts them for the
 * matmuls (FSDP2's MixedPrecisionPolicy, autocast under DDP), which is
 * --precision amp; the others keep 16-bit weights with fp32 main copies. */
#define REP_EMIT_LIST(X)                                                 \
    X(MEGATRON, "megatron", PLAN_FRAMEWORK_MEGATRON, PLAN_PRECISION_MIXED) \
    X(NEMO, "nemo", PLAN_FRAMEWORK_MEGATRON, PLAN_PRECISION_MIXED)         \
    X(TORCHTITAN, "torchtitan", PLAN_FRAMEWORK_TORCHTITAN, PLAN_PRECISION_AMP) \
    X(DEEPSPEED, "deepspeed", PLAN_FRAMEWORK_DEEPSPEED, PLAN_PRECISION_MIXED)
typedef enum {
#define X(e, n, f, p) REP_EMIT_##e,
    REP_EMIT_LIST(X)
#undef X
    REP_EMIT_COUNT
} RepEmitTarget;

const char *rep_emit_name(RepEmitTarget t);
/* false on an unknown name */
bool rep_emit_parse(const char *s, RepEmitTarget *out);
/* The framework whose code path a target runs, and its precision recipe
 * (the defaults --emit gives --framework and --precision). */
PlanFramework rep_emit_framework(RepEmitTarget t);
PlanPrecision rep_emit_precision(RepEmitTarget t);

/* Write the recipe of in->model trained with in->plan (resolved here on a
 * copy) and in->opt. `generator` names what wrote it, "trainsim 0.1.0
 * simulate". TS_OK, TS_ERR_PLAN when the target cannot express the setup
 * (nothing appended), TS_ERR_INTERNAL when out of memory. */
TsStatus rep_emit(RepEmitTarget t, const SimSetup *in, const char *generator, TsBuf *out, TsError *err);

#endif
