/* dp_buckets.c — Megatron-Core's gradient buckets for the simulator.
 *
 * megatron/core/distributed/param_and_grad_buffer.py: the parameters, in
 * backward (reverse registration) order, fill a bucket until it holds at
 * least bucket_size elements (max(40 M, 1 M x DP), sim_dp_bucket_bytes); the
 * bucket then closes at the end of that parameter, and each bucket is
 * reduced as one collective. A parameter larger than the bucket is a bucket
 * of its own; what is left open at the end of the chunk is the last bucket.
 * Per layer the tensors are LayerCost.grad_t (dense) and egrad_t (routed
 * experts, their own buffer over the expert-DP group). The task-graph
 * generator feeds the same tensors (src/workload/builder.c, bucket_feed).
 * Under the distributed optimizer the updated parameters are all-gathered
 * by the same buckets (t_ag dense, t_eag experts; the generator's
 * gather_chunk).
 * Bucket sizes repeat along a chunk of equal layers and across chunks, so
 * their collective times are memoized by size for the whole plan (sizes
 * within 0.1 % share one: fc2, fc1 and the attention of a GPT layer are all
 * 4·H²/TP, give or take a norm).
 * The same walk times them (SimBucketTiming): the reduction's end on one DP
 * stream, each bucket ready when its last gradient is (end_s), how late
 * the gathered buckets, in forward order, let the first forward end
 * (lag_s), and the compute of the window the collectives meet, layer by
 * layer in the task graph's order (beside_s, within_s: LayerCost.seg). */
#include "cost_int.h"

#include <math.h>
#include <string.h>

/* The buckets a layer closed, to replay them when the next layer is the
 * same (their positions from the layer's start, in parameters). */
enum { REUSE_MAX = 8 };
typedef struct Closes {
    int32_t n;  /* > REUSE_MAX: too many to keep, the layer is walked */
    double pos[REUSE_MAX], t[REUSE_MAX];
} Closes;

/* The buckets' collectives still running, as spans on the DP stream
 * (back-to-back ones merged), walked against the backward's compute:
 * beside_s the compute seconds they meet, within_s their seconds inside the
 * window (the replay's measure, replay_dag.c comm_overlap). */
typedef struct Pend {
    SimSpans sp;
    double window_s, beside_s, within_s;
} Pend;

static void pend_push(Pend *p, double s, double e)
{
    double lo = s > 0 ? s : 0, hi = e < p->window_s ? e : p->window_s;
    if (hi > lo) p->within_s += hi - lo;
    sim_spans_push(&p->sp, s, e, true);
}

/* The window's stream from t for len seconds: the segments sg, or (NULL)
 * compute throughout when comp, else a wait. */
static void pend_walk(Pend *p, double t, double len, const SimSegs *sg, bool comp)
{
    if (p->sp.n > 0) p->beside_s += sim_spans_walk(&p->sp, t, len, sg, comp);
}

typedef struct Feed {
    const Ctx *x;
    const PlanGroupInfo *g;
    TsColl rc;
    double gbytes, max, open;
    double gather_bytes;  /* > 0: the bucket's parameters are all-gathered after the step at this size */
    double *now;          /* when the tensors fed now are ready, from the window's start */
    double *end;          /* the DP stream's end so far (both buffers share it), -inf: idle */
    double layer_start;   /* *now's layer began then */
    Closes *closes;       /* this layer's closes (both buffers) */
    SimBucketMemo *memo;
    bool expert;
    SimBuckets *out;
    Pend *pend;
} Feed;

/* One bucket's collective on the DP stream: it starts when its gradients
 * are ready (`ready`, from the window's start) and the one before is done. */
static void stream(Pend *p, double *end, double ready, double t)
{
    double s = *end > ready ? *end : ready;
    *end = s + t;
    pend_push(p, s, *end);
}

static void close_bucket(Feed *f, double ready)
{
    double b = f->open;
    f->open = 0;
    if (!(b > 0) || f->g->size <= 1) return;
    SimBucketMemo *mm = f->memo;
    /* a size within 0.1 % of a known one takes its times scaled by size
     * (these buckets are bandwidth-bound: 1e-3 of a bucket's time at most) */
    double key = f->expert ? -b : b, t = -1, ta = 0;
    for (int i = 0; i < mm->n && t < 0; i++)
        if (fabs(mm->size[i] - key) <= 1e-3 * b) t = mm->t[i] * key / mm->size[i], ta = mm->t_ag[i] * key / mm->size[i];
    if (t < 0) {
        t = sim_coll(f->x, f->rc, b * f->gbytes, f->g, HW_GROUP_DP);
        ta = f->gather_bytes > 0 ? sim_coll(f->x, TS_COLL_ALLGATHER, b * f->gather_bytes, f->g, HW_GROUP_DP) : 0;
        int k = mm->n < SIM_BUCKET_MEMO ? mm->n++ : SIM_BUCKET_MEMO - 1;
        mm->size[k] = key;
        mm->t[k] = t;
        mm->t_ag[k] = ta;
    }
    f->out->t_dp += t;
    f->out->t_ag += ta;
    f->out->n++;
    stream(f->pend, f->end, ready, t);
    Closes *c = f->closes;
    if (c->n < REUSE_MAX) c->pos[c->n] = ready - f->layer_start, c->t[c->n] = t;
    c->n++;
}

static void feed(Feed *f, double tensor)
{
    if (!(tensor > 0)) return;
    f->open += tensor;
    if (f->open >= f->max) close_bucket(f, *f->now);
}

/* The gather lag's term of layer l (its forward starts after the
 * embedding's and layers l0..l-1's) once buckets worth `gathered` seconds
 * of all-gather closed before it (see sim_chunk_buckets). */
static double lag_piece(const SimBucketTiming *tm, double gathered, int64_t l, int64_t l0)
{
    return -gathered - (tm->emb_fwd_s + (double)(l - l0) * tm->layer_fwd_s);
}

/* A layer's part of the window: its backward's segments, or (W pass) its
 * weight gradients, all compute. */
static void walk_layer(Pend *p, const LayerCost *lc, double t, double span, bool w_pass)
{
    if (w_pass) pend_walk(p, t, span, NULL, true);
    else pend_walk(p, t, span, &lc->seg[1], true);
}

void sim_chunk_buckets(const Ctx *x, const SimLayerSet *ls, int64_t l0, int64_t nl,
                       double head_params, double emb_params, TsColl rc, double gbytes, double bucket_elems,
                       double gather_bytes, const SimBucketTiming *tm, SimBucketMemo *memo, SimBuckets *out)
{
    memset(out, 0, sizeof *out);
    SimBuckets eb = {0};
    double now = 0, end = -INFINITY;
    /* the gather lag: the buckets are gathered in reverse order of closing,
     * so a piece fed (backward) after buckets worth C of gathers closed has
     * all its parameters at T - C, T the chunk's gathers (known at the
     * end); it starts its forward at F: lag = T + max(-C - F) */
    double lag = head_params > 0 ? -(tm->emb_fwd_s + (double)nl * tm->layer_fwd_s) : -INFINITY;
    Closes cur = {0};
    Pend pend = {.window_s = tm->window_s};
    Feed d = {.x = x, .g = &x->dpg, .rc = rc, .gbytes = gbytes, .max = bucket_elems, .gather_bytes = gather_bytes,
              .now = &now, .end = &end, .closes = &cur, .memo = memo, .out = out, .pend = &pend};
    Feed e = d;
    e.g = &x->edpg;
    e.expert = true;
    e.out = &eb;
    feed(&d, head_params); /* ready at the window's start */
    /* a layer that starts with both buffers empty and is like the one
     * before (which also started empty) closes the same buckets at the
     * same places: replay them */
    const LayerCost *prev = NULL;
    Closes last = {0};
    int32_t dn = 0, en = 0;
    double dt = 0, et = 0, da = 0, ea = 0;
    for (int64_t l = l0 + nl - 1; l >= l0; l--) {
        const LayerCost *lc = sim_layer_at(x, ls, l);
        bool empty = d.open == 0 && e.open == 0;
        double piece = lag_piece(tm, out->t_ag + eb.t_ag, l, l0);
        if (piece > lag) lag = piece;
        double t_layer = now, part = tm->w_pass ? lc->wgrad_mlp_s : lc->bwd_mlp_s;
        double span = tm->w_pass ? lc->wgrad : lc->bwd_span_s;
        if (empty && lc == prev) {
            for (int32_t k = 0; k < last.n; k++) stream(&pend, &end, t_layer + last.pos[k], last.t[k]);
            now = t_layer + span;
            out->t_dp += dt, out->n += dn, eb.t_dp += et, eb.n += en, out->t_ag += da, eb.t_ag += ea;
            walk_layer(&pend, lc, t_layer, span, tm->w_pass);
            /* a stream that stays behind: every bucket of the alike layers
             * below starts when the one before ends, and one span covers
             * each of those layers; they are added at once */
            double per = dt + et, a0 = end;
            if (pend.sp.n == 1 && pend.sp.s[0] <= now && end >= now + span && per >= span && span > 0) {
                int64_t k = 0;
                while (l - k - 1 >= l0 && sim_layer_at(x, ls, l - k - 1) == lc) k++;
                if (k > 0) {
                    /* the lag's terms are linear over those layers: their ends bound it */
                    double dk = (double)k, T1 = out->t_ag + eb.t_ag;
                    lag = fmax(lag, fmax(lag_piece(tm, T1, l - 1, l0), lag_piece(tm, T1 + (dk - 1) * (da + ea), l - k, l0)));
                    end = a0 + dk * per;
                    pend_push(&pend, a0, end); /* joins the running span */
                    pend.beside_s += dk * (tm->w_pass ? span : lc->seg[1].comp);
                    now += dk * span;
                    out->t_dp += dk * dt, out->n += (int32_t)k * dn, out->t_ag += dk * da;
                    eb.t_dp += dk * et, eb.n += (int32_t)k * en, eb.t_ag += dk * ea;
                    l -= k;
                }
            }
            continue;
        }
        double t0 = out->t_dp, e0 = eb.t_dp, a0 = out->t_ag, b0 = eb.t_ag;
        int32_t n0 = out->n, m0 = eb.n;
        cur.n = 0;
        d.layer_start = e.layer_start = t_layer;
        /* as the task graph feeds them (builder.c grad_block): at the end of
         * the MLP / MoE block's backward its dense tensors, then its routed
         * experts'; at the end of the layer's, the attention's */
        now = t_layer + part;
        for (int32_t i = 0; i < 2 && i < lc->n_grad_t; i++) feed(&d, lc->grad_t[i]);
        feed(&e, lc->egrad_t[0]);
        feed(&e, lc->egrad_t[1]);
        now = t_layer + span;
        for (int32_t i = 2; i < lc->n_grad_t; i++) feed(&d, lc->grad_t[i]);
        walk_layer(&pend, lc, t_layer, span, tm->w_pass);
        prev = empty && d.open == 0 && e.open == 0 && cur.n <= REUSE_MAX ? lc : NULL;
        last = cur;
        dt = out->t_dp - t0, dn = out->n - n0, da = out->t_ag - a0;
        et = eb.t_dp - e0, en = eb.n - m0, ea = eb.t_ag - b0;
    }
    /* what is left open, the embedding's bucket last: ready at the end
     * (and gathered right after the experts' last one, first of all) */
    if (emb_params > 0 && -(out->t_ag + eb.t_ag) > lag) lag = -(out->t_ag + eb.t_ag);
    /* the rest of the window: the embedding's backward (its input
     * gradient's TP collective first) or a W pass's weight gradients */
    double rest = tm->window_s - now, wait = tm->w_pass ? 0 : fmin(tm->tail_wait_s, rest);
    pend_walk(&pend, now, wait, NULL, false);
    pend_walk(&pend, now + wait, rest - wait, NULL, true);
    now = tm->window_s;
    feed(&d, emb_params);
    close_bucket(&d, tm->window_s);
    close_bucket(&e, tm->window_s);
    out->beside_s = pend.beside_s;
    out->within_s = pend.within_s;
    out->t_dp += eb.t_dp;
    out->n += eb.n;
    out->t_eag = eb.t_ag;
    out->end_s = end > -INFINITY ? end : 0;
    double T = out->t_ag + eb.t_ag;
    out->lag_s = T > 0 && lag > -INFINITY ? T + lag : 0;
}
