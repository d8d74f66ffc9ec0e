/* plan.c — ParallelPlan defaults, derivation and validation.
 *
 * Every rule names the knob (as its command-line flag) and the rule it
 * breaks, and gives a hint with the nearest valid values where that is
 * cheap to say. Rules follow Megatron-LM's argument checks
 * (megatron/training/arguments.py) and DeepSpeed's pipeline engine
 * (ZeRO-2/3 is not supported together with pipeline parallelism). */
#include "trainsim/plan.h"

#include <string.h>

TS_ENUM_NAMES(plan_recompute, PlanRecompute, PLAN_RECOMPUTE_LIST, PLAN_RECOMPUTE_COUNT)
TS_ENUM_PARSE(plan_recompute, PlanRecompute, PLAN_RECOMPUTE_COUNT)
TS_ENUM_NAMES(plan_sched, PlanSchedule, PLAN_SCHED_LIST, PLAN_SCHED_COUNT)
TS_ENUM_PARSE(plan_sched, PlanSchedule, PLAN_SCHED_COUNT)
TS_ENUM_NAMES(plan_optim, PlanOptimizer, PLAN_OPTIM_LIST, PLAN_OPTIM_COUNT)
TS_ENUM_PARSE(plan_optim, PlanOptimizer, PLAN_OPTIM_COUNT)
TS_ENUM_NAMES(plan_framework, PlanFramework, PLAN_FRAMEWORK_LIST, PLAN_FRAMEWORK_COUNT)
TS_ENUM_PARSE(plan_framework, PlanFramework, PLAN_FRAMEWORK_COUNT)
TS_ENUM_NAMES(plan_precision, PlanPrecision, PLAN_PRECISION_LIST, PLAN_PRECISION_COUNT)
TS_ENUM_PARSE(plan_precision, PlanPrecision, PLAN_PRECISION_COUNT)
TS_ENUM_NAMES(plan_group, PlanGroup, PLAN_GROUP_LIST, PLAN_GROUP_COUNT)
TS_ENUM_NAMES(plan_moe_dispatch, PlanMoeDispatch, PLAN_MOE_DISPATCH_LIST, PLAN_MOE_DISPATCH_COUNT)
TS_ENUM_PARSE(plan_moe_dispatch, PlanMoeDispatch, PLAN_MOE_DISPATCH_COUNT)
TS_ENUM_NAMES(plan_fp8, PlanFp8Recipe, PLAN_FP8_LIST, PLAN_FP8_COUNT)
TS_ENUM_PARSE(plan_fp8, PlanFp8Recipe, PLAN_FP8_COUNT)

bool plan_rc_modules_parse(const char *s, uint32_t *out, const char **bad, size_t *bad_len)
{
    static const struct {
        const char *name;
        uint32_t bit;
    } MODS[] = {
#define X(e, n, b) {n, b},
        PLAN_RC_MOD_LIST(X)
#undef X
    };
    *out = 0;
    while (*s) {
        size_t len = strcspn(s, ",");
        uint32_t bit = 0;
        for (size_t i = 0; i < sizeof MODS / sizeof MODS[0]; i++)
            if (strlen(MODS[i].name) == len && !strncmp(MODS[i].name, s, len)) bit = MODS[i].bit;
        if (!bit) {
            *bad = s;
            *bad_len = len;
            return false;
        }
        *out |= bit;
        s += len;
        if (*s == ',') s++;
    }
    return true;
}

void plan_rc_modules_format(uint32_t mods, char *out, size_t cap)
{
    static const struct {
        const char *name;
        uint32_t bit;
    } MODS[] = {
#define X(e, n, b) {n, b},
        PLAN_RC_MOD_LIST(X)
#undef X
    };
    size_t n = 0;
    if (cap) out[0] = 0;
    for (size_t i = 0; i < sizeof MODS / sizeof MODS[0] && n < cap; i++)
        if (mods & MODS[i].bit) n += (size_t)snprintf(out + n, cap - n, "%s%s", n ? "," : "", MODS[i].name);
}

uint32_t plan_rc_modules(const ParallelPlan *p)
{
    if (p->recompute != PLAN_RECOMPUTE_SELECTIVE) return 0;
    return p->recompute_modules ? p->recompute_modules : PLAN_RC_CORE_ATTN;
}

bool plan_eager(const ParallelPlan *p)
{ return p->framework == PLAN_FRAMEWORK_TORCHTITAN || p->framework == PLAN_FRAMEWORK_HF; }
bool plan_ds_pipe(const ParallelPlan *p) { return p->framework == PLAN_FRAMEWORK_DEEPSPEED; }
bool plan_hf(const ParallelPlan *p) { return p->framework == PLAN_FRAMEWORK_HF; }

int64_t plan_default_seq(const ModelSpec *m)
{
    const int64_t pos = m->max_positions;
    return pos > 0 && pos < PLAN_DEFAULT_SEQ ? pos : PLAN_DEFAULT_SEQ;
}

int64_t plan_default_global_batch(int64_t micro_dp)
{
    if (micro_dp <= 0) return PLAN_DEFAULT_GLOBAL_BATCH;
    return (PLAN_DEFAULT_GLOBAL_BATCH + micro_dp - 1) / micro_dp * micro_dp;
}

void plan_init(ParallelPlan *p)
{
    memset(p, 0, sizeof *p);
    p->tp = p->pp = p->vpp = p->cp = p->ep = 1;
    p->etp = 0;
    p->micro_batch = 1;
    p->dtype = TS_DTYPE_BF16;
    p->schedule = PLAN_SCHED_1F1B;
    p->optimizer = PLAN_OPTIM_ADAM;
    p->shampoo_blocks = 1;
    p->recompute = PLAN_RECOMPUTE_NONE;
    p->flash_attn = true;
    p->moe_dispatch = PLAN_MOE_DISPATCH_ALLTOALL;
    p->moe_imbalance = 1.0;
    p->fp8_recipe = PLAN_FP8_DELAYED;
    p->adam_moments = TS_DTYPE_FP32;
}

#include <stdarg.h>
#include <stdio.h>
#define LL(x) ((long long)(x))

static TsStatus bad(TsError *err, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static TsStatus bad(TsError *err, const char *hint, const char *fmt, ...)
{
    if (!err) return TS_ERR_PLAN; /* the search only needs the verdict: no formatting */
    char msg[TS_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ts_err(err, TS_ERR_PLAN, "%s", msg);
    if (hint && err) ts_err_hint(err, "%s", hint);
    return TS_ERR_PLAN;
}

TsStatus plan_resolve(const ModelSpec *m, ParallelPlan *p, TsError *err)
{
    const struct { const char *flag; int64_t v; } deg[] = {
        {"--tp", p->tp}, {"--pp", p->pp}, {"--vpp", p->vpp}, {"--cp", p->cp},
        {"--ep", p->ep}, {"--micro-batch", p->micro_batch},
    };
    for (size_t i = 0; i < sizeof deg / sizeof deg[0]; i++)
        if (deg[i].v < 1) {
            ts_err(err, TS_ERR_PLAN, "%s must be at least 1, got %lld", deg[i].flag,
                   (long long)deg[i].v);
            return TS_ERR_PLAN;
        }
    if (p->etp < 0 || p->dp < 0 || p->gpus < 0 || p->global_batch < 0 || p->seq < 0)
        return ts_err(err, TS_ERR_PLAN, "--etp, --dp, --gpus, --global-batch and --seq must not be negative");
    /* sizes whose products would overflow: far beyond any cluster (2^40) */
    double lim = 1099511627776.0, dp1 = p->dp > 0 ? (double)p->dp : 1.0;
    if ((double)p->tp * (double)p->pp * (double)p->cp * dp1 > lim || (double)p->gpus > lim ||
        (double)p->micro_batch * dp1 > lim || (double)p->global_batch > lim || (double)p->vpp * (double)p->pp > lim ||
        (double)p->seq > lim || (double)p->etp * (double)p->ep > lim)
        return bad(err, "tp*pp*cp*dp, gpus, micro-batch*dp, global batch and seq must stay below 2^40",
                   "the plan's sizes are out of range (tp %lld, pp %lld, cp %lld, dp %lld, micro-batch %lld)",
                   LL(p->tp), LL(p->pp), LL(p->cp), LL(p->dp), LL(p->micro_batch));
    if (p->etp == 0) p->etp = p->tp;
    /* DualPipeV's V: two model chunks per rank (plan_rank_chunk) */
    if (p->schedule == PLAN_SCHED_DUALPIPEV && p->vpp == 1) p->vpp = 2;
    int64_t tpc = p->tp * p->pp * p->cp;
    if (p->dp == 0) {
        if (p->gpus == 0) p->gpus = tpc;
        if (p->gpus % tpc != 0)
            return bad(err, "--gpus must be a multiple of tp*pp*cp; dp = gpus/(tp*pp*cp)",
                       "--gpus %lld is not a multiple of tp*pp*cp = %lld", LL(p->gpus), LL(tpc));
        p->dp = p->gpus / tpc;
    } else if (p->gpus == 0) {
        p->gpus = tpc * p->dp;
    } else if (p->gpus != tpc * p->dp) {
        return bad(err, "drop --dp to derive it from --gpus",
                   "--gpus %lld is not tp*pp*cp*dp = %lld", LL(p->gpus), LL(tpc * p->dp));
    }
    if (!p->sp_set) p->sp = p->tp > 1;
    if (p->seq == 0 && m) p->seq = plan_default_seq(m);
    int64_t mdp = p->micro_batch * p->dp;
    if (p->global_batch == 0) p->global_batch = plan_default_global_batch(mdp);
    p->grad_accum = p->global_batch % mdp == 0 ? p->global_batch / mdp : 0;
    p->n_chunks = p->pp * p->vpp;
    return plan_validate(m, p, err);
}

TsStatus plan_check_knobs(const ModelSpec *m, const ParallelPlan *p, TsError *err)
{
    if (p->schedule == PLAN_SCHED_1F1B_A2A && (m->experts == 0 || p->ep < 2))
        return bad(err, "1f1b-a2a hides one micro-batch's expert-parallel all-to-alls under another's compute "
                        "(Megatron-Core asserts expert parallelism for --overlap-moe-expert-parallel-comm)",
                   "--schedule 1f1b-a2a needs a mixture-of-experts model with --ep > 1 (%s, ep %lld)", m->name,
                   LL(p->ep));
    /* with stages Megatron-Core pairs micro-batches only inside its
     * interleaved schedule (schedules.py: combined_1f1b_schedule_for_
     * interleaved_pipelining; forward_backward_pipelining_without_
     * interleaving has no combined path) */
    if (p->schedule == PLAN_SCHED_1F1B_A2A && p->pp > 1 && p->vpp < 2)
        return bad(err, "Megatron-Core overlaps the EP all-to-alls across pipeline stages only in its interleaved "
                        "schedule: give --vpp 2 or more, or --pp 1",
                   "--schedule 1f1b-a2a with --pp %lld needs --vpp > 1", LL(p->pp));
    if (m->experts == 0 && (p->moe_dispatch != PLAN_MOE_DISPATCH_ALLTOALL || p->moe_node_limit > 0 ||
                            p->moe_imbalance > 1.0 || p->moe_capacity > 0))
        return bad(err, "the --moe-* options describe how a mixture-of-experts model routes its tokens",
                   "--moe-* options given for the dense model %s%.0lld", m->name, LL(0));
    if ((p->recompute_modules & PLAN_RC_MLA_UP_PROJ) && m->kv_lora_rank == 0)
        return bad(err, "mla_up_proj recomputes multi-head latent attention's up-projections (DeepSeek-V2/V3)",
                   "--recompute-modules mla_up_proj given for %s, which has no latent attention%.0lld", m->name,
                   LL(0));
    if ((p->recompute_modules & PLAN_RC_MOE_ACT) && m->experts == 0)
        return bad(err, "moe_act recomputes the experts' activation function",
                   "--recompute-modules moe_act given for the dense model %s%.0lld", m->name, LL(0));
    if (p->moe_pad && !(p->moe_capacity > 0))
        return bad(err, "padding fills each expert's input up to its capacity: give --moe-capacity-factor",
                   "--moe-pad-to-capacity needs --moe-capacity-factor%.0lld", LL(0));
    if (p->fp8_recipe != PLAN_FP8_DELAYED && p->dtype != TS_DTYPE_FP8)
        return bad(err, "the FP8 recipe applies to FP8 training: add --dtype fp8",
                   "--fp8-recipe %s needs --dtype fp8 (got %s)", plan_fp8_name(p->fp8_recipe), ts_dtype_name(p->dtype));
    return TS_OK;
}

static TsStatus validate_model(const ModelSpec *m, const ParallelPlan *p, TsError *err)
{
    if (m->heads % p->tp != 0)
        return bad(err, "tensor parallelism splits attention heads evenly over the TP ranks",
                   "--tp %lld does not divide the %lld attention heads", LL(p->tp), LL(m->heads));
    if (m->kv_heads % p->tp != 0)
        return bad(err, "each TP rank needs whole key/value head groups (GQA)",
                   "--tp %lld does not divide the %lld key/value heads", LL(p->tp), LL(m->kv_heads));
    int64_t F = m->ffn;
    if (m->experts > 0 && m->dense_layers == 0 && m->moe_layer_freq <= 1) F = 0; /* all-MoE */
    if (F > 0 && F % p->tp != 0)
        return bad(err, "the MLP intermediate size must split evenly over TP ranks",
                   "--tp %lld does not divide the MLP size %lld", LL(p->tp), LL(F));
    int64_t chunks = p->pp * p->vpp;
    if (p->n_stage_layers > 0) {
        if (!p->stage_layers || p->n_stage_layers != chunks)
            return bad(err, "give one count per chunk: pp*vpp entries (chunk = vstage*pp + stage)",
                       "--stage-layers has %lld entries, expected pp*vpp = %lld", LL(p->n_stage_layers), LL(chunks));
        int64_t sum = 0;
        for (int32_t i = 0; i < p->n_stage_layers; i++) {
            /* the first chunk may hold the embedding alone and the last the
             * output and loss alone (Megatron's account_for_embedding/loss_in_
             * pipeline_split; Llama 3 405B's layout, arXiv 2407.21783 §3.3.2) */
            bool end = chunks > 1 && (i == 0 || i == p->n_stage_layers - 1);
            if (p->stage_layers[i] < (end ? 0 : 1))
                return bad(err, "every chunk but the first and the last needs a layer; those two may hold only "
                                "the embedding or the output and loss",
                           "--stage-layers entry %lld is %lld", LL(i + 1), LL(p->stage_layers[i]));
            sum += p->stage_layers[i];
        }
        if (sum != m->layers)
            return bad(err, "the entries of --stage-layers must add up to the model's layers",
                       "--stage-layers adds up to %lld layers, the model has %lld", LL(sum), LL(m->layers));
    } else if (m->layers % chunks != 0 && p->uneven && m->layers < chunks - 2) {
        return bad(err, "the uneven rule leaves at most the first and the last chunk without a layer: pick pp*vpp "
                        "at most the layers + 2",
                   "%lld layers cannot fill pp*vpp = %lld chunks", LL(m->layers), LL(chunks));
    } else if (m->layers % chunks != 0 && !p->uneven) {
        return bad(err, "give --stage-layers or --uneven-stages for uneven stages, or pick pp*vpp dividing the layers",
                   "pp*vpp = %lld does not divide the %lld layers", LL(chunks), LL(m->layers));
    }
    if (m->experts > 0) {
        if (m->experts % p->ep != 0)
            return bad(err, "each EP rank holds the same number of experts",
                       "--ep %lld does not divide the %lld experts", LL(p->ep), LL(m->experts));
        if (m->moe_ffn > 0 && m->moe_ffn % p->etp != 0)
            return bad(err, "expert tensor parallelism splits each expert's MLP",
                       "--etp %lld does not divide the expert MLP size %lld", LL(p->etp), LL(m->moe_ffn));
    } else if (p->ep > 1) {
        return bad(err, "expert parallelism needs a mixture-of-experts model (experts > 0)",
                   "--ep %lld given for a dense model%.0lld", LL(p->ep), LL(0));
    }
    TsStatus st = plan_check_knobs(m, p, err);
    if (st != TS_OK) return st;
    return plan_check_seq(m, p->seq, err);
}

TsStatus plan_check_seq(const ModelSpec *m, int64_t seq, TsError *err)
{
    if (seq > m->max_positions && m->pos == MODEL_POS_LEARNED)
        return bad(err, "learned position embeddings have max_positions rows",
                   "--seq %lld exceeds the model's %lld learned positions", LL(seq), LL(m->max_positions));
    return TS_OK;
}

/* DualPipe and DualPipeV (github deepseek-ai/DualPipe): DualPipe.step asserts
 * an even number of ranks, and both step()s an even number of micro-batches
 * (DualPipe: half enter at each end) of at least twice the ranks, which their
 * eight steps need. */
static TsStatus validate_dual(const ParallelPlan *p, TsError *err)
{
    const bool v = p->schedule == PLAN_SCHED_DUALPIPEV;
    const char *name = plan_sched_name(p->schedule);
    if (!v && p->vpp != 1)
        return bad(err, "DualPipe holds two model chunks per rank itself (stage s of the copy entering at rank 0, "
                        "stage pp-1-s of the copy entering at rank pp-1): drop --vpp",
                   "--schedule dualpipe takes no --vpp (got --vpp %lld)", LL(p->vpp));
    if (v && p->vpp != 2)
        return bad(err, "DualPipeV cuts the model into 2*pp chunks, rank s holding chunks s and 2*pp-1-s: drop --vpp",
                   "--schedule dualpipev holds 2 chunks per rank (got --vpp %lld)", LL(p->vpp));
    if (p->pp < 2 || (!v && p->pp % 2 != 0))
        return bad(err, v ? "a V over one rank has no pipeline: use --pp 2 or more"
                          : "the two copies of the pipeline meet in the middle, rank s paired with rank pp-1-s "
                            "(DualPipe asserts an even number of ranks): use an even --pp",
                   "--schedule %s needs %s --pp (got --pp %lld)", name, v ? "at least 2 for" : "an even", LL(p->pp));
    int64_t mdp = p->micro_batch * p->dp, m = mdp > 0 && p->global_batch % mdp == 0 ? p->global_batch / mdp : 0;
    if (m > 0 && (m < 2 * p->pp || (!v && m % 2 != 0)))
        return bad(err, v ? "DualPipeV.step asserts num_chunks >= 2 * ranks: raise --global-batch, or lower "
                            "--micro-batch or --dp"
                          : "half of the micro-batches enter at each end; DualPipe.step asserts an even num_chunks "
                            ">= 2 * ranks: raise --global-batch, or lower --micro-batch or --dp",
                   v ? "--schedule %s needs at least 2*pp = %lld micro-batches per pipeline (got %lld)"
                     : "--schedule %s needs an even number of micro-batches per pipeline, at least 2*pp = %lld "
                       "(got %lld)",
                   name, LL(2 * p->pp), LL(m));
    return TS_OK;
}

/* PyTorch's ScheduleInterleaved1F1B (torchtitan) runs any m in
 * max(1, m / pp) rounds of m / rounds micro-batches and raises ValueError
 * when the rounds do not divide m (plan_pytorch_vpp_group). */
static TsStatus check_pytorch_group(const ParallelPlan *p, int64_t m, TsError *err)
{
    if (m < 1 || plan_pytorch_vpp_group(p->pp, m) > 0) return TS_OK;
    int64_t r = m / p->pp, lo = m - m % r, hi = m + 1;
    while (plan_pytorch_vpp_group(p->pp, hi) == 0) hi++;
    char hint[200];
    snprintf(hint, sizeof hint,
             "PyTorch's ScheduleInterleaved1F1B runs max(1, micro-batches / pp) rounds of equal groups; %lld or "
             "%lld micro-batches per pipeline run, or use --schedule 1f1b",
             LL(lo), LL(hi));
    return bad(err, hint,
               "--framework torchtitan: the interleaved schedule's %lld rounds do not divide the %lld micro-batches "
               "per pipeline",
               LL(r), LL(m));
}

/* Megatron's interleaved 1F1B runs a rank's micro-batches through one model
 * chunk in groups of N (Megatron-Core microbatch_group_size_per_vp_stage,
 * default pp) before the next chunk. Megatron-Core
 * (forward_backward_pipelining_with_interleaving) refuses N outside
 * [pp, M] and a last group of fewer than pp micro-batches ("dependency
 * bubbles"): M mod N is 0 or at least pp. With the default N = pp that is
 * Megatron-LM's old rule, M a multiple of pp. Only Megatron-Core sets N. */
static TsStatus check_vpp_group(const ParallelPlan *p, int64_t m, TsError *err)
{
    if (p->vpp_group < 0)
        return bad(err, NULL, "--vpp-group must be at least 1, got %lld%.0lld", LL(p->vpp_group), LL(0));
    if (p->vpp_group > 0 && !plan_interleaved(p))
        return bad(err, "the micro-batch group is the interleaved schedule's (give --vpp > 1)",
                   "--vpp-group %lld needs --schedule interleaved%.0lld", LL(p->vpp_group), LL(0));
    if (!plan_interleaved(p)) return TS_OK;
    if (p->vpp_group > 0 && p->framework != PLAN_FRAMEWORK_MEGATRON)
        return bad(err, p->framework == PLAN_FRAMEWORK_TORCHTITAN
                            ? "torchtitan's interleaved schedule (PyTorch's ScheduleInterleaved1F1B) sets its own "
                              "group: the micro-batches over max(1, micro-batches / pp) rounds; drop --vpp-group"
                            : "Megatron-Core's --microbatch-group-size-per-virtual-pipeline-stage sets it; the other "
                              "frameworks' interleaved schedules have no such setting",
                   "--vpp-group needs --framework megatron (got %s)", plan_framework_name(p->framework));
    if (p->framework == PLAN_FRAMEWORK_TORCHTITAN) return check_pytorch_group(p, m, err);
    if (m < p->pp)
        return bad(err, "the interleaved schedule runs at least pp micro-batches per pipeline; raise --global-batch, "
                        "lower --micro-batch or --dp, or use --schedule 1f1b",
                   "--schedule interleaved needs at least --pp %lld micro-batches per pipeline (got %lld)",
                   LL(p->pp), LL(m));
    if (p->vpp_group == 0) {
        if (m % p->pp == 0) return TS_OK;
        char hint[256] = "the interleaved schedule runs micro-batches in groups of --pp; change --global-batch, "
                         "--micro-batch or --dp, or use --schedule 1f1b";
        if (p->framework == PLAN_FRAMEWORK_MEGATRON)
            snprintf(hint, sizeof hint,
                     "the interleaved schedule runs micro-batches in groups of --pp; give --vpp-group %lld "
                     "(Megatron-Core's smallest group for %lld micro-batches on %lld stages), change "
                     "--global-batch, --micro-batch or --dp, or use --schedule 1f1b",
                     LL(plan_least_vpp_group(p->pp, m)), LL(m), LL(p->pp));
        return bad(err, hint,
                   "--schedule interleaved needs the micro-batches per pipeline (%lld) to be a multiple of --pp %lld",
                   LL(m), LL(p->pp));
    }
    int64_t n = p->vpp_group;
    if (n < p->pp || n > m)
        return bad(err, "Megatron-Core runs N contiguous micro-batches per virtual stage with pp <= N <= the "
                        "micro-batches per pipeline",
                   "--vpp-group %lld is outside [pp %lld, micro-batches %lld]", LL(n), LL(p->pp), LL(m));
    if (m % n != 0 && m % n < p->pp)
        return bad(err, "Megatron-Core refuses a last group smaller than pp (dependency bubbles): pick N that "
                        "leaves a last group of 0 or at least pp",
                   "--vpp-group %lld leaves a last group of %lld micro-batch%s, fewer than --pp %lld", LL(n),
                   LL(m % n), m % n == 1 ? "" : "es", LL(p->pp));
    return TS_OK;
}

int64_t plan_least_vpp_group(int64_t pp, int64_t m)
{
    if (pp < 1 || m < pp || m % pp == 0) return 0;
    for (int64_t n = pp + 1; n < m; n++)
        if (m % n == 0 || m % n >= pp) return n;
    return m;
}

TsStatus plan_validate(const ModelSpec *m, const ParallelPlan *p, TsError *err)
{
    if (p->gpus != p->tp * p->pp * p->cp * p->dp)
        return bad(err, NULL, "--gpus %lld is not tp*pp*cp*dp = %lld", LL(p->gpus), LL(p->tp * p->pp * p->cp * p->dp));
    if (m && validate_model(m, p, err) != TS_OK) return TS_ERR_PLAN;
    if (m && plan_hf(p) && (m->kv_lora_rank > 0 || m->pos == MODEL_POS_ALIBI || m->act == MODEL_ACT_RELU2))
        return bad(err, "--framework hf models GPT-2, BERT and Llama-style (RoPE, SwiGLU; Qwen, Mixtral) modules; "
                        "use --framework megatron or torchtitan for this one",
                   "--framework hf has no module for %s (%s)%.0lld", m->name,
                   m->kv_lora_rank > 0 ? "multi-head latent attention" : m->pos == MODEL_POS_ALIBI ? "ALiBi" : "squared ReLU",
                   LL(0));
    if (plan_hf(p) && p->tp * p->pp * p->cp * p->ep > 1)
        return bad(err, "HuggingFace transformers' own modules train data-parallel (DDP, FSDP / ZeRO: --dp, --zero); "
                        "use --framework megatron or torchtitan for model parallelism",
                   "--framework hf runs tp, pp, cp and ep 1 (got tp %lld, pp %lld, cp %lld, ep %lld)", LL(p->tp),
                   LL(p->pp), LL(p->cp), LL(p->ep));
    if ((p->schedule == PLAN_SCHED_DUALPIPE || p->schedule == PLAN_SCHED_DUALPIPEV) && validate_dual(p, err))
        return TS_ERR_PLAN;
    if (p->vpp > PLAN_TASK_MAX_CHUNKS)
        return bad(err, "the schedules hold at most 128 model chunks a pipeline rank",
                   "--vpp %lld is above %d", LL(p->vpp), PLAN_TASK_MAX_CHUNKS);
    if (p->vpp > 1 && p->pp == 1)
        return bad(err, "virtual pipeline stages interleave chunks over several pipeline ranks",
                   "--vpp %lld needs --pp > 1 (got --pp %lld)", LL(p->vpp), LL(p->pp));
    if (p->vpp > 1 && !plan_interleaved(p) && p->schedule != PLAN_SCHED_DUALPIPEV)
        return bad(err, "use --schedule interleaved (the default when --vpp > 1)",
                   "--vpp %lld needs the interleaved schedule%.0lld", LL(p->vpp), LL(0));
    if (p->vpp == 1 && p->schedule == PLAN_SCHED_INTERLEAVED)
        return bad(err, "give --vpp N (model chunks per pipeline rank), or use --schedule 1f1b",
                   "--schedule interleaved needs --vpp > 1");
    if (p->sp && p->tp == 1)
        return bad(err, "sequence parallelism shards the TP region's activations; drop --sp",
                   "--sp needs --tp > 1");
    if (p->recompute_modules && p->recompute != PLAN_RECOMPUTE_SELECTIVE)
        return bad(err, "Megatron-Core recomputes modules under --recompute-granularity selective",
                   "--recompute-modules needs --recompute selective (got %s)", plan_recompute_name(p->recompute));
    if (p->tp_overlap && p->tp > 1 && !p->sp)
        return bad(err, "Megatron overlaps TP communication with the GEMMs only under sequence parallelism "
                        "(--tp-comm-overlap asserts --sequence-parallel): drop --no-sp",
                   "--tp-overlap needs sequence parallelism%.0lld", LL(0));
    if (p->cp > 1 && p->seq % (2 * p->cp) != 0)
        return bad(err, "context parallelism splits each sequence into 2*cp load-balanced chunks",
                   "--seq %lld is not divisible by 2*cp = %lld", LL(p->seq), LL(2 * p->cp));
    if (p->sp && (p->seq / p->cp) % p->tp != 0)
        return bad(err, "sequence parallelism splits the tokens of each CP rank over TP",
                   "--seq %lld (%lld tokens per CP rank) is not divisible by --tp %lld", LL(p->seq), LL(p->seq / p->cp), LL(p->tp));
    if (p->seq < 1)
        return bad(err, NULL, "--seq must be at least 1, got %lld%.0lld", LL(p->seq), LL(0));
    if (p->global_batch % (p->micro_batch * p->dp) != 0)
        return bad(err, "global batch = micro-batch * dp * gradient-accumulation steps",
                   "--global-batch %lld is not divisible by micro-batch*dp = %lld", LL(p->global_batch), LL(p->micro_batch * p->dp));
    int64_t m_acc = p->global_batch / (p->micro_batch * p->dp);
    TsStatus gs = check_vpp_group(p, m_acc, err);
    if (gs) return gs;
    if ((p->tp * p->cp * p->dp) % (p->etp * p->ep) != 0)
        return bad(err, "expert groups are carved from the tp*cp*dp ranks of a pipeline stage",
                   "--ep * --etp = %lld does not divide tp*cp*dp = %lld", LL(p->ep * p->etp), LL(p->tp * p->cp * p->dp));
    if (p->zero < 0 || p->zero > 3)
        return bad(err, "ZeRO stages: 0 off, 1 optimizer, 2 +gradients, 3 +parameters",
                   "--zero %lld is not a ZeRO stage (0..3)%.0lld", LL(p->zero), LL(0));
    if (p->dist_opt && p->zero > 0)
        return bad(err, "--dist-opt is Megatron's ZeRO-1; use one of them",
                   "--dist-opt and --zero %lld both shard the optimizer state%.0lld", LL(p->zero), LL(0));
    if (p->dp_shard < 0)
        return bad(err, NULL, "--dp-shard must not be negative, got %lld%.0lld", LL(p->dp_shard), LL(0));
    if (p->dp_shard > 0 && p->zero != 3)
        return bad(err, "HSDP shards parameters, gradients and optimizer state like FSDP, over a smaller group: "
                        "use --zero 3 (or drop --dp-shard)",
                   "--dp-shard %lld needs --zero 3 (got --zero %lld)", LL(p->dp_shard), LL(p->zero));
    if (p->dp_shard > 0 && p->dp % p->dp_shard != 0)
        return bad(err, "the shard groups cut DP into dp/dp_shard replicas of dp_shard ranks each: pick a divisor "
                        "of dp",
                   "--dp-shard %lld does not divide dp %lld", LL(p->dp_shard), LL(p->dp));
    /* Pipelines take ZeRO 0 or 1 (DeepSpeed's PipelineEngine asserts it;
     * Megatron-Core shards with its distributed optimizer), except PyTorch
     * FSDP's SHARD_GRAD_OP under a pipeline, as Llama 3 405B ran it (arXiv
     * 2407.21783 §3.3.2: "shards optimizer states and gradients, but for
     * model shards we do not reshard after forward"): --zero 2 under
     * --framework torchtitan, gradients kept sharded and reduce-scattered
     * after every micro-batch's backward (plan_rs_per_microbatch), under
     * the schedules whose backward is one pass per chunk. */
    if (p->zero >= 2 && p->pp > 1 && !(p->zero == 2 && p->framework == PLAN_FRAMEWORK_TORCHTITAN))
        return bad(err, "DeepSpeed's and Megatron's pipelines take ZeRO stage 0 or 1 only; PyTorch FSDP's "
                        "SHARD_GRAD_OP with a pipeline (Llama 3) is --zero 2 --framework torchtitan",
                   "--zero %lld cannot be combined with --pp %lld", LL(p->zero), LL(p->pp));
    if (p->zero == 2 && p->pp > 1 && plan_sched_ordered(p->schedule))
        return bad(err, "a reduce-scatter after every micro-batch's backward is modelled under 1f1b, interleaved "
                        "and gpipe, whose backward is one pass; use one of those, or --zero 1",
                   "--zero 2 with --pp %lld cannot run --schedule %s", LL(p->pp), plan_sched_name(p->schedule));
    if (p->optimizer == PLAN_OPTIM_SHAMPOO && p->shampoo_blocks < 1)
        return bad(err, NULL, "--shampoo-blocks must be at least 1, got %lld", LL(p->shampoo_blocks));
    if (p->recompute_layers < 0)
        return bad(err, NULL, "--recompute-layers must not be negative, got %lld%.0lld", LL(p->recompute_layers), LL(0));
    if (p->recompute_layers > 0 && p->recompute != PLAN_RECOMPUTE_FULL)
        return bad(err, "layer-wise recompute is a form of full recompute",
                   "--recompute-layers %lld needs --recompute full", LL(p->recompute_layers));
    if (p->dtype == TS_DTYPE_TF32)
        return bad(err, "use --dtype fp32 (TF32 is a compute mode of fp32 storage)",
                   "--dtype tf32 is not a storage dtype");
    return TS_OK;
}

/* ---- layer ranges ------------------------------------------------------------ */

/* Is the plan's split the uneven rule (ParallelPlan.uneven) for n_layers? */
static bool by_rule(const ParallelPlan *p, int64_t n_layers)
{
    int64_t c = p->pp * p->vpp;
    return !(p->n_stage_layers > 0 && p->stage_layers) && p->uneven && c > 0 && n_layers % c != 0;
}

/* The uneven rule: ceil(L/c) layers, one fewer on the first d chunks of the
 * order c-1, 0, c-2, 1, ... (position 2j for the j-th from the end, 2i+1
 * for the i-th from the start). */
static int64_t rule_layers(int64_t c, int64_t n_layers, int64_t chunk)
{
    int64_t base = (n_layers + c - 1) / c, d = base * c - n_layers, j = c - 1 - chunk;
    int64_t pos = j <= chunk ? 2 * j : 2 * chunk + 1;
    return base - (pos < d ? 1 : 0);
}

int64_t plan_chunk_layers(const ParallelPlan *p, int64_t n_layers, int64_t chunk)
{
    if (p->n_stage_layers > 0 && p->stage_layers) return p->stage_layers[chunk];
    if (by_rule(p, n_layers)) return rule_layers(p->pp * p->vpp, n_layers, chunk);
    return n_layers / (p->pp * p->vpp);
}

/* First layer of a chunk under the uneven rule, in O(1): the d lighter
 * chunks are the first floor(d/2) and the last ceil(d/2) (the order
 * c-1, 0, c-2, 1, ... alternates end and start). A sweep asks for every
 * chunk of every plan; summing rule_layers made that quadratic. */
static int64_t rule_first_layer(int64_t c, int64_t n_layers, int64_t chunk)
{
    int64_t base = (n_layers + c - 1) / c, d = base * c - n_layers;
    int64_t start = d / 2, end = d - start;
    int64_t light = (chunk < start ? chunk : start) + (chunk > c - end ? chunk - (c - end) : 0);
    return chunk * base - light;
}

int64_t plan_chunk_first_layer(const ParallelPlan *p, int64_t n_layers, int64_t chunk)
{
    if (by_rule(p, n_layers)) return rule_first_layer(p->pp * p->vpp, n_layers, chunk);
    if (p->n_stage_layers > 0 && p->stage_layers) {
        int64_t s = 0;
        for (int64_t c = 0; c < chunk; c++) s += p->stage_layers[c];
        return s;
    }
    return chunk * (n_layers / (p->pp * p->vpp));
}

int64_t plan_model_chunk_layers(const ParallelPlan *p, const ModelSpec *m, int64_t chunk)
{
    int64_t n = plan_chunk_layers(p, m->layers, chunk);
    return chunk == p->pp * p->vpp - 1 ? n + m->mtp_layers : n;
}

int64_t plan_layer_chunk(const ParallelPlan *p, int64_t n_layers, int64_t layer)
{
    int64_t chunks = p->pp * p->vpp;
    if ((p->n_stage_layers > 0 && p->stage_layers) || by_rule(p, n_layers)) {
        int64_t s = 0;
        for (int64_t c = 0; c < chunks; c++) {
            s += plan_chunk_layers(p, n_layers, c);
            if (layer < s) return c;
        }
        return chunks - 1;
    }
    return layer / (n_layers / chunks);
}

bool plan_split_format(const ParallelPlan *p, int64_t n_layers, const char *sep, TsBuf *out)
{
    int64_t c = p->pp * p->vpp;
    if (!(p->n_stage_layers > 0 && p->stage_layers) && !by_rule(p, n_layers)) return false;
    for (int64_t i = 0; i < c; i++)
        ts_buf_printf(out, "%s%lld", i ? sep : "", (long long)plan_chunk_layers(p, n_layers, i));
    return true;
}

void plan_describe(const ParallelPlan *p, TsBuf *out)
{
    ts_buf_printf(out, "tp%lld pp%lld", (long long)p->tp, (long long)p->pp);
    if (p->vpp > 1) ts_buf_printf(out, " vpp%lld", (long long)p->vpp);
    if (plan_vpp_group_shown(p)) ts_buf_printf(out, " group%lld", (long long)plan_vpp_group_shown(p));
    ts_buf_printf(out, " dp%lld", (long long)p->dp);
    if (p->cp > 1) ts_buf_printf(out, " cp%lld", (long long)p->cp);
    if (p->ep > 1) ts_buf_printf(out, " ep%lld etp%lld", (long long)p->ep, (long long)p->etp);
    if (p->sp) ts_buf_puts(out, " sp");
    if (p->tp_overlap) ts_buf_puts(out, " tp-overlap");
    if (p->zero) ts_buf_printf(out, " zero%d", p->zero);
    if (p->dist_opt) ts_buf_puts(out, " dist-opt");
    if (p->dp_shard > 0) ts_buf_printf(out, " dp-shard%lld", (long long)p->dp_shard);
    ts_buf_printf(out, " mb%lld gb%lld seq%lld %s %s recompute=%s",
                  (long long)p->micro_batch, (long long)p->global_batch, (long long)p->seq,
                  ts_dtype_name(p->dtype), plan_sched_name(p->schedule),
                  plan_recompute_name(p->recompute));
    if (p->recompute == PLAN_RECOMPUTE_FULL && p->recompute_layers > 0)
        ts_buf_printf(out, ":%lld", (long long)p->recompute_layers); /* layers per chunk, as sweep shows it */
    if (p->optimizer != PLAN_OPTIM_ADAM)
        ts_buf_printf(out, " %s(%lld)", plan_optim_name(p->optimizer), (long long)p->shampoo_blocks);
    if (p->framework != PLAN_FRAMEWORK_MEGATRON) ts_buf_printf(out, " %s", plan_framework_name(p->framework));
    if (p->precision != PLAN_PRECISION_MIXED) ts_buf_printf(out, " %s", plan_precision_name(p->precision));
}
