/* model_load: pick the source (preset, JSON file, module tree, parameter
 * table or flags), apply overrides, finalize, validate. */
#include "trainsim/model.h"
#include "../common/common_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_TEXT_MAX (64u << 20)

/* Sniff a text model source: a module tree starts with "Module:", a parameter
 * table has a header or rows with ';' separators. */
static TsStatus load_text(const char *path, ModelSpec *out, ModelKnown *known, const char **what, TsError *err)
{
    char *text;
    size_t len;
    TsStatus st = ts_read_file(path, MODEL_TEXT_MAX, &text, &len, err);
    if (st) {
        if (err && !err->file[0]) snprintf(err->file, sizeof err->file, "%s", path);
        return st;
    }
    const char *p = text;
    while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
    if (strncmp(p, "Module:", 7) == 0) {
        st = model_parse_module_tree(path, text, out, known, err);
    } else if (strchr(p, ';')) {
        int64_t tp = 1;
        *what = "the parameter table";
        st = model_parse_param_table(path, text, out, known, &tp, err);
    } else {
        ts_err(err, TS_ERR_INPUT, "cannot tell what kind of model file this is");
        ts_err_at(err, path, 1, 1, text);
        ts_err_hint(err, "expected a preset name, a HF config.json, a module tree starting with "
                         "'Module:' or a 'name;module;shape;...' parameter table");
        st = TS_ERR_INPUT;
    }
    free(text);
    return st;
}

/* A .json file is a trainsim preset ("format": "trainsim-model") or a HF config. */
static TsStatus load_json(const char *path, ModelSpec *out, ModelKnown *known, TsError *err)
{
    TsJsonDoc doc;
    TsStatus st = ts_json_load(&doc, path, err);
    if (st) {
        ts_json_free(&doc); /* holds the text even when parsing failed */
        return st;
    }
    json_t *f = json_object_get(doc.root, "format");
    bool preset = f && json_is_string(f) && strcmp(json_string_value(f), MODEL_FORMAT_NAME) == 0;
    ts_json_free(&doc);
    return preset ? model_parse_preset_json(path, out, known, err) : model_parse_hf_config(path, out, known, err);
}

static void apply(int64_t v, int64_t *field, bool *known)
{
    if (v >= 0) {
        *field = v;
        *known = true;
    }
}

/* The dimensions a source left open must come from flags; say which. */
static TsStatus missing_dims(const ModelKnown *k, const char *src, const char *file, TsError *err)
{
    const char *miss[5], *flag[5];
    int n = 0;
    if (!k->layers) miss[n] = "layers", flag[n++] = "--layers N";
    if (!k->hidden) miss[n] = "hidden size", flag[n++] = "--hidden N";
    if (!k->heads) miss[n] = "attention heads", flag[n++] = "--heads N";
    if (!k->vocab) miss[n] = "vocabulary", flag[n++] = "--vocab N";
    if (k->experts_missing) miss[n] = "number of experts", flag[n++] = "--experts N";
    if (n == 0) return TS_OK;
    char what[160] = "", flags[160] = "";
    for (int i = 0; i < n; i++) {
        strcat(what, miss[i]);
        strcat(flags, flag[i]);
        if (i + 1 < n) {
            strcat(what, i + 2 == n ? " and " : ", ");
            strcat(flags, " ");
        }
    }
    ts_err(err, TS_ERR_INPUT, "%s does not give the %s: add %s", src, what, flags);
    if (file) ts_err_at(err, file, 0, 0, NULL);
    if (file)
        ts_err_hint(err, "a module tree or parameter table holds the structure but not every dimension, e.g. "
                         "--model %s %s", file, flags);
    else
        ts_err_hint(err, "--arch starts from the family defaults; the flags give the shape, e.g. "
                         "--arch gpt --layers 12 --hidden 768 --heads 12");
    return TS_ERR_INPUT;
}

TsStatus model_load(const char *source, const ModelOverrides *ov, ModelSpec *out, TsError *err)
{
    ModelKnown known;
    memset(&known, 0, sizeof known);
    TsStatus st = TS_OK;
    const char *what = "the module tree";
    char arch_what[64];
    const char *file = source;
    if (!source) {
        if (!ov || !ov->arch_set) return ts_err(err, TS_ERR_USAGE, "no model given: use --model or --arch");
        model_defaults(out, ov->arch);
        known.vocab = known.max_positions = true; /* family defaults */
        snprintf(arch_what, sizeof arch_what, "--arch %s", model_arch_name(ov->arch));
        what = arch_what;
        file = NULL;
    } else if (ts_is_file(source)) {
        if (ts_ends_with(source, ".json")) {
            st = load_json(source, out, &known, err);
        } else {
            st = load_text(source, out, &known, &what, err);
        }
    } else if (strchr(source, '/') || ts_ends_with(source, ".json") || ts_ends_with(source, ".txt") ||
               ts_ends_with(source, ".csv")) {
        ts_err(err, TS_ERR_INPUT, "model file '%s' does not exist", source);
        ts_err_hint(err, "give a path to an existing file, or a preset name ('trainsim models' lists them)");
        return TS_ERR_INPUT;
    } else {
        st = model_preset(source, out, err);
        if (st == TS_OK) known = (ModelKnown){true, true, true, true, true, true, true, true, false};
    }
    if (st) return st;
    if (ov) {
        if (ov->arch_set && source) {
            out->arch = ov->arch;
            /* post-LN belongs to the bert family: follow the family across */
            if ((out->arch == MODEL_ARCH_BERT) != (out->norm_layout == MODEL_NORM_LAYOUT_POST))
                out->norm_layout = out->arch == MODEL_ARCH_BERT ? MODEL_NORM_LAYOUT_POST : MODEL_NORM_LAYOUT_PRE;
        }
        apply(ov->layers, &out->layers, &known.layers);
        apply(ov->hidden, &out->hidden, &known.hidden);
        apply(ov->heads, &out->heads, &known.heads);
        apply(ov->kv_heads, &out->kv_heads, &known.kv_heads);
        apply(ov->head_dim, &out->head_dim, &known.head_dim);
        apply(ov->ffn, &out->ffn, &known.ffn);
        apply(ov->vocab, &out->vocab, &known.vocab);
        apply(ov->max_positions, &out->max_positions, &known.max_positions);
        bool dummy;
        apply(ov->experts, &out->experts, &dummy);
        if (ov->experts >= 0) known.experts_missing = false;
        apply(ov->topk, &out->topk, &dummy);
        apply(ov->moe_ffn, &out->moe_ffn, &dummy);
        apply(ov->shared_experts, &out->shared_experts, &dummy);
        apply(ov->dense_layers, &out->dense_layers, &dummy);
        apply(ov->mtp_layers, &out->mtp_layers, &dummy);
        if (ov->hidden_dropout >= 0) out->hidden_dropout = ov->hidden_dropout;
        if (ov->attn_dropout >= 0) out->attn_dropout = ov->attn_dropout;
    }
    st = missing_dims(&known, what, file, err);
    if (st) return st;
    model_finalize(out);
    return model_validate(out, err);
}
