/* trainsim models — list presets with parameter counts. */
#include "cli.h"

int cmd_models(int argc, char **argv)
{
    CliSpec s = {.cmd = "models", .usage = "trainsim models", .summary = "List the model presets in data/models with their parameter counts."};
    int rc = cli_parse(&s, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    static char names[512][64];
    int n = model_preset_names(names, 512);
    for (int i = 0; i < n; i++) printf("%s\n", names[i]);
    return 0;
}
