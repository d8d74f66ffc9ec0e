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
 * 4·H²/TP, give or take a norm). */
#include "cost_int.h"

#include <math.h>
#include <string.h>

typedef struct Feed {
    const Ctx *x;
    const PlanGroupInfo *g;
    TsColl rc;
    double gbytes, max, open, last;
    double gather_bytes;  /* > 0: the bucket's parameters are all-gathered after the step at this size */
    double *fed, *first;  /* layer parameters fed so far (both buffers); noted at the first close */
    SimBucketMemo *memo;
    bool expert;
    SimBuckets *out;
} Feed;

static void close_bucket(Feed *f)
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
        t = sim_coll(f->x, f->rc, b * f->gbytes, f->g, "dp");
        ta = f->gather_bytes > 0 ? sim_coll(f->x, TS_COLL_ALLGATHER, b * f->gather_bytes, f->g, "dp") : 0;
        int k = mm->n < SIM_BUCKET_MEMO ? mm->n++ : SIM_BUCKET_MEMO - 1;
        mm->size[k] = key;
        mm->t[k] = t;
        mm->t_ag[k] = ta;
    }
    f->out->t_dp += t;
    f->out->t_ag += ta;
    if (*f->first < 0) *f->first = *f->fed;
    f->out->n++;
    f->last = t;
}

static void feed_as(Feed *f, double tensor, bool layer)
{
    if (!(tensor > 0)) return;
    if (layer) *f->fed += tensor;
    f->open += tensor;
    if (f->open >= f->max) close_bucket(f);
}

static void feed(Feed *f, double tensor) { feed_as(f, tensor, true); }

void sim_chunk_buckets(const Ctx *x, const LayerCost *dense, const LayerCost *moe, int64_t l0, int64_t nl,
                       double head_params, double emb_params, TsColl rc, double gbytes, double bucket_elems,
                       double gather_bytes, SimBucketMemo *memo, SimBuckets *out)
{
    memset(out, 0, sizeof *out);
    SimBuckets eb = {0};
    Feed d = {.x = x, .g = &x->dpg, .rc = rc, .gbytes = gbytes, .max = bucket_elems, .gather_bytes = gather_bytes,
              .memo = memo, .out = out};
    Feed e = {.x = x, .g = &x->edpg, .rc = rc, .gbytes = gbytes, .max = bucket_elems, .gather_bytes = gather_bytes,
              .memo = memo, .expert = true, .out = &eb};
    double fed = 0, first = -1, total = 0; /* layer parameters fed, at the first close, in all */
    d.fed = e.fed = &fed;
    d.first = e.first = &first;
    feed_as(&d, head_params, false);
    /* a layer that starts with both buffers empty and is like the one
     * before (which also started empty) closes the same buckets: reuse them */
    const LayerCost *prev = NULL;
    double dt = 0, et = 0, dl = 0, el = 0, da = 0, ea = 0;
    int32_t dn = 0, en = 0;
    for (int64_t l = l0 + nl - 1; l >= l0; l--) {
        const LayerCost *lc = moe && model_layer_is_moe(x->m, l) ? moe : dense;
        bool empty = d.open == 0 && e.open == 0;
        total += lc->params;
        if (empty && lc == prev) {
            fed += lc->params; /* (the first close is behind: prev closed some) */
            out->t_dp += dt, out->n += dn, eb.t_dp += et, eb.n += en, out->t_ag += da, eb.t_ag += ea;
            if (dn) d.last = dl;
            if (en) e.last = el;
            continue;
        }
        double t0 = out->t_dp, e0 = eb.t_dp, a0 = out->t_ag, b0 = eb.t_ag;
        int32_t n0 = out->n, m0 = eb.n;
        for (int32_t i = 0; i < lc->n_grad_t; i++) feed(&d, lc->grad_t[i]);
        feed(&e, lc->egrad_t[0]);
        feed(&e, lc->egrad_t[1]);
        prev = empty && d.open == 0 && e.open == 0 ? lc : NULL;
        dt = out->t_dp - t0, dn = out->n - n0, dl = d.last, da = out->t_ag - a0;
        et = eb.t_dp - e0, en = eb.n - m0, el = e.last, ea = eb.t_ag - b0;
    }
    feed_as(&d, emb_params, false);
    close_bucket(&d);
    close_bucket(&e);
    /* the last to start: the dense buffer's final bucket (the embedding's) */
    out->t_last = d.last;
    out->t_dp += eb.t_dp;
    out->n += eb.n;
    out->t_eag = eb.t_ag;
    out->first_frac = first >= 0 && total > 0 ? fmin(1.0, first / total) : 1.0;
}
