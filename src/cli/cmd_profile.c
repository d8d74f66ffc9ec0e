/* trainsim profile — TEMPORARY skeleton; the graph/report work fills it in. */
#include "cli.h"

int cmd_profile(int argc, char **argv)
{
    CliSpec s = {.cmd = "profile", .usage = "trainsim profile [--model M] [options]", .summary = "Profile a model."};
    CliModel cm;
    cli_model_init(&cm);
    cli_model_add(&s, &cm);
    int rc = cli_parse(&s, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    ModelSpec m;
    return cli_model_load(&cm, "gpt2", &m);
}
