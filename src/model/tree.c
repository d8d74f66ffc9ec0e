/* Megatron module-tree dumps -> ModelSpec (structure only).
 *
 * The format (seeds/megatron_gpt_module_tree.txt): one node per pair of lines,
 *     Module: GPTModel                              <- depth 0
 *       Submodule: embedding (LanguageModelEmbedding)   <- depth 1 (2 spaces)
 *         Module: LanguageModelEmbedding            <- depth 2, same class
 *           Submodule: word_embeddings (...)        <- depth 3 ...
 * i.e. a `Module:` line at even depth 2k and its children's `Submodule:` lines
 * at depth 2k+1, each followed by the child's own `Module:` line at 2k+2.
 *
 * What the tree gives: the layer count (children of decoder.layers), the norm
 * class (LayerNorm vs RMSNorm), learned positions (embedding.position_embeddings),
 * q/k norm (q_layernorm not IdentityOp), MoE layers (MoELayer, experts counted
 * from experts.local_experts, shared_experts). What it cannot give: hidden,
 * heads, vocab (model_load asks for --hidden --heads --vocab). */
#include "trainsim/model.h"

#include <stdlib.h>
#include <string.h>

#define TREE_NAME_MAX 96

typedef struct TNode {
    char name[TREE_NAME_MAX]; /* "decoder", "0"; "" for the root */
    char cls[TREE_NAME_MAX];  /* "TransformerBlock" */
    int parent;               /* -1 for the root */
    int first_child, next;    /* -1 terminated sibling list */
    int nchild;
    int line;                 /* 1-based line of the Submodule (root: Module) line */
} TNode;

typedef struct Tree {
    TNode *n;
    int count, cap;
} Tree;

typedef struct TParse {
    const char *path, *text;
    TsError *err;
} TParse;

static TsStatus tree_err(const TParse *p, int line, int col, const char *hint, const char *fmt, const char *a)
{
    ts_err(p->err, TS_ERR_INPUT, fmt, a);
    ts_err_at(p->err, p->path, line, col, p->text);
    if (hint) ts_err_hint(p->err, "%s", hint);
    return TS_ERR_INPUT;
}

static int tree_add(Tree *t, int parent, const char *name, size_t nlen, const char *cls, size_t clen, int line)
{
    if (t->count == t->cap) {
        int nc = t->cap ? 2 * t->cap : 256;
        TNode *nn = realloc(t->n, (size_t)nc * sizeof *nn);
        if (!nn) return -1;
        t->n = nn;
        t->cap = nc;
    }
    int id = t->count++;
    TNode *x = &t->n[id];
    memset(x, 0, sizeof *x);
    if (nlen >= TREE_NAME_MAX) nlen = TREE_NAME_MAX - 1;
    if (clen >= TREE_NAME_MAX) clen = TREE_NAME_MAX - 1;
    memcpy(x->name, name, nlen);
    memcpy(x->cls, cls, clen);
    x->parent = parent;
    x->first_child = x->next = -1;
    x->line = line;
    if (parent >= 0) {
        TNode *pp = &t->n[parent];
        if (pp->first_child < 0) pp->first_child = id;
        else {
            int c = pp->first_child;
            while (t->n[c].next >= 0) c = t->n[c].next;
            t->n[c].next = id;
        }
        pp->nchild++;
    }
    return id;
}

static int child(const Tree *t, int node, const char *name)
{
    if (node < 0) return -1;
    for (int c = t->n[node].first_child; c >= 0; c = t->n[c].next)
        if (strcmp(t->n[c].name, name) == 0) return c;
    return -1;
}

static bool is_class_char(char c) { return c > ' ' && c != '(' && c != ')' && c != 0x7f; }

/* Parse the text into t. Tracks a stack of open modules by depth. */
static TsStatus tree_parse(const TParse *p, Tree *t)
{
    int stack[256];
    int top = -1;           /* stack[k] = node whose Module line is at depth 2k */
    int pending = -1;       /* node declared by a Submodule line, awaiting its Module line */
    int pending_line = 0, pending_col = 1;
    const char *s = p->text;
    int line = 0;
    while (*s) {
        line++;
        const char *eol = strchr(s, '\n');
        size_t len = eol ? (size_t)(eol - s) : strlen(s);
        const char *next = eol ? eol + 1 : s + len;
        if (len && s[len - 1] == '\r') len--;
        size_t ind = 0;
        while (ind < len && s[ind] == ' ') ind++;
        if (ind == len) { /* blank line */
            s = next;
            continue;
        }
        if (s[ind] == '\t')
            return tree_err(p, line, (int)ind + 1, "indent with 2 spaces per level", "%s", "tab in the indentation");
        if (ind % 2) {
            char num[24];
            snprintf(num, sizeof num, "%zu", ind);
            return tree_err(p, line, (int)ind + 1, "each level is indented by exactly 2 spaces",
                            "indentation of %s spaces is not a multiple of 2", num);
        }
        int depth = (int)(ind / 2);
        const char *w = s + ind;
        size_t wl = len - ind;
        if (wl >= 8 && strncmp(w, "Module: ", 8) == 0) {
            const char *cls = w + 8;
            size_t cl = wl - 8;
            if (cl == 0 || !is_class_char(cls[0]))
                return tree_err(p, line, (int)ind + 9, "write 'Module: ClassName'", "%s", "missing class name after 'Module:'");
            if (pending < 0 && t->count > 0)
                return tree_err(p, line, (int)ind + 1, "every node but the root is introduced by 'Submodule: name (Class)'",
                                "%s", "a 'Module:' line must follow a 'Submodule:' line");
            if (pending < 0) {
                if (depth != 0)
                    return tree_err(p, line, 1, "the root 'Module:' line is not indented", "%s", "unexpected indentation");
                if (tree_add(t, -1, "", 0, cls, cl, line) < 0) return ts_err(p->err, TS_ERR_INTERNAL, "out of memory");
                stack[top = 0] = 0;
            } else {
                int want = 2 * (top + 1);
                if (depth != want) {
                    char msg[96];
                    snprintf(msg, sizeof msg, "expected %d spaces before 'Module:' (one level below its Submodule line)", 2 * want);
                    return tree_err(p, line, (int)ind + 1, msg, "%s", "wrong indentation");
                }
                if (strlen(t->n[pending].cls) != cl || strncmp(t->n[pending].cls, cls, cl) != 0) {
                    char hint[320];
                    snprintf(hint, sizeof hint, "line %d declares class '%s'", pending_line, t->n[pending].cls);
                    return tree_err(p, line, (int)ind + 9, hint, "%s", "class differs from the one its Submodule line names");
                }
                if (top + 1 >= (int)(sizeof stack / sizeof stack[0]))
                    return tree_err(p, line, (int)ind + 1, NULL, "%s", "module tree nested too deeply");
                stack[++top] = pending;
                pending = -1;
            }
        } else if (wl >= 11 && strncmp(w, "Submodule: ", 11) == 0) {
            if (t->count == 0)
                return tree_err(p, line, (int)ind + 1, "a module tree starts with 'Module: <root class>'", "%s",
                                "the first line must be a 'Module:' line");
            if (pending >= 0) {
                char hint[320];
                snprintf(hint, sizeof hint, "line %d ('Submodule: %s') must be followed by 'Module: %s'", pending_line,
                         t->n[pending].name, t->n[pending].cls);
                return tree_err(p, line, (int)ind + 1, hint, "%s", "expected a 'Module:' line");
            }
            if (depth % 2 == 0 || (depth - 1) / 2 > top) {
                char hint[320];
                snprintf(hint, sizeof hint,
                         "a 'Submodule:' line is indented 2 spaces more than its parent's 'Module:' line "
                         "(here at most %d spaces)", 2 * (2 * top + 1));
                return tree_err(p, line, (int)ind + 1, hint, "%s", "wrong indentation");
            }
            top = (depth - 1) / 2;
            const char *name = w + 11, *end = w + wl;
            const char *open = memchr(name, '(', (size_t)(end - name));
            if (!open || open == name || open[-1] != ' ')
                return tree_err(p, line, (int)len + 1, "write 'Submodule: name (ClassName)'", "%s",
                                "missing ' (ClassName)' after the submodule name");
            if (end[-1] != ')')
                return tree_err(p, line, (int)len + 1, "the class name ends with ')'", "%s", "missing ')'");
            const char *cls = open + 1;
            size_t cl = (size_t)(end - 1 - cls);
            size_t nl = (size_t)(open - 1 - name);
            for (size_t i = 0; i < cl; i++)
                if (!is_class_char(cls[i]))
                    return tree_err(p, line, (int)(cls - s) + (int)i + 1, "a class name has no spaces or brackets",
                                    "%s", "bad class name");
            if (cl == 0) return tree_err(p, line, (int)(cls - s) + 1, "write 'Submodule: name (ClassName)'", "%s", "empty class name");
            int id = tree_add(t, stack[top], name, nl, cls, cl, line);
            if (id < 0) return ts_err(p->err, TS_ERR_INTERNAL, "out of memory");
            pending = id;
            pending_line = line;
            pending_col = (int)ind + 1;
        } else {
            size_t k = 0;
            while (k < wl && k < 40 && w[k] != ' ') k++;
            char word[48];
            memcpy(word, w, k);
            word[k] = '\0';
            return tree_err(p, line, (int)ind + 1, "each line is 'Module: Class' or 'Submodule: name (Class)'",
                            "expected 'Module:' or 'Submodule:', found '%s'", word);
        }
        s = next;
    }
    if (t->count == 0) return tree_err(p, 1, 1, "a module tree starts with 'Module: <root class>'", "%s", "empty module tree");
    if (pending >= 0) {
        char hint[320];
        snprintf(hint, sizeof hint, "the file ends before 'Module: %s'; is it truncated?", t->n[pending].cls);
        return tree_err(p, pending_line, pending_col, hint, "%s", "'Submodule:' line without its 'Module:' line");
    }
    return TS_OK;
}

/* Leading spaces of a 1-based line, for carets under a node's first character. */
static int line_indent(const char *text, int line)
{
    const char *s = text;
    for (int l = 1; l < line && s; l++) {
        s = strchr(s, '\n');
        if (s) s++;
    }
    int n = 0;
    while (s && s[n] == ' ') n++;
    return n;
}

/* Fill the spec from the parsed tree. */
static TsStatus tree_infer(const TParse *p, const Tree *t, ModelSpec *m, ModelKnown *known)
{
    int dec = child(t, 0, "decoder");
    int layers = child(t, dec, "layers");
    if (layers < 0)
        return tree_err(p, 1, 1,
                        "expected a Megatron-Core GPTModel dump: 'Submodule: decoder (TransformerBlock)' holding "
                        "'Submodule: layers (ModuleList)'",
                        "%s", "no decoder.layers in the module tree");
    model_defaults(m, MODEL_ARCH_GPT);
    m->layers = t->n[layers].nchild;
    int l0 = t->n[layers].first_child;
    if (l0 < 0) return tree_err(p, t->n[layers].line, 1, "the layer count is the number of its children", "%s", "decoder.layers is empty");
    int idx = 0;
    for (int c = l0; c >= 0; c = t->n[c].next, idx++) {
        char want[16];
        snprintf(want, sizeof want, "%d", idx);
        if (strcmp(t->n[c].name, want) != 0)
            return tree_err(p, t->n[c].line, line_indent(p->text, t->n[c].line) + 1, "the layers are numbered 0, 1, 2, ... in order",
                            "unexpected layer name '%s'", t->n[c].name);
        if (t->n[c].nchild != t->n[l0].nchild) {
            char hint[128];
            snprintf(hint, sizeof hint, "layer 0 has %d submodules, this one %d; is the file truncated?", t->n[l0].nchild, t->n[c].nchild);
            return tree_err(p, t->n[c].line, line_indent(p->text, t->n[c].line) + 1, hint, "layer %s is incomplete", t->n[c].name);
        }
    }
    /* Norm: input_layernorm, or a TE fused LayerNorm+linear. */
    const char *norm = "";
    int ln = child(t, l0, "input_layernorm");
    if (ln >= 0) norm = t->n[ln].cls;
    if (strstr(norm, "RMSNorm")) m->norm = MODEL_NORM_RMSNORM;
    else m->norm = MODEL_NORM_LAYERNORM;
    /* Positions. */
    int emb = child(t, 0, "embedding");
    m->pos = child(t, emb, "position_embeddings") >= 0 ? MODEL_POS_LEARNED : MODEL_POS_ROPE;
    /* q/k norm. */
    int att = child(t, l0, "self_attention");
    int qn = child(t, att, "q_layernorm");
    m->qk_norm = qn >= 0 && strcmp(t->n[qn].cls, "IdentityOp") != 0;
    /* MoE layers: experts counted from the first MoE layer. */
    int first_moe = -1, second_moe = -1, li = 0;
    for (int c = l0; c >= 0; c = t->n[c].next, li++) {
        int mlp = child(t, c, "mlp");
        if (mlp >= 0 && strstr(t->n[mlp].cls, "MoE")) {
            if (first_moe < 0) first_moe = li;
            else if (second_moe < 0) second_moe = li;
        }
    }
    if (first_moe >= 0) {
        int c = l0;
        for (int i = 0; i < first_moe; i++) c = t->n[c].next;
        int mlp = child(t, c, "mlp");
        int ex = child(t, mlp, "experts");
        int local = child(t, ex, "local_experts");
        m->experts = local >= 0 ? t->n[local].nchild : 0;
        if (m->experts == 0) known->experts_missing = true; /* grouped GEMM: the tree hides the count */
        m->shared_experts = child(t, mlp, "shared_experts") >= 0 ? 1 : 0;
        m->dense_layers = first_moe;
        m->moe_layer_freq = second_moe > 0 ? second_moe - first_moe : 1;
    }
    known->layers = true;
    snprintf(m->source, sizeof m->source,
             "Megatron module tree %.120s: %lld layers, %s, %s positions%s%s", p->path, (long long)m->layers,
             model_norm_name(m->norm), model_pos_name(m->pos), m->qk_norm ? ", q/k norm" : "",
             first_moe >= 0 ? ", MoE (top-k not in the tree)" : "");
    return TS_OK;
}

TsStatus model_parse_module_tree(const char *path, const char *text, ModelSpec *out, ModelKnown *known,
                                 TsError *err)
{
    TParse p = {path, text, err};
    Tree t = {0};
    ModelKnown k;
    memset(&k, 0, sizeof k);
    TsStatus st = tree_parse(&p, &t);
    if (st == TS_OK) st = tree_infer(&p, &t, out, &k);
    free(t.n);
    if (st) return st;
    const char *b = strrchr(path, '/');
    b = b ? b + 1 : path;
    size_t n = strcspn(b, ".");
    if (n >= sizeof out->name) n = sizeof out->name - 1;
    memcpy(out->name, b, n);
    out->name[n] = '\0';
    if (known) *known = k;
    return TS_OK;
}
