/* fit.c — for a plan that does not fit in memory, the knobs that make it fit
 * without changing the GPUs or the parallel layout: shard the optimizer
 * state, recompute, a smaller micro-batch, FSDP; one knob first, then two.
 * What `simulate` and `memory` print beside "does not fit". */
#include <stdio.h>
#include <string.h>

#include "trainsim/partition.h"

/* The single knobs, cheapest in step time first. */
typedef enum { KNOB_SHARD_OPT, KNOB_SELECTIVE, KNOB_HALF_MB, KNOB_FULL, KNOB_ZERO3, KNOB_COUNT } Knob;

/* Apply knob k to *q (a copy of the plan) and name it in flag (cap bytes);
 * false when it changes nothing for this plan. */
static bool apply(Knob k, ParallelPlan *q, char *flag, size_t cap)
{
    switch (k) {
    case KNOB_SHARD_OPT:
        if (q->dist_opt || q->zero > 0 || q->dp * q->cp < 2) return false;
        if (q->framework == PLAN_FRAMEWORK_MEGATRON) {
            q->dist_opt = true;
            snprintf(flag, cap, "--dist-opt");
        } else {
            q->zero = 1;
            snprintf(flag, cap, "--zero 1");
        }
        return true;
    case KNOB_SELECTIVE:
        if (q->recompute != PLAN_RECOMPUTE_NONE) return false;
        q->recompute = PLAN_RECOMPUTE_SELECTIVE;
        snprintf(flag, cap, "--recompute selective");
        return true;
    case KNOB_HALF_MB:
        if (q->micro_batch < 2 || q->micro_batch % 2) return false;
        q->micro_batch /= 2;
        q->grad_accum *= 2;
        snprintf(flag, cap, "--micro-batch %lld", (long long)q->micro_batch);
        return true;
    case KNOB_FULL:
        if (q->recompute == PLAN_RECOMPUTE_FULL && q->recompute_layers == 0) return false;
        q->recompute = PLAN_RECOMPUTE_FULL;
        q->recompute_layers = 0;
        snprintf(flag, cap, "--recompute full");
        return true;
    case KNOB_ZERO3:
        if (q->zero >= 3 || q->dp * q->cp < 2) return false;
        q->zero = 3;
        q->dist_opt = false;
        snprintf(flag, cap, "--zero 3");
        return true;
    default: return false;
    }
}

/* The most loaded stage's memory of plan q when it is valid and fits, else
 * a negative number. */
static double fits(const ModelSpec *m, const ParallelPlan *q, const PartMemOptions *o)
{
    TsError err;
    err.msg[0] = '\0';
    PartMemory pk;
    if (plan_validate(m, q, &err) != TS_OK || part_memory(m, q, o, NULL, &pk, &err) != TS_OK) return -1;
    return pk.total_bytes <= o->capacity_bytes ? pk.total_bytes : -1;
}

int64_t part_fewest_recompute_layers(const ModelSpec *m, ParallelPlan *p, const PartMemOptions *o, double cap,
                                     double *bytes)
{
    /* past a chunk's layers (the uneven rule's largest chunk; an N past a
     * chunk's layers is refused, as all of them); one layer first, the
     * common case, then a bisection: memory falls as layers are recomputed */
    int64_t chunks = p->pp * (p->vpp > 0 ? p->vpp : 1), lo = 1, hi = (m->layers + chunks - 1) / chunks + 1;
    int64_t fit_n = 0;
    double fit_bytes = 0;
    while (lo < hi) {
        int64_t mid = lo == 1 ? 1 : lo + (hi - lo) / 2;
        p->recompute_layers = mid;
        PartMemory pk;
        if (plan_validate(m, p, NULL) != TS_OK || part_memory(m, p, o, NULL, &pk, NULL) != TS_OK)
            hi = mid;
        else if (pk.total_bytes <= cap)
            hi = mid, fit_n = mid, fit_bytes = pk.total_bytes;
        else
            lo = mid + 1;
    }
    if (fit_n != lo) {
        p->recompute_layers = 0;
        return 0;
    }
    p->recompute_layers = lo;
    *bytes = fit_bytes;
    return lo;
}

/* The plan with knobs a (and b, unless KNOB_COUNT) when it is valid and
 * fits: its flags and memory in *alt. Full recompute takes the fewest
 * layers per chunk that fit (part_fewest_recompute_layers), all of them
 * only where no fewer do. */
static bool try_knobs(const ModelSpec *m, const ParallelPlan *p, const PartMemOptions *o, Knob a, Knob b,
                      PartFitAlt *alt)
{
    ParallelPlan q = *p;
    char fa[40], fb[40] = "", fl[48] = "";
    if (!apply(a, &q, fa, sizeof fa)) return false;
    if (b != KNOB_COUNT && !apply(b, &q, fb, sizeof fb)) return false;
    double bytes = -1;
    int64_t n = a == KNOB_FULL || b == KNOB_FULL ? part_fewest_recompute_layers(m, &q, o, o->capacity_bytes, &bytes) : 0;
    if (n > 0) snprintf(fl, sizeof fl, " --recompute-layers %lld", (long long)n);
    else if ((bytes = fits(m, &q, o)) < 0) return false;
    snprintf(alt->flags, sizeof alt->flags, "%s%s%s%s%s", fa, a == KNOB_FULL ? fl : "", fb[0] ? " " : "", fb,
             b == KNOB_FULL ? fl : "");
    alt->total_bytes = bytes;
    return true;
}

int part_fit_alternatives(const ModelSpec *m, const ParallelPlan *p, const PartMemOptions *o, PartFitAlt *out,
                          int max)
{
    if (!(o->capacity_bytes > 0) || max < 1) return 0;
    int n = 0;
    for (int a = 0; a < KNOB_COUNT && n < max; a++)
        if (try_knobs(m, p, o, (Knob)a, KNOB_COUNT, &out[n])) n++;
    if (n) return n;
    for (int a = 0; a < KNOB_COUNT && n < max; a++)
        for (int b = a + 1; b < KNOB_COUNT && n < max; b++)
            if (!(a == KNOB_SELECTIVE && b == KNOB_FULL) && try_knobs(m, p, o, (Knob)a, (Knob)b, &out[n])) n++;
    return n;
}

void part_fit_hint(const ParallelPlan *p, const PartFitAlt *alt, int n, char *buf, size_t cap)
{
    size_t k = 0;
    if (n <= 0) {
        /* HuggingFace's own modules train data-parallel only (plan_validate) */
        snprintf(buf, cap,
                 "no knob of this layout (optimizer sharding, recompute, micro-batch, ZeRO-3) fits it, nor two of "
                 "them: it needs %s, or a GPU with more memory; `trainsim sweep` searches every plan",
                 p->framework == PLAN_FRAMEWORK_HF ? "more GPUs to shard it over (--gpus with --zero 3)"
                 : p->ep > 1                       ? "more GPUs per model replica (tp, pp, ep)"
                                                   : "more GPUs per model replica (tp, pp)");
        return;
    }
    k += (size_t)snprintf(buf, cap, "fits with ");
    for (int i = 0; i < n && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%s (%.1f GiB)", i ? (i == n - 1 ? " or " : ", ") : "",
                              alt[i].flags, alt[i].total_bytes / 1073741824.0);
    if (k < cap) snprintf(buf + k, cap - k, "; `trainsim sweep` searches every plan");
}
