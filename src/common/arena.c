/* Bump arena: blocks chained, freed at once. Allocation failure injectable. */
#include "trainsim/common.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

typedef struct Block {
    struct Block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} Block;

struct TsArena {
    Block *head;
    size_t block_bytes;
    size_t used_total;
    long fail_after; /* < 0: never fail */
};

TsArena *ts_arena_create(size_t block_bytes)
{
    TsArena *a = calloc(1, sizeof *a);
    if (!a) return NULL;
    a->block_bytes = block_bytes ? block_bytes : 64 * 1024;
    a->fail_after = -1;
    return a;
}

void ts_arena_destroy(TsArena *a)
{
    if (!a) return;
    Block *b = a->head;
    while (b) {
        Block *n = b->next;
        free(b);
        b = n;
    }
    free(a);
}

void ts_arena_fail_after(TsArena *a, long n) { a->fail_after = n; }
size_t ts_arena_used_bytes(const TsArena *a) { return a ? a->used_total : 0; }

void *ts_arena_alloc(TsArena *a, size_t bytes)
{
    if (!a) return NULL;
    if (a->fail_after == 0) return NULL;
    if (a->fail_after > 0) a->fail_after--;
    size_t need = (bytes + 15u) & ~(size_t)15u;
    if (need < bytes) return NULL; /* overflow */
    Block *b = a->head;
    if (!b || b->cap - b->used < need) {
        size_t cap = need > a->block_bytes ? need : a->block_bytes;
        Block *nb = malloc(sizeof *nb + cap);
        if (!nb) return NULL;
        nb->cap = cap;
        nb->used = 0;
        /* Keep the partially used head first when the new block is a one-off
         * big allocation, so small allocations continue to fill it. */
        if (b && need > a->block_bytes) {
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += need;
    a->used_total += need;
    memset(p, 0, bytes);
    return p;
}

char *ts_arena_strdup(TsArena *a, const char *s)
{
    size_t n = strlen(s);
    char *p = ts_arena_alloc(a, n + 1);
    if (p) memcpy(p, s, n + 1);
    return p;
}

char *ts_arena_printf(TsArena *a, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return NULL;
    char *p = ts_arena_alloc(a, (size_t)n + 1);
    if (!p) return NULL;
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

void *ts_arena_grow(TsArena *a, void *old, size_t elem, size_t n, size_t new_cap)
{
    if (new_cap < n) return NULL;
    if (elem && new_cap > SIZE_MAX / elem) return NULL;
    void *p = ts_arena_alloc(a, elem * new_cap);
    if (p && old && n) memcpy(p, old, elem * n);
    return p;
}
