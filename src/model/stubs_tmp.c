/* TEMPORARY: replaced by the model-source parsers (presets, HF, tree, table). */
#include "trainsim/model.h"
TsStatus model_preset(const char *name, ModelSpec *out, TsError *err)
{ (void)out; return ts_err(err, TS_ERR_INPUT, "unknown model preset '%s'", name); }
int model_preset_names(char names[][64], int cap) { (void)names; (void)cap; return 0; }
TsStatus model_parse_hf_config(const char *path, ModelSpec *out, ModelKnown *known, TsError *err)
{ (void)out; (void)known; return ts_err(err, TS_ERR_INPUT, "cannot read %s yet", path); }
TsStatus model_parse_preset_json(const char *path, ModelSpec *out, ModelKnown *known, TsError *err)
{ (void)out; (void)known; return ts_err(err, TS_ERR_INPUT, "cannot read %s yet", path); }
TsStatus model_parse_module_tree(const char *path, const char *text, ModelSpec *out, ModelKnown *known, TsError *err)
{ (void)text; (void)out; (void)known; return ts_err(err, TS_ERR_INPUT, "cannot read %s yet", path); }
TsStatus model_parse_param_table(const char *path, const char *text, ModelSpec *out, ModelKnown *known, int64_t *tp, TsError *err)
{ (void)text; (void)out; (void)known; (void)tp; return ts_err(err, TS_ERR_INPUT, "cannot read %s yet", path); }
void model_to_json(const ModelSpec *m, TsBuf *out) { ts_buf_printf(out, "{\"name\":\"%s\"}", m->name); }
