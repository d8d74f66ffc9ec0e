/* fuzz_simai — SimAI/AICB workload text (all header generations, MICRO):
 * wl_read_simai from memory. A workload that reads must validate, and what
 * the SimAI writer makes of it must read back (round trip) with the same
 * number of rows' tasks; rank 0's Chakra trace must encode and decode. */
#include "fuzz_wl.h"

#include "trainsim/workload_chakra.h"

static void write_simai(const Workload *w, TsBuf *out)
{
    WlSimaiOptions o = {0};
    wl_write_simai(w, &o, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Workload *w = fz_wl_roundtrip(data, size, wl_read_simai, write_simai);
    if (!w) return 0;
    TsError e = {0};
    /* and through the Chakra encoder and decoder (rank 0); group member
     * lists are O(world), so only for worlds a fuzzing run can afford */
    TsBuf et = {0};
    ts_err_clear(&e);
    if (w->par.world <= 4096 && wl_chakra_encode_rank(w, NULL, 0, &et, &e) == TS_OK && !et.oom) {
        WlChakraTrace t;
        memset(&t, 0, sizeof t);
        ts_err_clear(&e);
        if (wl_chakra_decode("roundtrip.et", (const uint8_t *)et.data, et.len, &t, &e) != TS_OK) abort();
        wl_chakra_trace_free(&t);
    }
    ts_buf_free(&et);
    wl_destroy(w);
    return 0;
}
