/*
 * balance.c — the split of the layers over pipeline stages that evens their
 * work (sim.h, SimBalance). The costed step knows each layer kind's work per
 * micro-batch (compute, recompute, exposed TP/CP/EP communication) and what
 * the first and last stages add (embedding; LM head, loss and MTP blocks).
 * The split minimising the busiest stage is a linear partition: binary
 * search on the bound T, with a greedy check that fills each stage up to T
 * while leaving a layer for every stage after it (filling early stages as
 * far as they go leaves the least for the last one, whose extra work is
 * fixed, so the greedy check is exact).
 */
#include "cost_int.h"

#include <math.h>
#include <stdlib.h>

typedef SimRun Run;

/* Of a run of weight w with k left, how many more fit over load under T
 * (at most lim): the greedy check's one-by-one filling, in one step. */
static int64_t run_take(double w, int64_t lim, double load, double T)
{
    if (lim <= 0 || !(load + w <= T)) return 0;
    double q = w > 0 ? floor((T - load) / w) : (double)lim;
    int64_t k = q < (double)lim ? (int64_t)q : lim;
    while (k > 1 && load + (double)k * w > T) k--;
    while (k < lim && load + (double)(k + 1) * w <= T) k++;
    return k;
}

/* Can the layers (runs r[0..nr), n layers) go into c stages of at most T
 * each, the first adding first_x and the last last_x? Each stage takes
 * layers while they fit, leaving one for every later stage. Writes the
 * counts when out. */
static bool fits(const Run *r, int32_t nr, int64_t n, int64_t c, double first_x, double last_x, double T,
                 int16_t *out)
{
    int64_t l = 0, used = 0; /* layers placed; of run i, those placed */
    int32_t i = 0;
    for (int64_t s = 0; s < c; s++) {
        double load = (s == 0 ? first_x : 0) + (s == c - 1 ? last_x : 0);
        int64_t take = 0, room = n - l - (c - 1 - s);
        if (s == c - 1) {
            for (; i < nr; i++, used = 0) load += (double)(r[i].n - used) * r[i].w;
            take = n - l;
            l = n;
            if (load > T) return false;
        } else {
            while (take < room && i < nr) {
                int64_t lim = r[i].n - used < room - take ? r[i].n - used : room - take;
                int64_t k = run_take(r[i].w, lim, load, T);
                load += (double)k * r[i].w;
                take += k, used += k, l += k;
                if (used == r[i].n) i++, used = 0;
                else break; /* the next layer does not fit */
            }
            if (take == 0) return false;
        }
        if (out) out[s] = (int16_t)take;
    }
    return l == n;
}

bool sim_balance_runs(const SimRun *r, int32_t nr, int64_t c, double first_x, double last_x, double below,
                      SimBalance *out)
{
    out->n = 0;
    int64_t n = 0;
    double approx = first_x + last_x; /* the total to rounding (1e-14 relative), run by run */
    for (int32_t i = 0; i < nr; i++) n += r[i].n, approx += (double)r[i].n * r[i].w;
    if (c < 2 || c > SIM_BALANCE_MAX || n < c) return false;
    /* a bound below the total is the first check's; when no split fits
     * under it (the common answer) the exact total is not needed */
    if (below > 0 && below * (1 + 1e-9) < approx && !fits(r, nr, n, c, first_x, last_x, below, NULL)) return false;
    double lo = 0, hi = first_x + last_x;
    for (int32_t i = 0; i < nr; i++) {
        for (int64_t k = 0; k < r[i].n; k++) hi += r[i].w; /* layer by layer, as the stages sum */
        if (r[i].w > lo) lo = r[i].w;
    }
    /* no stage is lighter than the mean; the bound to 1e-6 picks the split,
     * whose busiest stage is then summed exactly */
    if (hi / (double)c > lo) lo = hi / (double)c;
    if (below > 0 && below < hi) hi = below;
    bool ok = fits(r, nr, n, c, first_x, last_x, hi, NULL);
    for (int it = 0; ok && it < 64 && hi - lo > 1e-6 * hi; it++) {
        double mid = 0.5 * (lo + hi);
        if (fits(r, nr, n, c, first_x, last_x, mid, NULL)) hi = mid;
        else lo = mid;
    }
    if (!ok) return false;
    fits(r, nr, n, c, first_x, last_x, hi, out->layers);
    out->n = (int32_t)c;
    out->busiest_s = 0;
    int32_t i = 0;
    int64_t used = 0; /* of run i, the layers summed */
    for (int64_t s = 0; s < c; s++) {
        double load = (s == 0 ? first_x : 0) + (s == c - 1 ? last_x : 0);
        for (int64_t k = 0; k < out->layers[s]; k++) {
            load += r[i].w;
            if (++used == r[i].n) i++, used = 0;
        }
        if (load > out->busiest_s) out->busiest_s = load;
    }
    return true;
}

bool sim_balance_layers(const double *w, int64_t n, int64_t c, double first_x, double last_x, double below,
                        SimBalance *out)
{
    out->n = 0;
    if (c < 2 || c > SIM_BALANCE_MAX || n < c) return false;
    Run stack[256] = {{0}}, *r = n <= 256 ? stack : malloc((size_t)n * sizeof *r);
    if (!r) return false;
    int32_t nr = 0;
    for (int64_t l = 0; l < n; l++) sim_run_push(r, &nr, w[l]);
    bool ok = sim_balance_runs(r, nr, c, first_x, last_x, below, out);
    if (r != stack) free(r);
    return ok;
}
