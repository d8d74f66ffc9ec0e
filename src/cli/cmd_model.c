/* trainsim model — show a model: a readable summary of its spec (default),
 * the module tree in the Megatron dump format (--tree), JSON (--json: spec
 * and module tree) or Graphviz DOT (--dot). */
#include "cli.h"

#include <string.h>

static const char *norm_name(ModelNorm n) { return n == MODEL_NORM_RMSNORM ? "RMSNorm" : "LayerNorm"; }
static const char *act_name(ModelAct a)
{
    return a == MODEL_ACT_SWIGLU ? "SwiGLU"
         : a == MODEL_ACT_GEGLU  ? "GeGLU"
         : a == MODEL_ACT_RELU2  ? "squared ReLU"
                                 : "GeLU";
}
static const char *pos_name(ModelPos p) { return p == MODEL_POS_ROPE ? "RoPE" : p == MODEL_POS_ALIBI ? "ALiBi" : "learned"; }

static void summary(const ModelSpec *m, const ModuleGraph *g, TsBuf *b)
{
    ModelCounts c;
    model_count_params(m, &c);
    GraphTotals t;
    graph_model_totals(g, &t);
    ts_buf_printf(b, "model:          %s (%s, %s naming)\n", m->name, model_arch_name(m->arch),
                  graph_naming_name(g->opt.naming));
    if (m->source[0]) ts_buf_printf(b, "source:         %s\n", m->source);
    ts_buf_printf(b, "layers:         %lld\nhidden:         %lld\n", (long long)m->layers, (long long)m->hidden);
    ts_buf_printf(b, "heads:          %lld (kv heads %lld, head dim %lld)\n", (long long)m->heads,
                  (long long)m->kv_heads, (long long)m->head_dim);
    ts_buf_printf(b, "ffn:            %lld (%s)\n", (long long)m->ffn, act_name(m->act));
    ts_buf_printf(b, "vocab:          %lld (graph uses %lld)\n", (long long)m->vocab, (long long)g->vocab);
    ts_buf_printf(b, "positions:      %s, max %lld\n", pos_name(m->pos), (long long)m->max_positions);
    ts_buf_printf(b, "norm:           %s, eps %g", norm_name(m->norm), m->norm_eps);
    if (m->norm_layout == MODEL_NORM_LAYOUT_REORDERED)
        ts_buf_puts(b, ", on each sublayer's output (reordered)");
    else if (m->norm_layout == MODEL_NORM_LAYOUT_SANDWICH)
        ts_buf_puts(b, ", on each sublayer's input and output (sandwich)");
    if (m->qk_norm) ts_buf_puts(b, m->qk_norm_full ? "; q/k norms over all heads" : "; q/k norms per head");
    ts_buf_puts(b, "\n");
    ts_buf_printf(b, "tied embedding: %s\n", m->tied_embeddings ? "yes" : "no");
    ts_buf_printf(b, "dropout:        hidden %g, attention %g\n", m->hidden_dropout, m->attn_dropout);
    if (m->experts > 0)
        ts_buf_printf(b, "experts:        %lld routed, top-%lld, expert ffn %lld, %lld shared, %lld dense layers first\n",
                      (long long)m->experts, (long long)m->topk, (long long)m->moe_ffn, (long long)m->shared_experts,
                      (long long)m->dense_layers);
    if (m->sliding_window > 0 || m->attn_sinks)
        ts_buf_printf(b, "attention:      sliding window %lld on %lld of %lld layers%s\n", (long long)m->sliding_window,
                      (long long)model_windowed_layer_count(m), (long long)m->layers, m->attn_sinks ? ", a sink per head" : "");
    if (m->q_lora_rank > 0 || m->kv_lora_rank > 0)
        ts_buf_printf(b, "MLA:            q rank %lld, kv rank %lld, nope %lld, rope %lld, v %lld\n",
                      (long long)m->q_lora_rank, (long long)m->kv_lora_rank, (long long)m->qk_nope_dim,
                      (long long)m->qk_rope_dim, (long long)m->v_head_dim);
    ts_buf_printf(b, "parameters:     %lld (%.2f B; graph: %lld)\n", (long long)c.total, (double)c.total / 1e9,
                  (long long)t.params);
    if (m->experts > 0) ts_buf_printf(b, "active params:  %lld per token\n", (long long)c.active);
    ts_buf_printf(b, "graph:          %d modules, %d ops, %d parameter tensors\n", g->n_mods, g->n_ops, g->n_params);
}

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
        summary(&m, g, &b);
    }
    graph_destroy(g);
    rc = cli_emit(output, &b);
    ts_buf_free(&b);
    return rc;
}
