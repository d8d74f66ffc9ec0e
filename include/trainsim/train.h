/*
 * trainsim/train.h — a whole training run from one simulated step: the
 * wall-clock time to train on a number of tokens, its GPU-hours and cost,
 * and the goodput lost to failures and checkpoints.
 *
 * Failures: each GPU is interrupted once every mtbf_gpu_hours of its own
 * running time, independently, so a job on G GPUs is interrupted every
 * M = mtbf_gpu_hours / G hours. Checkpoints write the model state (the
 * weights and the optimizer state of the precision recipe, once for the
 * whole job: part_param_bytes) at the storage's aggregate bandwidth, taking
 * d seconds; the interval between them is Young and Daly's first-order
 * optimum t = sqrt(2 d M) (Young 1974, Daly 2006). Each interruption loses
 * half an interval of work on average, the restart and the checkpoint's read
 * (d again): in wall time W that trains for U, W = U (1 + d/t) + (W/M) (t/2
 * + restart + d), so the fraction of wall-clock time that trains is
 *     goodput = (1 - (t/2 + restart + d) / M) / (1 + d/t)
 * and the wall clock is the steps' compute time / goodput.
 *
 * Example (Llama 3 405B-like: 15.6 T tokens, 16384 H100s, 8.6 s a step of 16 M tokens):
 *     TrainOptions o; train_options_init(&o); o.tokens = 15.6e12; o.price_per_gpu_hour = 2.5;
 *     TrainEstimate e;
 *     train_estimate(&o, 8.6, 16.8e6, 16384, 405e9 * 14, &e, &err);
 *     // e.wall_s / 86400 = days; e.gpu_hours, e.cost, e.goodput
 */
#ifndef TRAINSIM_TRAIN_H
#define TRAINSIM_TRAIN_H

#include "trainsim/common.h"

typedef struct TrainOptions {
    double tokens;             /* tokens to train on, e.g. 15e12 (> 0) */
    double price_per_gpu_hour; /* currency units per GPU-hour; 0: no cost */
    double mtbf_gpu_hours;     /* GPU-hours between interruptions of one GPU, 50000 (Llama 3:
                                  419 unexpected interruptions in 54 days on 16384 H100s) */
    double storage_bytes_per_s;/* aggregate checkpoint write and read bandwidth of the job;
                                  0: 0.25 GB/s per GPU (2 GB/s per 8-GPU node's filesystem
                                  client: an assumption, not a measurement) */
    double restart_s;          /* restarting after an interruption (rescheduling, NCCL and
                                  framework start-up), before the checkpoint's read, 600 */
} TrainOptions;

typedef struct TrainEstimate {
    double steps;                 /* optimizer steps: tokens / tokens per step, rounded up */
    double compute_s;             /* steps x iteration time */
    double checkpoint_bytes;      /* the model state written per checkpoint */
    double checkpoint_s;          /* writing it (and reading it back after an interruption) */
    double checkpoint_interval_s; /* Young/Daly: sqrt(2 x checkpoint_s x job MTBF) */
    double job_mtbf_s;            /* mean time between the job's interruptions */
    double goodput;               /* training time / wall-clock time, in (0, 1] */
    double wall_s;                /* compute_s / goodput */
    double gpu_hours;             /* wall_s x GPUs / 3600 */
    double cost;                  /* gpu_hours x price; 0 without a price */
} TrainEstimate;

void train_options_init(TrainOptions *o);
/* The run of o->tokens tokens at iteration_s a step of tokens_per_step
 * tokens on `gpus` GPUs whose model state is state_bytes. TS_ERR_USAGE for
 * non-positive or non-finite inputs; TS_ERR_PLAN when failures come faster
 * than the job can checkpoint and restart (goodput would not be positive). */
TsStatus train_estimate(const TrainOptions *o, double iteration_s, double tokens_per_step, int64_t gpus,
                        double state_bytes, TrainEstimate *out, TsError *err);

#endif
