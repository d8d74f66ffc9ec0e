/* hw.c (report) — `trainsim hw`'s preset tables and one GPU or cluster
 * shown in full (report_hw.h). */
#include "trainsim/report_hw.h"

#include <stdio.h>
#include <string.h>

void rep_gpus_table(const GpuSpec *gpus, const char (*names)[64], const char (*why)[TS_ERR_MSG_MAX], int n, int total,
                    TsBuf *b)
{
    int w = 4;
    for (int i = 0; i < n; i++) {
        const char *name = why[i][0] ? names[i] : gpus[i].name;
        if ((int)strlen(name) > w) w = (int)strlen(name);
    }
    ts_buf_printf(b, "GPUs (%d presets; dense TFLOP/s):\n", total);
    ts_buf_printf(b, "  %-*s %8s %8s %8s %7s %8s %5s %6s\n", w, "name", "fp32", "bf16", "fp8", "HBM GiB",
                  "HBM TB/s", "SMs", "W");
    for (int i = 0; i < n; i++) {
        const GpuSpec *g = &gpus[i];
        if (why[i][0]) {
            ts_buf_printf(b, "  %-*s (invalid: %s)\n", w, names[i], why[i]);
            continue;
        }
        ts_buf_printf(b, "  %-*s %8.1f %8.1f %8.1f %7.0f %8.3f %5lld %6.0f\n", w, g->name,
                      g->peak_flops[TS_DTYPE_FP32] / 1e12, g->peak_flops[TS_DTYPE_BF16] / 1e12,
                      g->peak_flops[TS_DTYPE_FP8] / 1e12, g->hbm_bytes / HW_CAPACITY_GB_BYTES,
                      g->hbm_bw_bytes_per_s / 1e12, (long long)g->sm_count, g->power_w);
    }
}

void rep_clusters_table(const ClusterSpec *clusters, const char (*names)[64], const char (*why)[TS_ERR_MSG_MAX],
                        int n, int total, TsBuf *b)
{
    int w = 4, wg = 3; /* the name and gpu columns */
    for (int i = 0; i < n; i++) {
        const char *name = why[i][0] ? names[i] : clusters[i].name;
        if ((int)strlen(name) > w) w = (int)strlen(name);
        if (!why[i][0] && (int)strlen(clusters[i].gpu_name) > wg) wg = (int)strlen(clusters[i].gpu_name);
    }
    ts_buf_printf(b, "\nClusters (%d presets; bandwidth per GPU per direction):\n", total);
    ts_buf_printf(b, "  %-*s %-*s %9s %13s %-6s %5s %9s %5s\n", w, "name", wg, "gpu", "gpus/node",
                  "scale-up GB/s", "over", "NICs", "NIC Gb/s", "NVLS");
    for (int i = 0; i < n; i++) {
        const ClusterSpec *c = &clusters[i];
        if (why[i][0]) {
            ts_buf_printf(b, "  %-*s (invalid: %s)\n", w, names[i], why[i]);
            continue;
        }
        ts_buf_printf(b, "  %-*s %-*s %9lld %13.0f %-6s %5lld %9.0f %5s\n", w, c->name, wg, c->gpu_name,
                      (long long)c->gpus_per_node, c->scaleup_bw_bytes_per_s / 1e9, hw_link_name(c->scaleup_link),
                      (long long)c->nics_per_node, c->nic_bw_bytes_per_s * 8 / 1e9, c->nvls ? "yes" : "no");
    }
}

void rep_gpu_text(const GpuSpec *g, TsBuf *b)
{
    ts_buf_printf(b, "gpu: %s (%s %s)\n", g->name, g->vendor, g->arch);
    ts_buf_printf(b, "  peak dense TFLOP/s:");
    for (int d = 0; d < TS_DTYPE_COUNT; d++)
        ts_buf_printf(b, " %s %.1f", ts_dtype_name((TsDtype)d), g->peak_flops[d] / 1e12);
    ts_buf_printf(b, "\n  HBM: %.0f GiB at %.3f TB/s; %lld SMs; L2 %.0f MB; %.0f W; %.0f MHz", g->hbm_bytes / HW_CAPACITY_GB_BYTES,
                  g->hbm_bw_bytes_per_s / 1e12, (long long)g->sm_count, g->l2_bytes / 1e6, g->power_w,
                  g->clock_mhz);
    if (g->sustained_clock_mhz > 0 && g->sustained_clock_mhz != g->clock_mhz) {
        ts_buf_printf(b, " (%.0f MHz sustained in training", g->sustained_clock_mhz);
        if (g->single_clock_mhz > 0) ts_buf_printf(b, ", %.0f on one GPU alone", g->single_clock_mhz);
        ts_buf_puts(b, ": simulate)");
    }
    ts_buf_puts(b, "\n");
    ts_buf_printf(b, "  GEMM efficiency:");
    for (int d = 0; d < TS_DTYPE_COUNT; d++)
        ts_buf_printf(b, " %s %.3g", ts_dtype_name((TsDtype)d), g->gemm_eff[d]);
    ts_buf_printf(b, "\n  GEMM tile %lldx%lld, k_half %g, alignment %lld elements (rows not 16-byte aligned x%g, "
                     "2-byte x%g)\n",
                  (long long)g->gemm_tile_m, (long long)g->gemm_tile_n, g->gemm_k_half,
                  (long long)g->gemm_align_elems, g->gemm_align_penalty, g->gemm_align_penalty_2b);
    ts_buf_printf(b, "  attention: fwd %.3g, bwd %.3g of peak; seq half-point %g; head dim 64 x%.3g; "
                     "causal: half-point x%g, efficiency x%.3g\n",
                  g->attn_fwd_eff, g->attn_bwd_eff, g->attn_seq_half, g->attn_hd64_factor, g->attn_causal_half,
                  g->attn_causal_eff);
    char generic[96] = "";
    if (g->eager_generic_gelem_per_ms > 0)
        snprintf(generic, sizeof generic, "; eager generic elementwise path %.3g G elements/ms",
                 g->eager_generic_gelem_per_ms);
    ts_buf_printf(b, "  memory-bound: %.3g of HBM, half at %.3g MB; launch %.3g us%s\n", g->mem_eff,
                  g->mem_half_bytes / 1e6, g->launch_s * 1e6, generic);
    if (g->eager_norm_eff > 0)
        ts_buf_printf(b, "  PyTorch's norm kernels: %.3g of that stream, at least %.3g / %.3g ns a row forward / backward\n",
                      g->eager_norm_eff, g->eager_norm_row_s[0] * 1e9, g->eager_norm_row_s[1] * 1e9);
    ts_buf_printf(b, "  learned attention sink: its backward %.3g ns a query row; PyTorch's index_put_ with accumulate: "
                     "%.3g us a duplicate index\n",
                  g->attn_sink_bwd_row_s * 1e9, g->index_put_dup_s * 1e6);
    if (g->software == HW_SOFTWARE_2024)
        ts_buf_puts(b, "  on the 2024 CUDA libraries (--software 2024): the figures above are theirs\n");
    else if (hw_gpu_has_2024(g))
        ts_buf_printf(b,
                      "  2024 CUDA libraries (--software 2024): fp8 GEMM efficiency %.3g, attention fwd x%.3g, "
                      "bwd x%.3g\n",
                      g->sw2024_fp8_eff > 0 ? g->sw2024_fp8_eff : g->gemm_eff[TS_DTYPE_FP8],
                      g->sw2024_attn_factor[0] > 0 ? g->sw2024_attn_factor[0] : 1.0,
                      g->sw2024_attn_factor[0] > 0 ? g->sw2024_attn_factor[1] : 1.0);
    ts_buf_printf(b, "  source: %s\n", g->source);
}

void rep_cluster_text(const ClusterSpec *c, TsBuf *b)
{
    ts_buf_printf(b, "cluster: %s: %lld GPUs = %lld node%s x %lld %s\n", c->name, (long long)c->gpus,
                  (long long)c->nodes, c->nodes == 1 ? "" : "s", (long long)c->gpus_per_node, c->gpu_name);
    const char *via = hw_link_display(c->scaleup_link);
    ts_buf_printf(b, "  scale-up: %.0f GB/s per GPU per direction over %s, %.3g us/hop, efficiency %.3g, NVLS %s",
                  c->scaleup_bw_bytes_per_s / 1e9, via, c->scaleup_lat_s * 1e6, c->scaleup_eff, c->nvls ? "yes" : "no");
    if (c->nvls) ts_buf_printf(b, " (efficiency %.3g)", c->nvls_eff);
    ts_buf_printf(b, "\n  scale-out: %lld NICs x %.0f Gb/s per node, %.3g us/hop, efficiency %.3g, SHARP %s, "
                     "oversubscription %g above %lld nodes/leaf\n",
                  (long long)c->nics_per_node, c->nic_bw_bytes_per_s * 8 / 1e9, c->nic_lat_s * 1e6, c->nic_eff,
                  c->sharp ? "yes" : "no", c->oversubscription, (long long)c->nodes_per_leaf);
    ts_buf_printf(b, "  source: %s\n", c->source);
}

