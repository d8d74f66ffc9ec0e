/* fuzz_hf_config — HuggingFace config.json (model_parse_hf_config takes a
 * path: the bytes go to a temp file). A parsed spec is then finalized,
 * validated and counted, as model_load does. */
#include "fuzz_model.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_tmpfile(data, size, ".json");
    ModelSpec m;
    memset(&m, 0, sizeof m);
    ModelKnown k;
    memset(&k, 0, sizeof k);
    TsError e = {0};
    fz_model_parsed(model_parse_hf_config(path, &m, &k, &e), &m, &e);
    /* The same bytes through the front door (source sniffing, overrides). */
    ModelOverrides ov;
    model_overrides_init(&ov);
    ts_err_clear(&e);
    fz_check_error(model_load(path, &ov, &m, &e), &e);
    return 0;
}
