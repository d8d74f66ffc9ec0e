/*
 * emit.c — a simulated plan as a framework's launch recipe (report_emit.h).
 *
 * Each target first checks that it can express every knob the plan, the
 * model and the runtime options set (refuse(): the error names the knob and
 * the target), then writes its format. Where the names come from:
 *
 *   [MLM]   Megatron-LM core_v0.15.0, megatron/training/arguments.py: every
 *           pretrain_gpt.py flag below (the line is cited where the value is
 *           not a plain number); megatron/core/transformer/
 *           pipeline_parallel_layer_layout.py for the layout string ("E",
 *           "t", "L", stages split by "|" in virtual-stage-major order, the
 *           order of our chunks); megatron/core/transformer/
 *           transformer_config.py for cp_comm_type's values ("all_gather").
 *   [MCORE] Megatron-Core core_v0.15.0 dataclasses the Bridge keys name:
 *           model_parallel_config.py (tensor_model_parallel_size, ...),
 *           transformer_config.py (num_layers, num_moe_experts,
 *           recompute_*, ...), distributed/distributed_data_parallel_config.py
 *           (ddp.*).
 *   [MB]    Megatron-Bridge v0.6.0: scripts/training/run_recipe.py (KEY=VALUE
 *           ConfigContainer overrides, dataset.seq_length, train.*_batch_size),
 *           src/megatron/bridge/training/config.py (ConfigContainer: train,
 *           model, optimizer, ddp, checkpoint, comm_overlap, mixed_precision),
 *           training/mixed_precision.py (the recipe names bf16_mixed, ...),
 *           training/comm_overlap.py (CommOverlapConfig.tp_comm_overlap),
 *           models/gpt_provider.py (seq_length).
 *   [TT]    torchtitan v0.2.2: torchtitan/config/job_config.py (every TOML
 *           key), models/{llama3,qwen3,deepseek_v3}/__init__.py (the
 *           flavors and which have a pipelining_fn), distributed/
 *           parallel_dims.py (FSDP over dp_shard x cp; etp is 1 or tp),
 *           distributed/utils.py maybe_enable_amp (no autocast with TP or PP
 *           unless FSDP), distributed/pipeline_parallel.py (layers_per_stage
 *           and the first/last stage weights; stage s on rank s mod pp),
 *           models/llama3/infra/parallelize.py (DDP only without other
 *           parallelism; TP always shards the norms' sequence).
 *   [DS]    DeepSpeed docs/_pages/config-json.md (train_batch_size,
 *           train_micro_batch_size_per_gpu, gradient_accumulation_steps,
 *           zero_optimization.stage, bf16.enabled, fp16.enabled,
 *           data_types.grad_accum_dtype), deepspeed/runtime/engine.py
 *           get_data_types / _do_optimizer_sanity_check (bf16 with fp32
 *           accumulation is the BF16 optimizer, also under ZeRO-1).
 *   [MDS]   Megatron-DeepSpeed (microsoft, 2024-12) megatron/arguments.py
 *           (every flag of DEEPSPEED_ARGS), megatron/model/gpt_model.py
 *           GPTModelPipe (full recompute: the uniform method only;
 *           partition_method type:transformer), megatron/model/
 *           language_model.py (learned positions unless
 *           --no-position-embedding), examples_deepspeed/
 *           pretrain_llama2_distributed.sh (--deepspeed_config, --zero-stage,
 *           --deepspeed-activation-checkpointing); --deepspeed and
 *           --deepspeed_config are DeepSpeed's own (deepspeed/__init__.py
 *           add_config_arguments).
 */
#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "trainsim/report_emit.h"

/* ---- the targets -------------------------------------------------------------- */
TS_ENUM_NAMES(rep_emit, RepEmitTarget, REP_EMIT_LIST, REP_EMIT_COUNT)
TS_ENUM_PARSE(rep_emit, RepEmitTarget, REP_EMIT_COUNT)

static const PlanFramework EMIT_FW[] = {
#define X(e, n, f, p) f,
    REP_EMIT_LIST(X)
#undef X
};
static const PlanPrecision EMIT_PREC[] = {
#define X(e, n, f, p) p,
    REP_EMIT_LIST(X)
#undef X
};
_Static_assert(sizeof EMIT_FW / sizeof EMIT_FW[0] == REP_EMIT_COUNT, "EMIT_FW");
_Static_assert(sizeof EMIT_PREC / sizeof EMIT_PREC[0] == REP_EMIT_COUNT, "EMIT_PREC");

PlanFramework rep_emit_framework(RepEmitTarget t) { return EMIT_FW[t]; }
PlanPrecision rep_emit_precision(RepEmitTarget t) { return EMIT_PREC[t]; }

/* ---- what every target shares ---------------------------------------------------- */
typedef struct Emit {
    RepEmitTarget t;
    const ModelSpec *m;
    const ParallelPlan *p; /* resolved copy */
    const SimOptions *o;
    TsError *err;
    TsBuf *b;              /* the recipe, built apart from the caller's buffer */
    int64_t gpn;           /* GPUs per node of the simulated cluster (0: unknown, one node) */
} Emit;

/* The error "--emit T: <msg>" with a hint; TS_ERR_PLAN. */
static TsStatus refuse(const Emit *e, const char *hint, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static TsStatus refuse(const Emit *e, const char *hint, const char *fmt, ...)
{
    char msg[TS_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ts_err(e->err, TS_ERR_PLAN, "--emit %s: %s", rep_emit_name(e->t), msg);
    if (hint) ts_err_hint(e->err, "%s", hint);
    return TS_ERR_PLAN;
}

static bool moe(const ModelSpec *m) { return m->experts > 0; }
static bool mla(const ModelSpec *m) { return m->kv_lora_rank > 0; }
static bool sharded_opt(const ParallelPlan *p) { return p->dist_opt || p->zero == 1; }
/* pp*vpp does not divide the layers evenly, or --stage-layers gave the split */
static bool uneven(const Emit *e) { return e->p->n_stage_layers > 0 || e->m->layers % e->p->n_chunks != 0; }
static bool deepep(const Emit *e) { return moe(e->m) && e->p->moe_dispatch == PLAN_MOE_DISPATCH_DEEPEP; }
/* The nodes one EP group spans, and whether each holds a contiguous run of
 * its ranks (then a node's experts are one contiguous block, as
 * group-limited routing groups them). */
static int64_t ep_nodes(const Emit *e, bool *contiguous)
{
    PlanGroupInfo gi;
    plan_group(e->p, PLAN_GROUP_EP, 0, e->gpn, &gi);
    if (contiguous) *contiguous = gi.nodes * gi.per_node == gi.size;
    return gi.nodes;
}
/* --moe-node-limit binds: fewer nodes than the EP group spans and than the
 * top-k (a token reaches at most min(limit, topk, nodes) nodes). */
static bool node_limited(const Emit *e)
{
    int64_t lim = e->p->moe_node_limit;
    return moe(e->m) && lim > 0 && lim < ep_nodes(e, NULL) && lim < e->m->topk;
}

/* Checks every target makes: the code path the plan was simulated with, the
 * optimizer, the model families a decoder-only LM trainer builds. */
static TsStatus check_common(const Emit *e)
{
    const ParallelPlan *p = e->p;
    const ModelSpec *m = e->m;
    PlanFramework fw = rep_emit_framework(e->t);
    const char *no_graphs = NULL;
    if (e->o->cuda_graphs && !sim_cuda_graphs(e->o, p, moe(m), &no_graphs))
        return refuse(e, "drop --cuda-graphs, or make the plan capturable", "--cuda-graphs: %s", no_graphs);
    if (p->framework != fw) {
        char hint[200];
        snprintf(hint, sizeof hint,
                 "--emit %s writes the launch of the plan trainsim simulated with --framework %s "
                 "(without --framework, --eager-pytorch or --deepspeed-pipe, --emit sets it)",
                 rep_emit_name(e->t), plan_framework_name(fw));
        return refuse(e, hint, "the plan was simulated with --framework %s", plan_framework_name(p->framework));
    }
    if (p->optimizer != PLAN_OPTIM_ADAM)
        return refuse(e, "the recipe's optimizer is Adam; Shampoo has no flag in it",
                      "--optimizer %s has no %s setting", plan_optim_name(p->optimizer), rep_emit_name(e->t));
    /* the split-backward and bidirectional schedules run in their authors'
     * code (sail-sg's Megatron fork, deepseek-ai/DualPipe), not in the
     * releases these recipes target */
    if (p->pp > 1 && (p->schedule == PLAN_SCHED_ZBH1 || p->schedule == PLAN_SCHED_DUALPIPE ||
                      p->schedule == PLAN_SCHED_DUALPIPEV))
        return refuse(e, "the recipes write 1F1B, interleaved or (torchtitan) GPipe; simulate the plan with one of them "
                         "to write its launch",
                      "--schedule %s has no %s setting", plan_sched_name(p->schedule), rep_emit_name(e->t));
    if (p->schedule == PLAN_SCHED_1F1B_A2A && e->t != REP_EMIT_MEGATRON && e->t != REP_EMIT_NEMO)
        return refuse(e, "Megatron-Core's --overlap-moe-expert-parallel-comm runs it; simulate with --schedule 1f1b",
                      "--schedule 1f1b-a2a has no %s setting", rep_emit_name(e->t));
    if (e->t == REP_EMIT_TORCHTITAN) return TS_OK; /* its model registry decides (tt_flavor) */
    if (m->arch == MODEL_ARCH_BERT)
        return refuse(e, "pretrain_gpt.py trains decoder-only models", "%s is an encoder (bert) model", m->name);
    if (m->arch == MODEL_ARCH_NEOX)
        return refuse(e, "Megatron's transformer layer runs attention, then the MLP",
                      "%s's layer (GPT-NeoX: attention and MLP in parallel on the same input) has no flag", m->name);
    if (m->norm_layout != MODEL_NORM_LAYOUT_PRE)
        return refuse(e, "Megatron's transformer layer normalises each sublayer's input (pre-norm) only",
                      "%s's norms (%s: %s) have no flag", m->name, model_norm_layout_name(m->norm_layout),
                      m->norm_layout == MODEL_NORM_LAYOUT_SANDWICH ? "on each sublayer's input and output"
                                                                   : "on each sublayer's output");
    if (m->act == MODEL_ACT_GEGLU)
        return refuse(e, "Megatron's --swiglu gates the MLP with SiLU; it has no GeLU-gated MLP flag",
                      "%s's GeGLU MLP has no flag", m->name);
    if (m->qk_norm && m->qk_norm_full)
        return refuse(e, "Megatron's --qk-layernorm normalises each head (head-dim wide)",
                      "%s's q/k norms over all heads have no flag", m->name);
    if (m->pos == MODEL_POS_ALIBI)
        return refuse(e, "Megatron-LM's --position-embedding-type is learned_absolute, rope, mrope, relative or none",
                      "%s's ALiBi positions have no flag", m->name);
    if (m->embed_norm)
        return refuse(e, "Megatron's GPT embedding has no LayerNorm after it",
                      "%s's LayerNorm after the embeddings has no flag", m->name);
    bool no_bias = !m->qkv_bias && !m->proj_bias && !m->mlp_bias;
    bool all_bias = m->qkv_bias && m->proj_bias && m->mlp_bias;
    bool qkv_only = m->qkv_bias && !m->proj_bias && !m->mlp_bias && e->t != REP_EMIT_DEEPSPEED;
    if (!no_bias && !all_bias && !qkv_only)
        return refuse(e,
                      e->t == REP_EMIT_DEEPSPEED ? "Megatron-DeepSpeed has biases on every linear layer or none"
                                                 : "Megatron has biases on every linear layer, none, or on QKV only",
                      "%s's biases (qkv %s, attention output %s, MLP %s) have no flag", m->name,
                      m->qkv_bias ? "on" : "off", m->proj_bias ? "on" : "off", m->mlp_bias ? "on" : "off");
    return TS_OK;
}

/* Shell words: bare when made of characters a shell takes literally, else
 * single-quoted (none of our values holds a quote). */
static void shell_word(TsBuf *b, const char *s)
{
    bool plain = *s != '\0';
    for (const char *c = s; *c; c++)
        plain &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') ||
                 strchr("_.,:/=+-@%", *c) != NULL;
    if (plain) ts_buf_puts(b, s);
    else ts_buf_printf(b, "'%s'", s);
}

/* A number for a flag: integers in full, others at round-trip precision. */
static void fmt_num(char *out, size_t cap, double v) { snprintf(out, cap, "%.15g", v); }

/* The layers of chunk c (chunk = virtual stage * pp + pipeline rank). */
static int64_t chunk_layers(const Emit *e, int64_t c) { return plan_chunk_layers(e->p, e->m->layers, c); }

/* ---- Megatron-LM flags and Megatron-Bridge overrides ------------------------------ */
/* Both targets configure Megatron-Core; one list of settings feeds both:
 * each has its pretrain_gpt.py flag [MLM] and its ConfigContainer key [MB]
 * ([MCORE] names the model.* and ddp.* fields); either may be NULL where the
 * other side has no such setting (Bridge takes the architecture from the
 * recipe's model provider: activation and norm are Python objects there). */
typedef struct Mc {
    const Emit *e;
    bool nemo;
} Mc;

/* flag with flag_val (NULL: a switch, written alone) / key=key_val. */
static void mc_set(const Mc *c, const char *flag, const char *flag_val, const char *key, const char *key_val)
{
    TsBuf *b = c->e->b;
    if (c->nemo && key) {
        TsBuf kv = {0};
        ts_buf_printf(&kv, "%s=%s", key, key_val);
        ts_buf_puts(b, "  ");
        shell_word(b, kv.data ? kv.data : "");
        ts_buf_puts(b, "\n");
        if (kv.oom) b->oom = true;
        ts_buf_free(&kv);
    } else if (!c->nemo && flag) {
        ts_buf_printf(b, "  %s", flag);
        if (flag_val) {
            ts_buf_puts(b, " ");
            shell_word(b, flag_val);
        }
        ts_buf_puts(b, "\n");
    }
}
/* The same number on both sides. */
static void mc_int(const Mc *c, const char *flag, const char *key, int64_t v)
{
    char s[32];
    snprintf(s, sizeof s, "%lld", (long long)v);
    mc_set(c, flag, s, key, s);
}
static void mc_num(const Mc *c, const char *flag, const char *key, double v)
{
    char s[40];
    fmt_num(s, sizeof s, v);
    mc_set(c, flag, s, key, s);
}
static void mc_str(const Mc *c, const char *flag, const char *key, const char *v) { mc_set(c, flag, v, key, v); }
/* A store_true flag given when on; the key written either way (a recipe may
 * have set it otherwise). */
static void mc_bool(const Mc *c, const char *flag, const char *key, bool on)
{
    if (c->nemo) mc_set(c, NULL, NULL, key, on ? "true" : "false");
    else if (on) mc_set(c, flag, NULL, NULL, NULL);
}
static void mc_comment(const Mc *c, const char *s) { ts_buf_printf(c->e->b, "  # %s\n", s); }

static TsStatus check_megatron(const Emit *e)
{
    const ParallelPlan *p = e->p;
    const SimOptions *o = e->o;
    if (p->precision != PLAN_PRECISION_MIXED)
        return refuse(e, "Megatron keeps 16-bit weights with fp32 main parameters and gradients (--precision mixed)",
                      "--precision %s has no Megatron-Core setting", plan_precision_name(p->precision));
    if (p->zero == 2)
        return refuse(e, "Megatron-Core shards with its distributed optimizer (--zero 1 or --dist-opt) or Megatron "
                         "FSDP (--zero 3), the two `sweep --framework megatron` searches",
                      "--zero 2 (gradients and optimizer state sharded, parameters replicated) is not a Megatron-Core "
                      "setup");
    if (p->dp_shard > 0)
        return refuse(e, "trainsim writes Megatron FSDP sharded over all of DP x CP; emit HSDP for torchtitan "
                         "(--emit torchtitan), or drop --dp-shard",
                      "--dp-shard %lld (HSDP) has no Megatron-Core setting here", (long long)p->dp_shard);
    if (p->pp > 1 && p->schedule == PLAN_SCHED_GPIPE)
        return refuse(e, "Megatron-Core pipelines with 1F1B, interleaved when --vpp > 1",
                      "--schedule gpipe has no Megatron-Core schedule");
    if (p->recompute == PLAN_RECOMPUTE_SELECTIVE && o->selective_ops)
        return refuse(e, "Megatron's selective recompute is the core attention (--recompute-granularity selective): "
                         "leave --selective-ops out",
                      "--selective-ops (torchtitan's op-level selective checkpointing) has no Megatron-Core setting");
    if (p->tp_overlap && !p->sp)
        return refuse(e, "Megatron asserts that --tp-comm-overlap implies --sequence-parallel",
                      "--tp-overlap without sequence parallelism has no Megatron-Core setting");
    if ((sharded_opt(p) || p->zero == 3) && o->param_gather_overlap && !o->dp_overlap && p->dp * p->cp > 1)
        return refuse(e, "Megatron overlaps the parameter all-gather only with --overlap-grad-reduce: add "
                         "--no-param-gather-overlap, or drop --no-dp-overlap",
                      "--no-dp-overlap with the overlapped parameter gather has no Megatron-Core setting");
    /* the MoE runtime [MCORE transformer_config.py __post_init__] */
    if (deepep(e) && p->moe_pad)
        return refuse(e, "DeepEP runs under Megatron's flex token dispatcher, which raises on "
                         "moe_pad_expert_input_to_capacity: drop --moe-pad-to-capacity or use --moe-dispatcher alltoall",
                      "--moe-pad-to-capacity with --moe-dispatcher deepep has no Megatron-Core setting");
    if (node_limited(e)) {
        bool contiguous = true;
        int64_t n = ep_nodes(e, &contiguous);
        if (!contiguous || e->m->experts % n != 0)
            return refuse(e, "Megatron's group-limited routing splits the experts into --moe-router-num-groups equal "
                             "contiguous groups, one per node of the EP group",
                          "--moe-node-limit %lld over an EP group of %lld ranks on %lld nodes (%lld experts) has no "
                          "Megatron-Core setting",
                          (long long)p->moe_node_limit, (long long)p->ep, (long long)n, (long long)e->m->experts);
    }
    uint32_t mods = plan_rc_modules(p);
    if ((mods & PLAN_RC_MOE_ACT) && o->sequential_experts)
        return refuse(e, "Megatron recomputes moe_act only with --moe-grouped-gemm: drop --sequential-experts",
                      "--recompute-modules moe_act with --sequential-experts has no Megatron-Core setting");
    if ((mods & (PLAN_RC_MOE_ACT | PLAN_RC_LAYERNORM)) && p->dtype == TS_DTYPE_FP8 &&
        p->fp8_recipe == PLAN_FP8_DELAYED)
        return refuse(e, "Megatron raises \"Delayed scaling does not support moe_act and layernorm recompute for "
                         "fp8\": use --fp8-recipe current or blockwise",
                      "--recompute-modules %s under --fp8-recipe delayed has no Megatron-Core setting",
                      mods & PLAN_RC_MOE_ACT ? "moe_act" : "layernorm");
    /* [MCORE optimizer/optimizer_config.py]: the precision-aware optimizer
     * (bf16 moments) asserts the distributed optimizer */
    if (p->adam_moments == TS_DTYPE_BF16 && !sharded_opt(p) && p->zero != 3)
        return refuse(e, "Megatron keeps bf16 Adam moments with --use-precision-aware-optimizer, which asserts "
                         "--use-distributed-optimizer: add --dist-opt",
                      "--adam-moments bf16 without the distributed optimizer has no Megatron-Core setting");
    /* [MLM validate_args]: MTP with rope or no position embeddings only */
    if (e->m->mtp_layers > 0 && e->m->pos != MODEL_POS_ROPE)
        return refuse(e, "Megatron's multi-token prediction needs rope (or no) position embeddings: --mtp-layers 0",
                      "%s's %lld MTP layers with %s positions have no Megatron-Core setting", e->m->name,
                      (long long)e->m->mtp_layers, e->m->pos == MODEL_POS_LEARNED ? "learned" : "ALiBi");
    if (e->t == REP_EMIT_NEMO && p->dtype == TS_DTYPE_FP8 && p->fp8_recipe == PLAN_FP8_CURRENT)
        return refuse(e, "Megatron-Bridge's current-scaling recipe (bf16_with_fp8_current_scaling_mixed) keeps the "
                         "first and last layers in BF16, which trainsim does not simulate; --emit megatron writes "
                         "--fp8-recipe tensorwise for every layer",
                      "--fp8-recipe current with every layer in FP8 has no Megatron-Bridge recipe");
    return TS_OK;
}

/* The MoE layer pattern: NULL when every layer is MoE (the default 1), else
 * run lengths of 0 (dense) and 1 (MoE), as Megatron's "([0]*3+[1]*58)" and
 * as Bridge's list [0,0,0,1,...]. */
static bool moe_pattern(const ModelSpec *m, TsBuf *mlm, TsBuf *list)
{
    if (model_moe_layer_count(m) == m->layers) return false;
    ts_buf_puts(mlm, "(");
    ts_buf_puts(list, "[");
    for (int64_t l = 0, run = 0; l < m->layers; l++) {
        bool is = model_layer_is_moe(m, l);
        ts_buf_printf(list, "%s%d", l ? "," : "", is ? 1 : 0);
        run++;
        if (l + 1 == m->layers || model_layer_is_moe(m, l + 1) != is) {
            ts_buf_printf(mlm, "%s[%d]*%lld", mlm->len > 1 ? "+" : "", is ? 1 : 0, (long long)run);
            run = 0;
        }
    }
    ts_buf_puts(mlm, ")");
    ts_buf_puts(list, "]");
    return true;
}

static void mc_model(const Mc *c)
{
    const ModelSpec *m = c->e->m;
    const ParallelPlan *p = c->e->p;
    mc_comment(c, "model");
    mc_int(c, "--num-layers", "model.num_layers", m->layers);
    mc_int(c, "--hidden-size", "model.hidden_size", m->hidden);
    if (m->ffn > 0) mc_int(c, "--ffn-hidden-size", "model.ffn_hidden_size", m->ffn);
    mc_int(c, "--num-attention-heads", "model.num_attention_heads", m->heads);
    if (!mla(m) && m->kv_heads < m->heads) {
        mc_set(c, "--group-query-attention", NULL, NULL, NULL);
        mc_int(c, "--num-query-groups", "model.num_query_groups", m->kv_heads);
    }
    if (!mla(m) && m->head_dim * m->heads != m->hidden) mc_int(c, "--kv-channels", "model.kv_channels", m->head_dim);
    if (m->max_positions > 0) mc_int(c, "--max-position-embeddings", NULL, m->max_positions);
    if (m->pos == MODEL_POS_ROPE) {
        mc_str(c, "--position-embedding-type", NULL, "rope");
        if (m->rope_theta > 0) mc_num(c, "--rotary-base", NULL, m->rope_theta);
        if (m->rotary_pct != 1.0) mc_num(c, "--rotary-percent", NULL, m->rotary_pct);
    } else {
        mc_str(c, "--position-embedding-type", NULL, "learned_absolute");
    }
    mc_str(c, "--normalization", NULL, m->norm == MODEL_NORM_RMSNORM ? "RMSNorm" : "LayerNorm");
    mc_num(c, "--norm-epsilon", NULL, m->norm_eps);
    if (m->act == MODEL_ACT_SWIGLU) mc_set(c, "--swiglu", NULL, NULL, NULL);
    if (m->act == MODEL_ACT_RELU2) mc_set(c, "--squared-relu", NULL, NULL, NULL);
    if (!m->mlp_bias) mc_set(c, "--disable-bias-linear", NULL, NULL, NULL); /* check_common: all, none or QKV */
    if (m->qkv_bias && !m->mlp_bias) mc_set(c, "--add-qkv-bias", NULL, NULL, NULL);
    if (m->qk_norm) mc_set(c, "--qk-layernorm", NULL, NULL, NULL);
    if (!m->tied_embeddings) mc_set(c, "--untie-embeddings-and-output-weights", NULL, NULL, NULL);
    mc_num(c, "--hidden-dropout", NULL, m->hidden_dropout);
    mc_num(c, "--attention-dropout", NULL, m->attn_dropout);
    mc_int(c, "--make-vocab-size-divisible-by", NULL, m->vocab_divisible);
    /* without FlashAttention the S x S scores are stored: the unfused backend [MLM 1562] */
    if (!p->flash_attn) mc_str(c, "--attention-backend", "model.attention_backend", "unfused");
    if (!c->nemo) {
        char s[160];
        snprintf(s, sizeof s, "the vocabulary (%lld, padded to %lld at tp %lld) comes from the tokenizer",
                 (long long)m->vocab, (long long)model_padded_vocab(m, p->tp), (long long)p->tp);
        mc_comment(c, s);
    }
    if (mla(m)) {
        mc_set(c, "--multi-latent-attention", NULL, NULL, NULL);
        if (m->q_lora_rank > 0) mc_int(c, "--q-lora-rank", "model.q_lora_rank", m->q_lora_rank);
        mc_int(c, "--kv-lora-rank", "model.kv_lora_rank", m->kv_lora_rank);
        mc_int(c, "--qk-head-dim", "model.qk_head_dim", m->qk_nope_dim);
        mc_int(c, "--qk-pos-emb-head-dim", "model.qk_pos_emb_head_dim", m->qk_rope_dim);
        mc_int(c, "--v-head-dim", "model.v_head_dim", m->v_head_dim);
    }
    if (moe(m)) {
        mc_int(c, "--num-experts", "model.num_moe_experts", m->experts);
        mc_int(c, "--moe-router-topk", "model.moe_router_topk", m->topk);
        mc_int(c, "--moe-ffn-hidden-size", "model.moe_ffn_hidden_size", m->moe_ffn);
        if (m->shared_experts > 0)
            mc_int(c, "--moe-shared-expert-intermediate-size", "model.moe_shared_expert_intermediate_size",
                   m->shared_experts * m->moe_ffn);
        TsBuf freq = {0}, list = {0};
        if (moe_pattern(m, &freq, &list)) mc_set(c, "--moe-layer-freq", freq.data, "model.moe_layer_freq", list.data);
        ts_buf_free(&freq);
        ts_buf_free(&list);
        /* our EP model is the all-to-all exchange, or DeepEP's under the flex
         * dispatcher; Megatron's default dispatcher is allgather [MLM 3131-3137] */
        mc_str(c, "--moe-token-dispatcher-type", "model.moe_token_dispatcher_type", deepep(c->e) ? "flex" : "alltoall");
        mc_bool(c, "--moe-enable-deepep", "model.moe_enable_deepep", deepep(c->e));
        mc_bool(c, "--moe-grouped-gemm", "model.moe_grouped_gemm", !c->e->o->sequential_experts);
        /* the fused permute and router the host model counts (template.c,
         * mcore_moe_host): Megatron-Core's defaults are unfused, with two
         * more host syncs in the permute [MLM 3088, 3139] */
        mc_bool(c, "--moe-permute-fusion", "model.moe_permute_fusion", true);
        mc_bool(c, "--moe-router-fusion", "model.moe_router_fusion", true);
        /* one micro-batch's all-to-alls under another's compute (1f1b-a2a) */
        mc_bool(c, "--overlap-moe-expert-parallel-comm", "model.overlap_moe_expert_parallel_comm",
                p->schedule == PLAN_SCHED_1F1B_A2A);
        /* node-limited routing as group-limited routing with one group per
         * node of the EP group (DeepSeek-V3) [MLM 3098-3102] */
        if (node_limited(c->e)) {
            mc_int(c, "--moe-router-num-groups", "model.moe_router_num_groups", ep_nodes(c->e, NULL));
            mc_int(c, "--moe-router-group-topk", "model.moe_router_group_topk", p->moe_node_limit);
        } else {
            mc_set(c, NULL, NULL, "model.moe_router_num_groups", "null");
            mc_set(c, NULL, NULL, "model.moe_router_group_topk", "null");
        }
        /* token dropping [MLM 3142-3145]; None is dropless */
        if (p->moe_capacity > 0) mc_num(c, "--moe-expert-capacity-factor", "model.moe_expert_capacity_factor", p->moe_capacity);
        else mc_set(c, NULL, NULL, "model.moe_expert_capacity_factor", "null");
        mc_bool(c, "--moe-pad-expert-input-to-capacity", "model.moe_pad_expert_input_to_capacity", p->moe_pad);
    }
    /* multi-token prediction [MLM 1666]: the modules on the last stage */
    if (m->mtp_layers > 0) mc_int(c, "--mtp-num-layers", "model.mtp_num_layers", m->mtp_layers);
    else mc_set(c, NULL, NULL, "model.mtp_num_layers", "null");
}

/* Layers per chunk as Megatron's pipeline layout: "Ett|ttt|...|ttmL". */
static void layout_string(const Emit *e, TsBuf *out)
{
    for (int64_t ch = 0; ch < e->p->n_chunks; ch++) {
        if (ch) ts_buf_puts(out, "|");
        if (ch == 0) ts_buf_puts(out, "E");
        for (int64_t i = chunk_layers(e, ch); i > 0; i--) ts_buf_puts(out, "t");
        if (ch == e->p->n_chunks - 1) {
            /* the MTP modules after the decoder, with the loss [MCORE
             * pipeline_parallel_layer_layout.py: "m"] */
            for (int64_t i = e->m->mtp_layers; i > 0; i--) ts_buf_puts(out, "m");
            ts_buf_puts(out, "L");
        }
    }
}

static void mc_parallel(const Mc *c)
{
    const Emit *e = c->e;
    const ParallelPlan *p = e->p;
    const SimOptions *o = e->o;
    mc_comment(c, "parallelism");
    mc_int(c, "--tensor-model-parallel-size", "model.tensor_model_parallel_size", p->tp);
    mc_bool(c, "--sequence-parallel", "model.sequence_parallel", p->sp);
    mc_bool(c, "--tp-comm-overlap", "comm_overlap.tp_comm_overlap", p->tp_overlap);
    mc_int(c, "--pipeline-model-parallel-size", "model.pipeline_model_parallel_size", p->pp);
    if (c->nemo) {
        /* the recipe may carry its own split: clear what this plan does not set */
        char v[32] = "null";
        if (p->vpp > 1) snprintf(v, sizeof v, "%lld", (long long)p->vpp);
        mc_set(c, NULL, NULL, "model.virtual_pipeline_model_parallel_size", v);
        mc_set(c, NULL, NULL, "model.num_layers_in_first_pipeline_stage", "null");
        mc_set(c, NULL, NULL, "model.num_layers_in_last_pipeline_stage", "null");
        mc_set(c, NULL, NULL, "model.account_for_embedding_in_pipeline_split", "false");
        mc_set(c, NULL, NULL, "model.account_for_loss_in_pipeline_split", "false");
    }
    if (p->n_chunks > 1 && uneven(e)) {
        TsBuf lay = {0}, quoted = {0};
        layout_string(e, &lay);
        ts_buf_printf(&quoted, "\"%s\"", lay.data); /* Hydra reads | only inside quotes */
        mc_set(c, "--pipeline-model-parallel-layout", lay.data, "model.pipeline_model_parallel_layout", quoted.data);
        ts_buf_free(&lay);
        ts_buf_free(&quoted);
    } else {
        mc_set(c, NULL, NULL, "model.pipeline_model_parallel_layout", "null");
        if (p->vpp > 1)
            mc_int(c, "--num-layers-per-virtual-pipeline-stage", NULL, e->m->layers / p->n_chunks);
    }
    if (p->vpp_group > 0) /* ModelParallelConfig.microbatch_group_size_per_vp_stage */
        mc_int(c, "--microbatch-group-size-per-virtual-pipeline-stage", "model.microbatch_group_size_per_vp_stage",
               p->vpp_group);
    else if (c->nemo) /* a recipe's own group would change the order simulated */
        mc_set(c, NULL, NULL, "model.microbatch_group_size_per_vp_stage", "null");
    mc_int(c, "--context-parallel-size", "model.context_parallel_size", p->cp);
    if (p->cp > 1) {
        /* TransformerConfig.cp_comm_type: "p2p", "all_gather", "a2a" [MCORE] */
        static const char *const CP[] = {"p2p", "all_gather", "a2a"};
        _Static_assert(sizeof CP / sizeof CP[0] == SIM_CP_COMM_COUNT, "cp_comm_type per SimCpComm");
        mc_str(c, "--cp-comm-type", "model.cp_comm_type", CP[o->cp_comm]);
    }
    if (moe(e->m)) {
        mc_int(c, "--expert-model-parallel-size", "model.expert_model_parallel_size", p->ep);
        mc_int(c, "--expert-tensor-parallel-size", "model.expert_tensor_parallel_size", p->etp);
    }
    /* sharding: the distributed optimizer [MLM 2658]; Megatron FSDP as
     * docs/source/api-guide/custom_fsdp.md enables it, with the checkpoint
     * format it asserts [MLM 711-714] */
    bool fsdp = p->zero == 3;
    mc_bool(c, "--use-distributed-optimizer", "ddp.use_distributed_optimizer", sharded_opt(p) || fsdp);
    if (c->nemo)
        mc_set(c, NULL, NULL, "optimizer.use_distributed_optimizer", sharded_opt(p) || fsdp ? "true" : "false");
    mc_bool(c, "--use-megatron-fsdp", "ddp.use_megatron_fsdp", fsdp);
    if (fsdp) {
        mc_str(c, "--data-parallel-sharding-strategy", "ddp.data_parallel_sharding_strategy", "optim_grads_params");
        mc_set(c, "--no-gradient-accumulation-fusion", NULL, "model.gradient_accumulation_fusion", "false");
        mc_str(c, "--ckpt-format", "checkpoint.ckpt_format", "fsdp_dtensor");
    }
    mc_bool(c, "--overlap-grad-reduce", "ddp.overlap_grad_reduce", o->dp_overlap);
    mc_bool(c, "--overlap-param-gather", "ddp.overlap_param_gather",
            (sharded_opt(p) || fsdp) && o->dp_overlap && o->param_gather_overlap);
    if (o->bucket_bytes > 0) {
        /* Megatron counts the bucket in elements at the reduction dtype */
        double el = o->bucket_bytes / (o->fp32_grad_reduce || p->dtype == TS_DTYPE_FP32 ? 4.0 : 2.0);
        mc_int(c, "--ddp-bucket-size", "ddp.bucket_size", (int64_t)llround(el));
    }
}

static void mc_step(const Mc *c)
{
    const Emit *e = c->e;
    const ParallelPlan *p = e->p;
    const SimOptions *o = e->o;
    if (c->nemo || p->recompute != PLAN_RECOMPUTE_NONE) mc_comment(c, "activation recompute");
    if (p->recompute == PLAN_RECOMPUTE_NONE) {
        mc_set(c, NULL, NULL, "model.recompute_granularity", "null");
    } else {
        mc_str(c, "--recompute-granularity", "model.recompute_granularity", plan_recompute_name(p->recompute));
    }
    if (p->recompute == PLAN_RECOMPUTE_FULL) {
        /* uniform over 1-layer units recomputes every layer; block recomputes
         * the first N of each chunk, as recompute_layers counts them [MLM 2031] */
        mc_str(c, "--recompute-method", "model.recompute_method", p->recompute_layers > 0 ? "block" : "uniform");
        mc_int(c, "--recompute-num-layers", "model.recompute_num_layers",
               p->recompute_layers > 0 ? p->recompute_layers : 1);
    } else {
        mc_set(c, NULL, NULL, "model.recompute_method", "null");
        mc_set(c, NULL, NULL, "model.recompute_num_layers", "null");
    }
    /* the recomputed modules, selective only [MLM 2045: nargs, one word
     * each; Megatron's default is core_attn]: the flag where the plan names
     * them, the key always (a recipe may list others) */
    if (p->recompute == PLAN_RECOMPUTE_SELECTIVE) {
        char mods[96];
        plan_rc_modules_format(plan_rc_modules(p), mods, sizeof mods);
        if (c->nemo) {
            char list[100];
            snprintf(list, sizeof list, "[%s]", mods);
            mc_set(c, NULL, NULL, "model.recompute_modules", list);
        } else if (p->recompute_modules) {
            for (char *w = mods; *w; w++)
                if (*w == ',') *w = ' '; /* the names are plain words */
            ts_buf_printf(c->e->b, "  --recompute-modules %s\n", mods);
        }
    } else {
        mc_set(c, NULL, NULL, "model.recompute_modules", "null");
    }
    mc_comment(c, "batch and precision");
    mc_int(c, "--micro-batch-size", "train.micro_batch_size", p->micro_batch);
    mc_int(c, "--global-batch-size", "train.global_batch_size", p->global_batch);
    mc_int(c, "--seq-length", "dataset.seq_length", p->seq);
    if (c->nemo) mc_int(c, NULL, "model.seq_length", p->seq);
    /* [MLM 2518-2545, 1313]; Bridge's recipes [MB mixed_precision.py] */
    switch (p->dtype) {
    case TS_DTYPE_FP16: mc_set(c, "--fp16", NULL, "mixed_precision", "fp16_mixed"); break;
    case TS_DTYPE_FP8: {
        /* [MLM 1313-1321] --fp8-recipe delayed|tensorwise|blockwise; Bridge's
         * recipes [MB mixed_precision.py] (current scaling refused in
         * check_megatron: its recipe keeps the first and last layers in BF16) */
        static const char *const MLM_FP8[] = {"delayed", "tensorwise", "blockwise"};
        static const char *const MB_FP8[] = {"bf16_with_fp8_delayed_scaling_mixed", NULL,
                                             "bf16_with_fp8_subchannel_scaling_mixed"};
        _Static_assert(sizeof MLM_FP8 / sizeof MLM_FP8[0] == PLAN_FP8_COUNT, "Megatron recipe per PlanFp8Recipe");
        _Static_assert(sizeof MB_FP8 / sizeof MB_FP8[0] == PLAN_FP8_COUNT, "Bridge recipe per PlanFp8Recipe");
        mc_set(c, "--bf16", NULL, "mixed_precision", MB_FP8[p->fp8_recipe]);
        mc_set(c, "--fp8-format", "hybrid", NULL, NULL);
        mc_set(c, "--fp8-recipe", MLM_FP8[p->fp8_recipe], NULL, NULL);
        break;
    }
    case TS_DTYPE_FP32: mc_set(c, NULL, NULL, "mixed_precision", "null"); break;
    default: mc_set(c, "--bf16", NULL, "mixed_precision", "bf16_mixed"); break;
    }
    if (p->dtype != TS_DTYPE_FP32) {
        /* bf16 reduces in fp32 unless --grad-reduce-in-bf16; fp16 in fp16 unless
         * --accumulate-allreduce-grads-in-fp32 [MLM 733-748] */
        bool fp16 = p->dtype == TS_DTYPE_FP16;
        if (fp16 && o->fp32_grad_reduce) mc_set(c, "--accumulate-allreduce-grads-in-fp32", NULL, NULL, NULL);
        if (!fp16 && !o->fp32_grad_reduce) mc_set(c, "--grad-reduce-in-bf16", NULL, NULL, NULL);
        mc_set(c, NULL, NULL, "ddp.grad_reduce_in_fp32", o->fp32_grad_reduce ? "true" : "false");
    }
    /* the loss's kernels: --cross-entropy-loss-fusion, with
     * --cross-entropy-fusion-impl native|te [MLM]; the key written either
     * way (Bridge's GPT provider fuses by default) */
    mc_bool(c, "--cross-entropy-loss-fusion", "model.cross_entropy_loss_fusion", o->ce_fusion != SIM_CE_NONE);
    if (o->ce_fusion != SIM_CE_NONE)
        mc_str(c, "--cross-entropy-fusion-impl", "model.cross_entropy_fusion_impl", sim_ce_fusion_name(o->ce_fusion));
    /* layer CUDA graphs, scope full (the default) [MLM 1405-1420] */
    if (o->cuda_graphs) {
        mc_str(c, "--cuda-graph-impl", "model.cuda_graph_impl", "local");
        if (c->nemo) mc_set(c, NULL, NULL, "model.cuda_graph_scope", "full");
    }
    /* Adam's moments in bf16: TE's precision-aware FusedAdam [MLM 3282-3299];
     * Bridge converts "bf16" to torch.bfloat16 [MB omegaconf_utils.py] */
    bool bf16_moments = p->adam_moments == TS_DTYPE_BF16;
    mc_bool(c, "--use-precision-aware-optimizer", "optimizer.use_precision_aware_optimizer", bf16_moments);
    if (bf16_moments) {
        mc_str(c, "--exp-avg-dtype", "optimizer.exp_avg_dtype", "bf16");
        mc_str(c, "--exp-avg-sq-dtype", "optimizer.exp_avg_sq_dtype", "bf16");
    }
}

static void header(const Emit *e, const char *what, const char *generator, const char *source, const char *use)
{
    TsBuf d = {0};
    plan_describe(e->p, &d);
    ts_buf_printf(e->b, "# %s for %s: %s\n", what, e->m->name, d.data ? d.data : "");
    ts_buf_printf(e->b, "# written by %s --emit %s; %s\n", generator, rep_emit_name(e->t), source);
    ts_buf_printf(e->b, "# use: %s\n", use);
    ts_buf_free(&d);
}

static TsStatus emit_megatron(const Emit *e, const char *generator)
{
    TsStatus st = check_megatron(e);
    if (st != TS_OK) return st;
    bool nemo = e->t == REP_EMIT_NEMO;
    Mc c = {e, nemo};
    if (nemo) {
        header(e, "Megatron-Bridge ConfigContainer overrides", generator,
               "keys of Megatron-Bridge v0.6.0 (training/config.py) and Megatron-Core 0.15",
               "source this file, then python scripts/training/run_recipe.py --recipe <a recipe of this architecture> "
               "\"${NEMO_OVERRIDES[@]}\"");
        const ModelSpec *m = e->m;
        static const char *const ACT[] = {"GeLU", "SwiGLU", "squared ReLU", "GeGLU"};
        _Static_assert(sizeof ACT / sizeof ACT[0] == MODEL_ACT_COUNT, "ACT per ModelAct");
        ts_buf_printf(e->b, "# the recipe's model provider sets the architecture (%s, %s, %s%s%s%s); these set its "
                            "size and the plan\n",
                      m->norm == MODEL_NORM_RMSNORM ? "RMSNorm" : "LayerNorm", ACT[m->act],
                      m->pos == MODEL_POS_ROPE ? "RoPE" : "learned positions",
                      m->tied_embeddings ? ", tied embeddings" : ", untied embeddings",
                      m->qk_norm ? ", QK norm" : "", mla(m) ? ", multi-latent attention" : "");
        ts_buf_puts(e->b, "NEMO_OVERRIDES=(\n");
    } else {
        header(e, "Megatron-LM pretrain_gpt.py arguments", generator,
               "flags of Megatron-LM core_v0.15.0 megatron/training/arguments.py",
               "source this file, then torchrun ... pretrain_gpt.py \"${MEGATRON_ARGS[@]}\" with your data, "
               "tokenizer, optimizer and checkpoint arguments");
        /* TP or CP on Hopper asserts CUDA_DEVICE_MAX_CONNECTIONS=1; Megatron FSDP
         * asks for it unset [MLM 938-962; custom_fsdp.md] */
        if (e->p->zero == 3) ts_buf_puts(e->b, "unset CUDA_DEVICE_MAX_CONNECTIONS\n");
        else if (e->p->tp > 1 || e->p->cp > 1) ts_buf_puts(e->b, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n");
        ts_buf_puts(e->b, "MEGATRON_ARGS=(\n");
    }
    mc_model(&c);
    mc_parallel(&c);
    mc_step(&c);
    ts_buf_puts(e->b, ")\n");
    return TS_OK;
}

/* ---- torchtitan ------------------------------------------------------------------ */
/* torchtitan's model registry [TT models/<name>/__init__.py]: X(name, flavor,
 * L, H, A, G, D, F, E, expert F, V, has a pipelining_fn), with G and D as
 * trainsim counts them (MLA: G = A, D = qk_nope + qk_rope head dims). A model
 * is run as the flavor whose dimensions it has. */
#define TT_FLAVOR_LIST(X)                                                                  \
    X("llama3", "8B", 32, 4096, 32, 8, 128, 14336, 0, 0, 128256, true)                     \
    X("llama3", "70B", 80, 8192, 64, 8, 128, 28672, 0, 0, 128256, true)                    \
    X("llama3", "405B", 126, 16384, 128, 8, 128, 53248, 0, 0, 128256, true)                \
    X("qwen3", "0.6B", 28, 1024, 16, 8, 128, 3072, 0, 0, 151936, false)                    \
    X("qwen3", "1.7B", 28, 2048, 16, 8, 128, 6144, 0, 0, 151936, false)                    \
    X("qwen3", "4B", 36, 2560, 32, 8, 128, 9728, 0, 0, 151936, false)                      \
    X("qwen3", "8B", 36, 4096, 32, 8, 128, 12288, 0, 0, 151936, false)                     \
    X("qwen3", "14B", 40, 5120, 40, 8, 128, 17408, 0, 0, 151936, false)                    \
    X("qwen3", "32B", 64, 5120, 64, 8, 128, 25600, 0, 0, 151936, false)                    \
    X("qwen3", "30B-A3B", 48, 2048, 32, 4, 128, 6144, 128, 768, 151936, false)             \
    X("qwen3", "235B-A22B", 94, 4096, 64, 4, 128, 12288, 128, 1536, 151936, false)         \
    X("deepseek_v3", "16B", 27, 2048, 16, 16, 192, 10944, 64, 1408, 102400, true)          \
    X("deepseek_v3", "236B", 60, 5120, 128, 128, 192, 12288, 160, 1536, 102400, true)      \
    X("deepseek_v3", "671B", 61, 7168, 128, 128, 192, 18432, 256, 2048, 129280, true)

typedef struct TtFlavor {
    const char *name, *flavor;
    int64_t layers, hidden, heads, kv_heads, head_dim, ffn, experts, moe_ffn, vocab;
    bool pipeline;
} TtFlavor;
static const TtFlavor TT_FLAVORS[] = {
#define X(n, f, l, h, a, g, d, ff, ex, mf, v, pl) {n, f, l, h, a, g, d, ff, ex, mf, v, pl},
    TT_FLAVOR_LIST(X)
#undef X
};

static const TtFlavor *tt_flavor(const ModelSpec *m)
{
    for (size_t i = 0; i < sizeof TT_FLAVORS / sizeof TT_FLAVORS[0]; i++) {
        const TtFlavor *f = &TT_FLAVORS[i];
        if (f->layers == m->layers && f->hidden == m->hidden && f->heads == m->heads && f->kv_heads == m->kv_heads &&
            f->head_dim == m->head_dim && f->ffn == m->ffn && f->experts == m->experts &&
            (f->experts == 0 || f->moe_ffn == m->moe_ffn) && f->vocab == m->vocab)
            return f;
    }
    return NULL;
}

/* The refusal of a model torchtitan has no flavor of, listing its flavors. */
static TsStatus tt_no_flavor(const Emit *e)
{
    const ModelSpec *m = e->m;
    TsBuf h = {0};
    ts_buf_puts(&h, "torchtitan builds its models in code; its flavors:");
    for (size_t i = 0; i < sizeof TT_FLAVORS / sizeof TT_FLAVORS[0]; i++) {
        bool first = i == 0 || strcmp(TT_FLAVORS[i - 1].name, TT_FLAVORS[i].name) != 0;
        ts_buf_printf(&h, "%s%s%s", first ? (i ? "; " : " ") : ", ", first ? TT_FLAVORS[i].name : "",
                      first ? " " : "");
        ts_buf_puts(&h, TT_FLAVORS[i].flavor);
    }
    TsStatus st = refuse(e, h.data, "torchtitan has no flavor of %s (%lld layers, hidden %lld, %lld heads%s)",
                         m->name, (long long)m->layers, (long long)m->hidden, (long long)m->heads,
                         moe(m) ? ", experts" : "");
    ts_buf_free(&h);
    return st;
}

/* torchtitan's sharding, precision and pipeline: FSDP2 or DDP, amp or pure bf16. */
static TsStatus tt_check_sharding(const Emit *e, const TtFlavor *f)
{
    const ParallelPlan *p = e->p;
    /* fully_shard applied: dp_shard x cp > 1 (with a pipeline: --zero 1, above) */
    bool fsdp = p->dp * p->cp > 1 && (p->zero == 3 || (p->zero == 1 && p->pp > 1));
    if (p->pp > 1 && !f->pipeline)
        return refuse(e, "its train spec has no pipelining_fn", "--pp %lld: torchtitan's %s has no pipeline split",
                      (long long)p->pp, f->name);
    if (p->precision == PLAN_PRECISION_MIXED)
        return refuse(e, "torchtitan keeps fp32 weights and casts them for the matmuls (--precision amp) or trains in "
                         "bf16 throughout (--precision pure); --emit torchtitan picks amp when --precision is left out",
                      "--precision mixed (16-bit weights, fp32 master copies) has no torchtitan setting");
    if (p->dtype == TS_DTYPE_FP16)
        return refuse(e, "torchtitan's training.mixed_precision_param is bfloat16 or float32",
                      "--dtype fp16 has no torchtitan setting");
    if (p->dtype == TS_DTYPE_FP8)
        return refuse(e, "trainsim's torchtitan code path is eager PyTorch; torchao's float8 GEMMs need torch.compile",
                      "--dtype fp8 has no eager torchtitan setting");
    /* under a pipeline torchtitan's FSDP2 keeps the parameters gathered
     * (fsdp_reshard_after_forward "default": not resharded with PP) and
     * PyTorch's pipelining syncs the gradients at the last micro-batch
     * (stage.py backward_maybe_with_nosync): ZeRO-1 as trainsim times it */
    if (p->zero == 2 && p->pp > 1)
        return refuse(e, "torchtitan's pipelining syncs FSDP2's gradients once, at the last micro-batch, as --zero 1 "
                         "--framework torchtitan times it; a reduce-scatter after every micro-batch (Llama 3's FSDP) is "
                         "not a torchtitan setting",
                      "--zero 2 with --pp %lld has no torchtitan setting", (long long)p->pp);
    if ((p->zero == 1 && p->pp == 1) || p->zero == 2 || p->dist_opt)
        return refuse(e, "torchtitan shards parameters, gradients and optimizer state together with FSDP2 (--zero 3; "
                         "under a pipeline --zero 1) or replicates them with DDP (--zero 0)",
                      "%s has no torchtitan setting",
                      p->dist_opt ? "--dist-opt" : p->zero == 1 ? "--zero 1" : "--zero 2");
    if (p->zero == 0 && p->cp > 1)
        return refuse(e, "torchtitan shards the parameters over the CP ranks (FSDP over dp_shard x cp): use --zero 3",
                      "--zero 0 with --cp %lld has no torchtitan setting", (long long)p->cp);
    if (p->zero == 0 && p->dp > 1 && p->dp != p->gpus)
        return refuse(e, "torchtitan runs DDP only without other parallelism (\"DDP has not supported > 1D "
                         "parallelism\"): use --zero 3 (FSDP2)",
                      "--zero 0 with dp %lld of %lld GPUs has no torchtitan setting", (long long)p->dp,
                      (long long)p->gpus);
    if (p->precision == PLAN_PRECISION_AMP && p->dtype != TS_DTYPE_FP32 && !fsdp && (p->tp > 1 || p->pp > 1))
        return refuse(e, "torchtitan casts to bf16 under FSDP (--zero 3 with dp x cp > 1) or autocast without TP and "
                         "PP; or train in bf16 throughout (--precision pure)",
                      "--precision amp with tp %lld, pp %lld and no FSDP has no torchtitan setting (it turns mixed "
                      "precision off)",
                      (long long)p->tp, (long long)p->pp);
    return TS_OK;
}

/* The runtime knobs torchtitan's eager code path has a setting for (TP, recompute,
 * attention, CP, the gradients' reduction, Adam's moments, MTP). */
static TsStatus tt_check_runtime(const Emit *e)
{
    const ParallelPlan *p = e->p;
    const ModelSpec *m = e->m;
    const SimOptions *o = e->o;
    if (p->tp > 1 && !p->sp)
        return refuse(e, "torchtitan's tensor parallelism always shards the norms' sequence (SequenceParallel)",
                      "--no-sp with --tp %lld has no torchtitan setting", (long long)p->tp);
    if (p->tp_overlap)
        return refuse(e, "its async tensor parallelism needs torch.compile; trainsim's torchtitan code path is eager",
                      "--tp-overlap has no eager torchtitan setting");
    if (p->recompute == PLAN_RECOMPUTE_FULL && p->recompute_layers > 0)
        return refuse(e, "torchtitan's full activation checkpointing covers every layer",
                      "--recompute-layers %lld has no torchtitan setting", (long long)p->recompute_layers);
    if (p->recompute == PLAN_RECOMPUTE_SELECTIVE && !o->selective_ops)
        return refuse(e, "torchtitan's selective checkpointing is per op (add --selective-ops) or every n-th layer",
                      "--recompute selective as Megatron's core-attention recompute has no torchtitan setting");
    if (!p->flash_attn)
        return refuse(e, "torchtitan's attention is SDPA (flash or memory-efficient kernels) or flex attention",
                      "--no-flash has no torchtitan setting");
    if (p->cp > 1 && o->cp_comm == SIM_CP_A2A)
        return refuse(e, "torchtitan's context parallelism is ring attention (context_parallel_rotate_method "
                         "allgather or alltoall)",
                      "--cp-comm a2a (Ulysses) has no torchtitan setting");
    if (p->dp * p->cp > 1 && !o->dp_overlap)
        return refuse(e, "FSDP2 and DDP always overlap the gradient reduction with the backward",
                      "--no-dp-overlap has no torchtitan setting");
    if (p->dp * p->cp > 1 && !o->fp32_grad_reduce && p->dtype != TS_DTYPE_FP32)
        return refuse(e, "torchtitan's training.mixed_precision_reduce is float32 only",
                      "--fp16-grad-reduce has no torchtitan setting");
    if (o->bucket_bytes > 0)
        return refuse(e, "FSDP2 reduces per layer; torchtitan's DDP takes PyTorch's default buckets",
                      "--bucket-mb has no torchtitan setting");
    if (p->recompute == PLAN_RECOMPUTE_SELECTIVE && p->recompute_modules)
        return refuse(e, "torchtitan's selective checkpointing picks ops (selective_ac_option \"op\") or every n-th "
                         "layer, not Megatron's modules",
                      "--recompute-modules has no torchtitan setting");
    if (p->adam_moments == TS_DTYPE_BF16 && p->precision != PLAN_PRECISION_PURE)
        return refuse(e, "torchtitan's Adam keeps its moments in the parameters' dtype: bf16 only when training in "
                         "bf16 throughout (--precision pure)",
                      "--adam-moments bf16 with fp32 parameters (--precision %s) has no torchtitan setting",
                      plan_precision_name(p->precision));
    if (m->mtp_layers > 0)
        return refuse(e, "torchtitan's models have no multi-token-prediction module: --mtp-layers 0",
                      "%s's %lld MTP layers have no torchtitan setting", m->name, (long long)m->mtp_layers);
    return TS_OK;
}

/* torchtitan's MoE: expert TP 1 or TP, grouped GEMMs, dropless, DeepEP in deepseek_v3 only. */
static TsStatus tt_check_moe(const Emit *e, const TtFlavor *f)
{
    const ParallelPlan *p = e->p;
    const ModelSpec *m = e->m;
    const SimOptions *o = e->o;
    if (moe(m) && p->etp != 1 && p->etp != p->tp)
        return refuse(e, "torchtitan's expert_tensor_parallel_degree is 1 or the TP degree",
                      "--etp %lld with --tp %lld has no torchtitan setting", (long long)p->etp, (long long)p->tp);
    if (moe(m) && o->sequential_experts)
        return refuse(e, "torchtitan's MoE runs its local experts as grouped GEMMs",
                      "--sequential-experts has no torchtitan setting");
    /* the MoE runtime: parallelism.expert_parallel_comm_backend [TT
     * job_config.py], read by the deepseek_v3 (and llama4) parallelize only,
     * which raise without EP or with ETP [TT models/deepseek_v3/infra/
     * parallelize.py] */
    if (deepep(e) && strcmp(f->name, "deepseek_v3") != 0)
        return refuse(e, "torchtitan's DeepEP backend (expert_parallel_comm_backend \"deepep\") is wired into its "
                         "deepseek_v3 models only",
                      "--moe-dispatcher deepep has no torchtitan setting for %s", f->name);
    if (deepep(e) && (p->ep == 1 || p->etp > 1))
        return refuse(e, "torchtitan's DeepEP backend needs expert_parallel_degree > 1 and "
                         "expert_tensor_parallel_degree 1",
                      "--moe-dispatcher deepep with ep %lld, etp %lld has no torchtitan setting", (long long)p->ep,
                      (long long)p->etp);
    if (moe(m) && p->moe_node_limit > 0)
        return refuse(e, "torchtitan's node-limited routing (MoEArgs num_expert_groups, num_limited_groups) is fixed "
                         "by the model flavor in code, not the job config",
                      "--moe-node-limit %lld has no torchtitan setting", (long long)p->moe_node_limit);
    if (moe(m) && p->moe_capacity > 0)
        return refuse(e, "torchtitan's MoE is dropless: every routed token reaches its expert",
                      "--moe-capacity-factor has no torchtitan setting");
    return TS_OK;
}

static TsStatus check_torchtitan(const Emit *e, const TtFlavor **flavor)
{
    const TtFlavor *f = tt_flavor(e->m);
    if (!f) return tt_no_flavor(e);
    *flavor = f;
    TsStatus st = tt_check_sharding(e, f);
    if (!st) st = tt_check_runtime(e);
    if (!st) st = tt_check_moe(e, f);
    return st;
}

/* context_parallel_rotate_method: "allgather" gathers every K/V shard;
 * "alltoall" passes one shard to the next rank per step (PyTorch's
 * _AllToAllRotater), our p2p ring. Ulysses (a2a) is refused above. */
static const char *tt_rotate(SimCpComm c) { return c == SIM_CP_ALLGATHER ? "allgather" : "alltoall"; }

static void toml_str(TsBuf *b, const char *key, const char *v) { ts_buf_printf(b, "%s = \"%s\"\n", key, v); }
static void toml_int(TsBuf *b, const char *key, int64_t v) { ts_buf_printf(b, "%s = %lld\n", key, (long long)v); }

static TsStatus emit_torchtitan(const Emit *e, const char *generator)
{
    const TtFlavor *f = NULL;
    TsStatus st = check_torchtitan(e, &f);
    if (st != TS_OK) return st;
    const ParallelPlan *p = e->p;
    TsBuf *b = e->b;
    header(e, "torchtitan job config", generator, "keys of torchtitan v0.2.2 torchtitan/config/job_config.py",
           "merge into your train config (--job.config_file); dataset, optimizer, lr schedule and checkpoints stay "
           "yours");
    ts_buf_puts(b, "\n[model]\n");
    toml_str(b, "name", f->name);
    toml_str(b, "flavor", f->flavor);

    /* without PP the local batch is one micro-batch and torchtitan accumulates
     * global / (local x dp) of them; with PP one step's micro-batches go
     * through the pipeline as the local batch */
    ts_buf_puts(b, "\n[training]\n");
    toml_int(b, "local_batch_size", p->pp > 1 ? p->micro_batch * p->grad_accum : p->micro_batch);
    toml_int(b, "global_batch_size", p->global_batch);
    toml_int(b, "seq_len", p->seq);
    bool bf16 = p->dtype != TS_DTYPE_FP32;
    toml_str(b, "dtype", p->precision == PLAN_PRECISION_PURE && bf16 ? "bfloat16" : "float32");
    toml_str(b, "mixed_precision_param", bf16 ? "bfloat16" : "float32");
    toml_str(b, "mixed_precision_reduce", "float32");

    ts_buf_puts(b, "\n[parallelism]\n");
    /* DDP: replicate over DP; FSDP: shard over DP; HSDP (--dp-shard S):
     * replicate dp/S, shard S (torchtitan's 2-D (dp_replicate, dp_shard) mesh) */
    bool ddp = p->zero == 0 && p->dp > 1;
    int64_t rep = ddp ? p->dp : plan_dp_replicas(p);
    toml_int(b, "data_parallel_replicate_degree", rep);
    toml_int(b, "data_parallel_shard_degree", ddp ? 1 : p->dp / rep);
    toml_int(b, "tensor_parallel_degree", p->tp);
    toml_int(b, "pipeline_parallel_degree", p->pp);
    toml_int(b, "context_parallel_degree", p->cp);
    if (moe(e->m)) {
        toml_int(b, "expert_parallel_degree", p->ep);
        toml_int(b, "expert_tensor_parallel_degree", p->etp);
        toml_str(b, "expert_parallel_comm_backend", deepep(e) ? "deepep" : "standard");
    }
    if (p->cp > 1) toml_str(b, "context_parallel_rotate_method", tt_rotate(e->o->cp_comm));
    if (p->pp > 1) {
        toml_str(b, "pipeline_parallel_schedule", p->schedule == PLAN_SCHED_GPIPE         ? "GPipe"
                                                  : p->schedule == PLAN_SCHED_INTERLEAVED ? "Interleaved1F1B"
                                                                                          : "1F1B");
        toml_int(b, "pipeline_parallel_microbatch_size", p->micro_batch);
        if (!uneven(e)) {
            /* n stages of L/n layers: the embedding and output weigh nothing */
            toml_int(b, "pipeline_parallel_layers_per_stage", e->m->layers / p->n_chunks);
            toml_int(b, "pipeline_parallel_first_stage_less_layers", 0);
            toml_int(b, "pipeline_parallel_last_stage_less_layers", 0);
        } else {
            ts_buf_puts(b, "module_fqns_per_model_part = [\n");
            for (int64_t ch = 0, l = 0; ch < p->n_chunks; ch++) {
                ts_buf_puts(b, "  [");
                bool first = true;
                if (ch == 0) ts_buf_puts(b, "\"tok_embeddings\""), first = false;
                for (int64_t i = chunk_layers(e, ch); i > 0; i--, l++, first = false)
                    ts_buf_printf(b, "%s\"layers.%lld\"", first ? "" : ", ", (long long)l);
                if (ch == p->n_chunks - 1) ts_buf_puts(b, first ? "\"norm\", \"output\"" : ", \"norm\", \"output\"");
                ts_buf_puts(b, ch == p->n_chunks - 1 ? "]\n" : "],\n");
            }
            ts_buf_puts(b, "]\n");
        }
    }

    ts_buf_puts(b, "\n[activation_checkpoint]\n");
    toml_str(b, "mode", plan_recompute_name(p->recompute)); /* none, selective, full */
    if (p->recompute == PLAN_RECOMPUTE_SELECTIVE) toml_str(b, "selective_ac_option", "op");

    ts_buf_puts(b, "\n[compile]\nenable = false\n");
    return TS_OK;
}

/* ---- DeepSpeed + Megatron-DeepSpeed ----------------------------------------------- */
static TsStatus check_deepspeed(const Emit *e)
{
    const ParallelPlan *p = e->p;
    const ModelSpec *m = e->m;
    if (p->precision != PLAN_PRECISION_MIXED)
        return refuse(e, "DeepSpeed's bf16 and fp16 modes keep 16-bit weights with fp32 master copies "
                         "(--precision mixed)",
                      "--precision %s has no DeepSpeed setting", plan_precision_name(p->precision));
    if (p->dtype == TS_DTYPE_FP8)
        return refuse(e, "the pipeline model (GPTModelPipe) builds Megatron-DeepSpeed's own layers, not Transformer "
                         "Engine's",
                      "--dtype fp8 has no Megatron-DeepSpeed pipeline setting");
    if (p->zero >= 2 || p->dist_opt)
        return refuse(e, "DeepSpeed's pipeline engine runs ZeRO stage 0 or 1 (ZeRO-2 and 3 are incompatible with "
                         "pipelining)",
                      "%s has no DeepSpeed pipeline setting",
                      p->dist_opt ? "--dist-opt" : p->zero == 2 ? "--zero 2" : "--zero 3");
    if (p->pp > 1 && p->schedule != PLAN_SCHED_1F1B)
        return refuse(e, "DeepSpeed's pipeline engine runs one schedule, 1F1B (TrainSchedule)",
                      "--schedule %s has no DeepSpeed setting", plan_sched_name(p->schedule));
    if (p->cp > 1)
        return refuse(e, "Megatron-DeepSpeed splits sequences with DeepSpeed-Ulysses (--ds-sequence-parallel-size), "
                         "outside its pipeline engine",
                      "--cp %lld has no Megatron-DeepSpeed pipeline setting", (long long)p->cp);
    if (p->tp_overlap)
        return refuse(e, "Megatron-DeepSpeed runs its TP collectives on the compute stream",
                      "--tp-overlap has no Megatron-DeepSpeed setting");
    if (p->n_chunks > 1 && uneven(e))
        return refuse(e, "the pipeline engine balances the transformer layers itself (partition_method "
                         "type:transformer)",
                      "an uneven split of %lld layers over %lld stages has no Megatron-DeepSpeed setting",
                      (long long)m->layers, (long long)p->n_chunks);
    if (moe(m) || mla(m) || m->qk_norm)
        return refuse(e, "Megatron-DeepSpeed's pipeline model (GPTModelPipe) builds dense GPT and Llama layers",
                      "%s's %s has no Megatron-DeepSpeed flag", m->name,
                      moe(m) ? "mixture of experts" : mla(m) ? "multi-latent attention" : "QK norm");
    if (p->recompute == PLAN_RECOMPUTE_FULL && p->recompute_layers > 0)
        return refuse(e, "the pipeline engine recomputes uniformly (activation_checkpoint_interval); it has no block "
                         "method",
                      "--recompute-layers %lld has no Megatron-DeepSpeed pipeline setting",
                      (long long)p->recompute_layers);
    if (p->recompute == PLAN_RECOMPUTE_SELECTIVE && e->o->selective_ops)
        return refuse(e, "Megatron-DeepSpeed's selective recompute is the core attention: leave --selective-ops out",
                      "--selective-ops (torchtitan's op-level selective checkpointing) has no Megatron-DeepSpeed "
                      "setting");
    if (plan_rc_modules(p) & ~(uint32_t)PLAN_RC_CORE_ATTN) {
        char mods[96];
        plan_rc_modules_format(plan_rc_modules(p) & ~(uint32_t)PLAN_RC_CORE_ATTN, mods, sizeof mods);
        return refuse(e, "Megatron-DeepSpeed's selective recompute is the core attention alone (--recompute-modules "
                         "core_attn)",
                      "--recompute-modules %s has no Megatron-DeepSpeed setting", mods);
    }
    if (p->adam_moments == TS_DTYPE_BF16)
        return refuse(e, "DeepSpeed's bf16 and fp16 optimizers keep Adam's moments in fp32 beside the fp32 master "
                         "weights",
                      "--adam-moments bf16 has no DeepSpeed setting");
    if (m->mtp_layers > 0)
        return refuse(e, "Megatron-DeepSpeed's GPT model has no multi-token-prediction module: --mtp-layers 0",
                      "%s's %lld MTP layers have no Megatron-DeepSpeed setting", m->name, (long long)m->mtp_layers);
    return TS_OK;
}

static void ds_flag(TsBuf *b, const char *flag, const char *val)
{
    ts_buf_printf(b, "  %s", flag);
    if (val) {
        ts_buf_puts(b, " ");
        shell_word(b, val);
    }
    ts_buf_puts(b, "\n");
}
static void ds_int(TsBuf *b, const char *flag, int64_t v)
{
    char s[32];
    snprintf(s, sizeof s, "%lld", (long long)v);
    ds_flag(b, flag, s);
}
static void ds_num(TsBuf *b, const char *flag, double v)
{
    char s[40];
    fmt_num(s, sizeof s, v);
    ds_flag(b, flag, s);
}

static TsStatus emit_deepspeed(const Emit *e, const char *generator)
{
    TsStatus st = check_deepspeed(e);
    if (st != TS_OK) return st;
    const ParallelPlan *p = e->p;
    const ModelSpec *m = e->m;
    TsBuf *b = e->b;
    header(e, "DeepSpeed config and Megatron-DeepSpeed pretrain_gpt.py arguments", generator,
           "DeepSpeed docs/_pages/config-json.md and Megatron-DeepSpeed megatron/arguments.py",
           "source this file (it writes ds_config.json), then deepspeed pretrain_gpt.py \"${DEEPSPEED_ARGS[@]}\" "
           "with your data, tokenizer, optimizer and checkpoint arguments");
    /* [DS]: the batch as micro-batch x accumulation x data-parallel GPUs;
     * bf16 with fp32 accumulation selects the BF16 optimizer (also under
     * ZeRO-1), the fp32 gradient copy trainsim simulates */
    ts_buf_puts(b, "cat > ds_config.json <<'EOF'\n{\n");
    ts_buf_printf(b, "  \"train_batch_size\": %lld,\n", (long long)p->global_batch);
    ts_buf_printf(b, "  \"train_micro_batch_size_per_gpu\": %lld,\n", (long long)p->micro_batch);
    ts_buf_printf(b, "  \"gradient_accumulation_steps\": %lld,\n", (long long)p->grad_accum);
    ts_buf_printf(b, "  \"zero_optimization\": {\n    \"stage\": %d\n  }", p->zero);
    if (p->dtype == TS_DTYPE_BF16)
        ts_buf_puts(b, ",\n  \"bf16\": {\n    \"enabled\": true\n  },\n"
                       "  \"data_types\": {\n    \"grad_accum_dtype\": \"fp32\"\n  }");
    if (p->dtype == TS_DTYPE_FP16) ts_buf_puts(b, ",\n  \"fp16\": {\n    \"enabled\": true\n  }");
    ts_buf_puts(b, "\n}\nEOF\n");
    if (p->sp) ts_buf_puts(b, "export CUDA_DEVICE_MAX_CONNECTIONS=1\n"); /* [MDS] validate_args raises without it */
    ts_buf_puts(b, "DEEPSPEED_ARGS=(\n  # model\n");
    ds_int(b, "--num-layers", m->layers);
    ds_int(b, "--hidden-size", m->hidden);
    ds_int(b, "--ffn-hidden-size", m->ffn);
    ds_int(b, "--num-attention-heads", m->heads);
    if (m->kv_heads < m->heads) ds_int(b, "--num-key-value-heads", m->kv_heads);
    if (m->head_dim * m->heads != m->hidden) ds_int(b, "--kv-channels", m->head_dim);
    if (m->max_positions > 0) ds_int(b, "--max-position-embeddings", m->max_positions);
    if (m->pos == MODEL_POS_ROPE) {
        ds_flag(b, "--use-rotary-position-embeddings", NULL);
        if (m->rope_theta > 0) ds_num(b, "--rotary-position-embeddings-theta", m->rope_theta);
        if (m->rotary_pct != 1.0) ds_num(b, "--rotary-percent", m->rotary_pct);
        ds_flag(b, "--no-position-embedding", NULL); /* [MDS] language_model.py adds learned ones otherwise */
    }
    ds_flag(b, "--normalization", m->norm == MODEL_NORM_RMSNORM ? "rmsnorm" : "layernorm");
    ds_num(b, "--layernorm-epsilon", m->norm_eps);
    if (m->act == MODEL_ACT_SWIGLU) ds_flag(b, "--swiglu", NULL);
    if (m->act == MODEL_ACT_RELU2) ds_flag(b, "--squared-relu", NULL);
    if (!m->mlp_bias) ds_flag(b, "--disable-bias-linear", NULL); /* check_common: all or none */
    if (!m->tied_embeddings) ds_flag(b, "--untie-embeddings-and-output-weights", NULL);
    ds_num(b, "--hidden-dropout", m->hidden_dropout);
    ds_num(b, "--attention-dropout", m->attn_dropout);
    ds_int(b, "--make-vocab-size-divisible-by", m->vocab_divisible);
    ts_buf_printf(b, "  # the vocabulary (%lld, padded to %lld at tp %lld) comes from the tokenizer\n",
                  (long long)m->vocab, (long long)model_padded_vocab(m, p->tp), (long long)p->tp);
    if (p->flash_attn) ds_flag(b, "--use-flash-attn-v2", NULL);
    ts_buf_puts(b, "  # parallelism\n");
    ds_int(b, "--tensor-model-parallel-size", p->tp);
    ds_int(b, "--pipeline-model-parallel-size", p->pp);
    if (p->sp) ds_flag(b, "--sequence-parallel", NULL);
    if (p->recompute != PLAN_RECOMPUTE_NONE) ts_buf_puts(b, "  # activation recompute\n");
    if (p->recompute == PLAN_RECOMPUTE_SELECTIVE) ds_flag(b, "--recompute-granularity", "selective");
    if (p->recompute == PLAN_RECOMPUTE_FULL) {
        /* GPTModelPipe checkpoints every recompute-num-layers layers [MDS] */
        ds_flag(b, "--deepspeed-activation-checkpointing", NULL);
        ds_flag(b, "--recompute-granularity", "full");
        ds_flag(b, "--recompute-method", "uniform");
        ds_int(b, "--recompute-num-layers", 1);
    }
    ts_buf_puts(b, "  # batch and precision\n");
    ds_int(b, "--micro-batch-size", p->micro_batch);
    ds_int(b, "--global-batch-size", p->global_batch);
    ds_int(b, "--seq-length", p->seq);
    if (p->dtype == TS_DTYPE_BF16) ds_flag(b, "--bf16", NULL);
    if (p->dtype == TS_DTYPE_FP16) ds_flag(b, "--fp16", NULL);
    ts_buf_puts(b, "  # DeepSpeed\n");
    ds_flag(b, "--deepspeed", NULL);
    ds_flag(b, "--deepspeed_config", "ds_config.json");
    ds_int(b, "--zero-stage", p->zero);
    ts_buf_puts(b, ")\n");
    return TS_OK;
}

/* ---- the entry point ---------------------------------------------------------------- */
TsStatus rep_emit(RepEmitTarget t, const SimSetup *in, const char *generator, TsBuf *out, TsError *err)
{
    if ((unsigned)t >= (unsigned)REP_EMIT_COUNT)
        return ts_err(err, TS_ERR_INTERNAL, "unknown --emit target %d", (int)t);
    ParallelPlan p = in->plan;
    TsStatus st = plan_resolve(in->model, &p, err);
    if (st != TS_OK) return st;
    TsBuf b = {0};
    Emit e = {.t = t, .m = in->model, .p = &p, .o = &in->opt, .err = err, .b = &b,
              .gpn = in->net ? in->net->cl.gpus_per_node : 0};
    st = check_common(&e);
    if (st == TS_OK) {
        switch (t) {
        case REP_EMIT_MEGATRON:
        case REP_EMIT_NEMO: st = emit_megatron(&e, generator); break;
        case REP_EMIT_TORCHTITAN: st = emit_torchtitan(&e, generator); break;
        case REP_EMIT_DEEPSPEED: st = emit_deepspeed(&e, generator); break;
        default: break;
        }
    }
    if (st == TS_OK && b.oom) st = ts_err(err, TS_ERR_INTERNAL, "out of memory writing the --emit %s recipe",
                                          rep_emit_name(t));
    if (st == TS_OK) ts_buf_append(out, b.data, b.len);
    ts_buf_free(&b);
    return st;
}
