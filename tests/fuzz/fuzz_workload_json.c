/* fuzz_workload_json — wl_read_json, the reader of our "trainsim-workload"
 * JSON, on the fuzzer's bytes (a NUL-terminated copy, as ts_read_file gives
 * it). Errors must be proper values; what reads validates, and its JSON
 * rendering reads back to a workload that renders to the same bytes
 * (json -> read -> json is byte-identical once written by us). Format sniffing of .json paths (wl_read_file) is kept on one
 * input in 16 so the dispatch stays covered without doubling the cost. */
#include "fuzz_common.h"
#include "fuzz_hw.h"

#include <math.h>

#include "trainsim/sim.h"
#include "trainsim/sim_replay.h"
#include "trainsim/workload.h"
#include "trainsim/workload_io.h"

static void render(const Workload *w, TsBuf *b)
{
    wl_write_json(w, b);
    if (b->oom) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_cstr(data, size);
    Workload *w = NULL;
    TsError e = {0};
    TsStatus st = wl_read_json("fuzz.json", text, size, &w, &e);
    fz_check_error(st, &e);
    if ((size & 15) == 0) {
        const char *path = fz_tmpfile(data, size, ".json");
        Workload *w3 = NULL;
        TsError e3 = {0};
        fz_check_error(wl_read_file(path, &w3, &e3), &e3);
        wl_destroy(w3);
    }
    free(text);
    if (st != TS_OK) return 0;
    ts_err_clear(&e);
    if (wl_validate(w, &e) != TS_OK) abort();
    TsBuf b1 = {0}, b2 = {0};
    render(w, &b1);
    Workload *w2 = NULL;
    if (wl_read_json("fuzz2.json", b1.data, b1.len, &w2, &e) != TS_OK) abort(); /* our output reads */
    render(w2, &b2);
    if (b1.len != b2.len || memcmp(b1.data, b2.data, b1.len) != 0) abort(); /* byte-identical round trip */
    /* a workload that reads replays to a result or an input error (a
     * deadlock), never a crash, and its breakdown adds up */
    const HwModel *hw;
    const HwNet *net;
    if (fz_dgx_h100(&hw, &net) && w->n_rows == 0) {
        SimResult r;
        TsError re = {0};
        TsStatus rs = sim_replay_dag(w, net, 0.10, (size & 7) == 0, &r, &re);
        fz_check_error(rs, &re);
        if (rs == TS_OK) {
            double s = 0;
            for (int i = 0; i < SIM_BD_COUNT; i++) s += sim_breakdown_get(&r.breakdown, i);
            if (!(fabs(s - r.iteration_time_s) <= 1e-9 * (r.iteration_time_s + 1e-300))) abort();
            sim_result_free(&r);
        }
    }
    ts_buf_free(&b1);
    ts_buf_free(&b2);
    wl_destroy(w);
    wl_destroy(w2);
    return 0;
}
