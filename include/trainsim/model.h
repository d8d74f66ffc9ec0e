/*
 * trainsim/model.h — ModelSpec: the shape of a transformer, and where it comes from.
 *
 * A ModelSpec is plain data: every dimension the later stages need to build
 * the module graph (graph.h), partition it (partition.h) and cost it. It is
 * filled from one of four sources, picked by model_load():
 *   1. a preset name ("llama3-70b") -> data/models/<name>.json
 *   2. flags only (--arch gpt --layers 12 --hidden 768 --heads 12)
 *   3. a HuggingFace config.json (llama, mistral, mixtral, qwen2, qwen3,
 *      qwen3_moe, qwen2_moe, gpt2, bert, gpt_neox, deepseek_v2, deepseek_v3,
 *      gpt_oss, gemma2, gemma3, phi3, olmo2, granite)
 *   4. a Megatron module-tree dump or a parameter table (name;module;shape;...)
 * and then command-line flags override any field (in model_load). Preset
 * files use the schema "trainsim-model" v1 that model_to_json writes; see
 * docs/models.md for it and for what each source can and cannot determine.
 *
 * Dimension legend used across trainsim:
 *   L layers, H hidden, A query heads, G kv heads (groups), D head dim,
 *   F ffn (MLP intermediate), V vocab, E experts, K top-k, B micro-batch, S seq.
 *
 * Invariants after model_validate(): layers, hidden, heads, head_dim, ffn (or
 * moe_ffn for all-MoE models), vocab > 0; kv_heads divides heads; topk <= experts.
 *
 * Example (GPT-2 small):
 *     ModelSpec m; model_defaults(&m, MODEL_ARCH_GPT);
 *     m.layers = 12; m.hidden = 768; m.heads = 12;
 *     model_finalize(&m);            // fills head_dim 64, ffn 3072, kv_heads 12
 *     ModelCounts c; model_count_params(&m, &c);   // c.total = 124439808
 */
#ifndef TRAINSIM_MODEL_H
#define TRAINSIM_MODEL_H

#include "trainsim/common.h"

/* Architecture families: X(enum suffix, name, default naming framework). */
#define MODEL_ARCH_LIST(X)            \
    X(GPT, "gpt", "megatron")         \
    X(LLAMA, "llama", "hf")           \
    X(BERT, "bert", "hf")             \
    X(MIXTRAL, "mixtral", "hf")       \
    X(DEEPSEEK, "deepseek", "megatron") \
    X(NEOX, "gpt_neox", "hf")         \
    X(QWEN, "qwen", "hf")             \
    X(GEMMA, "gemma", "hf")           \
    X(PHI3, "phi3", "hf")             \
    X(OLMO2, "olmo2", "hf")

typedef enum {
#define X(e, n, f) MODEL_ARCH_##e,
    MODEL_ARCH_LIST(X)
#undef X
    MODEL_ARCH_COUNT
} ModelArch;

/* Normalisation, MLP activation and position encoding: X(enum suffix, name
 * in preset files and JSON). */
#define MODEL_NORM_LIST(X) X(LAYERNORM, "layernorm") X(RMSNORM, "rmsnorm")
typedef enum {
#define X(e, n) MODEL_NORM_##e,
    MODEL_NORM_LIST(X)
#undef X
    MODEL_NORM_COUNT
} ModelNorm;

/* X(enum suffix, name, gated): a gated MLP has three matrices (gate, up,
 * down) and multiplies act(gate) by up. */
#define MODEL_ACT_LIST(X)                                                          \
    X(GELU, "gelu", false)     /* 2-matrix MLP, GeLU (also gelu_new / gelu_fast) */ \
    X(SWIGLU, "swiglu", true)  /* 3-matrix gated MLP, SiLU gate */                \
    X(RELU2, "relu2", false)   /* 2-matrix MLP, squared ReLU (Nemotron-4) */       \
    X(GEGLU, "geglu", true)    /* 3-matrix gated MLP, tanh-GeLU gate (Gemma's gelu_pytorch_tanh) */
typedef enum {
#define X(e, n, gated) MODEL_ACT_##e,
    MODEL_ACT_LIST(X)
#undef X
    MODEL_ACT_COUNT
} ModelAct;

/* Where a layer's norms sit around its two sublayers (attention, MLP):
 * X(enum suffix, name, norms per sublayer). */
#define MODEL_NORM_LAYOUT_LIST(X)                                                              \
    X(PRE, "pre", 1)             /* on the sublayer's input (GPT-2, Llama) */                   \
    X(POST, "post", 1)           /* after the residual add, post-LN (BERT; only the bert family) */ \
    X(REORDERED, "reordered", 1) /* on the sublayer's output, before the residual add (OLMo 2) */ \
    X(SANDWICH, "sandwich", 2)   /* on its input and on its output (Gemma 2 and 3) */
typedef enum {
#define X(e, n, k) MODEL_NORM_LAYOUT_##e,
    MODEL_NORM_LAYOUT_LIST(X)
#undef X
    MODEL_NORM_LAYOUT_COUNT
} ModelNormLayout;

#define MODEL_POS_LIST(X) X(LEARNED, "learned") X(ROPE, "rope") X(ALIBI, "alibi")
typedef enum {
#define X(e, n) MODEL_POS_##e,
    MODEL_POS_LIST(X)
#undef X
    MODEL_POS_COUNT
} ModelPos;

typedef struct ModelSpec {
    char name[64];        /* "llama3-70b", or the file's base name */
    char source[256];     /* where the numbers come from: "HF meta-llama/Meta-Llama-3-70B config.json" */
    ModelArch arch;       /* family; decides module naming and defaults */

    int64_t layers;       /* L, transformer blocks, e.g. 80 */
    int64_t hidden;       /* H, model width, e.g. 8192 */
    int64_t heads;        /* A, query heads, e.g. 64 */
    int64_t kv_heads;     /* G, key/value heads (GQA/MQA), e.g. 8; = heads for MHA */
    int64_t head_dim;     /* D, per-head dim, e.g. 128 (A*D may differ from H: Qwen3) */
    int64_t ffn;          /* F, dense MLP intermediate, e.g. 28672 */
    int64_t vocab;        /* V, tokenizer vocabulary before padding, e.g. 128256 */
    int64_t vocab_divisible; /* Megatron --make-vocab-size-divisible-by, 128; padded to a multiple of this*TP */
    int64_t max_positions;/* context window / learned position table rows, e.g. 8192 */
    int64_t type_vocab;   /* BERT token-type embeddings, 2; 0 otherwise */

    ModelNorm norm;       /* LayerNorm (with bias) or RMSNorm (weight only) */
    double norm_eps;      /* 1e-5 */
    ModelNormLayout norm_layout; /* pre (default), post (BERT), reordered (OLMo 2), sandwich (Gemma 2/3) */
    ModelAct act;         /* GeLU / SwiGLU / squared ReLU / GeGLU */
    ModelPos pos;         /* learned / RoPE / ALiBi */
    double rotary_pct;    /* fraction of head dim rotated, 1.0 (NeoX 0.25) */
    double rope_theta;    /* RoPE base, 10000 (Llama-3 500000); informational, 0 = unknown */

    bool qkv_bias;        /* bias on the Q/K/V projection (GPT-2, BERT; Qwen2) */
    bool proj_bias;       /* bias on the attention output projection */
    bool mlp_bias;        /* bias on the MLP linears */
    bool qk_norm;         /* RMSNorm on q and k (Qwen3, Gemma 3: per head, D wide) */
    bool qk_norm_full;    /* with qk_norm: over all heads, A*D and G*D wide (OLMo 2) */
    bool tied_embeddings; /* LM head shares the word-embedding matrix */
    bool pooler;          /* BERT pooler (dense + tanh) */
    bool embed_norm;      /* LayerNorm right after the embeddings (BERT, BLOOM) */
    bool lm_head;         /* a vocabulary projection at the end (false for a bare BertModel) */

    /* Dropout probabilities in training (HF config keys in parentheses). A
     * probability of 0 runs no kernel and stores no mask (PyTorch's dropout
     * returns its input when p == 0). */
    double hidden_dropout; /* after attention, MLP and embeddings: 0.1 GPT-2/3, BERT, OPT (resid_pdrop, hidden_dropout[_prob], dropout); 0 Llama, BLOOM, NeoX-20B */
#define MODEL_DROPOUT_MAX 0.99 /* the largest dropout probability accepted */
    double attn_dropout;   /* on the S x S attention probabilities: 0.1 GPT-2/3, BERT; 0 OPT, BLOOM (attn_pdrop, attention[_probs]_dropout[_prob]) */

    /* Mixture of experts (experts == 0: dense). */
    int64_t experts;        /* E routed experts, e.g. 256 */
    int64_t topk;           /* K experts per token, e.g. 8 */
    int64_t moe_ffn;        /* intermediate size of one expert, e.g. 2048 */
    int64_t shared_experts; /* always-on experts per MoE layer, e.g. 1 */
    int64_t dense_layers;   /* leading dense layers before the first MoE layer, e.g. 3 */
    int64_t moe_layer_freq; /* every n-th layer (after dense_layers) is MoE, 1 */

    /* Multi-head latent attention (DeepSeek); q_lora_rank == 0 and
     * kv_lora_rank == 0 means ordinary attention. */
    int64_t q_lora_rank;    /* 1536 */
    int64_t kv_lora_rank;   /* 512 */
    int64_t qk_nope_dim;    /* 128 */
    int64_t qk_rope_dim;    /* 64 */
    int64_t v_head_dim;     /* 128 */
    int64_t mtp_layers;     /* multi-token-prediction modules trained beside the model (DeepSeek-V3:
                               1): each a transformer layer of the last layer's kind, a 2H->H
                               projection, two norms and another pass through the shared
                               embedding and output head, on the last pipeline stage */

    /* Sliding-window attention (GPT-OSS, Mistral v0.1): sliding_window > 0
     * keys per query on the windowed layers (each query attends to itself
     * and the window - 1 keys before it); full_attn_every n > 0 makes every
     * n-th layer (layer % n == n - 1) full attention, 0 windows them all.
     * GPT-OSS: 128 and 2 (sliding, full, sliding, ...). */
    int64_t sliding_window; /* 128; 0 = every layer full attention */
    int64_t full_attn_every;/* 2; 0 = every layer windowed */
    bool attn_sinks;        /* a learned logit per head in each softmax's denominator (GPT-OSS): A per layer */
    bool moe_bias;          /* biases on the router and on every expert's linears (GPT-OSS) */
    bool shared_gate;       /* a sigmoid gate Linear(H, 1) on the shared experts' output (Qwen2-MoE) */
} ModelSpec;

/* Parameter counts in elements. Tied weights counted once. */
typedef struct ModelCounts {
    int64_t total;          /* every parameter, e.g. 70553706496 for llama3-70b */
    int64_t embedding;      /* word (+ position, token-type) embeddings */
    int64_t lm_head;        /* untied output projection (0 when tied) */
    int64_t per_layer_dense;/* one dense transformer block */
    int64_t per_layer_moe;  /* one MoE block, all experts */
    int64_t active;         /* parameters touched per token (top-k experts) */
    int64_t non_embedding;  /* total - embedding - lm_head */
} ModelCounts;

const char *model_arch_name(ModelArch a);
/* Names used in preset files and JSON (the lists above); the parsers return
 * false on an unknown name; model_arch_parse also takes "neox". */
const char *model_norm_name(ModelNorm n);
const char *model_act_name(ModelAct a);
const char *model_pos_name(ModelPos p);
const char *model_norm_layout_name(ModelNormLayout l);
bool model_norm_layout_parse(const char *s, ModelNormLayout *out);
bool model_norm_parse(const char *s, ModelNorm *out);
bool model_act_parse(const char *s, ModelAct *out);
bool model_pos_parse(const char *s, ModelPos *out);
bool model_arch_parse(const char *s, ModelArch *out);
/* A gated MLP (SwiGLU, GeGLU): three matrices, F wide each. */
bool model_act_gated(ModelAct a);
/* Norms around each sublayer, H wide: 2 for a sandwich, else 1. */
int64_t model_sublayer_norms(const ModelSpec *m);
/* The layout puts a norm on each sublayer's output (reordered, sandwich). */
bool model_output_norms(const ModelSpec *m);
/* Framework whose module names the family usually carries: "megatron", "hf", "deepspeed". */
const char *model_arch_default_naming(ModelArch a);

/* Sensible defaults of a family (norm, activation, biases, tying). */
void model_defaults(ModelSpec *m, ModelArch arch);
/* Fill derived fields (head_dim = H/A, kv_heads = A, ffn = 4H or 8H/3 rounded,
 * moe_layer_freq = 1, vocab_divisible = 128). Idempotent. */
void model_finalize(ModelSpec *m);
/* Check the invariants above; names the field and the rule. TS_ERR_INPUT. */
TsStatus model_validate(const ModelSpec *m, TsError *err);
/* The largest dimensions model_validate accepts (the CLI's model flags take
 * the same): far beyond any model, and every int64 product of them (parameter
 * counts, FLOPs inputs) stays below 2^63. */
#define MODEL_MAX_WIDTH 10000000        /* hidden, ffn, moe_ffn, LoRA ranks */
#define MODEL_MAX_HEADS 100000          /* heads, kv heads, head dims, experts, shared experts */
#define MODEL_MAX_LAYERS 1000000
#define MODEL_MAX_VOCAB 100000000       /* vocab, type vocab */
#define MODEL_MAX_POSITIONS 1000000000

bool model_layer_is_moe(const ModelSpec *m, int64_t layer);
/* Sliding-window layers: whether `layer` attends within the window, how many do. */
bool model_layer_windowed(const ModelSpec *m, int64_t layer);
int64_t model_windowed_layer_count(const ModelSpec *m);
/* Mean keys a query attends to at sequence length S in one layer: causal,
 * S/2 on a full layer and w - w^2/(2S) on a windowed one (w = min(window,
 * S): the S*w - w^2/2 pairs of the band); not causal (the full-square
 * convention), S and w. model_attn_keys_mean averages over the layers. */
double model_attn_keys(const ModelSpec *m, int64_t layer, int64_t S, bool causal);
/* The mean keys a query of S attends to causally within a window of w (S w
 * - w^2/2 pairs over S queries; S/2 where w >= S). */
double model_band_keys(double S, double w);
double model_attn_keys_mean(const ModelSpec *m, int64_t S, bool causal);
int64_t model_moe_layer_count(const ModelSpec *m);
/* Vocabulary padded like Megatron: multiple of vocab_divisible * tp. */
int64_t model_padded_vocab(const ModelSpec *m, int64_t tp);
void model_count_params(const ModelSpec *m, ModelCounts *out);

/* ---- sources --------------------------------------------------------------- */

/* Which fields a source determined; flags may fill the rest. */
typedef struct ModelKnown {
    bool layers, hidden, heads, kv_heads, head_dim, ffn, vocab, max_positions;
    bool experts_missing; /* the source shows MoE layers but not how many experts (--experts) */
} ModelKnown;

/* Command-line overrides: a field < 0 (or arch_set false) means "not given". */
typedef struct ModelOverrides {
    bool arch_set;
    ModelArch arch;
    int64_t layers, hidden, heads, kv_heads, head_dim, ffn, vocab, max_positions;
    int64_t experts, topk, moe_ffn, shared_experts, dense_layers, mtp_layers;
    double hidden_dropout, attn_dropout; /* probabilities; -1 = not given */
} ModelOverrides;
void model_overrides_init(ModelOverrides *o);

/* Load `source`: a preset name, a path to a preset/HF config.json, a module
 * tree dump, or a parameter table (sniffed from content). NULL source with
 * ov->arch_set builds from flags. Then applies overrides, finalizes and
 * validates. On a missing dimension the error names the flag to give. */
TsStatus model_load(const char *source, const ModelOverrides *ov, ModelSpec *out, TsError *err);

TsStatus model_preset(const char *name, ModelSpec *out, TsError *err);
/* Names of all presets, sorted; returns count (<= cap). */
int model_preset_names(char names[][64], int cap);
/* Preset names close to `name` (edit distance <= 3, or sharing its prefix),
 * best first, for "did you mean" hints. Returns count (<= cap). */
int model_preset_similar(const char *name, char out[][64], int cap);
/* Supported HF model_type values, comma separated: "llama, mistral, ...". */
const char *model_hf_types(void);

TsStatus model_parse_hf_config(const char *path, ModelSpec *out, ModelKnown *known, TsError *err);
TsStatus model_parse_preset_json(const char *path, ModelSpec *out, ModelKnown *known, TsError *err);
TsStatus model_parse_module_tree(const char *path, const char *text, ModelSpec *out,
                                 ModelKnown *known, TsError *err);
TsStatus model_parse_param_table(const char *path, const char *text, ModelSpec *out,
                                 ModelKnown *known, int64_t *tp_out, TsError *err);

/* Write the spec as a JSON object (no trailing newline), keys in a fixed
 * order. The object is a valid preset file (format "trainsim-model",
 * version 1, see docs/models.md): model_parse_preset_json reads it back. */
void model_to_json(const ModelSpec *m, TsBuf *out);
#define MODEL_FORMAT_NAME "trainsim-model"
#define MODEL_FORMAT_VERSION 1

#endif
