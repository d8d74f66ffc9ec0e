/* fuzz_busbw — measured bus-bandwidth tables (SimAI busbw.yaml or JSON
 * "trainsim-busbw"), hw_busbw_load_text from memory; lookups on a loaded
 * table must be finite and non-negative. */
#include "fuzz_common.h"

#include <math.h>

#include "trainsim/hw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_cstr(data, size);
    HwBusbw *b = NULL;
    TsError e = {0};
    TsStatus st = hw_busbw_load_text("fuzz.yaml", text, &b, &e);
    fz_check_error(st, &e);
    if (st == TS_OK) {
        (void)hw_busbw_entries(b);
        for (int k = 0; k < HW_GROUP_COUNT; k++)
            for (int c = 0; c < TS_COLL_COUNT; c++) {
                double v = hw_busbw_lookup(b, (HwGroupKind)k, (TsColl)c, 1e6) +
                           hw_busbw_lookup(b, (HwGroupKind)k, (TsColl)c, 0) +
                           hw_busbw_lookup(b, (HwGroupKind)k, (TsColl)c, 1e15);
                if (!(v >= 0) || isinf(v)) abort();
            }
    }
    hw_busbw_free(b);
    free(text);
    return 0;
}
