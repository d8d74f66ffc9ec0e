/* fuzz_workload_json — wl_read_file's format sniffing on a .json path (our
 * "trainsim-workload" JSON is recognised and refused with a message; other
 * bytes fall through to the text readers); what reads validates, and its
 * JSON rendering goes through the sniffer again. */
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
        /* JSON workloads are written but not read back (wl_read_file says
         * so with an error): the re-read must fail cleanly or succeed. */
        fz_check_error(wl_read_file(p2, &w2, &e), &e);
        wl_destroy(w2);
    }
    ts_buf_free(&b);
    wl_destroy(w);
    return 0;
}
