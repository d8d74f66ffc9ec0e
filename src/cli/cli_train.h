/*
 * cli_train.h — the training-run option group (train.h) of `simulate`:
 * --train-tokens, --price-per-gpu-hour, --gpu-mtbf-hours, --storage-gbps,
 * --restart-minutes.
 */
#ifndef TRAINSIM_CLI_TRAIN_H
#define TRAINSIM_CLI_TRAIN_H

#include "cli.h"
#include "trainsim/train.h"

typedef struct CliTrain {
    double tokens, price, mtbf_hours, storage_gbps, restart_min; /* -1: not given */
} CliTrain;

void cli_train_init(CliTrain *t);
void cli_train_add(CliSpec *s, CliTrain *t);
/* The given options into *o (train_options_init first; cli.c checked their
 * ranges); *want: --train-tokens was given (the others need it). 0, or the
 * usage error printed and 2. */
int cli_train_options(const CliSpec *s, const CliTrain *t, TrainOptions *o, bool *want);

#endif
