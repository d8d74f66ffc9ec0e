/* Small numeric and string helpers. */
#include "common_int.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int64_t ts_round_up(int64_t x, int64_t m) { return m <= 0 ? x : ((x + m - 1) / m) * m; }
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

bool ts_parse_bytes(const char *s, double unit, double *out)
{
    if (!s) return false;
    /* the number: [sign] digits [. digits] [e [sign] digits], scanned here so
     * that strtod's hex, "inf" and "nan" forms are not sizes */
    const char *p = s + (*s == '+' || *s == '-');
    size_t digits = strspn(p, "0123456789");
    p += digits;
    if (*p == '.') {
        size_t frac = strspn(p + 1, "0123456789");
        digits += frac;
        p += 1 + frac;
    }
    if (!digits) return false;
    if (*p == 'e' || *p == 'E') {
        const char *q = p + 1 + (p[1] == '+' || p[1] == '-');
        size_t exp = strspn(q, "0123456789");
        if (exp) p = q + exp;
    }
    char *end;
    double v = strtod(s, &end);
    if (end != p) return false;
    if (*p == ' ' && p[1]) p++; /* "1.5 GB", not "64 " */
    static const struct { const char *name; double bytes; } U[] = {
        {"", 0}, {"b", 1},
        {"k", 1e3}, {"kb", 1e3}, {"ki", 0x1p10}, {"kib", 0x1p10},
        {"m", 1e6}, {"mb", 1e6}, {"mi", 0x1p20}, {"mib", 0x1p20},
        {"g", 1e9}, {"gb", 1e9}, {"gi", 0x1p30}, {"gib", 0x1p30},
        {"t", 1e12}, {"tb", 1e12}, {"ti", 0x1p40}, {"tib", 0x1p40},
        {"p", 1e15}, {"pb", 1e15}, {"pi", 0x1p50}, {"pib", 0x1p50},
    };
    for (size_t i = 0; i < sizeof U / sizeof U[0]; i++)
        if (strcasecmp(p, U[i].name) == 0) {
            double b = v * (i == 0 ? unit : U[i].bytes);
            if (!isfinite(b)) return false;
            *out = b;
            return true;
        }
    return false;
}
