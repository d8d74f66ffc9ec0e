/* trainsim simulate --workload FILE — an imported SimAI/AICB, ASTRA-sim 1.0
 * or op-table workload run with SimAI's semantics (sim_replay_simai). */
#include "cli.h"
#include "cli_hw.h"
#include "trainsim/sim.h"
#include "trainsim/workload.h"

int cmd_simulate_workload(const CliSpec *s, const CliHw *ch, const SimOptions *so, const char *path, bool json);

static void text(const Workload *w, const CliHwLoaded *hl, const SimResult *r, const char *path, TsBuf *b)
{
    const WlParallel *p = &w->par;
    ts_buf_printf(b, "trainsim simulate --workload %s (SimAI semantics: one rank, no pipeline interaction)\n", path);
    ts_buf_printf(b, "layout: %lld GPUs, tp %lld, pp %lld, ep %lld, ga %lld on %s (%s); %d rows\n\n",
                  (long long)p->world, (long long)p->tp, (long long)p->pp, (long long)p->ep, (long long)p->ga,
                  hl->cluster.gpu.name, hl->cluster.name, w->n_classes ? w->classes[0].n_rows : 0);
    ts_buf_printf(b, "  iteration time        %.6g s\n", r->iteration_time_s);
    if (r->tokens_per_s > 0)
        ts_buf_printf(b, "  tokens/s              %.0f  (%.1f per GPU)\n", r->tokens_per_s, r->tokens_per_s_per_gpu);
    ts_buf_puts(b, "\nwhere the time goes:\n");
    for (int i = 0; i < SIM_BD_COUNT; i++) {
        double v = sim_breakdown_get(&r->breakdown, i);
        ts_buf_printf(b, "  %-18s %12.3f ms  %5.1f%%\n", sim_breakdown_key(i), v * 1e3,
                      r->iteration_time_s > 0 ? 100 * v / r->iteration_time_s : 0);
    }
    if (w->warning[0]) ts_buf_printf(b, "warning: %s\n", w->warning);
}

static void json(const Workload *w, const CliHwLoaded *hl, const SimResult *r, TsBuf *b)
{
    ts_buf_puts(b, "{\"format\": \"trainsim-simulate\", \"version\": 1, \"semantics\": \"simai\", \"iteration_time_s\": ");
    ts_json_fmt_double(b, r->iteration_time_s);
    ts_buf_puts(b, ", \"breakdown_s\": {");
    for (int i = 0; i < SIM_BD_COUNT; i++) {
        ts_buf_printf(b, "%s\"%s\": ", i ? ", " : "", sim_breakdown_key(i));
        ts_json_fmt_double(b, sim_breakdown_get(&r->breakdown, i));
    }
    ts_buf_printf(b, "}, \"workload\": {\"world\": %lld, \"tp\": %lld, \"pp\": %lld, \"ep\": %lld, \"ga\": %lld, "
                     "\"rows\": %d}, \"cluster\": {\"name\": ",
                  (long long)w->par.world, (long long)w->par.tp, (long long)w->par.pp, (long long)w->par.ep,
                  (long long)w->par.ga, w->n_classes ? w->classes[0].n_rows : 0);
    ts_json_escape(b, hl->cluster.name);
    ts_buf_puts(b, ", \"gpu\": ");
    ts_json_escape(b, hl->cluster.gpu.name);
    ts_buf_printf(b, ", \"gpus\": %lld, \"nodes\": %lld}}\n", (long long)hl->cluster.gpus,
                  (long long)hl->cluster.nodes);
}

int cmd_simulate_workload(const CliSpec *s, const CliHw *ch, const SimOptions *so, const char *path, bool js)
{
    (void)s;
    (void)so;
    TsError err = {0};
    Workload *w = NULL;
    if (wl_read_file(path, &w, &err) != TS_OK) return cli_fail(&err);
    CliHwLoaded hl;
    int rc = cli_hw_load(ch, "dgx-h100", w->par.world > 0 ? w->par.world : 0, &hl);
    if (rc) {
        wl_destroy(w);
        return rc;
    }
    SimResult r;
    if (sim_replay_simai(w, &hl.net, &r, &err) != TS_OK) {
        wl_destroy(w);
        cli_hw_free(&hl);
        return cli_fail(&err);
    }
    TsBuf b = {0};
    if (js) json(w, &hl, &r, &b);
    else text(w, &hl, &r, path, &b);
    rc = cli_emit(NULL, &b);
    ts_buf_free(&b);
    wl_destroy(w);
    cli_hw_free(&hl);
    return rc;
}
