/* Names of the shared enums (dtypes, collectives), generated from their X-macro tables. */
#include "trainsim/common.h"

#include <string.h>

static const char *const DTYPE_NAMES[] = {
#define X(e, n, b) n,
    TS_DTYPE_LIST(X)
#undef X
};
static const int DTYPE_BYTES[] = {
#define X(e, n, b) b,
    TS_DTYPE_LIST(X)
#undef X
};
static const char *const COLL_NAMES[] = {
#define X(e, n) n,
    TS_COLL_LIST(X)
#undef X
};
_Static_assert(sizeof DTYPE_NAMES / sizeof DTYPE_NAMES[0] == TS_DTYPE_COUNT, "dtype table");
_Static_assert(sizeof DTYPE_BYTES / sizeof DTYPE_BYTES[0] == TS_DTYPE_COUNT, "dtype table");
_Static_assert(sizeof COLL_NAMES / sizeof COLL_NAMES[0] == TS_COLL_COUNT, "coll table");

const char *ts_dtype_name(TsDtype d) { return (unsigned)d < TS_DTYPE_COUNT ? DTYPE_NAMES[d] : "?"; }
int ts_dtype_bytes(TsDtype d) { return (unsigned)d < TS_DTYPE_COUNT ? DTYPE_BYTES[d] : 0; }

int ts_name_index(const char *s, const char *const *names, int n)
{
    if (!s) return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}

bool ts_dtype_parse(const char *s, TsDtype *out)
{
    int i = ts_name_index(s, DTYPE_NAMES, TS_DTYPE_COUNT);
    if (i >= 0) *out = (TsDtype)i;
    return i >= 0;
}

const char *ts_coll_name(TsColl c) { return (unsigned)c < TS_COLL_COUNT ? COLL_NAMES[c] : "?"; }

bool ts_coll_parse(const char *s, TsColl *out)
{
    int i = ts_name_index(s, COLL_NAMES, TS_COLL_COUNT);
    if (i >= 0) *out = (TsColl)i;
    return i >= 0;
}
