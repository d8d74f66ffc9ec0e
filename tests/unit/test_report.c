/* Unit tests for the report: DeepSpeed number formatting (profiler.py's
 * number_to_string and wrappers), per-module stats semantics, training
 * FLOPs against the closed forms, the placement of chart labels. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim/report.h"
#include "trainsim/report_html.h"

static void test_number_format(void **state)
{
    (void)state;
    char b[64];
    rep_fmt_number(b, sizeof b, 89452314624.0);
    assert_string_equal(b, "89.45 G");
    rep_fmt_number(b, sizeof b, 12);
    assert_string_equal(b, "12 "); /* the space stays */
    rep_fmt_number(b, sizeof b, 1.2345678e17); /* :g keeps 6 digits */
    assert_string_equal(b, "123457 T");
    rep_fmt_number(b, sizeof b, 999.999);
    assert_string_equal(b, "1000 ");
    rep_fmt_macs(b, sizeof b, 44696862720.0);
    assert_string_equal(b, "44.7 GMACs");
    rep_fmt_macs(b, sizeof b, 0);
    assert_string_equal(b, "0 MACs");
    rep_fmt_params(b, sizeof b, 590592);
    assert_string_equal(b, "590.59 K");
    rep_fmt_params(b, sizeof b, 6738415616.0);
    assert_string_equal(b, "6.74 B");
    rep_fmt_params(b, sizeof b, 0);
    assert_string_equal(b, "0");
    rep_fmt_duration(b, sizeof b, 0.13552);
    assert_string_equal(b, "135.52 ms");
    rep_fmt_duration(b, sizeof b, 833.75e-6);
    assert_string_equal(b, "833.75 us");
    rep_fmt_flops(b, sizeof b, 660.07e9);
    assert_string_equal(b, "660.07 GFLOPS");
    rep_fmt_g2(b, sizeof b, 100.0);
    assert_string_equal(b, "100");
    rep_fmt_g2(b, sizeof b, 0.305);
    assert_string_equal(b, "0.3"); /* 0.305 is 0.30499999... in binary, like Python */
}

static ModuleGraph *gpt(int64_t L, int64_t H, int64_t A, int64_t S)
{
    ModelSpec m;
    model_defaults(&m, MODEL_ARCH_GPT);
    m.layers = L;
    m.hidden = H;
    m.heads = A;
    m.qkv_bias = m.proj_bias = m.mlp_bias = false;
    model_finalize(&m);
    GraphOptions o;
    graph_options_init(&o);
    o.seq = S;
    o.batch = 2;
    ModuleGraph *g;
    TsError err = {0};
    assert_int_equal(graph_build(&m, &o, &g, &err), TS_OK);
    return g;
}

static void test_training_vs_closed_forms(void **state)
{
    (void)state;
    /* A large MHA/4h-GeLU GPT: exact matmul FLOPs should sit within 1% of the
     * closed forms (the rest is norms, softmax, the 2.5x attention backward). */
    ModuleGraph *g = gpt(24, 4096, 32, 2048);
    RepTraining t;
    rep_training_flops(g, &t);
    for (int r = 0; r < PLAN_RECOMPUTE_COUNT; r++) {
        double d = t.exact_flops[r] / t.closed_flops[r] - 1;
        assert_true(d > -0.01 && d < 0.03);
    }
    assert_true(t.exact_flops[PLAN_RECOMPUTE_FULL] > t.exact_flops[PLAN_RECOMPUTE_SELECTIVE]);
    assert_true(t.exact_flops[PLAN_RECOMPUTE_SELECTIVE] > t.exact_flops[PLAN_RECOMPUTE_NONE]);
    graph_destroy(g);
}

static void test_module_stats(void **state)
{
    (void)state;
    ModuleGraph *g = gpt(2, 256, 4, 128);
    RepCompute c;
    TsError err = {0};
    assert_int_equal(rep_compute_init(&c, "a100-sxm4-80gb", TS_DTYPE_BF16, &err), TS_OK);
    RepModuleStats *st = calloc((size_t)g->n_mods, sizeof *st);
    rep_module_stats(g, &c, st);
    GraphTotals t;
    graph_model_totals(g, &t);
    assert_true(st[0].params == (double)t.params); /* tied output layer once at the root */
    assert_true(st[0].macs == t.ds_macs);
    int32_t out = graph_find(g, "output_layer");
    assert_true(st[out].params == (double)g->vocab * 256); /* but shown where it is held */
    double sum = 0;
    for (int32_t i = 0; i < g->n_ops; i++) {
        double ot = rep_op_time_s(&c, &g->ops[i]);
        /* the profile's latency is the hw compute model's forward time */
        assert_true(ot == hw_op_time_s(&c.hw, &g->ops[i], HW_PASS_FWD, TS_DTYPE_BF16));
        sum += ot;
    }
    assert_true(st[0].latency_s > 0 && st[0].latency_s <= sum * (1 + 1e-12) && st[0].latency_s >= sum * (1 - 1e-12));
    TsBuf b = {0};
    RepProfileOptions po;
    rep_profile_options_init(&po);
    rep_profile_text(g, &c, &po, &b);
    assert_non_null(strstr(b.data, "(0-1): 2 x TransformerLayer("));
    assert_non_null(strstr(b.data, "-------------------------- DeepSpeed Flops Profiler --------------------------\n"));
    ts_buf_free(&b);
    rep_profile_json(g, &c, &po, &b);
    assert_non_null(strstr(b.data, "\"format\":\"trainsim.profile\",\"version\":1"));
    ts_buf_free(&b);
    assert_int_equal(rep_compute_init(&c, "no-such-gpu", TS_DTYPE_BF16, &err), TS_ERR_INPUT);
    free(st);
    graph_destroy(g);
}

/* Labels of crowded points (rep_place_labels): none overlaps another label
 * or a point's disc, all stay inside the plot; a lone point keeps its label
 * on its right. Cases: {points, n}. */
static bool boxes_overlap(double ax, double ay, double aw, double ah, double bx, double by, double bw, double bh)
{
    return ax < bx + bw && bx < ax + aw && ay < by + bh && by < ay + ah;
}

static void test_label_placement(void **state)
{
    (void)state;
    static const struct {
        double xy[10][2];
        int n;
    } CASES[] = {
        {{{500, 200}}, 1},                                                       /* alone */
        {{{500, 200}, {500, 200}, {500, 200}, {500, 200}}, 4},                   /* one spot */
        {{{500, 200}, {512, 202}, {524, 204}, {536, 206}, {548, 208}, {560, 210}}, 6}, /* a row */
        {{{5, 5}, {8, 9}, {12, 4}, {6, 14}, {15, 15}}, 5},                       /* a corner */
        {{{300, 100}, {301, 101}, {302, 102}, {303, 103}, {304, 104}, {305, 105}, {306, 106}, {307, 107},
          {308, 108}, {309, 109}}, 10},                                         /* a diagonal */
    };
    const double r = 7, X0 = 0, Y0 = 0, X1 = 1040, Y1 = 420;
    for (size_t c = 0; c < sizeof CASES / sizeof CASES[0]; c++) {
        RepLabel l[10];
        for (int i = 0; i < CASES[c].n; i++)
            l[i] = (RepLabel){.x = CASES[c].xy[i][0], .y = CASES[c].xy[i][1], .w = 20 + 4 * i, .h = 15};
        rep_place_labels(l, CASES[c].n, r, X0, Y0, X1, Y1);
        for (int i = 0; i < CASES[c].n; i++) {
            assert_true(l[i].lx >= X0 && l[i].ly >= Y0 && l[i].lx + l[i].w <= X1 && l[i].ly + l[i].h <= Y1);
            for (int j = 0; j < CASES[c].n; j++) {
                if (j != i) assert_false(boxes_overlap(l[i].lx, l[i].ly, l[i].w, l[i].h, l[j].lx, l[j].ly, l[j].w, l[j].h));
                assert_false(boxes_overlap(l[i].lx, l[i].ly, l[i].w, l[i].h, l[j].x - r, l[j].y - r, 2 * r, 2 * r));
            }
        }
    }
    RepLabel one = {.x = 500, .y = 200, .w = 20, .h = 15};
    rep_place_labels(&one, 1, r, X0, Y0, X1, Y1);
    assert_true(one.lx > one.x && !one.moved);
    assert_true(one.ly < one.y && one.ly + one.h > one.y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_number_format),
        cmocka_unit_test(test_training_vs_closed_forms),
        cmocka_unit_test(test_module_stats),
        cmocka_unit_test(test_label_placement),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
