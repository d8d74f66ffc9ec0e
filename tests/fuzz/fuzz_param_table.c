/* fuzz_param_table — parameter tables (name;module;shape;partitioning_ranks;precs
 * and the 4-column variant), parsed from memory with model_parse_param_table;
 * the same bytes also go through model_load from a file. */
#include "fuzz_common.h"

#include "trainsim/model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fz_cstr(data, size);
    ModelSpec m;
    memset(&m, 0, sizeof m);
    ModelKnown k;
    memset(&k, 0, sizeof k);
    TsError e = {0};
    int64_t tp = 0;
    fz_check_error(model_parse_param_table("fuzz.csv", text, &m, &k, &tp, &e), &e);
    free(text);

    const char *path = fz_tmpfile(data, size, ".csv");
    ModelOverrides ov;
    model_overrides_init(&ov);
    ov.layers = 24;
    ov.heads = 16;
    ts_err_clear(&e);
    fz_check_error(model_load(path, &ov, &m, &e), &e);
    return 0;
}
