/* fuzz_gpu — GPU spec files (data/gpus/*.json schema, "format":
 * "trainsim-gpu"), read with hw_gpu_load from a temp file; a loaded spec
 * drives the compute-time model on a few shapes (times must be finite and
 * non-negative) and is written back as JSON. */
#include <math.h>

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
        HwModel m;
        hw_model_init(&m);
        m.gpu = g;
        double t = hw_gemm_time_s(&m, 1, 4096, 4096, 4096, TS_DTYPE_BF16) +
                   hw_gemm_time_s(&m, 8, 1, 1, 1, TS_DTYPE_FP8) +
                   hw_attention_time_s(&m, 1, 32, 4096, 4096, 128, true, true, TS_DTYPE_BF16) +
                   hw_memory_time_s(&m, 1e9) + hw_memory_time_s(&m, 0);
        if (!(t >= 0) || isinf(t)) abort(); /* finite, non-negative times */
        TsBuf b = {0};
        hw_gpu_to_json(&g, &b);
        ts_buf_free(&b);
    }
    return 0;
}
