/*
 * trainsim/report_hw.h — what `trainsim hw` prints: the GPU and cluster
 * preset tables (name columns as wide as the longest name; a preset that
 * failed to load listed by its file name with the reason) and one GPU or
 * cluster in full (peaks, HBM, clocks, the kernel model's efficiencies, the
 * network's bandwidths and latencies, the source).
 *
 * Ownership: text is appended to the caller's TsBuf. Failure: an allocation
 * failure sets TsBuf.oom.
 *
 * Example:
 *     rep_gpu_text(&gpu, &b);
 */
#ifndef TRAINSIM_REPORT_HW_H
#define TRAINSIM_REPORT_HW_H

#include "trainsim/common.h"
#include "trainsim/hw.h"

/* gpus[0..n) loaded from names[i] (why[i] "" when it loaded, else the
 * reason); total: the presets found (n may be fewer). */
void rep_gpus_table(const GpuSpec *gpus, const char (*names)[64], const char (*why)[TS_ERR_MSG_MAX], int n, int total,
                    TsBuf *out);
void rep_clusters_table(const ClusterSpec *clusters, const char (*names)[64], const char (*why)[TS_ERR_MSG_MAX],
                        int n, int total, TsBuf *out);
void rep_gpu_text(const GpuSpec *g, TsBuf *out);
void rep_cluster_text(const ClusterSpec *c, TsBuf *out);

#endif
