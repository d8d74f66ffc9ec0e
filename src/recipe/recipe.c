/* Recipe files (data/recipes/<name>.json, format "trainsim-recipe" v1): the
 * reader and the recipe directory (recipe.h; the schema in docs/recipes.md). */
#include "trainsim/recipe.h"
#include "../common/common_int.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define RECIPE_DIR "recipes"

TS_ENUM_NAMES(recipe_value, RecipeValue, RECIPE_VALUE_LIST, RECIPE_VALUE_COUNT)

/* The fields of a recipe and of one knob, for "unknown field" hints. */
static const char *const TOP_FIELDS[] = {"format", "version", "description", "knobs", "notes", NULL};
static const char *const KNOB_FIELDS[] = {"value", "source", NULL};

typedef struct Reader {
    const TsJsonDoc *doc;
    Recipe *r;
    TsError *err;
} Reader;

/* An error at the JSON path `path` of the file (the hint may be NULL). */
static TsStatus fail_at(const Reader *rd, const char *path, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static TsStatus fail_at(const Reader *rd, const char *path, const char *hint, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    TsStatus st = ts_json_verr(rd->doc, path, hint, rd->err, fmt, ap);
    va_end(ap);
    return st;
}

static TsStatus oom(const Reader *rd) { return ts_err(rd->err, TS_ERR_INTERNAL, "out of memory reading a recipe"); }

/* Every key of obj is one of fields[]; else the error at it, with the nearest field. */
static TsStatus check_fields(const Reader *rd, json_t *obj, const char *prefix, const char *const *fields,
                             const char *what)
{
    const char *key;
    json_t *v;
    json_object_foreach(obj, key, v)
    {
        (void)v;
        const char *best = NULL;
        int bd = 4;
        for (int i = 0; fields[i]; i++) {
            int d = ts_edit_distance(key, fields[i]);
            if (d == 0) bd = -1;
            if (d < bd) bd = d, best = fields[i];
        }
        if (bd < 0) continue;
        char path[600], hint[300] = "", list[160] = "";
        snprintf(path, sizeof path, "%s%s", prefix, key);
        for (int i = 0; fields[i]; i++)
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", fields[i]);
        if (best) snprintf(hint, sizeof hint, "did you mean '%s'? %s has the fields %s", best, what, list);
        else snprintf(hint, sizeof hint, "%s has the fields %s (docs/recipes.md)", what, list);
        return fail_at(rd, path, hint, "unknown field '%.100s' in %s", key, what);
    }
    return TS_OK;
}

/* A required, non-empty, one-line string field into the arena. */
static TsStatus line_field(const Reader *rd, json_t *obj, const char *key, const char *path, const char *example,
                           const char **out)
{
    json_t *v = json_object_get(obj, key);
    char hint[200];
    snprintf(hint, sizeof hint, "write it as \"%s\": %s", key, example);
    if (!v) return fail_at(rd, path, hint, "missing field '%s'", path); /* at the enclosing object */
    const char *s = json_string_value(v);
    if (!s || !s[0] || strchr(s, '\n'))
        return fail_at(rd, path, hint, "'%s' must be a non-empty one-line string", path);
    if (!(*out = ts_arena_strdup(rd->r->arena, s))) return oom(rd);
    return TS_OK;
}

static TsStatus header(const Reader *rd)
{
    json_t *root = rd->doc->root;
    char fmt[64] = "";
    static const char hint[] = "a recipe starts with \"format\": \"" RECIPE_FORMAT_NAME "\", \"version\": 1";
    if (ts_json_str(rd->doc, root, "format", "format", true, fmt, sizeof fmt, rd->err)) {
        ts_err_hint(rd->err, "%s", hint);
        return TS_ERR_INPUT;
    }
    if (strcmp(fmt, RECIPE_FORMAT_NAME) != 0)
        return fail_at(rd, "format", hint, "unknown format '%s'", fmt);
    int64_t ver = 0;
    if (ts_json_int(rd->doc, root, "version", "version", true, 0, 1000000, &ver, rd->err)) return TS_ERR_INPUT;
    if (ver != RECIPE_FORMAT_VERSION)
        return fail_at(rd, "version", "this trainsim reads recipe version 1", "unsupported %s version %lld",
                       RECIPE_FORMAT_NAME, (long long)ver);
    return check_fields(rd, root, "", TOP_FIELDS, "a recipe");
}

/* Option names are lower-case words joined by '-': "pp", "global-batch". */
static bool option_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63 || s[0] == '-' || s[n - 1] == '-') return false;
    return strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-") == n;
}

/* The value as a command line writes it. */
static TsStatus value_text(const Reader *rd, json_t *v, RecipeKnob *k)
{
    TsBuf b = {0};
    switch (json_typeof(v)) {
    case JSON_STRING: k->type = RECIPE_STRING; ts_buf_puts(&b, json_string_value(v)); break;
    case JSON_INTEGER: k->type = RECIPE_INTEGER; ts_buf_printf(&b, "%lld", (long long)json_integer_value(v)); break;
    case JSON_REAL: k->type = RECIPE_NUMBER; ts_json_fmt_double(&b, json_real_value(v)); break;
    default: k->type = RECIPE_BOOLEAN; ts_buf_puts(&b, json_is_true(v) ? "true" : "false"); break;
    }
    k->text = b.oom ? NULL : ts_arena_strdup(rd->r->arena, b.data ? b.data : "");
    ts_buf_free(&b);
    return k->text ? TS_OK : oom(rd);
}

static TsStatus knob(const Reader *rd, const char *option, json_t *obj, RecipeKnob *k)
{
    char path[400], vpath[420];
    snprintf(path, sizeof path, "knobs.%s", option);
    snprintf(vpath, sizeof vpath, "%s.value", path);
    if (!option_name_ok(option))
        return fail_at(rd, path, "knobs are keyed by a command-line option without its dashes, e.g. \"global-batch\"",
                       "'%.100s' is not an option name", option);
    if (!strcmp(option, "recipe"))
        return fail_at(rd, path, "give the other recipe's knobs here, each with its source",
                       "a recipe cannot include another recipe");
    static const char shape[] = "a knob is {\"value\": 16, \"source\": \"where the value comes from\"}";
    if (!json_is_object(obj)) return fail_at(rd, path, shape, "knob '%s' must be an object", option);
    char prefix[410];
    snprintf(prefix, sizeof prefix, "%s.", path);
    TsStatus st = check_fields(rd, obj, prefix, KNOB_FIELDS, "a knob");
    if (st) return st;
    json_t *v = json_object_get(obj, "value");
    if (!v) return fail_at(rd, path, shape, "knob '%s' has no value", option);
    if (json_is_null(v) || json_is_object(v) || json_is_array(v) || (json_is_string(v) && !json_string_value(v)[0]))
        return fail_at(rd, vpath, "a value is a string, a number or true/false: what the option takes on the command line",
                       "knob '%s': the value must be a non-empty string, a number or a boolean", option);
    char spath[420];
    snprintf(spath, sizeof spath, "%s.source", path);
    k->option = ts_arena_strdup(rd->r->arena, option);
    if (!k->option) return oom(rd);
    if ((st = line_field(rd, obj, "source", spath, "\"arXiv 2412.19437 §3.2\" (where the value comes from)",
                         &k->source)))
        return st;
    ts_json_locate(rd->doc, path, &k->key_line, &k->key_col);
    ts_json_locate(rd->doc, vpath, &k->line, &k->col);
    return value_text(rd, v, k);
}

static TsStatus knobs(const Reader *rd)
{
    json_t *obj = json_object_get(rd->doc->root, "knobs");
    static const char hint[] = "\"knobs\": {\"pp\": {\"value\": 16, \"source\": \"...\"}, ...}: one per option";
    if (!obj) return fail_at(rd, "", hint, "missing field 'knobs'");
    if (!json_is_object(obj) || json_object_size(obj) == 0)
        return fail_at(rd, "knobs", hint, "'knobs' must be an object with at least one knob");
    size_t n = json_object_size(obj);
    RecipeKnob *k = ts_arena_alloc(rd->r->arena, n * sizeof *k);
    if (!k) return oom(rd);
    const char *key;
    json_t *v;
    int i = 0;
    json_object_foreach(obj, key, v)
    {
        TsStatus st = knob(rd, key, v, &k[i]);
        if (st) return st;
        i++;
    }
    rd->r->knobs = k;
    rd->r->n_knobs = i;
    return TS_OK;
}

static TsStatus notes(const Reader *rd)
{
    json_t *arr = json_object_get(rd->doc->root, "notes");
    if (!arr) return TS_OK;
    static const char hint[] = "\"notes\": [\"DualPipe schedule (§3.2.1)\", ...]: one line each";
    if (!json_is_array(arr)) return fail_at(rd, "notes", hint, "'notes' must be an array of strings");
    size_t n = json_array_size(arr);
    const char **out = ts_arena_alloc(rd->r->arena, (n ? n : 1) * sizeof *out);
    if (!out) return oom(rd);
    for (size_t i = 0; i < n; i++) {
        char path[40];
        snprintf(path, sizeof path, "notes[%zu]", i);
        const char *s = json_string_value(json_array_get(arr, i));
        if (!s || !s[0] || strchr(s, '\n')) return fail_at(rd, path, hint, "a note must be a non-empty one-line string");
        if (!(out[i] = ts_arena_strdup(rd->r->arena, s))) return oom(rd);
    }
    rd->r->notes = out;
    rd->r->n_notes = (int)n;
    return TS_OK;
}

static void base_name(const char *path, char *out, size_t cap)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n > 5 && ts_ends_with(b, ".json")) n -= 5;
    if (n >= cap) n = cap - 1;
    memcpy(out, b, n);
    out[n] = '\0';
}

static TsStatus parse(const char *path, Recipe *r, TsError *err)
{
    TsJsonDoc doc;
    TsStatus st = ts_json_load(&doc, path, err);
    if (st) return st;
    Reader rd = {&doc, r, err};
    const char *text = ts_arena_strdup(r->arena, doc.text);
    if (!text) st = oom(&rd);
    if (!st) st = header(&rd);
    if (!st) st = line_field(&rd, doc.root, "description", "description", "\"DeepSeek-V3 pre-training, 2048 H800\"",
                             &r->description);
    if (!st) st = knobs(&rd);
    if (!st) st = notes(&rd);
    r->text = text;
    ts_json_free(&doc);
    return st;
}

/* An unknown recipe name: the error, with the nearest names. */
static TsStatus unknown(const char *name, TsError *err)
{
    ts_err(err, TS_ERR_INPUT, "unknown recipe '%.200s'", name);
    char sim[5][64];
    int k = recipe_similar(name, sim, 5);
    if (k == 0) {
        ts_err_hint(err, "'trainsim recipes' lists the recipes; a path must name an existing .json file");
        return TS_ERR_INPUT;
    }
    char list[400] = "";
    for (int i = 0; i < k; i++)
        snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", i ? ", " : "", sim[i]);
    ts_err_hint(err, "did you mean %s? ('trainsim recipes' lists them)", list);
    return TS_ERR_INPUT;
}

TsStatus recipe_load(const char *name_or_path, Recipe **out, TsError *err)
{
    *out = NULL;
    char path[1100];
    bool is_path = strchr(name_or_path, '/') || ts_ends_with(name_or_path, ".json");
    if (is_path) snprintf(path, sizeof path, "%s", name_or_path);
    else if (!ts_data_path(RECIPE_DIR, name_or_path, path, sizeof path)) return unknown(name_or_path, err);
    TsArena *a = ts_arena_create(1 << 14);
    Recipe *r = a ? ts_arena_alloc(a, sizeof *r) : NULL;
    if (!r) {
        ts_arena_destroy(a);
        return ts_err(err, TS_ERR_INTERNAL, "out of memory reading a recipe");
    }
    r->arena = a;
    snprintf(r->path, sizeof r->path, "%s", path);
    base_name(path, r->name, sizeof r->name);
    TsStatus st = parse(path, r, err);
    if (st) {
        recipe_free(r);
        return st;
    }
    *out = r;
    return TS_OK;
}

void recipe_free(Recipe *r)
{
    if (r) ts_arena_destroy(r->arena);
}

const RecipeKnob *recipe_knob(const Recipe *r, const char *option)
{
    for (int i = 0; i < r->n_knobs; i++)
        if (!strcmp(r->knobs[i].option, option)) return &r->knobs[i];
    return NULL;
}

int recipe_names(char names[][64], int cap) { return ts_data_names(RECIPE_DIR, names, cap); }

int recipe_similar(const char *name, char out[][64], int cap) { return ts_data_similar(RECIPE_DIR, name, out, cap); }
