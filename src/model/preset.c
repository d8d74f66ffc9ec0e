/* Preset files (data/models/<name>.json, format "trainsim-model" v1): the
 * field table, the reader, the writer (model_to_json) and the preset
 * directory (names, lookup, "did you mean" hints). The schema is documented
 * in docs/models.md; one table below drives both the reader and the writer,
 * so a spec written by model_to_json reads back unchanged. */
#include "trainsim/model.h"
#include "../common/common_int.h"

#include <jansson.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef enum { F_STR, F_ARCH, F_INT, F_NUM, F_BOOL, F_NORM, F_LAYOUT, F_ACT, F_POS } FieldKind;

typedef struct Field {
    const char *key;
    FieldKind kind;
    size_t off;      /* offsetof(ModelSpec, field) */
    size_t cap;      /* F_STR: buffer size */
    bool required;
    bool quiet;      /* written only when set (fields newer than most presets) */
    int64_t min, max;/* F_INT range; F_NUM: max 1 = a dropout probability */
    const char *example;
} Field;

#define FS(k, req, ex) {#k, F_STR, offsetof(ModelSpec, k), sizeof(((ModelSpec *)0)->k), req, false, 0, 0, ex}
#define FE(k, kind, ex) {#k, kind, offsetof(ModelSpec, k), 0, false, false, 0, 0, ex}
#define FI(k, req, lo, hi, ex) {#k, F_INT, offsetof(ModelSpec, k), 0, req, false, lo, hi, ex}
#define FN(k, ex) {#k, F_NUM, offsetof(ModelSpec, k), 0, false, false, 0, 0, ex}
#define FP(key, k, ex) {key, F_NUM, offsetof(ModelSpec, k), 0, false, false, 0, 1, ex}
#define FB(k) {#k, F_BOOL, offsetof(ModelSpec, k), 0, false, false, 0, 0, "true"}
#define FQI(k, lo, hi, ex) {#k, F_INT, offsetof(ModelSpec, k), 0, false, true, lo, hi, ex}
#define FQB(k) {#k, F_BOOL, offsetof(ModelSpec, k), 0, false, true, 0, 0, "true"}
#define BIG 100000000

/* The preset schema, in output order. `arch` must stay first among the
 * model fields: the reader applies the family defaults before the rest. */
static const Field FIELDS[] = {
    FS(name, false, "\"llama3-70b\""),
    FS(source, true, "\"HF meta-llama/Meta-Llama-3-70B config.json\""),
    {"arch", F_ARCH, offsetof(ModelSpec, arch), 0, true, false, 0, 0, "\"llama\""},
    FI(layers, true, 1, 1000000, "80"),
    FI(hidden, true, 1, 10000000, "8192"),
    FI(heads, true, 1, 100000, "64"),
    FI(kv_heads, false, 0, 100000, "8"),
    FI(head_dim, false, 0, 100000, "128"),
    FI(ffn, false, 0, 10000000, "28672"),
    FI(vocab, true, 1, BIG, "128256"),
    FI(vocab_divisible, false, 1, 1000000, "128"),
    FI(max_positions, false, 0, BIG, "8192"),
    FI(type_vocab, false, 0, 1000000, "2"),
    FE(norm, F_NORM, "\"rmsnorm\""),
    FN(norm_eps, "1e-05"),
    FE(norm_layout, F_LAYOUT, "\"sandwich\""),
    FE(act, F_ACT, "\"swiglu\""),
    FE(pos, F_POS, "\"rope\""),
    FN(rotary_pct, "1.0"),
    FN(rope_theta, "500000"),
    FB(qkv_bias),
    FB(proj_bias),
    FB(mlp_bias),
    FB(qk_norm),
    FB(qk_norm_full),
    FB(tied_embeddings),
    FB(embed_norm),
    FB(pooler),
    FB(lm_head),
    FP("hidden_dropout", hidden_dropout, "0.1"),
    FP("attention_dropout", attn_dropout, "0.1"),
    FI(experts, false, 0, 100000, "8"),
    FI(topk, false, 0, 100000, "2"),
    FI(moe_ffn, false, 0, 10000000, "14336"),
    FI(shared_experts, false, 0, 100000, "1"),
    FI(dense_layers, false, 0, 1000000, "3"),
    FI(moe_layer_freq, false, 1, 1000000, "1"),
    FI(q_lora_rank, false, 0, 10000000, "1536"),
    FI(kv_lora_rank, false, 0, 10000000, "512"),
    FI(qk_nope_dim, false, 0, 100000, "128"),
    FI(qk_rope_dim, false, 0, 100000, "64"),
    FI(v_head_dim, false, 0, 100000, "128"),
    FI(mtp_layers, false, 0, 1000, "1"),
    FQI(sliding_window, 0, 1000000000, "128"),
    FQI(full_attn_every, 0, 1000000, "2"),
    FQB(attn_sinks),
    FQB(moe_bias),
    FQB(shared_gate),
};
#define N_FIELDS ((int)(sizeof FIELDS / sizeof FIELDS[0]))

/* ---- writer ---------------------------------------------------------------- */
void model_to_json(const ModelSpec *m, TsBuf *out)
{
    const char *base = (const char *)m;
    ts_buf_printf(out, "{\"format\": \"%s\", \"version\": %d", MODEL_FORMAT_NAME, MODEL_FORMAT_VERSION);
    for (int i = 0; i < N_FIELDS; i++) {
        const Field *f = &FIELDS[i];
        const void *p = base + f->off;
        if (f->quiet && (f->kind == F_INT ? *(const int64_t *)p == 0 : !*(const bool *)p)) continue;
        ts_buf_printf(out, ", \"%s\": ", f->key);
        switch (f->kind) {
        case F_STR: ts_json_escape(out, (const char *)p); break;
        case F_ARCH: ts_buf_printf(out, "\"%s\"", model_arch_name(*(const ModelArch *)p)); break;
        case F_NORM: ts_buf_printf(out, "\"%s\"", model_norm_name(*(const ModelNorm *)p)); break;
        case F_LAYOUT: ts_buf_printf(out, "\"%s\"", model_norm_layout_name(*(const ModelNormLayout *)p)); break;
        case F_ACT: ts_buf_printf(out, "\"%s\"", model_act_name(*(const ModelAct *)p)); break;
        case F_POS: ts_buf_printf(out, "\"%s\"", model_pos_name(*(const ModelPos *)p)); break;
        case F_INT: ts_buf_printf(out, "%lld", (long long)*(const int64_t *)p); break;
        case F_NUM: ts_json_fmt_double(out, *(const double *)p); break;
        case F_BOOL: ts_buf_puts(out, *(const bool *)p ? "true" : "false"); break;
        }
    }
    ts_buf_puts(out, "}");
}

/* ---- reader ---------------------------------------------------------------- */
static const Field *find_field(const char *key)
{
    for (int i = 0; i < N_FIELDS; i++)
        if (strcmp(FIELDS[i].key, key) == 0) return &FIELDS[i];
    return NULL;
}

static TsStatus enum_field(const TsJsonDoc *doc, const Field *f, void *dst, TsError *err)
{
    char s[32] = "";
    TsStatus st = ts_json_str(doc, doc->root, f->key, f->key, f->required, s, sizeof s, err);
    if (st || !s[0]) return st;
    bool ok = false;
    const char *allowed = "";
    switch (f->kind) {
    case F_ARCH:
        ok = model_arch_parse(s, (ModelArch *)dst);
        allowed = "gpt, llama, bert, mixtral, deepseek, gpt_neox, qwen, gemma, phi3, olmo2";
        break;
    case F_NORM: ok = model_norm_parse(s, (ModelNorm *)dst); allowed = "layernorm, rmsnorm"; break;
    case F_LAYOUT:
        ok = model_norm_layout_parse(s, (ModelNormLayout *)dst);
        allowed = "pre, post, reordered, sandwich";
        break;
    case F_ACT: ok = model_act_parse(s, (ModelAct *)dst); allowed = "gelu, swiglu, relu2, geglu"; break;
    default: ok = model_pos_parse(s, (ModelPos *)dst); allowed = "learned, rope, alibi"; break;
    }
    if (ok) return TS_OK;
    int l = 1, c = 1;
    ts_json_locate(doc, f->key, &l, &c);
    ts_err(err, TS_ERR_INPUT, "unknown %s '%s'", f->key, s);
    ts_err_at(err, doc->file, l, c, doc->text);
    ts_err_hint(err, "%s is one of: %s", f->key, allowed);
    return TS_ERR_INPUT;
}

static TsStatus read_field(const TsJsonDoc *doc, const Field *f, ModelSpec *m, TsError *err)
{
    void *dst = (char *)m + f->off;
    json_t *root = doc->root;
    if (err) err->hint[0] = '\0';
    TsStatus st = TS_OK;
    switch (f->kind) {
    case F_STR: st = ts_json_str(doc, root, f->key, f->key, f->required, (char *)dst, f->cap, err); break;
    case F_INT: st = ts_json_int(doc, root, f->key, f->key, f->required, f->min, f->max, (int64_t *)dst, err); break;
    case F_NUM:
        st = ts_json_num(doc, root, f->key, f->key, false, 0.0, f->max ? MODEL_DROPOUT_MAX : 1e12, (double *)dst, err);
        break;
    case F_BOOL: st = ts_json_bool(doc, root, f->key, f->key, false, (bool *)dst, err); break;
    default: return enum_field(doc, f, dst, err);
    }
    if (st && err && !err->hint[0]) ts_err_hint(err, "write it as \"%s\": %s (see docs/models.md)", f->key, f->example);
    return st;
}

static TsStatus check_keys(const TsJsonDoc *doc, TsError *err)
{
    const char *key;
    json_t *v;
    json_object_foreach(doc->root, key, v)
    {
        (void)v;
        if (strcmp(key, "format") == 0 || strcmp(key, "version") == 0 || find_field(key)) continue;
        int l = 1, c = 1;
        ts_json_locate(doc, key, &l, &c);
        ts_err(err, TS_ERR_INPUT, "unknown field '%s' in a model preset", key);
        ts_err_at(err, doc->file, l, c, doc->text);
        const char *best = NULL;
        int bd = 4;
        for (int i = 0; i < N_FIELDS; i++) {
            int d = ts_edit_distance(key, FIELDS[i].key);
            if (d < bd) {
                bd = d;
                best = FIELDS[i].key;
            }
        }
        if (best) ts_err_hint(err, "did you mean '%s'?", best);
        else ts_err_hint(err, "docs/models.md lists the preset fields");
        return TS_ERR_INPUT;
    }
    return TS_OK;
}

static void base_name(const char *path, char *out, size_t cap)
{
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strlen(b);
    if (n >= cap) n = cap - 1;
    memcpy(out, b, n);
    out[n] = '\0';
    char *dot = strrchr(out, '.');
    if (dot && dot != out) *dot = '\0';
}

static TsStatus parse_doc(const TsJsonDoc *doc, ModelSpec *out, TsError *err)
{
    char fmt[64] = "";
    if (ts_json_str(doc, doc->root, "format", "format", true, fmt, sizeof fmt, err)) {
        ts_err_hint(err, "a preset starts with \"format\": \"%s\", \"version\": %d", MODEL_FORMAT_NAME,
                    MODEL_FORMAT_VERSION);
        return TS_ERR_INPUT;
    }
    if (strcmp(fmt, MODEL_FORMAT_NAME) != 0) {
        int l = 1, c = 1;
        ts_json_locate(doc, "format", &l, &c);
        ts_err(err, TS_ERR_INPUT, "unknown format '%s'", fmt);
        ts_err_at(err, doc->file, l, c, doc->text);
        ts_err_hint(err, "model presets have \"format\": \"%s\"", MODEL_FORMAT_NAME);
        return TS_ERR_INPUT;
    }
    int64_t ver = 0;
    if (ts_json_int(doc, doc->root, "version", "version", true, 1, 1000000, &ver, err)) return TS_ERR_INPUT;
    if (ver != MODEL_FORMAT_VERSION) {
        int l = 1, c = 1;
        ts_json_locate(doc, "version", &l, &c);
        ts_err(err, TS_ERR_INPUT, "unsupported %s version %lld", MODEL_FORMAT_NAME, (long long)ver);
        ts_err_at(err, doc->file, l, c, doc->text);
        ts_err_hint(err, "this trainsim reads version %d", MODEL_FORMAT_VERSION);
        return TS_ERR_INPUT;
    }
    TsStatus st = check_keys(doc, err);
    if (st) return st;
    ModelArch arch = MODEL_ARCH_GPT;
    const Field *af = find_field("arch");
    if ((st = enum_field(doc, af, &arch, err))) return st;
    model_defaults(out, arch);
    for (int i = 0; i < N_FIELDS; i++)
        if ((st = read_field(doc, &FIELDS[i], out, err))) return st;
    if (!out->name[0]) base_name(doc->file, out->name, sizeof out->name);
    return TS_OK;
}

TsStatus model_parse_preset_json(const char *path, ModelSpec *out, ModelKnown *known, TsError *err)
{
    TsJsonDoc doc;
    TsStatus st = ts_json_load(&doc, path, err);
    if (st == TS_OK) st = parse_doc(&doc, out, err);
    ts_json_free(&doc);
    if (st == TS_OK && known) *known = (ModelKnown){true, true, true, true, true, true, true, true, false};
    return st;
}

/* ---- the preset directory ------------------------------------------------------ */
int model_preset_names(char names[][64], int cap) { return ts_data_names("models", names, cap); }

int model_preset_similar(const char *name, char out[][64], int cap)
{
    return ts_data_similar("models", name, out, cap);
}

TsStatus model_preset(const char *name, ModelSpec *out, TsError *err)
{
    char path[1200];
    if (!ts_data_path("models", name, path, sizeof path)) {
        ts_err(err, TS_ERR_INPUT, "unknown model preset '%s'", name);
        char sim[5][64];
        int k = model_preset_similar(name, sim, 5);
        if (k == 0) {
            ts_err_hint(err, "'trainsim models' lists the presets; a file path must name an existing file");
        } else {
            char list[400] = "";
            for (int i = 0; i < k; i++) {
                strcat(list, sim[i]);
                if (i + 1 < k) strcat(list, ", ");
            }
            ts_err_hint(err, "did you mean %s? ('trainsim models' lists all presets)", list);
        }
        return TS_ERR_INPUT;
    }
    TsStatus st = model_parse_preset_json(path, out, NULL, err);
    if (st) return st;
    model_finalize(out);
    return model_validate(out, err);
}
