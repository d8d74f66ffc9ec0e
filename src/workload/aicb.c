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

/* The plans AICB's rows cannot carry: TS_ERR_PLAN with why and a hint. */
static TsStatus aicb_check_plan(const ParallelPlan *p, TsError *err)
{
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
    return TS_OK;
}

/* What the rows of one micro-batch repeat: each line's compute in ns
 * (forward, input gradient, weight gradient) and the messages' sizes. */
typedef struct AicbLines {
    const ParallelPlan *p;
    const ModelSpec *m;
    bool compat;          /* AICB 1.1's quirks (--aicb-compat 1.1) */
    int64_t tp;
    double tpc;           /* one micro-batch's activation, 2 B x B x S x H */
    double col_ig;        /* the column lines' ig reduce-scatter (AICB never sizes it: 0) */
    double em[3], half_a[3], half_m[3], ml[3], mo[3], fin[3];
} AicbLines;

/* The blocks' times as AICB's lines carry them: under SP each block halved
 * between its column and row lines; AICB 1.1's AIOB: backward = forward,
 * recompute doubling the attention forward (not its ig). */
static void aicb_lines(const Gen *g, bool compat, AicbLines *ln)
{
    const ParallelPlan *p = ln->p;
    double at[3], hd[3];
    block_ns(&g->attn, at);
    block_ns(&g->mlp, ln->ml);
    block_ns(&g->moe, ln->mo);
    block_ns(&g->embed, ln->em);
    block_ns(&g->head, hd);
    if (compat) {
        bool rec = p->recompute != PLAN_RECOMPUTE_NONE;
        double af = floor(at[0]), mf = floor(ln->ml[0]);
        ln->half_a[0] = p->sp ? floor((rec ? 2 * af : af) / 2) : (rec ? 2 * af : af);
        ln->half_a[1] = ln->half_a[2] = p->sp ? floor(af / 2) : af;
        ln->half_m[0] = ln->half_m[1] = ln->half_m[2] = p->sp ? floor(mf / 2) : mf;
        ln->em[0] = floor(ln->em[0]);
        ln->fin[0] = ln->fin[1] = ln->fin[2] = floor(floor(at[0]) / 2);
    } else {
        for (int i = 0; i < 3; i++) {
            ln->half_a[i] = p->sp ? at[i] / 2 : at[i];
            ln->half_m[i] = p->sp ? ln->ml[i] / 2 : ln->ml[i];
        }
        memcpy(ln->fin, hd, sizeof ln->fin);
    }
}

#define ROW(...) \
    if (!(r = row(rs, __VA_ARGS__))) return false

/* The step's rows before the micro-batches: the DP gradient reduce-scatter
 * and parameter all-gather, the optimizer (opt_ns), the TP and expert-DP
 * syncs. false: out of memory. */
static bool aicb_step_rows(Rows *rs, const ParallelPlan *p, const Sizes *sz, double opt_ns, double tpc)
{
    WlRowSpec *r;
    int64_t tp = p->tp;
    ROW("grad_gather", 1, 1, 1);
    comm(r, WL_PHASE_WG, TS_COLL_ALLGATHER, WL_GROUP_DP, 2 * (sz->P - sz->P_moe), tp);
    ROW("grad_param_comm", 1, 1, 1);
    comm(r, WL_PHASE_WG, TS_COLL_REDUCESCATTER, WL_GROUP_DP, 4 * (sz->P - sz->P_moe), tp);
    ROW("grad_param_compute", 1, opt_ns, 1);
    if (!p->sp) {
        ROW("layernorm", 1, 1, 1);
        comm(r, WL_PHASE_IG, TS_COLL_ALLREDUCE, WL_GROUP_TP, 2 * sz->P, tp);
    }
    ROW("embedding_grads", 1, 1, 1);
    comm(r, WL_PHASE_IG, TS_COLL_ALLREDUCE, WL_GROUP_TP, tpc, tp);
    if (p->ep != p->dp) {
        ROW("moe_grad_norm1", 1, 1, 1);
        comm(r, WL_PHASE_WG, TS_COLL_ALLGATHER, WL_GROUP_DP_EP, 2 * sz->P_moe, tp);
        ROW("moe_grad_norm2", 1, 1, 1);
        comm(r, WL_PHASE_WG, TS_COLL_REDUCESCATTER, WL_GROUP_DP_EP, 4 * sz->P_moe, tp);
    }
    return true;
}

/* A block as its column and row lines (SP: all-gather in, reduce-scatter
 * out) or one line (an all-reduce out). */
static bool aicb_block_rows(Rows *rs, const AicbLines *ln, const char *col, const char *rowname, const char *one,
                            const double t[3])
{
    WlRowSpec *r;
    int64_t tp = ln->tp;
    if (ln->p->sp) {
        ROW(col, t[0], t[1], t[2]);
        comm(r, WL_PHASE_FWD, TS_COLL_ALLGATHER, WL_GROUP_TP, ln->tpc, tp);
        comm(r, WL_PHASE_IG, TS_COLL_REDUCESCATTER, WL_GROUP_TP, ln->col_ig, tp);
        ROW(rowname, t[0], t[1], t[2]);
        comm(r, WL_PHASE_FWD, TS_COLL_REDUCESCATTER, WL_GROUP_TP, ln->tpc, tp);
        comm(r, WL_PHASE_IG, TS_COLL_ALLGATHER, WL_GROUP_TP, ln->tpc, tp);
    } else {
        ROW(one, t[0], t[1], t[2]);
        comm(r, WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_TP, ln->tpc, tp);
    }
    return true;
}

/* An MoE layer's lines: Megatron-Core 0.13's token dispatcher (5 lines);
 * the layer's compute on the first: router, the routed experts at their
 * token counts, the shared experts. */
static bool aicb_moe_rows(Rows *rs, const AicbLines *ln)
{
    WlRowSpec *r;
    const ParallelPlan *p = ln->p;
    int64_t tp = ln->tp;
    double tpc = ln->tpc, k = (double)ln->m->topk;
    const double *mt = ln->compat ? (const double[3]){ln->ml[0], ln->ml[0], ln->ml[0]} : ln->mo;
    TsColl a2a = p->ep > 1 ? TS_COLL_ALLTOALL : TS_COLL_NONE;
    ROW("mlp_moelayer", mt[0], mt[1], mt[2]);
    comm(r, WL_PHASE_FWD, tp > 1 || p->ep > 1 ? TS_COLL_ALLGATHER : TS_COLL_NONE, WL_GROUP_TP,
         2.0 * (double)(p->ep * ln->m->experts * tp), tp);
    ROW("mlp_moelayer", 1, 1, 1);
    comm(r, WL_PHASE_FWD, a2a, WL_GROUP_EP, tpc * k / (double)tp, tp);
    comm(r, WL_PHASE_IG, a2a, WL_GROUP_EP, tpc * k / (double)tp, tp);
    ROW("mlp_moelayer", 1, 1, 1);
    comm(r, WL_PHASE_FWD, TS_COLL_ALLGATHER, WL_GROUP_TP, tpc * k, tp);
    comm(r, WL_PHASE_IG, TS_COLL_REDUCESCATTER, WL_GROUP_TP, tpc * k, tp);
    ROW("mlp_moelayer", 1, 1, 1);
    comm(r, WL_PHASE_FWD, TS_COLL_REDUCESCATTER, WL_GROUP_TP, tpc * k, tp);
    comm(r, WL_PHASE_IG, TS_COLL_ALLGATHER, WL_GROUP_TP, tpc * k, tp);
    ROW("mlp_moelayer", 1, 1, 1);
    comm(r, WL_PHASE_FWD, a2a, WL_GROUP_EP, tpc * k / (double)tp, tp);
    comm(r, WL_PHASE_IG, a2a, WL_GROUP_EP, tpc * k / (double)tp, tp);
    return true;
}

/* One micro-batch's lines: the embedding, the stage's L layers (layers[]
 * their model indices; NULL under compat: all MoE when the model has
 * experts), the final column. *stale: AICB 1.1's stale backward time, the
 * embedding's weight-gradient field. */
static bool aicb_micro_batch_rows(Rows *rs, const AicbLines *ln, int64_t L, const int64_t *layers, double *stale)
{
    WlRowSpec *r;
    int64_t tp = ln->tp;
    const double *em = ln->em, *fin = ln->fin;
    ROW("embedding_layer", em[0], ln->compat ? 1 : em[1], ln->compat ? *stale : em[2]);
    comm(r, WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_TP, ln->tpc, tp);
    for (int64_t li = 0; li < L; li++) {
        bool moe = ln->compat ? ln->m->experts > 0 : model_layer_is_moe(ln->m, layers[li]);
        if (!aicb_block_rows(rs, ln, "attention_column", "attention_row", "attention_layer", ln->half_a)) return false;
        if (moe ? !aicb_moe_rows(rs, ln) : !aicb_block_rows(rs, ln, "mlp_column", "mlp_row", "mlp_layer", ln->half_m))
            return false;
    }
    ROW("final_column", fin[0], fin[1], fin[2]);
    if (ln->p->sp) {
        comm(r, WL_PHASE_FWD, TS_COLL_ALLGATHER, WL_GROUP_TP, ln->tpc, tp);
        comm(r, WL_PHASE_IG, TS_COLL_REDUCESCATTER, WL_GROUP_TP, ln->col_ig, tp);
    } else {
        comm(r, WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_TP, ln->tpc, tp);
    }
    *stale = fin[1];
    return true;
}

/* The step's last rows: the loss's and the optimizer's TP syncs. */
static bool aicb_tail_rows(Rows *rs, const ParallelPlan *p)
{
    WlRowSpec *r;
    static const char *const ce[] = {"cross_entropy1", "cross_entropy2", "cross_entropy3"};
    static const char *const op[] = {"optimizer1", "optimizer2", "optimizer3", "optimizer4"};
    for (int i = 0; i < 3; i++) {
        ROW(ce[i], 0, 0, 0);
        comm(r, WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_TP, (double)(p->seq * p->micro_batch * 4), p->tp);
    }
    for (int i = 0; i < 4; i++) {
        ROW(op[i], 0, 0, 0);
        comm(r, WL_PHASE_FWD, TS_COLL_ALLREDUCE, WL_GROUP_TP, 4, p->tp);
    }
    return true;
}
#undef ROW

/* What the rows leave out of the plan, as the workload's warning. */
static void aicb_warning(Workload *w, const ParallelPlan *p)
{
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
}

TsStatus wl_build_aicb(const WlStep *step, const WlAicbOptions *o, Workload **out, TsError *err)
{
    *out = NULL;
    bool compat = o && o->compat_1_1;
    WlBuildOptions def = {0};
    const ModelSpec *m = step->model;
    const ParallelPlan *p = step->plan;
    TsStatus status = aicb_check_plan(p, err);
    if (status) return status;
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
    AicbLines ln = {.p = p, .m = m, .compat = compat, .tp = tp, .tpc = tpc,
                    .col_ig = compat ? 0 : tpc /* AICB's column ig reduce-scatter is never sized */};
    aicb_lines(&g, compat, &ln);
    double stale = floor(opt_ns / 2); /* AICB's stale backward_compute_time (compat) */
    Rows rs = {0};
    bool ok = aicb_step_rows(&rs, p, &sz, opt_ns, tpc);
    for (int64_t ga = 0; ok && ga < p->grad_accum; ga++) ok = aicb_micro_batch_rows(&rs, &ln, L, st.layers, &stale);
    ok = ok && aicb_tail_rows(&rs, p);
    free(st.layers);
    if (!ok || wl_class_begin(w, "stage0", 0) < 0 || !wl_rows_build(w, rs.r, rs.n)) {
        free(rs.r);
        wl_destroy(w);
        return ts_err(err, TS_ERR_INTERNAL, "out of memory building the AICB workload");
    }
    free(rs.r);
    aicb_warning(w, p);
    *out = w;
    return TS_OK;
}
