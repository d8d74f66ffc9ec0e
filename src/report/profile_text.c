/* The DeepSpeed Flops Profiler text report (print_model_profile of the
 * current profiler.py, reference/flops_profiler.md §1.5-1.6), computed from
 * a ModuleGraph, followed by trainsim's training-FLOPs section. */
#include "trainsim/partition.h"
#include "trainsim/report.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct Ctx {
    const ModuleGraph *g;
    const RepModuleStats *st;
    double tot_params, tot_macs, tot_dur;
    uint64_t *sig; /* per module: hash of its repr (class, extra, stats, children) */
    TsArena *scr;  /* scratch for per-module arrays: one block (huge pages when large) */
} Ctx;

/* FNV-1a over the string and its terminator ("" for NULL). */
static uint64_t fnv_str(const char *s) { return ts_fnv_bytes(TS_FNV_OFFSET, s ? s : "", s ? strlen(s) + 1 : 1); }

/* Content hashes of strings, cached by address: the graph shares class
 * names, extra_reprs and index names between modules (literals and interned
 * strings), so 46k modules hash a few hundred distinct strings. */
enum { STR_SLOTS = 1024 };
typedef struct StrCache {
    const char *p[STR_SLOTS];
    uint64_t h[STR_SLOTS];
} StrCache;

static uint64_t str_hash(StrCache *sc, const char *s)
{
    if (!sc || !s) return fnv_str(s);
    unsigned k = (unsigned)((((uintptr_t)s >> 3) ^ ((uintptr_t)s >> 13)) % STR_SLOTS);
    if (sc->p[k] != s) {
        sc->p[k] = s;
        sc->h[k] = fnv_str(s);
    }
    return sc->h[k];
}

/* Bottom-up signatures, so identical ModuleList items are recognised without
 * rendering them (identical subtrees have bitwise-identical figures; a
 * module's own name is left out because the parent prints it). */
static void signatures(Ctx *c)
{
    const ModuleGraph *g = c->g;
    StrCache *sc = calloc(1, sizeof *sc); /* NULL: hash every string, same result */
    for (int32_t i = g->n_mods - 1; i >= 0; i--) {
        const GraphModule *m = &g->mods[i];
        uint64_t h = TS_FNV_OFFSET;
        h = ts_fnv_mix(h, str_hash(sc, m->cls));
        h = ts_fnv_mix(h, str_hash(sc, m->extra_repr));
        h = ts_fnv_mix(h, str_hash(sc, m->repr));
        h = ts_fnv_words(h, &c->st[i], sizeof c->st[i]);
        for (int32_t ch = m->first_child; ch >= 0; ch = g->mods[ch].next_sibling) {
            h = ts_fnv_mix(h, str_hash(sc, g->mods[ch].name));
            h = ts_fnv_mix(h, c->sig[ch]);
        }
        c->sig[i] = h;
    }
    free(sc);
}

static void line(TsBuf *b, const char *label, const char *value)
{
    ts_buf_printf(b, "%-70s  %-8s\n", label, value);
}

static void pct(char *out, size_t cap, double x, double total)
{
    if (total == 0)
        snprintf(out, cap, "0");
    else
        rep_fmt_g2(out, cap, 100 * x / total);
}

static double round2(double x)
{
    char t[64];
    snprintf(t, sizeof t, "%.2f", x);
    return strtod(t, NULL);
}

/* "{params} = p% Params, {macs} = p% MACs, {dur} = p% latency, {FLOPS}[, extra]" */
static void stats_repr(const Ctx *c, int32_t m, TsBuf *b)
{
    const RepModuleStats *s = &c->st[m];
    char v[64], p[64];
    rep_fmt_params(v, sizeof v, s->params);
    pct(p, sizeof p, s->params, c->tot_params);
    ts_buf_printf(b, "%s = %s%% Params, ", v, p);
    rep_fmt_macs(v, sizeof v, s->macs);
    pct(p, sizeof p, s->macs, c->tot_macs);
    ts_buf_printf(b, "%s = %s%% MACs, ", v, p);
    rep_fmt_duration(v, sizeof v, s->latency_s);
    pct(p, sizeof p, s->latency_s, c->tot_dur);
    ts_buf_printf(b, "%s = %s%% latency, ", v, p);
    rep_fmt_flops(v, sizeof v, s->latency_s > 0 ? round2(s->flops / s->latency_s) : 0);
    ts_buf_puts(b, v);
    const char *ex = c->g->mods[m].extra_repr;
    if (ex && ex[0]) ts_buf_printf(b, ", %s", ex);
}

/* Append s with every newline followed by `n` spaces (torch _addindent). */
static void add_indented(TsBuf *b, const char *s, int n)
{
    for (const char *p = s; *p; p++) {
        ts_buf_append(b, p, 1);
        if (*p == '\n') ts_buf_printf(b, "%*s", n, "");
    }
}

static void repr(const Ctx *c, int32_t m, TsBuf *out);

static void emit_block(TsBuf *out, int start, int end, const char *body)
{
    TsBuf item = {0};
    if (start == end)
        ts_buf_printf(&item, "(%d): %s", start, body ? body : "");
    else
        ts_buf_printf(&item, "(%d-%d): %d x %s", start, end, end - start + 1, body ? body : "");
    ts_buf_puts(out, "\n  ");
    add_indented(out, item.data ? item.data : "", 2);
    ts_buf_free(&item);
}

/* nn.ModuleList.__repr__ (PyTorch >= 2.1): no extra_repr, identical
 * consecutive children collapsed into "(a-b): n x Child(...)". */
static void repr_list(const Ctx *c, int32_t m, TsBuf *out)
{
    const GraphModule *md = &c->g->mods[m];
    if (md->first_child < 0) {
        ts_buf_printf(out, "%s()", md->cls);
        return;
    }
    ts_buf_printf(out, "%s(", md->cls);
    TsBuf prev = {0}, cur = {0};
    int start = 0, i = 0;
    int32_t prev_ch = -1;
    for (int32_t ch = md->first_child; ch >= 0; ch = c->g->mods[ch].next_sibling, i++) {
        if (prev_ch >= 0 && c->sig[ch] == c->sig[prev_ch]) continue;
        prev_ch = ch;
        cur.len = 0;
        if (cur.data) cur.data[0] = '\0';
        repr(c, ch, &cur);
        if (i > 0 && cur.len == prev.len && memcmp(cur.data, prev.data, cur.len) == 0) continue;
        if (i > 0) emit_block(out, start, i - 1, prev.data);
        start = i;
        TsBuf t = prev;
        prev = cur;
        cur = t;
    }
    emit_block(out, start, i - 1, prev.data);
    ts_buf_free(&prev);
    ts_buf_free(&cur);
    ts_buf_puts(out, "\n)");
}

/* nn.Module.__repr__ with the DeepSpeed extra_repr. */
static void repr(const Ctx *c, int32_t m, TsBuf *out)
{
    const GraphModule *md = &c->g->mods[m];
    if (md->repr) {
        ts_buf_puts(out, md->repr);
        return;
    }
    if (strcmp(md->cls, "ModuleList") == 0) {
        repr_list(c, m, out);
        return;
    }
    ts_buf_printf(out, "%s(", md->cls);
    if (md->first_child < 0) {
        stats_repr(c, m, out);
        ts_buf_puts(out, ")");
        return;
    }
    ts_buf_puts(out, "\n  ");
    stats_repr(c, m, out);
    TsBuf child = {0};
    for (int32_t ch = md->first_child; ch >= 0; ch = c->g->mods[ch].next_sibling) {
        child.len = 0;
        if (child.data) child.data[0] = '\0';
        repr(c, ch, &child);
        ts_buf_printf(out, "\n  (%s): ", c->g->mods[ch].name);
        add_indented(out, child.data ? child.data : "", 2);
    }
    ts_buf_free(&child);
    ts_buf_puts(out, "\n)");
}

/* ---- aggregated profile ------------------------------------------------------------ */

typedef struct Agg {
    const char *cls;
    double v[3]; /* macs, params, latency */
} Agg;

static void print_dict(TsBuf *b, Agg *items, int n, int metric, int64_t k)
{
    /* sorted(..., key=metric, reverse=True)[:k] — stable: ties keep first-seen order */
    int *ord = malloc(sizeof *ord * (size_t)(n ? n : 1));
    if (!ord) {
        b->oom = true;
        return;
    }
    for (int i = 0; i < n; i++) ord[i] = i;
    for (int i = 1; i < n; i++) {
        int x = ord[i], j = i - 1;
        while (j >= 0 && items[ord[j]].v[metric] < items[x].v[metric]) {
            ord[j + 1] = ord[j];
            j--;
        }
        ord[j + 1] = x;
    }
    int64_t show = k < n ? k : n;
    ts_buf_puts(b, "{");
    for (int64_t i = 0; i < show; i++) {
        char v[64];
        const Agg *a = &items[ord[i]];
        if (metric == 0) rep_fmt_macs(v, sizeof v, a->v[0]);
        else if (metric == 1) rep_fmt_params(v, sizeof v, a->v[1]);
        else rep_fmt_duration(v, sizeof v, a->v[2]);
        ts_buf_printf(b, "%s'%s': '%s'", i ? ", " : "", a->cls, v);
    }
    ts_buf_puts(b, "}\n");
    free(ord);
}

/* Class ids by content (pointer cache first: most modules share literals). */
static int32_t class_ids(const ModuleGraph *g, int32_t *cid, const char **names)
{
    enum { SLOTS = 1024 };
    const char *cp[SLOTS] = {0};
    int32_t cv[SLOTS];
    int32_t n = 0;
    for (int32_t i = 0; i < g->n_mods; i++) {
        const char *p = g->mods[i].cls;
        unsigned k = (unsigned)((((uintptr_t)p >> 3) ^ ((uintptr_t)p >> 13)) % SLOTS);
        if (cp[k] != p) {
            int32_t j = 0;
            while (j < n && strcmp(names[j], p) != 0) j++;
            if (j == n) names[n++] = p;
            cp[k] = p;
            cv[k] = j;
        }
        cid[i] = cv[k];
    }
    return n;
}

static void aggregated(const Ctx *c, const RepProfileOptions *o, TsBuf *b)
{
    const ModuleGraph *g = c->g;
    int32_t levels = 0;
    for (int32_t i = 0; i < g->n_mods; i++)
        if (g->mods[i].depth + 1 > levels) levels = g->mods[i].depth + 1;
    int64_t depth = o->module_depth < 0 ? levels - 1 : o->module_depth;
    if (depth > levels) depth = levels; /* DeepSpeed would raise KeyError */
    ts_buf_printf(b, "Top %lld modules in terms of params, MACs or fwd latency at different model depths:\n",
                  (long long)o->top_modules);
    size_t nm = (size_t)(g->n_mods ? g->n_mods : 1);
    int32_t *cid = ts_arena_alloc(c->scr, sizeof *cid * nm);
    const char **names = ts_arena_alloc(c->scr, sizeof *names * nm);
    if (!cid || !names) {
        b->oom = true;
        return;
    }
    int32_t ncls = class_ids(g, cid, names);
    size_t cells = (size_t)(depth > 0 ? depth : 1) * (size_t)(ncls > 0 ? ncls : 1);
    Agg *items = ts_arena_alloc(c->scr, sizeof *items * cells);
    int32_t *pos = ts_arena_alloc(c->scr, sizeof *pos * cells);
    int32_t *cnt = ts_arena_alloc(c->scr, sizeof *cnt * (size_t)(depth > 0 ? depth : 1));
    if (!items || !pos || !cnt) {
        b->oom = true;
        return;
    }
    for (size_t k = 0; k < cells; k++) pos[k] = -1;
    /* one pre-order walk (the profiler's order): classes in first-seen order per depth */
    for (int32_t i = 0; i < g->n_mods; i++) {
        int64_t d = g->mods[i].depth;
        if (d >= depth) continue;
        size_t k = (size_t)d * (size_t)ncls + (size_t)cid[i];
        if (pos[k] < 0) {
            pos[k] = cnt[d]++;
            items[(size_t)d * (size_t)ncls + (size_t)pos[k]] = (Agg){names[cid[i]], {0, 0, 0}};
        }
        Agg *a = &items[(size_t)d * (size_t)ncls + (size_t)pos[k]];
        a->v[0] += c->st[i].macs;
        a->v[1] += c->st[i].params;
        a->v[2] += c->st[i].latency_s;
    }
    for (int64_t d = 0; d < depth; d++) {
        Agg *row = &items[(size_t)d * (size_t)ncls];
        ts_buf_printf(b, "depth %lld:\n    params      - ", (long long)d);
        print_dict(b, row, cnt[d], 1, o->top_modules);
        ts_buf_puts(b, "    MACs        - ");
        print_dict(b, row, cnt[d], 0, o->top_modules);
        ts_buf_puts(b, "    fwd latency - ");
        print_dict(b, row, cnt[d], 2, o->top_modules);
    }
}

/* ---- training section ------------------------------------------------------------------ */

static void training(const ModuleGraph *g, const RepTraining *tr, const RepProfileOptions *o, TsBuf *b)
{
    RepTraining t = *tr;
    static const char *const forms[PLAN_RECOMPUTE_COUNT] = {
        "Korthikanti 2022: 72*B*s*l*h^2*(1 + s/(6h) + V/(12*l*h))",
        "Korthikanti 2022: 72*B*s*l*h^2*(1 + 2s/(9h) + V/(12*l*h))",
        "Narayanan 2021:   96*B*s*l*h^2*(1 + s/(6h) + V/(16*l*h))"};
    ts_buf_puts(b, "\n---------------------------- trainsim: training FLOPs ----------------------------\n");
    ts_buf_printf(b, "one iteration of B=%lld sequences of s=%lld tokens (l=%lld, h=%lld, V=%lld); exact = forward\n"
                     "+ input gradient + weight gradient (+ recomputed forward), attention backward 2.5x\n"
                     "forward, causal halving %s; closed forms count matmuls of an MHA, 4h-GeLU model.\n\n",
                  (long long)g->opt.batch, (long long)g->opt.seq, (long long)g->spec.layers,
                  (long long)g->spec.hidden, (long long)(g->spec.lm_head ? g->vocab : 0),
                  g->opt.causal ? "on" : "off");
    ts_buf_printf(b, "  %-11s %-12s %-12s %-10s %s\n", "recompute", "exact", "closed form", "exact/cf", "closed form");
    for (int r = 0; r < PLAN_RECOMPUTE_COUNT; r++) {
        char e[64], cf[64], d[64];
        rep_fmt_number(e, sizeof e, t.exact_flops[r]);
        rep_fmt_number(cf, sizeof cf, t.closed_flops[r]);
        double diff = t.closed_flops[r] > 0 ? 100 * (t.exact_flops[r] / t.closed_flops[r] - 1) : 0;
        snprintf(d, sizeof d, "%+.2f%%", diff);
        ts_buf_printf(b, "%s %-11s %-12s %-12s %-10s %s\n", (int)o->recompute == r ? "*" : " ", plan_recompute_name((PlanRecompute)r), e, cf, d,
                      forms[r]);
    }
    ts_buf_printf(b, "\n* = --recompute %s. Hardware FLOPs (HFU) include the recomputed forward.\n",
                  plan_recompute_name(o->recompute));
    /* the MFU convention simulate and sweep use (part_model_flops_token) */
    double mf = 3.0 * part_model_flops_token(&g->spec, g->opt.seq, false) * (double)g->tokens;
    char mv[32];
    rep_fmt_number(mv, sizeof mv, mf);
    ts_buf_printf(b, "Model FLOPs (MFU, as simulate and sweep count them): %sFLOPs = 3 x the forward's\n"
                     "matmuls and attention scores (full square, Megatron's num_floating_point_operations);\n"
                     "the 'none' row also counts FlashAttention's recomputed scores (backward 2.5x) and the\n"
                     "elementwise ops.\n",
                  mv);
    if (g->spec.experts > 0)
        ts_buf_puts(b, "Routed experts run one after another here (each expert's GEMMs in turn, as in the\n"
                       "latencies above); `trainsim simulate` runs a rank's experts as one grouped GEMM\n"
                       "(Megatron's --moe-grouped-gemm), faster for many small experts, or with\n"
                       "--sequential-experts one after another, as here (Megatron's SequentialMLP).\n");
}

void rep_profile_text(const ModuleGraph *g, const RepCompute *cm, const RepProfileOptions *o, TsBuf *b)
{
    /* stats, signatures, class ids, names: ~64 bytes per module in one block */
    size_t nm = (size_t)(g->n_mods > 0 ? g->n_mods : 1);
    TsArena *scr = ts_arena_create(nm * 64 + (64u << 10));
    RepModuleStats *st = scr ? ts_arena_alloc(scr, sizeof *st * nm) : NULL;
    uint64_t *sig = st ? ts_arena_alloc(scr, sizeof *sig * nm) : NULL;
    if (!sig) {
        ts_arena_destroy(scr);
        b->oom = true;
        return;
    }
    RepTraining tr;
    rep_stats_and_training(g, cm, st, &tr);
    Ctx c = {g, st, st[0].params, st[0].macs, st[0].latency_s, sig, scr};
    signatures(&c);
    char v[64];
    ts_buf_puts(b, "\n-------------------------- DeepSpeed Flops Profiler --------------------------\n");
    ts_buf_printf(b, "Profile Summary at step %lld:\n", (long long)o->profile_step);
    ts_buf_puts(b, "Notations:\n"
                   "data parallel size (dp_size), model parallel size(mp_size),\n"
                   "number of parameters (params), number of multiply-accumulate operations(MACs),\n"
                   "number of floating-point operations (flops), floating-point operations per second (FLOPS),\n"
                   "fwd latency (forward propagation latency), bwd latency (backward propagation latency),\n"
                   "step (weights update latency), iter latency (sum of fwd, bwd and step latency)\n\n");
    rep_fmt_params(v, sizeof v, st[0].params);
    line(b, "params per GPU: ", v);
    line(b, "params of model = params per GPU * mp_size: ", v);
    rep_fmt_macs(v, sizeof v, st[0].macs);
    line(b, "fwd MACs per GPU: ", v);
    rep_fmt_number(v, sizeof v, st[0].flops);
    line(b, "fwd flops per GPU: ", v);
    line(b, "fwd flops of model = fwd flops per GPU * mp_size: ", v);
    rep_fmt_duration(v, sizeof v, st[0].latency_s);
    line(b, "fwd latency: ", v);
    char gpu[160];
    snprintf(gpu, sizeof gpu, "%s, %s%s", cm->hw.gpu.name, ts_dtype_name(cm->dtype),
             hw_software_suffix(&cm->hw.gpu));
    line(b, "latencies predicted on (--gpu, --dtype): ", gpu);
    rep_fmt_flops(v, sizeof v, st[0].latency_s > 0 ? st[0].flops / st[0].latency_s : 0);
    line(b, "fwd FLOPS per GPU = fwd flops per GPU / fwd latency: ", v);

    ts_buf_puts(b, "\n----------------------------- Aggregated Profile per GPU -----------------------------\n");
    aggregated(&c, o, b);
    if (o->detailed) {
        ts_buf_puts(b, "\n------------------------------ Detailed Profile per GPU ------------------------------\n");
        ts_buf_puts(b, "Each module profile is listed after its name in the following order: \n"
                       "params, percentage of total params, MACs, percentage of total MACs, fwd latency, "
                       "percentage of total fwd latency, fwd FLOPS\n");
        ts_buf_puts(b, "\nNote: 1. A module can have torch.nn.module or torch.nn.functional to compute logits (e.g. "
                       "CrossEntropyLoss). They are not counted as submodules, thus not to be printed out. However "
                       "they make up the difference between a parent's MACs (or latency) and the sum of its "
                       "submodules'.\n"
                       "2. Number of floating-point operations is a theoretical estimation, thus FLOPS computed "
                       "using that could be larger than the maximum system throughput.\n"
                       "3. The fwd latency listed in the top module's profile is directly captured at the module "
                       "forward function in PyTorch, thus it's less than the fwd latency shown above which is "
                       "captured in DeepSpeed.\n\n");
        repr(&c, g->root, b);
        ts_buf_puts(b, "\n");
    }
    ts_buf_puts(b, "------------------------------------------------------------------------------\n");
    training(g, &tr, o, b);
    ts_arena_destroy(scr);
}
