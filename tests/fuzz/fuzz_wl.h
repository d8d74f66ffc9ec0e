/*
 * fuzz_wl.h — the check every text-workload harness makes: read the bytes
 * (the readers need text[len] == '\0'), every error a proper value, a
 * workload that reads must validate, and what the format's writer makes of
 * it must read back. Returns the workload for further checks (the caller
 * destroys it), or NULL when the input did not read.
 */
#ifndef TS_FUZZ_WL_H
#define TS_FUZZ_WL_H

#include "fuzz_common.h"

#include "trainsim/workload.h"
#include "trainsim/workload_io.h"

typedef TsStatus (*FzWlRead)(const char *name, const char *text, size_t len, Workload **out, TsError *err);
typedef void (*FzWlWrite)(const Workload *w, TsBuf *out);

static inline Workload *fz_wl_roundtrip(const uint8_t *data, size_t size, FzWlRead rd, FzWlWrite wr)
{
    Workload *w = NULL;
    TsError e = {0};
    char *text = fz_cstr(data, size);
    TsStatus st = rd("fuzz.txt", text, size, &w, &e);
    free(text);
    fz_check_error(st, &e);
    if (st != TS_OK) {
        if (w) abort(); /* *out stays NULL on failure */
        return NULL;
    }
    ts_err_clear(&e);
    if (wl_validate(w, &e) != TS_OK) abort();
    TsBuf b = {0};
    wr(w, &b);
    if (!b.oom) {
        Workload *w2 = NULL;
        ts_err_clear(&e);
        if (rd("roundtrip.txt", b.data ? b.data : "", b.len, &w2, &e) != TS_OK) abort();
        wl_destroy(w2);
    }
    ts_buf_free(&b);
    return w;
}

#endif
