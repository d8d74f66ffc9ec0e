/*
 * cli_hw.h — the hardware option group every command that costs time or
 * memory reuses: --gpu, --cluster, --gpus, --calibration, --busbw, --software.
 *
 * Resolution: --cluster NAME|FILE sized to --gpus (default: default_gpus,
 * else one node). --gpu NAME|FILE alone picks the cluster preset built on
 * that GPU (dgx-a100 for a100-sxm4-80gb, ...) or, when none, the default
 * cluster with its GPU replaced; --gpu with --cluster replaces the
 * cluster's GPU. The loaded CliHwLoaded owns the calibration and busbw
 * tables (cli_hw_free).
 */
#ifndef TRAINSIM_CLI_HW_H
#define TRAINSIM_CLI_HW_H

#include "cli.h"
#include "trainsim/hw.h"

typedef struct CliHw {
    const char *gpu;          /* --gpu NAME|FILE, NULL = the cluster's */
    const char *cluster;      /* --cluster NAME|FILE */
    int64_t gpus;             /* --gpus N; -1 = not given */
    const char *calibration;  /* --calibration FILE (measured kernel times) */
    const char *busbw;        /* --busbw FILE (measured bus bandwidth, SimAI yaml or JSON) */
    const char *gpus_list;    /* --gpus N[,N..] when added by cli_hw_add_list (sweep), else NULL */
    const char *software;     /* --software 2025|2024: the CUDA libraries' generation, NULL = 2025 */
    bool no_traffic;          /* set by a command whose GPUs exchange nothing (memory, params) */
} CliHw;

typedef struct CliHwLoaded {
    ClusterSpec cluster;      /* sized cluster; cluster.gpu is the GPU in use */
    HwModel model;            /* compute model: cluster.gpu + calibration */
    HwNet net;                /* communication model: cluster + busbw table */
    HwCalib *calib;           /* owned, may be NULL */
    HwBusbw *busbw;           /* owned, may be NULL */
} CliHwLoaded;

void cli_hw_init(CliHw *h);
void cli_hw_add(CliSpec *s, CliHw *h);
/* The same group with --gpus taking a comma-separated list of counts
 * (h->gpus_list; the caller parses it and sets h->gpus before loading). */
void cli_hw_add_list(CliSpec *s, CliHw *h, const char *gpus_help);
/* Load per the options. default_cluster: preset used when neither --cluster
 * nor a matching --gpu preset applies ("dgx-h100"); default_gpus: GPU count
 * when --gpus is not given (0 = one node). Returns 0, or prints the error
 * and returns its exit code (2 usage, 3 bad input). */
int cli_hw_load(const CliHw *h, const char *default_cluster, int64_t default_gpus, CliHwLoaded *out);
void cli_hw_free(CliHwLoaded *l);
/* --headroom (sweep, memory, simulate): 0 when `room` bytes leave some of
 * gpu's memory, else the usage error, printed, and its exit code. */
int cli_headroom_check(double room, const GpuSpec *gpu);
/* --software 2025|2024 alone (for a command with its own --gpu: profile),
 * and putting a loaded GPU on the libraries it names (NULL: 2025; checked
 * when parsed). */
void cli_hw_add_software(CliSpec *s, const char **software);
void cli_hw_software(const char *software, GpuSpec *g);
/* Warn on stderr when the calibration `path` was measured on another GPU
 * family than the preset it corrects (hw_gpu_family). */
void cli_calib_gpu_check(const char *path, const HwCalib *c, const GpuSpec *g);
/* The loaded cluster sized to `gpus` instead (same node type, GPU and busbw
 * table): for commands that plan several GPU counts at once. */
void cli_hw_net_sized(const CliHwLoaded *l, int64_t gpus, HwNet *net);

#endif
