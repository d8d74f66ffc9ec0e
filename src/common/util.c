/* Small numeric and string helpers. */
#include "common_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int64_t ts_round_up(int64_t x, int64_t m) { return m <= 0 ? x : ((x + m - 1) / m) * m; }
int64_t ts_ceil_div(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }
bool ts_str_eq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

bool ts_grow(void **p, size_t *cap, size_t need, size_t elem)
{
    if (need <= *cap) return true;
    size_t c = *cap ? *cap : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return false;
    *p = q;
    *cap = c;
    return true;
}

bool ts_ends_with(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && strcmp(s + n - m, suf) == 0;
}

uint64_t ts_fnv_bytes(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i < n; i++) h = ts_fnv_word(h, c[i]);
    return h;
}

uint64_t ts_fnv_words(uint64_t h, const void *p, size_t n)
{
    const unsigned char *c = p;
    for (size_t i = 0; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, c + i, 8);
        h = ts_fnv_mix(h, w);
    }
    return h;
}

int ts_edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63) return TS_EDIT_FAR;
    int row[64]; /* row[j]: distance between a[0..i) and b[0..j) */
    for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
    for (size_t i = 1; i <= la; i++) {
        int diag = row[0];
        row[0] = (int)i;
        for (size_t j = 1; j <= lb; j++) {
            int up = row[j];
            int best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

bool ts_parse_i64(const char *s, int64_t *out)
{
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end) return false;
    *out = (int64_t)v;
    return true;
}

bool ts_parse_f64(const char *s, double *out)
{
    if (!s || !*s) return false;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}
