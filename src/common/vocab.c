/* Names of the shared enums (dtypes, collectives), generated from their X-macro tables. */
#include "trainsim/common.h"

#include <string.h>

TS_ENUM_NAMES(ts_dtype, TsDtype, TS_DTYPE_LIST, TS_DTYPE_COUNT)
TS_ENUM_PARSE(ts_dtype, TsDtype, TS_DTYPE_COUNT)
TS_ENUM_NAMES(ts_coll, TsColl, TS_COLL_LIST, TS_COLL_COUNT)
TS_ENUM_PARSE(ts_coll, TsColl, TS_COLL_COUNT)

int ts_name_index(const char *s, const char *const *names, int n)
{
    if (!s) return -1;
    for (int i = 0; i < n; i++)
        if (strcmp(s, names[i]) == 0) return i;
    return -1;
}
