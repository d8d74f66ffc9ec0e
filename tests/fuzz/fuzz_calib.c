/* fuzz_calib — calibration files ("trainsim-calibration" versions 1 to 3:
 * measured kernel times by op, shape, dtype; the SM clock; named memory
 * kernels), hw_calib_load_text from memory; a loaded table is interpolated by
 * the compute model on a few shapes and its named kernels looked up. */
#include "fuzz_common.h"

#include <math.h>

#include "trainsim/hw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_cstr(data, size);
    HwCalib *c = NULL;
    TsError e = {0};
    TsStatus st = hw_calib_load_text("fuzz.json", text, &c, &e);
    fz_check_error(st, &e);
    if (st == TS_OK) {
        (void)hw_calib_entries(c);
        (void)hw_calib_gpu(c);
        double mhz = hw_calib_clock_mhz(c);
        if (!(mhz >= 0) || isinf(mhz)) abort();
        double ref = hw_calib_reference(c, NULL, NULL), lo, hi;
        hw_calib_clock_range(c, &lo, &hi);
        if (!(ref >= 0) || isinf(ref) || hw_calib_sustained(c) != (ref > 0) || lo > hi) abort();
        static const char *const kernels[] = {"copy", "rmsnorm_fwd", "layernorm_bwd", "swiglu_bwd", "cast", "nope"};
        for (size_t i = 0; i < sizeof kernels / sizeof *kernels; i++)
            for (double b = 1.0; b < 1e12; b *= 97.0) {
                double t = hw_calib_memory_kernel_s(c, kernels[i], b);
                if (!(t >= 0) || isinf(t)) abort();
            }
        HwModel m;
        hw_model_init(&m);
        ts_err_clear(&e);
        if (hw_gpu_load("h100-sxm5-80gb", &m.gpu, &e) == TS_OK) {
            m.calib = c;
            double t = hw_gemm_time_s(&m, 1, 4096, 4096, 4096, TS_DTYPE_BF16) +
                       hw_gemm_time_s(&m, 1, 1, 7, 100000, TS_DTYPE_FP32) +
                       hw_attention_time_s(&m, 2, 16, 2048, 2048, 128, true, false, TS_DTYPE_BF16) +
                       hw_memory_time_s(&m, 123456.0);
            if (!(t >= 0) || isinf(t)) abort();
        }
    }
    hw_calib_free(c);
    free(text);
    return 0;
}
