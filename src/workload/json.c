/* The IR as JSON ("trainsim-workload", version WL_JSON_VERSION), and the
 * format sniffing reader entry point.
 *
 * {"format": "trainsim-workload", "version": 1, "generator": "trainsim 0.1.0",
 *  "source": "...", "parallel": {"world": 8, "tp": 8, ...},
 *  "classes": [{"name": "stage0", "stage": 0,
 *     "tasks": [{"id": 0, "kind": "comp", "phase": "fwd", "name": "...",
 *                "micro": 0, "chunk": 0, "layer": 3, "flops": 1e12,
 *                "mem_bytes": 1e9, "duration_s": 0.001, "deps": [], "ctrl_deps": []},
 *               {"id": 1, "kind": "coll", "coll": "allgather", "group": "tp",
 *                "bytes": 134217728, "async": false, ...},
 *               {"kind": "send", "peer_stage": 1, "tag": 7, "bytes": ...}],
 *     "rows": [{"name": "...", "comp": [0, -1, -1], "comm": [1, -1, -1],
 *               "process_time": 100}]}]}
 * Task ids and row slots are local to their class. Workloads read from a
 * layer format also carry "origin" ("simai", "astrasim", "optable") and,
 * when not HYBRID_TRANSFORMER_FWD_IN_BCKWD, "policy"; collectives read from
 * SimAI's ALLREDUCEALLTOALL carry "ar_a2a": true; recomputation tasks
 * "recompute": true; a send/recv pair that meets as a rendezvous (blocking
 * p2p, DeepSpeed's pipeline engine) "sync": true on both sides; the
 * all-to-alls of an overlapped F&B pair (WL_F_PAIR) "pair": true.
 * json_read.c reads it back. */
#include "wl_internal.h"
#include "trainsim/workload_chakra.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void kv_num(TsBuf *b, const char *k, double v)
{
    ts_buf_printf(b, ", \"%s\": ", k);
    ts_json_fmt_double(b, v);
}

static void put_task(TsBuf *b, const Workload *w, const WlClass *c, int32_t id)
{
    const WlTask *t = &w->tasks[id];
    ts_buf_printf(b, "{\"id\": %d, \"kind\": \"%s\", \"phase\": \"%s\", \"name\": ", id - c->first_task,
                  wl_kind_name(t->kind), wl_phase_name(t->phase));
    ts_json_escape(b, t->name);
    ts_buf_printf(b, ", \"micro\": %d, \"chunk\": %d, \"layer\": %d", t->micro, t->chunk, t->layer);
    if (t->kind == WL_KIND_COMP) {
        kv_num(b, "flops", t->flops);
        kv_num(b, "mem_bytes", t->mem_bytes);
        kv_num(b, "duration_s", t->duration_s);
    } else if (t->kind == WL_KIND_COLL) {
        ts_buf_printf(b, ", \"coll\": \"%s\", \"group\": \"%s\"", ts_coll_name(t->coll), wl_group_name(t->group));
        kv_num(b, "bytes", t->comm_bytes);
        ts_buf_printf(b, ", \"async\": %s", (t->flags & WL_F_ASYNC) ? "true" : "false");
        if (t->flags & WL_F_AR_A2A) ts_buf_puts(b, ", \"ar_a2a\": true");
        if (t->flags & WL_F_PAIR) ts_buf_puts(b, ", \"pair\": true");
    } else {
        ts_buf_printf(b, ", \"peer_stage\": %d, \"tag\": %d", t->peer_stage, t->tag);
        kv_num(b, "bytes", t->comm_bytes);
        if (t->flags & WL_F_SYNC) ts_buf_puts(b, ", \"sync\": true");
    }
    if (t->flags & WL_F_RECOMPUTE) ts_buf_puts(b, ", \"recompute\": true");
    const int32_t *d = wl_task_deps(w, t);
    ts_buf_puts(b, ", \"deps\": [");
    for (int32_t k = 0; k < t->n_data_deps; k++) ts_buf_printf(b, "%s%d", k ? ", " : "", d[k] - c->first_task);
    ts_buf_puts(b, "], \"ctrl_deps\": [");
    for (int32_t k = 0; k < t->n_ctrl_deps; k++)
        ts_buf_printf(b, "%s%d", k ? ", " : "", d[t->n_data_deps + k] - c->first_task);
    ts_buf_puts(b, "]}");
}

void wl_write_json(const Workload *w, TsBuf *b)
{
    const WlParallel *p = &w->par;
    ts_buf_printf(b, "{\"format\": \"trainsim-workload\", \"version\": %d, \"generator\": \"trainsim %s\", "
                     "\"source\": ", WL_JSON_VERSION, TRAINSIM_VERSION);
    ts_json_escape(b, w->source);
    /* Only for workloads read from a layer format: what its writers need to
     * convert the JSON exactly as they convert the original. */
    if (w->origin == WL_FMT_SIMAI || w->origin == WL_FMT_ASTRASIM || w->origin == WL_FMT_OPTABLE)
        ts_buf_printf(b, ", \"origin\": \"%s\"", wl_format_name(w->origin));
    if (w->policy[0] && strcmp(w->policy, "HYBRID_TRANSFORMER_FWD_IN_BCKWD") != 0) {
        ts_buf_puts(b, ", \"policy\": ");
        ts_json_escape(b, w->policy);
    }
    ts_buf_printf(b, ",\n \"parallel\": {\"world\": %" PRId64 ", \"tp\": %" PRId64 ", \"cp\": %" PRId64
                     ", \"pp\": %" PRId64 ", \"dp\": %" PRId64 ", \"ep\": %" PRId64 ", \"vpp\": %" PRId64
                     ", \"layers_per_stage\": %" PRId64 ", \"ga\": %" PRId64,
                  p->world, p->tp, p->cp, p->pp, p->dp, p->ep, p->vpp, p->layers_per_stage, p->ga);
    kv_num(b, "pp_comm_bytes", p->pp_comm_bytes);
    if (p->etp > 0 && p->etp != p->tp) ts_buf_printf(b, ", \"etp\": %" PRId64, p->etp);
    if (p->dp_shard > 0) ts_buf_printf(b, ", \"dp_shard\": %" PRId64, p->dp_shard);
    if (p->vpp_group > 0) ts_buf_printf(b, ", \"vpp_group\": %" PRId64, p->vpp_group);
    if (p->micro_batch > 0 && p->seq > 0)
        ts_buf_printf(b, ", \"micro_batch\": %" PRId64 ", \"seq\": %" PRId64, p->micro_batch, p->seq);
    const HwEpRoute *er = &p->ep_route;
    if (wl_ep_route_set(er)) {
        ts_buf_printf(b, ", \"ep_route\": {\"deepep\": %s, \"topk\": %" PRId64 ", \"node_limit\": %" PRId64,
                      er->deepep ? "true" : "false", er->topk, er->node_limit);
        kv_num(b, "load", er->load);
        ts_buf_puts(b, "}");
    }
    ts_buf_puts(b, "},\n \"classes\": [");
    for (int32_t ci = 0; ci < w->n_classes; ci++) {
        const WlClass *c = &w->classes[ci];
        ts_buf_printf(b, "%s\n  {\"name\": ", ci ? "," : "");
        ts_json_escape(b, c->name);
        ts_buf_printf(b, ", \"stage\": %d, \"tasks\": [", c->stage);
        for (int32_t i = 0; i < c->n_tasks; i++) {
            ts_buf_puts(b, i ? ",\n    " : "\n    ");
            put_task(b, w, c, c->first_task + i);
        }
        ts_buf_puts(b, "],\n   \"rows\": [");
        for (int32_t i = 0; i < c->n_rows; i++) {
            const WlRow *r = &w->rows[c->first_row + i];
            ts_buf_puts(b, i ? ",\n    {\"name\": " : "\n    {\"name\": ");
            ts_json_escape(b, r->name);
            ts_buf_puts(b, ", \"comp\": [");
            for (int ph = 0; ph < 3; ph++)
                ts_buf_printf(b, "%s%d", ph ? ", " : "", r->comp[ph] < 0 ? -1 : r->comp[ph] - c->first_task);
            ts_buf_puts(b, "], \"comm\": [");
            for (int ph = 0; ph < 3; ph++)
                ts_buf_printf(b, "%s%d", ph ? ", " : "", r->comm[ph] < 0 ? -1 : r->comm[ph] - c->first_task);
            ts_buf_printf(b, "], \"process_time\": %" PRId64 "}", r->process_time);
        }
        ts_buf_puts(b, "]}");
    }
    ts_buf_puts(b, "\n ]}\n");
}

bool wl_optable_sniff(const char *text, size_t len);

TsStatus wl_read_file(const char *path, Workload **out, TsError *err)
{
    *out = NULL;
    char prefix[1024];
    if (wl_chakra_prefix(path, prefix, sizeof prefix)) return wl_read_chakra(prefix, out, err);
    char *text;
    size_t len;
    TsStatus st = ts_read_file(path, WL_MAX_FILE_BYTES, &text, &len, err);
    if (st) return st;
    size_t lead = 0; /* JSON: the first non-blank byte is '{' (SimAI text starts with a policy word) */
    while (lead < len && (text[lead] == ' ' || text[lead] == '\t' || text[lead] == '\n' || text[lead] == '\r'))
        lead++;
    if (lead < len && text[lead] == '{') {
        st = wl_read_json(path, text, len, out, err);
        free(text);
        return st;
    }
    if (wl_optable_sniff(text, len)) st = wl_read_optable(path, text, len, out, err);
    else st = wl_read_simai(path, text, len, out, err);
    free(text);
    return st;
}
