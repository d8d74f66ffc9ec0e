/* fuzz_chakra — Chakra execution traces (varint-delimited protobuf):
 * wl_chakra_decode from memory, the file sniffing of wl_read_file on the
 * same bytes (Chakra, JSON workload, op table or SimAI text), and the
 * bytes as a one-rank trace set read into the IR (wl_read_chakra) and
 * replayed by sim_replay_dag. */
#include "fuzz_common.h"
#include "fuzz_hw.h"

#include "trainsim/sim.h"
#include "trainsim/sim_replay.h"
#include "trainsim/workload.h"
#include "trainsim/workload_chakra.h"
#include "trainsim/workload_io.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    WlChakraTrace t;
    memset(&t, 0, sizeof t);
    TsError e = {0};
    TsStatus st = wl_chakra_decode("fuzz.0.et", data, size, &t, &e);
    fz_check_error(st, &e);
    if (st == TS_OK) {
        for (int64_t i = 0; i < t.n_nodes; i++) {
            const WlChakraNode *n = &t.nodes[i];
            if (n->n_data < 0 || n->n_ctrl < 0) abort();
            if ((n->n_data && !n->data_deps) || (n->n_ctrl && !n->ctrl_deps)) abort();
        }
    }
    wl_chakra_trace_free(&t);

    const char *path = fz_tmpfile(data, size, ".0.et");
    Workload *w = NULL;
    ts_err_clear(&e);
    st = wl_read_file(path, &w, &e);
    fz_check_error(st, &e);
    wl_destroy(w);

    const HwModel *hw;
    const HwNet *net;
    if (fz_dgx_h100(&hw, &net)) { /* path is <prefix>.0.et */
        char prefix[512];
        size_t n = strlen(path);
        if (n > 5 && n - 5 < sizeof prefix) {
            memcpy(prefix, path, n - 5);
            prefix[n - 5] = '\0';
            Workload *cw = NULL;
            ts_err_clear(&e);
            st = wl_read_chakra(prefix, &cw, &e);
            fz_check_error(st, &e);
            if (st == TS_OK) {
                SimResult r = {0};
                ts_err_clear(&e);
                st = sim_replay_dag(cw, net, (size & 1) ? 0.1 : 0, (size & 2) != 0, &r, &e);
                fz_check_error(st, &e);
                if (st == TS_OK && !(r.iteration_time_s >= 0)) abort();
                sim_result_free(&r);
            }
            wl_destroy(cw);
        }
    }
    return 0;
}
