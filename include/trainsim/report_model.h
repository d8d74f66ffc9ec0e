/*
 * trainsim/report_model.h — what `trainsim model` and `trainsim models`
 * print: one model's summary (dimensions, norms, experts, MLA, parameter
 * counts, the module graph's size) and the listing of presets, as a table of
 * under 100 columns (--wide adds each preset's source) or as JSON
 * ("trainsim-models", version 1: counts and the full spec).
 *
 * Ownership: text is appended to the caller's TsBuf; nothing else is
 * allocated. Failure: an allocation failure sets TsBuf.oom.
 *
 * Example:
 *     rep_models_text(specs, n, false, &b);
 */
#ifndef TRAINSIM_REPORT_MODEL_H
#define TRAINSIM_REPORT_MODEL_H

#include "trainsim/common.h"
#include "trainsim/graph.h"
#include "trainsim/model.h"

/* One model and its module graph (the counts beside the graph's). */
void rep_model_summary(const ModelSpec *m, const ModuleGraph *g, TsBuf *out);
/* Presets ms[0..n): the table (name column as wide as the longest name) or JSON. */
void rep_models_text(const ModelSpec *ms, int n, bool wide, TsBuf *out);
void rep_models_json(const ModelSpec *ms, int n, TsBuf *out);

#endif
