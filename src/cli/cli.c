/* Option parsing, help text and output helpers shared by every command. */
#include "cli.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

void cli_add(CliSpec *s, const char *name, CliKind kind, void *dst, const char *metavar,
             const char *help)
{
    if (s->n >= CLI_MAX_OPTS) abort(); /* a programming error, caught by any test */
    s->opts[s->n++] = (CliOpt){name, kind, dst, metavar, help, NULL};
}

static CliOpt *find(CliSpec *s, const char *name, size_t len)
{
    for (int i = 0; i < s->n; i++)
        if (strlen(s->opts[i].name) == len && strncmp(s->opts[i].name, name, len) == 0)
            return &s->opts[i];
    return NULL;
}

bool cli_seen(const CliSpec *s, const char *name)
{
    for (int i = 0; i < s->n; i++)
        if (strcmp(s->opts[i].name, name) == 0) return s->seen[i];
    return false;
}

int cli_only(const CliSpec *s, const char *const ok[], const char *why, const char *hint)
{
    for (int i = 0; i < s->n; i++) {
        if (!s->seen[i]) continue;
        bool allowed = false;
        for (int k = 0; ok[k] && !allowed; k++) allowed = strcmp(s->opts[i].name, ok[k]) == 0;
        if (allowed) continue;
        char list[320] = "";
        for (int k = 1; ok[k]; k++) /* ok[0] is the mode's own option */
            snprintf(list + strlen(list), sizeof list - strlen(list), "%s--%s",
                     k == 1 ? "" : ok[k + 1] ? ", " : " and ", ok[k]);
        TsError e = {.code = TS_ERR_USAGE};
        ts_err(&e, TS_ERR_USAGE, "--%s does not apply with --%s: %s", s->opts[i].name, ok[0], why);
        if (ok[1]) ts_err_hint(&e, "with --%s use only %s; %s", ok[0], list, hint);
        else ts_err_hint(&e, "--%s takes no other option; %s", ok[0], hint);
        return cli_fail(&e);
    }
    return 0;
}

static int usage_err(const CliSpec *s, const char *fmt, const char *a)
{
    fprintf(stderr, "trainsim %s: ", s->cmd);
    fprintf(stderr, fmt, a);
    fprintf(stderr, " (see 'trainsim %s --help')\n", s->cmd);
    return 2;
}

/* "unknown option", with the closest option name when one is a typo away. */
static int unknown_option(const CliSpec *s, const char *name, size_t len)
{
    const char *best = NULL;
    int bd = 3; /* a typo: at most two edits away */
    char key[64];
    if (len < sizeof key) {
        memcpy(key, name, len);
        key[len] = '\0';
        for (int i = 0; i < s->n; i++) {
            int d = ts_edit_distance(s->opts[i].name, key);
            if (d < bd) bd = d, best = s->opts[i].name;
        }
    }
    fprintf(stderr, "trainsim %s: unknown option '--%.*s'", s->cmd, (int)(len < 100 ? len : 100), name);
    if (best) fprintf(stderr, "; did you mean '--%s'?", best);
    fprintf(stderr, " (see 'trainsim %s --help')\n", s->cmd);
    return 2;
}

int cli_parse(CliSpec *s, int argc, char **argv)
{
    memset(s->seen, 0, sizeof s->seen);
    s->n_positional = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            cli_print_help(s, stdout);
            return -1;
        }
        if (strncmp(a, "--", 2) != 0 || a[2] == '\0') {
            if (a[0] == '-' && a[1] != '\0')
                return usage_err(s, "unknown option '%s'", a);
            if (s->n_positional >= s->max_positional)
                return usage_err(s, "unexpected argument '%s'", a);
            s->positional[s->n_positional++] = a;
            continue;
        }
        const char *name = a + 2;
        const char *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        CliOpt *o = find(s, name, len);
        if (!o) return unknown_option(s, name, len);
        s->seen[o - s->opts] = true;
        if (o->seen) *o->seen = true;
        if (o->kind == CLI_FLAG || o->kind == CLI_NOFLAG) {
            if (eq) return usage_err(s, "option '--%s' takes no value", o->name);
            *(bool *)o->dst = (o->kind == CLI_FLAG);
            continue;
        }
        const char *val = eq ? eq + 1 : NULL;
        if (!val) {
            if (i + 1 >= argc) return usage_err(s, "option '--%s' needs a value", o->name);
            val = argv[++i];
        }
        char msg[200];
        switch (o->kind) {
        case CLI_INT:
            if (!ts_parse_i64(val, (int64_t *)o->dst)) {
                snprintf(msg, sizeof msg, "option '--%s' expects an integer, got '%.60s'", o->name, val);
                return usage_err(s, "%s", msg);
            }
            break;
        case CLI_DOUBLE:
            if (!ts_parse_f64(val, (double *)o->dst)) {
                snprintf(msg, sizeof msg, "option '--%s' expects a number, got '%.60s'", o->name, val);
                return usage_err(s, "%s", msg);
            }
            break;
        case CLI_STR:
            *(const char **)o->dst = val;
            break;
        default:
            break;
        }
    }
    return 0;
}

void cli_print_help(const CliSpec *s, FILE *fp)
{
    fprintf(fp, "usage: %s\n\n%s\n\noptions:\n", s->usage, s->summary);
    for (int i = 0; i < s->n; i++) {
        const CliOpt *o = &s->opts[i];
        char left[80];
        if (o->kind == CLI_FLAG || o->kind == CLI_NOFLAG)
            snprintf(left, sizeof left, "--%s", o->name);
        else
            snprintf(left, sizeof left, "--%s %s", o->name, o->metavar ? o->metavar : "X");
        fprintf(fp, "  %-28s %s\n", left, o->help);
    }
    fprintf(fp, "  %-28s %s\n", "--help", "show this help");
}

int cli_fail(const TsError *err)
{
    TsBuf b = {0};
    ts_err_format(err, &b);
    if (b.data) fputs(b.data, stderr);
    ts_buf_free(&b);
    return err->code ? (int)err->code : 1;
}

int cli_emit(const char *path, const TsBuf *text)
{
    const char *data = text->data ? text->data : "";
    if (text->oom) {
        fprintf(stderr, "trainsim: error: out of memory while formatting output\n");
        return 1;
    }
    if (!path || strcmp(path, "-") == 0) {
        fwrite(data, 1, text->len, stdout);
        return ferror(stdout) ? 1 : 0;
    }
    TsError err = {0};
    if (ts_write_file_atomic(path, data, text->len, &err) != TS_OK) return cli_fail(&err);
    return 0;
}

/* ---- model option group ------------------------------------------------------ */
/* The model size flags: ModelOverrides uses -1 for "not given", so the CLI
 * starts them at OV_UNSET and can tell a given negative value from none. */
#define OV_UNSET INT64_MIN
#define OV_UNSET_P (-HUGE_VAL) /* the dropout flags (doubles) */
#define OV_FIELDS(X)                                                                          \
    X("layers", layers) X("hidden", hidden) X("heads", heads) X("kv-heads", kv_heads)         \
    X("head-dim", head_dim) X("ffn", ffn) X("vocab", vocab) X("max-positions", max_positions) \
    X("experts", experts) X("topk", topk) X("moe-ffn", moe_ffn)                               \
    X("shared-experts", shared_experts) X("dense-layers", dense_layers)

void cli_model_init(CliModel *cm)
{
    memset(cm, 0, sizeof *cm);
    model_overrides_init(&cm->ov);
#define X(flag, f) cm->ov.f = OV_UNSET;
    OV_FIELDS(X)
#undef X
    cm->ov.hidden_dropout = cm->ov.attn_dropout = OV_UNSET_P;
}

void cli_model_add(CliSpec *s, CliModel *cm)
{
    cli_add(s, "model", CLI_STR, &cm->model, "M", "preset name, HF config.json, module tree or parameter table");
    cli_add(s, "arch", CLI_STR, &cm->arch, "A", "gpt|llama|bert|mixtral|deepseek (build from flags)");
    cli_add(s, "layers", CLI_INT, &cm->ov.layers, "N", "transformer layers");
    cli_add(s, "hidden", CLI_INT, &cm->ov.hidden, "N", "hidden size");
    cli_add(s, "heads", CLI_INT, &cm->ov.heads, "N", "attention (query) heads");
    cli_add(s, "kv-heads", CLI_INT, &cm->ov.kv_heads, "N", "key/value heads (GQA/MQA)");
    cli_add(s, "head-dim", CLI_INT, &cm->ov.head_dim, "N", "per-head dimension");
    cli_add(s, "ffn", CLI_INT, &cm->ov.ffn, "N", "MLP intermediate size");
    cli_add(s, "vocab", CLI_INT, &cm->ov.vocab, "N", "vocabulary size (before padding)");
    cli_add(s, "max-positions", CLI_INT, &cm->ov.max_positions, "N", "maximum sequence length");
    cli_add(s, "experts", CLI_INT, &cm->ov.experts, "N", "routed experts (MoE)");
    cli_add(s, "topk", CLI_INT, &cm->ov.topk, "N", "experts per token");
    cli_add(s, "moe-ffn", CLI_INT, &cm->ov.moe_ffn, "N", "intermediate size of one expert");
    cli_add(s, "shared-experts", CLI_INT, &cm->ov.shared_experts, "N", "shared experts per MoE layer");
    cli_add(s, "dense-layers", CLI_INT, &cm->ov.dense_layers, "N", "leading dense layers before MoE");
    cli_add(s, "hidden-dropout", CLI_DOUBLE, &cm->ov.hidden_dropout, "P",
            "dropout after attention, MLP and embeddings (0: none, no kernel)");
    cli_add(s, "attn-dropout", CLI_DOUBLE, &cm->ov.attn_dropout, "P", "dropout on the attention probabilities");
    cli_add(s, "naming", CLI_STR, &cm->naming, "FW", "module names of megatron|hf|deepspeed");
}

int cli_model_load(CliModel *cm, const char *default_model, ModelSpec *out)
{
    TsError err = {0};
    if (cm->arch) {
        if (!model_arch_parse(cm->arch, &cm->ov.arch)) {
            fprintf(stderr,
                    "trainsim: unknown architecture '%s' for --arch (expected gpt, llama, bert, mixtral or deepseek)\n",
                    cm->arch);
            return 2;
        }
        cm->ov.arch_set = true;
    }
    /* A negative size is bad input (exit 3), not "not given". */
#define X(flag, f)                                                                              \
    if (cm->ov.f == OV_UNSET) {                                                                 \
        cm->ov.f = -1;                                                                          \
    } else if (cm->ov.f < 0) {                                                                  \
        ts_err(&err, TS_ERR_INPUT, "invalid model: --%s must not be negative, got %lld", flag,   \
               (long long)cm->ov.f);                                                            \
        return cli_fail(&err);                                                                  \
    }
    OV_FIELDS(X)
#undef X
    double *drop[2] = {&cm->ov.hidden_dropout, &cm->ov.attn_dropout};
    for (int i = 0; i < 2; i++) {
        if (*drop[i] == OV_UNSET_P) *drop[i] = -1;
        else if (!(*drop[i] >= 0 && *drop[i] <= MODEL_DROPOUT_MAX)) {
            ts_err(&err, TS_ERR_INPUT, "invalid model: --%s must be a probability from 0 (none) to 0.99, got %g",
                   i ? "attn-dropout" : "hidden-dropout", *drop[i]);
            return cli_fail(&err);
        }
    }
    const char *src = cm->model;
    if (!src && !cm->ov.arch_set) src = default_model;
    if (model_load(src, &cm->ov, out, &err) != TS_OK) return cli_fail(&err);
    return 0;
}

int cli_naming(const CliModel *cm, const ModelSpec *m, GraphNaming *out)
{
    const char *n = cm->naming ? cm->naming : model_arch_default_naming(m->arch);
    if (!graph_naming_parse(n, out)) {
        fprintf(stderr, "trainsim: unknown naming '%s' for --naming (expected megatron, hf or deepspeed)\n", n);
        return 2;
    }
    return 0;
}
