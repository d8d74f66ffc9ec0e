/* Per-parameter tables -> ModelSpec (shape only) and the TP degree.
 *
 * Two variants, ';'-separated, one parameter tensor per row, optional header:
 *   name;module;shape;partitioning_ranks;precs   (DeepSpeed GPT2ModelPipe stage
 *       with a distributed Shampoo optimizer, seeds/deepspeed_pipe_param_partition.csv)
 *   name;module;shape;parameters                 (parameters = product of shape)
 * Shapes are per tensor-parallel rank: "(768, 1024)", "(1024,)".
 *
 * Inference (H hidden, F ffn, V vocab, TP tensor parallel degree):
 *   word_embeddings (V_pad/TP, H)           -> H, V_pad/TP
 *   position_embeddings (P, H)              -> learned positions, P rows
 *   attention.dense / linear_proj (H, A*D/TP), assuming A*D = H -> TP = H / cols;
 *       cross-checked with query_key_value rows = 3H/TP (MHA)
 *   dense_h_to_4h / linear_fc1 (F/TP, H)    -> F (2F/TP rows: gated SwiGLU)
 *   V = 50257 (GPT-2 BPE) when it pads to V_pad under 128*TP, else V_pad;
 *   1-D tensors of linears -> biases; two rows per norm -> LayerNorm.
 * Layers: the distinct layer indices present (a pipeline stage may hold a
 * slice); heads are not in the table and must come from --heads. */
#include "trainsim/model.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define TAB_MAX_DIMS 4

typedef struct TRow {
    const char *name; size_t name_len;
    const char *module; size_t module_len;
    int64_t shape[TAB_MAX_DIMS];
    int ndim;
    int line;
} TRow;

typedef struct TabParse {
    const char *path, *text;
    TsError *err;
} TabParse;

static TsStatus tab_err(const TabParse *p, int line, int col, const char *hint, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static TsStatus tab_err(const TabParse *p, int line, int col, const char *hint, const char *fmt, ...)
{
    char msg[TS_ERR_MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    ts_err(p->err, TS_ERR_INPUT, "%s", msg);
    ts_err_at(p->err, p->path, line, col, p->text);
    if (hint) ts_err_hint(p->err, "%s", hint);
    return TS_ERR_INPUT;
}

static bool parse_uint(const char *s, size_t n, int64_t *out)
{
    if (n == 0 || n > 15) return false;
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return false;
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return true;
}

/* "(a, b)" / "(a,)" -> dims. col0 is the 1-based column of s[0]. */
static TsStatus parse_shape(const TabParse *p, int line, int col0, const char *s, size_t n, TRow *r)
{
    static const char *hint = "a shape is a tuple of positive integers: (768, 1024) or (1024,)";
    while (n && s[n - 1] == ' ') n--;
    size_t i = 0;
    while (i < n && s[i] == ' ') i++;
    if (i >= n || s[i] != '(') return tab_err(p, line, col0 + (int)i, hint, "shape must start with '('");
    if (s[n - 1] != ')') return tab_err(p, line, col0 + (int)n, hint, "shape must end with ')'");
    i++;
    r->ndim = 0;
    int64_t elems = 1; /* the element count, checked against int64 as the dimensions come */
    while (i < n - 1) {
        while (i < n - 1 && s[i] == ' ') i++;
        if (i >= n - 1) break;
        size_t b = i;
        while (i < n - 1 && s[i] != ',' && s[i] != ' ') i++;
        int64_t v;
        if (!parse_uint(s + b, i - b, &v) || v <= 0) {
            char tok[32];
            size_t tl = i - b < sizeof tok - 1 ? i - b : sizeof tok - 1;
            memcpy(tok, s + b, tl);
            tok[tl] = '\0';
            return tab_err(p, line, col0 + (int)b, hint, "shape dimension '%s' is not a positive integer", tok);
        }
        if (r->ndim == TAB_MAX_DIMS) return tab_err(p, line, col0 + (int)b, hint, "shape has more than %d dimensions", TAB_MAX_DIMS);
        if (__builtin_mul_overflow(elems, v, &elems))
            return tab_err(p, line, col0 + (int)b, "a tensor's elements must fit a 64-bit count: is a dimension mistyped?",
                           "shape has more elements than a 64-bit count holds");
        r->shape[r->ndim++] = v;
        while (i < n - 1 && s[i] == ' ') i++;
        if (i < n - 1 && s[i] != ',') return tab_err(p, line, col0 + (int)i, hint, "expected ',' between shape dimensions");
        if (i < n - 1) i++;
    }
    if (r->ndim == 0) return tab_err(p, line, col0 + (int)i - 1, hint, "empty shape");
    return TS_OK;
}

static int split(const char *s, size_t n, const char *cols[8], size_t lens[8])
{
    int k = 0;
    size_t b = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || s[i] == ';') {
            if (k < 8) {
                cols[k] = s + b;
                lens[k] = i - b;
            }
            k++;
            b = i + 1;
        }
    }
    return k;
}

static const char *HDR5 = "name;module;shape;partitioning_ranks;precs";
static const char *HDR4 = "name;module;shape;parameters";

/* Parse every row into rows[]; *ncols is 4 or 5. */
static TsStatus tab_rows(const TabParse *p, TRow **rows_out, int *nrows_out)
{
    int cap = 256, n = 0, ncols = 0;
    TRow *rows = malloc((size_t)cap * sizeof *rows);
    if (!rows) return ts_err(p->err, TS_ERR_INTERNAL, "out of memory");
    const char *s = p->text;
    int line = 0;
    TsStatus st = TS_OK;
    while (*s && st == TS_OK) {
        line++;
        const char *eol = strchr(s, '\n');
        size_t len = eol ? (size_t)(eol - s) : strlen(s);
        const char *next = eol ? eol + 1 : s + len;
        if (len && s[len - 1] == '\r') len--;
        size_t sp = 0;
        while (sp < len && (s[sp] == ' ' || s[sp] == '\t')) sp++;
        if (sp == len) {
            s = next;
            continue;
        }
        if (ncols == 0 && len >= 5 && strncmp(s, "name;", 5) == 0) {
            if (len == strlen(HDR5) && strncmp(s, HDR5, len) == 0) ncols = 5;
            else if (len == strlen(HDR4) && strncmp(s, HDR4, len) == 0) ncols = 4;
            else {
                char hint[200];
                snprintf(hint, sizeof hint, "expected '%s' or '%s'", HDR5, HDR4);
                st = tab_err(p, line, 1, hint, "unknown parameter-table header");
            }
            s = next;
            continue;
        }
        const char *cols[8];
        size_t lens[8];
        int k = split(s, len, cols, lens);
        if (ncols == 0) ncols = (k == 4 || k == 5) ? k : 5;
        if (k != ncols) {
            int col = (int)len + 1;
            if (k > ncols) col = (int)(cols[ncols] - s); /* the separator that starts the extra column */
            char hint[200];
            snprintf(hint, sizeof hint, "each row is '%s'", ncols == 5 ? HDR5 : HDR4);
            st = tab_err(p, line, col, hint, "expected %d ';'-separated columns, found %d", ncols, k);
            break;
        }
        if (n == cap) {
            TRow *nr = realloc(rows, (size_t)(cap *= 2) * sizeof *rows);
            if (!nr) {
                st = ts_err(p->err, TS_ERR_INTERNAL, "out of memory");
                break;
            }
            rows = nr;
        }
        TRow *r = &rows[n];
        memset(r, 0, sizeof *r);
        r->line = line;
        r->name = cols[0];
        r->name_len = lens[0];
        r->module = cols[1];
        r->module_len = lens[1];
        if (lens[0] == 0 || memchr(cols[0], ' ', lens[0])) {
            st = tab_err(p, line, 1, "the first column is the parameter name, e.g. module.2.mlp.dense_h_to_4h",
                         "parameter name is empty or has spaces");
            break;
        }
        if ((st = parse_shape(p, line, (int)(cols[2] - s) + 1, cols[2], lens[2], r))) break;
        int64_t v;
        if (ncols == 5) {
            if (!parse_uint(cols[3], lens[3], &v)) {
                st = tab_err(p, line, (int)(cols[3] - s) + 1, "partitioning_ranks is the data-parallel rank that owns the tensor, e.g. 0",
                             "partitioning_ranks must be a non-negative integer");
                break;
            }
            if (lens[4] < 2 || cols[4][0] != '[' || cols[4][lens[4] - 1] != ']') {
                st = tab_err(p, line, (int)(cols[4] - s) + 1, "precs is a list: [] or [torch.Size([384, 384]), ...]",
                             "precs must be a '[...]' list");
                break;
            }
        } else {
            int64_t prod = 1;
            for (int d = 0; d < r->ndim; d++) prod *= r->shape[d];
            if (!parse_uint(cols[3], lens[3], &v)) {
                st = tab_err(p, line, (int)(cols[3] - s) + 1, "the last column is the element count of the tensor",
                             "parameters must be a non-negative integer");
                break;
            }
            if (v != prod) {
                st = tab_err(p, line, (int)(cols[3] - s) + 1, "the last column is the product of the shape",
                             "parameters %lld does not match the shape (%lld elements)", (long long)v, (long long)prod);
                break;
            }
        }
        n++;
        s = next;
    }
    if (st == TS_OK && n == 0) st = tab_err(p, line > 0 ? line : 1, 1, "expected rows of 'name;module;shape;...'", "parameter table has no rows");
    if (st) {
        free(rows);
        return st;
    }
    *rows_out = rows;
    *nrows_out = n;
    return TS_OK;
}

static bool contains(const char *s, size_t n, const char *needle)
{
    size_t nl = strlen(needle);
    for (size_t i = 0; i + nl <= n; i++)
        if (memcmp(s + i, needle, nl) == 0) return true;
    return false;
}
static bool has(const TRow *r, const char *needle) { return contains(r->name, r->name_len, needle); }

/* Name without a trailing ".weight" / ".bias". */
static size_t stem_len(const TRow *r)
{
    if (r->name_len > 7 && memcmp(r->name + r->name_len - 7, ".weight", 7) == 0) return r->name_len - 7;
    if (r->name_len > 5 && memcmp(r->name + r->name_len - 5, ".bias", 5) == 0) return r->name_len - 5;
    return r->name_len;
}

/* Layer index: "module.<N>." (DeepSpeed pipe) or ".layers.<N>." (Megatron); -1 if none. */
static int64_t layer_of(const TRow *r)
{
    const char *pat[] = {"module.", "layers."};
    for (int k = 0; k < 2; k++) {
        size_t pl = strlen(pat[k]);
        for (size_t i = 0; i + pl < r->name_len; i++) {
            if (memcmp(r->name + i, pat[k], pl) != 0 || (i > 0 && r->name[i - 1] != '.')) continue;
            size_t b = i + pl, e = b;
            while (e < r->name_len && r->name[e] >= '0' && r->name[e] <= '9') e++;
            int64_t v;
            if (e > b && e < r->name_len && r->name[e] == '.' && parse_uint(r->name + b, e - b, &v)) return v;
        }
    }
    return -1;
}

typedef struct TabFacts {
    int64_t hidden, vocab_rows, positions, qkv_rows, qkv_in, proj_cols, fc1_rows, fc2_cols;
    int qkv_line, proj_line, fc1_line, fc2_line;
    bool qkv_bias, proj_bias, mlp_bias, rms, layernorm, tied;
    int norm_rows, norm_names; /* rows and distinct norm names in the first layer */
    int64_t lmin, lmax, nlayers;
} TabFacts;

/* A 2-D linear weight (or its bias when 1-D); checks every layer agrees. */
static TsStatus take_linear(const TabParse *p, const TRow *r, int dim, int64_t *val, int *at, bool *bias)
{
    if (r->ndim == 1 || (r->name_len > 5 && memcmp(r->name + r->name_len - 5, ".bias", 5) == 0)) {
        *bias = true;
        return TS_OK;
    }
    if (r->ndim != 2) return tab_err(p, r->line, 1, "a linear weight is (out, in)", "expected a 2-D shape for %.*s", (int)r->name_len, r->name);
    if (*val && *val != r->shape[dim]) {
        char hint[96];
        snprintf(hint, sizeof hint, "line %d has %lld", *at, (long long)*val);
        return tab_err(p, r->line, 1, hint, "%.*s differs from the same tensor in another layer", (int)r->name_len, r->name);
    }
    *val = r->shape[dim];
    *at = r->line;
    return TS_OK;
}

static TsStatus tab_facts(const TabParse *p, const TRow *rows, int n, TabFacts *f)
{
    memset(f, 0, sizeof *f);
    f->lmin = -1;
    int64_t first_layer = -1;
    const char *seen_norm[16];
    size_t seen_len[16];
    int nseen = 0;
    /* distinct layers: mark in a small bitmap over [0, 4096) */
    static const int64_t LMAX = 4096;
    unsigned char *mark = calloc((size_t)LMAX, 1);
    if (!mark) return ts_err(p->err, TS_ERR_INTERNAL, "out of memory");
    TsStatus st = TS_OK;
    for (int i = 0; i < n && st == TS_OK; i++) {
        const TRow *r = &rows[i];
        int64_t L = layer_of(r);
        if (has(r, "tied_modules")) f->tied = true;
        if (has(r, "word_embeddings")) {
            if (r->ndim != 2) st = tab_err(p, r->line, 1, "the word embedding is (V_pad/TP, H)", "expected a 2-D shape for the word embedding");
            else f->vocab_rows = r->shape[0], f->hidden = r->shape[1];
            continue;
        }
        if (has(r, "position_embeddings")) {
            if (r->ndim == 2) f->positions = r->shape[0];
            continue;
        }
        bool in_layer = true;
        if (has(r, "query_key_value") || has(r, "linear_qkv")) {
            st = take_linear(p, r, 0, &f->qkv_rows, &f->qkv_line, &f->qkv_bias);
            if (r->ndim == 2) f->qkv_in = r->shape[1];
        }
        else if (has(r, "attention.dense") || has(r, "linear_proj")) st = take_linear(p, r, 1, &f->proj_cols, &f->proj_line, &f->proj_bias);
        else if (has(r, "dense_h_to_4h") || has(r, "linear_fc1")) st = take_linear(p, r, 0, &f->fc1_rows, &f->fc1_line, &f->mlp_bias);
        else if (has(r, "dense_4h_to_h") || has(r, "linear_fc2")) st = take_linear(p, r, 1, &f->fc2_cols, &f->fc2_line, &f->mlp_bias);
        else if (has(r, "layernorm") || has(r, "LayerNorm") || has(r, "norm")) {
            in_layer = L >= 0;
            if (contains(r->module, r->module_len, "RMSNorm")) f->rms = true;
            else if (contains(r->module, r->module_len, "LayerNorm")) f->layernorm = true;
            if (L >= 0 && (first_layer < 0 || L == first_layer)) {
                first_layer = L;
                f->norm_rows++;
                bool dup = false;
                for (int k = 0; k < nseen; k++)
                    if (seen_len[k] == stem_len(r) && memcmp(seen_norm[k], r->name, seen_len[k]) == 0) dup = true;
                if (!dup && nseen < 16) seen_norm[nseen] = r->name, seen_len[nseen++] = stem_len(r);
            }
        } else in_layer = false;
        if (in_layer && L >= 0 && L < LMAX && !mark[L]) {
            mark[L] = 1;
            f->nlayers++;
            if (f->lmin < 0 || L < f->lmin) f->lmin = L;
            if (L > f->lmax) f->lmax = L;
        }
    }
    free(mark);
    f->norm_names = nseen;
    return st;
}

static TsStatus tab_infer(const TabParse *p, const TabFacts *f, ModelSpec *m, ModelKnown *k, int64_t *tp_out)
{
    model_defaults(m, MODEL_ARCH_GPT);
    int64_t H = f->hidden;
    if (H <= 0) H = f->qkv_in; /* a middle pipeline stage: query_key_value is (3H/TP, H) */
    if (H <= 0)
        return tab_err(p, 1, 1, "the hidden size comes from word_embeddings (V/TP, H) or query_key_value (3H/TP, H)",
                       "cannot infer the hidden size: no word_embeddings or query_key_value row");
    if (f->nlayers == 0)
        return tab_err(p, 1, 1, "rows such as module.2.attention.query_key_value give the layers present",
                       "no transformer layer rows found");
    int64_t tp = 1;
    if (f->proj_cols > 0) {
        if (H % f->proj_cols != 0)
            return tab_err(p, f->proj_line, 1, "attention.dense is (H, H/TP) when heads x head_dim = H",
                           "attention output columns %lld do not divide the hidden size %lld", (long long)f->proj_cols, (long long)H);
        tp = H / f->proj_cols;
    } else if (f->qkv_rows > 0 && (3 * H) % f->qkv_rows == 0) {
        tp = 3 * H / f->qkv_rows;
    }
    if (f->qkv_rows > 0 && f->qkv_rows * tp != 3 * H)
        return tab_err(p, f->qkv_line, 1, "query_key_value is (3H/TP, H) for multi-head attention",
                       "query_key_value rows %lld x TP %lld != 3 x hidden %lld", (long long)f->qkv_rows, (long long)tp, (long long)H);
    m->hidden = H;
    m->layers = f->nlayers;
    if (f->fc1_rows > 0) {
        if (f->fc2_cols > 0 && f->fc1_rows == 2 * f->fc2_cols) {
            m->act = MODEL_ACT_SWIGLU;
            m->ffn = f->fc2_cols * tp;
        } else {
            m->ffn = f->fc1_rows * tp;
        }
        k->ffn = true;
    }
    m->vocab_divisible = 128;
    int64_t vpad = f->vocab_rows * tp;
    m->vocab = (ts_round_up(50257, 128 * tp) == vpad) ? 50257 : vpad;
    k->vocab = f->vocab_rows > 0;
    if (f->positions > 0) {
        m->pos = MODEL_POS_LEARNED;
        m->max_positions = f->positions;
        k->max_positions = true;
    } else {
        m->pos = MODEL_POS_ROPE;
    }
    /* Norm: by class name, else LayerNorm has two tensors (weight, bias) per norm. */
    bool rms = f->rms || (!f->layernorm && f->norm_names > 0 && f->norm_rows == f->norm_names);
    m->norm = rms ? MODEL_NORM_RMSNORM : MODEL_NORM_LAYERNORM;
    m->qkv_bias = f->qkv_bias;
    m->proj_bias = f->proj_bias;
    m->mlp_bias = f->mlp_bias;
    m->tied_embeddings = f->tied;
    k->layers = k->hidden = true;
    *tp_out = tp;
    snprintf(m->source, sizeof m->source,
             "parameter table %.100s: layers %lld-%lld present (%lld), TP %lld, hidden %lld, ffn %lld, vocab %lld "
             "padded to %lld; heads from flags",
             p->path, (long long)f->lmin, (long long)f->lmax, (long long)f->nlayers, (long long)tp, (long long)H,
             (long long)m->ffn, (long long)m->vocab, (long long)vpad);
    return TS_OK;
}

TsStatus model_parse_param_table(const char *path, const char *text, ModelSpec *out, ModelKnown *known,
                                 int64_t *tp_out, TsError *err)
{
    TabParse p = {path, text, err};
    TRow *rows = NULL;
    int n = 0;
    TsStatus st = tab_rows(&p, &rows, &n);
    if (st) return st;
    TabFacts f;
    ModelKnown k;
    memset(&k, 0, sizeof k);
    int64_t tp = 1;
    st = tab_facts(&p, rows, n, &f);
    if (st == TS_OK) st = tab_infer(&p, &f, out, &k, &tp);
    free(rows);
    if (st) return st;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t nl = strcspn(b, ".");
    if (nl >= sizeof out->name) nl = sizeof out->name - 1;
    memcpy(out->name, b, nl);
    out->name[nl] = '\0';
    if (known) *known = k;
    if (tp_out) *tp_out = tp;
    return TS_OK;
}
