/* fuzz_simai — SimAI/AICB workload text (all header generations, MICRO):
 * wl_read_simai from memory. A workload that reads must validate, and what
 * the SimAI writer makes of it must read back (round trip) with the same
 * number of rows' tasks; rank 0's Chakra trace must encode and decode. */
#include "fuzz_common.h"

#include "trainsim/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Workload *w = NULL;
    TsError e = {0};
    char *text = fz_cstr(data, size); /* the readers need text[len] == '\0' */
    TsStatus st = wl_read_simai("fuzz.txt", text, size, &w, &e);
    free(text);
    fz_check_error(st, &e);
    if (st != TS_OK) {
        if (w) abort(); /* *out stays NULL on failure */
        return 0;
    }
    ts_err_clear(&e);
    if (wl_validate(w, &e) != TS_OK) abort();
    TsBuf b = {0};
    WlSimaiOptions o = {0};
    wl_write_simai(w, &o, &b);
    if (!b.oom) {
        Workload *w2 = NULL;
        ts_err_clear(&e);
        if (wl_read_simai("roundtrip.txt", b.data ? b.data : "", b.len, &w2, &e) != TS_OK) abort();
        wl_destroy(w2);
    }
    ts_buf_free(&b);
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
