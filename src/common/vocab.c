/* Names of the shared enums (dtypes, collectives), generated from their X-macro tables. */
#include "trainsim/common.h"

#include <string.h>

TS_ENUM_NAMES(ts_dtype, TsDtype, TS_DTYPE_LIST, TS_DTYPE_COUNT)
TS_ENUM_PARSE(ts_dtype, TsDtype, TS_DTYPE_COUNT)
TS_ENUM_NAMES(ts_coll, TsColl, TS_COLL_LIST, TS_COLL_COUNT)
TS_ENUM_PARSE(ts_coll, TsColl, TS_COLL_COUNT)

static const int DTYPE_BYTES[] = {
#define X(e, n, b) b,
    TS_DTYPE_LIST(X)
#undef X
};
_Static_assert(sizeof DTYPE_BYTES / sizeof DTYPE_BYTES[0] == TS_DTYPE_COUNT, "dtype table");

int ts_dtype_bytes(TsDtype d) { return (unsigned)d < TS_DTYPE_COUNT ? DTYPE_BYTES[d] : 0; }

int ts_name_index(const char *s, const char *const *names, int n)
{
    if (!s) return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}
