/* cli_train.c — the training-run option group (cli_train.h). */
#include "cli_train.h"

void cli_train_init(CliTrain *t) { *t = (CliTrain){-1, -1, -1, -1, -1}; }

void cli_train_add(CliSpec *s, CliTrain *t)
{
    cli_add(s, "train-tokens", CLI_DOUBLE, &t->tokens, "N",
            "a whole run on N tokens (e.g. 15e12): wall clock, GPU-hours, goodput");
    cli_add(s, "price-per-gpu-hour", CLI_DOUBLE, &t->price, "P", "the run's cost at P per GPU-hour");
    cli_add(s, "gpu-mtbf-hours", CLI_DOUBLE, &t->mtbf_hours, "H",
            "GPU-hours between interruptions of one GPU (50000: Llama 3's 16k-H100 run)");
    cli_add(s, "storage-gbps", CLI_DOUBLE, &t->storage_gbps, "B",
            "checkpoint write/read bandwidth of the whole job, GB/s (default 0.25 per GPU)");
    cli_add(s, "restart-minutes", CLI_DOUBLE, &t->restart_min, "M",
            "restarting after an interruption, before reading the checkpoint (10)");
}

int cli_train_options(const CliSpec *s, const CliTrain *t, TrainOptions *o, bool *want)
{
    train_options_init(o);
    *want = cli_seen(s, "train-tokens");
    static const char *const dep[] = {"price-per-gpu-hour", "gpu-mtbf-hours", "storage-gbps", "restart-minutes"};
    for (size_t i = 0; i < sizeof dep / sizeof dep[0] && !*want; i++)
        if (cli_seen(s, dep[i])) {
            TsError e = {0};
            ts_err(&e, TS_ERR_USAGE, "--%s needs --train-tokens", dep[i]);
            ts_err_hint(&e, "give the run's token budget, e.g. --train-tokens 15e12");
            return cli_fail(&e);
        }
    if (!*want) return 0;
    /* the ranges are cli.c's (LIMITS) */
    o->tokens = t->tokens;
    if (cli_seen(s, "price-per-gpu-hour")) o->price_per_gpu_hour = t->price;
    if (cli_seen(s, "gpu-mtbf-hours")) o->mtbf_gpu_hours = t->mtbf_hours;
    if (cli_seen(s, "storage-gbps")) o->storage_bytes_per_s = t->storage_gbps * 1e9;
    if (cli_seen(s, "restart-minutes")) o->restart_s = t->restart_min * 60.0;
    return 0;
}
