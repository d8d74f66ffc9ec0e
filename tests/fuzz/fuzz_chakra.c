/* fuzz_chakra — Chakra execution traces (varint-delimited protobuf):
 * wl_chakra_decode from memory, plus the file sniffing of wl_read_file on
 * the same bytes (Chakra, JSON workload, op table or SimAI text). */
#include "fuzz_common.h"

#include "trainsim/workload.h"

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
    return 0;
}
