/* fuzz_astrasim — ASTRA-sim 1.0 text workloads (DATA, MODEL,
 * HYBRID_TRANSFORMER, HYBRID_TRANSFORMER_FWD_IN_BCKWD), which share the
 * SimAI reader (wl_read_simai). What reads must validate, and the ASTRA-sim
 * writer's text must read back. */
#include "fuzz_wl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wl_destroy(fz_wl_roundtrip(data, size, wl_read_simai, wl_write_astrasim));
    return 0;
}
