/* template_hf.c — HuggingFace transformers' own modules in eager mode
 * (--framework hf; transformers 5, PyTorch eager, SDPA attention; eager
 * attention where transformers has no SDPA path: GPT-OSS's sinks), op by op
 * as autograd runs them: GPT-2 (Conv1D addmm with bias, gelu_new as Python
 * arithmetic), BERT (separate query / key / value, post-LN, erf GELU, the
 * masked-LM head), Llama / Qwen / Mixtral (separate projections, eager
 * RMSNorm and RoPE, SiLU * up, grouped-GEMM experts) with Gemma's sandwich
 * and OLMo 2's reordered norms, Phi-3's fused qkv_proj and gate_up_proj, and
 * HF's loss (on fp32 logits for causal LMs).
 *
 * Each op (or chain of ops) carries bytes per element read + written
 * forward and by its backward kernels, the bytes autograd keeps for the
 * backward (new tensors only: a tensor kept by two ops counts once), the
 * ATen calls it makes forward and backward (the host dispatches each one;
 * cost.h: a small model at a small batch waits on Python) and, per block,
 * the nn.Module calls of its forward (PartBlockT.modules).
 *
 * Precision (ParallelPlan.precision): under amp (fp32 parameters,
 * torch.autocast to bf16) the embedding output and so the residual stream
 * are fp32, LayerNorm, pow and softmax run in fp32 (log_softmax as hf_loss
 * says), every linear casts its fp32 input (once per linear, even when two
 * linears read the same tensor) and its weight (once per forward; the bf16
 * copy is kept for the backward, the weight gradient is cast back to fp32);
 * otherwise everything is 16-bit. Elementwise ops take the wider of their
 * inputs (type promotion).
 *
 * Legend (per element of the tensor the op runs over): a = 2 (16-bit), r =
 * residual stream bytes (4 under amp, else 2). */
#include "template_int.h"

#include <math.h>
#include <string.h>

typedef struct Hx {
    const Tx *x;
    double r;       /* residual stream / fp32-autocast outputs: 4 under amp, else 2 */
    bool amp;
    double e;       /* elements of one [T, H] tensor on this rank */
    double T;       /* tokens */
} Hx;

static Hx hx_of(const Tx *x)
{
    bool amp = x->p->precision == PLAN_PRECISION_AMP;
    return (Hx){.x = x, .amp = amp, .r = amp ? 4.0 : x->ab, .e = (double)x->T * (double)x->m->hidden,
                .T = (double)x->T};
}

/* An eager op (or a chain) over `el` elements: bytes per element forward /
 * backward, kept for the backward, kernels forward / backward. */
static PartKernel *op(PartBlockT *b, const char *name, double el, double fb, double bb, double sv, int lf, int lb)
{
    PartKernel *k = tpl_mem(b, name, fb * el, bb * el, 0);
    k->saved_bytes = sv * el;
    k->launches[0] = (int16_t)lf;
    k->launches[1] = (int16_t)lb;
    return k;
}

/* nn.Linear / Conv1D: (T x K) @ (K x N); its bias gradient a reduction over
 * the output gradient. */
static PartKernel *linear(PartBlockT *b, const char *name, const Hx *h, int64_t N, int64_t K, bool bias)
{
    b->modules++;
    PartKernel *k = tpl_gemm(b, name, 1, h->x->T, N, K);
    k->launches[0] = 1;
    k->launches[1] = (int16_t)(bias ? 3 : 2);
    return k;
}

static void bias_grads(PartBlockT *b, const Hx *h, double out_width, int n)
{
    if (n > 0) op(b, "bias_grad", h->T * out_width, 0, 2.0, 0, 0, 0);
}

/* The input of `n` linears and `plain` other readers (no autocast: MoE
 * experts under amp) of one tensor of `el` elements (bytes per element
 * `in`): under amp each linear casts it to bf16 and keeps its cast;
 * otherwise the tensor itself is kept once. Backward: the casts back and
 * the gradients of all the readers summed. */
static void tensor_readers(PartBlockT *b, const char *name, double el, double in, int n, int plain)
{
    int r = n + plain;
    if (in > 2.0)
        op(b, name, el, n * (in + 2.0), n * (in + 2.0) + (r - 1) * 3.0 * in, n * 2.0, n, n + r - 1)->flags |=
            PART_KF_INNER;
    else
        op(b, name, el, 0, (r - 1) * 6.0, 2.0, 0, r - 1);
}

/* The input of `n` linears (tensor_readers) */
static void linear_inputs(PartBlockT *b, const char *name, double el, double in, int n)
{
    tensor_readers(b, name, el, in, n, 0);
}

/* amp: the block's `n` parameter tensors (weights and biases) cast to bf16
 * once per forward, a cast each (kept for the backward), their gradients
 * cast back to fp32. */
static void weight_casts(PartBlockT *b, const Hx *h, double params, int n)
{
    if (h->amp && params > 0) op(b, "weight_cast", params, 6.0, 6.0, 2.0, n, n)->flags |= PART_KF_INNER;
}

/* A norm over el elements whose input has `in` bytes per element.
 * LayerNorm: PyTorch's fused kernel over rows of the hidden size (amp: fp32
 * in and out; PART_KF_ROWNORM), the input kept (counted where it was made).
 * RMSNorm: the eager module (to fp32, pow, mean, rsqrt, mul, to the input
 * dtype, * weight): 16-bit input 36 B forward (keeps the fp32 copy and the
 * normalised 16-bit tensor), fp32 input 28 B (keeps the normalised tensor);
 * backward about twice, in 16 ATen calls (8 mul, 2 pow, 2 sum, div, add,
 * the 2 casts back; 14 with an fp32 input, whose casts are no-ops).
 * LayerNorm's backward is one call (native_layer_norm_backward) of two
 * kernels; what the host dispatches is the call. Returns the output bytes. */
static double norm(PartBlockT *b, const Hx *h, const char *name, double el, double in)
{
    b->modules++;
    if (h->x->m->norm == MODEL_NORM_LAYERNORM) {
        double out = h->amp ? 4.0 : in;
        PartKernel *k = op(b, name, el, in + out, 2.0 * out + 3.0 * in, 0, 1, 1);
        k->flags |= PART_KF_NORM | PART_KF_ROWNORM;
        k->elems[0] = k->elems[1] = el / (double)h->x->m->hidden;
        return out;
    }
    PartKernel *k = in > 2.0 ? op(b, name, el, 28.0, 68.0, 4.0, 6, 14) : op(b, name, el, 36.0, 72.0, 6.0, 8, 16);
    k->flags |= PART_KF_NORM;
    return h->amp ? 4.0 : in;
}

/* Dropout over el elements of eb bytes (p > 0): the mask kept, 1 B. */
static void dropout(PartBlockT *b, const char *name, double el, double eb, double p)
{
    if (!(p > 0)) return;
    b->modules++;
    op(b, name, el, 2.0 * eb + 1.0, 2.0 * eb + 1.0, 1.0, 1, 1);
}

/* residual + x (x 16-bit): the new stream, kept for the next norm; the
 * gradient cast for the 16-bit branch (amp) and the stream's two gradients
 * summed. */
static void residual(PartBlockT *b, const Hx *h)
{
    double r = h->r;
    op(b, "residual", h->e, r + 2.0 + r, (r > 2.0 ? 6.0 : 0) + 3.0 * r, r, 1, r > 2.0 ? 2 : 1);
}

/* The attention core: PyTorch's SDPA, causal for decoders, on its default
 * backend (cuDNN attention on Hopper, with or without dropout on the
 * probabilities: torch.profiler of GPT-2 and BERT steps, PyTorch 2.11). It
 * keeps its output and log-sum-exp (its inputs are kept by the ops that made
 * them). Its backward is one ATen call (_cudnn_attention_backward). */
static void sdpa(PartBlockT *b, const Hx *h, bool causal)
{
    const Tx *x = h->x;
    const ModelSpec *m = x->m;
    PartKernel *k = tpl_add(b, "sdpa", PART_K_ATTN, PART_KP_CORE);
    k->batch = x->B, k->m = m->heads, k->n = k->k = x->S, k->d = m->head_dim, k->causal = causal;
    k->drop = m->attn_dropout; /* SDPA's dropout_p in training */
    double fl = 2.0 * (double)x->B * (double)m->heads * (double)x->S * (double)x->S * (double)m->head_dim;
    if (!causal) fl *= 2.0;
    k->flops[0] = fl, k->flops[1] = 2.5 * fl;
    k->launches[0] = 1, k->launches[1] = 1;
    k->saved_bytes = h->T * (double)(m->heads * m->head_dim) * 2.0 + h->T * (double)m->heads * 4.0;
}

/* An eager op over the score tensor whose rows PyTorch walks element by
 * element (odd-length or strided rows: PART_KF_GENERIC at the GPU's
 * generic rate), forward over fe elements, backward over be. Returns it. */
static PartKernel *scores_op(PartBlockT *b, const char *name, double fe, double be, double fb, double bb, double sv,
                             int lf, int lb)
{
    double el = fe > be ? fe : be;
    PartKernel *k = op(b, name, el, fe > 0 ? fb * fe / el : 0, be > 0 ? bb * be / el : 0, sv * fe / el, lf, lb);
    k->flags |= PART_KF_GENERIC;
    k->elems[0] = fe, k->elems[1] = be;
    return k;
}

/* PyTorch's cat writing rows of S + 1 16-bit elements (not 16-byte
 * aligned, one input a single column) and its softmax forward over such rows
 * run below the generic elementwise rate, bound by their index arithmetic
 * alike on both GPUs: torch.profiler of the 1 x 4096 GPT-OSS step
 * (bench/data/gpu/gptoss_hf_2026-11-27k_{h200,h100}.jsonl) times the cat at
 * 0.166 / 0.168 G elements per ms and the softmax at 0.235 / 0.234 on the
 * H200 / H100, against their generic 0.37 / 0.34: 2.2 / 2.0x and 1.57 /
 * 1.45x the time an element. The softmax's backward runs at the generic
 * rate (0.35 / 0.32). */
#define HF_ODD_ROW_CAT 2.1
#define HF_ODD_ROW_SOFTMAX 1.5

/* GPT-OSS's attention as transformers runs it: no SDPA path for its learned
 * sinks, so eager_attention_forward (modeling_gpt_oss.py) materialises the
 * scores of every layer, windowed or not (the window is a mask): K and V
 * repeated to the query heads (repeat_kv), Q K^T (bmm), x scaling, + the
 * mask, the sinks concatenated as a last column (rows of S + 1), minus the
 * rows' max, softmax, the slice without the sink for P V (bmm; a view: its
 * rows S + 1 apart are a leading dimension cuBLAS takes, and matmul folds
 * the batch and heads without a copy: cuBLAS runs it on its align1 kernel,
 * cutlass_75_tensorop_bf16_s1688gemm_bf16_128x128_nn_align1, 1.71 ms a
 * layer at 1 x 4096 on both GPUs, twice the aligned bmms' 0.89 (torch.profiler,
 * bench/data/gpu/gptoss_hf_2026-11-27k_{h100,h200}.jsonl), costed on the
 * 2-byte-aligned path (PART_KF_ODD_LDA; dP and dV run aligned kernels),
 * the output made contiguous. The ops on the S + 1 wide or sliced tensors,
 * and the mask's add that broadcasts over the heads, walk PyTorch's generic
 * kernels (scores_op): torch.profiler of the 2-layer GPT-OSS-20B step
 * (bench/data/gpu/gptoss_hf_2026-11-27k_{h200,h100}.jsonl) finds the cat,
 * the softmax and its backward, the sub and the copies there, and the adds
 * and the scaling's backward on the unvectorized elementwise_kernel, at
 * about the same time on both GPUs (10.8 / 11.7 and 5.1 / 5.4 ms), where
 * streaming their bytes would give the H200 a third less.
 * Backward: the two bmm's gradients, the slice's (zeros, copy), the
 * softmax's, the max's (zeros, scatter) and the sub's (neg, sum) added, x
 * scaling. Kept: the probabilities, 2 B a score, which the bmm's view
 * shares (the peaks of 1 x 2048, 1 x 4096 and 2 x 2048 tokens grow by 1.0
 * GiB of scores at 1 x 2048 over two layers, not 2.0). */
static void eager_sink_attention(PartBlockT *b, const Hx *h)
{
    const Tx *x = h->x;
    const ModelSpec *m = x->m;
    int64_t A = m->heads, G = tpl_kv_heads(m), D = m->head_dim, S = x->S;
    double BA = (double)x->B * (double)A, es = BA * (double)S * (double)S, ec = BA * (double)S * (double)(S + 1);
    double qd = h->T * (double)(A * D), kd = h->T * (double)(G * D);
    if (G < A) /* K and V: read kd, write qd each; back the heads' gradients summed; kept by the bmms */
        op(b, "repeat_kv", qd, 4.0 * (kd + qd) / qd, 4.0 * (kd + qd) / qd, 4.0, 2, 2);
    PartKernel *qk = tpl_gemm(b, "attn.qk", x->B * A, S, S, D), *pv = tpl_gemm(b, "attn.pv", x->B * A, S, D, S);
    qk->flags |= PART_KF_ACT, pv->flags |= PART_KF_ACT | PART_KF_ODD_LDA;
    qk->part = pv->part = PART_KP_CORE;
    /* x scaling (vectorized), + the mask, which broadcasts over the heads
     * (PyTorch's generic kernel); back, the mask no gradient and the
     * scaling's on the cat's slice, rows S + 1 apart (generic again) */
    op(b, "attn.scale", es, 4.0, 0, 0, 1, 0)->part = PART_KP_CORE;
    scores_op(b, "attn.mask", es, es, 4.0, 4.0, 0, 1, 1)->part = PART_KP_CORE;
    scores_op(b, "attn.sink_cat", ec, 0, 4.0, 0, 0, 1, 0)->elems[0] *= HF_ODD_ROW_CAT;
    scores_op(b, "attn.max_sub", ec, ec, 6.0, 12.0, 0, 2, 4); /* back: neg, sum, the max's zeros + scatter, add */
    scores_op(b, "attn.softmax", ec, ec, 4.0, 6.0, 2.0, 1, 1)->elems[0] *= HF_ODD_ROW_SOFTMAX;
    scores_op(b, "attn.slice", 0, ec, 0, 4.0, 0, 0, 2); /* a view; back: zeros, copy into the slice */
    op(b, "attn.out", qd, 4.0, 4.0, 0, 1, 1); /* transpose(1, 2).contiguous() */
}

/* q or k (el elements, 16-bit) rotated as apply_rotary_pos_emb does: q *
 * cos + rotate_half(q) * sin (neg of one half, cat); under amp cos / sin are
 * fp32, the result fp32 and SDPA's autocast casts it back (kept: the cast).
 * Backward: the products' gradients, the cat's slices zero-filled and
 * copied, neg, the sums. */
static void rope(PartBlockT *b, const Hx *h, const char *name, double el)
{
    if (h->amp) op(b, name, el, 36.0, 66.0, 2.0, 7, 11);
    else op(b, name, el, 20.0, 36.0, 2.0, 5, 9);
}

/* A decoder's forward in training still fills a DynamicCache (use_cache
 * defaults to true): each layer concatenates its k and v (kd elements each)
 * onto empty tensors (two cats, two empty torch.tensor), copies that SDPA
 * then keeps in place of k and v; backward a fill and a copy each (the
 * profiled steps of bench/data/gpu/hostbound_2026-11-27e_*.jsonl: GPT-2,
 * Llama, Qwen3, Mixtral). GPT-2's c_attn output stays alive through q, so
 * there the copies are kept on top of it. */
static void kv_cache(PartBlockT *b, double kd, bool gpt2)
{
    op(b, "kv_cache", 2.0 * kd, 4.0, 6.0, gpt2 ? 2.0 : 0, 4, 4);
}

void tpl_hf_attention(const Tx *x, PartBlockT *b)
{
    Hx h = hx_of(x);
    const ModelSpec *m = x->m;
    int64_t H = m->hidden, A = m->heads, G = tpl_kv_heads(m), D = m->head_dim;
    double qd = h.T * (double)(A * D), kd = h.T * (double)(G * D);
    PartAttnParams ap;
    part_attn_params(m, &ap);
    bool bert = m->arch == MODEL_ARCH_BERT, gpt2 = m->arch == MODEL_ARCH_GPT;
    bool fused = gpt2 || m->arch == MODEL_ARCH_PHI3; /* one qkv linear: GPT-2's c_attn, Phi-3's qkv_proj */
    int nlin = fused ? 2 : 4;
    /* the decoder layer and its attention module (BERT: BertLayer,
     * BertAttention, its self-attention and output modules); the linears,
     * norms and dropouts count their own */
    b->modules += bert ? 4 : 2;
    if (bert || m->norm_layout == MODEL_NORM_LAYOUT_REORDERED) { /* the linears read the stream itself */
        linear_inputs(b, "qkv_input", h.e, h.r, 3);
    } else {
        double out = norm(b, &h, "input_norm", h.e, h.r);
        linear_inputs(b, "qkv_input", h.e, out, fused ? 1 : 3);
    }
    weight_casts(b, &h, ap.tp + ap.rep, nlin + (m->qkv_bias ? (fused ? 1 : 3) : 0) + (m->proj_bias ? 1 : 0));
    if (gpt2) {
        linear(b, "c_attn", &h, (A + 2 * G) * D, H, m->qkv_bias);
        /* q, k, v: views of c_attn's output, which q keeps alive; backward
         * the split's gradients concatenated */
        op(b, "qkv", qd + 2 * kd, 0, 4.0, 2.0, 0, 1);
    } else {
        if (fused) {
            linear(b, "qkv_proj", &h, (A + 2 * G) * D, H, m->qkv_bias);
        } else {
            linear(b, "q_proj", &h, A * D, H, m->qkv_bias);
            linear(b, "k_proj", &h, G * D, H, m->qkv_bias);
            linear(b, "v_proj", &h, G * D, H, m->qkv_bias);
        }
        if (m->qk_norm) {
            norm(b, &h, "q_norm", qd, 2.0);
            norm(b, &h, "k_norm", kd, 2.0);
        }
        if (m->pos == MODEL_POS_ROPE) {
            rope(b, &h, "rope_q", qd);
            rope(b, &h, "rope_k", kd);
            op(b, "v", kd, 0, 0, 2.0, 0, 0);
        } else {
            op(b, "qkv", qd + 2 * kd, 0, 0, 2.0, 0, 0);
        }
    }
    if (!bert) kv_cache(b, kd, gpt2);
    bias_grads(b, &h, m->qkv_bias ? (double)((A + 2 * G) * D) : 0, m->qkv_bias ? (fused ? 1 : 3) : 0);
    if (m->attn_sinks) eager_sink_attention(b, &h);
    else sdpa(b, &h, !bert);
    linear(b, gpt2 ? "c_proj" : "o_proj", &h, H, A * D, m->proj_bias);
    bias_grads(b, &h, m->proj_bias ? (double)H : 0, m->proj_bias ? 1 : 0);
    if (model_output_norms(m)) norm(b, &h, "post_attn_norm", h.e, 2.0); /* OLMo 2, Gemma: before the add */
    dropout(b, "resid_dropout", h.e, 2.0, m->hidden_dropout);
    residual(b, &h);
    if (bert) norm(b, &h, "attn_layernorm", h.e, h.r);
}

/* The activation of a dense MLP over el = T x F elements (16-bit input).
 * GPT-2's gelu_new is Python arithmetic (pow, *, +, *, tanh, +, 0.5 *, *):
 * under amp pow runs in fp32 and the rest is promoted to it (then cast back
 * for c_proj); BERT's GELU is F.gelu (erf), one kernel; SwiGLU is SiLU on
 * the gate then * up. Kept: what each op needs for its gradient, and the
 * down projection's input. */
static void activation(PartBlockT *b, const Hx *h, double el)
{
    const ModelSpec *m = h->x->m;
    b->modules++; /* ACT2FN's module (NewGELUActivation, GELUActivation, SiLUActivation) */
    if (model_act_gated(m->act)) op(b, "act_fn_mul", el, 10.0, 18.0, 8.0, 2, 3);
    else if (m->arch != MODEL_ARCH_GPT) op(b, "gelu", el, 4.0, 6.0, 4.0, 1, 1);
    else if (h->amp) op(b, "gelu_new", el, 76.0, 130.0, 16.0, 10, 15);
    else op(b, "gelu_new", el, 36.0, 56.0, 10.0, 8, 11);
}

void tpl_hf_mlp(const Tx *x, PartBlockT *b)
{
    Hx h = hx_of(x);
    const ModelSpec *m = x->m;
    int64_t H = m->hidden, F = m->ffn;
    bool bert = m->arch == MODEL_ARCH_BERT, gated = model_act_gated(m->act);
    bool fused = gated && m->arch == MODEL_ARCH_PHI3; /* Phi-3's gate_up_proj */
    b->modules += bert ? 2 : 1; /* the MLP module (BERT: BertIntermediate and BertOutput) */
    PartMlpParams mp;
    part_mlp_params(m, (double)F, m->mlp_bias, &mp);
    if (bert || m->norm_layout == MODEL_NORM_LAYOUT_REORDERED) {
        linear_inputs(b, "mlp_input", h.e, h.r, gated && !fused ? 2 : 1);
    } else {
        double out = norm(b, &h, "post_norm", h.e, h.r);
        linear_inputs(b, "mlp_input", h.e, out, gated && !fused ? 2 : 1);
    }
    int nlin = gated && !fused ? 3 : 2;
    weight_casts(b, &h, mp.tp + mp.rep, m->mlp_bias ? 2 * nlin : nlin);
    if (fused) {
        linear(b, "gate_up_proj", &h, 2 * F, H, m->mlp_bias);
    } else if (gated) {
        linear(b, "gate_proj", &h, F, H, m->mlp_bias);
        linear(b, "up_proj", &h, F, H, m->mlp_bias);
    } else {
        linear(b, "fc_in", &h, F, H, m->mlp_bias);
    }
    activation(b, &h, h.T * (double)F);
    linear(b, "fc_out", &h, H, F, m->mlp_bias);
    bias_grads(b, &h, m->mlp_bias ? (double)((gated ? 2 : 1) * F + H) : 0, m->mlp_bias ? (gated ? 3 : 2) : 0);
    if (model_output_norms(m)) norm(b, &h, "post_mlp_norm", h.e, 2.0);
    dropout(b, "mlp_dropout", h.e, 2.0, m->hidden_dropout);
    residual(b, &h);
    if (bert) norm(b, &h, "output_layernorm", h.e, h.r);
}

/* The spread of one expert's token count: each of T tokens picks K of the
 * E experts, so a count is binomial, T picks at K / E. */
static double expert_tokens_sd(const Hx *h)
{
    const ModelSpec *m = h->x->m;
    double p = (double)m->topk / (double)m->experts;
    return sqrt(h->T * p * (1.0 - p));
}

/* transformers' grouped-GEMM experts (integrations/moe.py,
 * grouped_mm_experts_forward): router logits, softmax in fp32, top-k
 * (renormalised); the token-expert pairs gathered (token_idx), sorted by
 * expert (perm, a second gather), histc/cumsum offsets; gate_up and down as
 * one torch._grouped_mm each over all experts, SiLU * up; the routing
 * weights applied, the pairs restored (inv_perm) and summed into their
 * tokens (index_add_); shared experts as a dense MLP.
 *
 * Under amp the experts' weights and their input stay fp32: grouped_mm is
 * not autocast-enabled, and transformers casts the input to the weights'
 * dtype; the CUDA grouped kernel takes bf16 only, so a fallback runs one
 * fp32 mm per expert (CUDA cores: matmul TF32 is off by default), forward
 * and both gradients alike, each from a Python loop over the experts (its
 * slicing, torch.mm(out=), a Python backward): the host dispatches each as
 * an op of its own; the pairs' tensors are fp32. */
static void hf_experts(PartBlockT *b, const Hx *h, int64_t me)
{
    const ModelSpec *m = h->x->m;
    int64_t H = m->hidden, E = m->experts, EF = m->moe_ffn;
    PartKernel *g = tpl_gemm(b, "experts.gate_up", h->amp ? 1 : E, me, 2 * EF, H);
    PartKernel *d = tpl_gemm(b, "experts.down", h->amp ? 1 : E, me, H, EF);
    PartKernel *gd[2] = {g, d};
    for (int i = 0; i < 2; i++) {
        PartKernel *k = gd[i];
        if (h->amp) { /* the fallback: E launches of one expert's rows each */
            k->count = (int32_t)E;
            for (int j = 0; j < 3; j++) k->flops[j] *= (double)E;
            k->flags |= PART_KF_FP32 | PART_KF_PYLOOP;
            k->launches[0] = part_launches(E);
            k->launches[1] = part_launches(2 * E);
            continue;
        }
        /* torch._grouped_mm: the tokens of each expert binomial, T picks of K
         * of E experts each (mean me); forward and input gradient grouped by
         * rows, the weight gradient by K */
        k->m_sd = expert_tokens_sd(h);
        k->flags |= PART_KF_GROUPED;
        k->launches[0] = 1;
        k->launches[1] = 2;
    }
}

/* In-place masked fills of the pairs' tensors with a [pairs, 1] row mask,
 * which torch.profiler finds in every grouped-experts layer (transformers
 * 5.17, Qwen3-30B-A3B and Mixtral 8x7B, pure bf16: four over [pairs, H] and
 * two over [pairs, 2F] a layer, bench/data/gpu/profile_shapes_2026-11-27_h200.txt;
 * taken as half forward, half backward). A row mask sends them to PyTorch's
 * generic kernel, bound by elements, not bytes (PART_KF_GENERIC). */
static void experts_masked_fill(PartBlockT *b, double pairs, int64_t H, int64_t EF, double s)
{
    double el = pairs * (double)(2 * H + 2 * EF); /* one pass: two [pairs, H], one [pairs, 2F] */
    PartKernel *k = op(b, "experts.masked_fill", el, 2.0 * s, 2.0 * s, 0, 3, 3);
    k->flags |= PART_KF_GENERIC;
    k->elems[0] = k->elems[1] = el;
}

/* GPT-OSS's experts (GptOssExperts, modeling_gpt_oss.py, under transformers'
 * grouped-GEMM implementation), beside what every grouped-experts layer does:
 * - each pair's expert biases gathered (gate_up_proj_bias[expert_ids_g],
 *   down_proj_bias[...]) and added after each grouped GEMM. The gathers'
 *   backward is index_put_ with accumulate into each bias's E rows: torch
 *   2.11 sorts the indices and one warp walks a row's duplicates one after
 *   another (PyTorch issue 41162, "extremely slow when there are many
 *   duplicate indices"), so the busiest expert's pairs set its time
 *   (PART_KF_DUPS): the mean pairs / E plus sqrt(2 ln E) binomial deviations,
 *   the usual maximum of E counts.
 * - its gate (_apply_gate): the interleaved halves gate_up[..., ::2] and
 *   [..., 1::2] clamped (strided reads: the generic path), gate *
 *   sigmoid(gate * alpha) and (up + 1) times it (mul, sigmoid, mul, add,
 *   mul). Backward: the products' and the sigmoid's gradients and the
 *   gate's two summed (40 B), the clamps' masks (ge, le, logical_and and
 *   where for up, le and where for the gate: 22 B), each strided slice's
 *   zeros over [pairs, 2F] (8 B) and copy into them (the generic path),
 *   and the two summed (12 B). Kept: the clamps' input (the biased
 *   [pairs, 2F] output), the clamped gate, the sigmoid, up + 1 and the
 *   product (12 B a [pairs, F] element).
 * torch.profiler of the 1 x 4096 step (gptoss_hf_2026-11-27k_h100.jsonl)
 * times the clamps at 0.138 ms each (the generic rate's 0.139), the sigmoid
 * 0.063 and its backward 0.094 (these bytes streamed: 0.064, 0.096). */
static void gpt_oss_experts(PartBlockT *b, const Hx *h, double pairs, double s)
{
    const ModelSpec *m = h->x->m;
    int64_t H = m->hidden, E = m->experts, EF = m->moe_ffn;
    double el = pairs * (double)EF;
    /* the gathers and adds forward (8 B a pair's bias element), the
     * gradients read backward: sorts, zeros and index_put_ a bias */
    PartKernel *k = op(b, "experts.bias", pairs * (double)(2 * EF + H), 8.0 * s, 2.0 * s, 0, 4, 10);
    k->flags |= PART_KF_DUPS | PART_KF_WGRAD;
    k->elems[1] = 2.0 * (pairs / (double)E + sqrt(2.0 * log((double)E)) * expert_tokens_sd(h)); /* two biases */
    k = op(b, "experts.gate_split", el, 8.0 * s, 8.0 * s, 4.0 * s, 2, 2); /* the clamps; back the copies */
    k->flags |= PART_KF_GENERIC;
    k->elems[0] = k->elems[1] = 2.0 * el;
    op(b, "experts.gate", el, 24.0 * s, 82.0 * s, 8.0 * s, 5, 16);
}

void tpl_hf_moe(const Tx *x, PartBlockT *b)
{
    Hx h = hx_of(x);
    const ModelSpec *m = x->m;
    int64_t H = m->hidden, E = m->experts, K = m->topk, EF = m->moe_ffn;
    double pairs = h.T * (double)K, pe = pairs * (double)H;
    double out = m->norm_layout == MODEL_NORM_LAYOUT_REORDERED ? h.r : norm(b, &h, "post_norm", h.e, h.r);
    double s = out / 2.0; /* the pairs' tensors: 16-bit, fp32 under amp */
    b->modules += 2; /* the sparse MoE block and its experts module */
    /* the router and shared experts' linears, and the experts' gather, which
     * under amp reads the fp32 stream itself */
    int linears = 1 + (m->shared_experts > 0 ? 2 : 0);
    tensor_readers(b, "moe_input", h.e, out, h.amp ? linears : linears + 1, h.amp ? 1 : 0);
    double shared_p = (double)(3 * H * EF * m->shared_experts), expert_p = h.amp ? 0 : (double)(3 * H * EF * E);
    weight_casts(b, &h, (double)(H * E) + expert_p + shared_p, (h.amp ? 1 : 3) + (m->shared_experts > 0 ? 3 : 0));
    /* The ATen calls below are the profiled ones (84 a layer beside the
     * experts, router, norm and residual; bench/data/gpu/hostbound_2026-11-27e_*.jsonl,
     * the same in Qwen3 and Mixtral, pure and amp); their split between
     * the ops is read from transformers' code. */
    linear(b, "router", &h, E, H, false);
    /* softmax fp32, top-k, renormalise (sum, div), to dtype */
    op(b, "routing", h.T * (double)E, 12.0, 12.0, 4.0, 8, 6);
    /* argsort of the expert ids and its inverse, histc, cumsum, the
     * weights gathered; the index arithmetic (arange, remainder,
     * floor_divide, clamp, scatter, ge, div) of the offsets */
    op(b, "sort", pairs, 32.0, 0, 8.0, 24, 0);
    /* hidden_states[token_idx], then [perm]: gathers of the pairs; each
     * one's backward zeros a buffer and index_puts into it */
    op(b, "permute", pe, 8.0 * s, 16.0 * s, 0, 3, 4);
    int64_t me = (int64_t)((pairs + (double)E - 1) / (double)E);
    hf_experts(b, &h, me);
    op(b, "experts.permuted", pe, 0, 0, 2.0 * s, 0, 0); /* the gathered input kept for gate_up's gradient */
    if (m->moe_bias) gpt_oss_experts(b, &h, pairs, s); /* transformers' only biased experts: GptOssExperts */
    else op(b, "experts.act_fn_mul", pairs * (double)EF, 10.0 * s, 18.0 * s, 8.0 * s, 2, 3);
    experts_masked_fill(b, pairs, H, EF, s);
    /* * routing weights, [inv_perm], zeros_like + index_add_ into the tokens;
     * backward: the weights' gradient, the gather's index_add, index_add's
     * gather, and the copies, fills and sums of the dispatch's views */
    op(b, "combine", pe, 14.0 * s, 20.0 * s, 2.0 * s, 10, 18);
    if (m->shared_experts > 0) {
        int64_t SF = EF * m->shared_experts;
        b->modules += 2; /* the shared experts' MLP and its activation */
        linear(b, "shared.gate_proj", &h, SF, H, false);
        linear(b, "shared.up_proj", &h, SF, H, false);
        op(b, "shared.act_fn_mul", h.T * (double)SF, 10.0, 18.0, 8.0, 2, 3);
        linear(b, "shared.down_proj", &h, H, SF, false);
        op(b, "shared.add", h.e, 6.0, 0, 0, 1, 0);
    }
    if (model_output_norms(m)) norm(b, &h, "post_mlp_norm", h.e, 2.0);
    residual(b, &h);
}

/* HF's loss over `logits` elements, and what its backward holds at its
 * start beyond what the forward kept (*workspace). PyTorch's cross_entropy
 * is log_softmax (three reads and a write) then nll_loss; nll_loss keeps
 * its input, and its backward writes a dense gradient of that size (zeros,
 * then the target's entries), which log_softmax's backward reads beside its
 * kept output.
 * - A causal LM's loss (transformers' ForCausalLMLoss) casts the logits to
 *   fp32 first, under any precision: the cast, the loss in fp32, the
 *   gradient cast back to 16 bits; at the start of the backward the dense
 *   fp32 gradient and log_softmax's fp32 input gradient beside the kept
 *   log-probabilities (12 B a logit).
 * - BERT's masked-LM loss calls CrossEntropyLoss on the 16-bit logits.
 *   cross_entropy passes log_softmax the input's own dtype, which autocast
 *   keeps (its fp32_set_opt_dtype policy sets only an unset dtype), so
 *   log_softmax runs in 16 bits; under amp nll_loss is on autocast's fp32
 *   list and casts the log-probabilities to fp32, keeping that copy. Its
 *   backward: the dense fp32 gradient, cast back, log_softmax's in 16 bits
 *   (10 B a logit held at its start; all 16-bit without autocast, 6 B).
 *   The profiled BERT-large amp step (bench/data/gpu/profile_2026-11-26_h100)
 *   shows it: a 16-bit _log_softmax (1.03 ms for 5.0e8 logits), the fp32
 *   zero fill (0.64 ms), and the peaks of every BERT amp step row are 2 B a
 *   logit under the fp32 loss. */
static void hf_loss(PartBlockT *hd, double logits, bool upcast, bool amp, double *workspace)
{
    if (upcast) {
        op(hd, "loss", logits, 6.0 + 16.0, 4.0 + 16.0 + 6.0, 4.0, 4, 4);
        *workspace = 8.0 * logits;
    } else if (amp) {
        op(hd, "loss", logits, 8.0 + 6.0, 4.0 + 6.0 + 8.0, 2.0 + 4.0, 4, 4);
        *workspace = 4.0 * logits;
    } else {
        op(hd, "loss", logits, 8.0, 2.0 + 8.0, 2.0, 3, 3);
        *workspace = 4.0 * logits;
    }
}

/* Embedding lookups (the word table, learned positions, token types: fp32
 * tables under amp, so the stream starts fp32), their sums, BERT's
 * LayerNorm, dropout; backward: each table's dense gradient (zeros, then the
 * rows scatter-added) and, for tied weights, the LM head's gradient cast
 * (amp) and summed into it. The head: final norm (BERT: the masked-LM
 * transform, dense + GELU + LayerNorm), the vocabulary projection and HF's
 * loss (hf_loss; what its backward holds, PartTemplate.loss_workspace_bytes). */
void tpl_hf_embed_head(const Tx *x, PartTemplate *o)
{
    Hx h = hx_of(x);
    const ModelSpec *m = x->m;
    int64_t H = m->hidden, V = m->vocab;
    PartBlockT *e = &o->b[PART_BLOCK_EMBED], *hd = &o->b[PART_BLOCK_HEAD];
    double r = h.r, gb = h.amp ? 4.0 : 2.0, tables = 1 + (m->pos == MODEL_POS_LEARNED) + (m->type_vocab > 0);
    double table = (double)V * (double)H;
    /* the task model and the base model, each table's nn.Embedding (BERT:
     * its embeddings module), RoPE's rotary module */
    e->modules += 2 + (int)tables + (m->arch == MODEL_ARCH_BERT) + (m->pos == MODEL_POS_ROPE);
    op(e, "embeddings", h.e, tables * 2.0 * r + (tables - 1) * 3.0 * r, tables * (r + 2.0 * gb), r, (int)(2 * tables - 1),
       (int)(2 * tables));
    op(e, "input_ids", h.T, 0, 0, 8.0, 0, 0);
    op(e, "embedding_grad", table, 0, gb + (m->tied_embeddings && m->lm_head ? 3.0 * gb + (h.amp ? 6.0 : 0) : 0), 0, 0,
       2)->flags |= PART_KF_WGRAD;
    /* RoPE's cos and sin, once a step (inv_freq @ positions, cat, cos, sin,
     * the attention scaling, casts): [S, head_dim] */
    if (m->pos == MODEL_POS_ROPE) op(e, "rotary", (double)x->S * (double)m->head_dim, 12.0, 0, 0, 8, 0);
    if (m->embed_norm) norm(e, &h, "embed_layernorm", h.e, r);
    dropout(e, "embed_dropout", h.e, r, m->hidden_dropout);
    if (!m->lm_head) return;
    double out;
    if (m->arch == MODEL_ARCH_BERT) { /* cls.predictions.transform */
        hd->modules += 4; /* cls, predictions, transform, its activation */
        linear_inputs(hd, "transform_input", h.e, r, 1);
        weight_casts(hd, &h, (double)(H * H + H), 2);
        linear(hd, "transform.dense", &h, H, H, true);
        op(hd, "transform.gelu", h.e, 4.0, 6.0, 2.0, 1, 1);
        out = norm(hd, &h, "transform.layernorm", h.e, 2.0);
    } else {
        out = norm(hd, &h, "final_norm", h.e, r);
    }
    linear_inputs(hd, "lm_head_input", h.e, out, 1);
    weight_casts(hd, &h, table, m->arch == MODEL_ARCH_BERT ? 2 : 1); /* BERT's decoder has a bias */
    linear(hd, "lm_head", &h, V, H, m->arch == MODEL_ARCH_BERT);
    double logits = h.T * (double)V;
    if (m->arch == MODEL_ARCH_BERT) op(hd, "decoder.bias_grad", logits, 0, 2.0, 0, 0, 1);
    hf_loss(hd, logits, m->arch != MODEL_ARCH_BERT, h.amp, &o->loss_workspace_bytes);
}

/* The parameter tensors of block `which`: a weight per linear (and its
 * bias), a weight per norm (and LayerNorm's bias); the embedding's tables
 * (words, learned positions, token types); the LM head's weight unless tied
 * to the word table (its bias, BERT's decoder bias, all the same); at least
 * one where the block has parameters. */
static int param_tensors(const Tx *x, const PartBlockT *b, PartBlock which)
{
    if (b->params <= 0) return 0;
    const ModelSpec *m = x->m;
    bool ln = m->norm == MODEL_NORM_LAYERNORM;
    int tensors = which == PART_BLOCK_EMBED ? 1 + (m->pos == MODEL_POS_LEARNED) + (m->type_vocab > 0) : 0;
    for (int32_t i = 0; i < b->n_k; i++) {
        const PartKernel *k = &b->k[i];
        bool bias = k->launches[1] == 3;
        if (k->kind == PART_K_GEMM && !strcmp(k->name, "lm_head")) tensors += !m->tied_embeddings + bias;
        else if (k->kind == PART_K_GEMM) tensors += bias ? 2 : 1;
        else if (k->flags & PART_KF_NORM) tensors += ln ? 2 : 1;
    }
    return tensors < 1 ? 1 : tensors;
}

/* AccumulateGrad: a backward whose parameters already hold a .grad adds the
 * new gradient into it, one add per parameter tensor (read both, write one:
 * 3 gradient elements per parameter); a fresh .grad is stored without a
 * kernel. The gradients exist on every micro-batch but the first of a step
 * when the loop frees them after the optimizer (zero_grad(set_to_none=True),
 * HF Trainer's default), else on every one: per micro-batch, the average
 * share of the grad_accum backward passes. Also counts the block's
 * parameter tensors (PartBlockT.param_tensors). */
void tpl_hf_accumulate(const Tx *x, PartBlockT *b, PartBlock which)
{
    b->param_tensors = param_tensors(x, b, which);
    if (b->params <= 0) return;
    double m = (double)(x->p->grad_accum > 0 ? x->p->grad_accum : 1);
    double share = (x->rt->hf_grads_freed ? m - 1.0 : m) / m;
    if (share <= 0) return;
    double gb = x->p->precision == PLAN_PRECISION_AMP ? 4.0 : 2.0;
    op(b, "accumulate_grad", b->params * share, 0, 3.0 * gb, 0, 0, b->param_tensors)->flags |= PART_KF_WGRAD;
}
