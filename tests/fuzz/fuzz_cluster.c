/* fuzz_cluster — cluster files (data/clusters/*.json schema, "format":
 * "trainsim-cluster"), read with hw_cluster_load from a temp file for a few
 * GPU counts; a loaded cluster drives the collective model, whose times
 * must be finite and non-negative. */
#include "fuzz_common.h"

#include <math.h>

#include "trainsim/hw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_tmpfile(data, size, ".json");
    static const int64_t gpus[] = {0, 8, 1 << 20};
    for (int i = 0; i < 3; i++) {
        ClusterSpec c;
        TsError e = {0};
        TsStatus st = hw_cluster_load(path, gpus[i], &c, &e);
        fz_check_error(st, &e);
        if (st != TS_OK) continue;
        HwNet net;
        hw_net_init(&net, &c);
        /* groups that fit the cluster as loaded (nodes = ceil(gpus / per node)) */
        int64_t nodes = c.nodes < 128 ? c.nodes : 128, n = nodes * c.gpus_per_node;
        double t = hw_coll_time_s(&net, TS_COLL_ALLREDUCE, 1e9, c.gpus_per_node, 1, 1, HW_GROUP_TP) +
                   hw_coll_time_s(&net, TS_COLL_ALLGATHER, 1e6, n, nodes, c.gpus_per_node, HW_GROUP_DP) +
                   hw_coll_time_s(&net, TS_COLL_ALLTOALL, 1, n < 2 ? n : 2, nodes < 2 ? nodes : 2, 1, HW_GROUP_NONE) +
                   hw_p2p_time_s(&net, 1e8, nodes > 1) + hw_alltoall_time_s(&net, 1e7, n, nodes);
        if (!(t >= 0) || isinf(t)) abort();
        TsBuf b = {0};
        hw_cluster_to_json(&c, &b);
        ts_buf_free(&b);
    }
    return 0;
}
