/* JSON input on top of jansson, with positions for typed-field errors.
 *
 * jansson reports line/column for syntax errors only. To point at a value of
 * the wrong type we re-scan the (already validated) source text with a tiny
 * tokenizer that follows a dotted key path: no Debian JSON library keeps
 * per-value source positions, so this small scanner is written by hand. */
#include "common_int.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define JSON_MAX_BYTES (16u << 20)
#define JSON_MAX_DEPTH 64

static void pos_of(const char *text, size_t off, int *line, int *col)
{
    int l = 1, c = 1;
    for (size_t i = 0; i < off && text[i]; i++) {
        if (text[i] == '\n') {
            l++;
            c = 1;
        } else if (((unsigned char)text[i] & 0xC0) != 0x80) {
            c++;
        }
    }
    *line = l;
    *col = c;
}

/* Depth check before jansson sees the text (its own limit is 2048). */
static bool depth_ok(const char *t, size_t len, size_t *bad_off)
{
    int depth = 0;
    bool in_str = false;
    for (size_t i = 0; i < len; i++) {
        char ch = t[i];
        if (in_str) {
            if (ch == '\\') i++;
            else if (ch == '"') in_str = false;
            continue;
        }
        if (ch == '"') in_str = true;
        else if (ch == '{' || ch == '[') {
            if (++depth > JSON_MAX_DEPTH) {
                *bad_off = i;
                return false;
            }
        } else if (ch == '}' || ch == ']') depth--;
    }
    return true;
}

static TsStatus load_common(TsJsonDoc *doc, const char *name, TsError *err)
{
    size_t bad = 0;
    if (!depth_ok(doc->text, doc->len, &bad)) {
        int l, c;
        pos_of(doc->text, bad, &l, &c);
        ts_err(err, TS_ERR_INPUT, "JSON nested deeper than %d levels", JSON_MAX_DEPTH);
        ts_err_at(err, name, l, c, doc->text);
        ts_err_hint(err, "configuration files are shallow; is this the right file?");
        return TS_ERR_INPUT;
    }
    json_error_t je;
    doc->root = json_loadb(doc->text, doc->len, JSON_REJECT_DUPLICATES, &je);
    if (!doc->root) {
        ts_err(err, TS_ERR_INPUT, "invalid JSON: %s", je.text);
        ts_err_at(err, name, je.line > 0 ? je.line : 1, je.column > 0 ? je.column : 1, doc->text);
        if (strstr(je.text, "NaN") || strstr(je.text, "Infinity") || strstr(je.text, "invalid token"))
            ts_err_hint(err, "JSON allows only finite numbers, strings, true/false/null; NaN and Infinity are not JSON");
        else
            ts_err_hint(err, "check for a missing comma, quote or bracket near this position");
        return TS_ERR_INPUT;
    }
    if (!json_is_object(doc->root)) {
        ts_err(err, TS_ERR_INPUT, "expected a JSON object at the top level");
        ts_err_at(err, name, 1, 1, doc->text);
        json_decref(doc->root);
        doc->root = NULL;
        return TS_ERR_INPUT;
    }
    return TS_OK;
}

TsStatus ts_json_load(TsJsonDoc *doc, const char *path, TsError *err)
{
    memset(doc, 0, sizeof *doc);
    snprintf(doc->file, sizeof doc->file, "%s", path);
    TsStatus st = ts_read_file(path, JSON_MAX_BYTES, &doc->text, &doc->len, err);
    if (st) {
        if (err && !err->file[0]) snprintf(err->file, sizeof err->file, "%s", path);
        return st;
    }
    if (memchr(doc->text, '\0', doc->len)) {
        size_t off = (size_t)((const char *)memchr(doc->text, '\0', doc->len) - doc->text);
        int l, c;
        pos_of(doc->text, off, &l, &c);
        ts_err(err, TS_ERR_INPUT, "binary data (a NUL byte) in a JSON file");
        ts_err_at(err, path, l, c, doc->text);
        ts_err_hint(err, "expected a text file");
        ts_json_free(doc);
        return TS_ERR_INPUT;
    }
    st = load_common(doc, path, err);
    if (st) ts_json_free(doc); /* the error holds its own copy of the line */
    return st;
}

TsStatus ts_json_load_text(TsJsonDoc *doc, const char *name, const char *text, TsError *err)
{
    memset(doc, 0, sizeof *doc);
    snprintf(doc->file, sizeof doc->file, "%s", name);
    doc->len = strlen(text);
    doc->text = malloc(doc->len + 1);
    if (!doc->text) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    memcpy(doc->text, text, doc->len + 1);
    TsStatus st = load_common(doc, name, err);
    if (st) ts_json_free(doc);
    return st;
}

void ts_json_free(TsJsonDoc *doc)
{
    if (doc->root) json_decref(doc->root);
    free(doc->text);
    memset(doc, 0, sizeof *doc);
}

/* ---- locating a dotted path in the text ---------------------------------- */
typedef struct Scan {
    const char *t;
    size_t i, n;
} Scan;

static void skip_ws(Scan *s)
{
    while (s->i < s->n && strchr(" \t\r\n", s->t[s->i])) s->i++;
}

static bool skip_string(Scan *s, const char **start, size_t *len)
{
    if (s->i >= s->n || s->t[s->i] != '"') return false;
    size_t b = ++s->i;
    while (s->i < s->n && s->t[s->i] != '"') {
        if (s->t[s->i] == '\\') s->i++;
        s->i++;
    }
    if (start) *start = s->t + b;
    if (len) *len = s->i - b;
    s->i++;
    return true;
}

static bool skip_value(Scan *s, int depth)
{
    skip_ws(s);
    if (s->i >= s->n || depth > JSON_MAX_DEPTH) return false;
    char c = s->t[s->i];
    if (c == '"') return skip_string(s, NULL, NULL);
    if (c == '{' || c == '[') {
        char close = c == '{' ? '}' : ']';
        s->i++;
        for (;;) {
            skip_ws(s);
            if (s->i < s->n && s->t[s->i] == close) {
                s->i++;
                return true;
            }
            if (c == '{') {
                if (!skip_string(s, NULL, NULL)) return false;
                skip_ws(s);
                if (s->i >= s->n || s->t[s->i] != ':') return false;
                s->i++;
            }
            if (!skip_value(s, depth + 1)) return false;
            skip_ws(s);
            if (s->i < s->n && s->t[s->i] == ',') s->i++;
            else if (s->i < s->n && s->t[s->i] == close) continue;
            else return false;
        }
    }
    while (s->i < s->n && !strchr(",}] \t\r\n", s->t[s->i])) s->i++;
    return true;
}

/* With s at an object's '{', find key; leave s at its value. */
static bool find_key(Scan *s, const char *key, size_t klen)
{
    skip_ws(s);
    if (s->i >= s->n || s->t[s->i] != '{') return false;
    s->i++;
    for (;;) {
        skip_ws(s);
        if (s->i >= s->n || s->t[s->i] == '}') return false;
        const char *k;
        size_t kl;
        if (!skip_string(s, &k, &kl)) return false;
        skip_ws(s);
        if (s->i >= s->n || s->t[s->i] != ':') return false;
        s->i++;
        skip_ws(s);
        if (kl == klen && memcmp(k, key, kl) == 0) return true;
        if (!skip_value(s, 1)) return false;
        skip_ws(s);
        if (s->i < s->n && s->t[s->i] == ',') s->i++;
    }
}

/* With s at an array's '[', move to element idx; leave s at it. */
static bool find_index(Scan *s, long idx)
{
    skip_ws(s);
    if (s->i >= s->n || s->t[s->i] != '[') return false;
    s->i++;
    for (long k = 0;; k++) {
        skip_ws(s);
        if (s->i >= s->n || s->t[s->i] == ']') return false;
        if (k == idx) return true;
        if (!skip_value(s, 1)) return false;
        skip_ws(s);
        if (s->i < s->n && s->t[s->i] == ',') s->i++;
    }
}

/* Paths are dotted keys with optional array indices: "links[2].bw". */
TsStatus ts_json_verr(const TsJsonDoc *doc, const char *path, const char *hint, TsError *err, const char *fmt,
                      va_list ap)
{
    char msg[TS_ERR_MSG_MAX];
    vsnprintf(msg, sizeof msg, fmt, ap);
    int l = 1, c = 1;
    ts_json_locate(doc, path, &l, &c);
    ts_err(err, TS_ERR_INPUT, "%s", msg);
    ts_err_at(err, doc->file, l, c, doc->text);
    if (hint) ts_err_hint(err, "%s", hint);
    return TS_ERR_INPUT;
}

bool ts_json_locate(const TsJsonDoc *doc, const char *path, int *line, int *col)
{
    Scan s = {doc->text, 0, doc->len};
    skip_ws(&s);
    size_t at = s.i;
    const char *p = path;
    bool found = true;
    while (*p) {
        size_t save = s.i;
        bool ok;
        if (*p == '[') {
            char *end;
            long idx = strtol(p + 1, &end, 10);
            ok = *end == ']' && find_index(&s, idx);
            p = *end == ']' ? end + 1 : p + strlen(p);
        } else {
            size_t kl = strcspn(p, ".[");
            ok = find_key(&s, p, kl);
            p += kl;
        }
        if (!ok) {
            s.i = save;
            found = false;
            break;
        }
        at = s.i;
        if (*p == '.') p++;
    }
    pos_of(doc->text, at, line, col);
    return found;
}

/* ---- typed getters -------------------------------------------------------- */
static TsStatus field_err(const TsJsonDoc *doc, const char *path, TsError *err, const char *fmt,
                          const char *a, const char *b)
{
    int l = 1, c = 1;
    ts_json_locate(doc, path, &l, &c);
    ts_err(err, TS_ERR_INPUT, fmt, a, b);
    ts_err_at(err, doc->file, l, c, doc->text);
    return TS_ERR_INPUT;
}

static const char *type_name(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    default: return "null";
    }
}

static json_t *get(json_t *obj, const char *key) { return obj ? json_object_get(obj, key) : NULL; }

static TsStatus missing(const TsJsonDoc *doc, const char *path, bool required, TsError *err)
{
    if (!required) return TS_OK;
    /* Point at the enclosing object. */
    char parent[256];
    snprintf(parent, sizeof parent, "%s", path);
    char *dot = strrchr(parent, '.');
    int l = 1, c = 1;
    if (dot) {
        *dot = '\0';
        ts_json_locate(doc, parent, &l, &c);
    }
    ts_err(err, TS_ERR_INPUT, "missing required field '%s'", path);
    ts_err_at(err, doc->file, l, c, doc->text);
    return TS_ERR_INPUT;
}

TsStatus ts_json_int(const TsJsonDoc *doc, json_t *obj, const char *key, const char *path,
                     bool required, int64_t min, int64_t max, int64_t *out, TsError *err)
{
    json_t *v = get(obj, key);
    if (!v || json_is_null(v)) return missing(doc, path, required, err);
    int64_t x;
    if (json_is_integer(v)) {
        x = (int64_t)json_integer_value(v);
    } else if (json_is_real(v) && floor(json_real_value(v)) == json_real_value(v) &&
               fabs(json_real_value(v)) < 9e15) {
        x = (int64_t)json_real_value(v);
    } else {
        TsStatus st = field_err(doc, path, err, "'%s' must be an integer, got %s", path, type_name(v));
        ts_err_hint(err, "write a whole number, e.g. \"%s\": 4096", key);
        return st;
    }
    if (x < min || x > max) {
        char lim[96];
        snprintf(lim, sizeof lim, "%lld..%lld", (long long)min, (long long)max);
        TsStatus st = field_err(doc, path, err, "'%s' is out of range (allowed %s)", path, lim);
        return st;
    }
    *out = x;
    return TS_OK;
}

TsStatus ts_json_num(const TsJsonDoc *doc, json_t *obj, const char *key, const char *path,
                     bool required, double min, double max, double *out, TsError *err)
{
    json_t *v = get(obj, key);
    if (!v || json_is_null(v)) return missing(doc, path, required, err);
    if (!json_is_number(v)) {
        TsStatus st = field_err(doc, path, err, "'%s' must be a number, got %s", path, type_name(v));
        ts_err_hint(err, "write a plain JSON number, e.g. \"%s\": 1.5", key);
        return st;
    }
    double x = json_number_value(v);
    if (!isfinite(x) || x < min || x > max) {
        char lim[96];
        snprintf(lim, sizeof lim, "%g..%g", min, max);
        return field_err(doc, path, err, "'%s' is out of range (allowed %s)", path, lim);
    }
    *out = x;
    return TS_OK;
}

TsStatus ts_json_bool(const TsJsonDoc *doc, json_t *obj, const char *key, const char *path,
                      bool required, bool *out, TsError *err)
{
    json_t *v = get(obj, key);
    if (!v || json_is_null(v)) return missing(doc, path, required, err);
    if (!json_is_boolean(v)) {
        TsStatus st = field_err(doc, path, err, "'%s' must be true or false, got %s", path, type_name(v));
        return st;
    }
    *out = json_is_true(v);
    return TS_OK;
}

TsStatus ts_json_str(const TsJsonDoc *doc, json_t *obj, const char *key, const char *path,
                     bool required, char *out, size_t cap, TsError *err)
{
    json_t *v = get(obj, key);
    if (!v || json_is_null(v)) return missing(doc, path, required, err);
    if (!json_is_string(v))
        return field_err(doc, path, err, "'%s' must be a string, got %s", path, type_name(v));
    snprintf(out, cap, "%s", json_string_value(v));
    return TS_OK;
}

/* ---- JSON output ------------------------------------------------------------ */
void ts_json_fmt_double(TsBuf *b, double v)
{
    if (!isfinite(v)) {
        ts_buf_puts(b, "null");
        return;
    }
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        ts_buf_printf(b, "%.0f", v);
        return;
    }
    char tmp[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(tmp, sizeof tmp, "%.*g", prec, v);
        if (strtod(tmp, NULL) == v) break;
    }
    ts_buf_puts(b, tmp);
}

void ts_json_escape(TsBuf *b, const char *s)
{
    ts_buf_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        switch (*p) {
        case '"': ts_buf_puts(b, "\\\""); break;
        case '\\': ts_buf_puts(b, "\\\\"); break;
        case '\n': ts_buf_puts(b, "\\n"); break;
        case '\t': ts_buf_puts(b, "\\t"); break;
        case '\r': ts_buf_puts(b, "\\r"); break;
        default:
            if (*p < 0x20) ts_buf_printf(b, "\\u%04x", *p);
            else ts_buf_append(b, (const char *)p, 1);
        }
    }
    ts_buf_puts(b, "\"");
}
