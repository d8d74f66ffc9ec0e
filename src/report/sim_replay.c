/* sim_replay.c — what `trainsim simulate --workload` prints and traces
 * (report_sim.h): the replay's summary, its JSON, its Chrome trace. */
#include <stdio.h>

#include "trainsim/report_sim.h"
#include "trainsim/report_trace.h"

void rep_replay_text(const Workload *w, const SimResult *r, const RepReplay *o, TsBuf *b)
{
    const WlParallel *p = &w->par;
    const ClusterSpec *cl = o->cluster;
    if (w->n_rows > 0) {
        ts_buf_printf(b, "trainsim simulate --workload %s (SimAI semantics: one rank's rows once, the pipeline by SimAI's bubble formula)\n",
                      o->path);
        ts_buf_printf(b, "layout: %lld GPUs, tp %lld, pp %lld, ep %lld, ga %lld on %s (%s); %d rows\n\n",
                      (long long)p->world, (long long)p->tp, (long long)p->pp, (long long)p->ep, (long long)p->ga,
                      cl->gpu.name, cl->name, w->n_classes ? w->classes[0].n_rows : 0);
    } else if (w->rank_class) {
        ts_buf_printf(b, "trainsim simulate --workload %s (Chakra semantics, as ASTRA-sim: every rank; a collective "
                         "waits for its whole group)\n",
                      o->path);
        ts_buf_printf(b, "traces: %lld ranks, %d tasks, %d groups on %s (%s); rank %d ends last\n\n",
                      (long long)p->world, w->n_tasks, w->n_xgroups, cl->gpu.name, cl->name, r->critical_stage);
    } else {
        ts_buf_printf(b, "trainsim simulate --workload %s (task-graph semantics: every stage, dependencies and "
                         "send/recv as written)\n",
                      o->path);
        ts_buf_printf(b, "layout: %lld GPUs, tp %lld, cp %lld, pp %lld, dp %lld, ep %lld, ga %lld on %s (%s); "
                         "%d classes, %d tasks; critical stage %d\n\n",
                      (long long)p->world, (long long)p->tp, (long long)p->cp, (long long)p->pp, (long long)p->dp,
                      (long long)p->ep, (long long)p->ga, cl->gpu.name, cl->name, w->n_classes, w->n_tasks,
                      r->critical_stage);
    }
    ts_buf_printf(b, "  iteration time        %.6g s\n", r->iteration_time_s);
    if (r->tokens_per_s > 0)
        ts_buf_printf(b, "  tokens/s              %.0f  (%.1f per GPU, %.2f samples/s; micro-batch %lld, seq %lld%s)\n",
                      r->tokens_per_s, r->tokens_per_s_per_gpu, r->samples_per_s, (long long)o->micro_batch,
                      (long long)o->seq, o->batch_from_workload ? " (from the workload)" : "");
    else if (w->rank_class)
        ts_buf_puts(b, "  tokens/s              unknown: the traces carry no batch layout\n");
    else
        ts_buf_puts(b, "  tokens/s              unknown: give --seq and --micro-batch (the workload does not say)\n");
    ts_buf_puts(b, "\nwhere the time goes:\n");
    for (int i = 0; i < SIM_BD_COUNT; i++) {
        double v = sim_breakdown_get(&r->breakdown, i);
        ts_buf_printf(b, "  %-18s %12.3f ms  %5.1f%%\n", sim_breakdown_key(i), v * 1e3,
                      r->iteration_time_s > 0 ? 100 * v / r->iteration_time_s : 0);
    }
    if (w->warning[0]) ts_buf_printf(b, "warning: %s\n", w->warning);
    if (o->trace && w->rank_class) {
        int64_t first = o->trace_first, count = o->trace_count;
        ts_buf_printf(b, "\ntimeline of ranks %lld-%lld (of %lld) written to %s\n", (long long)first,
                      (long long)(first + count - 1), (long long)p->world, o->trace);
        if (r->critical_stage < first || r->critical_stage >= first + count)
            ts_buf_printf(b, "(rank %d, which ends last, is not in it: --trace-ranks %d)\n", r->critical_stage,
                          r->critical_stage);
    }
}

void rep_replay_json(const Workload *w, const SimResult *r, const RepReplay *o, TsBuf *b)
{
    const ClusterSpec *cl = o->cluster;
    ts_buf_printf(b, "{\"format\": \"trainsim-simulate\", \"version\": 1, \"semantics\": \"%s\", \"iteration_time_s\": ",
                  w->n_rows > 0 ? "simai" : w->rank_class ? "chakra" : "dag");
    ts_json_fmt_double(b, r->iteration_time_s);
    if (r->tokens_per_s > 0) {
        ts_buf_puts(b, ", \"tokens_per_s\": ");
        ts_json_fmt_double(b, r->tokens_per_s);
        ts_buf_puts(b, ", \"tokens_per_s_per_gpu\": ");
        ts_json_fmt_double(b, r->tokens_per_s_per_gpu);
        ts_buf_puts(b, ", \"samples_per_s\": ");
        ts_json_fmt_double(b, r->samples_per_s);
    }
    ts_buf_puts(b, ", \"breakdown_s\": {");
    for (int i = 0; i < SIM_BD_COUNT; i++) {
        ts_buf_printf(b, "%s\"%s\": ", i ? ", " : "", sim_breakdown_key(i));
        ts_json_fmt_double(b, sim_breakdown_get(&r->breakdown, i));
    }
    ts_buf_printf(b, "}, \"workload\": {\"world\": %lld, \"tp\": %lld, \"pp\": %lld, \"ep\": %lld, \"ga\": %lld, "
                     "\"rows\": %d, \"classes\": %d, \"tasks\": %d, ",
                  (long long)w->par.world, (long long)w->par.tp, (long long)w->par.pp, (long long)w->par.ep,
                  (long long)w->par.ga, w->n_classes ? w->classes[0].n_rows : 0, w->n_classes, w->n_tasks);
    if (w->rank_class) ts_buf_printf(b, "\"groups\": %d, \"critical_rank\": %d}, ", w->n_xgroups, r->critical_stage);
    else ts_buf_printf(b, "\"critical_stage\": %d}, ", r->critical_stage);
    ts_buf_puts(b, "\"cluster\": {\"name\": ");
    ts_json_escape(b, cl->name);
    ts_buf_puts(b, ", \"gpu\": ");
    ts_json_escape(b, cl->gpu.name);
    ts_buf_printf(b, ", \"gpus\": %lld, \"nodes\": %lld}}\n", (long long)cl->gpus, (long long)cl->nodes);
}

void rep_replay_trace(const Workload *w, const SimResult *r, int64_t first, int64_t count, TsBuf *out)
{
    char title[400];
    if (w->rank_class) {
        snprintf(title, sizeof title, "%s (Chakra replay, ranks %lld-%lld of %lld)", w->source, (long long)first,
                 (long long)(first + count - 1), (long long)w->par.world);
        rep_trace_ranks(r, title, first, count, out);
    } else {
        snprintf(title, sizeof title, "%s (replayed)", w->source);
        rep_trace_chrome(r, title, 1, out);
    }
}
