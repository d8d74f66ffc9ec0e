/*
 * cli_sim.h — the runtime-behaviour option group (SimOptions) shared by
 * `simulate` and `sweep`: --no-dp-overlap, --no-param-gather-overlap,
 * --fp16-grad-reduce, --deepspeed-pipe, --bucket-mb, --overlap-slowdown,
 * --pair-sm-share,
 * --eager-pytorch, --selective-ops, --sequential-experts, --gpu-spread, --cp-comm, --ce-fusion,
 * --mfu-convention.
 */
#ifndef TRAINSIM_CLI_SIM_H
#define TRAINSIM_CLI_SIM_H

#include "cli.h"
#include "trainsim/sim.h"

/* --selective-ops: simulate, sweep (runtime) and memory (what is stored) */
#define CLI_SEL_OPS_HELP "selective recompute as op-level SAC (torchtitan): every second matmul and all non-matmul ops"

/* --ce-fusion: simulate, sweep, workload and memory */
#define CLI_GRADS_FREED_HELP                                                                                      \
    "--framework hf: the loop frees the gradients after each step (optimizer.zero_grad(), set_to_none: "         \
    "PyTorch's default since 2.0), so the first backward stores them; default: they stay allocated"
#define CLI_CE_FUSION_HELP                                                                                        \
    "cross-entropy loss kernels: none (fp32 eager ops, Megatron's default), native (--cross-entropy-loss-fusion), " \
    "te (its --cross-entropy-fusion-impl te, Megatron-Bridge's Llama default)"

/* --cp-comm: simulate, sweep and workload (chakra, json) */
#define CLI_CP_COMM_HELP "context-parallel K/V exchange: p2p (ring, default), allgather, a2a (Ulysses all-to-all)"

typedef struct CliSim {
    bool no_dp_overlap, no_ag_overlap, fp16_grads, ds_pipe, eager, sel_ops, seq_experts, balance, graphs, grads_freed;
    double bucket_bytes; /* --bucket-mb (a bare number in MB, or a size: 64MiB), -1 = default */
    double slowdown;    /* --overlap-slowdown, -1 = default */
    double spread;      /* --gpu-spread, -1 = default */
    double pair_share;  /* --pair-sm-share, -1 = default */
    const char *cp_comm; /* --cp-comm, NULL = default */
    const char *ce_fusion; /* --ce-fusion, NULL = none */
    const char *mfu;     /* --mfu-convention, NULL = full */
    const char *host_us; /* --host-us F[,B], NULL = the constants */
} CliSim;

void cli_sim_init(CliSim *o);
void cli_sim_add(CliSpec *s, CliSim *o);
/* The ones the workload generator writes into a task graph too:
 * --no-dp-overlap, --no-param-gather-overlap, --fp16-grad-reduce,
 * --deepspeed-pipe, --bucket-mb, --eager-pytorch, --selective-ops, --sequential-experts, --gpu-spread,
 * --pair-sm-share, --cp-comm, --ce-fusion (all but --overlap-slowdown, --balance-stages and
 * --mfu-convention). */
void cli_sim_add_workload(CliSpec *s, CliSim *o);
/* All but --cp-comm, which the sweep takes as a list of exchanges to try. */
void cli_sim_add_sweep(CliSpec *s, CliSim *o);
/* --cp-comm a known exchange and --ce-fusion a known kernel choice (the
 * numbers' ranges are checked as they are parsed); 0, or the usage error
 * printed and 2. */
int cli_sim_check(const CliSpec *s, const CliSim *o);
/* --cp-comm's value (NULL: p2p) into *out; 0, or the usage error printed and 2. */
int cli_cp_comm(const char *v, SimCpComm *out);
/* --ce-fusion's value (NULL: none) into *out; 0, or the usage error printed and 2. */
int cli_ce_fusion(const char *v, SimCeFusion *out);
/* --host-us's value (NULL: not given, the defaults) into seconds forward /
 * backward; 0, or the usage error printed and 2. */
int cli_host_us(const char *v, double out[2]);
/* The framework the aliases name: --deepspeed-pipe is deepspeed,
 * --eager-pytorch torchtitan (or hf, which is eager too); *fw holds
 * --framework's value (default megatron). 0, or the usage error printed and
 * 2 when they contradict. */
int cli_sim_framework(const CliSpec *s, const CliSim *o, PlanFramework *fw);
/* sim_options_init, then the given options on top. */
void cli_sim_options(const CliSim *o, SimOptions *so);

#endif
