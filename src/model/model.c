/* ModelSpec: families, defaults, derived fields, validation and parameter counts.
 * Legend: L layers, H hidden, A heads, G kv heads, D head dim, F ffn, V vocab,
 * E experts, K top-k. */
#include "trainsim/model.h"

#include <string.h>

TS_ENUM_NAMES(model_arch, ModelArch, MODEL_ARCH_LIST, MODEL_ARCH_COUNT)
TS_ENUM_NAMES(model_norm, ModelNorm, MODEL_NORM_LIST, MODEL_NORM_COUNT)
TS_ENUM_PARSE(model_norm, ModelNorm, MODEL_NORM_COUNT)
TS_ENUM_NAMES(model_act, ModelAct, MODEL_ACT_LIST, MODEL_ACT_COUNT)
TS_ENUM_PARSE(model_act, ModelAct, MODEL_ACT_COUNT)

static const bool ACT_GATED[] = {
#define X(e, n, gated) gated,
    MODEL_ACT_LIST(X)
#undef X
};
_Static_assert(sizeof ACT_GATED / sizeof ACT_GATED[0] == MODEL_ACT_COUNT, "act table");

bool model_act_gated(ModelAct a) { return (unsigned)a < MODEL_ACT_COUNT && ACT_GATED[a]; }

static const int64_t LAYOUT_NORMS[] = {
#define X(e, n, k) k,
    MODEL_NORM_LAYOUT_LIST(X)
#undef X
};
_Static_assert(sizeof LAYOUT_NORMS / sizeof LAYOUT_NORMS[0] == MODEL_NORM_LAYOUT_COUNT, "layout table");

int64_t model_sublayer_norms(const ModelSpec *m)
{
    return (unsigned)m->norm_layout < MODEL_NORM_LAYOUT_COUNT ? LAYOUT_NORMS[m->norm_layout] : 1;
}

bool model_output_norms(const ModelSpec *m)
{
    return m->norm_layout == MODEL_NORM_LAYOUT_REORDERED || m->norm_layout == MODEL_NORM_LAYOUT_SANDWICH;
}
TS_ENUM_NAMES(model_norm_layout, ModelNormLayout, MODEL_NORM_LAYOUT_LIST, MODEL_NORM_LAYOUT_COUNT)
TS_ENUM_PARSE(model_norm_layout, ModelNormLayout, MODEL_NORM_LAYOUT_COUNT)
TS_ENUM_NAMES(model_pos, ModelPos, MODEL_POS_LIST, MODEL_POS_COUNT)
TS_ENUM_PARSE(model_pos, ModelPos, MODEL_POS_COUNT)

static const char *const ARCH_NAMING[] = {
#define X(e, n, f) f,
    MODEL_ARCH_LIST(X)
#undef X
};
_Static_assert(sizeof ARCH_NAMING / sizeof ARCH_NAMING[0] == MODEL_ARCH_COUNT, "arch table");

const char *model_arch_default_naming(ModelArch a)
{
    return (unsigned)a < MODEL_ARCH_COUNT ? ARCH_NAMING[a] : "megatron";
}

bool model_arch_parse(const char *s, ModelArch *out)
{
    int i = ts_name_index(s, model_arch_names, MODEL_ARCH_COUNT);
    if (i >= 0) {
        *out = (ModelArch)i;
        return true;
    }
    if (strcmp(s, "neox") == 0) {
        *out = MODEL_ARCH_NEOX;
        return true;
    }
    return false;
}

void model_defaults(ModelSpec *m, ModelArch arch)
{
    memset(m, 0, sizeof *m);
    m->arch = arch;
    m->vocab_divisible = 128;
    m->norm_eps = 1e-5;
    m->rotary_pct = 1.0;
    m->moe_layer_freq = 1;
    m->lm_head = true;
    switch (arch) {
    case MODEL_ARCH_GPT:
        m->norm = MODEL_NORM_LAYERNORM;
        m->act = MODEL_ACT_GELU;
        m->pos = MODEL_POS_LEARNED;
        m->qkv_bias = m->proj_bias = m->mlp_bias = true;
        m->tied_embeddings = true;
        m->hidden_dropout = m->attn_dropout = 0.1;
        m->vocab = 50257;
        m->max_positions = 2048;
        break;
    case MODEL_ARCH_BERT:
        m->norm = MODEL_NORM_LAYERNORM;
        m->act = MODEL_ACT_GELU;
        m->pos = MODEL_POS_LEARNED;
        m->qkv_bias = m->proj_bias = m->mlp_bias = true;
        m->tied_embeddings = true;
        m->type_vocab = 2;
        m->hidden_dropout = m->attn_dropout = 0.1;
        m->pooler = true;
        m->embed_norm = true;
        m->norm_layout = MODEL_NORM_LAYOUT_POST;
        m->lm_head = false;
        m->vocab = 30522;
        m->max_positions = 512;
        m->norm_eps = 1e-12;
        break;
    case MODEL_ARCH_NEOX:
        m->norm = MODEL_NORM_LAYERNORM;
        m->act = MODEL_ACT_GELU;
        m->pos = MODEL_POS_ROPE;
        m->rotary_pct = 0.25;
        m->rope_theta = 10000.0;
        m->qkv_bias = m->proj_bias = m->mlp_bias = true;
        m->vocab = 50432;
        m->max_positions = 2048;
        break;
    case MODEL_ARCH_GEMMA: /* Gemma 2/3: (1 + w) RMSNorm, sandwich norms, tanh-GeGLU, tied */
        m->norm = MODEL_NORM_RMSNORM;
        m->norm_eps = 1e-6;
        m->norm_layout = MODEL_NORM_LAYOUT_SANDWICH;
        m->act = MODEL_ACT_GEGLU;
        m->pos = MODEL_POS_ROPE;
        m->rope_theta = 10000.0;
        m->tied_embeddings = true;
        m->vocab = 256000;
        m->max_positions = 8192;
        break;
    case MODEL_ARCH_OLMO2: /* reordered norms, q/k norms over all heads */
        m->norm = MODEL_NORM_RMSNORM;
        m->norm_eps = 1e-6;
        m->norm_layout = MODEL_NORM_LAYOUT_REORDERED;
        m->qk_norm = m->qk_norm_full = true;
        m->act = MODEL_ACT_SWIGLU;
        m->pos = MODEL_POS_ROPE;
        m->rope_theta = 500000.0;
        m->vocab = 100352;
        m->max_positions = 4096;
        break;
    case MODEL_ARCH_LLAMA:
    case MODEL_ARCH_MIXTRAL:
    case MODEL_ARCH_DEEPSEEK:
    case MODEL_ARCH_QWEN:
    case MODEL_ARCH_PHI3: /* Llama's modules, q/k/v and gate/up fused */
    default:
        m->norm = MODEL_NORM_RMSNORM;
        m->act = MODEL_ACT_SWIGLU;
        m->pos = MODEL_POS_ROPE;
        m->rope_theta = 10000.0;
        m->vocab = 32000;
        m->max_positions = 4096;
        if (arch == MODEL_ARCH_MIXTRAL) {
            m->experts = 8;
            m->topk = 2;
        }
        if (arch == MODEL_ARCH_PHI3) m->vocab = 32064;
        break;
    }
}

void model_finalize(ModelSpec *m)
{
    if (m->vocab_divisible <= 0) m->vocab_divisible = 128;
    if (m->moe_layer_freq <= 0) m->moe_layer_freq = 1;
    if (m->heads > 0 && m->kv_heads <= 0) m->kv_heads = m->heads;
    if (m->heads > 0 && m->head_dim <= 0 && m->hidden > 0) m->head_dim = m->hidden / m->heads;
    if (m->ffn <= 0 && m->hidden > 0 && m->hidden <= INT64_MAX / 8) { /* absurd sizes: model_validate rejects */
        if (model_act_gated(m->act))
            m->ffn = ts_round_up((8 * m->hidden) / 3 + ((8 * m->hidden) % 3 ? 1 : 0), 256);
        else
            m->ffn = 4 * m->hidden;
    }
    if (m->experts > 0) {
        if (m->topk <= 0) m->topk = m->experts >= 2 ? 2 : 1;
        if (m->moe_ffn <= 0) m->moe_ffn = m->ffn;
    }
    if (m->q_lora_rank > 0 || m->kv_lora_rank > 0) {
        if (m->v_head_dim <= 0) m->v_head_dim = m->head_dim;
        if (m->qk_nope_dim <= 0) m->qk_nope_dim = m->head_dim;
    }
    if (!m->name[0]) snprintf(m->name, sizeof m->name, "%s-custom", model_arch_name(m->arch));
}

static TsStatus bad(TsError *err, const char *field, const char *rule)
{
    ts_err(err, TS_ERR_INPUT, "invalid model: %s %s", field, rule);
    ts_err_hint(err, "set it with --%s or fix the model file", field);
    return TS_ERR_INPUT;
}

TsStatus model_validate(const ModelSpec *m, TsError *err)
{
    /* Keep every product below 2^63 (MODEL_MAX_*). Checked first: finalize
     * leaves derived fields unset for absurd sizes. */
    const int64_t lim = MODEL_MAX_WIDTH, heads = MODEL_MAX_HEADS;
    if (m->hidden > lim || m->ffn > lim || m->vocab > MODEL_MAX_VOCAB || m->heads > heads ||
        m->layers > MODEL_MAX_LAYERS || m->experts > heads || m->head_dim > heads || m->moe_ffn > lim ||
        m->kv_heads > heads || m->max_positions > MODEL_MAX_POSITIONS || m->shared_experts > heads ||
        m->type_vocab > MODEL_MAX_VOCAB || m->q_lora_rank > lim || m->kv_lora_rank > lim ||
        m->qk_nope_dim > heads || m->qk_rope_dim > heads || m->v_head_dim > heads ||
        m->sliding_window > MODEL_MAX_POSITIONS || m->full_attn_every > MODEL_MAX_LAYERS)
        return bad(err, "hidden", "or another dimension is unreasonably large (limit 1e7)");
    if (m->layers <= 0) return bad(err, "layers", "must be positive");
    if (m->hidden <= 0) return bad(err, "hidden", "must be positive");
    if (m->heads <= 0) return bad(err, "heads", "must be positive");
    if (m->kv_heads <= 0 || m->heads % m->kv_heads != 0) {
        char rule[96];
        snprintf(rule, sizeof rule, "(%lld) must be positive and divide heads (%lld)", (long long)m->kv_heads,
                 (long long)m->heads);
        return bad(err, "kv-heads", rule);
    }
    if (m->head_dim <= 0) return bad(err, "head-dim", "must be positive");
    if (m->ffn <= 0) return bad(err, "ffn", "must be positive");
    if (m->vocab <= 0) return bad(err, "vocab", "must be positive");
    if (m->max_positions < 0) return bad(err, "max-positions", "must not be negative");
    if (m->experts < 0 || m->topk < 0 || m->shared_experts < 0 || m->dense_layers < 0)
        return bad(err, "experts", "and the other MoE sizes must not be negative");
    if (m->experts > 0 && (m->topk > m->experts || m->topk <= 0))
        return bad(err, "topk", "must be between 1 and the number of experts");
    if (m->experts > 0 && m->moe_ffn <= 0) return bad(err, "moe-ffn", "must be positive for an MoE model");
    if (m->dense_layers > m->layers) return bad(err, "dense-layers", "cannot exceed layers");
    if ((m->arch == MODEL_ARCH_BERT) != (m->norm_layout == MODEL_NORM_LAYOUT_POST) ||
        (unsigned)m->norm_layout >= MODEL_NORM_LAYOUT_COUNT) {
        ts_err(err, TS_ERR_INPUT, "invalid model: norm_layout '%s' with arch %s", model_norm_layout_name(m->norm_layout),
               model_arch_name(m->arch));
        ts_err_hint(err, "the bert family is post-LN (\"post\") and only it; decoders are \"pre\", \"reordered\" or "
                         "\"sandwich\"");
        return TS_ERR_INPUT;
    }
    if (m->qk_norm_full && !m->qk_norm) {
        ts_err(err, TS_ERR_INPUT, "invalid model: qk_norm_full without qk_norm");
        ts_err_hint(err, "qk_norm_full widens the q/k norms to all heads (OLMo 2); set \"qk_norm\": true as well");
        return TS_ERR_INPUT;
    }
    if (m->sliding_window < 0 || m->full_attn_every < 0)
        return bad(err, "sliding-window", "and full_attn_every must not be negative");
    if (!(m->hidden_dropout >= 0 && m->hidden_dropout <= MODEL_DROPOUT_MAX))
        return bad(err, "hidden-dropout", "is a probability from 0 (none) to 0.99");
    if (!(m->attn_dropout >= 0 && m->attn_dropout <= MODEL_DROPOUT_MAX))
        return bad(err, "attn-dropout", "is a probability from 0 (none) to 0.99");
    /* Products of these sizes must stay below 2^63 (model_count_params uses
     * int64): the estimate below, in double, bounds the parameter count. */
    double H = (double)m->hidden, qkv = (double)(m->heads + 2 * m->kv_heads) * (double)m->head_dim;
    double est = ((double)m->vocab + (double)m->max_positions + (double)m->type_vocab + H) * H * 2 +
                 (double)m->layers * (2 * H * qkv + 3 * H * (double)m->ffn +
                                      ((double)m->experts + (double)m->shared_experts + 1) * 3 * H * (double)m->moe_ffn +
                                      H * (double)m->experts +
                                      ((double)m->q_lora_rank + (double)m->kv_lora_rank) * (H + 2 * qkv));
    if (est > 1e17)
        return bad(err, "layers", "and the other sizes give an unreasonably large model (over 1e17 parameters)");
    return TS_OK;
}

bool model_layer_is_moe(const ModelSpec *m, int64_t layer)
{
    if (m->experts <= 0 || layer < m->dense_layers) return false;
    return ((layer - m->dense_layers) % (m->moe_layer_freq > 0 ? m->moe_layer_freq : 1)) == 0;
}

int64_t model_moe_layer_count(const ModelSpec *m)
{
    if (m->experts <= 0) return 0;
    int64_t n = m->layers - m->dense_layers;
    int64_t f = m->moe_layer_freq > 0 ? m->moe_layer_freq : 1;
    return n <= 0 ? 0 : (n + f - 1) / f;
}

bool model_layer_windowed(const ModelSpec *m, int64_t layer)
{
    if (m->sliding_window <= 0) return false;
    return m->full_attn_every <= 0 || layer % m->full_attn_every != m->full_attn_every - 1;
}

int64_t model_windowed_layer_count(const ModelSpec *m)
{
    if (m->sliding_window <= 0) return 0;
    return m->full_attn_every <= 0 ? m->layers : m->layers - m->layers / m->full_attn_every;
}

double model_band_keys(double S, double w)
{
    return w >= S ? S / 2 : w - w * w / (2 * S);
}

double model_attn_keys(const ModelSpec *m, int64_t layer, int64_t S, bool causal)
{
    double s = (double)S;
    if (!model_layer_windowed(m, layer) || m->sliding_window >= S) return causal ? s / 2 : s;
    double w = (double)m->sliding_window;
    return causal ? model_band_keys(s, w) : w;
}

double model_attn_keys_mean(const ModelSpec *m, int64_t S, bool causal)
{
    double nw = (double)model_windowed_layer_count(m), L = (double)(m->layers > 0 ? m->layers : 1);
    double kf = causal ? (double)S / 2 : (double)S;
    if (nw <= 0) return kf;
    return (nw * model_attn_keys(m, 0, S, causal) + (L - nw) * kf) / L; /* layer 0 is a windowed one */
}

int64_t model_padded_vocab(const ModelSpec *m, int64_t tp)
{
    int64_t mult = (m->vocab_divisible > 0 ? m->vocab_divisible : 1) * (tp > 0 ? tp : 1);
    return ts_round_up(m->vocab, mult);
}

static int64_t norm_params(const ModelSpec *m, int64_t width)
{
    return m->norm == MODEL_NORM_LAYERNORM ? 2 * width : width;
}

/* Attention block parameters, including its norms. */
static int64_t attn_params(const ModelSpec *m)
{
    int64_t H = m->hidden, A = m->heads, G = m->kv_heads, D = m->head_dim;
    int64_t p = model_sublayer_norms(m) * norm_params(m, H);
    if (m->q_lora_rank > 0 || m->kv_lora_rank > 0) {
        int64_t qk = m->qk_nope_dim + m->qk_rope_dim;
        if (m->q_lora_rank > 0)
            p += H * m->q_lora_rank + m->q_lora_rank + m->q_lora_rank * A * qk;
        else
            p += H * A * qk;
        p += H * (m->kv_lora_rank + m->qk_rope_dim) + m->kv_lora_rank +
             m->kv_lora_rank * A * (m->qk_nope_dim + m->v_head_dim);
        p += A * m->v_head_dim * H;
        return p;
    }
    int64_t qkv_out = A * D + 2 * G * D;
    p += H * qkv_out + (m->qkv_bias ? qkv_out : 0);
    p += A * D * H + (m->proj_bias ? H : 0);
    if (m->qk_norm && m->qk_norm_full) p += norm_params(m, A * D) + norm_params(m, G * D); /* OLMo 2 */
    else if (m->qk_norm) p += 2 * norm_params(m, D); /* per-head q_norm, k_norm (Qwen3, Gemma 3) */
    if (m->attn_sinks) p += A;                  /* one sink logit per head (GPT-OSS) */
    return p;
}

static int64_t mlp_params(const ModelSpec *m, int64_t ffn, bool bias)
{
    int64_t H = m->hidden;
    if (model_act_gated(m->act)) return 3 * H * ffn + (bias ? 2 * ffn + H : 0);
    return 2 * H * ffn + (bias ? ffn + H : 0);
}

void model_count_params(const ModelSpec *m, ModelCounts *c)
{
    memset(c, 0, sizeof *c);
    int64_t H = m->hidden;
    c->embedding = m->vocab * H;
    if (m->pos == MODEL_POS_LEARNED) c->embedding += m->max_positions * H;
    c->embedding += m->type_vocab * H;
    if (m->embed_norm) c->embedding += norm_params(m, H); /* BERT embeddings.LayerNorm, BLOOM word_embeddings_layernorm */
    c->lm_head = (m->lm_head && !m->tied_embeddings) ? m->vocab * H : 0;

    int64_t attn = attn_params(m);
    int64_t mlp_norm = model_sublayer_norms(m) * norm_params(m, H);
    c->per_layer_dense = attn + mlp_norm + mlp_params(m, m->ffn, m->mlp_bias);
    int64_t expert = mlp_params(m, m->moe_ffn, m->moe_bias);
    int64_t shared = m->shared_experts > 0 ? mlp_params(m, m->moe_ffn * m->shared_experts, false) : 0;
    if (m->shared_experts > 0 && m->shared_gate) shared += H; /* Linear(H, 1), no bias */
    int64_t router = H * m->experts + (m->moe_bias ? m->experts : 0);
    c->per_layer_moe = m->experts > 0 ? attn + mlp_norm + router + m->experts * expert + shared : 0;

    int64_t n_moe = model_moe_layer_count(m);
    int64_t n_dense = m->layers - n_moe;
    int64_t tail = norm_params(m, H) + (m->pooler ? H * H + H : 0);
    if (m->arch == MODEL_ARCH_BERT) tail -= norm_params(m, H); /* BERT has no final norm */
    /* BERT's masked-LM head (BertForMaskedLM): the transform's dense and
     * LayerNorm, the decoder's bias (its weight tied to the word table);
     * with the pooler (BertForPreTraining) the next-sentence head, H x 2 */
    if (m->arch == MODEL_ARCH_BERT && m->lm_head)
        tail += H * H + H + norm_params(m, H) + m->vocab + (m->pooler ? 2 * H + 2 : 0);
    c->total = c->embedding + c->lm_head + n_dense * c->per_layer_dense + n_moe * c->per_layer_moe + tail;
    int64_t moe_active =
        m->experts > 0 ? attn + mlp_norm + router + m->topk * expert + shared : 0;
    c->active = c->embedding + c->lm_head + n_dense * c->per_layer_dense + n_moe * moe_active + tail;
    c->non_embedding = c->total - c->embedding - c->lm_head;
}

void model_overrides_init(ModelOverrides *o)
{
    memset(o, 0, sizeof *o);
    o->layers = o->hidden = o->heads = o->kv_heads = o->head_dim = o->ffn = o->vocab = -1;
    o->max_positions = o->experts = o->topk = o->moe_ffn = o->shared_experts = o->dense_layers = o->mtp_layers = -1;
    o->hidden_dropout = o->attn_dropout = -1;
}
