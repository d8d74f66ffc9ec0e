/* fuzz_astrasim — ASTRA-sim 1.0 text workloads (DATA, MODEL,
 * HYBRID_TRANSFORMER, HYBRID_TRANSFORMER_FWD_IN_BCKWD), which share the
 * SimAI reader (wl_read_simai). What reads must validate, and the ASTRA-sim
 * writer's text must read back. */
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
    if (st != TS_OK) return 0;
    ts_err_clear(&e);
    if (wl_validate(w, &e) != TS_OK) abort();
    TsBuf b = {0};
    wl_write_astrasim(w, &b);
    if (!b.oom) {
        Workload *w2 = NULL;
        ts_err_clear(&e);
        if (wl_read_simai("roundtrip.txt", b.data ? b.data : "", b.len, &w2, &e) != TS_OK) abort();
        wl_destroy(w2);
    }
    ts_buf_free(&b);
    wl_destroy(w);
    return 0;
}
