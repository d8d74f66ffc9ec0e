/* AICB's SimAI workload for one pipeline stage (reference/simai_aicb.md
 * §2-3, the AIOB path of SimAI_training_workload_generator.py), with the
 * compute times of trainsim's costing (builder_cost.c, the blocks the task
 * graph and the simulator cost alike) instead of AIOB measurements.
 *
 * The plan the file is written for has CP folded into DP (AICB has no
 * context parallelism: the CLI warns). Default mode writes what makes SimAI
 * compute the plan that was asked for:
 * `vpp:` is the plan's interleaving degree (SimAI's bubble formula divides by
 * it), tensor-parallel collectives are NONE at TP 1, every row carries the
 * kernel times of its block (backward as costed, recomputation in the
 * input-gradient phase), MoE layers charge the routed and shared experts and
 * dense layers stay dense, and parameter sizes are the plan's (GQA, gated
 * MLPs, experts). The file describes the pipeline stage with the most
 * layers (then the most MoE layers), the one that sets the pace.
 * `compat_1_1` reproduces AICB v1.1 instead: its header, its MockedParam
 * sizes and its AIOB arrangement (backward = forward, recompute doubling the
 * attention forward, the stale embedding wg time, the 0-byte column ig
 * reduce-scatter, final_column timed as attention).
 *
 * Legend: B micro-batch, S seq, H hidden, F ffn, V padded vocab, TP, L
 * layers of the stage. tp_comm = 2*B*S*H bytes (bf16, full sequence, not /TP). */
#include "builder_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- rows ---------------------------------------------------------------------------- */
typedef struct Rows {
    WlRowSpec *r;
    int64_t n, cap;
} Rows;

/* A row with compute times f, i, w in ns. */
static WlRowSpec *row(Rows *rs, const char *name, double f, double i, double w)
{
    if (rs->n == rs->cap) {
        int64_t nc = rs->cap ? rs->cap * 2 : 256;
        WlRowSpec *p = realloc(rs->r, (size_t)nc * sizeof *p);
        if (!p) return NULL;
        rs->r = p;
        rs->cap = nc;
    }
    WlRowSpec *r = &rs->r[rs->n++];
    memset(r, 0, sizeof *r);
    r->name = name;
    double t[3] = {f, i, w};
    for (int ph = 0; ph < 3; ph++) {
        r->has_comp[ph] = true;
        r->comp_s[ph] = t[ph] * 1e-9;
    }
    r->process_time = 100;
    return r;
}

/* Slot ph's collective; a tensor-parallel one is NONE at TP 1 (a TP
 * collective has no meaning there, and SimAI's bandwidth for it is 0). */
static void comm(WlRowSpec *r, int ph, TsColl c, WlGroup g, double bytes, int64_t tp)
{
    if (g == WL_GROUP_TP && tp <= 1) c = TS_COLL_NONE;
    r->coll[ph] = c;
    r->group[ph] = g;
    r->bytes[ph] = c == TS_COLL_NONE ? 0 : bytes;
    if (ph == WL_PHASE_WG) r->flags[ph] = WL_F_ASYNC;
}

/* ---- the stage the file describes ------------------------------------------------------ */
typedef struct Stage {
    int64_t *layers;        /* layer indices of the stage, in chunk order */
    int64_t n_layers, n_moe;
} Stage;


/* The pipeline rank with the most layers over its chunks (ties: the most MoE
 * layers, then the lowest rank), its layers in chunk order. */
static bool pick_stage(const ModelSpec *m, const ParallelPlan *p, Stage *st)
{
    int64_t v = p->vpp > 1 ? p->vpp : 1, chunks = p->pp * v;
    int64_t *first = malloc((size_t)(chunks + 1) * sizeof *first);
    if (!first) return false;
    wl_gen_chunk_split(m, p, chunks, first);
    int64_t best = 0, best_n = -1, best_moe = -1;
    for (int64_t s = 0; s < p->pp; s++) {
        int64_t n = 0, nm = 0;
        for (int64_t k = 0; k < v; k++)
            for (int64_t l = first[k * p->pp + s]; l < first[k * p->pp + s + 1]; l++) {
                n++;
                nm += model_layer_is_moe(m, l);
            }
        if (n > best_n || (n == best_n && nm > best_moe)) {
            best = s;
            best_n = n;
            best_moe = nm;
        }
    }
    st->layers = malloc((size_t)(best_n > 0 ? best_n : 1) * sizeof *st->layers);
    if (!st->layers) {
        free(first);
        return false;
    }
    st->n_layers = 0;
    st->n_moe = best_moe;
    for (int64_t k = 0; k < v; k++)
        for (int64_t l = first[k * p->pp + best]; l < first[k * p->pp + best + 1]; l++) st->layers[st->n_layers++] = l;
    free(first);
    return true;
}

/* ---- AICB v1.1 (compat): MockedParam sizes and the AIOB arrangement ----------------- */
typedef struct Sizes {
    double P;     /* parameters per (stage, TP rank) */
    double P_moe; /* of which routed experts */
} Sizes;

static void compat_sizes(const ModelSpec *m, const ParallelPlan *p, int64_t L, Sizes *s)
{
    int64_t tp = p->tp, H = m->hidden, S = p->seq, V = model_padded_vocab(m, tp), kv_ch = H / m->heads;
    double emb = 2.0 * (double)(V / tp) * (double)H + (double)S * (double)H;
    double attn = (double)H * (double)(3 * kv_ch * m->heads / tp) + (double)H * (double)(kv_ch * m->heads / tp);
    double ln = p->sp ? 2.0 * (double)H : 0;
    double mlp = 2.0 * (double)H * (double)(m->ffn / tp);
    s->P_moe = 0;
    if (m->experts > 0) {
        double e = (double)H * (double)(m->moe_ffn > 0 ? m->moe_ffn : m->ffn) * (double)m->experts / (double)p->ep /
                   (double)tp * 2.0;
        s->P_moe = e * (double)L;
        mlp = 0;
    }
    s->P = emb + (double)L * (attn + ln + mlp) + s->P_moe + (p->sp ? (double)H * (double)(V / tp) : 0);
}

/* Default mode: the stage's parameters on one rank, as the blocks count them
 * (the embedding and the head on every stage, as AICB's file has them). */
static void plan_sizes(const Gen *g, const Stage *st, Sizes *s)
{
    s->P = g->embed.params + g->head.params;
    s->P_moe = 0;
    for (int64_t i = 0; i < st->n_layers; i++) {
        bool moe = model_layer_is_moe(g->m, st->layers[i]);
        s->P += g->attn.params + (moe ? g->moe.params : g->mlp.params);
        s->P_moe += moe ? g->moe.eparams : 0;
    }
}

/* ns of a block's phases: forward, input-gradient (with what is recomputed
 * before it), weight-gradient. */
static void block_ns(const Block *b, double t[3])
{
    t[0] = b->fwd_s * 1e9;
    t[1] = (b->ig_s + b->recompute_s) * 1e9;
    t[2] = b->wg_s * 1e9;
}

TsStatus wl_build_aicb(const WlStep *step, const WlAicbOptions *o, Workload **out, TsError *err)
{
    *out = NULL;
    bool compat = o && o->compat_1_1;
    WlBuildOptions def = {0};
    const ModelSpec *m = step->model;
    const ParallelPlan *p = step->plan;
    if (plan_sched_ordered(p->schedule)) {
        /* SimAI computes a 1F1B bubble from the header; the rows have no W
         * passes or F&B pairs */
        ts_err(err, TS_ERR_PLAN, "AICB's rows have no --schedule %s: SimAI prices every plan's bubble as 1F1B's",
               plan_sched_name(p->schedule));
        ts_err_hint(err, "write the plan as --format json or chakra, whose task graphs run it, or the rows with "
                         "--schedule 1f1b");
        return TS_ERR_PLAN;
    }
    if (p->schedule == PLAN_SCHED_INTERLEAVED && plan_vpp_group(p) != p->pp) {
        /* the header's pp, vpp and ga are all SimAI reads of the schedule */
        bool own = p->vpp_group > 0;
        ts_err(err, TS_ERR_PLAN, "AICB's header has no interleaved micro-batch group (%s %lld): SimAI prices the "
                                 "schedule from pp, vpp and ga alone",
               own ? "--vpp-group" : "torchtitan's groups of", (long long)plan_vpp_group(p));
        ts_err_hint(err, own ? "write the plan as --format json or chakra, whose task graphs run its order, or drop "
                               "--vpp-group"
                             : "write the plan as --format json or chakra, whose task graphs run its order, or run "
                               "a multiple of --pp micro-batches per pipeline");
        return TS_ERR_PLAN;
    }
    if (p->dp_shard > 0 && p->zero >= 3) {
        ts_err(err, TS_ERR_PLAN, "AICB's rows have no HSDP groups (--dp-shard): its ZeRO-3 rows span all of DP");
        ts_err_hint(err, "write the plan as --format json or chakra, whose shard and replicate groups carry it");
        return TS_ERR_PLAN;
    }
    Gen g = {.m = m, .p = p, .t = step->tpl, .cc = &step->cc, .o = o && o->build ? o->build : &def, .n_chunks = p->pp * p->vpp,
             .dpn = p->dp * p->cp};
    wl_gen_blocks(&g, step->cost);
    Stage st = {0};
    if (!pick_stage(m, p, &st)) return ts_err(err, TS_ERR_INTERNAL, "out of memory building the AICB workload");
    int64_t tp = p->tp, S = p->seq, B = p->micro_batch, H = m->hidden;
    /* AICB: num_layers // PP layers in every stage */
    int64_t L = compat ? m->layers / p->pp : st.n_layers;
    Sizes sz;
    if (compat) compat_sizes(m, p, L, &sz);
    else plan_sizes(&g, &st, &sz);
    double tpc = 2.0 * (double)(B * S * H);
    /* the optimizer step on the rank's shard (AICB's grad_param_compute: its
     * param_time, one pass over the fp32 state) */
    double opt_bytes = g.o->optimizer_bytes > 0 ? g.o->optimizer_bytes : 24.0;
    double opt_ns = floor(hw_memory_time_s(step->cc.hw, opt_bytes * sz.P / (double)p->dp) * 1e9);

    Workload *w = wl_create(p->gpus, err);
    if (!w) {
        free(st.layers);
        return TS_ERR_INTERNAL;
    }
    w->par = (WlParallel){.world = p->gpus, .tp = tp, .cp = 1, .pp = p->pp, .dp = p->dp, .ep = p->ep,
                          .vpp = p->vpp > 1 ? p->vpp : 1, .layers_per_stage = L, .ga = p->grad_accum,
                          .micro_batch = B, .seq = S,
                          .pp_comm_bytes = p->pp > 1 ? tpc / (p->sp ? (double)tp : 1.0) : 0};
    snprintf(w->source, sizeof w->source, "trainsim %s: %s (AICB layout)", TRAINSIM_VERSION, m->name);
    snprintf(w->policy, sizeof w->policy, "HYBRID_TRANSFORMER_FWD_IN_BCKWD");
    Rows rs = {0};
    WlRowSpec *r;
#define ROW(...) \
    if (!(r = row(&rs, __VA_ARGS__))) goto oom
    ROW("grad_gather", 1, 1, 1);
    comm(r, WL_PHASE_WG, TS_COLL_ALLGATHER, WL_GROUP_DP, 2 * (sz.P - sz.P_moe), tp);
    ROW("grad_param_comm", 1, 1, 1);
    comm(r, WL_PHASE_WG, TS_COLL_REDUCESCATTER, WL_GROUP_DP, 4 * (sz.P - sz.P_moe), tp);
    ROW("grad_param_compute", 1, opt_ns, 1);
    if (!p->sp) {
        ROW("layernorm", 1, 1, 1);
        comm(r, WL_PHASE_IG, TS_COLL_ALLREDUCE, WL_GROUP_TP, 2 * sz.P, tp);
    }
    ROW("embedding_grads", 1, 1, 1);
    comm(r, WL_PHASE_IG, TS_COLL_ALLREDUCE, WL_GROUP_TP, tpc, tp);
    if (p->ep != p->dp) {
        ROW("moe_grad_norm1", 1, 1, 1);
        comm(r, WL_PHASE_WG, TS_COLL_ALLGATHER, WL_GROUP_DP_EP, 2 * sz.P_moe, tp);
        ROW("moe_grad_norm2", 1, 1, 1);
        comm(r, WL_PHASE_WG, TS_COLL_REDUCESCATTER, WL_GROUP_DP_EP, 4 * sz.P_moe, tp);
    }
    double at[3], ml[3], mo[3], em[3], hd[3];
    block_ns(&g.attn, at);
    block_ns(&g.mlp, ml);
    block_ns(&g.moe, mo);
    block_ns(&g.embed, em);
    block_ns(&g.head, hd);
    double half_a[3], half_m[3];
    if (compat) {
        /* AIOB: backward = forward; SP halves each block between its column
         * and row lines; recompute doubles the attention forward (not ig) */
        bool rec = p->recompute != PLAN_RECOMPUTE_NONE;
        double af = floor(at[0]), mf = floor(ml[0]);
        half_a[0] = p->sp ? floor((rec ? 2 * af : af) / 2) : (rec ? 2 * af : af);
        half_a[1] = half_a[2] = p->sp ? floor(af / 2) : af;
        half_m[0] = half_m[1] = half_m[2] = p->sp ? floor(mf / 2) : mf;
        em[0] = floor(em[0]);
    } else {
        for (int i = 0; i < 3; i++) {
            half_a[i] = p->sp ? at[i] / 2 : at[i];
            half_m[i] = p->sp ? ml[i] / 2 : ml[i];
        }
    }
    double fin[3];
    if (compat) fin[0] = fin[1] = fin[2] = floor(floor(at[0]) / 2);
    else memcpy(fin, hd, sizeof fin);
    double col_ig = compat ? 0 : tpc; /* AICB's column ig reduce-scatter is never sized */
    double stale = floor(opt_ns / 2);  /* AICB's stale backward_compute_time (compat) */
    double k = (double)m->topk;
    for (int64_t ga = 0; ga < p->grad_accum; ga++) {
        ROW("embedding_layer", em[0], compat ? 1 : em[1], compat ? stale : em[2]);
        comm(r, WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_TP, tpc, tp);
        for (int64_t li = 0; li < L; li++) {
            bool moe = compat ? m->experts > 0 : model_layer_is_moe(m, st.layers[li]);
            if (p->sp) {
                ROW("attention_column", half_a[0], half_a[1], half_a[2]);
                comm(r, WL_PHASE_FWD, TS_COLL_ALLGATHER, WL_GROUP_TP, tpc, tp);
                comm(r, WL_PHASE_IG, TS_COLL_REDUCESCATTER, WL_GROUP_TP, col_ig, tp);
                ROW("attention_row", half_a[0], half_a[1], half_a[2]);
                comm(r, WL_PHASE_FWD, TS_COLL_REDUCESCATTER, WL_GROUP_TP, tpc, tp);
                comm(r, WL_PHASE_IG, TS_COLL_ALLGATHER, WL_GROUP_TP, tpc, tp);
            } else {
                ROW("attention_layer", half_a[0], half_a[1], half_a[2]);
                comm(r, WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_TP, tpc, tp);
            }
            if (moe) {
                /* Megatron-Core 0.13's token dispatcher (5 lines); the layer's
                 * compute on the first: router, the routed experts at their
                 * token counts, the shared experts */
                const double *mt = compat ? (const double[3]){ml[0], ml[0], ml[0]} : mo;
                ROW("mlp_moelayer", mt[0], mt[1], mt[2]);
                comm(r, WL_PHASE_FWD, tp > 1 || p->ep > 1 ? TS_COLL_ALLGATHER : TS_COLL_NONE, WL_GROUP_TP,
                     2.0 * (double)(p->ep * m->experts * tp), tp);
                ROW("mlp_moelayer", 1, 1, 1);
                comm(r, WL_PHASE_FWD, p->ep > 1 ? TS_COLL_ALLTOALL : TS_COLL_NONE, WL_GROUP_EP, tpc * k / (double)tp, tp);
                comm(r, WL_PHASE_IG, p->ep > 1 ? TS_COLL_ALLTOALL : TS_COLL_NONE, WL_GROUP_EP, tpc * k / (double)tp, tp);
                ROW("mlp_moelayer", 1, 1, 1);
                comm(r, WL_PHASE_FWD, TS_COLL_ALLGATHER, WL_GROUP_TP, tpc * k, tp);
                comm(r, WL_PHASE_IG, TS_COLL_REDUCESCATTER, WL_GROUP_TP, tpc * k, tp);
                ROW("mlp_moelayer", 1, 1, 1);
                comm(r, WL_PHASE_FWD, TS_COLL_REDUCESCATTER, WL_GROUP_TP, tpc * k, tp);
                comm(r, WL_PHASE_IG, TS_COLL_ALLGATHER, WL_GROUP_TP, tpc * k, tp);
                ROW("mlp_moelayer", 1, 1, 1);
                comm(r, WL_PHASE_FWD, p->ep > 1 ? TS_COLL_ALLTOALL : TS_COLL_NONE, WL_GROUP_EP, tpc * k / (double)tp, tp);
                comm(r, WL_PHASE_IG, p->ep > 1 ? TS_COLL_ALLTOALL : TS_COLL_NONE, WL_GROUP_EP, tpc * k / (double)tp, tp);
            } else if (p->sp) {
                ROW("mlp_column", half_m[0], half_m[1], half_m[2]);
                comm(r, WL_PHASE_FWD, TS_COLL_ALLGATHER, WL_GROUP_TP, tpc, tp);
                comm(r, WL_PHASE_IG, TS_COLL_REDUCESCATTER, WL_GROUP_TP, col_ig, tp);
                ROW("mlp_row", half_m[0], half_m[1], half_m[2]);
                comm(r, WL_PHASE_FWD, TS_COLL_REDUCESCATTER, WL_GROUP_TP, tpc, tp);
                comm(r, WL_PHASE_IG, TS_COLL_ALLGATHER, WL_GROUP_TP, tpc, tp);
            } else {
                ROW("mlp_layer", half_m[0], half_m[1], half_m[2]);
                comm(r, WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_TP, tpc, tp);
            }
        }
        ROW("final_column", fin[0], fin[1], fin[2]);
        if (p->sp) {
            comm(r, WL_PHASE_FWD, TS_COLL_ALLGATHER, WL_GROUP_TP, tpc, tp);
            comm(r, WL_PHASE_IG, TS_COLL_REDUCESCATTER, WL_GROUP_TP, col_ig, tp);
        } else {
            comm(r, WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_TP, tpc, tp);
        }
        stale = fin[1];
    }
    for (int i = 1; i <= 3; i++) {
        static const char *const ce[] = {"", "cross_entropy1", "cross_entropy2", "cross_entropy3"};
        ROW(ce[i], 0, 0, 0);
        comm(r, WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_TP, (double)(S * B * 4), tp);
    }
    for (int i = 1; i <= 4; i++) {
        static const char *const op[] = {"", "optimizer1", "optimizer2", "optimizer3", "optimizer4"};
        ROW(op[i], 0, 0, 0);
        comm(r, WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_TP, 4, tp);
    }
#undef ROW
    free(st.layers);
    if (wl_class_begin(w, "stage0", 0) < 0 || !wl_rows_build(w, rs.r, rs.n)) goto oom_w;
    free(rs.r);
    if (p->ep > 1 && (p->moe_dispatch == PLAN_MOE_DISPATCH_DEEPEP || p->moe_imbalance > 1.0 || p->moe_capacity > 0))
        snprintf(w->warning, sizeof w->warning,
                 "AICB's rows carry no DeepEP route, load imbalance or capacity: SimAI (and the replay) cost the "
                 "EP all-to-alls as NCCL's over a balanced load; --format json or chakra keep them");
    else if (plan_rs_per_microbatch(p) && p->dp * p->cp > 1)
        snprintf(w->warning, sizeof w->warning,
                 "AICB's rows reduce the gradients once per step: the reduce-scatter after each of the %lld "
                 "micro-batches (ZeRO-%d)%s not in them; --format json or chakra keep %s",
                 (long long)p->grad_accum, p->zero, p->zero >= 3 ? " and the per-layer parameter gathers are" : " is",
                 p->zero >= 3 ? "them" : "it");
    *out = w;
    return TS_OK;
oom:
    free(st.layers);
oom_w:
    free(rs.r);
    wl_destroy(w);
    return ts_err(err, TS_ERR_INTERNAL, "out of memory building the AICB workload");
}
