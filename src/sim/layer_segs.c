/*
 * layer_segs.c — a layer's forward and backward stream time as the task
 * graph lays it out (src/workload/builder.c block_fwd_as, block_bwd): the
 * compute tasks and the exposed collectives the stream waits for, in order.
 * What runs beside a window on another stream (a ZeRO-3 gather or
 * reduce-scatter, a DP bucket) slows only the compute it meets; with the
 * segments the simulator measures that meeting as the replay does
 * (replay_dag.c comm_overlap) instead of by the window's compute share.
 */
#include <math.h>
#include <string.h>

#include "cost_int.h"

/* Append d seconds of compute (comp) or of waiting; runs of one kind merge. */
void sim_seg_add(SimSegs *s, double d, bool comp)
{
    if (!(d > 0)) return;
    s->len += d;
    if (comp) s->comp += d;
    double v = comp ? d : -d;
    if (s->n > 0 && (s->d[s->n - 1] > 0) == comp) {
        s->d[s->n - 1] += v;
        return;
    }
    if (s->n == SIM_SEGS) { /* never (a backward window has at most 18: two blocks of a full
                               recompute's forward, EP, CP and TP around their compute); the
                               window keeps its length */
        if (comp && !(s->d[s->n - 1] > 0)) s->comp -= d;
        s->d[s->n - 1] += s->d[s->n - 1] > 0 ? d : -d;
        return;
    }
    s->d[s->n++] = v;
}

/* Compute seconds of s (starting at t0) within [a, b). */
static double segs_beside(const SimSegs *s, double t0, double a, double b)
{
    double ov = 0, t = t0;
    for (int32_t i = 0; i < s->n && t < b; i++) {
        double d = fabs(s->d[i]), e = t + d;
        if (s->d[i] > 0) {
            double lo = t > a ? t : a, hi = e < b ? e : b;
            if (hi > lo) ov += hi - lo;
        }
        t = e;
    }
    return ov;
}

void sim_spans_make_room(SimSpans *p)
{
    int32_t i = 0;
    while (i + 1 < p->n && p->e[i] != p->s[i + 1]) i++;
    if (i + 1 < p->n) p->e[i] = p->e[i + 1], i++; /* span i + 1 is merged into i */
    else i = 0;                                   /* none back to back: the oldest goes */
    memmove(p->s + i, p->s + i + 1, (size_t)(p->n - 1 - i) * sizeof *p->s);
    memmove(p->e + i, p->e + i + 1, (size_t)(p->n - 1 - i) * sizeof *p->e);
    p->n--;
}

double sim_spans_walk(SimSpans *p, double t, double len, const SimSegs *sg, bool comp)
{
    double b = t + len, ov = 0, all = sg ? sg->comp : comp ? len : 0;
    int32_t drop = 0;
    for (int32_t i = 0; i < p->n; i++) {
        double s = p->s[i] > t ? p->s[i] : t, e = p->e[i] < b ? p->e[i] : b;
        if (e > s) ov += s == t && e == b ? all : sg ? segs_beside(sg, t, s, e) : comp ? e - s : 0;
        if (p->e[i] <= b && drop == i) drop++;
    }
    if (drop) {
        memmove(p->s, p->s + drop, (size_t)(p->n - drop) * sizeof *p->s);
        memmove(p->e, p->e + drop, (size_t)(p->n - drop) * sizeof *p->e);
        p->n -= drop;
    }
    return ov;
}

/* A block's compute (comp_open: with --tp-overlap its non-GEMM part, then
 * its GEMMs with the TP chain beside them: compute either way). */
static void seg_open(SimSegs *s, double dur) { sim_seg_add(s, dur, true); }

/* --tp-overlap: the stream waits for the chain where the GEMMs it opened
 * under (gemm_covered seconds) do not cover it (tp_close). */
static void seg_tp_wait(SimSegs *s, const SimLayerComm *c, double gemm_covered)
{
    if (c->ov) sim_seg_add(s, c->half - fmin(c->half, gemm_covered), false);
}

/* One block's forward (block_fwd_as) into s. */
static void seg_block_fwd(const CostBlock *b, bool ep, bool attn, const SimLayerComm *c, SimSegs *s)
{
    if (c->sp && !c->ov) sim_seg_add(s, c->ag, false);
    if (ep) {
        sim_seg_add(s, c->ep_d, false);
        seg_open(s, b->fwd);
        seg_tp_wait(s, c, fmin(b->gemm_fwd, b->fwd));
        sim_seg_add(s, c->ep_c, false);
    } else if (attn && c->cp_mode == SIM_CP_RING_SEGS) {
        double hid = c->ring_hid_f;
        seg_open(s, b->fwd - hid);
        seg_tp_wait(s, c, fmin(b->gemm_fwd, b->fwd - hid));
        sim_seg_add(s, hid, true);
        sim_seg_add(s, c->cp_f, false);
    } else if (attn && c->cp_mode == SIM_CP_EXPOSED_SEGS) {
        sim_seg_add(s, c->cp_pre_f, false);
        seg_open(s, b->fwd);
        seg_tp_wait(s, c, fmin(b->gemm_fwd, b->fwd));
        sim_seg_add(s, c->cp_post_f, false);
    } else {
        seg_open(s, b->fwd);
        seg_tp_wait(s, c, fmin(b->gemm_fwd, b->fwd));
    }
    if (!c->ov) sim_seg_add(s, c->sp ? c->rs : c->ar, false);
}

/* One block's backward (block_bwd, weight gradients in the same task
 * stream), its full recompute first (`full`); ig: its input-gradient
 * compute, the selective recompute included. */
static void seg_block_bwd(const CostBlock *b, double ig, bool full, bool ep, bool attn, const SimLayerComm *c,
                          SimSegs *s)
{
    if (full) seg_block_fwd(b, ep, attn, c, s);
    if (c->sp && !c->ov) sim_seg_add(s, c->ag, false);
    if (ep) sim_seg_add(s, c->ep_d, false);
    double cp_after = 0, gemm_ig = fmin(b->gemm_ig, ig);
    if (attn && c->cp_mode == SIM_CP_EXPOSED_SEGS) {
        sim_seg_add(s, c->cp_pre_b, false);
        seg_open(s, ig);
        cp_after = c->cp_post_b;
    } else if (attn && c->cp_mode == SIM_CP_RING_SEGS) {
        double hid = c->ring_hid_b;
        sim_seg_add(s, hid, true);
        sim_seg_add(s, c->cp_b, false);
        seg_open(s, ig - hid);
        gemm_ig = fmin(b->gemm_ig, ig - hid);
    } else {
        seg_open(s, ig);
    }
    if (!c->ov) {
        if (ep) sim_seg_add(s, c->ep_c, false);
        sim_seg_add(s, c->sp ? c->rs : c->ar, false);
        sim_seg_add(s, b->wg, true);
    } else {
        double wg_gemm = fmin(b->gemm_wg, b->wg);
        sim_seg_add(s, wg_gemm, true);
        seg_tp_wait(s, c, gemm_ig + wg_gemm);
        sim_seg_add(s, b->wg - wg_gemm, true);
        if (ep) sim_seg_add(s, c->ep_c, false);
    }
    sim_seg_add(s, cp_after, false);
}

void sim_layer_segs(const Ctx *x, bool moe, const SimLayerComm *c, LayerCost *lc)
{
    const CostBlock *a = &x->cs->b[PART_BLOCK_ATTN];
    const int fb = moe ? PART_BLOCK_MOE : PART_BLOCK_MLP;
    const CostBlock *f = &x->cs->b[fb];
    const bool ep = moe && x->p->ep > 1 && x->tpl->ep_bytes > 0, full = x->p->recompute == PLAN_RECOMPUTE_FULL;
    lc->seg[0] = lc->seg[1] = (SimSegs){0};
    seg_block_fwd(a, false, true, c, &lc->seg[0]);
    seg_block_fwd(f, ep, false, c, &lc->seg[0]);
    /* backward: the MLP / MoE block first */
    seg_block_bwd(f, f->ig + (full ? 0 : x->cs->recompute[fb]), full, ep, false, c, &lc->seg[1]);
    seg_block_bwd(a, a->ig + (full ? 0 : x->cs->recompute[PART_BLOCK_ATTN]), full, false, true, c, &lc->seg[1]);
}
