/* search_int.h — internals shared by the search files (not installed). */
#ifndef TRAINSIM_SEARCH_INT_H
#define TRAINSIM_SEARCH_INT_H

#include "trainsim/search.h"

/* (schedule, vpp) pairs of one shape. */
typedef struct SearchSv {
    int8_t schedule, vpp;
} SearchSv;

/* One (gpus, tp, pp, cp, ep, dp) shape with its inner value lists; the
 * candidates of the shape are the product of the lists, in the order
 * mbs, sv, recompute, zero, (sp, overlap), cp exchange (mbs most
 * significant). (sp, overlap) pairs: TP overlap only with SP, as Megatron
 * asserts. */
typedef struct SearchShape {
    int64_t start; /* index of the shape's first candidate */
    int64_t count; /* product of the list sizes */
    int32_t gpus, dp;
    int16_t tp, pp, cp, ep;
    int16_t mbs[SEARCH_MAX_VALUES];
    SearchSv sv[PLAN_SCHED_COUNT + 2 * SEARCH_MAX_VALUES]; /* every schedule once, interleaved and 1f1b-a2a
                                                                with their vpps */
    int8_t rec[PLAN_RECOMPUTE_COUNT], zero[4 + SEARCH_MAX_VALUES], sp[4], ov[4], cx[SIM_CP_COMM_COUNT];
    int16_t dps[4 + SEARCH_MAX_VALUES]; /* zero[i]'s HSDP shard degree, 0 = none */
    int8_t n_mbs, n_sv, n_rec, n_zero, n_so, n_cx; /* sp[i], ov[i]: the i-th (sp, overlap) pair */
} SearchShape;

typedef struct SearchSpace {
    SearchShape *shapes; /* malloc'd */
    int n_shapes;
    int64_t total;       /* candidates */
} SearchSpace;

/* Build the space of c. Returns TS_ERR_USAGE (with a hint) when empty,
 * TS_ERR_INTERNAL on allocation failure. */
TsStatus search_space_build(const SearchConfig *c, SearchSpace *s, TsError *err);
void search_space_free(SearchSpace *s);
/* Knobs of candidate idx (0 <= idx < s->total). */
void search_space_decode(const SearchSpace *s, int64_t idx, SearchKnobs *k);

/* Walking candidates in index order without a decode (binary search and
 * five divisions) per candidate: the mixed-radix digits of the current one. */
typedef struct SearchCursor {
    int64_t idx;
    int shape;
    int mbs, sv, rec, zero, so, cx;
} SearchCursor;
/* Position c on idx and fill k. */
void search_cursor_seek(const SearchSpace *s, int64_t idx, SearchCursor *c, SearchKnobs *k);
/* Advance to idx + 1 (which must be < s->total) and fill k. */
void search_cursor_next(const SearchSpace *s, SearchCursor *c, SearchKnobs *k);

#endif
