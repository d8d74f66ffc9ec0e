/* fuzz_preset_json — a model preset file (data/models/*.json schema) read
 * with model_parse_preset_json, then finalized, validated and counted. */
#include "fuzz_common.h"

#include "trainsim/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_tmpfile(data, size, ".json");
    ModelSpec m;
    memset(&m, 0, sizeof m);
    ModelKnown k;
    memset(&k, 0, sizeof k);
    TsError e = {0};
    TsStatus st = model_parse_preset_json(path, &m, &k, &e);
    fz_check_error(st, &e);
    if (st == TS_OK) {
        model_finalize(&m);
        ts_err_clear(&e);
        st = model_validate(&m, &e);
        fz_check_error(st, &e);
        if (st == TS_OK) {
            ModelCounts c;
            model_count_params(&m, &c);
        }
    }
    return 0;
}
