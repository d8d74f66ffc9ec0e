/* train.c — a whole training run from one simulated step (train.h). */
#include <math.h>
#include <string.h>

#include "trainsim/train.h"

void train_options_init(TrainOptions *o)
{
    memset(o, 0, sizeof *o);
    /* Llama 3 (Dubey et al. 2024, section 3.3.4): 419 unexpected
     * interruptions in a 54-day snapshot on up to 16384 H100s:
     * 54 x 24 x 16384 / 419 = 50.7 k GPU-hours each */
    o->mtbf_gpu_hours = 50000;
    o->restart_s = 600;
}

static bool positive(double x) { return isfinite(x) && x > 0; }

TsStatus train_estimate(const TrainOptions *o, double iteration_s, double tokens_per_step, int64_t gpus,
                        double state_bytes, TrainEstimate *out, TsError *err)
{
    memset(out, 0, sizeof *out);
    if (!positive(o->tokens) || !positive(iteration_s) || !positive(tokens_per_step) || gpus < 1 ||
        !positive(o->mtbf_gpu_hours) || !(state_bytes >= 0) || !(o->restart_s >= 0) ||
        !(o->price_per_gpu_hour >= 0) || !(o->storage_bytes_per_s >= 0))
        return ts_err(err, TS_ERR_USAGE, "a training run needs positive tokens, step time, tokens per step, "
                                         "GPUs and MTBF, and non-negative state, restart, price and bandwidth");
    double g = (double)gpus;
    double bw = o->storage_bytes_per_s > 0 ? o->storage_bytes_per_s : 0.25e9 * g;
    out->steps = ceil(o->tokens / tokens_per_step);
    out->compute_s = out->steps * iteration_s;
    out->checkpoint_bytes = state_bytes;
    out->checkpoint_s = state_bytes / bw;
    out->job_mtbf_s = o->mtbf_gpu_hours * 3600.0 / g;
    double d = out->checkpoint_s, m = out->job_mtbf_s;
    out->checkpoint_interval_s = sqrt(2.0 * d * m);
    double t = out->checkpoint_interval_s;
    /* in wall time W training U: W = U (1 + d/t) + (W/M)(t/2 + restart + d) */
    double lost = (t / 2.0 + o->restart_s + d) / m;
    if (!(lost < 1.0)) {
        ts_err(err, TS_ERR_PLAN,
               "the job is interrupted every %.3g s, too often to checkpoint (%.3g s) and restart (%.3g s)", m, d,
               o->restart_s);
        ts_err_hint(err, "fewer GPUs, a larger --gpu-mtbf-hours, faster storage or a shorter restart");
        return TS_ERR_PLAN;
    }
    out->goodput = (1.0 - lost) / (1.0 + (t > 0 ? d / t : 0));
    out->wall_s = out->compute_s / out->goodput;
    out->gpu_hours = out->wall_s * g / 3600.0;
    out->cost = out->gpu_hours * o->price_per_gpu_hour;
    return TS_OK;
}
