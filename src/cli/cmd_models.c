/* trainsim models — list the presets in data/models with their shapes and
 * parameter counts (DeepSpeed params_to_string units: "174.6 B", "124.44 M"). */
#include "cli.h"
#include "trainsim/report_model.h"

#include <stdlib.h>

#define MODELS_MAX 512

int cmd_models(int argc, char **argv)
{
    bool json = false, wide = false;
    CliSpec s = {.cmd = "models",
                 .usage = "trainsim models [--wide | --json]",
                 .summary = "List the model presets in data/models: family, layers, hidden size, query/kv heads, "
                            "parameters (tied weights once) and active parameters per token for MoE models, in "
                            "under 100 columns. --wide adds where the numbers come from; 'trainsim model NAME' "
                            "shows one preset in full."};
    cli_add(&s, "wide", CLI_FLAG, &wide, NULL, "add each preset's source (long lines)");
    cli_add(&s, "json", CLI_FLAG, &json, NULL, "print JSON (format trainsim-models v1): counts and full spec of every preset");
    int rc = cli_parse(&s, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    char(*names)[64] = malloc(MODELS_MAX * sizeof *names);
    int n = names ? model_preset_names(names, MODELS_MAX) : 0;
    ModelSpec *ms = names ? malloc((size_t)(n ? n : 1) * sizeof *ms) : NULL;
    if (!ms) {
        free(names);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        TsError err = {0};
        if (model_preset(names[i], &ms[i], &err) != TS_OK) {
            free(ms);
            free(names);
            return cli_fail(&err);
        }
    }
    TsBuf b = {0};
    if (json) rep_models_json(ms, n, &b);
    else rep_models_text(ms, n, wide, &b);
    rc = cli_emit(NULL, &b);
    ts_buf_free(&b);
    free(ms);
    free(names);
    return rc;
}
