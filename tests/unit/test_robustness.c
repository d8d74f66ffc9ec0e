/* test_robustness.c — allocation failure, hostile and extreme inputs, and
 * property tests across the public entry points (docs/robustness.md).
 *
 * Allocation failure: this executable is linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=strdup
 * (tests/robustness.cmake), so every heap allocation made by trainsim code
 * goes through fail_countdown; jansson's allocations are routed there too
 * (json_set_alloc_funcs). fail_loop() runs an entry point with n = 0, 1, 2,
 * ... successful allocations before every later one fails, until it
 * succeeds: each failing run must return an error value (never crash, never
 * leak: ASan and valgrind check the leaks).
 *
 * Tests never assert on time (STYLE.md 16): the big inputs print how long
 * they took; docs/robustness.md records the figures. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <jansson.h>

#include "trainsim/common.h"
#include "trainsim/graph.h"
#include "trainsim/hw.h"
#include "trainsim/model.h"
#include "trainsim/partition.h"
#include "trainsim/plan.h"
#include "trainsim/sim.h"
#include "../../src/common/common_int.h"
#include "trainsim/workload.h"
#include "trainsim/workload_io.h"
#include "trainsim/workload_chakra.h"

/* ---- injected allocation failure ------------------------------------------- */
static long fail_countdown = -1; /* < 0: never fail; 0: every allocation fails */
static long injected;            /* allocations refused since fail_set */

static void fail_set(long n)
{
    fail_countdown = n;
    injected = 0;
}

static int refuse(void)
{
    if (fail_countdown < 0) return 0;
    if (fail_countdown == 0) {
        injected++;
        return 1;
    }
    fail_countdown--;
    return 0;
}

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t m);
void *__real_realloc(void *p, size_t n);
void *__wrap_malloc(size_t n);
void *__wrap_calloc(size_t n, size_t m);
void *__wrap_realloc(void *p, size_t n);
char *__wrap_strdup(const char *s);

void *__wrap_malloc(size_t n) { return refuse() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t m) { return refuse() ? NULL : __real_calloc(n, m); }
void *__wrap_realloc(void *p, size_t n) { return refuse() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = __wrap_malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}
static void *json_malloc(size_t n) { return __wrap_malloc(n); }

typedef TsStatus (*Entry)(void *ctx, TsError *err);

/* Run f under n = 0, 1, ... allowed allocations until it succeeds. Returns
 * how many failing runs there were (the allocation count of a success). */
static long fail_loop(const char *what, Entry f, void *ctx)
{
    for (long n = 0; n < 200000; n++) {
        TsError err = {0};
        fail_set(n);
        TsStatus st = f(ctx, &err);
        long refused = injected;
        fail_set(-1);
        if (st == TS_OK) return n;
        if (refused == 0) {
            print_error("%s: failed without an injected allocation failure: %s\n", what, err.msg);
            fail();
        }
        if (err.code == TS_OK || err.msg[0] == '\0') {
            print_error("%s: allocation failure %ld returned %d without an error message\n", what, n, (int)st);
            fail();
        }
    }
    print_error("%s: never succeeded\n", what);
    fail();
    return -1;
}

/* ---- scratch files --------------------------------------------------------- */
static char tmpdir[64];

static int setup_dir(void **state)
{
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/ts_robust_XXXXXX");
    json_set_alloc_funcs(json_malloc, free);
    return mkdtemp(tmpdir) ? 0 : -1;
}

static int teardown_dir(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static const char *tpath(const char *name)
{
    static char p[4][256];
    static int i;
    i = (i + 1) % 4;
    snprintf(p[i], sizeof p[i], "%s/%s", tmpdir, name);
    return p[i];
}

static const char *write_tmp(const char *name, const void *data, size_t n)
{
    const char *p = tpath(name);
    FILE *fp = fopen(p, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(data, 1, n, fp), n);
    fclose(fp);
    return p;
}

static int count_dir_entries(const char *dir)
{
    char cmd[300];
    snprintf(cmd, sizeof cmd, "test $(ls -A %s | wc -l) -eq 0", dir);
    return system(cmd) == 0 ? 0 : 1;
}

/* Under valgrind (scripts/valgrind.sh sets TS_TEST_SMALL) the 10^6-line
 * inputs shrink to 10^4 lines: same code paths, 50x slower interpreter. */
static int64_t big_n(void) { return getenv("TS_TEST_SMALL") ? 10000 : 1000000; }

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static const char LLAMA_CFG[] =
    "{\n"
    "  \"architectures\": [\"LlamaForCausalLM\"],\n"
    "  \"hidden_act\": \"silu\",\n"
    "  \"hidden_size\": 4096,\n"
    "  \"intermediate_size\": 14336,\n"
    "  \"max_position_embeddings\": 8192,\n"
    "  \"model_type\": \"llama\",\n"
    "  \"num_attention_heads\": 32,\n"
    "  \"num_hidden_layers\": 32,\n"
    "  \"num_key_value_heads\": 8,\n"
    "  \"rms_norm_eps\": 1e-05,\n"
    "  \"rope_theta\": 500000.0,\n"
    "  \"tie_word_embeddings\": false,\n"
    "  \"vocab_size\": 128256\n"
    "}\n";

/* ===== 1. allocation failure ================================================= */

static TsStatus e_read_file(void *ctx, TsError *err)
{
    char *text;
    size_t n;
    TsStatus st = ts_read_file((const char *)ctx, 1u << 24, &text, &n, err);
    if (st == TS_OK) free(text);
    return st;
}

static TsStatus e_json_load(void *ctx, TsError *err)
{
    TsJsonDoc d;
    TsStatus st = ts_json_load(&d, (const char *)ctx, err);
    ts_json_free(&d);
    return st;
}

static TsStatus e_model_load(void *ctx, TsError *err)
{
    ModelSpec m;
    ModelOverrides ov;
    model_overrides_init(&ov);
    return model_load((const char *)ctx, &ov, &m, err);
}

static TsStatus e_gpu_load(void *ctx, TsError *err)
{
    GpuSpec g;
    return hw_gpu_load((const char *)ctx, &g, err);
}

static TsStatus e_pipeline(void *ctx, TsError *err)
{
    (void)ctx;
    SimChunkCost c[8];
    memset(c, 0, sizeof c);
    for (int i = 0; i < 8; i++) c[i].fwd_s = c[i].compute_fwd_s = 1, c[i].bwd_s = c[i].compute_bwd_s = 2;
    SimStageCost st[4] = {{0}};
    SimPipeline pl = {.stages = 4, .chunks = 2, .micro_batches = 8, .schedule = PLAN_SCHED_INTERLEAVED,
                      .chunk = c, .stage = st, .record = true};
    SimWork *w = sim_work_create();
    if (!w) return ts_err(err, TS_ERR_INTERNAL, "out of memory (sim_work_create)");
    SimResult r;
    TsStatus s = sim_pipeline_run(&pl, w, &r, err);
    sim_work_destroy(w);
    if (s) return s;
    /* and the variant that owns its result */
    s = sim_pipeline_run(&pl, NULL, &r, err);
    if (s == TS_OK) sim_result_free(&r);
    return s;
}

static TsStatus e_buf(void *ctx, TsError *err)
{
    (void)ctx;
    TsBuf b = {0};
    for (int i = 0; i < 2000; i++) ts_buf_printf(&b, "line %d of a long text\n", i);
    bool oom = b.oom;
    ts_buf_free(&b);
    return oom ? ts_err(err, TS_ERR_INTERNAL, "out of memory formatting output") : TS_OK;
}

static TsStatus e_arena(void *ctx, TsError *err)
{
    (void)ctx;
    TsArena *a = ts_arena_create(256);
    if (!a) return ts_err(err, TS_ERR_INTERNAL, "out of memory (arena)");
    TsStatus st = TS_OK;
    void *arr = NULL;
    for (size_t i = 0; i < 200 && st == TS_OK; i++) {
        if (!ts_arena_printf(a, "node-%zu", i)) st = ts_err(err, TS_ERR_INTERNAL, "out of memory (arena)");
        void *g = ts_arena_grow(a, arr, 8, i, i + 1);
        if (!g) st = ts_err(err, TS_ERR_INTERNAL, "out of memory (arena)");
        arr = g;
    }
    ts_arena_destroy(a);
    return st;
}


static TsStatus e_graph(void *ctx, TsError *err)
{
    ModelSpec m;
    TsStatus st = model_preset((const char *)ctx, &m, err);
    if (st) return st;
    GraphOptions o;
    graph_options_init(&o);
    o.seq = 256;
    ModuleGraph *g = NULL;
    st = graph_build(&m, &o, &g, err);
    if (st == TS_OK && !g) return ts_err(err, TS_ERR_INTERNAL, "graph_build returned no graph");
    if (st != TS_OK && g) return ts_err(err, TS_ERR_INTERNAL, "graph_build failed but returned a graph");
    graph_destroy(g);
    return st;
}

static TsStatus e_part(void *ctx, TsError *err)
{
    ModelSpec m;
    TsStatus st = model_preset((const char *)ctx, &m, err);
    if (st) return st;
    GraphOptions o;
    graph_options_init(&o);
    o.seq = 256;
    o.batch = 1;
    ModuleGraph *g = NULL;
    if ((st = graph_build(&m, &o, &g, err))) return st;
    ParallelPlan p;
    plan_init(&p);
    p.tp = 2;
    p.pp = 2;
    p.gpus = 8;
    p.seq = 256;
    p.global_batch = 16;
    PartMemOptions mo;
    part_mem_options_init(&mo);
    Partition *pt = NULL;
    st = part_build(g, &p, &mo, &pt, err);
    if (st != TS_OK && pt) st = ts_err(err, TS_ERR_INTERNAL, "part_build failed but returned a partition");
    part_destroy(pt);
    graph_destroy(g);
    return st;
}

static TsStatus e_simulate(void *ctx, TsError *err)
{
    ModelSpec m;
    TsStatus st = model_preset((const char *)ctx, &m, err);
    if (st) return st;
    ClusterSpec cl;
    if ((st = hw_cluster_load("dgx-h100", 64, &cl, err))) return st;
    HwModel hw;
    hw_model_init(&hw);
    hw.gpu = cl.gpu;
    HwNet net;
    hw_net_init(&net, &cl);
    SimSetup in = {.model = &m, .hw = &hw, .net = &net};
    plan_init(&in.plan);
    in.plan.tp = 8;
    in.plan.pp = 4;
    in.plan.vpp = 2;
    in.plan.schedule = PLAN_SCHED_INTERLEAVED;
    in.plan.gpus = 64;
    in.plan.seq = 2048;
    in.plan.global_batch = 64;
    sim_options_init(&in.opt);
    in.opt.record = true;
    SimResult r;
    st = sim_simulate(&in, NULL, &r, err);
    if (st == TS_OK) sim_result_free(&r);
    return st;
}

static TsStatus e_hw_files(void *ctx, TsError *err)
{
    (void)ctx;
    ClusterSpec cl;
    TsStatus st = hw_cluster_load("gb200-nvl72", 144, &cl, err);
    if (st) return st;
    HwCalib *c = NULL;
    st = hw_calib_load_text("calib.json",
                            "{\"format\": \"trainsim-calibration\", \"version\": 1, \"gpu\": \"x\",\n"
                            " \"gemm\": [{\"dtype\": \"bf16\", \"batch\": 1, \"m\": 64, \"n\": 64, \"k\": 64, \"time_us\": 5},\n"
                            "          {\"dtype\": \"bf16\", \"batch\": 1, \"m\": 128, \"n\": 128, \"k\": 128, \"time_us\": 9}],\n"
                            " \"memory\": [{\"bytes\": 1024, \"time_us\": 2}, {\"bytes\": 1048576, \"time_us\": 4}]}\n",
                            &c, err);
    hw_calib_free(c);
    if (st) return st;
    HwBusbw *b = NULL;
    st = hw_busbw_load_text("busbw.yaml",
                            "test\nTP:\n  allreduce,: 300\n  allgather,: 280\nDP:\n  allreduce,: 40\n", &b, err);
    hw_busbw_free(b);
    return st;
}

static TsStatus e_wl_read(void *ctx, TsError *err)
{
    Workload *w = NULL;
    const char *text = (const char *)ctx;
    TsStatus st = wl_read_simai("w.txt", text, strlen(text), &w, err);
    if (st != TS_OK && w) st = ts_err(err, TS_ERR_INTERNAL, "reader failed but returned a workload");
    if (st == TS_OK) {
        TsBuf b = {0};
        WlSimaiOptions o = {0};
        wl_write_simai(w, &o, &b);
        wl_write_astrasim(w, &b);
        wl_write_json(w, &b);
        if (b.oom) st = ts_err(err, TS_ERR_INTERNAL, "out of memory writing");
        ts_buf_free(&b);
    }
    wl_destroy(w);
    return st;
}

static TsStatus e_wl_chakra(void *ctx, TsError *err)
{
    const char *text = (const char *)ctx;
    Workload *w = NULL;
    TsStatus st = wl_read_simai("w.txt", text, strlen(text), &w, err);
    if (st) return st;
    TsBuf b = {0};
    st = wl_chakra_encode_rank(w, NULL, 0, &b, err);
    if (st == TS_OK && b.oom) st = ts_err(err, TS_ERR_INTERNAL, "out of memory encoding");
    if (st == TS_OK) {
        WlChakraTrace t;
        memset(&t, 0, sizeof t);
        st = wl_chakra_decode("w.0.et", (const uint8_t *)b.data, b.len, &t, err);
        wl_chakra_trace_free(&t);
    }
    ts_buf_free(&b);
    wl_destroy(w);
    return st;
}

static TsStatus e_model_text(void *ctx, TsError *err)
{
    ModelSpec m;
    ModelOverrides ov;
    model_overrides_init(&ov);
    ov.heads = 16; /* what the sources do not say */
    ov.hidden = 1024;
    ov.layers = 24;
    ov.vocab = 50257;
    return model_load((const char *)ctx, &ov, &m, err);
}

static const char MICRO_AG[] = "MICRO\n1\nall_gather_1MB -1 5 NONE 0 5 NONE 0 5 ALLGATHER 1048576 100\n";

static void test_alloc_failure_pipeline(void **state)
{
    (void)state;
    assert_true(fail_loop("graph_build(gpt2)", e_graph, "gpt2") >= 2);
    assert_true(fail_loop("graph_build(mixtral)", e_graph, "mixtral-8x7b") >= 2);
    assert_true(fail_loop("graph_build(deepseek-v3)", e_graph, "deepseek-v3") >= 2);
    assert_true(fail_loop("part_build", e_part, "gpt2-medium") >= 2);
    assert_true(fail_loop("sim_simulate", e_simulate, "gpt3-175b") >= 1);
    assert_true(fail_loop("hw cluster/calib/busbw", e_hw_files, NULL) >= 2);
    assert_true(fail_loop("wl_read_simai", e_wl_read, (void *)MICRO_AG) >= 2);
    assert_true(fail_loop("wl_chakra", e_wl_chakra, (void *)MICRO_AG) >= 2);
    assert_true(fail_loop("model tree", e_model_text, TS_TEST_DIR "/data/megatron_gpt_module_tree.txt") >= 2);
    assert_true(fail_loop("model table", e_model_text, TS_TEST_DIR "/data/deepspeed_pipe_param_partition.csv") >= 2);
}

static void test_alloc_failure(void **state)
{
    (void)state;
    const char *cfg = write_tmp("config.json", LLAMA_CFG, strlen(LLAMA_CFG));
    long n;
    n = fail_loop("ts_read_file", e_read_file, (void *)cfg);
    assert_true(n >= 1);
    n = fail_loop("ts_json_load", e_json_load, (void *)cfg);
    assert_true(n >= 2);
    n = fail_loop("model_load(config.json)", e_model_load, (void *)cfg);
    assert_true(n >= 2);
    n = fail_loop("model_load(preset)", e_model_load, "llama3-8b");
    assert_true(n >= 2);
    n = fail_loop("hw_gpu_load", e_gpu_load, "h100-sxm5-80gb");
    assert_true(n >= 2);
    n = fail_loop("sim_pipeline_run", e_pipeline, NULL);
    assert_true(n >= 2);
    n = fail_loop("ts_buf", e_buf, NULL);
    assert_true(n >= 2);
    n = fail_loop("ts_arena", e_arena, NULL);
    assert_true(n >= 2);
}

/* Per-allocation failure inside one arena (ts_arena_fail_after). */
static void test_arena_fail_after(void **state)
{
    (void)state;
    for (long n = 0; n < 50; n++) {
        TsArena *a = ts_arena_create(64);
        assert_non_null(a);
        ts_arena_fail_after(a, n);
        long ok = 0;
        for (int i = 0; i < 60; i++)
            if (ts_arena_alloc(a, (size_t)(i * 7 + 1))) ok++;
        assert_int_equal(ok, n);
        ts_arena_destroy(a);
    }
}

/* ===== 2. hostile inputs ====================================================== */

/* Every error is positioned (line >= 1) when it is about a file's content. */
static void expect_input_error(TsStatus st, const TsError *e, const char *needle)
{
    if (st != TS_ERR_INPUT) print_error("expected TS_ERR_INPUT, got %d (%s)\n", (int)st, e->msg);
    assert_int_equal(st, TS_ERR_INPUT);
    assert_true(e->msg[0] != '\0');
    if (needle && !strstr(e->msg, needle)) {
        print_error("message '%s' lacks '%s'\n", e->msg, needle);
        fail();
    }
}

static TsStatus load_model_file(const char *name, const void *data, size_t n, TsError *e)
{
    const char *p = write_tmp(name, data, n);
    ModelSpec m;
    ModelOverrides ov;
    model_overrides_init(&ov);
    memset(e, 0, sizeof *e);
    return model_load(p, &ov, &m, e);
}

static void test_json_hostile(void **state)
{
    (void)state;
    TsError e;
    const char *nan = "{\"model_type\": \"llama\", \"hidden_size\": NaN}";
    expect_input_error(load_model_file("nan.json", nan, strlen(nan), &e), &e, NULL);
    assert_int_equal(e.line, 1);
    assert_true(e.col > 1);
    assert_non_null(strstr(e.hint, "NaN"));
    const char *inf = "{\"model_type\": \"llama\",\n \"hidden_size\": -Infinity}";
    expect_input_error(load_model_file("inf.json", inf, strlen(inf), &e), &e, NULL);
    assert_int_equal(e.line, 2);
    const char *big = "{\"model_type\": \"llama\", \"hidden_size\": 1e999}";
    expect_input_error(load_model_file("big.json", big, strlen(big), &e), &e, NULL);

    /* 10^5 nested arrays: rejected at depth 65, positioned, no recursion. */
    size_t depth = 100000;
    char *deep = malloc(2 * depth + 16);
    assert_non_null(deep);
    strcpy(deep, "{\"a\":");
    memset(deep + 5, '[', depth);
    memset(deep + 5 + depth, ']', depth);
    strcpy(deep + 5 + 2 * depth, "}");
    expect_input_error(load_model_file("deep.json", deep, strlen(deep), &e), &e, "nested deeper");
    assert_int_equal(e.line, 1);
    assert_int_equal(e.col, 5 + 63 + 1); /* the object is level 1 */
    free(deep);

    /* Invalid UTF-8 inside a string. */
    const char bad_utf8[] = "{\"model_type\": \"ll\xff\xfe\"}";
    expect_input_error(load_model_file("utf8.json", bad_utf8, sizeof bad_utf8 - 1, &e), &e, NULL);
    assert_int_equal(e.line, 1);

    /* Binary garbage with NUL bytes. */
    unsigned char garbage[4096];
    srand(7);
    for (size_t i = 0; i < sizeof garbage; i++) garbage[i] = (unsigned char)(rand() & 0xff);
    garbage[0] = '{';
    garbage[100] = 0;
    expect_input_error(load_model_file("garbage.json", garbage, sizeof garbage, &e), &e, NULL);
    assert_true(e.line >= 1);
    expect_input_error(load_model_file("garbage.txt", garbage + 1, sizeof garbage - 1, &e), &e, NULL);

    /* Empty file, whitespace-only file, a top-level array. */
    expect_input_error(load_model_file("empty.json", "", 0, &e), &e, NULL);
    expect_input_error(load_model_file("ws.json", " \n\t\n", 4, &e), &e, NULL);
    expect_input_error(load_model_file("arr.json", "[1,2]", 5, &e), &e, "object");

    /* A directory named like a model file. */
    const char *d = tpath("dir.json");
    assert_int_equal(mkdir(d, 0700), 0);
    ModelSpec m;
    ModelOverrides ov;
    model_overrides_init(&ov);
    memset(&e, 0, sizeof e);
    assert_int_not_equal(model_load(d, &ov, &m, &e), TS_OK);
    rmdir(d);
}

/* Every truncation of a valid config is an error with a position, or (for
 * the few prefixes that are still complete JSON) a result. */
static void test_truncated(void **state)
{
    (void)state;
    size_t n = strlen(LLAMA_CFG);
    int errors = 0;
    for (size_t k = 0; k < n; k++) {
        TsError e;
        TsStatus st = load_model_file("trunc.json", LLAMA_CFG, k, &e);
        if (st == TS_OK) continue;
        assert_int_equal(st, TS_ERR_INPUT);
        assert_true(e.line >= 1);
        errors++;
    }
    assert_true(errors >= (int)n - 2);
    TsError e;
    assert_int_equal(load_model_file("full.json", LLAMA_CFG, n, &e), TS_OK);
}

/* A 4 MiB single line, and a file over the 16 MiB JSON limit. */
static void test_overlong(void **state)
{
    (void)state;
    size_t n = 4u << 20;
    char *s = malloc(n + 64);
    assert_non_null(s);
    strcpy(s, "{\"model_type\": \"");
    size_t h = strlen(s);
    memset(s + h, 'x', n);
    strcpy(s + h + n, "\"}");
    TsError e;
    double t0 = now_s();
    expect_input_error(load_model_file("long.json", s, strlen(s), &e), &e, NULL);
    print_message("4 MiB single-line JSON rejected in %.3f s\n", now_s() - t0);
    /* the copied source line is bounded */
    assert_true(strlen(e.src_line) < TS_ERR_LINE_MAX);
    free(s);

    n = (16u << 20) + 10;
    s = malloc(n);
    assert_non_null(s);
    memset(s, ' ', n);
    s[0] = '{';
    s[n - 1] = '}';
    expect_input_error(load_model_file("huge.json", s, n, &e), &e, "limit");
    free(s);
}

/* Zero, negative and absurd sizes from flags never overflow. */
static void test_extreme_model_sizes(void **state)
{
    (void)state;
    struct {
        int64_t layers, hidden, heads;
        TsStatus want;
    } cases[] = {
        {12, 768, 12, TS_OK},
        {100000, 1024, 16, TS_OK},          /* 10^5 layers */
        {1000000, 64, 1, TS_OK},            /* the 10^6-layer limit itself */
        {1000001, 64, 1, TS_ERR_INPUT},
        {0, 768, 12, TS_ERR_INPUT},
        {12, 0, 12, TS_ERR_INPUT},
        {12, 768, 0, TS_ERR_INPUT},
        {12, INT64_MAX, 12, TS_ERR_INPUT},  /* 4*hidden would overflow */
        {12, INT64_MAX / 4, 1, TS_ERR_INPUT},
        {INT64_MAX, 768, 12, TS_ERR_INPUT},
        {12, 768, INT64_MAX, TS_ERR_INPUT},
        {1000000, 10000000, 100000, TS_ERR_INPUT}, /* each size allowed, product absurd */
        {-1, 768, 12, TS_ERR_INPUT},        /* "not given": names the flag */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        for (int arch = 0; arch < MODEL_ARCH_COUNT; arch++) {
            ModelOverrides ov;
            model_overrides_init(&ov);
            ov.arch_set = true;
            ov.arch = (ModelArch)arch;
            ov.layers = cases[i].layers;
            ov.hidden = cases[i].hidden;
            ov.heads = cases[i].heads;
            ov.vocab = 50257;
            ModelSpec m;
            TsError e = {0};
            TsStatus st = model_load(NULL, &ov, &m, &e);
            if (st != cases[i].want)
                print_error("case %zu arch %d: status %d (%s)\n", i, arch, (int)st, e.msg);
            assert_int_equal(st, cases[i].want);
            if (st == TS_OK) {
                ModelCounts c;
                model_count_params(&m, &c);
                assert_true(c.total > 0);
                /* dense: everything is embedding + head + identical layers */
                if (m.experts == 0)
                    assert_true(c.total == c.embedding + c.lm_head + m.layers * c.per_layer_dense +
                                               (c.total - c.embedding - c.lm_head - m.layers * c.per_layer_dense));
                assert_true(c.non_embedding == c.total - c.embedding - c.lm_head);
            }
        }
    }
}


/* ===== 2b. hostile and extreme workloads ===================================== */

/* A 10^6-item SimAI/ASTRA-sim text, generated here (never committed): reads
 * (time printed) and every item is accounted for. */
static void test_workload_million_lines(void **state)
{
    (void)state;
    const int64_t n = big_n();
    TsBuf b = {0};
    ts_buf_printf(&b, "MICRO\n%lld\n", (long long)n);
    for (int64_t i = 0; i < n; i++)
        ts_buf_printf(&b, "l%lld\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLGATHER\t%lld\t1\n", (long long)i,
                      (long long)(4096 + i));
    assert_false(b.oom);
    Workload *w = NULL;
    TsError e = {0};
    double t0 = now_s();
    TsStatus st = wl_read_simai("big.txt", b.data, b.len, &w, &e);
    double dt = now_s() - t0;
    if (st) print_error("%s\n", e.msg);
    assert_int_equal(st, TS_OK);
    print_message("%lld-line SimAI text (%.1f MB) read in %.3f s\n", (long long)n, (double)b.len / 1e6, dt);
    assert_int_equal(w->n_rows, n);
    WlSummary sum;
    wl_summary(w, 0, &sum);
    /* bytes conserved through the reader: sum of 4096+i */
    double want = (double)n * 4096.0 + (double)n * (double)(n - 1) / 2.0;
    assert_true(fabs(sum.coll_bytes - want) <= 1e-12 * want);
    wl_destroy(w);

    /* the same file with its count line one short: an error at the extra
     * line (a count larger than the file is a warning, as AICB v1.0 wrote) */
    char *p = strchr(b.data + 6, '\n');
    assert_non_null(p);
    for (size_t j = 6; b.data[j] != '\n'; j++) b.data[j] = j == 6 ? '0' : '9'; /* n -> n-1 */
    st = wl_read_simai("big.txt", b.data, b.len, &w, &e);
    assert_int_equal(st, TS_ERR_INPUT);
    assert_null(w);
    assert_int_equal(e.line, 2 + n);
    ts_buf_free(&b);
}

/* Op tables with 10^6 rows as well. */
static void test_optable_million_rows(void **state)
{
    (void)state;
    const int64_t n = big_n();
    TsBuf b = {0};
    ts_buf_puts(&b, "name\tforward_compute_time\tforward_comm_type\tforward_comm_size\tbackward_compute_time\t"
                    "backward_comm_type\tbackward_comm_size\tweight_grad_compute_time\tweight_grad_comm_type\t"
                    "weight_grad_comm_size\tprocess_time\n");
    for (int64_t i = 0; i < n; i++)
        ts_buf_printf(&b, "op_%lld\t0.01\tNone\t0\t0.02\tNone\t0\t0.0\tNone\t0\t0\n", (long long)i);
    assert_false(b.oom);
    Workload *w = NULL;
    TsError e = {0};
    double t0 = now_s();
    TsStatus st = wl_read_optable("big.tsv", b.data, b.len, &w, &e);
    if (st) print_error("%s\n", e.msg);
    assert_int_equal(st, TS_OK);
    print_message("%lld-row op table read in %.3f s\n", (long long)n, now_s() - t0);
    assert_int_equal(w->n_rows, n);
    wl_destroy(w);
    ts_buf_free(&b);
}

/* Overlong lines, garbage, invalid UTF-8, negative/NaN sizes, truncation:
 * positioned TS_ERR_INPUT, never a crash, never a workload. */
static void expect_wl_error(const char *what, const char *text, size_t len)
{
    Workload *w = NULL;
    TsError e = {0};
    TsStatus st = wl_read_simai("bad.txt", text, len, &w, &e);
    if (st != TS_ERR_INPUT) print_error("%s: status %d (%s)\n", what, (int)st, e.msg);
    assert_int_equal(st, TS_ERR_INPUT);
    assert_null(w);
    assert_true(e.line >= 1);
    assert_true(e.msg[0] != '\0');
}

static void test_workload_hostile(void **state)
{
    (void)state;
    /* a 1 MiB line (limit WL_MAX_LINE_BYTES = 64 KiB) */
    size_t n = 1u << 20;
    char *s = malloc(n + 64);
    assert_non_null(s);
    strcpy(s, "MICRO\n1\n");
    memset(s + 8, 'x', n);
    strcpy(s + 8 + n, "\n");
    expect_wl_error("overlong line", s, strlen(s));
    free(s);
    const char neg[] = "MICRO\n1\nx\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLGATHER\t-4096\t1\n";
    expect_wl_error("negative size", neg, sizeof neg - 1);
    const char nan[] = "MICRO\n1\nx\t-1\tnan\tNONE\t0\t1\tNONE\t0\t1\tALLGATHER\t4096\t1\n";
    expect_wl_error("NaN time", nan, sizeof nan - 1);
    const char inf[] = "MICRO\n1\nx\t-1\t1e999\tNONE\t0\t1\tNONE\t0\t1\tALLGATHER\t4096\t1\n";
    expect_wl_error("infinite time", inf, sizeof inf - 1);
    const char huge[] = "MICRO\n1\nx\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLGATHER\t99999999999999999999999\t1\n";
    expect_wl_error("size overflow", huge, sizeof huge - 1);
    const char hugetime[] = "MICRO\n1\nx\t-1\t1e300\tNONE\t0\t1\tNONE\t0\t1\tALLGATHER\t4096\t1\n";
    expect_wl_error("time overflow", hugetime, sizeof hugetime - 1);
    const char count[] = "MICRO\n-5\n";
    expect_wl_error("negative count", count, sizeof count - 1);
    const char bigcount[] = "MICRO\n99999999999999\n";
    expect_wl_error("absurd count", bigcount, sizeof bigcount - 1);
    const char utf8[] = "MICRO\n1\n\xff\xfe\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLGATHER\t4096\t1\n";
    Workload *w = NULL;
    TsError e = {0};
    TsStatus st = wl_read_simai("u.txt", utf8, sizeof utf8 - 1, &w, &e); /* a name is opaque bytes */
    assert_true(st == TS_OK || st == TS_ERR_INPUT);
    wl_destroy(w);
    unsigned char garbage[8192];
    srand(11);
    for (size_t i = 0; i < sizeof garbage; i++) garbage[i] = (unsigned char)(rand() & 0xff);
    garbage[sizeof garbage - 1] = 0;
    expect_wl_error("garbage", (const char *)garbage, sizeof garbage - 1);
    expect_wl_error("empty", "", 0);
    /* every prefix of a valid file: an error or (at line ends) a result */
    const char *ok = "MICRO\n2\na\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLGATHER\t4096\t1\n"
                     "b\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLREDUCE\t8192\t1\n";
    for (size_t k = 0; k <= strlen(ok); k++) {
        char *pre = malloc(k + 1);
        memcpy(pre, ok, k);
        pre[k] = 0;
        w = NULL;
        st = wl_read_simai("t.txt", pre, k, &w, &e);
        assert_true(st == TS_OK || st == TS_ERR_INPUT);
        assert_true((st == TS_OK) == (w != NULL));
        wl_destroy(w);
        free(pre);
    }
    /* Chakra: random and truncated protobuf never decode into garbage */
    TsBuf b = {0};
    st = wl_read_simai("ok.txt", ok, strlen(ok), &w, &e);
    assert_int_equal(st, TS_OK);
    assert_int_equal(wl_chakra_encode_rank(w, NULL, 0, &b, &e), TS_OK);
    wl_destroy(w);
    for (size_t k = 0; k < b.len; k++) {
        WlChakraTrace t;
        memset(&t, 0, sizeof t);
        st = wl_chakra_decode("t.et", (const uint8_t *)b.data, k, &t, &e);
        assert_true(st == TS_OK || st == TS_ERR_INPUT);
        wl_chakra_trace_free(&t);
    }
    ts_buf_free(&b);
}

/* 2^20 GPUs: the cluster, the plan and the simulation stay O(1) in the GPU
 * count (rank classes, arithmetic groups); a bounded time. */
static void test_million_gpus(void **state)
{
    (void)state;
    ModelSpec m;
    TsError e = {0};
    assert_int_equal(model_preset("gpt3-175b", &m, &e), TS_OK);
    ClusterSpec cl;
    assert_int_equal(hw_cluster_load("dgx-h100", 1 << 20, &cl, &e), TS_OK);
    HwModel hw;
    hw_model_init(&hw);
    hw.gpu = cl.gpu;
    HwNet net;
    hw_net_init(&net, &cl);
    SimSetup in = {.model = &m, .hw = &hw, .net = &net};
    plan_init(&in.plan);
    in.plan.tp = 8;
    in.plan.pp = 16;
    in.plan.gpus = 1 << 20;
    in.plan.seq = 2048;
    in.plan.global_batch = 1 << 16; /* 8192 DP replicas x 8 micro-batches */
    sim_options_init(&in.opt);
    SimResult r;
    double t0 = now_s();
    TsStatus st = sim_simulate(&in, NULL, &r, &e);
    if (st) print_error("%s\n", e.msg);
    assert_int_equal(st, TS_OK);
    print_message("2^20-GPU simulation in %.4f s\n", now_s() - t0);
    assert_true(isfinite(r.iteration_time_s) && r.iteration_time_s > 0);
    assert_true(isfinite(r.tokens_per_s) && r.tokens_per_s > 0);
    sim_result_free(&r);
    /* a rank's groups are still answered in O(size) */
    int64_t mem[16];
    assert_int_equal(plan_group_members(&in.plan, PLAN_GROUP_PP, (1 << 20) - 1, mem, 16), 16);
    assert_int_equal(mem[15], (1 << 20) - 1);
    /* 2^40 GPUs: an error, not an overflow */
    in.plan.gpus = (int64_t)1 << 40;
    in.plan.dp = 0;
    st = sim_simulate(&in, NULL, &r, &e);
    if (st == TS_OK) sim_result_free(&r);
}

/* ===== 3. output files ======================================================== */

static void test_no_partial_output(void **state)
{
    (void)state;
    const char *p = write_tmp("keep.txt", "old contents\n", 13);
    TsError e = {0};
    /* An aborted streaming write leaves the old file and no temp file. */
    TsOutFile o;
    assert_int_equal(ts_out_open(&o, p, &e), TS_OK);
    for (int i = 0; i < 100000; i++) fputs("half-written line\n", o.fp);
    ts_out_abort(&o);
    char *text;
    size_t n;
    assert_int_equal(ts_read_file(p, 100, &text, &n, &e), TS_OK);
    assert_string_equal(text, "old contents\n");
    free(text);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "test -z \"$(ls %s | grep '\\.tmp\\.')\"", tmpdir);
    assert_int_equal(system(cmd), 0);

    /* Missing directory: a clear usage error naming the directory. */
    memset(&e, 0, sizeof e);
    assert_int_equal(ts_write_file_atomic(tpath("no/such/dir/out.txt"), "x", 1, &e), TS_ERR_USAGE);
    assert_non_null(strstr(e.msg, "does not exist"));
    assert_non_null(strstr(e.hint, "mkdir -p"));

    /* The output path is an existing directory: an error, the directory stays. */
    const char *d = tpath("outdir");
    assert_int_equal(mkdir(d, 0700), 0);
    memset(&e, 0, sizeof e);
    assert_int_not_equal(ts_write_file_atomic(d, "x", 1, &e), TS_OK);
    struct stat st;
    assert_int_equal(stat(d, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    rmdir(d);

    /* A read-only directory. */
    const char *ro = tpath("ro");
    assert_int_equal(mkdir(ro, 0500), 0);
    char f[300];
    snprintf(f, sizeof f, "%s/out.txt", ro);
    memset(&e, 0, sizeof e);
    if (geteuid() != 0) assert_int_not_equal(ts_write_file_atomic(f, "x", 1, &e), TS_OK);
    assert_int_equal(count_dir_entries(ro) == 0 || geteuid() == 0, 1);
    chmod(ro, 0700);
    snprintf(cmd, sizeof cmd, "rm -rf %s", ro);
    assert_int_equal(system(cmd), 0);
}

/* ===== 4. properties ========================================================== */

static double rnd(unsigned *s)
{
    *s = *s * 1103515245u + 12345u;
    return (double)((*s >> 8) & 0xffff) / 65536.0;
}

static double pipe_time(int p, int v, int64_t m, PlanSchedule sch, const SimChunkCost *c)
{
    SimStageCost st[16];
    memset(st, 0, sizeof st);
    SimPipeline pl = {.stages = p, .chunks = v, .micro_batches = m, .schedule = sch, .chunk = c, .stage = st};
    SimResult r;
    TsError e = {0};
    assert_int_equal(sim_pipeline_run(&pl, NULL, &r, &e), TS_OK);
    double t = r.iteration_time_s;
    /* the breakdown of the critical stage sums to the iteration time */
    double sum = 0;
    for (int i = 0; i < SIM_BD_COUNT; i++) sum += sim_breakdown_get(&r.breakdown, i);
    assert_true(fabs(sum - t) <= 1e-9 * t + 1e-12);
    sim_result_free(&r);
    return t;
}

/* Monotonicity of the schedule engine on random stage costs: making any one
 * task slower, or adding micro-batches, never makes the iteration faster. */
static void test_sim_monotone(void **state)
{
    (void)state;
    unsigned seed = 12345;
    SimChunkCost c[16 * 4];
    for (int trial = 0; trial < 200; trial++) {
        int p = 1 + (int)(rnd(&seed) * 8);
        int v = 1 + (int)(rnd(&seed) * 3);
        if (p == 1) v = 1;
        PlanSchedule sch = v > 1 ? PLAN_SCHED_INTERLEAVED : (rnd(&seed) < 0.5 ? PLAN_SCHED_1F1B : PLAN_SCHED_GPIPE);
        int64_t m = p * (1 + (int)(rnd(&seed) * 4));
        memset(c, 0, sizeof c);
        for (int i = 0; i < p * v; i++) {
            c[i].compute_fwd_s = c[i].fwd_s = 0.1 + rnd(&seed);
            c[i].compute_bwd_s = c[i].bwd_s = 0.2 + 2 * rnd(&seed);
            c[i].p2p_fwd_s = c[i].p2p_bwd_s = 0.05 * rnd(&seed);
        }
        double t0 = pipe_time(p, v, m, sch, c);
        double t1 = pipe_time(p, v, m + p, sch, c);
        assert_true(t1 >= t0 * (1 - 1e-12));
        int k = (int)(rnd(&seed) * p * v);
        c[k].fwd_s += 0.5;
        c[k].compute_fwd_s += 0.5;
        double t2 = pipe_time(p, v, m, sch, c);
        assert_true(t2 >= t0 * (1 - 1e-12));
        c[k].bwd_s += 0.5;
        c[k].compute_bwd_s += 0.5;
        double t3 = pipe_time(p, v, m, sch, c);
        assert_true(t3 >= t2 * (1 - 1e-12));
    }
}

/* Hostile pipelines: zero/negative sizes are plan errors, huge ones are
 * bounded in time (the engine is O(p*v*m)). */
static void test_sim_hostile(void **state)
{
    (void)state;
    SimChunkCost c[4] = {{0}};
    SimStageCost st[4] = {{0}};
    SimResult r;
    TsError e = {0};
    SimPipeline pl = {.stages = 0, .chunks = 1, .micro_batches = 8, .schedule = PLAN_SCHED_1F1B, .chunk = c, .stage = st};
    assert_int_equal(sim_pipeline_run(&pl, NULL, &r, &e), TS_ERR_PLAN);
    pl.stages = 2;
    pl.micro_batches = 0;
    assert_int_equal(sim_pipeline_run(&pl, NULL, &r, &e), TS_ERR_PLAN);
    pl.micro_batches = -5;
    assert_int_equal(sim_pipeline_run(&pl, NULL, &r, &e), TS_ERR_PLAN);
    pl.micro_batches = 8;
    pl.chunks = 2; /* chunks > 1 without INTERLEAVED */
    assert_int_equal(sim_pipeline_run(&pl, NULL, &r, &e), TS_ERR_PLAN);
    pl.chunks = -1;
    assert_int_not_equal(sim_pipeline_run(&pl, NULL, &r, &e), TS_OK);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alloc_failure),     cmocka_unit_test(test_alloc_failure_pipeline),
        cmocka_unit_test(test_arena_fail_after),
        cmocka_unit_test(test_json_hostile),      cmocka_unit_test(test_truncated),
        cmocka_unit_test(test_overlong),          cmocka_unit_test(test_extreme_model_sizes),
        cmocka_unit_test(test_no_partial_output), cmocka_unit_test(test_sim_monotone),
        cmocka_unit_test(test_sim_hostile),       cmocka_unit_test(test_workload_million_lines),
        cmocka_unit_test(test_optable_million_rows), cmocka_unit_test(test_workload_hostile),
        cmocka_unit_test(test_million_gpus),
    };
    return cmocka_run_group_tests(tests, setup_dir, teardown_dir);
}
