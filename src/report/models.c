/* models.c (report) — `trainsim model`'s summary and `trainsim models`'
 * listing (report_model.h). */
#include "trainsim/report_model.h"

#include <math.h>
#include <stdio.h>
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

void rep_model_summary(const ModelSpec *m, const ModuleGraph *g, TsBuf *b)
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

void rep_models_text(const ModelSpec *ms, int n, bool wide, TsBuf *b)
{
    int w = 4;
    for (int i = 0; i < n; i++)
        if ((int)strlen(ms[i].name) > w) w = (int)strlen(ms[i].name);
    ts_buf_printf(b, "%-*s %-9s %6s %6s %9s %9s %9s%s\n", w, "name", "family", "layers", "hidden", "heads/kv",
                  "params", "active", wide ? "  source" : "");
    for (int i = 0; i < n; i++) {
        const ModelSpec *m = &ms[i];
        ModelCounts c;
        model_count_params(m, &c);
        char hk[32], p[32], a[32] = "-";
        snprintf(hk, sizeof hk, "%lld/%lld", (long long)m->heads, (long long)m->kv_heads);
        params_str(c.total, p, sizeof p);
        if (m->experts > 0) params_str(c.active, a, sizeof a);
        ts_buf_printf(b, "%-*s %-9s %6lld %6lld %9s %9s %9s", w, m->name, model_arch_name(m->arch),
                      (long long)m->layers, (long long)m->hidden, hk, p, a);
        ts_buf_printf(b, wide ? "  %s\n" : "\n", m->source);
    }
}

void rep_models_json(const ModelSpec *ms, int n, TsBuf *b)
{
    ts_buf_printf(b, "{\"format\": \"trainsim-models\", \"version\": 1, \"models\": [");
    for (int i = 0; i < n; i++) {
        ModelCounts c;
        model_count_params(&ms[i], &c);
        emit_json(b, &ms[i], &c, i == 0);
    }
    ts_buf_puts(b, "\n]}\n");
}
