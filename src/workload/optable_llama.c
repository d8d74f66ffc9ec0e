/* The op table of the Llama family (Llama, Mistral, Qwen2, Qwen3) and of
 * its MoE models (Mixtral, Qwen3-MoE): the fx nodes of HuggingFace's eager
 * forward (transformers 4.56: modeling_llama.py, modeling_mixtral.py,
 * modeling_qwen3(_moe).py, integrations/sdpa_attention.py) for a training
 * step: attn_implementation "sdpa" (the default), no KV cache, no padding.
 *
 *   prologue  model_embed_tokens, arange (cache_position), unsqueeze
 *             (position_ids), LlamaRotaryEmbedding traced through (inv_freq @
 *             positions in fp32 under no_grad, cat, cos/sin, cast)
 *   block     input_layernorm as LlamaRMSNorm's pieces (to fp32, pow, mean,
 *             add eps, rsqrt, mul, to, mul weight); q_proj, k_proj, v_proj
 *             (k/v: G*D wide), view + transpose, q_norm/k_norm (Qwen3);
 *             apply_rotary_pos_emb (mul, rotate_half's slices, neg, cat, mul,
 *             add); repeat_kv (expand + reshape) when G < A: under torch.fx
 *             sdpa_attention_forward expands K/V itself (use_gqa_in_sdpa is
 *             false for a Proxy); scaled_dot_product_attention (causal: no mask
 *             is built without padding); transpose + contiguous; o_proj;
 *             residual add; post_attention_layernorm; gate_proj, act_fn
 *             (nn.SiLU, a leaf module), up_proj, mul, down_proj; residual add
 *   MoE       the gate linear, softmax in fp32, topk, renormalisation (sum,
 *             itruediv), one_hot + permute, the hit experts (sum, greater,
 *             nonzero), then per expert the eager loop: the mask row, where,
 *             the token gather, the expert's three GEMMs on its T*K/E tokens
 *             (balanced routing: every expert is hit), the routing-weight
 *             gather, mul, index_add_; shared experts (ModelSpec's
 *             shared_experts, named like graph.h's HF builder) added after
 *   epilogue  model_norm, the logits slice, lm_head
 *
 * A node's name is torch.fx's (optable_int.h); shape/dtype/device reads and
 * integer arithmetic on sizes have no row but take their names. The rows of
 * the causal-mask helpers are absent: create_causal_mask returns no mask
 * for SDPA without padding (is_causal). Mixtral's jitter noise is 0; the
 * top-k weights are renormalised (Mixtral always; Qwen3-MoE's released
 * checkpoints set norm_topk_prob). The norm is RMSNorm whatever the spec
 * says: it is the only norm these HF classes have.
 *
 * Legend: B micro-batch, S seq, H hidden, A heads, G kv heads, D head dim,
 * F ffn, V vocab, E experts, K top-k, T = B*S tokens; per-rank widths are
 * divided by tp (A/tp and G/tp heads, F/tp, V/tp). */
#include "optable_int.h"

#include <stdio.h>
#include <string.h>

typedef struct Ll {
    OtGen *g;
    double B, S, T, H, A, G, D, V, tp;
    bool glu;
} Ll;

/* LlamaRMSNorm traced through over rows x width (Qwen3's q_norm/k_norm: rows
 * of one head). Its weight is the get_attr node <mod>_weight. */
static void rmsnorm(OtGen *g, const char *mod_path, double rows, double width)
{
    char mod[160], w[176];
    snprintf(mod, sizeof mod, "%s", mod_path);
    snprintf(w, sizeof w, "%s_weight", mod);
    double n = rows * width;
    wl_ot_host(g, "getattr");                                      /* input_dtype = x.dtype */
    OT(g, wl_ot_fn(g, "to"), R_CAST, n);                           /* x.to(torch.float32) */
    OT(g, wl_ot_fn(g, "pow"), R_VEC, n, 2, 0, 0, OT_FP32);         /* x.pow(2) */
    OT(g, wl_ot_fn(g, "mean"), R_MEM, n + rows, 0, 0, 0, OT_FP32); /* .mean(-1, keepdim=True) */
    OT(g, wl_ot_fn(g, "add"), R_VEC, rows, 2, 0, 0, OT_FP32);      /* + variance_epsilon */
    OT(g, wl_ot_fn(g, "rsqrt"), R_VEC, rows, 2, 0, 0, OT_FP32);
    OT(g, wl_ot_fn(g, "mul"), R_VEC, n, 2, 0, 0, OT_FP32);         /* x * rstd (broadcast) */
    wl_ot_grad(g, w, width);                                       /* self.weight */
    OT(g, wl_ot_fn(g, "to"), R_CAST, n);                           /* .to(input_dtype) */
    OT(g, wl_ot_fn(g, "mul"), R_VEC, n, 2);                        /* weight * x (broadcast) */
}

/* An nn.Linear call: its DP gradient row (params elements; none when < 0:
 * a tied weight's gradient is its embedding's), then the GEMM of M tokens,
 * in -> out (per-rank widths). */
static void linear(OtGen *g, const char *mod_path, double M, double in, double out, double params)
{
    char mod[160];
    snprintf(mod, sizeof mod, "%s", mod_path);
    if (params >= 0) wl_ot_grad(g, mod, params);
    OT(g, mod, R_GEMM, M, out, in);
}

/* q * cos + rotate_half(q) * sin over n elements of q (or k). */
static void rope(OtGen *g, double n)
{
    OT(g, wl_ot_fn(g, "mul"), R_VEC, n, 2); /* q * cos: cos broadcast over batch and heads */
    for (int half = 0; half < 2; half++) {  /* x[..., :d/2], x[..., d/2:] */
        wl_ot_host(g, "getattr");
        wl_ot_host(g, "getitem");
        wl_ot_host(g, "floordiv");
        OT(g, wl_ot_fn(g, "getitem"), R_VIEW);
    }
    OT(g, wl_ot_fn(g, "neg"), R_VEC, n / 2, 2);
    OT(g, wl_ot_fn(g, "cat"), R_MEM, 2 * n); /* (-x2, x1): read both halves, write n */
    OT(g, wl_ot_fn(g, "mul"), R_VEC, n, 2);  /* * sin */
    OT(g, wl_ot_fn(g, "add"), R_VEC, n, 3);
}

/* repeat_kv: the shape unpacked, then for G < A x[:, :, None].expand(...)
 * .reshape(B, A, S, D), a copy (reads the G heads, writes A). */
static void repeat_kv(Ll *c)
{
    OtGen *g = c->g;
    wl_ot_host(g, "getattr");
    for (int i = 0; i < 4; i++) wl_ot_host(g, "getitem");
    if (c->G >= c->A) return;
    OT(g, wl_ot_fn(g, "getitem"), R_VIEW);
    OT(g, wl_ot_fn(g, "expand"), R_VIEW);
    OT(g, wl_ot_fn(g, "reshape"), R_MEM, c->B * c->S * c->D * (c->G + c->A));
}

static void attention(Ll *c, const char *pre)
{
    OtGen *g = c->g;
    const ModelSpec *m = g->m;
    double T = c->T, H = c->H, A = c->A, G = c->G, D = c->D;
    double Af = (double)m->heads, Gf = (double)m->kv_heads;
    wl_ot_host(g, "getattr"); /* input_shape = x.shape[:-1] */
    wl_ot_host(g, "getitem");
    wl_ot_host(g, "getitem"); /* hidden_shape = (*input_shape, -1, head_dim) */
    wl_ot_host(g, "getitem");
    static const char *const proj[3] = {"q_proj", "k_proj", "v_proj"}, *const norm[2] = {"q_norm", "k_norm"};
    for (int i = 0; i < 3; i++) {
        double heads = i == 0 ? A : G, all = i == 0 ? Af : Gf;
        linear(g, wl_ot_mod(g, "%s_self_attn_%s", pre, proj[i]), T, H, heads * D,
               H * all * D + (m->qkv_bias ? all * D : 0));
        OT(g, wl_ot_fn(g, "view"), R_VIEW);
        if (m->qk_norm && i < 2) rmsnorm(g, wl_ot_mod(g, "%s_self_attn_%s", pre, norm[i]), T * heads, D);
        OT(g, wl_ot_fn(g, "transpose"), R_VIEW);
    }
    if (m->pos == MODEL_POS_ROPE) { /* apply_rotary_pos_emb */
        OT(g, wl_ot_fn(g, "unsqueeze"), R_VIEW);
        OT(g, wl_ot_fn(g, "unsqueeze"), R_VIEW);
        rope(g, T * A * D);
        rope(g, T * G * D);
    }
    /* sdpa_attention_forward */
    repeat_kv(c);
    repeat_kv(c);
    wl_ot_host(g, "getattr"); /* is_causal = query.shape[2] > 1 and ... */
    wl_ot_host(g, "getitem");
    wl_ot_host(g, "gt");
    OT(g, wl_ot_fn(g, "scaled_dot_product_attention"), R_ATTN, c->B, A, c->S, D);
    OT(g, wl_ot_fn(g, "transpose"), R_VIEW);
    OT(g, wl_ot_fn(g, "contiguous"), R_MEM, 2 * T * A * D);
    wl_ot_host(g, "getitem"); /* attn_output.reshape(*input_shape, -1).contiguous() */
    wl_ot_host(g, "getitem");
    OT(g, wl_ot_fn(g, "reshape"), R_VIEW);
    OT(g, wl_ot_fn(g, "contiguous"), R_VIEW); /* already contiguous */
    linear(g, wl_ot_mod(g, "%s_self_attn_o_proj", pre), T, A * D, H, Af * D * H + (m->proj_bias ? H : 0));
    wl_ot_tp_allreduce(g, T * H);
}

/* A gated MLP (LlamaMLP, Qwen3MoeMLP, MixtralBlockSparseTop2MLP: w1 gate,
 * w3 up, w2 down) on M tokens, ffn F per rank of the F_all in the model;
 * without SwiGLU up_proj, GELUActivation (traced through: gelu), down_proj. */
static void mlp(Ll *c, const char *mod_path, double M, double F, double F_all, bool bias, bool mixtral)
{
    OtGen *g = c->g;
    double H = c->H;
    char mod[160];
    snprintf(mod, sizeof mod, "%s", mod_path);
    const char *gp = mixtral ? "w1" : "gate_proj", *up = mixtral ? "w3" : "up_proj", *dn = mixtral ? "w2" : "down_proj";
    double in_params = H * F_all + (bias ? F_all : 0), out_params = F_all * H + (bias ? H : 0);
    if (c->glu) {
        linear(g, wl_ot_mod(g, "%s_%s", mod, gp), M, H, F, in_params);
        OT(g, wl_ot_mod(g, "%s_act_fn", mod), R_ACT, M * F);
        linear(g, wl_ot_mod(g, "%s_%s", mod, up), M, H, F, in_params);
        OT(g, wl_ot_fn(g, "mul"), R_VEC, M * F, 3);
    } else {
        linear(g, wl_ot_mod(g, "%s_%s", mod, up), M, H, F, in_params);
        OT(g, wl_ot_fn(g, "gelu"), R_ACT, M * F);
    }
    linear(g, wl_ot_mod(g, "%s_%s", mod, dn), M, F, H, out_params);
}

static void moe(Ll *c, const char *pre)
{
    OtGen *g = c->g;
    const ModelSpec *m = g->m;
    bool mixtral = m->arch == MODEL_ARCH_MIXTRAL;
    double T = c->T, H = c->H, E = (double)m->experts, K = (double)m->topk, Fe = (double)m->moe_ffn;
    double ne = T * K / E; /* tokens per expert, balanced */
    char mod[96];
    snprintf(mod, sizeof mod, "%s_%s", pre, mixtral ? "block_sparse_moe" : "mlp");
    wl_ot_host(g, "getattr"); /* batch_size, sequence_length, hidden_dim = x.shape */
    for (int i = 0; i < 3; i++) wl_ot_host(g, "getitem");
    OT(g, wl_ot_fn(g, "view"), R_VIEW); /* x.view(-1, hidden_dim) */
    linear(g, wl_ot_mod(g, "%s_gate", mod), T, H, E, H * E); /* router logits, replicated under TP */
    OT(g, wl_ot_fn(g, "softmax"), R_SOFTMAX, T * E, 0, 0, 0, OT_FP32); /* dtype=torch.float */
    OT(g, wl_ot_fn(g, "topk"), R_MEM, T * E + T * K, 8 * T * K, 0, 0, OT_FP32);
    OT(g, wl_ot_fn(g, "getitem"), R_VIEW); /* routing_weights, selected_experts */
    OT(g, wl_ot_fn(g, "getitem"), R_VIEW);
    OT(g, wl_ot_fn(g, "sum"), R_MEM, T * K + T, 0, 0, 0, OT_FP32); /* /= sum(dim=-1, keepdim=True) */
    OT(g, wl_ot_fn(g, "itruediv"), R_VEC, T * K, 2, 0, 0, OT_FP32);
    wl_ot_host(g, "getattr");
    OT(g, wl_ot_fn(g, "to"), R_CAST, T * K);
    wl_ot_host(g, "mul"); /* torch.zeros((batch_size * sequence_length, hidden_dim), dtype=, device=) */
    wl_ot_host(g, "getattr");
    wl_ot_host(g, "getattr");
    OT(g, wl_ot_fn(g, "zeros"), R_MEM, T * H, 0, 0, 0, OT_NOGRAD);
    /* expert_mask = one_hot(selected_experts, E).permute(2, 1, 0): int64 (E, K, T) */
    OT(g, wl_ot_fn(g, "one_hot"), R_MEM, 0, 8 * (T * K + T * K * E), 0, 0, OT_NOGRAD);
    OT(g, wl_ot_fn(g, "permute"), R_VIEW);
    /* expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero() */
    OT(g, wl_ot_fn(g, "sum"), R_MEM, 0, 8 * (E * K * T + E), 0, 0, OT_NOGRAD);
    OT(g, wl_ot_fn(g, "greater"), R_MEM, 0, 8 * E + E, 0, 0, OT_NOGRAD);
    OT(g, wl_ot_fn(g, "nonzero"), R_MEM, 0, E + 8 * E, 0, 0, OT_NOGRAD);
    double F = Fe / c->tp; /* experts split like the dense MLP (etp = tp) */
    for (int64_t e = 0; e < m->experts && g->ok; e++) {
        /* idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0)) */
        OT(g, wl_ot_fn(g, "getitem"), R_MEM, 0, 2 * 8 * K * T, 0, 0, OT_NOGRAD); /* tensor index: a copy */
        OT(g, wl_ot_fn(g, "squeeze"), R_VIEW);
        OT(g, wl_ot_fn(g, "where"), R_MEM, 0, 8 * K * T + 2 * 8 * ne, 0, 0, OT_NOGRAD);
        OT(g, wl_ot_fn(g, "getitem"), R_VIEW);
        OT(g, wl_ot_fn(g, "getitem"), R_VIEW);
        /* current_state = hidden_states[None, top_x].reshape(-1, hidden_dim): a gather */
        OT(g, wl_ot_fn(g, "getitem"), R_MEM, 2 * ne * H, 8 * ne);
        OT(g, wl_ot_fn(g, "reshape"), R_VIEW);
        char ex[128];
        snprintf(ex, sizeof ex, "%s_experts_%lld", mod, (long long)e);
        mlp(c, ex, ne, F, Fe, false, mixtral);
        /* * routing_weights[top_x, idx, None] */
        OT(g, wl_ot_fn(g, "getitem"), R_MEM, 2 * ne, 16 * ne);
        OT(g, wl_ot_fn(g, "mul"), R_VEC, ne * H, 2);
        wl_ot_host(g, "getattr");
        OT(g, wl_ot_fn(g, "to"), R_VIEW); /* already the activation dtype */
        /* final_hidden_states.index_add_(0, top_x, ...): read-modify-write of ne rows */
        OT(g, wl_ot_fn(g, "index_add_"), R_MEM, 3 * ne * H, 8 * ne);
    }
    wl_ot_tp_allreduce(g, T * H);
    OT(g, wl_ot_fn(g, "reshape"), R_VIEW);
    if (m->shared_experts > 0) { /* DeepSeek's form: x + shared_experts(residual) */
        double Fs = Fe * (double)m->shared_experts;
        mlp(c, wl_ot_mod(g, "%s_shared_experts", mod), T, Fs / c->tp, Fs, m->mlp_bias, false);
        wl_ot_tp_allreduce(g, T * H);
        OT(g, wl_ot_fn(g, "add"), R_VEC, T * H, 3);
    }
}

/* LlamaRotaryEmbedding.forward under torch.no_grad: cos/sin of (1, S, D). */
static void rotary(Ll *c)
{
    OtGen *g = c->g;
    double S = c->S, D = c->D;
    unsigned ng = OT_NOGRAD, f32 = OT_FP32 | OT_NOGRAD;
    OT(g, wl_ot_fn(g, "getitem"), R_VIEW); /* self.inv_freq[None, :, None].float() */
    OT(g, wl_ot_fn(g, "float"), R_VIEW);
    wl_ot_host(g, "getattr");              /* .expand(position_ids.shape[0], -1, 1) */
    wl_ot_host(g, "getitem");
    OT(g, wl_ot_fn(g, "expand"), R_VIEW);
    wl_ot_host(g, "getattr");              /* .to(x.device) */
    OT(g, wl_ot_fn(g, "to"), R_VIEW);
    OT(g, wl_ot_fn(g, "getitem"), R_VIEW); /* position_ids[:, None, :].float(): int64 -> fp32 */
    OT(g, wl_ot_fn(g, "float"), R_MEM, 0, 12 * S, 0, 0, ng);
    wl_ot_host(g, "getattr"); /* x.device.type */
    wl_ot_host(g, "getattr");
    OT(g, wl_ot_fn(g, "float"), R_VIEW);
    OT(g, wl_ot_fn(g, "float"), R_VIEW);
    OT(g, wl_ot_fn(g, "matmul"), R_BMM, 1, D / 2, S, 1, f32); /* (1, D/2, 1) @ (1, 1, S) */
    OT(g, wl_ot_fn(g, "transpose"), R_VIEW);
    OT(g, wl_ot_fn(g, "cat"), R_MEM, 2 * S * D, 0, 0, 0, f32); /* (freqs, freqs) */
    OT(g, wl_ot_fn(g, "cos"), R_VEC, S * D, 2, 0, 0, f32);
    OT(g, wl_ot_fn(g, "mul"), R_VEC, S * D, 2, 0, 0, f32); /* * attention_scaling */
    OT(g, wl_ot_fn(g, "sin"), R_VEC, S * D, 2, 0, 0, f32);
    OT(g, wl_ot_fn(g, "mul"), R_VEC, S * D, 2, 0, 0, f32);
    wl_ot_host(g, "getattr");
    OT(g, wl_ot_fn(g, "to"), R_CAST, S * D, 0, 0, 0, ng);
    wl_ot_host(g, "getattr");
    OT(g, wl_ot_fn(g, "to"), R_CAST, S * D, 0, 0, 0, ng);
}

void wl_ot_llama(OtGen *g)
{
    const ModelSpec *m = g->m;
    const ParallelPlan *p = g->p;
    Ll c = {.g = g, .B = (double)p->micro_batch, .S = (double)p->seq, .H = (double)m->hidden,
            .A = (double)m->heads / g->tp, .G = (double)m->kv_heads / g->tp, .D = (double)m->head_dim,
            .V = (double)m->vocab, .tp = g->tp, .glu = model_act_gated(m->act)};
    c.T = c.B * c.S;
    double T = c.T, H = c.H;
    /* LlamaModel.forward */
    wl_ot_grad(g, "model_embed_tokens", c.V * H);
    OT(g, "model_embed_tokens", R_EMB, T, H);
    wl_ot_tp_allreduce(g, T * H); /* vocab-parallel embedding: partial rows */
    wl_ot_host(g, "getattr");     /* arange(0, 0 + x.shape[1], device=x.device) */
    wl_ot_host(g, "getitem");
    wl_ot_host(g, "add");
    wl_ot_host(g, "getattr");
    OT(g, wl_ot_fn(g, "arange"), R_MEM, 0, 8 * c.S, 0, 0, OT_NOGRAD); /* cache_position */
    OT(g, wl_ot_fn(g, "unsqueeze"), R_VIEW);                          /* position_ids */
    if (m->pos == MODEL_POS_ROPE) rotary(&c);
    OtFx pro = g->fx;
    for (int64_t l = 0; l < m->layers && g->ok; l++) {
        wl_ot_layer(g, &pro, l);
        char pre[48];
        snprintf(pre, sizeof pre, "model_layers_%lld", (long long)l);
        rmsnorm(g, wl_ot_mod(g, "%s_input_layernorm", pre), T, H);
        attention(&c, pre);
        OT(g, wl_ot_fn(g, "add"), R_VEC, T * H, 3); /* residual */
        rmsnorm(g, wl_ot_mod(g, "%s_post_attention_layernorm", pre), T, H);
        if (model_layer_is_moe(m, l)) {
            moe(&c, pre);
        } else {
            mlp(&c, wl_ot_mod(g, "%s_mlp", pre), T, (double)m->ffn / g->tp, (double)m->ffn, m->mlp_bias, false);
            wl_ot_tp_allreduce(g, T * H);
        }
        OT(g, wl_ot_fn(g, "add"), R_VEC, T * H, 3); /* residual */
        wl_ot_pp(g, l, T * H);
    }
    g->sfx[0] = 0;
    rmsnorm(g, "model_norm", T, H);
    /* LlamaForCausalLM: self.lm_head(hidden_states[:, slice_indices, :]) */
    OT(g, wl_ot_fn(g, "getitem"), R_VIEW);
    linear(g, "lm_head", T, H, c.V / g->tp, m->tied_embeddings ? -1 : H * c.V);
}
