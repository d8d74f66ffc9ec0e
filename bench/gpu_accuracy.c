/*
 * gpu_accuracy — trainsim's compute model against measurements of real GPUs:
 * the rows of a `measurements.jsonl` file (tools/measure/measure.py, format
 * in docs/measure.md; default: the files DEF names in bench/data/gpu).
 *
 *   B       one Megatron-shaped layer shard, op by op: each GEMM's forward,
 *           input and weight gradient, the attention core, one norm and the
 *           activation, and the layer sums (the norm counted twice): the
 *           GEMMs and the core from the layer template (part_template)
 *           costed with the GPU preset (cost_step) at the clock of one
 *           GPU alone (sim_tensor_factor of one GPU); the norm and the
 *           activation as the harness runs them, eager PyTorch kernels
 *           (torch_norm_s, torch_act_s), not the template's fused ones;
 *           scored by how the row was timed: B each op alone, B-layer in
 *           the layer's order (its tensor work at the row's clock), B-b2b
 *           each op back to back (at each op's clock); "<part> op" scores
 *           each op and pass of those rows apart;
 *   A, E    a whole single-GPU training step of a HuggingFace model and its
 *           peak memory: `trainsim simulate` of the model on one GPU with
 *           the framework and precision of the row (--framework hf,
 *           --precision amp|pure); the row's parameter count beside
 *           trainsim's where they differ by more than 0.1 %;
 *   C       one bf16 GEMM on random data; D-fp8 the same shape in FP8;
 *   D-attn  causal flash attention forward and backward;
 *   F       memory-bound kernels (norms, activations, add, softmax, cast,
 *           the fp32 cross-entropy).
 *   F-eager eager elementwise ops by the path PyTorch takes (contiguous,
 *           broadcast operand, mask, dtype conversion, mixed dtypes), each
 *           costed as the templates cost it: its bytes streamed, a masked
 *           fill no faster than its elements on the generic path.
 * Per row: what was measured and predicted, the error (predicted /
 * measured - 1: positive = trainsim predicts slower); per part and GPU the
 * MAPE and the bias. Nothing here is fitted: the figures are what the
 * presets and models give.
 *
 * Usage: gpu_accuracy [-v] [-k] [-c CALIBRATION.json] [FILE.jsonl ...]
 *   -v  every op of part B; -k  every kernel of a whole step (parts A, E),
 *   costed per step; -c  the calibration applied to its GPU's rows
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim/cost.h"
#include "trainsim/hw.h"
#include "trainsim/model.h"
#include "trainsim/partition.h"
#include "trainsim/plan.h"
#include "trainsim/sim.h"

#ifndef TS_BENCH_DIR
#define TS_BENCH_DIR "bench"
#endif

static bool g_verbose;
static bool g_kernels; /* -k: every kernel of a whole step (parts A, E) */
static char g_row[512];  /* "FILE:LINE" of the row being scored */

/* A row that cannot be scored, named by file and line with the reason. */
static void row_skip(const char *what, const char *why)
{
    fprintf(stderr, "%s: skipped: %s%s%s\n", g_row, what ? what : "", what ? ": " : "", why);
}

/* ---- statistics per (part, GPU) ------------------------------------------- */
enum { MAXSTAT = 64 };
typedef struct Stat {
    char key[48];
    int n;
    double abs_sum, sum;
} Stat;
static Stat g_stat[MAXSTAT];
static int g_nstat;

static void score(const char *part, const char *gpu, double err)
{
    char key[48];
    snprintf(key, sizeof key, "%-16s %s", part, gpu);
    int i = 0;
    while (i < g_nstat && strcmp(g_stat[i].key, key)) i++;
    if (i == g_nstat) {
        if (g_nstat == MAXSTAT) return;
        snprintf(g_stat[g_nstat++].key, sizeof g_stat[0].key, "%s", key);
    }
    g_stat[i].n++;
    g_stat[i].abs_sum += fabs(err);
    g_stat[i].sum += err;
}

/* ---- GPUs ------------------------------------------------------------------ */
/* The preset of a measured GPU, by the name the driver reports. */
static const char *preset_of(const char *gpu)
{
    if (strstr(gpu, "H200")) return "h200-sxm-141gb";
    if (strstr(gpu, "H100") && strstr(gpu, "PCIe")) return "h100-pcie-80gb";
    if (strstr(gpu, "H100")) return "h100-sxm5-80gb";
    if (strstr(gpu, "H800")) return "h800-sxm5-80gb";
    if (strstr(gpu, "A100") && strstr(gpu, "40GB")) return "a100-sxm4-40gb";
    if (strstr(gpu, "A100")) return "a100-sxm4-80gb";
    return NULL;
}

static const char *short_gpu(const char *gpu)
{
    return strstr(gpu, "H200") ? "H200" : strstr(gpu, "H100") ? "H100" : gpu;
}

/* -c FILE: a calibration file, applied to the rows of the GPU it names */
static HwCalib *g_calib;

static bool load_hw(const char *gpu, HwModel *hw)
{
    const char *p = preset_of(gpu);
    TsError err = {0};
    hw_model_init(hw);
    if (!p || hw_gpu_load(p, &hw->gpu, &err) != TS_OK) return false;
    /* the file corrects the rows of its own GPU family (hw_gpu_family) */
    const char *fc = g_calib ? hw_gpu_family(hw_calib_gpu(g_calib)) : NULL, *fr = hw_gpu_family(gpu);
    if (fc && fr && !strcmp(fc, fr)) hw->calib = g_calib;
    return true;
}

static double num(const json_t *o, const char *k)
{
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : 0;
}

/* A row's dimension as a whole number: 0 where it is absent or beyond what
 * an int64_t holds (the row's own checks then skip it). */
static int64_t dim(const json_t *o, const char *k)
{
    double v = num(o, k);
    return v >= -1e15 && v <= 1e15 ? (int64_t)v : 0;
}

/* ---- part B: a layer shard ------------------------------------------------- */
static void shard_model(const json_t *r, ModelSpec *m)
{
    bool gated = json_is_true(json_object_get(r, "gated"));
    memset(m, 0, sizeof *m);
    model_defaults(m, gated ? MODEL_ARCH_LLAMA : MODEL_ARCH_GPT);
    snprintf(m->name, sizeof m->name, "%s", json_string_value(json_object_get(r, "shard")));
    m->layers = 1;
    m->hidden = dim(r, "hidden");
    m->heads = dim(r, "heads");
    m->kv_heads = dim(r, "kv_heads");
    m->head_dim = num(r, "head_dim") > 0 ? dim(r, "head_dim") : m->hidden / m->heads;
    m->ffn = dim(r, "ffn");
    m->vocab = 32000;
    m->max_positions = 1 << 20;
    m->hidden_dropout = m->attn_dropout = 0; /* the rows time the ops alone */
    model_finalize(m);
}

/* The template kernel named `name` of block b (NULL when absent). */
static const PartKernel *kernel(const PartBlockT *b, const char *name, int *ix)
{
    for (int i = 0; i < b->n_k; i++)
        if (!strcmp(b->k[i].name, name)) {
            *ix = i;
            return &b->k[i];
        }
    return NULL;
}

static double op_time(const PartTemplate *t, const CostStep *cs, PartBlock b, const char *name, int pass)
{
    int i;
    return kernel(&t->b[b], name, &i) ? cs->b[b].k[i][pass] : 0;
}

/* PyTorch's fused norm kernel (F.layer_norm, F.rms_norm) over `rows` rows
 * of a tensor of `tensor` bytes, pass 0 forward, 1 backward: the bytes the
 * templates count for it (template_hf.c norm: 2 tensors forward, 5
 * backward: dy and x for the input gradient, again for the weight's, dx
 * written) at the row kernel's rate (hw_norm_time_s, model.eager_norm). */
static double torch_norm_s(const HwModel *hw, double tensor, double rows, int pass)
{
    return hw_norm_time_s(hw, (pass ? 5 : 2) * tensor, rows, pass);
}

static double eager_kernel_s(const HwModel *hw, double bytes, double generic);

/* The shard's activation as measure.py and the shared harness time it, over
 * an output of `el` bf16 elements: F.gelu(tanh) one kernel each way (2
 * tensors forward, 3 backward). SwiGLU on the chunked fc1 output,
 * silu(a) * b, where a and b are strided halves (a row of 2F, of which F
 * are read): forward silu(a) (2 tensors) and a * b (3); backward the
 * product's two gradients, dy * b (3) and dy * silu(a) (3), silu's backward
 * over a (3) and the chunk's, which concatenates the halves' gradients (4).
 * A kernel with a strided half as operand takes PyTorch's generic path
 * (eager_kernel_s); the others stream. */
static double torch_act_s(const HwModel *hw, bool gated, double el, int pass)
{
    double tensor = 2 * el;
    if (!gated) return hw_memory_time_s(hw, (pass ? 3 : 2) * tensor);
    if (!pass) return eager_kernel_s(hw, 2 * tensor, el) + eager_kernel_s(hw, 3 * tensor, el);
    return eager_kernel_s(hw, 3 * tensor, el) + eager_kernel_s(hw, 3 * tensor, 0) +
           eager_kernel_s(hw, 3 * tensor, el) + eager_kernel_s(hw, 4 * tensor, 0);
}

/* Prints and scores a B row's layer sums, measured m and predicted p,
 * forward [0] and backward [1]; suspect: the forward shown, not scored. */
static void b_score(const char *part, const char *gpu, const char *name, const double m[2], const double p[2],
                    bool suspect)
{
    for (int f = 0; f < 2; f++) {
        double e = p[f] / m[f] - 1;
        bool skip = suspect && !f;
        char lab[32];
        snprintf(lab, sizeof lab, "%s %s", part, f ? "bwd" : "fwd");
        printf("%-12s %-5s %-22s layer %-3s  measured %8.3f ms  predicted %8.3f ms  %+6.1f%%%s\n", part, short_gpu(gpu),
               name, f ? "bwd" : "fwd", m[f] * 1e3, p[f] * 1e3, 100 * e,
               skip ? "  (not scored: attention forward > its backward)" : "");
        if (!skip) score(lab, short_gpu(gpu), e);
    }
}

/* The model and plan of a B row's shard: its shape, whole and divisible,
 * checked before any of it is used; false (the row skipped) otherwise. */
static bool shard_plan(const json_t *r, ModelSpec *m, ParallelPlan *p)
{
    static const char *const DIMS[] = {"hidden", "heads", "ffn", "tp", "seq", "micro_batch"};
    for (size_t i = 0; i < sizeof DIMS / sizeof DIMS[0]; i++)
        if (!(num(r, DIMS[i]) >= 1 && num(r, DIMS[i]) <= 1e9)) { /* whole numbers an int64_t holds */
            row_skip(NULL, "a B row has its \"hidden\", \"heads\", \"ffn\", \"tp\", \"seq\" and "
                           "\"micro_batch\", each from 1 to 1e9 (docs/measure.md)");
            return false;
        }
    if (dim(r, "hidden") % dim(r, "heads")) {
        row_skip(NULL, "a B row's \"hidden\" is a multiple of its \"heads\"");
        return false;
    }
    shard_model(r, m);
    plan_init(p);
    p->tp = dim(r, "tp");
    p->gpus = p->tp;
    p->seq = dim(r, "seq");
    p->micro_batch = dim(r, "micro_batch");
    p->sp = false, p->sp_set = true; /* the shard's ops on whole sequences, as timed */
    TsError err = {0};
    if (plan_resolve(m, p, &err)) {
        row_skip(m->name, err.msg);
        return false;
    }
    return true;
}

static void row_b(const json_t *r, const char *gpu)
{
    HwModel hw;
    ModelSpec m;
    ParallelPlan p;
    if (!load_hw(gpu, &hw) || !shard_plan(r, &m, &p)) return;
    SimOptions so;
    sim_options_init(&so);
    /* A row timed in the layer's order (measure.py shard --in-layer) ran its
     * tensor work at the one clock it records; a row timed op by op alone is
     * costed at the preset's clock of one GPU (single_clock_mhz; its
     * clock_mhz includes the idle between ops), and one timed each op back
     * to back at each op's. */
    const char *timing = json_string_value(json_object_get(r, "timing"));
    bool in_layer = timing && !strcmp(timing, "in-layer");
    double tf1 = sim_tensor_factor(&hw.gpu, &so, 1), tf = tf1, clk = num(r, "clock_mhz");
    if (in_layer && clk > 0 && hw.gpu.clock_mhz > 0) tf = hw.gpu.clock_mhz / clk;
    CostCtx cc;
    cost_ctx_init(&cc, &hw, &p, tf);
    static PartTemplate t;
    static CostStep cs;
    part_template(&m, &p, NULL, &t);
    cost_step(&cc, &m, &p, NULL, &t, &cs);
    const json_t *ops = json_object_get(r, "ops_ms");
    static const struct { const char *op, *kernel; PartBlock b; bool tensor; } MAP[] = {
        {"qkv", "qkv", PART_BLOCK_ATTN, true},      {"proj", "proj", PART_BLOCK_ATTN, true},
        {"fc1", "fc1", PART_BLOCK_MLP, true},       {"fc2", "fc2", PART_BLOCK_MLP, true},
        {"attn_core", "core", PART_BLOCK_ATTN, true}, {"norm", "norm", PART_BLOCK_ATTN, false},
        {"act", "act", PART_BLOCK_MLP, false}};
    static const char *const PASS[3] = {"fwd", "dgrad", "wgrad"};
    /* rows timed on SDPA's flash backend: the preset's FA2 factor on the core */
    const char *be = json_string_value(json_object_get(r, "sdpa_backend"));
    bool fa2 = be && !strcmp(be, "flash");
    bool gated = json_is_true(json_object_get(r, "gated"));
    double tok = (double)p.seq * (double)p.micro_batch; /* the shard's ops on whole sequences, bf16 */
    double sum_m[2] = {0}, sum_p[2] = {0}, sum_1[2] = {0}; /* sum_1: tensor work at the one-GPU clock */
    /* an attention forward longer than its backward (2.5x the work) is a
     * timing artefact (the shared H100 gpt3-175b_tp8 row, bench/data/gpu
     * README): that row's forward is shown, not scored */
    const json_t *core = json_object_get(ops, "attn_core");
    bool suspect = num(core, "fwd") > num(core, "dgrad");
    /* each way of timing is its own part: B (each op alone), B-layer
     * (--in-layer, at the row's clock; B-layer@1gpu at the preset's one-GPU
     * clock, as simulate predicts it), B-b2b (--sustained, each op back to
     * back); "<part> op" scores each op and pass apart */
    const char *part = in_layer ? "B-layer" : timing && !strcmp(timing, "sustained") ? "B-b2b" : "B";
    char op_part[24];
    snprintf(op_part, sizeof op_part, "%s op", part);
    for (size_t i = 0; i < sizeof MAP / sizeof MAP[0]; i++) {
        const json_t *o = json_object_get(ops, MAP[i].op);
        for (int ps = 0; ps < 3; ps++) {
            /* a row timed back to back (measure.py shard --sustained) has each op's SM clock */
            double mhz = num(json_object_get(json_object_get(r, "ops_clock_mhz"), MAP[i].op), PASS[ps]);
            double meas = num(o, PASS[ps]) * 1e-3, pred = op_time(&t, &cs, MAP[i].b, MAP[i].kernel, ps);
            double at1 = MAP[i].tensor ? tf1 / tf : 1; /* to the one-GPU clock */
            if (mhz > 0 && MAP[i].tensor) pred *= hw.gpu.clock_mhz / tf / mhz; /* from the clock costed at */
            if (!strcmp(MAP[i].op, "norm")) pred = ps < 2 ? torch_norm_s(&hw, tok * (double)m.hidden * 2, tok, ps) : 0;
            if (!strcmp(MAP[i].op, "act")) pred = ps < 2 ? torch_act_s(&hw, gated, tok * (double)(m.ffn / p.tp), ps) : 0;
            if (fa2 && MAP[i].b == PART_BLOCK_ATTN && !strcmp(MAP[i].kernel, "core") && ps < 2)
                pred *= hw_attn_fa2_factor(&hw.gpu, m.head_dim, ps == 1);
            if (meas > 0 && pred > 0 && !(suspect && !ps && !strcmp(MAP[i].op, "attn_core")))
                score(op_part, short_gpu(gpu), pred / meas - 1);
            int twice = !strcmp(MAP[i].op, "norm") ? 2 : 1;
            sum_m[ps > 0] += twice * meas;
            sum_p[ps > 0] += twice * pred;
            sum_1[ps > 0] += twice * pred * (mhz > 0 ? 1 : at1);
            if (meas > 0 && g_verbose) {
                printf("    %-10s %-6s %9.4f ms  %9.4f ms  %+6.1f%%", MAP[i].op, PASS[ps], meas * 1e3, pred * 1e3,
                       100 * (pred / meas - 1));
                if (mhz > 0) printf("  at %.0f MHz", mhz);
                printf("\n");
            }
        }
    }
    if (!(sum_m[0] > 0) || !(sum_m[1] > 0)) {
        row_skip(m.name, "a B row's \"ops_ms\" times its ops forward and backward (docs/measure.md)");
        return;
    }
    b_score(part, gpu, m.name, sum_m, sum_p, suspect);
    if (in_layer) b_score("B-layer@1gpu", gpu, m.name, sum_m, sum_1, suspect);
}

/* ---- parts A, E: a whole training step ------------------------------------- */
/* The GPU time of a profiled step (tools/measure step --profile, its ATen
 * ops' own kernel time) by kind: [0] GEMMs (mm, addmm, bmm, grouped mm),
 * [1] the attention core, [2] the optimizer, [3] every other op, all in ms;
 * false when the row has no profile. */
static bool profile_kinds(const json_t *r, double ms[4])
{
    const json_t *ops = json_object_get(json_object_get(r, "profile"), "ops");
    if (!json_is_array(ops)) return false;
    static const char *const GEMM[] = {"aten::mm", "aten::addmm", "aten::bmm", "aten::_grouped_mm", NULL};
    memset(ms, 0, 4 * sizeof *ms);
    size_t i;
    const json_t *o;
    json_array_foreach(ops, i, o) {
        const char *op = json_string_value(json_object_get(o, "op"));
        double t = num(o, "device_ms");
        if (!op || !(t > 0)) continue;
        int kind = 3;
        for (int g = 0; GEMM[g]; g++)
            if (!strcmp(op, GEMM[g])) kind = 0;
        if (strstr(op, "attention") || strstr(op, "flash")) kind = 1;
        else if (strstr(op, "adam") || strstr(op, "_foreach_")) kind = 2;
        ms[kind] += t;
    }
    return true;
}

/* The median of a row's [median, min, max] milliseconds, in seconds; 0
 * where the row has none. */
static double median_s(const json_t *r, const char *k)
{
    const json_t *a = json_object_get(r, k);
    return json_is_array(a) ? json_number_value(json_array_get(a, 0)) * 1e-3 : 0;
}

static bool g_kinds_scored; /* profile_compare scored a step's kinds */

/* A profiled step the GPU bounds (its kernels at least 80 % of the step as
 * timed): each kind's error, as parts "k GEMM", "k attention", "k other",
 * so the kinds' errors show beside the steps' (a step can be right by
 * compensation: docs/measure.md). */
static void score_kinds(const char *gpu, double step_ms, const double meas[4], const double pred[4])
{
    if (!(step_ms > 0) || meas[0] + meas[1] + meas[2] + meas[3] < 0.8 * step_ms) return;
    static const char *const PART[3] = {"k GEMM", "k attention", "k other"};
    static const int MEAS[3] = {0, 1, 3}; /* pred[2] is "other", meas[3] */
    for (int i = 0; i < 3; i++)
        if (meas[MEAS[i]] > 0 && pred[i] > 0) score(PART[i], gpu, pred[i] / meas[MEAS[i]] - 1);
    g_kinds_scored = true;
}

/* -k on a profiled row: the step's GPU time by kind, measured (the profile)
 * beside trainsim's, each kernel by its own kind as the profile groups ATen
 * ops (GEMMs and batched products; fused attention cores; every other kernel,
 * the host's waits left out; the optimizer), trainsim's host waits; the
 * profiled step's wall time and its ATen ops' kernel time (the row's busy_ms
 * also counts the optimizer's record_function range on the GPU, in rows
 * measured before measure.py left it out); each kind scored where the GPU
 * bounds the step (score_kinds). Eager attention's products are bmm GEMMs
 * and its softmax an other kernel on both sides. */
static void profile_compare(const json_t *r, const PartTemplate *t, const CostStep *cs,
                            const double mult[PART_BLOCK_COUNT], double opt_s, const char *gpu)
{
    double meas[4];
    if (!profile_kinds(r, meas)) return;
    double pred[4] = {0, 0, 0, 1e3 * opt_s}, wait = 0;
    for (int b = 0; b < PART_BLOCK_COUNT; b++) {
        const CostBlock *c = &cs->b[b];
        for (int i = 0; i < t->b[b].n_k; i++) {
            const PartKernel *k = &t->b[b].k[i];
            if (k->flags & PART_KF_SAC_ONLY) continue;
            int kind = k->kind == PART_K_GEMM ? 0 : k->kind == PART_K_ATTN ? 1 : 2;
            pred[kind] += 1e3 * mult[b] * (c->k[i][0] + c->k[i][1] + c->k[i][2]);
        }
        wait += 1e3 * mult[b] * (c->wait_fwd + c->wait_bwd);
    }
    const json_t *pf = json_object_get(r, "profile");
    printf("    k profile (ms, measured / predicted): GEMM %.1f / %.1f  attention %.1f / %.1f  other %.1f / %.1f  "
           "optimizer %.1f / %.1f; predicted host waits %.1f; the profiled step %.1f wall, %.1f of kernels\n",
           meas[0], pred[0], meas[1], pred[1], meas[3], pred[2], meas[2], pred[3], wait, num(pf, "wall_ms"),
           meas[0] + meas[1] + meas[2] + meas[3]);
    score_kinds(gpu, 1e3 * median_s(r, "step_ms"), meas, pred);
}

/* The one-GPU step's template and costs as sim_simulate resolves them (the
 * plan in `in`), and how many times each block runs in the model: computed
 * once a row, for the forward's score and -k. */
typedef struct StepCosts {
    PartTemplate t;
    CostStep cs;
    double mult[PART_BLOCK_COUNT];
} StepCosts;

static const StepCosts *step_cost(const ModelSpec *m, const HwModel *hw, const SimSetup *in)
{
    static StepCosts sc;
    sim_step_cost(m, &in->plan, &in->opt, hw, sim_tensor_factor(&hw->gpu, &in->opt, 1), in->net, &sc.t, &sc.cs);
    part_block_counts(m, sc.mult);
    return &sc;
}

/* The forward alone, as a step row's fwd_nograd_ms times it (the model and
 * its loss under torch.no_grad(), the host in the loop): the forward pass
 * of the step's costs, its kernels or their dispatch where that is longer
 * (cost_step's wait). Seconds. */
static double forward_s(const StepCosts *sc)
{
    double s = 0;
    for (int b = 0; b < PART_BLOCK_COUNT; b++) s += sc->mult[b] * sc->cs.b[b].fwd;
    return s;
}

/* -k: the step's kernels as trainsim costs them, milliseconds per step
 * (each block times the layers that hold it), the optimizer step beside the
 * row's, and beside a profile of the row (tools/measure step --profile) its
 * GPU time by kind; res: the step simulated */
static void step_kernels(const json_t *r, const StepCosts *sc, const SimResult *res, const char *gpu)
{
    const PartTemplate *t = &sc->t;
    const CostStep *cs = &sc->cs;
    const double *mult = sc->mult;
    static const char *const BN[PART_BLOCK_COUNT] = {[PART_BLOCK_ATTN] = "attn", [PART_BLOCK_MLP] = "mlp",
                                                     [PART_BLOCK_MOE] = "moe", [PART_BLOCK_EMBED] = "embed",
                                                     [PART_BLOCK_HEAD] = "head"};
    for (int b = 0; b < PART_BLOCK_COUNT; b++) {
        if (mult[b] <= 0) continue;
        for (int i = 0; i < t->b[b].n_k; i++) {
            const double *k = cs->b[b].k[i];
            printf("    k %-6s %-24s fwd %8.3f  ig %8.3f  wg %8.3f ms\n", BN[b] ? BN[b] : "?", t->b[b].k[i].name,
                   1e3 * mult[b] * k[0], 1e3 * mult[b] * k[1], 1e3 * mult[b] * k[2]);
        }
        printf("    k %-6s %-24s fwd %8.3f  bwd %8.3f ms (host dispatch)\n", BN[b] ? BN[b] : "?", "-",
               1e3 * mult[b] * cs->b[b].host_fwd, 1e3 * mult[b] * cs->b[b].host_bwd);
    }
    if (json_is_array(json_object_get(r, "opt_ms")))
        printf("    k optimizer: measured %.2f ms  predicted %.2f ms\n", 1e3 * median_s(r, "opt_ms"),
               res->breakdown.optimizer_s * 1e3);
    profile_compare(r, t, cs, mult, res->breakdown.optimizer_s, gpu);
}

static char g_dir[512] = "."; /* the folder of the measurements file being read */

/* `dir`/`name`.json into `path` when that file exists. */
static bool config_in(const char *dir, const char *name, char *path, size_t cap)
{
    snprintf(path, cap, "%s/%s.json", dir, name);
    FILE *f = fopen(path, "r");
    if (f) fclose(f);
    return f != NULL;
}

enum { ARG_CAP = 1200 }; /* a row's model arguments for trainsim (--model, --layers) */

/* A model name's letters and digits, lower case, after any Hub owner
 * ("meta-llama/Llama-3.2-1B": "llama321b"). */
static void name_key(const char *name, char *out, size_t cap)
{
    const char *s = strrchr(name, '/');
    size_t n = 0;
    for (s = s ? s + 1 : name; *s && n + 1 < cap; s++)
        if (isalnum((unsigned char)*s)) out[n++] = (char)tolower((unsigned char)*s);
    out[n] = 0;
}

/* The config file in `dir` (its name without ".json") whose name has the
 * key `want`; false when none. */
static bool keyed_config(const char *dir, const char *want, char *out, size_t cap)
{
    DIR *d = opendir(dir);
    if (!d) return false;
    bool found = false;
    for (struct dirent *e; !found && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        char stem[256], key[256];
        if (n <= 5 || n - 5 >= sizeof stem || strcmp(e->d_name + n - 5, ".json")) continue;
        memcpy(stem, e->d_name, n - 5);
        stem[n - 5] = 0;
        name_key(stem, key, sizeof key);
        if (!strcmp(key, want)) found = snprintf(out, cap, "%s", stem) > 0;
    }
    closedir(d);
    return found;
}

/* The model a row names as it is spelt elsewhere: a config beside the file
 * or in tools/measure/configs, else a preset, whose letters and digits match
 * the row's ("Llama-3.2-1B", "meta-llama/Llama-3.2-1B": llama3.2-1b). */
static bool respelt_model(const char *dir, const char *name, char *out, size_t cap)
{
    char want[256], key[256];
    name_key(name, want, sizeof want);
    if (!want[0]) return false;
    if (keyed_config(dir, want, out, cap) || keyed_config(TS_BENCH_DIR "/../tools/measure/configs", want, out, cap))
        return true;
    static char names[256][64];
    int n = model_preset_names(names, 256);
    for (int i = 0; i < n; i++) {
        name_key(names[i], key, sizeof key);
        if (!strcmp(key, want)) return snprintf(out, cap, "%s", names[i]) > 0;
    }
    return false;
}

/* A model by name: a HuggingFace config of that name beside the measurements
 * file (as ../shared/validation/gpu lays them out), else the shared config of
 * that name (tools/measure/configs), else a preset; "<base>_L<n>" is <base>
 * cut to n layers. Its trainsim arguments go into arg[ARG_CAP]. */
static bool named_model(const char *name, const ModelOverrides *ov, ModelSpec *m, char *arg, TsError *err)
{
    char path[1024];
    bool found = config_in(g_dir, name, path, sizeof path) ||
                 config_in(TS_BENCH_DIR "/../tools/measure/configs", name, path, sizeof path);
    if (model_load(found ? path : name, ov, m, err) == TS_OK) {
        const char *shown = found ? path : name, *repo = TS_BENCH_DIR "/../";
        if (!strncmp(shown, repo, strlen(repo))) shown += strlen(repo); /* a path inside the repository */
        int k = snprintf(arg, ARG_CAP, "%s", shown);
        if (ov && ov->layers > 0 && k > 0 && k < ARG_CAP)
            snprintf(arg + k, ARG_CAP - (size_t)k, " --layers %lld", (long long)ov->layers);
        return true;
    }
    const char *l = strrchr(name, '_');
    char base[256], spelt[256];
    long n = 0;
    if (respelt_model(g_dir, name, spelt, sizeof spelt) && strcmp(spelt, name)) {
        *err = (TsError){0};
        return named_model(spelt, ov, m, arg, err);
    }
    if (!l || l[1] != 'L' || sscanf(l + 2, "%ld", &n) != 1 || n < 1 || (size_t)(l - name) >= sizeof base) return false;
    memcpy(base, name, (size_t)(l - name));
    base[l - name] = 0;
    ModelOverrides o = ov ? *ov : (ModelOverrides){0};
    if (!ov) model_overrides_init(&o);
    o.layers = n;
    *err = (TsError){0};
    return named_model(base, &o, m, arg, err);
}

/* The row's model: the HuggingFace config it carries ("config", written by
 * tools/measure), else its name (named_model); its trainsim arguments in arg. */
static bool step_model(const json_t *r, const char *name, ModelSpec *m, char *arg, TsError *err)
{
    const json_t *cfg = json_object_get(r, "config");
    if (!json_is_object(cfg)) return named_model(name, NULL, m, arg, err);
    char path[] = "/tmp/gpu_accuracy_config_XXXXXX.json";
    int fd = mkstemps(path, 5);
    FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;
    bool ok = f && json_dumpf(cfg, f, 0) == 0;
    if (f) fclose(f);
    ok = ok && model_load(path, NULL, m, err) == TS_OK;
    if (fd >= 0) remove(path);
    if (ok) snprintf(m->name, sizeof m->name, "%s", name);
    snprintf(arg, ARG_CAP, "CONFIG.json (the row's \"config\")");
    return ok;
}

/* -v: the trainsim command that predicts a step row (the model as found,
 * BERT as BertForMaskedLM: a config naming it in "architectures"). */
static void step_flags(const SimSetup *in, const ModelSpec *m, const char *arg, const char *gpu)
{
    printf("    flags: trainsim simulate --model %s --gpu %s --gpus 1 --framework hf --precision %s "
           "--micro-batch %lld --global-batch %lld --seq %lld%s%s\n",
           arg, preset_of(gpu), in->plan.precision == PLAN_PRECISION_AMP ? "amp" : "pure",
           (long long)in->plan.micro_batch, (long long)in->plan.global_batch, (long long)in->plan.seq,
           in->opt.grads_freed ? " --grads-freed" : "",
           m->arch == MODEL_ARCH_BERT
               ? "  (as BertForMaskedLM: a config without \"architectures\": [\"BertForMaskedLM\"], as the Hub's "
                 "BERT configs have, is the encoder alone)"
               : "");
}

/* A step row's label: its part, GPU, model, precision and shape. */
typedef struct StepRow {
    const char *part, *gpu, *name, *prec;
    long long mb, seq;
} StepRow;

/* One timed quantity of a step row, measured beside predicted (seconds). */
static void step_line(const StepRow *s, const char *what, double meas, double pred)
{
    printf("%s  %-5s %-22s %-4s mb %-2lld seq %-5lld %-5s measured %8.1f ms  predicted %8.1f ms  %+6.1f%%\n", s->part,
           s->gpu, s->name, s->prec, s->mb, s->seq, what, meas * 1e3, pred * 1e3, 100 * (pred / meas - 1));
}

/* A step row's peak against trainsim's: torch.cuda.max_memory_allocated is
 * what the allocator handed out, without the CUDA context (but with the
 * cuBLAS workspaces PyTorch allocates itself), NCCL buffers or
 * fragmentation. */
static void score_peak(const json_t *r, const StepRow *s, const ModelSpec *m, const SimSetup *in)
{
    PartMemOptions mo;
    part_mem_options_init(&mo);
    sim_mem_options(&in->opt, in->plan.dtype, &mo); /* grads_freed as the row says */
    PartMemory pk;
    TsError err = {0};
    if (part_memory(m, &in->plan, &mo, NULL, &pk, &err)) {
        row_skip(s->name, err.msg); /* the peak alone */
        return;
    }
    double mem = num(r, "peak_mem_GiB"),
           pm = (pk.total_bytes - pk.runtime_bytes + PART_ALLOCATOR_WORKSPACE_BYTES - pk.frag_bytes) / 1073741824.0,
           e = pm / mem - 1;
    printf("%s  %-5s %-22s %-4s mb %-2lld seq %-5lld peak  measured %8.2f GiB predicted %8.2f GiB %+6.1f%%\n", s->part,
           s->gpu, s->name, s->prec, s->mb, s->seq, mem, pm, 100 * e);
    score(s->part[0] == 'E' ? "E memory" : "A memory", s->gpu, e);
}

static void row_a(const json_t *r, const char *gpu, const char *part)
{
    const char *name = json_string_value(json_object_get(r, "model"));
    const char *prec = json_string_value(json_object_get(r, "precision"));
    HwModel hw;
    ModelSpec m;
    TsError err = {0};
    if (!name || !prec) {
        row_skip(NULL, "a step row names its \"model\" and its \"precision\" (docs/measure.md)");
        return;
    }
    if (!load_hw(gpu, &hw)) return;
    char arg[ARG_CAP];
    if (!step_model(r, name, &m, arg, &err)) {
        char why[1024];
        if (json_is_object(json_object_get(r, "config"))) snprintf(why, sizeof why, "%s", err.msg);
        else
            snprintf(why, sizeof why,
                     "%s (looked for %s.json beside the file and in tools/measure/configs, then a preset; or give "
                     "the row its HuggingFace \"config\")",
                     err.msg, name);
        row_skip(name, why);
        return;
    }
    const char *loss = json_string_value(json_object_get(r, "loss"));
    /* a BERT trained with labels has the masked-LM head (BertForMaskedLM) */
    if ((loss && strstr(loss, "masked-lm")) || m.arch == MODEL_ARCH_BERT) m.lm_head = true, m.pooler = false;
    ClusterSpec cl;
    if (hw_cluster_load("dgx-h100", 1, &cl, &err)) return;
    cl.gpu = hw.gpu;
    HwNet net;
    hw_net_init(&net, &cl);
    SimSetup in = {.model = &m, .hw = &hw, .net = &net};
    plan_init(&in.plan);
    in.plan.gpus = 1;
    in.plan.seq = dim(r, "seq");
    in.plan.micro_batch = in.plan.global_batch = dim(r, "micro_batch");
    sim_options_init(&in.opt);
    /* the measuring loop's gradients: freed after each step
     * (zero_grad(set_to_none=True)) where the row says so, else kept (and
     * added into by every backward) */
    const char *zg = json_string_value(json_object_get(r, "zero_grad"));
    in.opt.grads_freed = zg && !strcmp(zg, "set_to_none");
    in.plan.framework = PLAN_FRAMEWORK_HF;
    if (!plan_precision_parse(prec, &in.plan.precision)) {
        row_skip(name, "\"precision\" is amp or pure (docs/measure.md)");
        return;
    }
    SimResult res;
    if (sim_simulate(&in, NULL, &res, &err)) {
        row_skip(name, err.msg);
        return;
    }
    const StepCosts *sc = step_cost(&m, &hw, &in); /* the plan resolved by sim_simulate */
    if (g_kernels) step_kernels(r, sc, &res, short_gpu(gpu));
    const StepRow sr = {part, short_gpu(gpu), name, prec, (long long)in.plan.micro_batch, (long long)in.plan.seq};
    double meas = median_s(r, "step_ms"), fmeas = median_s(r, "fwd_nograd_ms"), gmeas = median_s(r, "fwd_grad_ms");
    if (g_verbose) step_flags(&in, &m, arg, gpu);
    if (meas > 0) {
        step_line(&sr, "step", meas, res.iteration_time_s);
        score(part[0] == 'E' ? "E step" : "A step", sr.gpu, res.iteration_time_s / meas - 1);
    }
    /* the forward alone, no-grad and (rows from 2026-11-27m) recorded for
     * autograd: the model's forward host time is the former's, the
     * recording counted with the backward */
    double fp = forward_s(sc);
    if (fmeas > 0) {
        if (g_verbose) step_line(&sr, "fwd", fmeas, fp);
        score(part[0] == 'E' ? "E fwd no-grad" : "A fwd no-grad", sr.gpu, fp / fmeas - 1);
    }
    if (gmeas > 0) {
        if (g_verbose) step_line(&sr, "fwd+r", gmeas, fp);
        score(part[0] == 'E' ? "E fwd recorded" : "A fwd recorded", sr.gpu, fp / gmeas - 1);
    }
    /* the harness's parameter count against trainsim's (the weights at the
     * row's precision), shown where they differ by more than 0.1 % */
    double rp = num(r, "params"), tp = res.memory.weights_bytes / (in.plan.precision == PLAN_PRECISION_AMP ? 4.0 : 2.0);
    if (rp > 0 && fabs(tp / rp - 1) > 1e-3)
        printf("    params: the row's %.0f, trainsim's %.0f (%+.2f%%)\n", rp, tp, 100 * (tp / rp - 1));
    if (num(r, "peak_mem_GiB") > 0) score_peak(r, &sr, &m, &in);
    sim_result_free(&res);
}

/* ---- kernels: C, D-fp8, D-attn, F ------------------------------------------- */
static bool g_host_in_loop; /* a kernel row was timed with the host in the loop */

/* The table's part for a kernel row: `part`, marked "(h)" when the row was
 * not timed with the GPU ahead of the host (no "timing": "host-ahead";
 * measure.py before 2026-11-27): such a kernel, when shorter than its
 * dispatch, was timed as the dispatch. */
static void score_kernel(const json_t *r, const char *part, const char *gpu, double err)
{
    const char *tm = json_string_value(json_object_get(r, "timing"));
    if (tm && !strcmp(tm, "host-ahead")) {
        score(part, gpu, err);
        return;
    }
    char p[24];
    snprintf(p, sizeof p, "%s(h)", part);
    score(p, gpu, err);
    g_host_in_loop = true;
}

/* One eager elementwise kernel as the templates cost it (cost_kernel): its
 * bytes streamed and, on PyTorch's generic path (an operand neither
 * contiguous nor a scalar: PART_KF_GENERIC), no faster than its `generic`
 * elements at the preset's generic rate (0: the vectorized path). */
static double eager_kernel_s(const HwModel *hw, double bytes, double generic)
{
    ParallelPlan p;
    plan_init(&p);
    CostCtx c;
    cost_ctx_init(&c, hw, &p, 1.0);
    PartKernel k = {.kind = PART_K_MEM, .part = PART_KP_MEM, .count = 1, .fwd_bytes = bytes};
    k.launches[0] = 1;
    if (generic > 0) {
        k.flags = PART_KF_GENERIC;
        k.elems[0] = generic;
    }
    double t[3];
    cost_kernel(&c, &k, t);
    return t[0];
}

/* An F-eager row's op: a masked fill (as the HF experts' masked fills) on
 * the generic path, every other op streamed. */
static double eager_op_time(const HwModel *hw, const char *op, double bytes, double elements)
{
    return eager_kernel_s(hw, bytes, !strncmp(op, "masked_fill", 11) ? elements : 0);
}

/* A D-attn-fe row (tools/measure/sdpa_sink.cpp: cuDNN's fused attention
 * through its frontend, causal, a window of W keys or none, a learned sink
 * or none), at the row's clock: the window's forward as cuDNN runs it (the
 * causal kernel over every key, PART_CUDNN_SWA_FWD), its backward as the
 * template's windowed core (whole key tiles: part_swa_keys),
 * the sink's backward at the preset's attn_sink_bwd_row_s a query row. */
static void row_attn_fe(const json_t *r, const HwModel *hw, const char *gpu, double tf)
{
    static const char *const DIMS[] = {"batch", "heads", "seq", "head_dim", "window"};
    for (size_t i = 0; i < sizeof DIMS / sizeof DIMS[0]; i++) {
        double v = num(r, DIMS[i]);
        if (!(v >= (i == 4 ? 0 : 1) && v <= 2147483647.0 && v == floor(v))) {
            row_skip(NULL, "a D-attn-fe row has its \"batch\", \"heads\", \"seq\" and \"head_dim\" whole and "
                           "from 1 to 2^31 - 1, its \"window\" from 0 (docs/measure.md)");
            return;
        }
    }
    int64_t b = dim(r, "batch"), h = dim(r, "heads"), s = dim(r, "seq");
    int64_t d = dim(r, "head_dim"), w = dim(r, "window");
    bool sink = json_is_true(json_object_get(r, "sink")), win = w > 0 && w < s;
    static const char *const NAME[2][2][2] = {{{"fe fwd", "fe bwd"}, {"fe sink fwd", "fe sink bwd"}},
                                              {{"fe win fwd", "fe win bwd"}, {"fe win+s fwd", "fe win+s bwd"}}};
    for (int bwd = 0; bwd < 2; bwd++) {
        double meas = num(r, bwd ? "bwd_ms" : "fwd_ms") * 1e-3, pred;
        if (!(meas > 0)) continue;
        if (win && !bwd) { /* cuDNN's windowed forward: the causal kernel over every key, masked */
            pred = hw_attention_time_s(hw, b, h, s, s, d, true, false, TS_DTYPE_BF16) * PART_CUDNN_SWA_FWD;
        } else if (win) {
            double wt, kt = part_swa_keys(s, w, &wt);
            pred = hw_attention_time_s(hw, b, h, s, (int64_t)wt, d, false, true, TS_DTYPE_BF16) * kt / wt;
        } else {
            pred = hw_attention_time_s(hw, b, h, s, s, d, true, bwd, TS_DTYPE_BF16);
        }
        if (sink && bwd) pred += (double)b * (double)h * (double)s * hw->gpu.attn_sink_bwd_row_s;
        pred *= tf;
        double e = pred / meas - 1;
        if (g_verbose)
            printf("D-attn-fe %-5s batch %-3lld heads %-3lld seq %-6lld d %-3lld window %-5lld%s %s  measured %8.3f ms  "
                   "predicted %8.3f ms  %+6.1f%%\n",
                   short_gpu(gpu), (long long)b, (long long)h, (long long)s, (long long)d, (long long)w,
                   sink ? " sink" : "     ", bwd ? "bwd" : "fwd", meas * 1e3, pred * 1e3, 100 * e);
        score_kernel(r, NAME[win][sink][bwd], short_gpu(gpu), e);
    }
}

/* -v: the trainsim command that times a kernel row's kernel (`what`: its
 * --gemm or --attention arguments) at the preset's clock, and the clock
 * factor gpu_accuracy applies to it (the preset's clock over the row's). */
static void kernel_flags(const HwModel *hw, const char *gpu, const char *what, double tf, double extra, bool row_clk)
{
    if (!g_verbose) return;
    printf("    flags: trainsim hw --gpu %s %s  (x %.4f: the preset's %.0f MHz to %s", preset_of(gpu), what, tf,
           hw->gpu.clock_mhz, row_clk ? "the row's clock" : "the clock of one GPU alone");
    if (extra != 1.0) printf("; x %.3f: the flash kernel over the fused attention", extra);
    printf(")\n");
}

static void row_kernel(const json_t *r, const char *gpu, const char *part)
{
    HwModel hw;
    if (!load_hw(gpu, &hw)) return;
    /* A single kernel is scored at the SM clock its row recorded (NVML's
     * median over the row), the kernel model being per clock; without one,
     * at the clock of one GPU alone (sim_tensor_factor of one GPU). */
    SimOptions so;
    sim_options_init(&so);
    double tf = sim_tensor_factor(&hw.gpu, &so, 1), clk = num(r, "clock_mhz");
    if (clk > 0 && hw.gpu.clock_mhz > 0) tf = hw.gpu.clock_mhz / clk;
    if (!strcmp(part, "D-attn-fe")) {
        row_attn_fe(r, &hw, gpu, tf);
    } else if (!strcmp(part, "C") || !strcmp(part, "D-fp8")) {
        int64_t M = dim(r, "m"), N = dim(r, "n"), K = dim(r, "k");
        bool fp8 = !strcmp(part, "D-fp8");
        double meas = fp8 ? num(r, "fp8_ms") : num(json_object_get(r, "randn"), "ms");
        double pred = tf * hw_gemm_time_s(&hw, 1, M, N, K, fp8 ? TS_DTYPE_FP8 : TS_DTYPE_BF16);
        if (!(meas > 0)) return;
        double e = pred / (meas * 1e-3) - 1;
        printf("%-6s %-5s gemm %lldx%lldx%lld %s  measured %8.3f ms  predicted %8.3f ms  %+6.1f%%\n", part,
               short_gpu(gpu), (long long)M, (long long)N, (long long)K, fp8 ? "fp8 " : "bf16", meas, pred * 1e3,
               100 * e);
        score_kernel(r, fp8 ? "D-fp8" : "C gemm", short_gpu(gpu), e);
        char what[96];
        snprintf(what, sizeof what, "--gemm %lld,%lld,%lld --dtype %s", (long long)M, (long long)N, (long long)K,
                 fp8 ? "fp8" : "bf16");
        kernel_flags(&hw, gpu, what, tf, 1.0, clk > 0);
    } else if (!strcmp(part, "D-attn")) {
        int64_t h = dim(r, "heads"), s = dim(r, "seq"), d = dim(r, "head_dim");
        /* batch and causal where the row has them (else 1, causal) */
        int64_t bt = num(r, "batch") > 0 ? dim(r, "batch") : 1;
        const json_t *cj = json_object_get(r, "causal");
        bool causal = !json_is_boolean(cj) || json_is_true(cj);
        /* rows timed on SDPA's flash backend (FlashAttention-2) are that
         * kernel: the preset's dropout-kernel factor */
        const char *be = json_string_value(json_object_get(r, "sdpa_backend"));
        bool fa2 = be && !strcmp(be, "flash");
        /* dropout on the probabilities: its draws are costed on top of the
         * core (hw_attn_dropout_time_s); these rows are scored apart */
        double p = num(r, "dropout");
        bool drop = p > 0;
        static const char *const NAME[2][2][2] = {{{"attn fwd", "attn bwd"}, {"fa2 fwd", "fa2 bwd"}},
                                                  {{"attn+dropout fwd", "attn+dropout bwd"},
                                                   {"fa2+dropout fwd", "fa2+dropout bwd"}}};
        for (int bwd = 0; bwd < 2; bwd++) {
            double meas = num(r, bwd ? "bwd_ms" : "fwd_ms");
            double pred = tf * (hw_attention_time_s(&hw, bt, h, s, s, d, causal, bwd, TS_DTYPE_BF16) *
                                    (fa2 ? hw_attn_fa2_factor(&hw.gpu, d, bwd) : 1.0) +
                                hw_attn_dropout_time_s(&hw, bt, h, s, s, causal, bwd, p));
            if (!(meas > 0)) continue;
            double e = pred / (meas * 1e-3) - 1;
            printf("D-attn %-5s batch %-3lld heads %-3lld seq %-6lld d %-3lld %-6s %-5s %s%s  measured %8.3f ms  predicted "
                   "%8.3f ms  %+6.1f%%\n",
                   short_gpu(gpu), (long long)bt, (long long)h, (long long)s, (long long)d, causal ? "causal" : "full",
                   fa2 ? "flash" : "cudnn", bwd ? "bwd" : "fwd", drop ? " dropout" : "", meas, pred * 1e3, 100 * e);
            score_kernel(r, NAME[drop][fa2][bwd], short_gpu(gpu), e);
            char what[128];
            snprintf(what, sizeof what, "--attention %lld,%lld,%lld,%lld,%lld%s%s", (long long)bt, (long long)h,
                     (long long)s, (long long)s, (long long)d, causal ? " --causal" : "", bwd ? " --backward" : "");
            kernel_flags(&hw, gpu, what, tf, fa2 ? hw_attn_fa2_factor(&hw.gpu, d, bwd) : 1.0, clk > 0);
        }
    } else if (!strcmp(part, "F-eager")) {
        /* one eager elementwise op, costed as the templates cost it */
        const char *op = json_string_value(json_object_get(r, "op"));
        double bytes = num(r, "bytes"), meas = num(r, "fwd_ms") * 1e-3;
        if (!op || !(bytes > 0) || !(meas > 0)) {
            row_skip(NULL, "an F-eager row has its \"op\", and \"bytes\" and \"fwd_ms\" above 0 (docs/measure.md)");
            return;
        }
        double pred = eager_op_time(&hw, op, bytes, num(r, "elements")), e = pred / meas - 1;
        score_kernel(r, "F-eager", short_gpu(gpu), e);
        if (g_verbose)
            printf("F-eager %-5s %-16s %-4s %6.0f MB  measured %7.3f ms  predicted %7.3f ms  %+6.1f%%\n",
                   short_gpu(gpu), op, json_string_value(json_object_get(r, "dtype")), bytes / 1e6, meas * 1e3,
                   pred * 1e3, 100 * e);
    } else if (!strcmp(part, "F")) {
        const char *op = json_string_value(json_object_get(r, "op"));
        double bytes = num(r, "bytes_fwd");
        if (!op || !(bytes > 0)) return; /* cross-entropy rows: scored with the steps */
        /* the bytes read + written per pass as the templates count them, in
         * tensors of the row's size (its bytes_fwd is one read + one write
         * at the row's dtype): an activation and a softmax 2 / 3; an add 3
         * forward; a cast to fp32 writes 4 B for each 2 B read, 3 tensors'
         * worth each way; a norm as PyTorch's row kernel over the row's
         * tokens (torch_norm_s) */
        static const struct { const char *op; double f, b; } BYTES[] = {{"add", 3, 0}, {"cast_to_fp32", 3, 3}};
        double nf = 2, nb = 3;
        for (size_t i = 0; i < sizeof BYTES / sizeof BYTES[0]; i++)
            if (!strcmp(op, BYTES[i].op)) nf = BYTES[i].f, nb = BYTES[i].b;
        bool norm = !strcmp(op, "layer_norm") || !strcmp(op, "rms_norm");
        double rows = num(r, "tokens");
        double f = norm ? torch_norm_s(&hw, bytes / 2, rows, 0) : hw_memory_time_s(&hw, nf / 2 * bytes);
        double b = norm ? torch_norm_s(&hw, bytes / 2, rows, 1) : hw_memory_time_s(&hw, nb / 2 * bytes);
        double mf = num(r, "fwd_ms") * 1e-3, mb = num(r, "bwd_ms") * 1e-3;
        /* an add's backward launches no kernel (the gradient passes through) */
        bool no_bwd = !strcmp(op, "add");
        if (mf > 0) score_kernel(r, "F fwd", short_gpu(gpu), f / mf - 1);
        if (mb > 0 && !no_bwd) score_kernel(r, "F bwd", short_gpu(gpu), b / mb - 1);
        if (g_verbose)
            printf("F      %-5s %-14s %6.0f MB  fwd %7.3f / %7.3f ms  bwd %7.3f / %7.3f ms\n", short_gpu(gpu), op,
                   bytes / 1e6, mf * 1e3, f * 1e3, mb * 1e3, b * 1e3);
    }
}

static int run_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "gpu_accuracy: cannot open %s: %s\nhint: a measurements file, JSON lines as docs/measure.md "
                        "describes (tools/measure/measure.py writes them)\n",
                path, strerror(errno));
        return 1;
    }
    printf("== %s\n", path);
    const char *slash = strrchr(path, '/');
    snprintf(g_dir, sizeof g_dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    char *line = NULL;
    size_t cap = 0;
    int ln = 0;
    while (getline(&line, &cap, f) >= 0) {
        ln++;
        if (line[strspn(line, " \t\r\n")] == 0) continue; /* a blank line */
        json_error_t je;
        json_t *r = json_loads(line, 0, &je);
        if (!r) {
            fprintf(stderr, "%s:%d:%d: error: %s\nhint: one JSON object per line (docs/measure.md)\n", path, ln,
                    je.column > 0 ? je.column : 1, je.text);
            continue;
        }
        snprintf(g_row, sizeof g_row, "%s:%d", path, ln);
        const char *part = json_string_value(json_object_get(r, "part"));
        const char *gpu = json_string_value(json_object_get(r, "gpu"));
        if (part && gpu) {
            if (!strcmp(part, "B")) row_b(r, gpu);
            else if (!strcmp(part, "A") || !strcmp(part, "E")) row_a(r, gpu, part);
            else row_kernel(r, gpu, part);
        } else {
            fprintf(stderr, "%s:%d: skipped: the row has no \"%s\"\nhint: every row names its \"part\" and its "
                            "\"gpu\" (docs/measure.md)\n",
                    path, ln, part ? "gpu" : "part");
        }
        json_decref(r);
    }
    free(line);
    fclose(f);
    return 0;
}

int main(int argc, char **argv)
{
    int rc = 0, files = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-v")) g_verbose = true;
        else if (!strcmp(argv[i], "-k")) g_kernels = true;
        else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
            TsError err = {0};
            if (hw_calib_load(argv[++i], &g_calib, &err)) {
                fprintf(stderr, "gpu_accuracy: %s\n", err.msg);
                return 2;
            }
        }
        else if (argv[i][0] == '-') {
            fprintf(stderr, "gpu_accuracy: unknown option %s\nusage: gpu_accuracy [-v] [-k] [-c CALIBRATION.json] "
                            "[FILE.jsonl ...]\n",
                    argv[i]);
            return 2;
        } else rc |= run_file(argv[i]), files++;
    }
    if (!files) {
        static const char *const DEF[] = {"measurements_shared.jsonl", "measurements_2026-11-26_h100.jsonl",
                                          "measurements_2026-11-26_h200.jsonl",
                                          "measurements_2026-11-26_h100_small.jsonl",
                                          "attn_2026-11-27_h100.jsonl",
                                          "attn_2026-11-27_h200.jsonl",
                                          "kernels_2026-11-27_h100.jsonl",
                                          "kernels_2026-11-27_h200.jsonl",
                                          "eager_2026-11-27_h100.jsonl",
                                          "eager_2026-11-27_h200.jsonl",
                                          "shards_2026-11-27e_h200.jsonl",
                                          "shards_2026-11-27f_h100.jsonl",
                                          "shards_2026-11-27f_h200.jsonl",
                                          "shards_soak_2026-11-27g_h200.jsonl"};
        for (size_t i = 0; i < sizeof DEF / sizeof DEF[0]; i++) {
            char p[512];
            snprintf(p, sizeof p, "%s/data/gpu/%s", TS_BENCH_DIR, DEF[i]);
            rc |= run_file(p);
        }
    }
    if (g_nstat == 0) { /* nothing scored: no table */
        fprintf(stderr, "gpu_accuracy: no row scored\nhint: the rows docs/measure.md describes, on a GPU with a preset "
                        "(H100, H200, H800, A100)\n");
        return rc ? rc : 1;
    }
    printf("\n%-25s %5s %8s %8s\n", "part GPU", "rows", "MAPE", "bias");
    for (int i = 0; i < g_nstat; i++)
        printf("%-25s %5d %7.1f%% %+7.1f%%\n", g_stat[i].key, g_stat[i].n, 100 * g_stat[i].abs_sum / g_stat[i].n,
               100 * g_stat[i].sum / g_stat[i].n);
    if (g_kinds_scored)
        printf("k GEMM / attention / other: -k, each kind of GPU time in the profiled steps the GPU bounds (kernels "
               ">= 80 %% of the step), predicted / measured - 1\n");
    if (g_host_in_loop)
        printf("(h): kernel rows timed with the host in the loop (no \"timing\": \"host-ahead\"): a kernel "
               "shorter than its dispatch was timed as the dispatch\n");
    return rc;
}
