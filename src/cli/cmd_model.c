/* trainsim model — TEMPORARY skeleton; the graph work fills in --tree/--json. */
#include "cli.h"

int cmd_model(int argc, char **argv)
{
    CliSpec s = {.cmd = "model", .usage = "trainsim model [--model M] [--tree] [--json]", .summary = "Show a model."};
    CliModel cm;
    cli_model_init(&cm);
    cli_model_add(&s, &cm);
    int rc = cli_parse(&s, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    ModelSpec m;
    rc = cli_model_load(&cm, "gpt2", &m);
    if (rc) return rc;
    ModelCounts c;
    model_count_params(&m, &c);
    printf("%s: %lld parameters\n", m.name, (long long)c.total);
    return 0;
}
