/* trainsim workload: the generator side (model + plan + hw -> Workload). */
#ifndef TRAINSIM_CMD_WORKLOAD_GEN_H
#define TRAINSIM_CMD_WORKLOAD_GEN_H

#include "cli.h"
#include "cli_hw.h"
#include "cli_plan.h"
#include "cli_sim.h"
#include "trainsim/workload.h"

typedef struct WlGenCli {
    CliModel model;
    CliPlan plan;
    CliHw hw;           /* --gpu --cluster --gpus --calibration --busbw */
    CliHwLoaded loaded; /* compute model during the build */
    CliSpec *spec;      /* the command's option table (for cli_seen) */
    WlFormat fmt;       /* set by cmd_workload before build */
    bool aicb_compat;   /* --aicb-compat given */
    bool neusight;      /* --optable-compat neusight */
    CliSim sim;         /* the runtime options a task graph carries (cli_sim_add_workload) */
    char costed_on[160]; /* after the build: "h100-sxm5-80gb in dgx-h100 (1 node)", the GPU its times are of */
} WlGenCli;

void wl_gen_cli_init(WlGenCli *g);
void wl_gen_cli_add(CliSpec *s, WlGenCli *g);
/* Build the workload; on failure prints and returns the exit code. */
int wl_gen_cli_build(WlGenCli *g, Workload **out);

#endif
