/* trainsim workload: generation from model, plan and hardware options. */
#include "cmd_workload_gen.h"

#include <string.h>

void wl_gen_cli_init(WlGenCli *g)
{
    memset(g, 0, sizeof *g);
    cli_model_init(&g->model);
}

void wl_gen_cli_add(CliSpec *s, WlGenCli *g) { cli_model_add(s, &g->model); }

int wl_gen_cli_build(WlGenCli *g, Workload **out)
{
    (void)g;
    *out = NULL;
    fprintf(stderr, "trainsim workload: generating from a model needs the plan and hw subsystems; "
                    "use --in FILE to convert a workload\n");
    return 2;
}
