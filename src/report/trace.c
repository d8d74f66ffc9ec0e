/* trace.c — Chrome trace (Trace Event Format) of a simulated iteration. */
#include "trainsim/report_trace.h"
#include <stdio.h>
#include <stdlib.h>

static void ev(TsBuf *b, bool *first, const char *name, int32_t pid, int tid, double t0_s, double t1_s,
               int64_t mb, int chunk)
{
    ts_buf_puts(b, *first ? "\n" : ",\n");
    *first = false;
    ts_buf_puts(b, "{\"name\": ");
    ts_json_escape(b, name);
    ts_buf_printf(b, ", \"ph\": \"X\", \"pid\": %d, \"tid\": %d, \"ts\": ", pid, tid);
    ts_json_fmt_double(b, t0_s * 1e6);
    ts_buf_puts(b, ", \"dur\": ");
    ts_json_fmt_double(b, (t1_s - t0_s) * 1e6);
    if (mb >= 0) ts_buf_printf(b, ", \"args\": {\"micro_batch\": %lld, \"chunk\": %d}", (long long)mb, chunk);
    ts_buf_puts(b, "}");
}

/* The document head up to the opening of traceEvents. */
static void begin(TsBuf *b, const char *title)
{
    ts_buf_puts(b, "{\"displayTimeUnit\": \"ms\", \"metadata\": {\"generator\": \"trainsim " TRAINSIM_VERSION
                   "\", \"format\": \"chrome-trace-event\", \"title\": ");
    ts_json_escape(b, title ? title : "");
    ts_buf_puts(b, "}, \"traceEvents\": [");
}

void rep_trace_chrome(const SimResult *r, const char *title, int64_t layers_per_chunk, TsBuf *b)
{
    bool first = true;
    begin(b, title);
    for (int32_t s = 0; s < r->n_stages; s++) {
        char nm[64];
        ts_buf_puts(b, first ? "\n" : ",\n");
        first = false;
        snprintf(nm, sizeof nm, "stage %d", s);
        ts_buf_printf(b, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"name\": \"%s\"}}", s, nm);
        ts_buf_printf(b, ",\n{\"name\": \"process_sort_index\", \"ph\": \"M\", \"pid\": %d, \"args\": {\"sort_index\": %d}}", s, s);
        for (int t = 0; t < SIM_STREAM_COUNT; t++)
            ts_buf_printf(b, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %d, \"tid\": %d, \"args\": {\"name\": \"%s\"}}",
                          s, t, sim_stream_name((SimStream)t));
    }
    for (int64_t i = 0; i < r->n_spans; i++) {
        const SimSpan *sp = &r->spans[i];
        char nm[96];
        if (sp->name) { /* a workload task: its own name */
            ev(b, &first, sp->name, sp->stage, sp->stream, sp->start_s, sp->end_s, sp->micro_batch, sp->chunk);
            continue;
        }
        switch (sp->kind) {
        case 'F': case 'B':
            if (layers_per_chunk > 1) {
                double d = (sp->end_s - sp->start_s) / (double)layers_per_chunk;
                for (int64_t l = 0; l < layers_per_chunk; l++) {
                    snprintf(nm, sizeof nm, "%c layer %lld mb %d c %d", sp->kind,
                             (long long)(sp->kind == 'F' ? l : layers_per_chunk - 1 - l), sp->micro_batch, sp->chunk);
                    ev(b, &first, nm, sp->stage, sp->stream, sp->start_s + (double)l * d,
                       sp->start_s + (double)(l + 1) * d, sp->micro_batch, sp->chunk);
                }
                continue;
            }
            snprintf(nm, sizeof nm, "%c mb %d c %d", sp->kind, sp->micro_batch, sp->chunk);
            break;
        case 'S': snprintf(nm, sizeof nm, "send mb %d c %d", sp->micro_batch, sp->chunk); break;
        case 'R': snprintf(nm, sizeof nm, "grad reduce"); break;
        case 'O': snprintf(nm, sizeof nm, "optimizer step"); break;
        case 'G': snprintf(nm, sizeof nm, "param all-gather"); break;
        case 'T': snprintf(nm, sizeof nm, "TP exposed mb %d c %d", sp->micro_batch, sp->chunk); break;
        case 'C': snprintf(nm, sizeof nm, "CP exposed mb %d c %d", sp->micro_batch, sp->chunk); break;
        case 'E': snprintf(nm, sizeof nm, "EP all-to-all exposed mb %d c %d", sp->micro_batch, sp->chunk); break;
        default: snprintf(nm, sizeof nm, "%c", sp->kind); break;
        }
        ev(b, &first, nm, sp->stage, sp->stream, sp->start_s, sp->end_s, sp->micro_batch, sp->chunk);
    }
    ts_buf_puts(b, "\n]}\n");
}

/* A replayed per-rank workload: one process per rank of the range. */
void rep_trace_ranks(const SimResult *r, const char *title, int64_t first, int64_t count, TsBuf *b)
{
    bool started = false, *used = calloc((size_t)(count > 0 ? count : 1) * SIM_STREAM_COUNT, sizeof *used);
    begin(b, title);
    for (int64_t i = 0; i < r->n_spans && used; i++) {
        int64_t k = (int64_t)r->spans[i].stage - first;
        if (k >= 0 && k < count) used[k * SIM_STREAM_COUNT + r->spans[i].stream] = true;
    }
    for (int64_t k = 0; k < count; k++) {
        ts_buf_printf(b, "%s{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": %lld, \"args\": {\"name\": \"rank %lld\"}}",
                      started ? ",\n" : "\n", (long long)(first + k), (long long)(first + k));
        started = true;
        for (int t = 0; t < SIM_STREAM_COUNT && used; t++)
            if (used[k * SIM_STREAM_COUNT + t])
                ts_buf_printf(b, ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": %lld, \"tid\": %d, \"args\": "
                                 "{\"name\": \"%s\"}}",
                              (long long)(first + k), t, sim_stream_name((SimStream)t));
    }
    free(used);
    for (int64_t i = 0; i < r->n_spans; i++) {
        const SimSpan *sp = &r->spans[i];
        if (sp->stage < first || sp->stage >= first + count) continue;
        ev(b, &started, sp->name ? sp->name : "", sp->stage, sp->stream, sp->start_s, sp->end_s, -1, 0);
    }
    ts_buf_puts(b, "\n]}\n");
}
