/* fuzz_workload_json — our own workload JSON ("trainsim-workload"), read
 * through wl_read_file's sniffing from a temp file; what reads validates
 * and its JSON re-reads. */
#include "fuzz_common.h"

#include "trainsim/workload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_tmpfile(data, size, ".json");
    Workload *w = NULL;
    TsError e = {0};
    TsStatus st = wl_read_file(path, &w, &e);
    fz_check_error(st, &e);
    if (st != TS_OK) return 0;
    ts_err_clear(&e);
    if (wl_validate(w, &e) != TS_OK) abort();
    TsBuf b = {0};
    wl_write_json(w, &b);
    if (!b.oom) {
        const char *p2 = fz_tmpfile_slot(1, (const uint8_t *)(b.data ? b.data : ""), b.len, ".json");
        Workload *w2 = NULL;
        ts_err_clear(&e);
        if (wl_read_file(p2, &w2, &e) != TS_OK) abort();
        wl_destroy(w2);
    }
    ts_buf_free(&b);
    wl_destroy(w);
    return 0;
}
