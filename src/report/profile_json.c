/* The profile as JSON: "trainsim.profile" version 1. DeepSpeed writes no
 * JSON; this carries the same per-module numbers as the text report plus
 * the exact training figures. */
#include "trainsim/report.h"

#include <stdlib.h>
#include <string.h>

static void num(TsBuf *b, const char *key, double v, bool comma)
{
    ts_buf_printf(b, "\"%s\":", key);
    ts_json_fmt_double(b, v);
    if (comma) ts_buf_puts(b, ",");
}

void rep_profile_json(const ModuleGraph *g, const RepCompute *cm, const RepProfileOptions *o, TsBuf *b)
{
    RepModuleStats *st = malloc(sizeof *st * (size_t)g->n_mods);
    double *pre = malloc(sizeof *pre * 4 * ((size_t)g->n_ops + 1));
    if (!st || !pre) {
        free(st);
        free(pre);
        b->oom = true;
        return;
    }
    /* prefix sums of exact fwd, dgrad+wgrad, act bytes, fwd bytes over the execution order */
    memset(pre, 0, sizeof *pre * 4);
    for (int32_t i = 0; i < g->n_ops; i++) {
        const GraphOp *op = &g->ops[i];
        double *p = &pre[4 * (size_t)i], *q = &pre[4 * ((size_t)i + 1)];
        q[0] = p[0] + op->fwd_flops;
        q[1] = p[1] + op->dgrad_flops + op->wgrad_flops;
        q[2] = p[2] + op->act_bytes;
        q[3] = p[3] + op->fwd_bytes;
    }
    RepTraining t;
    rep_stats_and_training(g, cm, st, &t);
    ts_buf_printf(b, "{\"format\":\"trainsim.profile\",\"version\":1,\"generator\":\"trainsim %s\",\n", TRAINSIM_VERSION);
    ts_buf_puts(b, "\"model\":");
    ts_json_escape(b, g->spec.name);
    ts_buf_printf(b, ",\"naming\":\"%s\",\"batch\":%lld,\"seq\":%lld,\"dtype\":\"%s\",\"gpu\":", graph_naming_name(g->opt.naming),
                  (long long)g->opt.batch, (long long)g->opt.seq, ts_dtype_name(cm->dtype));
    ts_json_escape(b, cm->hw.gpu.name);
    ts_buf_printf(b, ",\"causal\":%s,\"recompute\":\"%s\",\n\"totals\":{", g->opt.causal ? "true" : "false",
                  plan_recompute_name(o->recompute));
    num(b, "params", st[0].params, true);
    num(b, "fwd_macs", st[0].macs, true);
    num(b, "fwd_flops", st[0].flops, true);
    num(b, "fwd_latency_s", st[0].latency_s, true);
    num(b, "fwd_flops_per_s", st[0].latency_s > 0 ? st[0].flops / st[0].latency_s : 0, true);
    num(b, "exact_fwd_flops", pre[4 * (size_t)g->n_ops], true);
    num(b, "exact_bwd_flops", pre[4 * (size_t)g->n_ops + 1], true);
    num(b, "act_bytes", pre[4 * (size_t)g->n_ops + 2], false);
    ts_buf_puts(b, "},\n\"training\":{");
    for (int r = 0; r < PLAN_RECOMPUTE_COUNT; r++) {
        ts_buf_printf(b, "%s\"%s\":{", r ? "," : "", plan_recompute_name((PlanRecompute)r));
        num(b, "exact_flops", t.exact_flops[r], true);
        num(b, "closed_form_flops", t.closed_flops[r], false);
        ts_buf_puts(b, "}");
    }
    ts_buf_puts(b, "},\n\"modules\":[");
    char path[1024];
    for (int32_t i = 0; i < g->n_mods; i++) {
        const GraphModule *m = &g->mods[i];
        const RepModuleStats *s = &st[i];
        graph_module_path(g, i, path, sizeof path);
        ts_buf_puts(b, i ? ",\n {" : "\n {");
        ts_buf_printf(b, "\"id\":%d,\"parent\":%d,\"depth\":%d,\"path\":", i, m->parent, m->depth);
        ts_json_escape(b, path);
        ts_buf_puts(b, ",\"class\":");
        ts_json_escape(b, m->cls);
        ts_buf_puts(b, ",");
        num(b, "params", s->params, true);
        num(b, "macs", s->macs, true);
        num(b, "flops", s->flops, true);
        num(b, "latency_s", s->latency_s, true);
        num(b, "flops_per_s", s->latency_s > 0 ? s->flops / s->latency_s : 0, true);
        size_t a = 4 * (size_t)m->first_op, z = 4 * (size_t)(m->first_op + m->n_ops);
        num(b, "exact_fwd_flops", pre[z] - pre[a], true);
        num(b, "exact_bwd_flops", pre[z + 1] - pre[a + 1], true);
        num(b, "act_bytes", pre[z + 2] - pre[a + 2], false);
        ts_buf_puts(b, "}");
    }
    ts_buf_puts(b, "\n]}\n");
    free(st);
    free(pre);
}
