/* memory.c — memory per GPU of every pipeline stage (trainsim's model).
 *
 * Per pipeline rank s (chunks s, s+pp, ... under interleaving):
 *   weights     params held x 2 B (4 B for fp32), / dp*cp under ZeRO-3
 *   gradients   fp32 main grads (4 B, Megatron's default accumulation) or
 *               dtype-width grads under ZeRO >= 1 (DeepSpeed), / dp*cp at ZeRO >= 2
 *   optimizer   Adam fp32 master + 2 moments = 12 B (8 B for fp32 training),
 *               / dp*cp with ZeRO >= 1 or the distributed optimizer; Shampoo adds
 *               its factor matrices (8 B per factor element), spread over dp*cp
 *   activations in-flight micro-batch units x per-layer bytes (counts.c) +
 *               embedding input/dropout on stage 0 + final norm, LM-head input and
 *               the logits the loss keeps on the last stage (fp32; 16-bit under TE's fused loss)
 *   other       workspace (largest transient: one layer's activation gradients or
 *               the logits gradient; ZeRO-3 gathers 2 layers; FSDP's ZeRO-2 one
 *               layer's unsharded fp32 gradient) + CUDA context +
 *               NCCL buffers per communicator + fragmentation x (act + workspace)
 * Expert parameters are divided by EP and ETP and sharded over the expert
 * data-parallel group (tp*cp*dp / (etp*ep)). */
#include "part_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)
#define MIB (1024.0 * 1024.0)

void part_mem_options_init(PartMemOptions *o)
{
    memset(o, 0, sizeof *o);
    o->model = PART_MEMMODEL_TRAINSIM;
    /* CUDA 12 context with cuBLAS/cuDNN/NCCL handles: 0.5-1 GB on A100/H100
     * (PyTorch "CUDA context" reports); take the middle. */
    o->cuda_context_bytes = 0.75 * GIB;
    /* NCCL: NCCL_BUFFSIZE 4 MiB per channel and peer; ring + tree over ~8
     * channels -> ~64 MiB per communicator (NCCL docs, env NCCL_BUFFSIZE). */
    o->nccl_comm_bytes = 64.0 * MIB;
    /* PyTorch caching allocator fragmentation on dynamic (activation)
     * memory; 5% is the low end of reported reserved/allocated gaps. */
    o->frag_fraction = 0.05;
}

TS_ENUM_NAMES(part_memmodel, PartMemModel, PART_MEMMODEL_LIST, PART_MEMMODEL_COUNT)
TS_ENUM_PARSE(part_memmodel, PartMemModel, PART_MEMMODEL_COUNT)

/* DeepEP's dispatch/combine buffers (--moe-dispatcher deepep), allocated
 * once per EP group for the run: the sizes its Config hints give
 * (csrc/config.hpp get_nvl_buffer_size_hint / get_rdma_buffer_size_hint)
 * for its defaults, 20 SMs (10 channels), 288 NVLink and 128 RDMA receive
 * tokens per channel, 8 NVLink peers, room for 128 top-k entries and 128
 * scales per token; the hidden row in BF16 (the combine's width). DeepSeek-V3
 * (H 7168, EP 64): 0.35 GiB NVLink + 0.31 GiB RDMA. */
static double deepep_buffer_bytes(const ModelSpec *m, const ParallelPlan *p)
{
    if (p->moe_dispatch != PLAN_MOE_DISPATCH_DEEPEP || m->experts == 0 || p->ep < 2) return 0;
    const double C = 10, nvl_tok = 288, rdma_tok = 128, peers = 8, topk = 128, scales = 128, meta = 8;
    double ranks = (double)p->ep, N = ranks < peers ? ranks : peers, R = ranks > peers ? ranks / peers : 1;
    double row = 2.0 * (double)m->hidden + meta + topk * (8.0 + 4.0) + scales * 4.0;
    double nvl = C * N * (2 * R + 3) * 4 + C * N * nvl_tok * row;
    double rdma = ranks > peers ? C * R * (peers * 2 + 2) * 2 * 4 + C * R * rdma_tok * 2 * (row + 16) : 0;
    return nvl + rdma;
}

/* Chunk-micro-batch units in flight on pipeline rank s, divided by vpp
 * (= micro-batches of a whole stage). */
/* zb-h1, dualpipe, dualpipev, 1f1b-a2a: the most activation bytes rank s
 * holds at once, walking its plan_order with act[k] bytes per micro-batch of
 * its chunk k: a forward stores one, a whole backward or a W frees it (the
 * weight gradient reads the layers' saved inputs, so an input-gradient
 * pass frees nothing); an F&B pair counts its forward first. DualPipe's
 * Table 2 (arXiv 2412.19437): PP+1 chunk micro-batches on the first rank.
 * *units: the (micro-batch, chunk) units held at that peak. -1 on
 * allocation failure. */
static double inflight_ordered(const ParallelPlan *p, int64_t s, const double *act, double *units)
{
    int64_t m = p->grad_accum, v = plan_rank_chunks(p), cap = plan_order_cap(p->schedule, m, v);
    int32_t *o = malloc((size_t)cap * 2 * sizeof *o);
    if (!o) return -1;
    int64_t n = plan_order(p->schedule, p->pp, v, m, plan_interleaved(p) ? plan_vpp_group(p) : 0, s, o, o + cap);
    int64_t cur = 0;
    double bytes = 0, top = 0;
    *units = 0;
    for (int64_t i = 0; i < n; i++) {
        int k = PLAN_TASK_KIND(o[i]), c = PLAN_TASK_CHUNK(o[i]);
        if (k == PLAN_TASK_F || k == PLAN_TASK_PF) cur++, bytes += act[c];
        else if (k == PLAN_TASK_B || k == PLAN_TASK_W) cur--, bytes -= act[c];
        if (bytes > top) top = bytes, *units = (double)cur;
    }
    free(o);
    return top;
}

/* Micro-batches of activations rank s holds at its peak under Megatron's
 * orders: its warm-up's chunk units and the first steady forward's
 * (plan_megatron_warmup), at most all of them; GPipe all. */
static double inflight(const ParallelPlan *p, int64_t s)
{
    int64_t m = p->grad_accum, v = p->vpp > 1 ? p->vpp : 1;
    if (p->schedule == PLAN_SCHED_GPIPE) return (double)m;
    int64_t u = plan_megatron_warmup(p->pp, v, m, plan_vpp_group(p), s) + 1;
    return (double)(u < m * v ? u : m * v) / (double)v;
}

static int count_groups(const ParallelPlan *p, const ModelSpec *m)
{
    int n = 0;
    n += p->tp > 1;
    n += p->cp > 1;
    n += p->dp * p->cp > 1;
    n += p->pp > 1;
    if (m->experts > 0) {
        n += p->ep > 1;
        n += (p->tp * p->cp * p->dp) / (p->ep * p->etp) > 1;
    }
    n += p->pp > 1 && m->tied_embeddings;
    n += plan_dp_replicas(p) > 1; /* HSDP: the replicate group beside the shard group */
    return n;
}

/* What a rank's chunks hold, summed over them (stage_chunks). */
typedef struct StageSums {
    double pd, pe;            /* dense parameters (TP share), routed experts' (EP share) */
    double sh;                /* Shampoo's preconditioner elements */
    double act_sum;           /* one micro-batch's activations over the chunks */
    double layer_max;         /* the largest layer's activations with its recompute's */
    double remat_max;         /* the largest recompute's */
    bool has_emb, has_head;   /* it holds the embedding / the head */
} StageSums;

/* The rank's chunks (dualpipe holds its stage twice, two copies, and stage
 * pp-1-s; dualpipev a V: plan_rank_chunk): their layers' parameters and
 * one micro-batch's activations, under full recompute a layer's input for
 * each recomputed layer and the rest stored in full, pro rata (act_k, where
 * given: each chunk's, in the rank's chunk order). */
static void stage_chunks(const ModelSpec *m, const ParallelPlan *p, const PartCounts *c, const PartLayerAct *ad,
                         const PartLayerAct *am, double shampoo_d, double shampoo_m, int64_t s, double *act_k,
                         StageSums *z)
{
    double t = (double)p->tp, epx = (double)(p->ep * p->etp);
    bool full = p->recompute == PLAN_RECOMPUTE_FULL;
    memset(z, 0, sizeof *z);
    for (int64_t v = 0; v < plan_rank_chunks(p); v++) {
        double a0 = z->act_sum;
        int64_t ch = plan_rank_chunk(p, s, v);
        z->has_emb |= ch == 0;
        z->has_head |= ch == p->n_chunks - 1;
        int64_t a = plan_chunk_first_layer(p, m->layers, ch);
        int64_t n = plan_model_chunk_layers(p, m, ch);
        double nm = (double)part_moe_in_range(m, a, a + n), nd = (double)n - nm;
        z->pd += nd * (c->dense_tp / t + c->dense_rep) + nm * (c->moe_tp / t + c->moe_rep);
        z->pe += nm * c->moe_exp / epx;
        z->sh += nd * shampoo_d + nm * shampoo_m;
        double full_l = nd * ad->full + nm * am->full;
        if (full) {
            double rec = (double)n;
            if (p->recompute_layers > 0 && (double)p->recompute_layers < rec)
                rec = (double)p->recompute_layers;
            double keep = (double)n - rec; /* not recomputed: stored in full, pro rata */
            double frac = n > 0 ? keep / (double)n : 0;
            z->act_sum += frac * full_l + rec * (nd > 0 ? ad->input : am->input);
        } else {
            z->act_sum += full_l;
        }
        if (act_k && v < PLAN_TASK_MAX_CHUNKS) act_k[v] = z->act_sum - a0;
        if (nd > 0) {
            z->layer_max = fmax(z->layer_max, ad->full + ad->remat);
            z->remat_max = fmax(z->remat_max, ad->remat);
        }
        if (nm > 0) {
            z->layer_max = fmax(z->layer_max, am->full + am->remat);
            z->remat_max = fmax(z->remat_max, am->remat);
        }
    }
}

/* The embedding's and the head's parameters (returned) and activations on
 * the stage that holds them: token ids and the embedding dropout's mask
 * per in-flight micro-batch; the head's input and the logits the loss
 * keeps (and their gradient, *head_grad), once more per MTP module. */
static double stage_edges(const ModelSpec *m, const ParallelPlan *p, const PartMemOptions *o, const PartCounts *c,
                          const StageSums *z, double infl, PartMemory *out, double *head_grad)
{
    double t = (double)p->tp;
    double d = p->dtype == TS_DTYPE_FP32 ? 4.0 : 2.0, r = p->sp ? 1.0 / t : 1.0;
    double sb = (double)p->seq / (double)p->cp * (double)p->micro_batch;
    double H = (double)m->hidden;
    double emb = 0;
    *head_grad = 0;
    if (z->has_emb) {
        emb = c->embed_tp / t + c->embed_rep;
        /* token ids (int64) + embedding dropout mask per in-flight micro-batch */
        out->act_embed_bytes = infl * (8.0 * sb + (m->hidden_dropout > 0 ? sb * H * r : 0));
    }
    if (z->has_head) {
        emb += c->head_tp / t + c->head_rep;
        if (!z->has_emb && m->tied_embeddings && m->lm_head) emb += c->embed_tp / t;
        /* MTP modules: projection, three norms; the shared embedding's copy */
        if (m->mtp_layers > 0)
            emb += (double)m->mtp_layers * (2.0 * H * H / t + 3.0 * part_norm_params(m)) +
                   (!z->has_emb ? c->embed_tp / t : 0);
        double n_head = p->schedule == PLAN_SCHED_GPIPE ? (double)p->grad_accum : 1.0;
        /* the logits the CE loss keeps: fp32 (its eager or Megatron-Core's
         * fused kernels), or the 16-bit logits themselves (Transformer
         * Engine's writes the gradient over them); the gradient beside them:
         * fp32, the 16-bit cast of the fused one, none under TE's */
        double vl = sb * c->vocab_padded / t;
        int fused = o->ce_fusion;
        double logits = vl * (fused == PART_CE_TE ? 2.0 : 4.0);
        double grad = vl * (fused == PART_CE_TE ? 0.0 : fused == PART_CE_NATIVE ? 2.0 : 4.0);
        /* the head's input and fp32 logits, once more per MTP module (with
         * its projection's input, the two normed halves) */
        double mtp = (double)m->mtp_layers;
        if (m->lm_head)
            out->act_head_bytes = n_head * ((1.0 + mtp) * (2.0 * sb * H * d * r + logits) + mtp * 2.0 * sb * H * d);
        *head_grad = m->lm_head ? grad : 0;
    }
    return emb;
}

/* Weights, gradients and optimizer state of the stage's pd dense and pe
 * expert parameters at b's bytes per parameter, by the ZeRO stage's
 * sharding (dense over DP x CP or the HSDP shard group, experts over
 * expert DP). */
static void stage_states(const ParallelPlan *p, const PartParamBytes *b, double pd, double pe, double sh,
                         PartMemory *out)
{
    double dps = (double)(p->dp * p->cp / plan_dp_replicas(p));
    double edp = (double)(p->tp * p->cp * p->dp) / (double)(p->ep * p->etp);
    out->weights_bytes = p->zero >= 3 ? b->weight * (pd / dps + pe / edp) : b->weight * (pd + pe);
    out->gradients_bytes = p->zero >= 2 ? b->grad * (pd / dps + pe / edp) : b->grad * (pd + pe);
    /* DeepSpeed's BF16 optimizer keeps fp32 gradients beside the bf16 ones */
    if (plan_ds_pipe(p) && p->dtype == TS_DTYPE_BF16 && p->zero < 3) out->gradients_bytes += 4.0 * (pd + pe);
    bool shard = p->zero >= 1 || p->dist_opt;
    out->optimizer_bytes = shard ? b->optim * (pd / dps + pe / edp) : b->optim * (pd + pe);
    if (p->optimizer == PLAN_OPTIM_SHAMPOO) out->optimizer_bytes += sh / dps;
}

/* The workspace beside the stored activations: the largest layer's (or the
 * head's gradient), ZeRO-3's two gathered layers, PyTorch FSDP ZeRO-2's
 * unsharded gradient of a layer. */
static double stage_workspace(const ModelSpec *m, const ParallelPlan *p, const PartParamBytes *pb,
                              const PartCounts *c, double layer_max, double head_grad)
{
    double t = (double)p->tp, epx = (double)(p->ep * p->etp);
    double ws = layer_max > head_grad ? layer_max : head_grad;
    if (p->zero >= 3) {
        double lp = c->dense_tp / t + c->dense_rep;
        if (m->experts > 0) lp = c->moe_tp / t + c->moe_rep + c->moe_exp / epx;
        ws += 2.0 * lp * pb->weight; /* two gathered layers (prefetch) */
    }
    /* PyTorch FSDP's ZeRO-2 (SHARD_GRAD_OP; with --pp, Llama 3's plan):
     * each layer's gradient exists unsharded until its reduce-scatter, at
     * the fp32 reduce dtype (torchtitan's mixed_precision_reduce "float32";
     * Llama 3 §3.3.2 reduce-scatters gradients in FP32) */
    if (p->zero == 2 && p->framework == PLAN_FRAMEWORK_TORCHTITAN) {
        double lp = c->dense_tp / t + c->dense_rep;
        if (m->experts > 0) lp = fmax(lp, c->moe_tp / t + c->moe_rep + c->moe_exp / epx);
        ws += 4.0 * lp;
    }
    return ws;
}

static void stage_memory(const ModelSpec *m, const ParallelPlan *p, const PartMemOptions *o,
                         const PartCounts *c, const PartLayerAct *ad, const PartLayerAct *am,
                         double shampoo_d, double shampoo_m, int64_t s, PartMemory *out)
{
    memset(out, 0, sizeof *out);
    out->stage = (int32_t)s;
    double infl = inflight(p, s);
    out->inflight = infl;
    StageSums z;
    double act_k[PLAN_TASK_MAX_CHUNKS]; /* kept for the ordered schedules alone */
    const bool ordered = plan_sched_ordered(p->schedule);
    stage_chunks(m, p, c, ad, am, shampoo_d, shampoo_m, s, ordered ? act_k : NULL, &z);
    double held = infl * z.act_sum, units = 0;
    if (ordered) {
        double b = inflight_ordered(p, s, act_k, &units);
        if (b >= 0) held = b, out->inflight = infl = units / (double)plan_rank_chunks(p);
    }
    bool full = p->recompute == PLAN_RECOMPUTE_FULL;
    out->act_layers_bytes = held + (full ? z.layer_max : z.remat_max);
    double head_grad = 0;
    double emb = stage_edges(m, p, o, c, &z, infl, out, &head_grad);
    double pd = z.pd + emb, pe = z.pe;
    out->params = pd + pe;
    out->embed_params = emb;
    out->expert_params = pe;
    out->activations_bytes = out->act_layers_bytes + out->act_embed_bytes + out->act_head_bytes;
    PartParamBytes pb; /* bytes per parameter of weights, gradients, optimizer state */
    part_param_bytes(p, o, &pb);
    stage_states(p, &pb, pd, pe, z.sh, out);
    out->workspace_bytes = stage_workspace(m, p, &pb, c, z.layer_max, head_grad);
    out->runtime_bytes = o->cuda_context_bytes + o->nccl_comm_bytes * count_groups(p, m) + deepep_buffer_bytes(m, p);
    out->frag_bytes = o->frag_fraction * (out->activations_bytes + out->workspace_bytes);
    out->other_bytes = out->workspace_bytes + out->runtime_bytes + out->frag_bytes;
    out->total_bytes = out->weights_bytes + out->gradients_bytes + out->optimizer_bytes +
                       out->activations_bytes + out->other_bytes;
}

void part_param_bytes(const ParallelPlan *p, const PartMemOptions *o, PartParamBytes *out)
{
    double d = p->dtype == TS_DTYPE_FP32 ? 4.0 : 2.0;
    switch (p->precision) {
    case PLAN_PRECISION_AMP: /* fp32 parameters, gradients and Adam moments */
        *out = (PartParamBytes){.weight = 4.0, .grad = 4.0, .optim = 8.0};
        return;
    case PLAN_PRECISION_PURE: /* everything at the training dtype, no master copy */
        *out = (PartParamBytes){.weight = d, .grad = d, .optim = 2.0 * d};
        return;
    default: /* 16-bit weights; fp32 master + moments; fp32 main grads (ZeRO: 16-bit) */
        out->weight = d;
        out->grad = p->zero >= 1 ? d : o && o->grad_bytes > 0 ? o->grad_bytes : 4.0;
        out->optim = p->dtype == TS_DTYPE_FP32 ? 8.0 : 12.0;
        /* bf16 moments (DeepSeek-V3 §3.3.3): fp32 master + 2 + 2 */
        if (p->adam_moments == TS_DTYPE_BF16 && p->dtype != TS_DTYPE_FP32) out->optim = 8.0;
    }
}

/* Bytes autograd keeps for the backward, summed over a block's kernels. */
static double block_saved(const PartBlockT *b)
{
    double s = 0;
    for (int i = 0; i < b->n_k; i++) s += b->k[i].saved_bytes * (b->k[i].count > 0 ? b->k[i].count : 1);
    return s;
}

/* --framework hf (one pipeline stage): what the eager modules keep, op by op
 * (the layer template's saved bytes, the bf16 weight copies of autocast
 * among them), and where the peak falls: at the loss's backward (every
 * activation kept, the loss's workspace) or late in the backward, when a
 * freshly computed gradient of the largest parameter tensor (the word
 * embedding, or a layer's grouped experts) is added into its .grad. A loop
 * that frees the gradients after each step (PartMemOptions.grads_freed) has
 * none at the first point, all of them and no activation at the end. */
static void hf_memory(const ModelSpec *m, const ParallelPlan *p, const PartMemOptions *o, PartMemory *out)
{
    PartTemplate t;
    part_template(m, p, NULL, &t);
    double nm = (double)model_moe_layer_count(m), nd = (double)m->layers - nm;
    double layer_d = block_saved(&t.b[PART_BLOCK_ATTN]) + block_saved(&t.b[PART_BLOCK_MLP]);
    double layer_m = block_saved(&t.b[PART_BLOCK_ATTN]) + block_saved(&t.b[PART_BLOCK_MOE]);
    out->act_layers_bytes = nd * layer_d + nm * layer_m;
    out->act_embed_bytes = block_saved(&t.b[PART_BLOCK_EMBED]);
    out->act_head_bytes = block_saved(&t.b[PART_BLOCK_HEAD]);
    out->inflight = 1;
    double act = out->act_layers_bytes + out->act_embed_bytes + out->act_head_bytes;
    PartParamBytes pb;
    part_param_bytes(p, o, &pb);
    /* the largest fresh gradient: the word embedding's, accumulated in fp32
     * by its backward (PART_TIED_GRAD_BYTES), or a layer's grouped experts' */
    double H = (double)m->hidden, largest = PART_TIED_GRAD_BYTES * (double)m->vocab * H;
    if (m->experts > 0 && (double)m->experts * 2.0 * (double)m->moe_ffn * H * pb.grad > largest)
        largest = (double)m->experts * 2.0 * (double)m->moe_ffn * H * pb.grad;
    double late = out->act_layers_bytes / (double)(m->layers > 0 ? m->layers : 1) + largest;
    if (o->grads_freed) {
        /* the end of the backward: every gradient, and with a tied word
         * embedding its backward's dense gradient, accumulated in fp32,
         * while it is added into the .grad the LM head made (PART_TIED_GRAD_BYTES) */
        double tied = m->tied_embeddings && m->lm_head ? PART_TIED_GRAD_BYTES * (double)m->vocab * H : 0;
        if (act + t.loss_workspace_bytes >= out->gradients_bytes + tied) {
            out->gradients_bytes = 0;
            out->workspace_bytes = t.loss_workspace_bytes;
        } else {
            out->act_layers_bytes = out->act_embed_bytes = out->act_head_bytes = 0;
            out->workspace_bytes = tied;
        }
    } else if (act + t.loss_workspace_bytes >= late) {
        out->workspace_bytes = t.loss_workspace_bytes;
    } else { /* one layer's activations and the gradient being added */
        out->act_layers_bytes = late - largest;
        out->act_embed_bytes = out->act_head_bytes = 0;
        out->workspace_bytes = largest;
    }
    out->activations_bytes = out->act_layers_bytes + out->act_embed_bytes + out->act_head_bytes;
    out->frag_bytes = o->frag_fraction * (out->activations_bytes + out->workspace_bytes);
    out->other_bytes = out->workspace_bytes + out->runtime_bytes + out->frag_bytes;
    out->total_bytes = out->weights_bytes + out->gradients_bytes + out->optimizer_bytes + out->activations_bytes +
                       out->other_bytes;
}

/* Has a middle stage with stage s's layers (count, of them MoE) been
 * costed? Records them when not (up to 8 kinds; beyond, every stage is). */
static bool middle_seen(const ModelSpec *m, const ParallelPlan *p, int64_t s, int64_t seen[8][2], int *n)
{
    int64_t a = plan_chunk_first_layer(p, m->layers, s), nl = plan_model_chunk_layers(p, m, s);
    int64_t nm = part_moe_in_range(m, a, a + nl);
    for (int i = 0; i < *n; i++)
        if (seen[i][0] == nl && seen[i][1] == nm) return true;
    if (*n < 8) seen[*n][0] = nl, seen[*n][1] = nm, (*n)++;
    return false;
}

TsStatus part_memory(const ModelSpec *m, const ParallelPlan *p, const PartMemOptions *o,
                     PartMemory *stages, PartMemory *peak, TsError *err)
{
    if (p->grad_accum < 1 || p->n_chunks != p->pp * p->vpp)
        return ts_err(err, TS_ERR_PLAN, "the plan is not resolved (call plan_resolve first)");
    PartMemOptions def;
    if (!o) { part_mem_options_init(&def); o = &def; }
    if (o->model == PART_MEMMODEL_MEGATRON) return part_memory_megatron(m, p, o, stages, peak);

    PartCounts c;
    part_counts(m, p->tp, &c);
    PartLayerAct ad, am = {0, 0, 0};
    part_layer_act(m, p, false, o->selective_ops, &ad);
    if (m->experts > 0) part_layer_act(m, p, true, o->selective_ops, &am);
    double shd = 0, shm = 0;
    if (p->optimizer == PLAN_OPTIM_SHAMPOO) {
        shd = part_shampoo_layer_bytes(m, p, false);
        if (m->experts > 0) shm = part_shampoo_layer_bytes(m, p, true);
    }
    /* Without stages[], only the candidates for the peak: the first and last
     * stage (embedding, head, most in flight) and, for uneven splits, all. */
    bool all = stages != NULL || p->n_stage_layers > 0 || (p->uneven && m->layers % (p->pp * p->vpp) != 0) ||
               plan_rank_chunks(p) != p->vpp || p->schedule == PLAN_SCHED_ZBH1; /* in flight differ */
    /* For the peak alone, one chunk per rank and an unordered schedule: a
     * middle stage holds no fewer micro-batches in flight than any later
     * one (inflight), and its total only grows with them, so of the middle
     * stages with the same layers (count, of them MoE) the first decides. */
    bool dominated = !stages && p->vpp == 1 && plan_rank_chunks(p) == 1 && !plan_sched_ordered(p->schedule) &&
                     !plan_hf(p);
    int64_t seen[8][2];
    int nseen = 0;
    PartMemory tmp;
    peak->total_bytes = -1;
    for (int64_t s = 0; s < p->pp; s++) {
        if (!all && s != 0 && s != p->pp - 1) continue;
        if (dominated && s != 0 && s != p->pp - 1 && middle_seen(m, p, s, seen, &nseen)) continue;
        PartMemory *dst = stages ? &stages[s] : &tmp;
        stage_memory(m, p, o, &c, &ad, &am, shd, shm, s, dst);
        if (plan_hf(p)) hf_memory(m, p, o, dst); /* weights, gradients, optimizer as above */
        if (dst->total_bytes > peak->total_bytes) *peak = *dst;
    }
    return TS_OK;
}
