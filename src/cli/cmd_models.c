/* trainsim models — list the presets in data/models with their shapes and
 * parameter counts (DeepSpeed params_to_string units: "174.6 B", "124.44 M"). */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MODELS_MAX 512

/* DeepSpeed's params_to_string: round(n / unit, 2) printed with %g, G -> B. */
static void params_str(int64_t n, char *out, size_t cap)
{
    double x = (double)n;
    const char *u = "";
    double mag = 1.0;
    if (x >= 1e12) u = "T", mag = 1e12;
    else if (x >= 1e9) u = "B", mag = 1e9;
    else if (x >= 1e6) u = "M", mag = 1e6;
    else if (x >= 1e3) u = "K", mag = 1e3;
    snprintf(out, cap, "%g %s", round(x / mag * 100.0) / 100.0, u);
    size_t len = strlen(out);
    if (len && out[len - 1] == ' ') out[len - 1] = '\0';
}

static void emit_json(TsBuf *b, const ModelSpec *m, const ModelCounts *c, bool first)
{
    ts_buf_puts(b, first ? "\n  " : ",\n  ");
    ts_buf_printf(b, "{\"name\": ");
    ts_json_escape(b, m->name);
    ts_buf_printf(b, ", \"params\": %lld, \"active_params\": %lld, \"embedding_params\": %lld, \"spec\": ",
                  (long long)c->total, (long long)c->active, (long long)c->embedding);
    model_to_json(m, b);
    ts_buf_puts(b, "}");
}

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
    /* all loaded first: the name column is as wide as the longest name */
    int w = 4;
    for (int i = 0; i < n; i++) {
        TsError err = {0};
        if (model_preset(names[i], &ms[i], &err) != TS_OK) {
            free(ms);
            free(names);
            return cli_fail(&err);
        }
        if ((int)strlen(ms[i].name) > w) w = (int)strlen(ms[i].name);
    }
    TsBuf b = {0};
    if (json) ts_buf_printf(&b, "{\"format\": \"trainsim-models\", \"version\": 1, \"models\": [");
    else
        ts_buf_printf(&b, "%-*s %-9s %6s %6s %9s %9s %9s%s\n", w, "name", "family", "layers", "hidden", "heads/kv",
                      "params", "active", wide ? "  source" : "");
    for (int i = 0; i < n; i++) {
        const ModelSpec *m = &ms[i];
        ModelCounts c;
        model_count_params(m, &c);
        if (json) {
            emit_json(&b, m, &c, i == 0);
            continue;
        }
        char hk[32], p[32], a[32] = "-";
        snprintf(hk, sizeof hk, "%lld/%lld", (long long)m->heads, (long long)m->kv_heads);
        params_str(c.total, p, sizeof p);
        if (m->experts > 0) params_str(c.active, a, sizeof a);
        ts_buf_printf(&b, "%-*s %-9s %6lld %6lld %9s %9s %9s", w, m->name, model_arch_name(m->arch),
                      (long long)m->layers, (long long)m->hidden, hk, p, a);
        ts_buf_printf(&b, wide ? "  %s\n" : "\n", m->source);
    }
    if (json) ts_buf_puts(&b, "\n]}\n");
    rc = cli_emit(NULL, &b);
    ts_buf_free(&b);
    free(ms);
    free(names);
    return rc;
}
