/* fuzz_model.h — what model_load does after a parser succeeded, for the
 * model-file fuzz targets: finalize, validate, count. Errors must be proper
 * values (fz_check_error). */
#ifndef TRAINSIM_FUZZ_MODEL_H
#define TRAINSIM_FUZZ_MODEL_H

#include "fuzz_common.h"

#include "trainsim/model.h"

static inline void fz_model_parsed(TsStatus st, ModelSpec *m, TsError *e)
{
    fz_check_error(st, e);
    if (st != TS_OK) return;
    model_finalize(m);
    ts_err_clear(e);
    st = model_validate(m, e);
    fz_check_error(st, e);
    if (st == TS_OK) {
        ModelCounts c;
        model_count_params(m, &c);
    }
}

#endif
