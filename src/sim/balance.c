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
#include "trainsim/sim.h"

#include <stdlib.h>

/* Can the layers (weights w[0..n)) go into c stages of at most T each, the
 * first adding first_x and the last last_x? Writes the counts when out. */
static bool fits(const double *w, int64_t n, int64_t c, double first_x, double last_x, double T, int16_t *out)
{
    int64_t l = 0;
    for (int64_t s = 0; s < c; s++) {
        double load = (s == 0 ? first_x : 0) + (s == c - 1 ? last_x : 0);
        int64_t take = 0, room = n - l - (c - 1 - s); /* leave one layer per later stage */
        if (s == c - 1) {
            for (; l < n; l++, take++) load += w[l];
            if (load > T) return false;
        } else {
            while (take < room && load + w[l] <= T) load += w[l++], take++;
            if (take == 0) return false;
        }
        if (out) out[s] = (int16_t)take;
    }
    return l == n;
}

bool sim_balance_layers(const double *w, int64_t n, int64_t c, double first_x, double last_x, SimBalance *out)
{
    out->n = 0;
    if (c < 2 || c > SIM_BALANCE_MAX || n < c) return false;
    double lo = 0, hi = first_x + last_x;
    for (int64_t l = 0; l < n; l++) {
        hi += w[l];
        if (w[l] > lo) lo = w[l];
    }
    if (!fits(w, n, c, first_x, last_x, hi, NULL)) return false;
    for (int it = 0; it < 64 && hi - lo > 1e-9 * hi; it++) {
        double mid = 0.5 * (lo + hi);
        if (fits(w, n, c, first_x, last_x, mid, NULL)) hi = mid;
        else lo = mid;
    }
    fits(w, n, c, first_x, last_x, hi, out->layers);
    out->n = (int32_t)c;
    out->busiest_s = hi;
    return true;
}
