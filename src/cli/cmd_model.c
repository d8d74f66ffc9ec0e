/* trainsim model — show a model: a readable summary of its spec (default),
 * the module tree in the Megatron dump format (--tree), JSON (--json: spec
 * and module tree) or Graphviz DOT (--dot). */
#include "cli.h"
#include "trainsim/report_model.h"


int cmd_model(int argc, char **argv)
{
    CliSpec s = {.cmd = "model",
                 .usage = "trainsim model [NAME | --model M] [model flags] [--naming N] [--tree|--json|--dot]",
                 .summary = "Show a model: a summary of its dimensions and counts, its module tree in the\n"
                            "Megatron dump format (--tree), its spec and tree as JSON (--json) or the\n"
                            "module tree as Graphviz DOT (--dot). NAME is --model's value.",
                 .max_positional = 1};
    CliModel cm;
    cli_model_init(&cm);
    cli_model_add(&s, &cm);
    bool tree = false, json = false, dot = false;
    const char *output = NULL;
    cli_add(&s, "tree", CLI_FLAG, &tree, NULL, "print the module tree (Module:/Submodule: lines)");
    cli_add(&s, "json", CLI_FLAG, &json, NULL, "print the spec and the module tree as JSON");
    cli_add(&s, "dot", CLI_FLAG, &dot, NULL, "print the module tree as Graphviz DOT");
    cli_add(&s, "output", CLI_STR, &output, "FILE", "write to FILE (atomically) instead of stdout");
    int rc = cli_parse(&s, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    if (s.n_positional && cm.model) {
        fprintf(stderr, "trainsim model: '%s' and --model %s: give the model once (see 'trainsim model --help')\n",
                s.positional[0], cm.model);
        return 2;
    }
    if (s.n_positional) cm.model = s.positional[0];
    if ((int)tree + (int)json + (int)dot > 1) {
        fprintf(stderr, "trainsim model: choose one of --tree, --json and --dot (see 'trainsim model --help')\n");
        return 2;
    }
    ModelSpec m;
    rc = cli_model_load(&cm, "gpt2", &m);
    if (rc) return rc;
    GraphOptions o;
    graph_options_init(&o);
    rc = cli_naming(&cm, &m, &o.naming);
    if (rc) return rc;
    o.naming_set = true;
    ModuleGraph *g;
    TsError err = {0};
    if (graph_build(&m, &o, &g, &err) != TS_OK) return cli_fail(&err);
    TsBuf b = {0};
    if (tree) {
        graph_print_tree(g, &b);
        ts_buf_puts(&b, "\n");
    } else if (json) {
        ts_buf_printf(&b, "{\"format\":\"trainsim.model\",\"version\":1,\"generator\":\"trainsim %s\",\"naming\":\"%s\",\n\"spec\":",
                      TRAINSIM_VERSION, graph_naming_name(o.naming));
        model_to_json(&m, &b);
        ts_buf_puts(&b, ",\n\"tree\":");
        graph_to_json(g, &b);
        ts_buf_puts(&b, "}\n");
    } else if (dot) {
        graph_to_dot(g, &b);
    } else {
        rep_model_summary(&m, g, &b);
    }
    graph_destroy(g);
    rc = cli_emit(output, &b);
    ts_buf_free(&b);
    return rc;
}
