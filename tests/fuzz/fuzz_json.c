/* fuzz_json — the common JSON loader (ts_json_load: file read, NUL check,
 * depth limit, jansson, NaN/Inf rejection) and the typed getters with their
 * position lookup (ts_json_locate), which every JSON input format uses. */
#include "fuzz_common.h"
#include "../../src/common/common_int.h"

#include <jansson.h>

static void probe(const TsJsonDoc *d, json_t *obj, const char *key, const char *path)
{
    TsError e = {0};
    int64_t i = 0;
    double x = 0;
    bool b = false;
    char s[64];
    fz_check_error(ts_json_int(d, obj, key, path, true, 1, 1 << 20, &i, &e), &e);
    ts_err_clear(&e);
    fz_check_error(ts_json_num(d, obj, key, path, false, 0, 1e9, &x, &e), &e);
    ts_err_clear(&e);
    fz_check_error(ts_json_bool(d, obj, key, path, false, &b, &e), &e);
    ts_err_clear(&e);
    fz_check_error(ts_json_str(d, obj, key, path, false, s, sizeof s, &e), &e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fz_tmpfile(data, size, ".json");
    TsJsonDoc d;
    TsError e = {0};
    TsStatus st = ts_json_load(&d, path, &e);
    fz_check_error(st, &e);
    if (st == TS_OK) {
        /* Probe the first keys of the top object and of one nested object,
         * so typed errors are located in arbitrary texts. */
        const char *key;
        json_t *v;
        int n = 0;
        json_object_foreach(d.root, key, v)
        {
            if (n++ >= 8) break;
            probe(&d, d.root, key, key);
            if (json_is_object(v)) {
                const char *k2;
                json_t *v2;
                int m = 0;
                json_object_foreach(v, k2, v2)
                {
                    (void)v2;
                    if (m++ >= 4) break;
                    char p[256];
                    snprintf(p, sizeof p, "%s.%s", key, k2);
                    probe(&d, v, k2, p);
                }
            }
        }
        probe(&d, d.root, "missing", "missing.deeper");
        int l, c;
        ts_json_locate(&d, "a.b.c", &l, &c);
    }
    ts_json_free(&d);

    /* The in-memory variant sees the same text up to the first NUL. */
    char *text = fz_cstr(data, size);
    st = ts_json_load_text(&d, "fuzz.json", text, &e);
    fz_check_error(st, &e);
    ts_json_free(&d);
    free(text);
    return 0;
}
