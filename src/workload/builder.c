/* placeholder, replaced below */
#include "trainsim/workload.h"
TsStatus wl_build(const WlModelDims *m, const WlPlanDims *p, const WlCost *c, const WlBuildOptions *o,
                  Workload **out, TsError *err)
{
    (void)m; (void)p; (void)c; (void)o; *out = NULL;
    return ts_err(err, TS_ERR_INTERNAL, "not yet");
}
TsStatus wl_build_optable(const WlModelDims *m, const WlPlanDims *p, const WlCost *c, bool neusight,
                          Workload **out, TsError *err)
{
    (void)m; (void)p; (void)c; (void)neusight; *out = NULL;
    return ts_err(err, TS_ERR_INTERNAL, "not yet");
}
