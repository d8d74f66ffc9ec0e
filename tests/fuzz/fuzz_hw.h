/*
 * fuzz_hw.h — the hardware the replaying harnesses cost against: one
 * dgx-h100 node (8 GPUs), loaded once per process. Returns false when the
 * preset cannot be loaded (the harness then skips the replay).
 */
#ifndef TS_FUZZ_HW_H
#define TS_FUZZ_HW_H

#include "trainsim/hw.h"

static inline bool fz_dgx_h100(const HwModel **hw, const HwNet **net)
{
    static HwModel m;
    static HwNet n;
    static int ok = -1;
    if (ok < 0) {
        ClusterSpec cl;
        TsError e = {0};
        ok = hw_cluster_load("dgx-h100", 8, &cl, &e) == TS_OK;
        if (ok) {
            hw_net_init(&n, &cl);
            hw_model_init(&m);
            m.gpu = cl.gpu;
        }
    }
    *hw = &m;
    *net = &n;
    return ok == 1;
}

#endif
