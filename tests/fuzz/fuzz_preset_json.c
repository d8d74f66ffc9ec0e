/* fuzz_preset_json — a model preset file (data/models/*.json schema) read
 * with model_parse_preset_json, then finalized, validated and counted. */
#include "fuzz_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_tmpfile(data, size, ".json");
    ModelSpec m;
    memset(&m, 0, sizeof m);
    ModelKnown k;
    memset(&k, 0, sizeof k);
    TsError e = {0};
    fz_model_parsed(model_parse_preset_json(path, &m, &k, &e), &m, &e);
    return 0;
}
