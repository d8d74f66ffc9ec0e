/* Bump arena: blocks chained, freed at once. Allocation failure injectable.
 *
 * Blocks of 2 MiB and more (a pre-sized graph of a 256-expert MoE model is
 * ~13 MB) are mapped directly, aligned to 2 MiB and advised for transparent
 * huge pages where the OS has them: first touch then costs a few huge-page
 * faults instead of thousands of 4 KiB ones (measured on the dev box: 13 MB
 * first touch 20 ms with malloc, 1.4 ms with huge pages). Fresh mappings
 * are zero, so allocations from them skip the memset and pages are touched
 * only when used. */
#include "common_int.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#define ARENA_MAP 1
#endif

#define ARENA_HUGE ((size_t)2 << 20)

typedef struct Block {
    struct Block *next;
    size_t used, cap;
    void *map;          /* mapping start when mapped (munmap), else NULL (free) */
    size_t map_bytes;
    _Alignas(16) unsigned char data[];
} Block;

static Block *block_new(size_t cap)
{
#ifdef ARENA_MAP
    if (cap >= ARENA_HUGE && cap < SIZE_MAX - 2 * ARENA_HUGE) {
        size_t want = (sizeof(Block) + cap + ARENA_HUGE - 1) & ~(ARENA_HUGE - 1);
        size_t span = want + ARENA_HUGE;
        void *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p != MAP_FAILED) {
            uintptr_t a = ((uintptr_t)p + ARENA_HUGE - 1) & ~(uintptr_t)(ARENA_HUGE - 1);
            size_t head = (size_t)(a - (uintptr_t)p), tail = span - head - want;
            if (head) munmap(p, head);
            if (tail) munmap((unsigned char *)a + want, tail);
#ifdef MADV_HUGEPAGE
            madvise((void *)a, want, MADV_HUGEPAGE); /* advisory: failure is harmless */
#endif
            Block *b = (Block *)a;
            b->map = (void *)a;
            b->map_bytes = want;
            b->cap = want - sizeof(Block);
            return b;
        }
    }
#endif
    Block *b = malloc(sizeof *b + cap);
    if (!b) return NULL;
    b->map = NULL;
    b->map_bytes = 0;
    b->cap = cap;
    return b;
}

static void block_free(Block *b)
{
#ifdef ARENA_MAP
    if (b->map) {
        munmap(b->map, b->map_bytes);
        return;
    }
#endif
    free(b);
}

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
        block_free(b);
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
        Block *nb = block_new(cap);
        if (!nb) return NULL;
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
    if (!b->map) memset(p, 0, bytes); /* mapped blocks are zero and never reused */
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
