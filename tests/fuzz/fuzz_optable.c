/* fuzz_optable — per-operator tables (NeuSight-style TSV): wl_read_optable
 * from memory; what reads validates and survives a write/read round trip. */
#include "fuzz_common.h"

#include "trainsim/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Workload *w = NULL;
    TsError e = {0};
    char *text = fz_cstr(data, size); /* the readers need text[len] == '\0' */
    TsStatus st = wl_read_optable("fuzz.tsv", text, size, &w, &e);
    free(text);
    fz_check_error(st, &e);
    if (st != TS_OK) return 0;
    ts_err_clear(&e);
    if (wl_validate(w, &e) != TS_OK) abort();
    TsBuf b = {0};
    wl_write_optable(w, &b);
    if (!b.oom) {
        Workload *w2 = NULL;
        ts_err_clear(&e);
        if (wl_read_optable("roundtrip.tsv", b.data ? b.data : "", b.len, &w2, &e) != TS_OK) abort();
        wl_destroy(w2);
    }
    ts_buf_free(&b);
    wl_destroy(w);
    return 0;
}
