/*
 * common_int.h — what the library's sources share below the public API of
 * trainsim/common.h (not installed; tests, fuzzers and benches may include
 * it by relative path, as they do other private headers).
 *
 *   - Growth helpers: ts_grow for malloc'd arrays, ts_arena_grow for arena
 *     arrays. Both keep the old array when out of memory.
 *   - The arena's failure injection (ts_arena_fail_after), with which tests
 *     prove that every entry point returns TS_ERR_INTERNAL instead of
 *     crashing.
 *   - JSON input on top of jansson: a parsed document keeps its source text
 *     so that typed-field errors name the JSON path and the line/column of
 *     the value (ts_json_locate).
 *
 * Ownership: a TsJsonDoc owns its root and text (ts_json_free; a failed
 * load leaves nothing to free). Failure: TS_ERR_INPUT, positioned, for bad
 * input; TS_ERR_INTERNAL for allocation failure.
 */
#ifndef TRAINSIM_COMMON_INT_H
#define TRAINSIM_COMMON_INT_H

#include <stdarg.h>
#include "trainsim/common.h"

/* ---- growth helpers ----------------------------------------------------------- */
/* Grow an arena array: returns a new array of new_cap elements holding the
 * old n elements (the old block is abandoned to the arena). */
void *ts_arena_grow(TsArena *a, void *old, size_t elem, size_t n, size_t new_cap);
/* Make room for `need` elements of `elem` bytes in the malloc'd array *p of
 * capacity *cap (doubling, from 64); false (array untouched) when out of memory. */
bool ts_grow(void **p, size_t *cap, size_t need, size_t elem);

/* ---- test hooks ----------------------------------------------------------------- */
/* Testing: the (n+1)-th allocation from now fails; n < 0 disables. */
void ts_arena_fail_after(TsArena *a, long n);

/* ---- JSON input (jansson) ---------------------------------------------------- */
/* jansson reports positions only for syntax errors; for a field of the wrong
 * type we re-scan the source text to find where the value sits (ts_json_locate),
 * because no Debian JSON library keeps per-value positions. */
typedef struct json_t json_t;

typedef struct TsJsonDoc {
    json_t *root;       /* owned; NULL on parse failure */
    char *text;         /* the source text, owned */
    size_t len;
    char file[256];
} TsJsonDoc;

/* Parse file (or text when path is NULL: then `name` is used in messages).
 * On syntax error: TS_ERR_INPUT with line/col and a hint. Rejects NaN/Inf,
 * nesting deeper than 64 and files over 16 MiB. On failure *doc is left
 * empty (nothing to free; ts_json_free on it is a harmless no-op). */
TsStatus ts_json_load(TsJsonDoc *doc, const char *path, TsError *err);
TsStatus ts_json_load_text(TsJsonDoc *doc, const char *name, const char *text, TsError *err);
void ts_json_free(TsJsonDoc *doc);
/* Find the line/column of the value at a dotted path with optional array
 * indices ("text_config.hidden_size", "links[2].bw")
 * in the source; returns false if not found (then line/col of the object). */
bool ts_json_locate(const TsJsonDoc *doc, const char *path, int *line, int *col);
/* An input error positioned at the value at `path` (its object when
 * missing), with an optional hint: TS_ERR_INPUT. The readers' own error
 * helpers forward their arguments here. */
TsStatus ts_json_verr(const TsJsonDoc *doc, const char *path, const char *hint, TsError *err, const char *fmt,
                      va_list ap);
/* Typed getters. `path` is the dotted JSON path used in messages. Missing
 * key: returns TS_OK and leaves *out untouched when !required. Wrong type or
 * out of range: TS_ERR_INPUT positioned at the value. */
TsStatus ts_json_int(const TsJsonDoc *doc, json_t *obj, const char *key, const char *path,
                     bool required, int64_t min, int64_t max, int64_t *out, TsError *err);
TsStatus ts_json_num(const TsJsonDoc *doc, json_t *obj, const char *key, const char *path,
                     bool required, double min, double max, double *out, TsError *err);
TsStatus ts_json_bool(const TsJsonDoc *doc, json_t *obj, const char *key, const char *path,
                      bool required, bool *out, TsError *err);
TsStatus ts_json_str(const TsJsonDoc *doc, json_t *obj, const char *key, const char *path,
                     bool required, char *out, size_t cap, TsError *err);

#endif
