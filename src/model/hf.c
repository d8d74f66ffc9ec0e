/* HuggingFace config.json -> ModelSpec.
 *
 * Key names per model_type follow reference/models_and_hardware.md A.4:
 *   llama, mistral, mixtral, qwen2, qwen3, qwen3_moe  hidden_size, num_hidden_layers,
 *       num_attention_heads, num_key_value_heads (absent -> heads), head_dim
 *       (absent -> H/A), intermediate_size, vocab_size, max_position_embeddings;
 *   deepseek_v3, deepseek_v2  the same plus MLA ranks and MoE placement keys;
 *   qwen2_moe    qwen3_moe's keys, q/k/v biased, shared_expert_intermediate_size
 *       (a whole number of experts) behind a sigmoid gate;
 *   gpt_oss      biased attention with a sink logit per head, biased router
 *       and experts of width intermediate_size, sliding_window on the
 *       layer_types "sliding_attention" layers (default: every other one);
 *   gpt2         n_embd, n_layer, n_head, n_inner (null -> 4H), n_positions (n_ctx);
 *   bert, gpt_neox  hidden_size etc., always biased;
 *   phi3, olmo2, granite  the Llama keys (phi3: resid_pdrop, hidden_act);
 *   gemma2, gemma3_text  the Llama keys, hidden_activation, transformers'
 *       defaults for absent keys (read_gemma).
 * Robustness seen in real dumps: a decoder nested under `text_config`
 * (multimodal wrappers), transformers 5.x `rope_parameters` in place of
 * rope_theta/rope_scaling, and any of n_routed_experts / num_experts /
 * num_local_experts for the expert count. Every missing or ill-typed field
 * is reported at its JSON path and line:col. */
#include "trainsim/model.h"
#include "../common/common_int.h"

#include <jansson.h>
#include <string.h>

#define HF_TYPES                                                                                             \
    "llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, qwen2_moe, deepseek_v2, deepseek_v3, gpt_oss, gpt2, "  \
    "bert, gpt_neox, gemma2, gemma3 (gemma3_text), phi3, olmo2, granite"
const char *model_hf_types(void) { return HF_TYPES; }

typedef struct Hf {
    const TsJsonDoc *doc;
    json_t *obj;       /* the object holding the model keys (root or text_config) */
    const char *prefix;/* "" or "text_config." */
    const char *type;  /* model_type */
    TsError *err;
} Hf;

static void hf_path(const Hf *h, const char *key, char *out, size_t cap)
{
    snprintf(out, cap, "%s%s", h->prefix, key);
}

static void hint_for(Hf *h, const char *key, const char *what)
{
    if (h->err) ts_err_hint(h->err, "in a %s config.json, '%s' is %s", h->type, key, what);
}

/* Integer field; `what` describes it for the hint ("the model width, e.g. 4096"). */
static TsStatus hf_int(Hf *h, const char *key, bool req, int64_t min, int64_t max, int64_t *out,
                       const char *what)
{
    char path[128];
    hf_path(h, key, path, sizeof path);
    if (h->err) h->err->hint[0] = '\0';
    TsStatus st = ts_json_int(h->doc, h->obj, key, path, req, min, max, out, h->err);
    if (st) hint_for(h, key, what);
    return st;
}

static TsStatus hf_num(Hf *h, json_t *obj, const char *prefix, const char *key, double min, double max,
                       double *out)
{
    char path[128];
    snprintf(path, sizeof path, "%s%s", prefix, key);
    if (h->err) h->err->hint[0] = '\0';
    return ts_json_num(h->doc, obj, key, path, false, min, max, out, h->err);
}

static TsStatus hf_bool(Hf *h, const char *key, bool *out)
{
    char path[128];
    hf_path(h, key, path, sizeof path);
    return ts_json_bool(h->doc, h->obj, key, path, false, out, h->err);
}

static TsStatus hf_str(Hf *h, const char *key, char *out, size_t cap)
{
    char path[128];
    hf_path(h, key, path, sizeof path);
    return ts_json_str(h->doc, h->obj, key, path, false, out, cap, h->err);
}

/* An error about a present field's value, positioned at it. */
static TsStatus hf_bad(Hf *h, const char *key, const char *msg, const char *hint)
{
    char path[128];
    hf_path(h, key, path, sizeof path);
    int l = 1, c = 1;
    ts_json_locate(h->doc, path, &l, &c);
    ts_err(h->err, TS_ERR_INPUT, "'%s' %s", path, msg);
    ts_err_at(h->err, h->doc->file, l, c, h->doc->text);
    if (hint) ts_err_hint(h->err, "%s", hint);
    return TS_ERR_INPUT;
}

/* The first present key of a list of synonyms, or NULL. */
static const char *first_key(const Hf *h, const char *const *keys)
{
    for (; *keys; keys++) {
        json_t *v = json_object_get(h->obj, *keys);
        if (v && !json_is_null(v)) return *keys;
    }
    return NULL;
}

/* Optional sub-object (rope_scaling, rope_parameters): object or null. */
static TsStatus hf_object(Hf *h, const char *key, json_t **out)
{
    json_t *v = json_object_get(h->obj, key);
    *out = NULL;
    if (!v || json_is_null(v)) return TS_OK;
    if (!json_is_object(v)) return hf_bad(h, key, "must be an object or null", "e.g. {\"rope_type\": \"llama3\", \"factor\": 8.0}");
    *out = v;
    return TS_OK;
}

/* rope_theta (4.x) or rope_parameters.rope_theta (5.x; per layer type:
 * rope_parameters.full_attention.rope_theta); partial_rotary_factor likewise. */
static TsStatus read_rope(Hf *h, ModelSpec *m)
{
    json_t *params, *scaling;
    TsStatus st;
    if ((st = hf_object(h, "rope_parameters", &params))) return st;
    if ((st = hf_object(h, "rope_scaling", &scaling))) return st;
    char pp[80];
    snprintf(pp, sizeof pp, "%srope_parameters.", h->prefix);
    json_t *full = params ? json_object_get(params, "full_attention") : NULL;
    if (full && json_is_object(full)) { /* per layer type (Gemma 3 in transformers 5): the global layers' */
        params = full;
        snprintf(pp, sizeof pp, "%srope_parameters.full_attention.", h->prefix);
    }
    if (params) {
        if ((st = hf_num(h, params, pp, "rope_theta", 1e-9, 1e15, &m->rope_theta))) return st;
        if ((st = hf_num(h, params, pp, "partial_rotary_factor", 1e-9, 1.0, &m->rotary_pct))) return st;
    }
    if ((st = hf_num(h, h->obj, h->prefix, "rope_theta", 1e-9, 1e15, &m->rope_theta))) return st;
    return hf_num(h, h->obj, h->prefix, "partial_rotary_factor", 1e-9, 1.0, &m->rotary_pct);
}

/* num_key_value_heads must divide the query heads; positioned at the kv
 * key, or at the heads key when the kv count is the type's default. */
static TsStatus check_kv(Hf *h, const ModelSpec *m, const char *heads_key)
{
    if (m->heads % m->kv_heads == 0) return TS_OK;
    char msg[160];
    const char *hint = "grouped-query attention shares each kv head by a whole number of query heads";
    json_t *kv = json_object_get(h->obj, "num_key_value_heads");
    if (kv && !json_is_null(kv)) {
        snprintf(msg, sizeof msg, "(%lld) must divide num_attention_heads (%lld)", (long long)m->kv_heads,
                 (long long)m->heads);
        return hf_bad(h, "num_key_value_heads", msg, hint);
    }
    snprintf(msg, sizeof msg, "(%lld) is not a multiple of the default num_key_value_heads (%lld)",
             (long long)m->heads, (long long)m->kv_heads);
    return hf_bad(h, heads_key, msg, "give num_key_value_heads");
}

/* Heads, kv heads, head dim with the divisibility checks, positioned. */
static TsStatus read_heads(Hf *h, ModelSpec *m, const char *heads_key, bool kv_key)
{
    TsStatus st;
    if ((st = hf_int(h, heads_key, true, 1, 100000, &m->heads, "the number of attention heads, e.g. 32")))
        return st;
    m->kv_heads = m->heads;
    if (kv_key) {
        if ((st = hf_int(h, "num_key_value_heads", false, 1, 100000, &m->kv_heads,
                         "the number of key/value heads (GQA), e.g. 8")) ||
            (st = check_kv(h, m, heads_key)))
            return st;
    }
    m->head_dim = 0;
    if ((st = hf_int(h, "head_dim", false, 1, 100000, &m->head_dim, "the per-head dimension, e.g. 128")))
        return st;
    if (m->head_dim == 0 && m->hidden % m->heads != 0) {
        char msg[160];
        snprintf(msg, sizeof msg, "(%lld) is not a multiple of the %lld heads", (long long)m->hidden,
                 (long long)m->heads);
        return hf_bad(h, strcmp(h->type, "gpt2") == 0 ? "n_embd" : "hidden_size", msg,
                      "add \"head_dim\" when heads x head_dim differs from the hidden size");
    }
    return TS_OK;
}

static TsStatus read_common_ln(Hf *h, ModelSpec *m, const char *eps_key)
{
    return hf_num(h, h->obj, h->prefix, eps_key, 0.0, 1.0, &m->norm_eps);
}

/* Dropout probabilities under the type's keys; absent keys keep the family
 * default (model_defaults). hidden_key NULL: the type has no such dropout. */
static TsStatus read_dropout(Hf *h, ModelSpec *m, const char *hidden_key, const char *attn_key)
{
    TsStatus st = TS_OK;
    if (hidden_key) st = hf_num(h, h->obj, h->prefix, hidden_key, 0.0, MODEL_DROPOUT_MAX, &m->hidden_dropout);
    if (!st) st = hf_num(h, h->obj, h->prefix, attn_key, 0.0, MODEL_DROPOUT_MAX, &m->attn_dropout);
    if (st && h->err) ts_err_hint(h->err, "a dropout probability, 0 (none) to 0.99, e.g. 0.1");
    return st;
}

/* The gate's activation of a gated MLP (`key`: Gemma's hidden_activation,
 * Phi-3's hidden_act; absent: the family's default): SiLU -> swiglu, the
 * GeLUs -> geglu. */
static TsStatus read_act(Hf *h, ModelSpec *m, const char *key)
{
    char a[40] = "";
    TsStatus st = hf_str(h, key, a, sizeof a);
    if (st || !a[0]) return st;
    if (strcmp(a, "silu") == 0 || strcmp(a, "swish") == 0) m->act = MODEL_ACT_SWIGLU;
    else if (strcmp(a, "gelu_pytorch_tanh") == 0 || strcmp(a, "gelu") == 0 || strcmp(a, "gelu_new") == 0 ||
             strcmp(a, "gelu_fast") == 0)
        m->act = MODEL_ACT_GEGLU;
    else
        return hf_bad(h, key, "is not a supported gated activation", "silu (SwiGLU) or gelu_pytorch_tanh (GeGLU)");
    return TS_OK;
}

/* llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, qwen2_moe, deepseek_v2, deepseek_v3, gpt_oss, phi3, olmo2
 * and granite share the Llama keys. OLMo 2's norms (reordered, q/k over all
 * heads) are its family's defaults; Granite's embedding, attention,
 * residual and logit multipliers are scalars (no parameters) and are not
 * read. */
static TsStatus read_llama_like(Hf *h, ModelSpec *m)
{
    TsStatus st;
    bool mla = strncmp(h->type, "deepseek_v", 10) == 0;
    if ((st = hf_int(h, "hidden_size", true, 1, 10000000, &m->hidden, "the model width, e.g. 4096")) ||
        (st = hf_int(h, "num_hidden_layers", true, 1, 1000000, &m->layers, "the number of transformer blocks, e.g. 32")) ||
        (st = read_heads(h, m, "num_attention_heads", !mla)) ||
        (st = hf_int(h, "intermediate_size", true, 1, 10000000, &m->ffn, "the MLP intermediate size, e.g. 11008")) ||
        (st = hf_int(h, "vocab_size", true, 1, 100000000, &m->vocab, "the vocabulary size, e.g. 32000")) ||
        (st = hf_int(h, "max_position_embeddings", false, 0, 100000000, &m->max_positions,
                     "the context window, e.g. 4096")) ||
        (st = read_common_ln(h, m, "rms_norm_eps")) || (st = read_rope(h, m)) ||
        (st = read_dropout(h, m, NULL, "attention_dropout")))
        return st;
    m->tied_embeddings = false;
    bool attn_bias = false;
    if ((st = hf_bool(h, "tie_word_embeddings", &m->tied_embeddings)) || (st = hf_bool(h, "attention_bias", &attn_bias)) ||
        (st = hf_bool(h, "mlp_bias", &m->mlp_bias)))
        return st;
    m->qkv_bias = m->proj_bias = attn_bias;
    if (strncmp(h->type, "qwen2", 5) == 0) { /* q/k/v biased, o_proj not: hard-coded in Qwen2(Moe)Attention */
        m->qkv_bias = true;
        m->proj_bias = false;
    }
    if (strncmp(h->type, "qwen3", 5) == 0) m->qk_norm = true; /* per-head q_norm/k_norm, hard-coded */
    if (strcmp(h->type, "phi3") == 0) {
        /* qkv_proj, o_proj and gate_up_proj are bias=False in Phi3Attention /
         * Phi3MLP; resid_pdrop drops each sublayer's output (embd_pdrop: the
         * embedding dropout of transformers 4.x, gone in 5.x, is not read) */
        m->qkv_bias = m->proj_bias = m->mlp_bias = false;
        if ((st = read_dropout(h, m, "resid_pdrop", "attention_dropout")) || (st = read_act(h, m, "hidden_act")))
            return st;
    }
    return TS_OK;
}

/* Gemma 2 and the Gemma 3 text decoder (Gemma2Config, Gemma3TextConfig).
 * Absent keys take transformers' defaults: a multimodal gemma3 config
 * writes its text_config as the difference from Gemma3TextConfig's
 * defaults (google/gemma-3-12b lists neither vocab_size nor head_dim,
 * gemma-3-4b not even its heads), so every gemma3_text key may be absent;
 * a gemma2 config lists its dimensions, which are required as for llama.
 * head_dim is its own key (gemma-2-9b: 16 x 256 = 4096 != 3584). Hard-coded:
 * no MLP biases, sandwich norms (four per layer), per-head q/k norms in
 * Gemma 3. Sliding windows as transformers sets them: sliding_window
 * (default 4096) on the layers layer_types names, absent on every layer but
 * each n-th, n = 2 for Gemma 2 and sliding_window_pattern (default 6) for
 * Gemma 3. Not modelled: soft-capping, the sqrt(H) embedding scale. */
static TsStatus hf_windows(Hf *h, ModelSpec *m, int64_t n);

static TsStatus read_gemma(Hf *h, ModelSpec *m, bool g3)
{
    TsStatus st;
    bool req = !g3;
    m->hidden = 2304, m->layers = 26, m->heads = 8, m->kv_heads = 4, m->head_dim = 256, m->ffn = 9216;
    m->vocab = g3 ? 262208 : 256000;
    m->max_positions = g3 ? 131072 : 8192;
    m->rope_theta = g3 ? 1000000.0 : 10000.0; /* Gemma 3: the global layers' base (local: 10000) */
    m->qk_norm = g3;
    bool attn_bias = false;
    if ((st = hf_int(h, "hidden_size", req, 1, 10000000, &m->hidden, "the model width, e.g. 3584")) ||
        (st = hf_int(h, "num_hidden_layers", req, 1, 1000000, &m->layers, "the number of transformer blocks, e.g. 42")) ||
        (st = hf_int(h, "num_attention_heads", req, 1, 100000, &m->heads, "the number of attention heads, e.g. 16")) ||
        (st = hf_int(h, "num_key_value_heads", false, 1, 100000, &m->kv_heads,
                     "the number of key/value heads (GQA), e.g. 8")) ||
        (st = check_kv(h, m, "num_attention_heads")) ||
        (st = hf_int(h, "head_dim", false, 1, 100000, &m->head_dim, "the per-head dimension, e.g. 256")) ||
        (st = hf_int(h, "intermediate_size", req, 1, 10000000, &m->ffn, "the MLP intermediate size, e.g. 14336")) ||
        (st = hf_int(h, "vocab_size", req, 1, 100000000, &m->vocab, "the vocabulary size, e.g. 256000")) ||
        (st = hf_int(h, "max_position_embeddings", false, 0, 100000000, &m->max_positions,
                     "the context window, e.g. 8192")) ||
        (st = read_common_ln(h, m, "rms_norm_eps")) || (st = read_rope(h, m)) ||
        (st = read_dropout(h, m, NULL, "attention_dropout")) ||
        (st = hf_bool(h, "tie_word_embeddings", &m->tied_embeddings)) || (st = hf_bool(h, "attention_bias", &attn_bias)) ||
        (st = read_act(h, m, "hidden_activation")))
        return st;
    m->qkv_bias = m->proj_bias = attn_bias;
    int64_t every = g3 ? 6 : 2;
    m->sliding_window = 4096;
    if (g3 && (st = hf_int(h, "sliding_window_pattern", false, 1, 1000000000, &every,
                           "full attention on every n-th layer, e.g. 6")))
        return st;
    return hf_windows(h, m, every);
}

/* Qwen2-MoE's one shared expert of shared_expert_intermediate_size, gated
 * by sigmoid(Linear(H, 1)): counted as that many experts of moe_ffn. */
static TsStatus read_qwen2_shared(Hf *h, ModelSpec *m)
{
    int64_t sf = 0;
    TsStatus st = hf_int(h, "shared_expert_intermediate_size", false, 0, 10000000, &sf,
                         "the shared expert's intermediate size, e.g. 5632");
    if (st || sf == 0) return st;
    if (sf % m->moe_ffn != 0)
        return hf_bad(h, "shared_expert_intermediate_size", "is not a multiple of moe_intermediate_size",
                      "trainsim models the shared expert as a whole number of experts of moe_intermediate_size");
    m->shared_experts = sf / m->moe_ffn;
    m->shared_gate = true;
    return TS_OK;
}

static TsStatus read_moe(Hf *h, ModelSpec *m)
{
    static const char *const expert_keys[] = {"n_routed_experts", "num_experts", "num_local_experts", NULL};
    const char *ek = first_key(h, expert_keys);
    TsStatus st;
    if (!ek) {
        ts_err(h->err, TS_ERR_INPUT, "missing the expert count of a %s model", h->type);
        ts_err_at(h->err, h->doc->file, 1, 1, h->doc->text);
        ts_err_hint(h->err, "give one of n_routed_experts, num_experts or num_local_experts");
        return TS_ERR_INPUT;
    }
    if ((st = hf_int(h, ek, true, 1, 100000, &m->experts, "the number of routed experts, e.g. 8")) ||
        (st = hf_int(h, "num_experts_per_tok", strcmp(h->type, "mixtral") != 0, 1, 100000, &m->topk,
                     "the experts per token (top-k), e.g. 2")))
        return st;
    if (m->topk > m->experts)
        return hf_bad(h, "num_experts_per_tok", "exceeds the number of experts", NULL);
    if (strcmp(h->type, "mixtral") == 0 || strcmp(h->type, "gpt_oss") == 0) {
        m->moe_ffn = m->ffn; /* intermediate_size is one expert's */
        return TS_OK;
    }
    if ((st = hf_int(h, "moe_intermediate_size", true, 1, 10000000, &m->moe_ffn,
                     "the intermediate size of one expert, e.g. 768")))
        return st;
    if (strncmp(h->type, "deepseek_v", 10) == 0) {
        if ((st = hf_int(h, "n_shared_experts", false, 0, 100000, &m->shared_experts, "the shared experts per MoE layer, e.g. 1")) ||
            (st = hf_int(h, "first_k_dense_replace", false, 0, m->layers, &m->dense_layers,
                         "the number of leading dense layers, e.g. 3")) ||
            (st = hf_int(h, "moe_layer_freq", false, 1, 1000000, &m->moe_layer_freq, "every n-th layer is MoE, e.g. 1")))
            return st;
        return TS_OK;
    }
    if (strcmp(h->type, "qwen2_moe") == 0 && (st = read_qwen2_shared(h, m))) return st;
    /* qwen3_moe, qwen2_moe: decoder_sparse_step and mlp_only_layers (only a leading run is representable). */
    if ((st = hf_int(h, "decoder_sparse_step", false, 1, 1000000, &m->moe_layer_freq,
                     "every n-th layer is sparse, e.g. 1")))
        return st;
    json_t *mol = json_object_get(h->obj, "mlp_only_layers");
    if (mol && !json_is_null(mol)) {
        if (!json_is_array(mol)) return hf_bad(h, "mlp_only_layers", "must be an array of layer indices", "e.g. [] or [0, 1]");
        size_t i;
        json_t *v;
        json_array_foreach(mol, i, v)
        {
            if (!json_is_integer(v) || json_integer_value(v) != (json_int_t)i)
                return hf_bad(h, "mlp_only_layers", "must list leading layers 0, 1, 2, ... in order",
                              "trainsim models dense layers only before the first MoE layer");
        }
        m->dense_layers = (int64_t)json_array_size(mol);
    }
    return TS_OK;
}

static TsStatus read_mla(Hf *h, ModelSpec *m)
{
    TsStatus st;
    m->kv_heads = m->heads; /* MLA: num_key_value_heads is nominal */
    if ((st = hf_int(h, "q_lora_rank", false, 0, 10000000, &m->q_lora_rank, "the query LoRA rank, e.g. 1536 (null: none)")) ||
        (st = hf_int(h, "kv_lora_rank", true, 1, 10000000, &m->kv_lora_rank, "the key/value LoRA rank, e.g. 512")) ||
        (st = hf_int(h, "qk_nope_head_dim", true, 1, 100000, &m->qk_nope_dim, "the non-rotary q/k head dim, e.g. 128")) ||
        (st = hf_int(h, "qk_rope_head_dim", true, 1, 100000, &m->qk_rope_dim, "the rotary q/k head dim, e.g. 64")) ||
        (st = hf_int(h, "v_head_dim", true, 1, 100000, &m->v_head_dim, "the value head dim, e.g. 128")) ||
        (st = hf_int(h, "num_nextn_predict_layers", false, 0, 1000, &m->mtp_layers, "the MTP layers, e.g. 1")))
        return st;
    m->head_dim = m->qk_nope_dim + m->qk_rope_dim;
    return TS_OK;
}

/* layer_types (transformers): "sliding_attention" / "full_attention" per
 * layer; absent, full on every n-th layer (GPT-OSS and Gemma 2: n = 2, the
 * odd layers; Gemma 3: its sliding_window_pattern; n = 0: none, as Mistral,
 * Mixtral and Phi-3 window every layer). Representable: every n-th layer
 * full, or none. */
static bool lt_full(json_t *lt, int64_t l, int64_t n)
{
    const char *s = lt ? json_string_value(json_array_get(lt, (size_t)l)) : NULL;
    return lt ? s && strcmp(s, "full_attention") == 0 : n > 0 && (l + 1) % n == 0;
}

static TsStatus layer_pattern(Hf *h, ModelSpec *m, json_t *lt, int64_t n)
{
    int64_t first_full = -1, n_full = 0;
    for (int64_t l = 0; l < m->layers; l++) {
        const char *s = lt ? json_string_value(json_array_get(lt, (size_t)l)) : "sliding_attention";
        if (!lt_full(lt, l, n) && !(s && strcmp(s, "sliding_attention") == 0))
            return hf_bad(h, "layer_types", "holds an entry other than \"sliding_attention\" or \"full_attention\"",
                          "one string per layer, e.g. [\"sliding_attention\", \"full_attention\", ...]");
        if (lt_full(lt, l, n) && first_full < 0) first_full = l;
        n_full += lt_full(lt, l, n);
    }
    m->full_attn_every = first_full + 1;
    if (n_full == m->layers) m->sliding_window = m->full_attn_every = 0;
    for (int64_t l = 0; l < m->layers; l++)
        if (m->sliding_window > 0 && model_layer_windowed(m, l) == lt_full(lt, l, n))
            return hf_bad(h, "layer_types", "is not a repeating pattern with full attention every n-th layer",
                          "trainsim windows every layer but every n-th (n - 1 sliding, then 1 full), or all of them");
    return TS_OK;
}

/* The attention window (sliding_window; absent, m's default; null, none) on
 * the layers layer_types names sliding, absent every layer but each n-th
 * (n = 0: every layer). */
static TsStatus hf_windows(Hf *h, ModelSpec *m, int64_t n)
{
    TsStatus st;
    json_t *w = json_object_get(h->obj, "sliding_window");
    if (w && json_is_null(w)) m->sliding_window = 0;
    else if ((st = hf_int(h, "sliding_window", false, 0, 1000000000, &m->sliding_window,
                          "the attention window, e.g. 128")))
        return st;
    json_t *lt = json_object_get(h->obj, "layer_types");
    if (lt && json_is_null(lt)) lt = NULL;
    if (lt && !json_is_array(lt)) return hf_bad(h, "layer_types", "must be an array of strings", "e.g. [\"sliding_attention\", \"full_attention\"]");
    if (lt && (int64_t)json_array_size(lt) != m->layers) {
        char msg[160];
        snprintf(msg, sizeof msg, "has %lld entries, not one per layer (num_hidden_layers %lld)",
                 (long long)json_array_size(lt), (long long)m->layers);
        return hf_bad(h, "layer_types", msg, "give one of \"sliding_attention\" or \"full_attention\" per layer");
    }
    return m->sliding_window > 0 ? layer_pattern(h, m, lt, n) : TS_OK;
}

/* Qwen2/Qwen3 (and their MoE): with use_sliding_window, transformers windows
 * layers max_window_layers.. by sliding_window; trainsim represents none or
 * all of them. */
static TsStatus read_qwen_window(Hf *h, ModelSpec *m)
{
    bool on = false;
    int64_t from = m->layers;
    TsStatus st;
    if ((st = hf_bool(h, "use_sliding_window", &on)) || !on) return st;
    if ((st = hf_int(h, "max_window_layers", false, 0, 1000000000, &from, "the first windowed layer, e.g. 28")))
        return st;
    if (from >= m->layers) return TS_OK;
    if (from > 0)
        return hf_bad(h, "max_window_layers", "windows only the layers from it on, which trainsim cannot represent",
                      "trainsim windows all layers (max_window_layers 0) or none (use_sliding_window false)");
    m->full_attn_every = 0;
    return hf_int(h, "sliding_window", true, 1, 1000000000, &m->sliding_window, "the attention window, e.g. 4096");
}

static TsStatus read_gpt_oss(Hf *h, ModelSpec *m)
{
    m->attn_sinks = m->moe_bias = true;
    if (!json_object_get(h->obj, "attention_bias")) m->qkv_bias = m->proj_bias = true; /* GptOssConfig default */
    return hf_windows(h, m, 2);
}

static TsStatus read_gpt2(Hf *h, ModelSpec *m)
{
    TsStatus st;
    if ((st = hf_int(h, "n_embd", true, 1, 10000000, &m->hidden, "the model width, e.g. 768")) ||
        (st = hf_int(h, "n_layer", true, 1, 1000000, &m->layers, "the number of transformer blocks, e.g. 12")) ||
        (st = read_heads(h, m, "n_head", false)) ||
        (st = hf_int(h, "vocab_size", true, 1, 100000000, &m->vocab, "the vocabulary size, e.g. 50257")) ||
        (st = read_common_ln(h, m, "layer_norm_epsilon")) || (st = read_dropout(h, m, "resid_pdrop", "attn_pdrop")))
        return st;
    m->ffn = 4 * m->hidden;
    m->max_positions = 1024;
    const char *pk = json_object_get(h->obj, "n_positions") ? "n_positions" : "n_ctx";
    if ((st = hf_int(h, "n_inner", false, 1, 10000000, &m->ffn, "the MLP size; null means 4 * n_embd")) ||
        (st = hf_int(h, pk, false, 1, 100000000, &m->max_positions, "the learned position table size, e.g. 1024")) ||
        (st = hf_bool(h, "tie_word_embeddings", &m->tied_embeddings)))
        return st;
    return TS_OK;
}

/* BERT's head from "architectures" (the class transformers saved the
 * config from): BertForMaskedLM has the masked-LM head (transform, norm,
 * the tied decoder and its bias) and no pooler (add_pooling_layer=False);
 * BertForPreTraining both, with the next-sentence head's two logits; a
 * bare BertModel, or no "architectures", the pooler alone. */
static TsStatus read_bert_head(Hf *h, ModelSpec *m)
{
    json_t *a = json_object_get(h->obj, "architectures");
    if (!a || json_is_null(a)) return TS_OK;
    if (!json_is_array(a))
        return hf_bad(h, "architectures", "must be a list of class names", "e.g. [\"BertForMaskedLM\"]");
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v) {
        const char *c = json_string_value(v);
        if (!c) return hf_bad(h, "architectures", "must be a list of class names", "e.g. [\"BertForMaskedLM\"]");
        if (strstr(c, "ForMaskedLM")) m->lm_head = true, m->pooler = false;
        else if (strstr(c, "ForPreTraining")) m->lm_head = true, m->pooler = true;
    }
    return TS_OK;
}

/* bert and gpt_neox: hidden_size etc., biased, LayerNorm. */
static TsStatus read_bert_neox(Hf *h, ModelSpec *m, bool bert)
{
    TsStatus st;
    if ((st = hf_int(h, "hidden_size", true, 1, 10000000, &m->hidden, "the model width, e.g. 768")) ||
        (st = hf_int(h, "num_hidden_layers", true, 1, 1000000, &m->layers, "the number of transformer blocks, e.g. 12")) ||
        (st = read_heads(h, m, "num_attention_heads", false)) ||
        (st = hf_int(h, "intermediate_size", true, 1, 10000000, &m->ffn, "the MLP intermediate size, e.g. 3072")) ||
        (st = hf_int(h, "vocab_size", true, 1, 100000000, &m->vocab, "the vocabulary size, e.g. 30522")) ||
        (st = hf_int(h, "max_position_embeddings", false, 0, 100000000, &m->max_positions, "the context window, e.g. 512")) ||
        (st = read_common_ln(h, m, "layer_norm_eps")) || (st = hf_bool(h, "tie_word_embeddings", &m->tied_embeddings)) ||
        (st = bert ? read_dropout(h, m, "hidden_dropout_prob", "attention_probs_dropout_prob")
                   : read_dropout(h, m, "hidden_dropout", "attention_dropout")))
        return st;
    if (bert) {
        char pet[32] = "";
        if ((st = hf_int(h, "type_vocab_size", false, 0, 1000000, &m->type_vocab, "the token-type vocabulary, e.g. 2")) ||
            (st = hf_str(h, "position_embedding_type", pet, sizeof pet)))
            return st;
        if (pet[0] && strcmp(pet, "absolute") != 0)
            return hf_bad(h, "position_embedding_type", "is not supported (only \"absolute\")", NULL);
        return read_bert_head(h, m);
    }
    if ((st = hf_num(h, h->obj, h->prefix, "rotary_pct", 1e-9, 1.0, &m->rotary_pct)) ||
        (st = hf_num(h, h->obj, h->prefix, "rotary_emb_base", 1e-9, 1e15, &m->rope_theta)) || (st = read_rope(h, m)))
        return st;
    bool attn_bias = true;
    if ((st = hf_bool(h, "attention_bias", &attn_bias))) return st;
    m->qkv_bias = m->proj_bias = attn_bias;
    return TS_OK;
}

static bool type_arch(const char *t, ModelArch *a)
{
    static const struct { const char *type; ModelArch arch; } MAP[] = {
        {"llama", MODEL_ARCH_LLAMA}, {"mistral", MODEL_ARCH_LLAMA},     {"mixtral", MODEL_ARCH_MIXTRAL},
        {"qwen2", MODEL_ARCH_QWEN},  {"qwen3", MODEL_ARCH_QWEN},        {"qwen3_moe", MODEL_ARCH_QWEN},
        {"gpt2", MODEL_ARCH_GPT},    {"bert", MODEL_ARCH_BERT},         {"gpt_neox", MODEL_ARCH_NEOX},
        {"deepseek_v3", MODEL_ARCH_DEEPSEEK}, {"gemma2", MODEL_ARCH_GEMMA}, {"gemma3", MODEL_ARCH_GEMMA},
        {"gemma3_text", MODEL_ARCH_GEMMA},    {"phi3", MODEL_ARCH_PHI3},   {"olmo2", MODEL_ARCH_OLMO2},
        {"granite", MODEL_ARCH_LLAMA},
        {"deepseek_v2", MODEL_ARCH_DEEPSEEK}, {"qwen2_moe", MODEL_ARCH_QWEN}, {"gpt_oss", MODEL_ARCH_LLAMA},
    };
    for (size_t i = 0; i < sizeof MAP / sizeof MAP[0]; i++)
        if (strcmp(t, MAP[i].type) == 0) {
            *a = MAP[i].arch;
            return true;
        }
    return false;
}

/* Name: the last part of _name_or_path, else the file name, else its folder
 * ("llama/config.json" -> "llama"). */
static void hf_name(const TsJsonDoc *doc, json_t *root, char *out, size_t cap)
{
    json_t *v = json_object_get(root, "_name_or_path");
    char buf[512];
    if (v && json_is_string(v) && json_string_length(v) > 0) {
        snprintf(buf, sizeof buf, "%s", json_string_value(v));
    } else {
        snprintf(buf, sizeof buf, "%s", doc->file);
        char *dot = strrchr(buf, '.');
        if (dot && strcmp(dot, ".json") == 0) *dot = '\0';
        char *slash = strrchr(buf, '/');
        if (strcmp(slash ? slash + 1 : buf, "config") == 0 && slash) *slash = '\0';
    }
    size_t n = strlen(buf);
    while (n > 1 && buf[n - 1] == '/') buf[--n] = '\0';
    const char *b = strrchr(buf, '/');
    b = b ? b + 1 : buf;
    n = strlen(b);
    if (n >= cap) n = cap - 1;
    memcpy(out, b, n);
    out[n] = '\0';
}

static TsStatus parse_hf(const TsJsonDoc *doc, ModelSpec *out, TsError *err)
{
    Hf h = {doc, doc->root, "", "", err};
    json_t *tc = json_object_get(doc->root, "text_config");
    char type[64] = "";
    if (tc && json_is_object(tc)) {
        h.obj = tc;
        h.prefix = "text_config.";
        json_t *t = json_object_get(tc, "model_type");
        if (t && json_is_string(t)) {
            if (ts_json_str(doc, tc, "model_type", "text_config.model_type", true, type, sizeof type, err)) return TS_ERR_INPUT;
        }
    }
    const char *type_path = h.prefix;
    if (!type[0]) {
        type_path = "";
        if (ts_json_str(doc, doc->root, "model_type", "model_type", true, type, sizeof type, err)) {
            ts_err_hint(err, "a HF config.json names its architecture in \"model_type\"; supported: %s", HF_TYPES);
            return TS_ERR_INPUT;
        }
    }
    h.type = type;
    ModelArch arch;
    if (!type_arch(type, &arch)) {
        char path[64];
        snprintf(path, sizeof path, "%smodel_type", type_path);
        int l = 1, c = 1;
        ts_json_locate(doc, path, &l, &c);
        ts_err(err, TS_ERR_INPUT, "unsupported model_type '%s'", type);
        ts_err_at(err, doc->file, l, c, doc->text);
        ts_err_hint(err, "supported model types: %s; other models: use --arch with --layers --hidden --heads ...", HF_TYPES);
        return TS_ERR_INPUT;
    }
    if (strcmp(type, "gemma3") == 0 && !h.prefix[0]) { /* Gemma3ForConditionalGeneration without its decoder */
        int l = 1, c = 1;
        ts_json_locate(doc, "model_type", &l, &c);
        ts_err(err, TS_ERR_INPUT, "a gemma3 config.json without text_config");
        ts_err_at(err, doc->file, l, c, doc->text);
        ts_err_hint(err, "a gemma3 config nests its text decoder under \"text_config\" (model_type gemma3_text); "
                         "Gemma 3 1B's config is a gemma3_text config itself");
        return TS_ERR_INPUT;
    }
    model_defaults(out, arch);
    out->experts = out->topk = 0; /* the config says whether it is MoE */
    TsStatus st;
    if (strcmp(type, "gpt2") == 0) st = read_gpt2(&h, out);
    else if (strcmp(type, "gemma2") == 0) st = read_gemma(&h, out, false);
    else if (strncmp(type, "gemma3", 6) == 0) st = read_gemma(&h, out, true);
    else if (strcmp(type, "bert") == 0) st = read_bert_neox(&h, out, true);
    else if (strcmp(type, "gpt_neox") == 0) st = read_bert_neox(&h, out, false);
    else {
        st = read_llama_like(&h, out);
        if (!st && strncmp(type, "deepseek_v", 10) == 0) st = read_mla(&h, out);
        if (!st && strcmp(type, "gpt_oss") == 0) st = read_gpt_oss(&h, out);
        if (!st && (strcmp(type, "mistral") == 0 || strcmp(type, "mixtral") == 0 || strcmp(type, "phi3") == 0))
            st = hf_windows(&h, out, 0); /* Mistral-7B-v0.1 4096, Phi-3-mini 2047; null: none */
        if (!st && strncmp(type, "qwen", 4) == 0) st = read_qwen_window(&h, out);
        if (!st && (strcmp(type, "mixtral") == 0 || strstr(type, "_moe") || strncmp(type, "deepseek_v", 10) == 0 ||
                    strcmp(type, "gpt_oss") == 0))
            st = read_moe(&h, out);
    }
    if (st) return st;
    hf_name(doc, doc->root, out->name, sizeof out->name);
    snprintf(out->source, sizeof out->source, "HF config.json %.180s (model_type %.40s)", doc->file, type);
    return TS_OK;
}

TsStatus model_parse_hf_config(const char *path, ModelSpec *out, ModelKnown *known, TsError *err)
{
    TsJsonDoc doc;
    TsStatus st = ts_json_load(&doc, path, err);
    if (st == TS_OK) st = parse_hf(&doc, out, err);
    ts_json_free(&doc);
    if (st == TS_OK && known) *known = (ModelKnown){true, true, true, true, true, true, true, true, false};
    return st;
}
