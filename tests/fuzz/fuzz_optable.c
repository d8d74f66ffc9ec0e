/* fuzz_optable — per-operator tables (NeuSight-style TSV): wl_read_optable
 * from memory; what reads validates and survives a write/read round trip. */
#include "fuzz_wl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wl_destroy(fz_wl_roundtrip(data, size, wl_read_optable, wl_write_optable));
    return 0;
}
