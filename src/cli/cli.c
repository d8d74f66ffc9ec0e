/* Option parsing, help text and output helpers shared by every command. */
#include "cli.h"
#include "cli_recipe.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the range of every numeric option ---------------------------------------
 * By name: an option means the same in every command that takes it, so its
 * range is written once. Far beyond any real job, and small enough that the
 * products the plan forms (tp*pp*cp*dp, global batch x seq) stay exact in a
 * double and far from int64 overflow:
 *   GPUs 2^24 (16 M; the largest clusters built hold ~10^5), parallel degrees
 *   and micro-batches 2^20, the global batch 2^30 sequences, a sequence 2^24
 *   tokens; the model flags take model_validate's limits (MODEL_MAX_*).
 * Sizes (CLI_BYTES) are in bytes; `unit` is the bytes a bare number counts. */
typedef struct CliLimit {
    const char *name; /* "gpus" */
    double lo, hi;    /* inclusive: 1 .. 16777216 */
    double unit;      /* CLI_BYTES: bytes per bare number (1, or 1e6 for --bucket-mb); else 0 */
} CliLimit;

#define P2(n) ((double)(1LL << (n)))
static const CliLimit LIMITS[] = {
    /* the job (hw group, or the plan group where there is none; hw --group) */
    {"gpus", 1, P2(24), 0}, {"group", 2, P2(24), 0}, {"group-nodes", 1, P2(24), 0},
    {"rank", 0, P2(24) - 1, 0}, /* params: a global rank */
    /* the plan */
    {"tp", 1, P2(20), 0}, {"pp", 1, P2(20), 0}, {"vpp", 1, P2(20), 0}, {"vpp-group", 1, P2(30), 0}, {"dp", 1, P2(20), 0},
    {"cp", 1, P2(20), 0}, {"ep", 1, P2(20), 0}, {"etp", 1, P2(20), 0},
    {"zero", 0, 3, 0}, {"dp-shard", 0, P2(20), 0},
    {"recompute-layers", 0, MODEL_MAX_LAYERS, 0}, /* 0: all the chunk's layers */
    {"micro-batch", 1, P2(20), 0}, {"batch", 1, P2(20), 0}, /* profile's micro-batch */
    {"global-batch", 1, P2(30), 0},
    {"seq", 1, P2(24), 0},
    {"shampoo-blocks", 1, P2(20), 0},
    {"moe-node-limit", 1, P2(20), 0}, {"moe-imbalance", 1, 1e4, 0}, {"moe-capacity-factor", 1e-3, 1e4, 0},
    /* the model flags */
    {"layers", 1, MODEL_MAX_LAYERS, 0}, {"hidden", 1, MODEL_MAX_WIDTH, 0}, {"heads", 1, MODEL_MAX_HEADS, 0},
    {"kv-heads", 1, MODEL_MAX_HEADS, 0}, {"head-dim", 1, MODEL_MAX_HEADS, 0}, {"ffn", 1, MODEL_MAX_WIDTH, 0},
    {"vocab", 1, MODEL_MAX_VOCAB, 0}, {"max-positions", 1, MODEL_MAX_POSITIONS, 0},
    {"experts", 0, MODEL_MAX_HEADS, 0}, {"topk", 1, MODEL_MAX_HEADS, 0}, {"moe-ffn", 1, MODEL_MAX_WIDTH, 0},
    {"shared-experts", 0, MODEL_MAX_HEADS, 0}, {"dense-layers", 0, MODEL_MAX_LAYERS, 0},
    {"mtp-layers", 0, 16, 0},
    {"hidden-dropout", 0, MODEL_DROPOUT_MAX, 0}, {"attn-dropout", 0, MODEL_DROPOUT_MAX, 0},
    /* runtime behaviour (cli_sim.h) */
    {"bucket-mb", 1, 1e12, 1e6}, /* 1 B .. 1 TB, a bare number in MB */
    {"overlap-slowdown", 0, 1, 0}, {"gpu-spread", 0, 1, 0}, {"pair-sm-share", 0, 0.9, 0},
    /* hw: one collective */
    {"bytes", 1, P2(50), 1}, /* 1 B .. 1 PiB */
    /* sweep: the ranges searched when no list is given, the ranking, threads */
    {"max-tp", 1, P2(20), 0}, {"max-pp", 1, P2(20), 0}, {"max-vpp", 1, P2(20), 0},
    {"max-cp", 1, P2(20), 0}, {"max-ep", 1, P2(20), 0}, {"max-micro-batch", 1, P2(20), 0},
    {"top", 1, 100000, 0}, {"jobs", 1, 1024, 0},
    {"headroom", 0, 1e15, 1073741824.0}, /* sweep, memory, simulate: memory kept free per GPU; a bare number in GiB */
    /* profile: the printout */
    {"module-depth", -1, 1024, 0}, /* -1: all levels but the innermost */
    {"top-modules", 1, 100000, 0}, {"profile-step", 0, P2(31) - 1, 0},
    /* workload */
    {"chakra-dims", 0, 16, 0},
    /* a whole training run (cli_train.h) */
    {"train-tokens", 1, 1e18, 0}, {"price-per-gpu-hour", 0, 1e6, 0}, {"gpu-mtbf-hours", 1, 1e9, 0},
    {"storage-gbps", 1e-3, 1e7, 0}, {"restart-minutes", 0, 1e5, 0},
};
#undef P2

static const CliLimit *limit_of(const char *name)
{
    for (size_t i = 0; i < sizeof LIMITS / sizeof LIMITS[0]; i++)
        if (strcmp(LIMITS[i].name, name) == 0) return &LIMITS[i];
    return NULL;
}

static bool numeric(CliKind k) { return k == CLI_INT || k == CLI_DOUBLE || k == CLI_BYTES; }

static CliOpt *find(CliSpec *s, const char *name, size_t len);

void cli_add(CliSpec *s, const char *name, CliKind kind, void *dst, const char *metavar,
             const char *help)
{
    if (s->n >= CLI_MAX_OPTS) abort(); /* a programming error, caught by any test */
    const CliLimit *lim = numeric(kind) ? limit_of(name) : NULL;
    if (numeric(kind) && !lim) abort(); /* every number has a range: add a row to LIMITS */
    s->opts[s->n++] = (CliOpt){name, kind, dst, metavar, help, NULL, lim, NULL};
}

void cli_add_check(CliSpec *s, const char *name, CliCheck check)
{
    CliOpt *o = find(s, name, strlen(name));
    if (!o || o->kind != CLI_STR) abort(); /* a programming error, caught by any test */
    o->check = check;
}

/* A size for a hint: the largest unit that divides it ("1 PiB", "1 TB", "4 B"). */
static void size_str(double b, char *out, size_t cap)
{
    static const struct { const char *name; double bytes; } U[] = {
        {"PiB", 0x1p50}, {"PB", 1e15}, {"TiB", 0x1p40}, {"TB", 1e12}, {"GiB", 0x1p30},
        {"GB", 1e9},     {"MiB", 0x1p20}, {"MB", 1e6}, {"KiB", 0x1p10}, {"kB", 1e3},
    };
    for (size_t i = 0; i < sizeof U / sizeof U[0]; i++)
        if (b >= U[i].bytes && fmod(b, U[i].bytes) == 0) {
            snprintf(out, cap, "%.15g %s", b / U[i].bytes, U[i].name);
            return;
        }
    snprintf(out, cap, "%.15g B", b);
}

/* A numeric option's value into o->dst, within its range; else the usage
 * error naming the option and the range in *e. */
static TsStatus set_number(const CliOpt *o, const char *val, TsError *e)
{
    const CliLimit *l = o->lim;
    double v = 0;
    int64_t i = 0;
    bool ok, overflow = false;
    if (o->kind == CLI_INT) {
        ok = ts_parse_i64(val, &i);
        v = (double)i;
        const char *d = val + (*val == '+' || *val == '-');
        overflow = !ok && *d && d[strspn(d, "0123456789")] == '\0'; /* digits past int64 */
    } else if (o->kind == CLI_DOUBLE) {
        ok = ts_parse_f64(val, &v);
        char *end;
        errno = 0;
        double d = strtod(val, &end);
        overflow = !ok && *val && !*end && errno == ERANGE && fabs(d) == HUGE_VAL; /* 1e999 */
    } else {
        ok = ts_parse_bytes(val, l->unit, &v);
    }
    const char *what = o->kind == CLI_INT ? "an integer" : o->kind == CLI_DOUBLE ? "a number" : "a size";
    TsStatus st = TS_OK;
    if (!ok && !overflow) st = ts_err(e, TS_ERR_USAGE, "--%s '%.60s' is not %s", o->name, val, what);
    else if (overflow || !(v >= l->lo && v <= l->hi))
        st = ts_err(e, TS_ERR_USAGE, "--%s %.60s is out of range", o->name, val);
    if (!st) {
        if (o->kind == CLI_INT) *(int64_t *)o->dst = i;
        else *(double *)o->dst = v;
        return TS_OK;
    }
    if (o->kind == CLI_INT) {
        ts_err_hint(e, "--%s takes an integer from %.0f to %.0f", o->name, l->lo, l->hi);
    } else if (o->kind == CLI_DOUBLE) {
        ts_err_hint(e, "--%s takes a number from %.15g to %.15g", o->name, l->lo, l->hi);
    } else {
        char lo[32], hi[32], unit[32] = "bytes";
        size_str(l->lo, lo, sizeof lo);
        size_str(l->hi, hi, sizeof hi);
        if (l->unit != 1) size_str(l->unit, unit, sizeof unit);
        ts_err_hint(e, "--%s takes a size from %s to %s: a bare number counts %s; units as in 512k, 1.5GB, "
                       "64MiB (k M G T P: 1000^n; Ki Mi Gi Ti Pi: 1024^n)",
                    o->name, lo, hi, l->unit == 1 ? unit : unit + 2 /* "1 MB" -> "MB" */);
    }
    return st;
}

static CliOpt *find(CliSpec *s, const char *name, size_t len)
{
    for (int i = 0; i < s->n; i++)
        if (strlen(s->opts[i].name) == len && strncmp(s->opts[i].name, name, len) == 0)
            return &s->opts[i];
    return NULL;
}

CliOpt *cli_find(CliSpec *s, const char *name) { return find(s, name, strlen(name)); }

TsStatus cli_set(CliSpec *s, CliOpt *o, const char *val, TsError *err)
{
    s->seen[o - s->opts] = true;
    if (o->seen) *o->seen = true;
    if (o->kind == CLI_FLAG || o->kind == CLI_NOFLAG) *(bool *)o->dst = (o->kind == CLI_FLAG);
    else if (o->kind == CLI_STR) {
        if (o->check && val && o->check(o->name, val, err) != TS_OK) return TS_ERR_USAGE;
        *(const char **)o->dst = val;
    }
    else if (o->kind != CLI_RECIPE) return set_number(o, val, err);
    return TS_OK;
}

void cli_unset_flag(CliSpec *s, CliOpt *o)
{
    s->seen[o - s->opts] = false;
    if (o->seen) *o->seen = false;
    *(bool *)o->dst = o->kind != CLI_FLAG; /* FLAG: off; NOFLAG: its dst's "on" */
}

const char *cli_store(CliSpec *s, const char *text)
{
    size_t n = strlen(text) + 1;
    if (n > sizeof s->store - s->store_used) return NULL;
    char *p = s->store + s->store_used;
    memcpy(p, text, n);
    s->store_used += n;
    return p;
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
    s->store_used = 0;
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
        bool flag = o->kind == CLI_FLAG || o->kind == CLI_NOFLAG;
        if (flag && eq) return usage_err(s, "option '--%s' takes no value", o->name);
        const char *val = eq ? eq + 1 : NULL;
        if (!flag && !val) {
            if (i + 1 >= argc) return usage_err(s, "option '--%s' needs a value", o->name);
            val = argv[++i];
        }
        /* an option given again overrides: the last one wins */
        TsError e = {0};
        if (cli_set(s, o, val, &e) != TS_OK) return cli_fail(&e);
        int rc = o->kind == CLI_RECIPE ? cli_recipe_apply(s, val) : 0;
        if (rc) return rc;
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
/* ModelOverrides uses -1 for "not given"; the flags' ranges (LIMITS) start at
 * 0 or 1, so a given value is never taken for none. */
void cli_model_init(CliModel *cm)
{
    memset(cm, 0, sizeof *cm);
    model_overrides_init(&cm->ov);
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
    cli_add(s, "mtp-layers", CLI_INT, &cm->ov.mtp_layers, "N",
            "multi-token-prediction modules trained on the last stage (0: none)");
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
                    "trainsim: unknown architecture '%s' for --arch (expected gpt, llama, bert, mixtral, deepseek, "
                    "gpt_neox, qwen, gemma, phi3 or olmo2)\n",
                    cm->arch);
            return 2;
        }
        cm->ov.arch_set = true;
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
