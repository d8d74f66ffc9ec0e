/* Preset resolution, key checking and positioned errors for hw's JSON files. */
#include "hw_internal.h"

#include <stdlib.h>
#include <string.h>

int hw_list_names(const char *sub, char names[][64], int cap) { return ts_data_names(sub, names, cap); }

TsStatus hw_resolve(const char *sub, const char *what, const char *name_or_path, char *path,
                    size_t cap, TsError *err)
{
    if (!name_or_path || !name_or_path[0])
        return ts_err(err, TS_ERR_USAGE, "no %s given", what);
    if (ts_data_path(sub, name_or_path, path, cap)) return TS_OK;
    if (ts_is_file(name_or_path) || strchr(name_or_path, '/') || ts_ends_with(name_or_path, ".json")) {
        snprintf(path, cap, "%s", name_or_path);
        return TS_OK; /* a missing file is reported by the reader */
    }
    char names[64][64];
    int n = hw_list_names(sub, names, 64);
    char list[1024] = "";
    for (int i = 0; i < n && i < 64; i++) {
        if (strlen(list) + strlen(names[i]) + 3 >= sizeof list) break;
        if (i) strcat(list, ", ");
        strcat(list, names[i]);
    }
    ts_err(err, TS_ERR_INPUT, "unknown %s '%s'", what, name_or_path);
    ts_err_hint(err, "presets: %s; or give a path to a JSON file", list);
    return TS_ERR_INPUT;
}

TsStatus hw_err_path(const TsJsonDoc *doc, const char *path, TsError *err, const char *msg,
                     const char *hint)
{
    int l = 1, c = 1;
    hw_locate(doc, path, &l, &c);
    ts_err(err, TS_ERR_INPUT, "%s", msg);
    ts_err_at(err, doc->file, l, c, doc->text);
    if (hint) ts_err_hint(err, "%s", hint);
    return TS_ERR_INPUT;
}

TsStatus hw_check_keys(const TsJsonDoc *doc, json_t *obj, const char *prefix,
                       const char *const *allowed, TsError *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v) {
        bool ok = false;
        const char *best = NULL;
        int bd = 99;
        for (int i = 0; allowed[i]; i++) {
            if (strcmp(allowed[i], key) == 0) {
                ok = true;
                break;
            }
            int d = ts_edit_distance(key, allowed[i]);
            size_t cp = 0;
            while (key[cp] && key[cp] == allowed[i][cp]) cp++;
            if (cp >= 5) d -= 2; /* a shared stem beats a short lookalike */
            if (d < bd) {
                bd = d;
                best = allowed[i];
            }
        }
        if (ok) continue;
        char path[256], msg[400], hint[400];
        snprintf(path, sizeof path, "%s%s%s", prefix, prefix[0] ? "." : "", key);
        snprintf(msg, sizeof msg, "unknown field '%s'", path);
        if (best && bd <= 3)
            snprintf(hint, sizeof hint, "did you mean '%s'? (docs/hardware.md lists the fields)", best);
        else
            snprintf(hint, sizeof hint, "docs/hardware.md lists the fields of this file");
        /* Point at the key itself: locate gives the value; back up to the key. */
        TsStatus st = hw_err_path(doc, path, err, msg, hint);
        if (err && err->col > 1) {
            int back = (int)strlen(key) + 4; /* "key": */
            err->col = err->col > back ? err->col - back : 1;
            const char *s = err->src_line;
            int c = err->col - 1;
            /* move onto the opening quote of the key if we landed nearby;
             * the stored source line is truncated (TS_ERR_LINE_MAX), so the
             * column may lie past its end: then leave the column alone */
            if ((size_t)c < strlen(s)) {
                while (c > 0 && s[c] != '"') c--;
                while (s[c] && s[c] != '"') c++;
                if (s[c] == '"') err->col = c + 1;
            }
        }
        return st;
    }
    return TS_OK;
}

TsStatus hw_check_format(const TsJsonDoc *doc, const char *fmt, TsError *err)
{
    int64_t v;
    return hw_check_format_version(doc, fmt, 1, &v, err);
}

TsStatus hw_check_format_version(const TsJsonDoc *doc, const char *fmt, int64_t max_version, int64_t *version,
                                 TsError *err)
{
    char f[64] = "";
    TsStatus st = ts_json_str(doc, doc->root, "format", "format", false, f, sizeof f, err);
    if (st) return st;
    if (f[0] && strcmp(f, fmt) != 0) {
        char msg[200], hint[200];
        snprintf(msg, sizeof msg, "this is a '%s' file, expected '%s'", f, fmt);
        /* the option that reads each of trainsim's hardware formats */
        static const char *const OPT[][2] = {{"trainsim-gpu", "--gpu"},
                                             {"trainsim-cluster", "--cluster"},
                                             {"trainsim-calibration", "--calibration"},
                                             {"trainsim-busbw", "--busbw"}};
        const char *opt = NULL;
        for (size_t i = 0; i < sizeof OPT / sizeof OPT[0]; i++)
            if (!strcmp(f, OPT[i][0])) opt = OPT[i][1];
        if (opt) snprintf(hint, sizeof hint, "pass it with %s", opt);
        else snprintf(hint, sizeof hint, "pass it to the option that reads '%s' files", f);
        return hw_err_path(doc, "format", err, msg, hint);
    }
    int64_t v = 1;
    st = ts_json_int(doc, doc->root, "version", "version", false, 0, 1000000, &v, err);
    if (st) return st;
    if (v < 1 || v > max_version) {
        char msg[200], hint[100];
        snprintf(msg, sizeof msg, "unsupported %s version %lld", fmt, (long long)v);
        if (max_version == 1) snprintf(hint, sizeof hint, "this trainsim reads version 1");
        else if (max_version == 2) snprintf(hint, sizeof hint, "this trainsim reads versions 1 and 2");
        else snprintf(hint, sizeof hint, "this trainsim reads versions 1 to %lld", (long long)max_version);
        return hw_err_path(doc, "version", err, msg, hint);
    }
    *version = v;
    return TS_OK;
}

/* GPU families by the tokens their names carry, lower case; a longer one
 * first where one holds another (gb200 before b200, l40s before l40). */
static const char *const GPU_FAMILIES[] = {"gb200", "b200", "b100", "h200", "h100", "h800", "h20", "gh200",
                                           "a100", "a800", "a10", "a30", "a40", "l40s", "l40", "l4",
                                           "mi355x", "mi325x", "mi300x", "mi300a", "mi250x", "v100", NULL};

static bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

const char *hw_gpu_family(const char *name)
{
    char low[160];
    size_t n = 0;
    for (; name && name[n] && n + 1 < sizeof low; n++)
        low[n] = (char)(name[n] >= 'A' && name[n] <= 'Z' ? name[n] - 'A' + 'a' : name[n]);
    low[n] = 0;
    for (int i = 0; GPU_FAMILIES[i]; i++) {
        size_t k = strlen(GPU_FAMILIES[i]);
        for (const char *p = strstr(low, GPU_FAMILIES[i]); p; p = strstr(p + 1, GPU_FAMILIES[i]))
            if ((p == low || !alnum(p[-1])) && !alnum(p[k])) return GPU_FAMILIES[i];
    }
    return NULL;
}

const char *hw_nearest_name(const char *s, const char *const *names, int max_distance)
{
    const char *best = NULL;
    int bd = max_distance + 1;
    for (int i = 0; names[i]; i++) {
        int d = ts_edit_distance(s, names[i]);
        if (d < bd) {
            bd = d;
            best = names[i];
        }
    }
    return best;
}

TsStatus hw_json_obj(const TsJsonDoc *doc, json_t *obj, const char *key, const char *path,
                     bool required, json_t **out, TsError *err)
{
    *out = NULL;
    json_t *v = obj ? json_object_get(obj, key) : NULL;
    if (!v) {
        if (!required) return TS_OK;
        char msg[300];
        snprintf(msg, sizeof msg, "missing required field '%s'", path);
        const char *dot = strrchr(path, '.');
        char parent[256] = "";
        if (dot) snprintf(parent, sizeof parent, "%.*s", (int)(dot - path), path);
        return hw_err_path(doc, parent, err, msg, NULL);
    }
    if (!json_is_object(v)) {
        char msg[300];
        snprintf(msg, sizeof msg, "'%s' must be an object", path);
        return hw_err_path(doc, path, err, msg, "write { \"key\": value, ... }");
    }
    *out = v;
    return TS_OK;
}

/* Positions of values at paths with array indices ("links[2].bw") come from
 * the common JSON locator. */
void hw_locate(const TsJsonDoc *doc, const char *path, int *line, int *col)
{
    ts_json_locate(doc, path, line, col);
}

void hw_fix_pos(const TsJsonDoc *doc, const char *path, TsError *err)
{
    if (!err) return;
    int l, c;
    hw_locate(doc, path, &l, &c);
    ts_err_at(err, doc->file, l, c, doc->text);
}
