/* Measured bus-bandwidth tables (--busbw): override the collective model.
 *
 * Two forms are read:
 *  - SimAI's busbw.yaml (aliyun/SimAI docs; never parsed by its open-source
 *    binary): a first line naming the test, then sections "TP:", "DP:",
 *    "EP:", "PP:" of lines "allreduce,: 300" (GB/s; null = not given) and, for
 *    PP, "busbw: 47.5". One value per (group, collective), any size. SimAI
 *    divides bytes by 2^30 before dividing by these numbers, so they are
 *    GiB/s; we follow it.
 *  - JSON "trainsim-busbw" v1 with sizes:
 *      {"format": "trainsim-busbw", "version": 1,
 *       "tables": [{"group": "tp", "collective": "allreduce",
 *                   "points": [[1048576, 43.7], [16777216, 234.5]]}]}
 *    (bytes, busbw in GB/s = 1e9 B/s); interpolated linearly in log(size),
 *    clamped at the ends. group "*" matches every group. */
#include "hw_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define BUSBW_MAX_POINTS 64

typedef struct BusRow {
    HwGroupKind group;              /* never HW_GROUP_NONE */
    TsColl coll;
    int n;
    double logs[BUSBW_MAX_POINTS];  /* log2 bytes, ascending */
    double bw[BUSBW_MAX_POINTS];    /* bytes/s */
} BusRow;

struct HwBusbw {
    BusRow *rows;
    int n, cap;
};

static TsStatus add_row(HwBusbw *b, const BusRow *r, TsError *err)
{
    if (b->n == b->cap) {
        int cap = b->cap ? b->cap * 2 : 16;
        BusRow *p = realloc(b->rows, (size_t)cap * sizeof *p);
        if (!p) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
        b->rows = p;
        b->cap = cap;
    }
    b->rows[b->n++] = *r;
    return TS_OK;
}

static void lower(char *s)
{
    for (; *s; s++) *s = (char)tolower((unsigned char)*s);
}

TS_ENUM_NAMES(hw_group, HwGroupKind, HW_GROUP_LIST, HW_GROUP_COUNT)
TS_ENUM_PARSE(hw_group, HwGroupKind, HW_GROUP_COUNT)

/* A group a table row may name (every kind but NONE). */
static bool row_group(const char *s, HwGroupKind *out)
{
    HwGroupKind k;
    if (!hw_group_parse(s, &k) || k == HW_GROUP_NONE) return false;
    *out = k;
    return true;
}

/* ---- SimAI YAML ------------------------------------------------------------- */
static TsStatus yaml_err(TsError *err, const char *file, int line, int col, const char *text,
                         const char *msg, const char *hint)
{
    ts_err(err, TS_ERR_INPUT, "%s", msg);
    ts_err_at(err, file, line, col, text);
    if (hint) ts_err_hint(err, "%s", hint);
    return TS_ERR_INPUT;
}

static TsStatus parse_yaml(const char *file, const char *text, HwBusbw *b, TsError *err)
{
    HwGroupKind group = HW_GROUP_NONE; /* the current section */
    bool named = false;
    int lineno = 0;
    const char *p = text;
    while (*p) {
        lineno++;
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        char line[256];
        if (len >= sizeof line)
            return yaml_err(err, file, lineno, 1, text, "line too long for a busbw table", NULL);
        memcpy(line, p, len);
        line[len] = '\0';
        p = eol ? eol + 1 : p + len;
        char *hash = strchr(line, '#');
        if (hash) *hash = '\0';
        size_t l = strlen(line);
        while (l && isspace((unsigned char)line[l - 1])) line[--l] = '\0';
        int ind = 0;
        while (line[ind] == ' ' || line[ind] == '\t') ind++;
        char *s = line + ind;
        if (!*s) continue;
        if (!named && !strchr(s, ':')) { /* the test name on the first line */
            named = true;
            continue;
        }
        named = true;
        char *colon = strchr(s, ':');
        if (!colon)
            return yaml_err(err, file, lineno, ind + 1, text, "expected 'key: value' or a section 'TP:'",
                            "SimAI busbw.yaml: sections TP/DP/EP/PP with lines like 'allreduce,: 300'");
        *colon = '\0';
        char *val = colon + 1;
        while (*val == ' ' || *val == '\t') val++;
        int vcol = (int)(val - line) + 1;
        char key[64];
        snprintf(key, sizeof key, "%s", s);
        size_t kl = strlen(key);
        while (kl && (key[kl - 1] == ',' || key[kl - 1] == ' ')) key[--kl] = '\0';
        lower(key);
        if (!*val) { /* section header */
            if (!row_group(key, &group) || group == HW_GROUP_ANY) {
                char msg[160];
                snprintf(msg, sizeof msg, "unknown group section '%s'", s);
                return yaml_err(err, file, lineno, ind + 1, text, msg, "sections are TP, DP, EP, PP (or CP, DP_EP)");
            }
            continue;
        }
        if (group == HW_GROUP_NONE)
            return yaml_err(err, file, lineno, ind + 1, text, "value outside a group section",
                            "start a section first, e.g. 'TP:'");
        TsColl c;
        if (!strcmp(key, "busbw")) c = TS_COLL_SENDRECV;
        else if (!ts_coll_parse(key, &c) || c == TS_COLL_NONE) {
            char msg[160];
            snprintf(msg, sizeof msg, "unknown collective '%s'", key);
            return yaml_err(err, file, lineno, ind + 1, text, msg,
                            "one of allreduce, allgather, reducescatter, alltoall, broadcast, sendrecv, busbw");
        }
        if (!strcmp(val, "null") || !strcmp(val, "~")) continue;
        double v;
        if (!ts_parse_f64(val, &v) || !(v > 0) || v > 1e6) {
            char msg[200];
            snprintf(msg, sizeof msg, "expected a bus bandwidth in GB/s, got '%s'", val);
            return yaml_err(err, file, lineno, vcol, text, msg, "a positive number, or null when not measured");
        }
        BusRow r = {.group = group, .coll = c, .n = 1};
        r.logs[0] = 0;
        r.bw[0] = v * 1073741824.0; /* SimAI: bytes / 2^30 / busbw */
        TsStatus st = add_row(b, &r, err);
        if (st) return st;
    }
    if (b->n == 0)
        return yaml_err(err, file, lineno > 0 ? lineno : 1, 1, text, "busbw table holds no values",
                        "give at least one 'collective,: GB/s' line under a TP/DP/EP/PP section");
    return TS_OK;
}

/* ---- JSON ---------------------------------------------------------------------- */
static const char *const TOP_KEYS[] = {"format", "version", "name", "source", "notes", "tables", NULL};
static const char *const ROW_KEYS[] = {"group", "collective", "points", NULL};

static TsStatus parse_json(const TsJsonDoc *doc, HwBusbw *b, TsError *err)
{
    TsStatus st;
    /* the format first: another trainsim file is named as such, not by its fields */
    if ((st = hw_check_format(doc, "trainsim-busbw", err))) return st;
    if ((st = hw_check_keys(doc, doc->root, "", TOP_KEYS, err))) return st;
    json_t *tables = json_object_get(doc->root, "tables");
    if (!json_is_array(tables) || json_array_size(tables) == 0)
        return hw_err_path(doc, tables ? "tables" : "", err,
                           tables ? "'tables' must be a non-empty array" : "missing required field 'tables'",
                           "\"tables\": [{\"group\": \"tp\", \"collective\": \"allreduce\", \"points\": [[bytes, GB/s], ...]}]");
    for (size_t i = 0; i < json_array_size(tables); i++) {
        char path[64], p2[96];
        snprintf(path, sizeof path, "tables[%zu]", i);
        json_t *o = json_array_get(tables, i);
        if (!json_is_object(o)) return hw_err_path(doc, path, err, "each table must be an object", NULL);
        if ((st = hw_check_keys(doc, o, path, ROW_KEYS, err))) return st;
        BusRow r = {.n = 0};
        char g[16] = "", cname[32] = "";
        snprintf(p2, sizeof p2, "%s.group", path);
        if ((st = ts_json_str(doc, o, "group", p2, true, g, sizeof g, err))) {
            hw_fix_pos(doc, json_object_get(o, "group") ? p2 : path, err);
            return st;
        }
        lower(g);
        if (!row_group(g, &r.group)) {
            char msg[120];
            snprintf(msg, sizeof msg, "unknown group '%s'", g);
            return hw_err_path(doc, p2, err, msg, "one of tp, dp, ep, pp, cp, dp_ep, *");
        }
        snprintf(p2, sizeof p2, "%s.collective", path);
        if ((st = ts_json_str(doc, o, "collective", p2, true, cname, sizeof cname, err))) {
            hw_fix_pos(doc, json_object_get(o, "collective") ? p2 : path, err);
            return st;
        }
        if (!ts_coll_parse(cname, &r.coll) || r.coll == TS_COLL_NONE) {
            char msg[120];
            snprintf(msg, sizeof msg, "unknown collective '%s'", cname);
            return hw_err_path(doc, p2, err, msg,
                               "one of allreduce, allgather, reducescatter, alltoall, broadcast, sendrecv");
        }
        snprintf(p2, sizeof p2, "%s.points", path);
        json_t *pts = json_object_get(o, "points");
        if (!json_is_array(pts) || json_array_size(pts) == 0 || json_array_size(pts) > BUSBW_MAX_POINTS)
            return hw_err_path(doc, pts ? p2 : path, err,
                               "'points' must be an array of 1 to 64 [bytes, GB/s] pairs", NULL);
        for (size_t k = 0; k < json_array_size(pts); k++) {
            json_t *pt = json_array_get(pts, k);
            char p3[128];
            snprintf(p3, sizeof p3, "%s[%zu]", p2, k);
            if (!json_is_array(pt) || json_array_size(pt) != 2 || !json_is_number(json_array_get(pt, 0)) ||
                !json_is_number(json_array_get(pt, 1)))
                return hw_err_path(doc, p3, err, "each point must be [bytes, GB/s]", "e.g. [16777216, 234.5]");
            double sz = json_number_value(json_array_get(pt, 0)), bw = json_number_value(json_array_get(pt, 1));
            if (!(sz >= 1) || !(bw > 0) || bw > 1e6)
                return hw_err_path(doc, p3, err, "point needs bytes >= 1 and 0 < GB/s <= 1e6", NULL);
            double ls = log2(sz);
            if (r.n > 0 && !(ls > r.logs[r.n - 1]))
                return hw_err_path(doc, p3, err, "sizes must increase", "list points in ascending size");
            r.logs[r.n] = ls;
            r.bw[r.n] = bw * 1e9;
            r.n++;
        }
        if ((st = add_row(b, &r, err))) return st;
    }
    return TS_OK;
}

static TsStatus load_text(const char *name, const char *text, HwBusbw **out, TsError *err)
{
    *out = NULL;
    HwBusbw *b = calloc(1, sizeof *b);
    if (!b) return ts_err(err, TS_ERR_INTERNAL, "out of memory");
    const char *s = text;
    while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
    TsStatus st;
    if (*s == '{') {
        TsJsonDoc doc;
        st = ts_json_load_text(&doc, name, text, err);
        if (!st) st = parse_json(&doc, b, err);
        ts_json_free(&doc);
    } else {
        st = parse_yaml(name, text, b, err);
    }
    if (st) {
        hw_busbw_free(b);
        return st;
    }
    *out = b;
    return TS_OK;
}

TsStatus hw_busbw_load_text(const char *name, const char *text, HwBusbw **out, TsError *err)
{
    return load_text(name, text, out, err);
}

TsStatus hw_busbw_load(const char *path, HwBusbw **out, TsError *err)
{
    *out = NULL;
    char *text;
    size_t len;
    TsStatus st = ts_read_file(path, 4u << 20, &text, &len, err);
    if (st) {
        if (err && !err->file[0]) snprintf(err->file, sizeof err->file, "%s", path);
        return st;
    }
    if (memchr(text, '\0', len)) {
        free(text);
        ts_err(err, TS_ERR_INPUT, "binary data (a NUL byte) in a busbw table");
        ts_err_at(err, path, 1, 1, NULL);
        return TS_ERR_INPUT;
    }
    st = load_text(path, text, out, err);
    free(text);
    return st;
}

void hw_busbw_free(HwBusbw *b)
{
    if (!b) return;
    free(b->rows);
    free(b);
}

int hw_busbw_entries(const HwBusbw *b) { return b ? b->n : 0; }

double hw_busbw_lookup(const HwBusbw *b, HwGroupKind kind, TsColl c, double bytes)
{
    if (!b || kind == HW_GROUP_NONE || !(bytes > 0)) return 0;
    const BusRow *hit = NULL;
    for (int i = 0; i < b->n; i++) {
        const BusRow *r = &b->rows[i];
        if (r->coll != c) continue;
        if (r->group == kind) {
            hit = r;
            break;
        }
        if (!hit && r->group == HW_GROUP_ANY) hit = r;
    }
    if (!hit) return 0;
    if (hit->n == 1) return hit->bw[0];
    double ls = log2(bytes);
    if (ls <= hit->logs[0]) return hit->bw[0];
    for (int k = 1; k < hit->n; k++) {
        if (ls <= hit->logs[k]) {
            double f = (ls - hit->logs[k - 1]) / (hit->logs[k] - hit->logs[k - 1]);
            return hit->bw[k - 1] + f * (hit->bw[k] - hit->bw[k - 1]);
        }
    }
    return hit->bw[hit->n - 1];
}
