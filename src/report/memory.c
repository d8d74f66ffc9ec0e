/* memory.c (report) — `trainsim memory`'s table and JSON (report_memory.h). */
#include "trainsim/report_memory.h"

#include <stdio.h>
#include <string.h>

#define GIB (1024.0 * 1024.0 * 1024.0)

static void mem_json(TsBuf *b, const PartMemory *x, double cap, double lim, bool detail)
{
    ts_buf_printf(b, "{\"stage\": %d, \"weights_bytes\": ", x->stage);
    ts_json_fmt_double(b, x->weights_bytes);
    ts_buf_puts(b, ", \"gradients_bytes\": ");
    ts_json_fmt_double(b, x->gradients_bytes);
    ts_buf_puts(b, ", \"optimizer_bytes\": ");
    ts_json_fmt_double(b, x->optimizer_bytes);
    ts_buf_puts(b, ", \"activations_bytes\": ");
    ts_json_fmt_double(b, x->activations_bytes);
    ts_buf_puts(b, ", \"other_bytes\": ");
    ts_json_fmt_double(b, x->other_bytes);
    ts_buf_puts(b, ", \"total_bytes\": ");
    ts_json_fmt_double(b, x->total_bytes);
    ts_buf_puts(b, ", \"capacity_bytes\": ");
    ts_json_fmt_double(b, cap);
    ts_buf_printf(b, ", \"fits\": %s, \"headroom_bytes\": ", x->total_bytes <= lim ? "true" : "false");
    ts_json_fmt_double(b, cap - x->total_bytes);
    if (detail) {
        const struct { const char *k; double v; } d[] = {
            {"params", x->params}, {"embed_params", x->embed_params},
            {"expert_params", x->expert_params}, {"act_layers_bytes", x->act_layers_bytes},
            {"act_embed_bytes", x->act_embed_bytes}, {"act_head_bytes", x->act_head_bytes},
            {"inflight_microbatches", x->inflight}, {"workspace_bytes", x->workspace_bytes},
            {"runtime_bytes", x->runtime_bytes}, {"fragmentation_bytes", x->frag_bytes},
        };
        ts_buf_puts(b, ", \"detail\": {");
        for (size_t i = 0; i < sizeof d / sizeof d[0]; i++) {
            ts_buf_printf(b, "%s\"%s\": ", i ? ", " : "", d[i].k);
            ts_json_fmt_double(b, d[i].v);
        }
        ts_buf_puts(b, "}");
    }
    ts_buf_puts(b, "}");
}

/* One stage: the categories, the total, the headroom (capacity - total,
 * negative when it does not fit) and the verdict against lim (the capacity
 * less --headroom). */
static void mem_row(TsBuf *b, const char *label, const PartMemory *x, double cap, double lim)
{
    ts_buf_printf(b, "%-7s %9.2f %9.2f %9.2f %11.2f %9.2f %9.2f %9.2f  %s\n", label,
                  x->weights_bytes / GIB, x->gradients_bytes / GIB, x->optimizer_bytes / GIB,
                  x->activations_bytes / GIB, x->other_bytes / GIB, x->total_bytes / GIB,
                  (cap - x->total_bytes) / GIB, x->total_bytes <= lim ? "fits" : "DOES NOT FIT");
}

int64_t rep_memory_over(const RepMemory *r)
{
    int64_t n = 0;
    for (int64_t i = 0; i < r->n_stages; i++) n += r->stages[i].total_bytes > r->capacity_bytes - r->min_headroom_bytes;
    return n;
}

void rep_memory_json(const RepMemory *r, TsBuf *b)
{
    const double cap = r->capacity_bytes, lim = cap - r->min_headroom_bytes;
    ts_buf_puts(b, "{\"format\": \"trainsim-memory\", \"version\": 1, \"model\": ");
    ts_json_escape(b, r->model);
    ts_buf_puts(b, ", \"plan\": ");
    ts_json_escape(b, r->plan ? r->plan : "");
    ts_buf_printf(b,
                  ", \"memory_model\": \"%s\", \"selective_recompute\": \"%s\", \"grad_reduce_dtype\": \"%s\", "
                  "\"cross_entropy\": \"%s\", \"grads_between_steps\": \"%s\", \"gpu\": ",
                  r->memory_model, r->selective_ops ? "ops" : "attention", r->grads_16bit ? "16-bit" : "fp32",
                  r->ce_fusion ? r->ce_fusion : "none", r->grads_freed ? "freed" : "kept");
    ts_json_escape(b, r->gpu);
    ts_buf_puts(b, ", \"min_headroom_bytes\": ");
    ts_json_fmt_double(b, r->min_headroom_bytes);
    ts_buf_printf(b, ", \"stages_not_fitting\": %lld", (long long)rep_memory_over(r));
    if (rep_memory_over(r) > 0) { /* what would fit on the same GPUs and layout */
        ts_buf_puts(b, ", \"fits_with\": [");
        for (int i = 0; i < r->n_fit; i++) {
            ts_buf_puts(b, i ? ", {\"flags\": " : "{\"flags\": ");
            ts_json_escape(b, r->fit[i].flags);
            ts_buf_puts(b, ", \"total_bytes\": ");
            ts_json_fmt_double(b, r->fit[i].total_bytes);
            ts_buf_puts(b, "}");
        }
        ts_buf_puts(b, "]");
    }
    ts_buf_puts(b, ",\n \"memory\": ");
    mem_json(b, r->peak, cap, lim, true);
    ts_buf_puts(b, ",\n \"stages\": [");
    for (int64_t i = 0; i < r->n_stages; i++) {
        ts_buf_puts(b, i ? ",\n  " : "\n  ");
        mem_json(b, &r->stages[i], cap, lim, true);
    }
    ts_buf_puts(b, "\n ]}\n");
}

void rep_memory_text(const RepMemory *r, TsBuf *b)
{
    const double cap = r->capacity_bytes, lim = cap - r->min_headroom_bytes;
    const PartMemory *peak = r->peak;
    int64_t n_over = rep_memory_over(r);
    ts_buf_printf(b, "memory per GPU of %s, %s\n", r->model, r->plan ? r->plan : "");
    bool fused = r->ce_fusion && strcmp(r->ce_fusion, "none");
    ts_buf_printf(b, "memory model: %s%s%s%s%s%s; GPU %s with %.2f GiB\n\n", r->memory_model,
                  r->selective_ops ? " (selective recompute as op-level SAC)" : "",
                  r->grads_16bit ? ", 16-bit gradient buffer" : "", fused ? ", fused cross-entropy " : "",
                  fused ? r->ce_fusion : "", r->grads_freed ? ", gradients freed after each step" : "", r->gpu,
                  cap / GIB);
    ts_buf_printf(b, "%-7s %9s %9s %9s %11s %9s %9s %9s\n", "stage", "weights", "grads", "optimizer", "activations",
                  "other", "total", "headroom");
    ts_buf_printf(b, "%-7s %9s %9s %9s %11s %9s %9s %9s\n", "", "GiB", "GiB", "GiB", "GiB", "GiB", "GiB", "GiB");
    for (int64_t i = 0; i < r->n_stages; i++) {
        char lab[24];
        snprintf(lab, sizeof lab, "%lld", (long long)i);
        mem_row(b, lab, &r->stages[i], cap, lim);
    }
    char asked[64] = "";
    if (r->min_headroom_bytes > 0) snprintf(asked, sizeof asked, " (%.2f GiB asked, --headroom)", r->min_headroom_bytes / GIB);
    ts_buf_printf(b, "\nmost loaded GPU: stage %d, %.2f GiB of %.2f GiB (%.1f%%), headroom %.2f GiB%s: %s\n", peak->stage,
                  peak->total_bytes / GIB, cap / GIB, 100.0 * peak->total_bytes / cap, (cap - peak->total_bytes) / GIB,
                  asked, peak->total_bytes <= lim ? "fits" : "does not fit");
    if (n_over > 0)
        ts_buf_printf(b, "DOES NOT FIT: %lld of %lld stage%s over capacity%s\n", (long long)n_over,
                      (long long)r->n_stages, r->n_stages == 1 ? "" : "s",
                      r->min_headroom_bytes > 0 ? " less --headroom" : "");
}
