/* fuzz_gpu — GPU spec files (data/gpus/*.json schema, "format":
 * "trainsim-gpu"), read with hw_gpu_load from a temp file; a loaded spec
 * is written back as JSON. */
#include "fuzz_common.h"

#include "trainsim/hw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_tmpfile(data, size, ".json");
    GpuSpec g;
    TsError e = {0};
    TsStatus st = hw_gpu_load(path, &g, &e);
    fz_check_error(st, &e);
    if (st == TS_OK) {
        /* TODO(harden): drive hw_gemm_time_s / hw_memory_time_s once the
         * compute model is merged. */
        TsBuf b = {0};
        hw_gpu_to_json(&g, &b);
        ts_buf_free(&b);
    }
    return 0;
}
