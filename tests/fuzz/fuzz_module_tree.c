/* fuzz_module_tree — Megatron module-tree dumps ("Module:"/"Submodule:"
 * lines), parsed from memory with model_parse_module_tree; the same bytes
 * also go through model_load's content sniffing from a file. */
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
    fz_check_error(model_parse_module_tree("fuzz.txt", text, &m, &k, &e), &e);
    free(text);

    const char *path = fz_tmpfile(data, size, ".txt");
    ModelOverrides ov;
    model_overrides_init(&ov);
    ov.vocab = 50257; /* a tree does not carry the vocabulary */
    ov.heads = 12;
    ts_err_clear(&e);
    fz_check_error(model_load(path, &ov, &m, &e), &e);
    return 0;
}
