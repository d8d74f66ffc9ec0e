/* trainsim simulate --workload FILE — imported workloads with SimAI's
 * semantics (simai_aicb.md section 7). Waits for the workload readers. */
#include "cli.h"
#include "cli_hw.h"
#include "trainsim/sim.h"

int cmd_simulate_workload(const CliSpec *s, const CliHw *ch, const SimOptions *so, const char *path, bool json);

int cmd_simulate_workload(const CliSpec *s, const CliHw *ch, const SimOptions *so, const char *path, bool json)
{
    (void)s; (void)ch; (void)so; (void)json;
    fprintf(stderr, "trainsim: --workload %s: importing workloads is not built yet\n", path);
    return 2;
}
