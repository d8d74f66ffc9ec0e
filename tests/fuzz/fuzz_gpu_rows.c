/* fuzz_gpu_rows — a measurements file of bench/gpu_accuracy (JSON lines as
 * docs/measure.md describes; every part: A, B, C, D-*, E, F, F-eager). The
 * program's own file reader, run_file, is included below with main renamed
 * and given the bytes as a file; each row it reads is scored as a user's
 * file would be (the GPU presets from TRAINSIM_DATA).
 *
 * Sizes: an input whose JSON names more than 256 layers or 1024 experts
 * (any key with "layer" or "expert" in it, at any depth, as an A row's
 * HF config has them) is skipped: legitimate, but its model graph takes
 * seconds under ASan; those bounds are model_finalize's, tested there. */
#include "fuzz_common.h"

#define main gpu_accuracy_main
#include "gpu_accuracy.c"
#undef main

static bool too_deep(const json_t *v)
{
    const char *key;
    const json_t *x;
    size_t i;
    if (json_is_object(v)) {
        json_object_foreach((json_t *)v, key, x) {
            double d = json_is_number(x) ? json_number_value(x) : 0;
            if ((strstr(key, "layer") && d > 256) || (strstr(key, "expert") && d > 1024) || too_deep(x)) return true;
        }
    } else if (json_is_array(v)) {
        json_array_foreach(v, i, x) if (too_deep(x)) return true;
    }
    return false;
}

/* Any line of the input too_deep. */
static bool big_model(const char *text)
{
    bool big = false;
    for (const char *p = text; *p && !big;) {
        size_t len = strcspn(p, "\n");
        json_t *v = json_loadb(p, len, 0, NULL);
        big = v && too_deep(v);
        json_decref(v);
        p += len + (p[len] != 0);
    }
    return big;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 16384) return 0;
    char *text = fz_cstr(data, size);
    bool big = big_model(text);
    free(text);
    if (big) return 0;
    const char *path = fz_tmpfile(data, size, ".jsonl");
    (void)run_file(path);
    return 0;
}
