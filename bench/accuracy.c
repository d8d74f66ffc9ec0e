/*
 * accuracy — predicted vs published throughput for every time/throughput row
 * of bench/data/calibration_runs.csv (a copy of validation/calibration_runs.csv).
 *
 * Like with like (validation/README.md):
 *   N21 tflops_per_gpu      96*B*s*l*h^2*(1 + s/6h + V/16lh) / (T_pred * gpus)
 *   BLOOM tflops_per_gpu    the same formula: Megatron-DeepSpeed's logger
 *                           (throughput_calculator) prints it, x4 under
 *                           activation checkpointing; model FLOPs shown beside;
 *                           so for Megatron-DeepSpeed rows up to 2023 (mds_row)
 *   OPT tflops_per_gpu      the N21 formula too (x4: activation
 *                           checkpointing), over the unpadded vocab: OPT's
 *                           logbook counts its run so (4.30E+23 FLOPs for
 *                           300B tokens; 147 TFLOP/s is that over ~33 days on
 *                           1024 GPUs); model FLOPs shown beside
 *   other tflops_per_gpu    trainsim's model FLOPs, attention counted as the
 *                           publisher counts it (row_flops: the whole score
 *                           square, or causal-halved for Megatron-Bridge,
 *                           NeMo 25.09 on, Megatron-Core 0.12 on), or the N21
 *                           formula for Megatron's papers to 2022
 *   tokens_per_s_per_gpu    global_batch * seq / (T_pred * gpus)
 *   iteration_s             T_pred
 * Error = predicted / published - 1 on the throughput (published / predicted
 * - 1 for an iteration time): positive = we predict faster than measured. Per table: MAPE and signed bias (mean error).
 *
 * Unstated knobs are chosen by fixed rules, printed with each row; nothing is
 * fitted per row or per model. Usage: accuracy [-v] [-r] [-x] [--runs CSV]
 * [--csv OUT] (default TS_BENCH_DIR/data/calibration_runs.csv; a bare CSV
 * argument too); --csv: a record per run (csv_record), written aside and
 * renamed into place; -v: each row's breakdown, -r: each row's task graph replayed too,
 * -x: leave-one-table-out check of the A100 sustained clock and
 * leave-one-model-out checks of the H100 and B200 ones (cross_validate,
 * cross_validate_models). A runs file has the validation columns (runs_csv.h, any
 * order, named in its header line; extra columns are ignored; dtype,
 * attention, framework, software and flops optional, stating what a table's
 * rule would otherwise choose); its rows
 * form tables by id prefix (the id up to its last '-'): the published
 * tables' rules apply to their ids, Megatron-Core's defaults to any other.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "trainsim/hw.h"
#include "trainsim/sim.h"
#include "trainsim/sim_replay.h"
#include "trainsim/sim_workload.h"

#include "accuracy_text.h"
#include "runs_csv.h"

#ifndef TS_BENCH_DIR
#define TS_BENCH_DIR "bench"
#endif

enum { MAXROW = RUNS_MAXROW };
typedef RunRow Row;
static int col(const char *name) { return runs_col(name); }

static int64_t geti(const Row *r, const char *c, int64_t dflt)
{
    const char *s = r->f[col(c)];
    return *s ? strtoll(s, NULL, 10) : dflt;
}

static bool starts(const char *s, const char *pre) { return strncmp(s, pre, strlen(pre)) == 0; }

/* What the row's source and notes say (accuracy_text.h). */
static bool says(const Row *r, const char *what)
{
    const char *text[2] = {r->f[col("source")], r->f[col("notes")]};
    return acc_says(text, what);
}

/* says, not negated (acc_says_on) */
static bool says_on(const Row *r, const char *what)
{
    const char *text[2] = {r->f[col("source")], r->f[col("notes")]};
    return acc_says_on(text, what);
}

/* The generation of the CUDA libraries the row ran (hw_gpu_software): the
 * software column; else 2024 where the source or notes name a 2024 stack (a
 * NeMo 24.x container, CUDA 12.4-12.6) or date the run no later than 2024
 * (a run published then ran before cuBLAS 12.9, May 2025); else the current
 * libraries. *why: the rule's words. */
static HwSoftware row_software(const Row *r, const char **why)
{
    HwSoftware sw = HW_SOFTWARE_2025;
    *why = "";
    const char *text[2] = {r->f[col("source")], r->f[col("notes")]};
    int y = acc_latest_year(text);
    if (*r->f[col("software")]) {
        hw_software_parse(r->f[col("software")], &sw);
        *why = "2024 CUDA libraries (software column); ";
    } else if (says(r, "NeMo 24.") || says(r, "container 24.") || says(r, "CUDA 12.4") || says(r, "CUDA 12.5") ||
               says(r, "CUDA 12.6")) {
        sw = HW_SOFTWARE_2024;
        *why = "2024 CUDA libraries (source); ";
    } else if (y > 0 && y <= 2024) {
        sw = HW_SOFTWARE_2024;
        *why = "2024 CUDA libraries (published by 2024); ";
    }
    return sw;
}

typedef struct Table {
    const char *name;
    double sum_abs, sum;
    int n;
    double r_abs, r_sum; /* -r: the replayed task graph's error */
    int rn;
} Table;

/* -r: the row's plan written as its task graph (sim_workload_build) and
 * replayed (sim_replay_dag); the replay's iteration time, 0 on failure. */
static double replay_time(const SimSetup *in, const HwNet *net)
{
    SimSetup g = *in;
    Workload *wl = NULL;
    TsError err = {0};
    if (sim_workload_build(&g, &wl, &err) != TS_OK) {
        printf("            (replay: %s)\n", err.msg);
        return 0;
    }
    SimResult r;
    double t = sim_replay_dag(wl, net, in->opt.overlap_slowdown, false, &r, &err) == TS_OK ? r.iteration_time_s : 0;
    if (t > 0) sim_result_free(&r);
    wl_destroy(wl);
    return t;
}

/* Letters and digits only, lower case, up to a parenthesis: "Qwen3_30B_a3B
 * (tokendrop) DeepEP" and "qwen3-30b-a3b" both "qwen330ba3b"; with `minor`,
 * a version's minor part dropped ("LLAMA3.1_405B": "llama3405b"). */
static void name_key(const char *s, bool minor, char *out, size_t cap)
{
    size_t n = 0;
    for (const char *q = s; *q && *q != '(' && n + 1 < cap; q++) {
        if (minor && *q == '.' && q > s && isdigit((unsigned char)q[-1]) && isdigit((unsigned char)q[1])) {
            while (isdigit((unsigned char)q[1])) q++;
            continue;
        }
        if (isalnum((unsigned char)*q)) out[n++] = (char)tolower((unsigned char)*q);
    }
    out[n] = 0;
}

/* The preset a row's model names: its own name, then the presets whose
 * letters and digits match (spelling aside: Megatron-Bridge's tables write
 * "Qwen3_30B_a3B", "DeepSeekV3", "GPT OSS 120B"), then without a version's
 * minor part (Llama 3.1 405B is Llama 3 405B's architecture). */
static bool preset_named(const char *model, ModelSpec *m, char *found, size_t cap)
{
    TsError err = {0};
    if (model_preset(model, m, &err) == TS_OK) {
        snprintf(found, cap, "%.63s", model);
        return true;
    }
    static char names[256][64];
    int n = model_preset_names(names, 256);
    for (int pass = 0; pass < 2; pass++) {
        char want[64], key[64];
        name_key(model, pass == 1, want, sizeof want);
        for (int i = 0; i < n; i++) {
            name_key(names[i], false, key, sizeof key);
            if (!strcmp(key, want) && model_preset(names[i], m, &err) == TS_OK) {
                snprintf(found, cap, "%.63s", names[i]);
                return true;
            }
        }
    }
    return false;
}

/* Model: the preset of the same name supplies the architecture (norm,
 * activation, positions, biases, tying, experts); the row supplies every
 * dimension. A row with EP names an MoE model: without a preset of that name
 * it is not run (the CSV has no expert columns). */
static int row_model(const Row *r, ModelSpec *m, char *why, size_t cap)
{
    char name[64], found[64];
    snprintf(name, sizeof name, "%.63s", r->f[col("model")]);
    for (char *q = name; *q; q++) *q = (char)tolower((unsigned char)*q);
    TsError err = {0};
    const char *tries[4] = {name, NULL, NULL, NULL};
    char alt[64];
    if (starts(name, "gpt-175b")) tries[1] = "gpt3-175b";
    if (starts(name, "gpt3-")) {
        snprintf(alt, sizeof alt, "gpt3-%s", name + 5);
        tries[1] = alt;
    }
    tries[2] = strstr(name, "llama") ? "llama2-7b" : "gpt3-175b";
    if (geti(r, "ep", 1) > 1) tries[2] = NULL; /* no dense stand-in for an MoE model */
    int ok = 0;
    for (int i = 0; i < 3 && !ok; i++) {
        if (!tries[i]) continue;
        if (i == 0 ? preset_named(tries[i], m, found, sizeof found) : model_preset(tries[i], m, &err) == TS_OK) {
            ok = 1;
            snprintf(why, cap, "arch from preset %s", i == 0 ? found : tries[i]);
        }
    }
    if (!ok) {
        snprintf(why, cap, "no model preset named %s (an MoE run needs one: trainsim models lists them)",
                 r->f[col("model")]);
        return 1;
    }
    /* a head width of the preset's own (Qwen3, GPT-OSS: heads x head_dim is
     * not hidden) stays where the row keeps its heads */
    int64_t pre_hidden = m->hidden, pre_heads = m->heads;
    bool own_dim = m->head_dim * m->heads != m->hidden;
    m->layers = geti(r, "layers", m->layers);
    m->hidden = geti(r, "hidden", m->hidden);
    m->heads = geti(r, "heads", m->heads);
    m->kv_heads = geti(r, "kv_heads", m->heads);
    if (!(own_dim && m->heads == pre_heads && m->hidden == pre_hidden)) m->head_dim = m->hidden / m->heads;
    /* an MoE preset's expert width in the ffn column names its experts */
    int64_t ffn = geti(r, "ffn", m->ffn);
    if (!(m->experts > 0 && ffn == m->moe_ffn)) m->ffn = ffn;
    m->vocab = geti(r, "vocab", m->vocab);
    int64_t seq = geti(r, "seq", 2048);
    if (m->max_positions < seq) m->max_positions = seq;
    snprintf(m->name, sizeof m->name, "%.63s", r->f[col("model")]);
    return model_validate(m, &err) != TS_OK;
}

typedef struct EvalOpts {
    bool verbose, replay, print;
    FILE *csv;             /* --csv: a record per row (csv_record), NULL for none */
    const char *table;     /* the row's table, for the csv */
    const char *clock_gpu; /* with clock_mhz > 0: the sustained clock of the GPU presets */
    double clock_mhz;      /* whose name contains clock_gpu replaced (-x), e.g. "a100", 1380 */
} EvalOpts;

typedef struct Score {
    double e, re; /* predicted / published - 1; re: of the replayed task graph, NaN if none */
} Score;

enum { MAXTAB = 32 };

/* The table of a row id: a known table whose name prefixes it, else the one
 * named by the id up to its last '-' (added to tabs[] when new). */
static Table *table_of(Table *tabs, int *ntab, const char *id)
{
    for (int t = 0; t < *ntab; t++)
        if (starts(id, tabs[t].name)) return &tabs[t];
    static char names[MAXTAB][64];
    const char *dash = strrchr(id, '-');
    size_t len = dash && dash > id ? (size_t)(dash - id) : strlen(id);
    if (*ntab >= MAXTAB || len >= sizeof names[0]) return NULL;
    memcpy(names[*ntab], id, len);
    names[*ntab][len] = 0;
    for (int t = 0; t < *ntab; t++)
        if (!strcmp(tabs[t].name, names[*ntab])) return &tabs[t];
    tabs[*ntab] = (Table){.name = names[*ntab]};
    return &tabs[(*ntab)++];
}

/* The cluster of the row's GPU, named in any case (the node as its vendor
 * ships it: NVLink in the node, one NIC per GPU; GB200 before B200, which it
 * contains; a PCIe card in its 2-8-5 PCIe server); BLOOM ran on Jean Zay's
 * Omni-Path. *variant: the GPU preset that replaces the cluster's (a 40 GB
 * A100), else NULL. NULL: no preset for that GPU. */
static const char *row_cluster(const char *gpu, bool bloom, const char **variant)
{
    static const struct { const char *family, *cluster, *pcie; } map[] = {
        {"h100", "dgx-h100", "h100-pcie-2-8-5"}, {"h200", "hgx-h200", NULL},  {"h800", "hgx-h800", NULL},
        {"gb200", "gb200-nvl72", NULL},          {"b200", "dgx-b200", NULL},  {"mi300x", "mi300x-8", NULL},
        {"a100", "dgx-a100", "a100-pcie-2-8-5"}, {"l40s", NULL, "l40s-2-8-5"}};
    const char *fam = hw_gpu_family(gpu); /* "NVIDIA H100 80GB", "h100-sxm5": h100 */
    char low[128];
    size_t n = 0;
    for (; gpu[n] && n + 1 < sizeof low; n++) low[n] = (char)tolower((unsigned char)gpu[n]);
    low[n] = 0;
    *variant = NULL;
    for (size_t i = 0; fam && i < sizeof map / sizeof map[0]; i++) {
        if (strcmp(fam, map[i].family)) continue;
        bool a100 = !strcmp(fam, "a100");
        if (strstr(low, "pcie") || !map[i].cluster) return map[i].pcie; /* its 2-8-5 server (NULL: none) */
        /* the DGX A100 320 GB: the 40 GB part in the same network */
        if (a100 && (strstr(low, "40gb") || strstr(low, "40 gb") || strstr(low, "-40g"))) *variant = "a100-sxm4-40gb";
        return bloom && a100 ? "jean-zay-a100" : map[i].cluster;
    }
    return NULL;
}

typedef struct RowKind {
    bool n21, nemo, bloom, opt, tt; /* the row's table */
    bool mds_logger; /* its TFLOP/s are Megatron-DeepSpeed's logger's (mds_row) */
    bool n21_flops;  /* its TFLOP/s count as the N21 paper's formula (row_flops) */
} RowKind;

/* The row's plan: its stated knobs, and the fixed rule of its table for
 * each knob it does not state (named in `rules`). */
/* A NeMo or Megatron-Bridge run: its table (NEMO2407), or its source, notes
 * or framework column naming either (their recipes' settings apply) */
static bool nemo_row(const Row *r, RowKind k)
{
    const char *fw = r->f[col("framework")], *text[2] = {r->f[col("source")], r->f[col("notes")]};
    return k.nemo || acc_says_nemo(text) || says(r, "megatron-bridge") || !strcmp(fw, "nemo") ||
           !strcmp(fw, "megatron-bridge");
}

/* A preset's sustained clock, read from the preset (data/gpus), not restated. */
static void print_clock(const char *label, const char *preset, const char *after)
{
    GpuSpec g;
    if (hw_gpu_load(preset, &g, NULL) != TS_OK) return;
    printf("%s sustained clock %.0f of %.0f MHz%s", label, g.sustained_clock_mhz, g.clock_mhz, after);
}

enum { RULES_CAP = 1024 }; /* a row's rules text (RowSetup.rules) */

/* A row's MoE knobs: expert TP, DeepEP, token drop. */
static void row_moe(const Row *r, const ModelSpec *m, RowKind k, ParallelPlan *p, char *rules)
{
    /* expert tensor parallelism: 1 in NeMo's and Megatron-Bridge's MoE
     * recipes (their performance configs set expert_tensor_parallel_size 1:
     * scripts/performance/configs/{qwen3,deepseek,gpt_oss}/workload_base_configs.py,
     * 2025-11); Megatron-Core's default (tp) elsewhere, or 1 where ep x tp
     * does not divide tp x cp x dp (Megatron-Core refuses it: the run set it) */
    if (m->experts > 0 && p->ep > 1 && p->tp > 1) {
        bool bridge = nemo_row(r, k);
        if (bridge || (p->tp * p->cp * p->dp) % (p->ep * p->tp) != 0) {
            p->etp = 1;
            strcat(rules, bridge ? "etp 1 (NeMo / Megatron-Bridge recipes); " : "etp 1 (ep x tp does not divide); ");
        }
    }
    /* DeepEP's dispatch (Megatron's flex dispatcher), where the row names it */
    if (m->experts > 0 && p->ep > 1 && says_on(r, "deepep")) {
        p->moe_dispatch = PLAN_MOE_DISPATCH_DEEPEP;
        strcat(rules, "DeepEP dispatch (notes); ");
    }
    /* Megatron-Core's EP overlap where the row names it (its
     * --overlap-moe-expert-parallel-comm, Megatron-Bridge's moe_a2a_overlap):
     * 1f1b-a2a, which with stages runs inside the interleaved schedule */
    bool a2a = says_on(r, "moe_a2a_overlap") || says_on(r, "overlap_moe_expert_parallel_comm") ||
               says_on(r, "overlap-moe-expert-parallel-comm") || says_on(r, "a2a overlap");
    if (m->experts > 0 && p->ep > 1 && a2a) { /* where the plan's rules take it (plan_check_knobs) */
        PlanSchedule was = p->schedule;
        TsError e = {0};
        p->schedule = PLAN_SCHED_1F1B_A2A;
        if (plan_check_knobs(m, p, &e) == TS_OK) {
            strcat(rules, "EP all-to-all overlap (notes); ");
        } else {
            p->schedule = was;
            snprintf(rules + strlen(rules), RULES_CAP - strlen(rules), "EP overlap said but ignored (%s); ", e.msg);
        }
    }
    /* token drop, as Megatron-Bridge's tables mark MoE runs "(tokendrop)":
     * capacity factor 1, each expert's input padded to it (its
     * apply_moe_token_drop; Megatron-Core's token drop needs the alltoall
     * dispatcher) */
    const char *mt[3] = {r->f[col("model")], r->f[col("notes")], r->f[col("source")]};
    for (int i = 0; m->experts > 0 && i < 3 && p->moe_capacity == 0 && p->moe_dispatch != PLAN_MOE_DISPATCH_DEEPEP;
         i++) {
        const char *tx[2] = {mt[i], ""};
        if (acc_says_on(tx, "tokendrop") || acc_says_on(tx, "token drop") || acc_says_on(tx, "token-drop")) {
            p->moe_capacity = 1.0, p->moe_pad = true;
            strcat(rules, "token drop: capacity 1, padded (notes); ");
        }
    }
}

/* A row's micro-batch (stated, BLOOM's launch script, else the mb rule) and
 * its global batch, rounded to a multiple of mb x dp. */
static void row_batch(const Row *r, RowKind k, ParallelPlan *p, char *rules)
{
    /* unstated micro-batch: 1 with pipelining (Megatron's choice for
     * pipelined runs); without pipelining the per-replica batch up to 8 */
    if (*r->f[col("micro_batch")]) {
        p->micro_batch = geti(r, "micro_batch", 1);
    } else if (k.bloom) {
        /* the run's launch script states it: bigscience-workshop/bigscience
         * train/tr11-176B-ml/tr11-176B-ml.slurm, MICRO_BATCH_SIZE=2 (1 only
         * during the batch-size ramp-up, GBS < 784) */
        p->micro_batch = 2;
        strcat(rules, "mb 2 from the tr11 launch script; ");
    } else {
        int64_t per = p->global_batch / (p->dp > 0 ? p->dp : 1);
        p->micro_batch = 1;
        if (p->pp == 1)
            while (p->micro_batch * 2 <= 8 && per % (p->micro_batch * 2) == 0) p->micro_batch *= 2;
        strcat(rules, "mb rule; ");
    }
    if (p->global_batch % (p->micro_batch * p->dp)) { /* OPT: ~1024 seqs on dp 124 */
        p->global_batch = (p->global_batch / (p->micro_batch * p->dp)) * p->micro_batch * p->dp;
        if (p->global_batch == 0) p->global_batch = p->micro_batch * p->dp;
        strcat(rules, "gb rounded to dp; ");
    }
}

/* A row's recompute (mode, Megatron-Core's modules, full recompute's layers)
 * and its distributed optimizer or ZeRO stage. */
static void row_recompute(const Row *r, const ModelSpec *m, ParallelPlan *p, char *rules)
{
    const char *rc = r->f[col("recompute")];
    p->recompute = starts(rc, "full") ? PLAN_RECOMPUTE_FULL
                  : starts(rc, "selective") ? PLAN_RECOMPUTE_SELECTIVE : PLAN_RECOMPUTE_NONE;
    uint32_t mods = 0;
    if (runs_rc_modules(rc, &mods) && mods) { /* selective(layernorm,moe_act): Megatron-Core's modules */
        p->recompute_modules = mods;
        strcat(rules, "recompute modules as said; ");
    }
    const char *text[2] = {r->f[col("source")], r->f[col("notes")]};
    if (p->recompute == PLAN_RECOMPUTE_FULL) {
        int64_t nl = acc_recompute_layers(rc, text), chunk = (m->layers + p->pp * p->vpp - 1) / (p->pp * p->vpp);
        if (nl > 0 && nl < chunk) {
            p->recompute_layers = nl;
            strcat(rules, "full recompute of the layers said (notes); ");
        }
    }
    const char *dopt = r->f[col("dist_opt")];
    if (strstr(dopt, "zero3")) p->zero = 3;
    else if (starts(dopt, "distopt")) p->dist_opt = true;
    else if (strstr(dopt, "zero1")) p->zero = 1;
    /* PyTorch FSDP's SHARD_GRAD_OP (with pp: framework torchtitan) */
    else if (strstr(dopt, "zero2")) p->zero = 2;
}

/* A row's precision: the table's, the one its source or notes state, and
 * FP8's scaling recipe. */
static void row_precision(const Row *r, RowKind k, ParallelPlan *p, char *rules)
{
    p->dtype = k.nemo ? TS_DTYPE_FP8 : (k.n21 || k.opt) ? TS_DTYPE_FP16 : TS_DTYPE_BF16;
    /* the precision the row states in its source or notes, over the table's */
    if (says(r, "fp8")) p->dtype = TS_DTYPE_FP8;
    else if (says(r, "bf16")) p->dtype = TS_DTYPE_BF16;
    else if (says(r, "fp16")) p->dtype = TS_DTYPE_FP16;
    if (p->dtype == TS_DTYPE_FP8 && (says(r, "current scaling") || says(r, "current-scaling") || says(r, "per-tensor") ||
                                     says(r, "fp8-cs")))
        p->fp8_recipe = PLAN_FP8_CURRENT;
    /* block scales: DeepSeek-V3's 1x128 / 128x128 ("sub-channel", NeMo's
     * FP8-SC) and MXFP8's 1x32 (NeMo's FP8-MX) run as blockwise, where the row
     * does not name current scaling */
    bool mx = says(r, "mxfp8") || says(r, "fp8-mx") || says(r, "sub-channel") || says(r, "subchannel") ||
              says(r, "fp8-sc");
    if (p->dtype == TS_DTYPE_FP8 && (says(r, "blockwise") || says(r, "block-wise") ||
                                     (mx && p->fp8_recipe != PLAN_FP8_CURRENT)))
        p->fp8_recipe = PLAN_FP8_BLOCKWISE;
    if (p->fp8_recipe != PLAN_FP8_DELAYED) {
        strcat(rules, p->fp8_recipe == PLAN_FP8_CURRENT ? "fp8 current scaling (notes); " : "fp8 blockwise (notes); ");
    }
}

/* A row's attention (fused or not), TP overlap and stated dtype / attention columns. */
static void row_attention(const Row *r, RowKind k, ParallelPlan *p, char *rules)
{
    const char *text[2] = {r->f[col("source")], r->f[col("notes")]};
    /* fused attention only in the 2024 frameworks (NeMo/TE, torchtitan SDPA);
     * a run published by 2022 predates it: FlashAttention (Dao et al., arXiv
     * 2205.14135, May 2022) reached Megatron-LM (--use-flash-attn) and
     * PyTorch's SDPA (2.0) in 2023, so such a run kept the softmax's S^2
     * probabilities (Megatron's fused scale-mask-softmax) */
    int year = acc_latest_year(text);
    p->flash_attn = !(k.n21 || k.bloom || k.opt);
    /* TP comm overlap (TE userbuffers) as the row says; unsaid, as NeMo's
     * and Megatron-Bridge's performance recipes set it where TP > 1 (NeMo 2
     * *_performance_optimizations, Megatron-Bridge scripts/performance and
     * perf_recipes: tp_comm_overlap with a userbuffers_* config for BF16
     * and FP8) */
    int tpov = acc_tp_overlap(text);
    bool recipe = nemo_row(r, k);
    p->tp_overlap = p->tp > 1 && (tpov == 1 || (tpov < 0 && recipe));
    if (p->tp > 1 && !k.nemo && tpov == 1) strcat(rules, "TP overlap (notes); ");
    if (p->tp > 1 && !k.nemo && tpov < 0 && recipe) strcat(rules, "TP overlap (NeMo / Megatron-Bridge recipes); ");
    if (p->tp > 1 && tpov == 0 && recipe) strcat(rules, "no TP overlap (notes); ");
    /* stated knobs (optional columns) over the table's rules */
    const char *dt = r->f[col("dtype")], *at = r->f[col("attention")];
    if (*dt) ts_dtype_parse(dt, &p->dtype);
    if (*at) p->flash_attn = !strcmp(at, "flash");
    else if (p->flash_attn && year > 0 && year <= 2022) {
        p->flash_attn = false;
        strcat(rules, "unfused attention (published by 2022); ");
    }
}

static void row_plan(const Row *r, const ModelSpec *m, RowKind k, ParallelPlan *p, char *rules)
{
    plan_init(p);
    p->tp = geti(r, "tp", 1);
    p->pp = geti(r, "pp", 1);
    p->vpp = geti(r, "vpp", 1);
    p->dp = geti(r, "dp", 1);
    p->cp = geti(r, "cp", 1);
    p->ep = geti(r, "ep", 1);
    p->gpus = geti(r, "num_gpus", p->tp * p->pp * p->dp * p->cp);
    p->seq = geti(r, "seq", 2048);
    p->global_batch = geti(r, "global_batch", 1);
    p->sp = strcmp(r->f[col("seq_parallel")], "yes") == 0;
    p->sp_set = true;
    if (p->vpp > 1) p->schedule = PLAN_SCHED_INTERLEAVED;
    row_moe(r, m, k, p, rules);
    row_batch(r, k, p, rules);
    row_recompute(r, m, p, rules);
    row_precision(r, k, p, rules);
    row_attention(r, k, p, rules);
    /* uneven pipelines: the plan's rule (last and first chunk one layer
     * lighter first, plan.h ParallelPlan.uneven) */
    if (m->layers % (p->pp * p->vpp)) {
        p->uneven = true;
        strcat(rules, "uneven stages; ");
    }
}

/* Everything one row simulates with: its model, plan, hardware and runtime
 * options (in points into the others), and the rules used, for printing. */
typedef struct RowSetup {
    RowKind k;
    ModelSpec m;
    ClusterSpec cl;
    HwModel hw;
    HwNet net;
    SimSetup in;
    char rules[RULES_CAP];
} RowSetup;

/* The resolved plan in a few words: "tp8 pp8 v1 dp16 cp1 mb1 sp selective distopt". */
static void plan_text(const ParallelPlan *q, char *plan, size_t cap)
{
    char rcname[24];
    snprintf(rcname, sizeof rcname, "%s", plan_recompute_name(q->recompute));
    if (q->recompute == PLAN_RECOMPUTE_FULL && q->recompute_layers > 0)
        snprintf(rcname, sizeof rcname, "full%lld", (long long)q->recompute_layers);
    snprintf(plan, cap, "tp%lld pp%lld v%lld dp%lld cp%lld mb%lld %s%s%s%s", (long long)q->tp, (long long)q->pp,
             (long long)q->vpp, (long long)q->dp, (long long)q->cp, (long long)q->micro_batch, q->sp ? "sp " : "",
             rcname,
             q->zero ? (q->zero == 3 ? " zero3" : q->zero == 2 ? " zero2" : " zero1") : q->dist_opt ? " distopt" : "",
             q->tp_overlap ? " tpov" : "");
}

static const char *const CSV_COLS[] = {"id",        "table",     "status", "model", "plan",        "dtype", "metric",
                                       "published", "predicted", "error",  "iteration_s", "fits",  "rules"};
enum { CSV_NCOL = sizeof CSV_COLS / sizeof CSV_COLS[0] };

/* --csv: the row's record. status "scored" with s and res, the prediction
 * pred and its error e, the whole resolved plan (plan_describe); else why
 * the row is not scored (s, res NULL). */
static void csv_record(const EvalOpts *o, const Row *r, const char *status, const RowSetup *s, const SimResult *res,
                       double pred, double e)
{
    char num[4][32] = {{0}}, rules[sizeof s->rules] = "";
    TsBuf plan = {0};
    const char *v[CSV_NCOL] = {r->f[col("id")], o->table ? o->table : "", status, "", "", "", r->f[col("metric")],
                               r->f[col("value")], "", "", "", "", ""};
    if (s && res) {
        plan_describe(&s->in.plan, &plan);
        snprintf(num[0], sizeof num[0], "%.6g", pred);
        snprintf(num[1], sizeof num[1], "%.6f", e);
        snprintf(num[2], sizeof num[2], "%.6g", res->iteration_time_s);
        v[3] = s->m.name, v[4] = plan.data, v[5] = ts_dtype_name(s->in.plan.dtype);
        snprintf(rules, sizeof rules, "%s", s->rules); /* "a; b; " -> "a; b" */
        for (size_t k = strlen(rules); k > 0 && (rules[k - 1] == ' ' || rules[k - 1] == ';'); k--) rules[k - 1] = 0;
        v[8] = num[0], v[9] = num[1], v[10] = num[2], v[11] = res->memory.fits ? "yes" : "no", v[12] = rules;
    }
    for (int c = 0; c < CSV_NCOL; c++) runs_put_field(o->csv, v[c], c == CSV_NCOL - 1);
    ts_buf_free(&plan);
}

/* A row that cannot be scored: why, on stdout when printing and in the csv. */
static void skip_row(const EvalOpts *o, const Row *r, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (o->print) printf("%-11s %s\n", r->f[col("id")], why);
    if (o->csv) csv_record(o, r, why, NULL, NULL, 0, 0);
}


/* The model-FLOP count a tflops_per_gpu row is compared in: the
 * publisher's (acc_flops_count), or the flops column's. Causal halves the
 * attention scores' square in trainsim's model FLOPs (SimOptions.mfu_causal)
 * as Megatron-Bridge, NeMo 25.09 on and Megatron-Core 0.12 on count them;
 * n21 is the N21 paper's formula (row_prediction), as Megatron's papers to
 * 2022 count theirs. The published tables' own conventions (N21, BLOOM, OPT)
 * stand. */
static void row_flops(const Row *r, RowSetup *s, char *rules)
{
    const char *text[2] = {r->f[col("source")], r->f[col("notes")]}, *why = "", *fl = r->f[col("flops")];
    int count = !strcmp(fl, "causal") ? ACC_FLOPS_CAUSAL : !strcmp(fl, "n21") ? ACC_FLOPS_N21 : ACC_FLOPS_FULL;
    if (!*fl) count = acc_flops_count(text, &why);
    else if (count == ACC_FLOPS_CAUSAL) why = "causal attention FLOPs (flops column); ";
    else if (count == ACC_FLOPS_N21) why = "the N21 FLOP formula (flops column); ";
    if (s->k.n21 || s->k.bloom || s->k.opt || s->k.mds_logger) return; /* their own counts (row_prediction) */
    s->in.opt.mfu_causal = count == ACC_FLOPS_CAUSAL;
    s->k.n21_flops = count == ACC_FLOPS_N21;
    if (*why && !strcmp(r->f[col("metric")], "tflops_per_gpu")) strcat(rules, why);
}

/* The row's model, plan, cluster and runtime options by its table's rules.
 * False, said when printing, when the row cannot be simulated. */
static bool row_setup(const Row *r, const EvalOpts *o, RowSetup *s)
{
    const char *id = r->f[col("id")];
    s->k = (RowKind){.n21 = starts(id, "N21"), .nemo = starts(id, "NEMO"), .bloom = starts(id, "BLOOM"),
                     .opt = starts(id, "OPT"), .tt = starts(id, "TT")};
    bool n21 = s->k.n21, bloom = s->k.bloom, tt = s->k.tt;
    char why[160], *rules = s->rules;
    rules[0] = 0;
    if (row_model(r, &s->m, why, sizeof why)) {
        skip_row(o, r, "model not buildable%s%s", why[0] ? ": " : "", why);
        return false;
    }
    ParallelPlan p;
    row_plan(r, &s->m, s->k, &p, rules);
    const char *variant, *cluster = row_cluster(r->f[col("gpu")], bloom, &variant);
    if (!cluster) {
        skip_row(o, r, "gpu %s: no cluster preset for it (the gpu column names H100, H200, H800, B200, GB200, "
                       "MI300X or A100, or a PCIe A100, H100 or L40S)", r->f[col("gpu")]);
        return false;
    }
    TsError err = {0};
    if (hw_cluster_load(cluster, p.gpus, &s->cl, &err) != TS_OK ||
        (variant && hw_gpu_load(variant, &s->cl.gpu, &err) != TS_OK)) {
        skip_row(o, r, "cluster: %s", err.msg);
        return false;
    }
    if (variant) snprintf(s->cl.gpu_name, sizeof s->cl.gpu_name, "%s", variant);
    HwModel *hw = &s->hw;
    hw_model_init(hw);
    hw->gpu = s->cl.gpu;
    if (o->clock_mhz > 0 && strstr(hw->gpu.name, o->clock_gpu)) hw->gpu.sustained_clock_mhz = o->clock_mhz;
    const char *sw_why;
    hw_gpu_software(&hw->gpu, row_software(r, &sw_why));
    if (hw->gpu.software == HW_SOFTWARE_2024 && hw_gpu_has_2024(&hw->gpu))
        strcat(rules, sw_why);
    hw_net_init(&s->net, &s->cl);
    /* torchtitan 2024 defaults: eager PyTorch (compile off, norm_type
     * rmsnorm); BLOOM: Megatron-DeepSpeed, i.e. DeepSpeed's PipelineEngine
     * with the BF16 optimizer (ZeRO-1) */
    if (tt || says(r, "torchtitan") || says(r, "fsdp2")) p.framework = PLAN_FRAMEWORK_TORCHTITAN;
    if (bloom || says(r, "deepspeed")) p.framework = PLAN_FRAMEWORK_DEEPSPEED;
    if (!tt && !bloom && !*r->f[col("framework")] && p.framework != PLAN_FRAMEWORK_MEGATRON) {
        strcat(rules, plan_framework_name(p.framework));
        strcat(rules, " (notes); ");
    }
    /* the framework column: trainsim's names, or the frameworks' own (NeMo and
     * Megatron-Bridge run Megatron-Core; Megatron-DeepSpeed DeepSpeed's
     * pipeline engine; FSDP2 torchtitan's code path) */
    const char *fw = r->f[col("framework")];
    if (*fw && !plan_framework_parse(fw, &p.framework))
        p.framework = !strcmp(fw, "megatron-deepspeed") ? PLAN_FRAMEWORK_DEEPSPEED
                      : !strcmp(fw, "fsdp2")             ? PLAN_FRAMEWORK_TORCHTITAN
                                                         : PLAN_FRAMEWORK_MEGATRON;
    /* ZeRO-2 under a pipeline is PyTorch FSDP's SHARD_GRAD_OP (Llama 3 405B,
     * arXiv 2407.21783 §3.3.2): Megatron and DeepSpeed's pipeline engine do
     * not run it, torchtitan's code path does */
    if (p.zero == 2 && p.pp > 1 && !*fw && p.framework == PLAN_FRAMEWORK_MEGATRON) {
        p.framework = PLAN_FRAMEWORK_TORCHTITAN;
        strcat(rules, "torchtitan (zero2 under a pipeline: PyTorch FSDP); ");
    }
    const char *text[2] = {r->f[col("source")], r->f[col("notes")]};
    s->k.mds_logger =
        p.framework == PLAN_FRAMEWORK_DEEPSPEED && says(r, "Megatron-DeepSpeed") && acc_latest_year(text) <= 2023;
    s->in = (SimSetup){.model = &s->m, .plan = p, .hw = hw, .net = &s->net};
    SimOptions *so = &s->in.opt;
    sim_options_init(so);
    /* Megatron-LM 2021 all-reduced gradients after the backward pass,
     * at the 16-bit training dtype */
    if (n21) so->dp_overlap = false;
    /* bf16 and fp8 runs keep fp32 main gradients and reduce them in fp32
     * (Megatron-LM's default under --bf16: accumulate_allreduce_grads_in_fp32),
     * except NeMo's and Megatron-Bridge's performance recipes: NeMo 24.07's
     * Apex distributed_fused_adam with grad_sync_dtype bf16; NeMo 2's recipes
     * (performance mode: trainer.plugins.grad_reduce_in_fp32 = False) and
     * Megatron-Bridge's (scripts/performance configs of 2025-09 and 2025-11,
     * perf_recipes/_common.py _perf_precision: ddp.grad_reduce_in_fp32 =
     * False), where Megatron-Core then keeps the gradient buffer in bf16 */
    bool nemo_mb = nemo_row(r, s->k);
    bool mixed16 = p.dtype == TS_DTYPE_BF16 || p.dtype == TS_DTYPE_FP8;
    so->fp32_grad_reduce = mixed16 && !nemo_mb;
    if (mixed16 && nemo_mb && !s->k.nemo) strcat(rules, "16-bit gradients (NeMo / Megatron-Bridge recipes); ");
    int g32 = acc_fp32_grad(text);
    if (g32 >= 0 && g32 != so->fp32_grad_reduce) {
        so->fp32_grad_reduce = g32;
        strcat(rules, g32 ? "fp32 gradient reduction (notes); " : "16-bit gradient reduction (notes); ");
    }
    /* torchtitan's "selective op" activation checkpointing */
    so->selective_ops = tt;
    /* Megatron-Core's layer CUDA graphs, where the row says so (applied
     * where the plan can be captured: sim_cuda_graphs) */
    bool graphs_off = acc_says(text, "graph_impl=none") || acc_says(text, "graph_impl none") ||
                      acc_says(text, "graph-impl none") || acc_says(text, "graph-impl=none");
    bool graphs = acc_says_on(text, "cuda graph") || acc_says_on(text, "cuda-graph") ||
                  acc_says_on(text, "cudagraph") || acc_says_on(text, "cuda_graph");
    if (p.framework == PLAN_FRAMEWORK_MEGATRON && graphs && !graphs_off) {
        so->cuda_graphs = true;
        strcat(rules, "CUDA graphs (notes); ");
    }
    int ce = acc_ce_fusion(text);
    if (ce > 0 && p.framework == PLAN_FRAMEWORK_MEGATRON) {
        so->ce_fusion = (SimCeFusion)ce;
        bool nemo2 = acc_ce_fusion_stated(text) < 0 && ce == SIM_CE_NATIVE; /* NeMo 2's default */
        strcat(rules, ce == SIM_CE_TE ? "TE's fused cross-entropy (notes); "
                      : nemo2         ? "fused cross-entropy (NeMo 2); "
                                      : "fused cross-entropy (notes); ");
    }
    row_flops(r, s, rules);
    return true;
}

/* Unstated recompute: the least that fits in memory. Megatron-Core (NeMo,
 * Megatron-Bridge, Megatron-LM since 2022) recomputes whole layers, k per
 * chunk (--recompute-method block --recompute-num-layers); Megatron 2021,
 * Megatron-DeepSpeed 2022, metaseq and torchtitan recompute every layer.
 * s->in.plan and *res become the plan that fits (or the last tried). */
static void least_recompute(RowSetup *s, SimWork *w, SimResult *res)
{
    ParallelPlan p = s->in.plan;
    int64_t per_chunk = (s->m.layers + p.pp * p.vpp - 1) / (p.pp * p.vpp);
    bool by_layers = p.framework == PLAN_FRAMEWORK_MEGATRON && !s->k.n21 && !s->k.bloom && !s->k.opt;
    TsError err = {0};
    /* an MoE model under Megatron-Core first recomputes the modules its
     * MoE recipes name, cheaper than whole layers: the norms' outputs and
     * the experts' activation (Megatron-Bridge's GPT-OSS configs,
     * recompute_modules layernorm, moe_act), MLA's up-projections (its
     * DeepSeek-V3 configs, mla_up_proj) */
    if (by_layers && s->m.experts > 0 && !res->memory.fits) {
        s->in.plan = p;
        s->in.plan.recompute = PLAN_RECOMPUTE_SELECTIVE;
        s->in.plan.recompute_modules = PLAN_RC_LAYERNORM | PLAN_RC_MOE_ACT |
                                       (s->m.kv_lora_rank > 0 ? PLAN_RC_MLA_UP_PROJ : 0u);
        if (sim_simulate(&s->in, w, res, &err) == TS_OK && res->memory.fits) {
            strcat(s->rules, "recompute: the MoE recipes' modules (fits); ");
            return;
        }
    }
    for (int64_t nl = by_layers ? 1 : per_chunk; !res->memory.fits && nl <= per_chunk; nl++) {
        s->in.plan = p;
        s->in.plan.recompute = PLAN_RECOMPUTE_FULL;
        s->in.plan.recompute_layers = nl < per_chunk ? nl : 0;
        if (sim_simulate(&s->in, w, res, &err) != TS_OK) break;
    }
    strcat(s->rules, s->in.plan.recompute == PLAN_RECOMPUTE_NONE ? "recompute none (fits); "
                                                                  : "recompute: least that fits; ");
}

/* A row whose TFLOP/s Megatron-DeepSpeed's logger printed as BLOOM's were:
 * BLOOM, or a row that names Megatron-DeepSpeed, runs its pipeline engine
 * and dates from 2023 or before (its throughput_calculator took this
 * formula until it counted the model's own matmuls, Megatron-DeepSpeed
 * PR 371, August 2024; a year-less row counts as then). */
static bool mds_row(const RowSetup *s) { return s->k.bloom || s->k.mds_logger; }

/* The row's figure as predicted, in the published convention (the
 * header's "Like with like"). */
static double row_prediction(const RowSetup *s, const SimResult *res, bool tfl, bool its)
{
    const ParallelPlan *q = &s->in.plan;
    const ModelSpec *m = &s->m;
    if (its) return res->iteration_time_s;
    if (s->k.n21 || s->k.bloom || s->k.opt || (tfl && (mds_row(s) || s->k.n21_flops))) {
        /* N21: the paper's formula (96 = 24 x 4: the recompute forward
         * counted). Megatron-DeepSpeed (BLOOM, any row run on it): its
         * logger (megatron/utils.py throughput_calculator) prints the same
         * formula, "checkpoint_activations_factor = 4 if
         * args.checkpoint_activations else 3", with the padded vocab. OPT:
         * the same formula over its 50272 tokens is the logbook's
         * 4.30E+23 FLOPs for 300B tokens (metaseq projects/OPT/chronicles/
         * final_update.md), and 147 TFLOP/s that over its ~33 days on
         * 1024 GPUs */
        double B = (double)q->global_batch, sq = (double)q->seq, l = (double)m->layers, h = (double)m->hidden;
        double k4 = s->k.n21 || q->recompute != PLAN_RECOMPUTE_NONE ? 4.0 : 3.0;
        double V = (double)(mds_row(s) ? model_padded_vocab(m, q->tp) : m->vocab);
        double fl = 24.0 * k4 * B * sq * l * h * h * (1 + sq / (6 * h) + V / (16 * l * h));
        return fl / res->iteration_time_s / (double)q->gpus / 1e12;
    }
    return tfl ? res->model_tflops_per_gpu : res->tokens_per_s_per_gpu;
}

/* The row's line: resolved plan, published and predicted figures, error,
 * step time and rules; the notes on its FLOP convention; -v its breakdown. */
static void print_row(const Row *r, const RowSetup *s, const SimResult *res, double pub, double pred, double e,
                      bool tfl, bool its, bool verbose)
{
    const ParallelPlan *q = &s->in.plan;
    char plan[128];
    plan_text(q, plan, sizeof plan);
    int dg = its ? 2 : 1; /* seconds to the hundredth */
    printf("%-11s %-15s %-44s %10.*f %10.*f %+7.1f%%   T=%.3fs %s %s%s\n", r->f[col("id")], s->m.name, plan, dg, pub,
           dg, pred, 100 * e, res->iteration_time_s, ts_dtype_name(q->dtype), s->rules,
           res->memory.fits ? "" : "[does not fit]");
    if (tfl && mds_row(s))
        printf("            (compared as Megatron-DeepSpeed's logger counts, the recompute pass included;\n"
               "             as model FLOPs per GPU per second it would be %.1f, %+.1f%%)\n",
               res->model_tflops_per_gpu, 100 * (res->model_tflops_per_gpu / pub - 1));
    else if (tfl && s->k.opt)
        printf("            (compared as OPT's logbook counts, the N21 formula with the recompute pass;\n"
               "             as model FLOPs per GPU per second it would be %.1f, %+.1f%%)\n",
               res->model_tflops_per_gpu, 100 * (res->model_tflops_per_gpu / pub - 1));
    else if (tfl && s->k.n21_flops)
        printf("            (compared as the N21 paper's formula counts, the recompute pass included where it\n"
               "             ran; as model FLOPs per GPU per second it would be %.1f, %+.1f%%)\n",
               res->model_tflops_per_gpu, 100 * (res->model_tflops_per_gpu / pub - 1));
    else if (tfl && !s->k.n21 && q->recompute != PLAN_RECOMPUTE_NONE)
        printf("            (compared as model FLOPs per GPU per second; counting the recompute pass would\n"
               "             give %.1f, %+.1f%%)\n",
               res->hardware_tflops_per_gpu, 100 * (res->hardware_tflops_per_gpu / pub - 1));
    if (!verbose) return;
    printf("            breakdown:");
    for (int b = 0; b < SIM_BD_COUNT; b++) {
        double v = sim_breakdown_get(&res->breakdown, b);
        if (v > 0) printf(" %s %.3f", sim_breakdown_key(b), v);
    }
    const SimMemory *mm = &res->memory;
    printf("  mem %.1f GiB (w %.1f g %.1f o %.1f a %.1f x %.1f)\n", mm->total_bytes / 1073741824.0,
           mm->weights_bytes / 1073741824.0, mm->gradients_bytes / 1073741824.0, mm->optimizer_bytes / 1073741824.0,
           mm->activations_bytes / 1073741824.0, mm->other_bytes / 1073741824.0);
    if (mm->fit_hint[0]) printf("            memory: %s\n", mm->fit_hint);
}

/* One row: its plan by the fixed rules, simulated, and the error of the
 * compared figure (out->e; out->re: the replayed task graph's, NaN without
 * -r). Prints the row when o->print. False: not a throughput row, or not
 * simulable (said when printing). */
static bool eval_row(const Row *r, SimWork *w, const EvalOpts *o, Score *out)
{
    const char *metric = r->f[col("metric")];
    bool tfl = strcmp(metric, "tflops_per_gpu") == 0, tok = strcmp(metric, "tokens_per_s_per_gpu") == 0;
    bool its = strcmp(metric, "iteration_s") == 0;
    if (!tfl && !tok && !its) { /* per-GPU memory: counted, not printed */
        if (o->csv) csv_record(o, r, "not scored here: a memory metric (bench_memory, trainsim memory)", NULL, NULL,
                               0, 0);
        return false;
    }
    static RowSetup s; /* (large; one row at a time) */
    if (!row_setup(r, o, &s)) return false;
    SimResult res;
    TsError err = {0};
    if (sim_simulate(&s.in, w, &res, &err) != TS_OK) {
        skip_row(o, r, "plan rejected: %s", err.msg);
        return false;
    }
    if (!*r->f[col("recompute")]) least_recompute(&s, w, &res);
    const char *no_graphs = NULL;
    if (s.in.opt.cuda_graphs && !sim_cuda_graphs(&s.in.opt, &s.in.plan, s.m.experts > 0, &no_graphs)) {
        strcat(s.rules, "CUDA graphs not applied: ");
        strncat(s.rules, no_graphs, sizeof s.rules - strlen(s.rules) - 3);
        strcat(s.rules, "; ");
    }
    double pub = atof(r->f[col("value")]), pred = row_prediction(&s, &res, tfl, its);
    /* the error of the throughput: for an iteration time, published / predicted */
    double e = its ? pub / pred - 1 : pred / pub - 1;
    out->e = e;
    out->re = NAN;
    if (o->csv) csv_record(o, r, "scored", &s, &res, pred, e);
    if (!o->print) return true;
    if (o->verbose) sim_fit_alternatives(&s.in, &res); /* a stated plan that does not fit: what would */
    print_row(r, &s, &res, pub, pred, e, tfl, its, o->verbose);
    double tr = o->replay ? replay_time(&s.in, &s.net) : 0;
    if (tr > 0) { /* every compared figure is inversely proportional to the step time */
        out->re = pred * res.iteration_time_s / tr / pub - 1;
        printf("            replay of the task graph: T=%.3fs, %+.1f%% against the published figure\n", tr,
               100 * out->re);
    }
    return true;
}

/* -x: leave-one-table-out check of the one parameter fitted on the A100
 * tables themselves, the A100 sustained clock (data/gpus/a100-sxm4-*.json,
 * the value minimizing the pooled MAPE of every A100 row). For each A100
 * table the clock is refitted on the other tables' rows alone (a grid of 5
 * MHz from 1330 to 1410), and the table is scored at that clock: an
 * out-of-sample error, beside its in-sample one at the preset's clock. */
enum { XC_MIN = 1330, XC_STEP = 5, XC_N = 17 };

/* Every row that use[] marks scored at each clock of a grid (nc clocks
 * from cmin, step) of the GPU preset `gpu`: err[c * MAXROW + i]; a row
 * that does not simulate is dropped from use[]. */
static void clock_grid(const Row *rows, int n, SimWork *w, const char *gpu, int cmin, int step, int nc, double *err,
                       bool *use)
{
    for (int c = 0; c < nc; c++) {
        EvalOpts eo = {.clock_gpu = gpu, .clock_mhz = cmin + step * c};
        for (int i = 0; i < n; i++) {
            Score sc;
            if (use[i] && !eval_row(&rows[i], w, &eo, &sc)) use[i] = false;
            err[c * MAXROW + i] = use[i] ? sc.e : 0;
        }
    }
}

static void cross_validate(const Row *rows, int n, SimWork *w, const Table *tabs, int ntab)
{
    static double err[XC_N][MAXROW];
    static bool use[MAXROW];
    for (int i = 0; i < n; i++) use[i] = strstr(rows[i].f[col("gpu")], "A100") != NULL;
    clock_grid(rows, n, w, "a100", XC_MIN, XC_STEP, XC_N, &err[0][0], use);
    printf("leave-one-table-out: the A100 sustained clock refitted without each A100 table\n"
           "(grid %d..%d MHz, step %d; the preset's value is the fit on all of them)\n\n",
           XC_MIN, XC_MIN + XC_STEP * (XC_N - 1), XC_STEP);
    printf("%-10s %4s %10s %12s %18s %18s\n", "table", "rows", "fit (MHz)", "others MAPE", "held out: MAPE",
           "bias");
    for (int t = -1; t < ntab; t++) { /* -1: no table held out */
        int best = 0;
        double best_m = INFINITY;
        for (int c = 0; c < XC_N; c++) {
            double sum = 0;
            int k = 0;
            for (int i = 0; i < n; i++)
                if (use[i] && (t < 0 || !starts(rows[i].f[col("id")], tabs[t].name))) sum += fabs(err[c][i]), k++;
            if (k && sum / k < best_m) best_m = sum / k, best = c;
        }
        double sa = 0, sb = 0;
        int k = 0;
        for (int i = 0; i < n && t >= 0; i++)
            if (use[i] && starts(rows[i].f[col("id")], tabs[t].name)) sa += fabs(err[best][i]), sb += err[best][i], k++;
        if (t < 0)
            printf("%-10s %4s %10d %11.1f%%\n", "(none)", "", XC_MIN + XC_STEP * best, 100 * best_m);
        else if (k && !isfinite(best_m))
            printf("%-10s %4d %10s %12s   (no other A100 table to refit on)\n", tabs[t].name, k, "-", "-");
        else if (k)
            printf("%-10s %4d %10d %11.1f%% %17.1f%% %+17.1f%%\n", tabs[t].name, k, XC_MIN + XC_STEP * best,
                   100 * best_m, 100 * sa / k, 100 * sb / k);
    }
    printf("\npooled MAPE of the A100 rows by clock (MHz):");
    for (int c = 0; c < XC_N; c++) {
        double sum = 0;
        int k = 0;
        for (int i = 0; i < n; i++)
            if (use[i]) sum += fabs(err[c][i]), k++;
        printf("%s %d %.2f%%", c % 6 ? "," : "\n ", XC_MIN + XC_STEP * c, k ? 100 * sum / k : 0);
    }
    printf("\n");
}

/* -x, one table's clock: the sustained clock fitted on a table of one GPU,
 * the value that makes the table's signed bias nearest zero (the H100's on
 * the NeMo 24.07 table, NEMO2407; the B200's on Megatron-Bridge's DGX-B200
 * rows, MB-B200). Each model of the table is held out in turn: the clock is
 * refitted (5 MHz grid, 1300..1700) on the other models' rows by the same
 * rule and the held-out model scored at that clock. */
enum { BC_MIN = 1300, BC_STEP = 5, BC_N = 81 };

static void cross_validate_models(const Row *rows, int n, SimWork *w, const char *table, const char *gpu,
                                  const char *gpu_name)
{
    static double err[BC_N][MAXROW];
    static bool use[MAXROW];
    char prefix[32];
    snprintf(prefix, sizeof prefix, "%s-", table);
    for (int i = 0; i < n; i++) use[i] = starts(rows[i].f[col("id")], prefix);
    clock_grid(rows, n, w, gpu, BC_MIN, BC_STEP, BC_N, &err[0][0], use);
    int k = 0;
    for (int i = 0; i < n; i++) k += use[i];
    if (!k) return;
    printf("\nleave-one-model-out: the %s sustained clock refitted without each model of %s\n"
           "(grid %d..%d MHz, step %d; fit: the signed bias of the fitted rows nearest zero)\n\n",
           gpu_name, table, BC_MIN, BC_MIN + BC_STEP * (BC_N - 1), BC_STEP);
    printf("%-14s %4s %10s %12s %18s %18s\n", "held out", "rows", "fit (MHz)", "others bias", "held out: MAPE",
           "bias");
    for (int t = -1; t < n; t++) { /* -1: no model held out; else the model of row t, at its first row */
        const char *mt = t >= 0 ? rows[t].f[col("model")] : "";
        if (t >= 0) {
            bool first = use[t];
            for (int j = 0; j < t && first; j++)
                if (use[j] && !strcmp(rows[j].f[col("model")], mt)) first = false;
            if (!first) continue;
        }
        int best = 0;
        double best_b = INFINITY, best_s = 0;
        for (int c = 0; c < BC_N; c++) {
            double sum = 0;
            int m = 0;
            for (int i = 0; i < n; i++)
                if (use[i] && (t < 0 || strcmp(rows[i].f[col("model")], mt))) sum += err[c][i], m++;
            if (m && fabs(sum / m) < best_b) best_b = fabs(sum / m), best_s = sum / m, best = c;
        }
        double sa = 0, sb = 0;
        int m = 0;
        for (int i = 0; i < n && t >= 0; i++)
            if (use[i] && !strcmp(rows[i].f[col("model")], mt)) sa += fabs(err[best][i]), sb += err[best][i], m++;
        if (t < 0)
            printf("%-14s %4s %10d %+11.1f%%\n", "(none)", "", BC_MIN + BC_STEP * best, 100 * best_s);
        else if (!isfinite(best_b))
            printf("%-14s %4d %10s %12s   (no other model to refit on)\n", mt, m, "-", "-");
        else
            printf("%-14s %4d %10d %+11.1f%% %17.1f%% %+17.1f%%\n", mt, m, BC_MIN + BC_STEP * best, 100 * best_s,
                   100 * sa / m, 100 * sb / m);
    }
    printf("\nsigned bias / MAPE of the %s rows by clock (MHz):", table);
    for (int c = 0; c < BC_N; c += 4) {
        double sum = 0, sa = 0;
        for (int i = 0; i < n; i++)
            if (use[i]) sum += err[c][i], sa += fabs(err[c][i]);
        printf("%s %d %+.1f / %.1f%%", (c / 4) % 5 ? "," : "\n ", BC_MIN + BC_STEP * c, 100 * sum / k, 100 * sa / k);
    }
    printf("\n");
}

/* The command line. */
typedef struct Args {
    bool verbose, replay, xval;
    const char *path, *csv_path;
} Args;

static const char USAGE[] = "usage: accuracy [-v] [-r] [-x] [--runs FILE.csv | FILE.csv] [--csv OUT.csv]\n";

/* Reads the command line into *g: 0, or the exit status to leave with (*done
 * after --help). */
static int parse_args(int argc, char **argv, Args *g, bool *done)
{
    *g = (Args){.path = TS_BENCH_DIR "/data/calibration_runs.csv"};
    *done = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            printf("%s  --runs FILE.csv  score these runs (the validation columns, docs/accuracy.md \"Scoring your "
                   "own runs\"); default bench/data/calibration_runs.csv\n  --csv OUT.csv    also write one record "
                   "per run\n  -v  each run's breakdown   -r  its task graph replayed too   -x  leave-one-table-out "
                   "check of the fitted clocks\n", USAGE);
            *done = true;
            return 0;
        }
        if (!strcmp(a, "-v") || !strcmp(a, "-r") || !strcmp(a, "-x")) {
            g->verbose |= a[1] == 'v', g->replay |= a[1] == 'r', g->xval |= a[1] == 'x';
        } else if (!strcmp(a, "--runs") || !strcmp(a, "--csv")) {
            if (i + 1 == argc) {
                fprintf(stderr, "accuracy: %s needs a file name\n%s", a, USAGE);
                return 2;
            }
            *(a[2] == 'r' ? &g->path : &g->csv_path) = argv[++i];
        } else if (a[0] != '-' && i == argc - 1) {
            g->path = a;
        } else {
            fprintf(stderr, "accuracy: unexpected argument '%s'\n%s", a, USAGE);
            return 2;
        }
    }
    struct stat in_st, out_st;
    if (g->csv_path && stat(g->path, &in_st) == 0 && stat(g->csv_path, &out_st) == 0 &&
        in_st.st_dev == out_st.st_dev && in_st.st_ino == out_st.st_ino) {
        fprintf(stderr, "accuracy: --csv %s is the runs file itself\nhint: write the records to another file\n",
                g->csv_path);
        return 2;
    }
    if (g->csv_path && g->xval) {
        fprintf(stderr, "accuracy: --csv writes the scored runs; -x scores none\nhint: run -x and --csv apart\n");
        return 2;
    }
    return 0;
}

/* Each table's MAPE and bias (and its replay's); the rows scored in all. */
static int print_tables(const Table *tabs, int ntab, const Row *rows, int n)
{
    printf("\nper table (target: MAPE <= 5%%, |bias| <= 3%%):\n");
    printf("%-10s %4s %8s %8s\n", "table", "rows", "MAPE", "bias");
    double all = 0;
    int alln = 0;
    for (int t = 0; t < ntab; t++) {
        if (!tabs[t].n) continue;
        printf("%-10s %4d %7.1f%% %+7.1f%%", tabs[t].name, tabs[t].n, 100 * tabs[t].sum_abs / tabs[t].n,
               100 * tabs[t].sum / tabs[t].n);
        if (tabs[t].rn)
            printf("   replayed task graph: %7.1f%% %+7.1f%% (%d rows)", 100 * tabs[t].r_abs / tabs[t].rn,
                   100 * tabs[t].r_sum / tabs[t].rn, tabs[t].rn);
        printf("\n");
        all += tabs[t].sum_abs;
        alln += tabs[t].n;
    }
    if (alln) printf("%-10s %4d %7.1f%%\n", "all", alln, 100 * all / alln);
    int nmem = 0;
    for (int i = 0; i < n; i++) nmem += starts(rows[i].f[col("metric")], "mem_");
    if (nmem)
        printf("(%d rows of per-GPU memory (mem_*_GiB) are not scored here: bench_memory, trainsim memory)\n", nmem);
    return alln;
}

/* The rules for unstated knobs and the physical parameters they run with. */
static void print_rules(void)
{
    printf("\nrules for unstated knobs (the same for every row of a table):\n"
           "  micro-batch   the run's launch script where public (BLOOM: 2, tr11-176B-ml.slurm); else 1\n"
           "                with PP, else the per-replica batch up to 8 (mb rule); global batch rounded\n"
           "                down to a multiple of mb x dp where it is not one (OPT)\n"
           "  recompute     as stated; full of N layers per chunk (block method) where the cell says\n"
           "                full:N or the notes recompute_num_layers N / N layers recomputed; unstated:\n"
           "                the least that fits in memory: none; for an MoE model under Megatron-Core\n"
           "                the modules its MoE recipes recompute (layernorm, moe_act; MLA's mla_up_proj);\n"
           "                else full recompute of the fewest layers per chunk (Megatron-Core: NeMo,\n"
           "                Megatron-Bridge, Megatron-LM) or of every layer (Megatron 2021,\n"
           "                Megatron-DeepSpeed 2022, metaseq, torchtitan)\n"
           "  expert TP     NeMo / Megatron-Bridge MoE recipes: etp 1 (expert_tensor_parallel_size 1);\n"
           "                else Megatron-Core's default, tp, or 1 where ep x tp does not divide tp x cp x dp\n"
           "  EP overlap    as the notes say (moe_a2a_overlap, overlap_moe_expert_parallel_comm): 1f1b-a2a,\n"
           "                with pp > 1 inside the interleaved schedule (vpp > 1; else ignored, as\n"
           "                Megatron-Core refuses it); else none\n"
           "  precision     as the row's source or notes say (fp8, else bf16, else fp16; fp8 current scaling\n"
           "                (FP8-CS) or blockwise (FP8-SC, MXFP8) when said); unsaid: N21 and OPT fp16;\n"
           "                NeMo fp8 (Transformer Engine: transformer-layer GEMMs in fp8, attention and LM\n"
           "                head in bf16, fp8-saved GEMM inputs); others bf16\n"
           "  attention     unfused (fused softmax) for the 2021-22 frameworks (N21, BLOOM, OPT) and\n"
           "                any row published by 2022 (FlashAttention reached Megatron-LM and PyTorch in\n"
           "                2023); fused (cuDNN / FlashAttention) for NeMo, torchtitan and later rows; an\n"
           "                attention column wins\n"
           "  gradients     N21: all-reduced after the backward in fp16 (Megatron 2021); NeMo 24.07:\n"
           "                distributed_fused_adam, bf16 grad buffer and sync, overlapped; NeMo 2 and\n"
           "                Megatron-Bridge recipes (grad_reduce_in_fp32 False): bf16 grad buffer and\n"
           "                reduction; other bf16 and fp8 rows: fp32 main grads and reduction\n"
           "                (Megatron / FSDP default), overlapped; as the notes say where they do\n"
           "                (grad_reduce_in_fp32, --grad-reduce-in-bf16)\n"
           "  TP overlap    as the notes say (tp-comm-overlap / userbuffers / TP ... overlap, as \"TP/DP/PP\n"
           "                communication overlap\"; off: tp_comm_overlap False, no TP overlap); unsaid: on\n"
           "                for NeMo and Megatron-Bridge rows (their performance recipes' TE userbuffers),\n"
           "                off elsewhere\n"
           "  loss          the cross-entropy as the notes say (cross_entropy_fusion_impl te|native,\n"
           "                cross_entropy_loss_fusion); Megatron-Bridge recipes: Transformer Engine's fused\n"
           "                kernel; NeMo 2 (2.x, containers 24.09 on): Megatron-Core's fused kernel (its\n"
           "                GPTConfig's cross_entropy_loss_fusion True); else Megatron's fp32 eager ops\n"
           "  libraries     2024 CUDA libraries (Hopper FP8 GEMMs, cuDNN attention slower) for rows on\n"
           "                a NeMo 24.x container or CUDA 12.4-12.6, or dated 2024 or earlier; a software\n"
           "                column wins; else the current ones\n"
           "  pipeline      BLOOM: DeepSpeed's PipelineEngine (Megatron-DeepSpeed): blocking p2p of the\n"
           "                whole activation per TP rank, fp32 all-reduce after the flush, ZeRO-1\n"
           "                gather at the step, BF16-optimizer fp32 accumulation per micro-batch\n"
           "  torchtitan    eager PyTorch elementwise kernels (compile off, norm_type rmsnorm: its 2024\n"
           "                defaults); selective = op-level SAC (every second matmul + non-matmul ops)\n"
           "  PP split      uneven splits: --uneven-stages (last, first, ... chunk one layer lighter)\n"
           "  framework     as the row's notes say (DeepSpeed: deepspeed; torchtitan / FSDP2: torchtitan;\n"
           "                zero2 under a pipeline, PyTorch FSDP's: torchtitan), else megatron; a\n"
           "                framework column wins\n"
           "  cluster       BLOOM on jean-zay-a100 (4x100G Omni-Path), other A100 rows on dgx-a100\n"
           "                (8x200G HDR), H100 on dgx-h100 (8x400G NDR), H200 on hgx-h200, H800 on\n"
           "                hgx-h800, B200 on dgx-b200 (8x400G NDR), GB200 on gb200-nvl72, MI300X on\n"
           "                mi300x-8\n"
           "physical parameters (presets and sim_options_init, docs/accuracy.md): GPU speed spread 5%%\n"
           "per node -> slowest-of-n straggler slow-down; ");
    print_clock("H100", "h100-sxm5-80gb", ";\n");
    print_clock("A100", "a100-sxm4-80gb", "; ");
    print_clock("B200", "b200", " (MB-B200); overlap\n");
    printf("slow-down 10%%; GEMMs: tile/wave candidates plus a stream-K candidate (x0.92 fix-up); FSDP root\n"
           "unit (embedding, output) exposed.\n"
           "FLOP conventions: N21 paper formula (x4, recompute counted); BLOOM and Megatron-DeepSpeed\n"
           "rows up to 2023 the same formula, as its logger printed it; OPT the same, as its logbook\n"
           "counts (4.30E+23 FLOPs for 300B tokens) (model FLOPs printed beside); other rows model\n"
           "FLOPs (validation/README), the recompute-inclusive count beside: attention's whole score\n"
           "square, except as the publisher counts it: causal-halved (Megatron-Bridge; NeMo 25.09 on;\n"
           "Megatron-Core 0.12 on, or a Megatron-LM row dated 2026 on), the N21 formula (a row naming\n"
           "Megatron or MT-NLG dated 2022 or before), or as the flops column says.\n");
}

int main(int argc, char **argv)
{
    Args g;
    bool done;
    int st = parse_args(argc, argv, &g, &done);
    if (st || done) return st;
    static Row rows[MAXROW];
    int n = 0, rc = runs_load(g.path, rows, &n);
    if (rc) return rc;
    char tmp[4096] = "";
    FILE *csv = NULL;
    if (g.csv_path) { /* written aside, renamed into place once complete */
        snprintf(tmp, sizeof tmp, "%s.tmp", g.csv_path);
        if (!(csv = fopen(tmp, "w"))) {
            fprintf(stderr, "accuracy: cannot write %s: %s\n", tmp, strerror(errno));
            runs_free(rows, n);
            return 1;
        }
        for (int c = 0; c < CSV_NCOL; c++) runs_put_field(csv, CSV_COLS[c], c == CSV_NCOL - 1);
    }

    Table tabs[MAXTAB] = {{.name = "N21-T1"}, {.name = "N21-T2"}, {.name = "NEMO2407"},
                          {.name = "BLOOM"},  {.name = "OPT"},    {.name = "TT"}};
    int ntab = 6;
    SimWork *w = sim_work_create();
    if (g.xval) {
        cross_validate(rows, n, w, tabs, ntab);
        cross_validate_models(rows, n, w, "NEMO2407", "h100", "H100");
        cross_validate_models(rows, n, w, "MB-B200", "b200", "B200");
        sim_work_destroy(w);
        runs_free(rows, n);
        return 0;
    }
    printf("accuracy: trainsim simulate vs published runs (%s)\n", g.path);
    printf("error = predicted/published - 1 of the throughput (positive: predicted faster)\n\n");
    printf("%-11s %-15s %-44s %10s %10s %8s\n", "id", "model", "plan (resolved)", "published", "predicted", "error");
    EvalOpts eo = {.verbose = g.verbose, .replay = g.replay, .print = true, .csv = csv};
    for (int i = 0; i < n; i++) {
        Score sc;
        Table *t = table_of(tabs, &ntab, rows[i].f[col("id")]);
        eo.table = t ? t->name : NULL;
        if (!eval_row(&rows[i], w, &eo, &sc) || !t) continue;
        t->sum_abs += fabs(sc.e);
        t->sum += sc.e;
        t->n++;
        if (!isnan(sc.re)) t->r_abs += fabs(sc.re), t->r_sum += sc.re, t->rn++;
    }
    int alln = print_tables(tabs, ntab, rows, n);
    print_rules();
    sim_work_destroy(w);
    runs_free(rows, n);
    if (csv && (fflush(csv) || ferror(csv) || fclose(csv) || rename(tmp, g.csv_path))) {
        fprintf(stderr, "accuracy: cannot write %s: %s\n", g.csv_path, strerror(errno));
        remove(tmp);
        return 1;
    }
    if (csv) printf("(one record per run in %s)\n", g.csv_path);
    if (alln == 0) { /* nothing to compare: said, not a table of zeros */
        fprintf(stderr, "accuracy: no run of %s was scored\nhint: the reasons are beside each run above; a run "
                        "needs a throughput or time metric, a GPU with a cluster preset and a plan that simulates\n",
                g.path);
        return 1;
    }
    return 0;
}
