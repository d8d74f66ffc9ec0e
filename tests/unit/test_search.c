/* Unit tests of the plan search with a synthetic evaluator: the space is
 * exactly the brute-force set of combinations, results do not depend on the
 * thread count or on the split over ranks, ties break by index, every
 * objective ranks as documented, and the HTML writer escapes its input. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim/report.h"
#include "trainsim/report_html.h"
#include "trainsim/search.h"
#include "../../src/search/search_int.h" /* white box: the cursor against the decode */

static void small_config(SearchConfig *c)
{
    search_config_init(c);
    c->gpus.n = 1;
    c->gpus.v[0] = 64;
    c->global_batch = 128;
    c->seq = 4096;
    c->layers = 32;
    c->top_k = 7;
}

/* Synthetic evaluator: invalid when mbs == 3 or vpp does not divide the
 * layers per stage; memory grows with mbs and falls with tp*pp, zero and
 * recompute; throughput is quantised so many plans tie. */
static SearchEvalStatus syn_check(void *ctx, void *scratch, SearchPoint *p)
{
    (void)ctx;
    (void)scratch;
    const SearchKnobs *k = &p->k;
    if (k->mbs == 3 || (32 / k->pp) % k->vpp != 0) return SEARCH_EVAL_INVALID;
    double act = 8e9 * k->mbs / (k->recompute == PLAN_RECOMPUTE_FULL ? 4 : k->recompute ? 2 : 1) / k->cp;
    double state = 140e9 * 16 / 2 / (k->tp * k->pp) / (k->zero ? 2.0 * k->zero : 1.0);
    p->memory_bytes = state / 8 + act / (k->sp ? k->tp : 1);
    p->capacity_bytes = 80e9;
    return p->memory_bytes > p->capacity_bytes ? SEARCH_EVAL_NOFIT : SEARCH_EVAL_OK;
}

static SearchEvalStatus syn_sim(void *ctx, void *scratch, SearchPoint *p)
{
    (void)ctx;
    (void)scratch;
    const SearchKnobs *k = &p->k;
    double bubble = (double)(k->pp - 1) / (128.0 / k->dp / k->mbs * k->vpp);
    p->iteration_s = (double)(int)(100.0 * (1.0 + bubble + 0.05 * k->tp + 0.1 * k->recompute + 0.01 * k->zero)) / 10.0;
    p->tokens_per_s = 128.0 * 4096.0 / p->iteration_s;
    p->mfu = 0.5 / p->iteration_s;
    p->exposed_s[SEARCH_EXPOSED_BUBBLE] = bubble;
    return SEARCH_EVAL_OK;
}

static const SearchEvaluator SYN = {.check = syn_check, .simulate = syn_sim};

/* The space with the CP exchanges in cp_comm_mask (x3 when all three are
 * tried: they multiply the plans with cp > 1 only), against brute force. */
static void space_vs_brute_force(unsigned cp_comm_mask, int64_t per_cp)
{
    SearchConfig c;
    small_config(&c);
    c.cp_comm_mask = cp_comm_mask;
    TsError err = {0};
    int64_t n = search_space_size(&c, &err);
    /* brute force over the same rules */
    int64_t want = 0;
    for (int tp = 1; tp <= 8; tp++)
        for (int pp = 1; pp <= 32; pp++)
            for (int cp = 1; cp <= 8; cp++) {
                if (64 % (tp * pp * cp)) continue;
                int dp = 64 / (tp * pp * cp);
                if (128 % dp) continue;
                int64_t mbs = 0;
                for (int m = 1; m <= 8; m++) mbs += (128 / dp) % m == 0;
                int64_t sv = pp == 1 ? 1 : 2 + (32 / pp >= 2 ? (32 / pp < 8 ? 32 / pp : 8) - 1 : 0);
                /* (sp, overlap): off/off, on/off, on/on with TP (overlap needs SP) */
                int64_t z = dp * cp > 1 ? 4 : 1, so = tp > 1 ? 3 : 1;
                want += mbs * sv * 3 * z * so * (cp > 1 ? per_cp : 1);
            }
    assert_int_equal(n, want);
}

static void test_space_matches_brute_force(void **state)
{
    (void)state;
    space_vs_brute_force(1u << SIM_CP_P2P, 1);                                           /* the default */
    space_vs_brute_force((1u << SIM_CP_P2P) | (1u << SIM_CP_ALLGATHER) | (1u << SIM_CP_A2A), 3); /* all */
    space_vs_brute_force(1u << SIM_CP_A2A, 1); /* a2a alone: cp 1 plans keep p2p */
}

/* The cursor the workers walk with gives every candidate the knobs of the
 * reference decode. */
static void test_cursor_matches_decode(void **state)
{
    (void)state;
    SearchConfig c;
    small_config(&c);
    c.cp_comm_mask = 7; /* every CP exchange: the innermost digit moves too */
    SearchSpace sp;
    TsError err = {0};
    assert_int_equal(search_space_build(&c, &sp, &err), TS_OK);
    SearchCursor cur;
    SearchKnobs a, b;
    for (int64_t i = 0; i < sp.total; i++) {
        if (i == 0) search_cursor_seek(&sp, 0, &cur, &a);
        else search_cursor_next(&sp, &cur, &a);
        search_space_decode(&sp, i, &b);
        assert_int_equal(cur.idx, i);
        assert_memory_equal(&a, &b, sizeof a);
        if (i % 97 == 0) { /* seeking anywhere lands on the same digits */
            SearchCursor c2;
            search_cursor_seek(&sp, i, &c2, &b);
            assert_memory_equal(&a, &b, sizeof a);
        }
    }
    search_space_free(&sp);
}

static void run_with(int threads, int rank, int ranks, bool keep_all, SearchResult *r)
{
    SearchConfig c;
    small_config(&c);
    c.threads = threads;
    c.rank = rank;
    c.ranks = ranks;
    c.keep_all = keep_all;
    TsError err = {0};
    assert_int_equal(search_run(&c, &SYN, r, &err), TS_OK);
}

static void assert_same(const SearchResult *a, const SearchResult *b)
{
    assert_int_equal(a->n_top, b->n_top);
    for (int i = 0; i < a->n_top; i++) {
        assert_int_equal(a->top[i].index, b->top[i].index);
        assert_true(a->top[i].tokens_per_s == b->top[i].tokens_per_s);
    }
    assert_int_equal(a->n_all, b->n_all);
    for (int64_t i = 0; i < a->n_all; i++) assert_int_equal(a->all[i].index, b->all[i].index);
    assert_int_equal(a->stats.enumerated, b->stats.enumerated);
    assert_int_equal(a->stats.pruned, b->stats.pruned);
    assert_int_equal(a->stats.simulated, b->stats.simulated);
}

static void test_deterministic_over_threads_and_ranks(void **state)
{
    (void)state;
    SearchResult one, four, parts[3], merged;
    run_with(1, 0, 1, true, &one);
    assert_true(one.n_top == 7);
    assert_true(one.stats.pruned > 0 && one.stats.simulated > 0);
    assert_int_equal(one.stats.enumerated, one.stats.pruned + one.stats.simulated);
    assert_int_equal(one.n_all, one.stats.simulated);
    run_with(4, 0, 1, true, &four);
    assert_same(&one, &four);
    for (int r = 0; r < 3; r++) run_with(2, r, 3, true, &parts[r]);
    SearchConfig c;
    small_config(&c);
    TsError err = {0};
    assert_int_equal(search_merge(&c, parts, 3, &merged, &err), TS_OK);
    assert_same(&one, &merged);
    assert_int_equal(merged.stats.ranks, 3);
    /* ties: the ranking is sorted, equal keys by ascending index */
    for (int i = 1; i < one.n_top; i++) assert_true(search_compare(c.objective, &one.top[i - 1], &one.top[i]) < 0);
    bool tie = false;
    for (int i = 1; i < one.n_top; i++) tie |= one.top[i - 1].tokens_per_s == one.top[i].tokens_per_s;
    assert_true(tie); /* the synthetic evaluator does produce ties */
    search_result_free(&one);
    search_result_free(&four);
    search_result_free(&merged);
    for (int r = 0; r < 3; r++) search_result_free(&parts[r]);
}

static void test_objectives(void **state)
{
    (void)state;
    SearchPoint a = {.index = 1, .tokens_per_s = 2e6, .iteration_s = 1.0, .memory_bytes = 70e9};
    SearchPoint b = {.index = 2, .tokens_per_s = 1e6, .iteration_s = 2.0, .memory_bytes = 40e9};
    a.k.gpus = b.k.gpus = 64;
    assert_true(search_compare(SEARCH_OBJ_THROUGHPUT, &a, &b) < 0);
    assert_true(search_compare(SEARCH_OBJ_TIME, &a, &b) < 0);
    assert_true(search_compare(SEARCH_OBJ_MEMORY, &b, &a) < 0);
    assert_true(search_compare(SEARCH_OBJ_COST, &a, &b) < 0);
    b.k.gpus = 16; /* a quarter of the GPUs at half the speed: cheaper */
    assert_true(search_compare(SEARCH_OBJ_COST, &b, &a) < 0);
    SearchObjective o;
    assert_true(search_objective_parse("memory", &o) && o == SEARCH_OBJ_MEMORY);
    assert_false(search_objective_parse("speed", &o));
}

/* Branch and bound with the synthetic evaluator: bounds that are exact
 * (every quantised tie must still be simulated) or loose by a plan-dependent
 * margin. For every objective the ranking is the exhaustive one, the counts
 * add up, plans are left out, and the result does not depend on threads. */
static SearchEvalStatus syn_bound_exact(void *ctx, void *scratch, SearchPoint *p)
{
    SearchEvalStatus st = syn_sim(ctx, scratch, p);
    memset(p->exposed_s, 0, sizeof p->exposed_s);
    p->mfu = 0;
    return st;
}

static SearchEvalStatus syn_bound_loose(void *ctx, void *scratch, SearchPoint *p)
{
    SearchEvalStatus st = syn_bound_exact(ctx, scratch, p);
    p->iteration_s *= 1.0 - 0.02 * (double)(p->index % 7); /* 0..12 % below */
    p->tokens_per_s = 128.0 * 4096.0 / p->iteration_s;
    return st;
}

static void test_branch_and_bound(void **state)
{
    (void)state;
    static const SearchObjective OBJ[] = {SEARCH_OBJ_THROUGHPUT, SEARCH_OBJ_TIME, SEARCH_OBJ_COST, SEARCH_OBJ_MEMORY};
    SearchEvalStatus (*const B[])(void *, void *, SearchPoint *) = {syn_bound_exact, syn_bound_loose};
    for (size_t o = 0; o < sizeof OBJ / sizeof OBJ[0]; o++)
        for (size_t b = 0; b < 2; b++) {
            SearchConfig c;
            small_config(&c);
            c.objective = OBJ[o];
            c.top_k = 5;
            TsError err = {0};
            SearchResult ex, one, four;
            c.threads = 1;
            assert_int_equal(search_run(&c, &SYN, &ex, &err), TS_OK);
            SearchEvaluator ev = SYN;
            ev.bound = B[b];
            assert_int_equal(search_run(&c, &ev, &one, &err), TS_OK);
            c.threads = 4;
            assert_int_equal(search_run(&c, &ev, &four, &err), TS_OK);
            assert_int_equal(one.n_top, ex.n_top);
            for (int i = 0; i < ex.n_top; i++) {
                assert_int_equal(one.top[i].index, ex.top[i].index);
                assert_true(one.top[i].tokens_per_s == ex.top[i].tokens_per_s);
            }
            assert_same(&one, &four);
            assert_int_equal(one.stats.bounded, four.stats.bounded);
            assert_int_equal(one.stats.enumerated, one.stats.pruned + one.stats.bounded + one.stats.simulated);
            assert_int_equal(ex.stats.bounded, 0);
            if (OBJ[o] != SEARCH_OBJ_MEMORY) assert_true(one.stats.bounded > 0);
            search_result_free(&ex);
            search_result_free(&one);
            search_result_free(&four);
        }
    /* keep_all (--json/--csv/--html) simulates every plan that fits */
    SearchConfig c;
    small_config(&c);
    c.keep_all = true;
    SearchEvaluator ev = SYN;
    ev.bound = syn_bound_loose;
    SearchResult r;
    TsError err = {0};
    assert_int_equal(search_run(&c, &ev, &r, &err), TS_OK);
    assert_int_equal(r.stats.bounded, 0);
    assert_int_equal(r.n_all, r.stats.simulated);
    search_result_free(&r);
}

static void test_limits_and_empty_space(void **state)
{
    (void)state;
    SearchConfig c;
    small_config(&c);
    c.tp.n = 1;
    c.tp.v[0] = 8;
    c.pp.n = 1;
    c.pp.v[0] = 4;
    c.cp.n = 1;
    c.cp.v[0] = 1;
    c.schedule_mask = 1u << PLAN_SCHED_1F1B;
    TsError err = {0};
    SearchResult r;
    assert_int_equal(search_run(&c, &SYN, &r, &err), TS_OK);
    for (int i = 0; i < r.n_top; i++) {
        assert_int_equal(r.top[i].k.tp, 8);
        assert_int_equal(r.top[i].k.pp, 4);
        assert_int_equal(r.top[i].k.dp, 2);
        assert_int_equal(r.top[i].k.schedule, PLAN_SCHED_1F1B);
    }
    search_result_free(&r);
    c.tp.v[0] = 3; /* does not divide 64 */
    assert_int_equal(search_run(&c, &SYN, &r, &err), TS_ERR_USAGE);
    assert_non_null(strstr(err.msg, "no plan satisfies the limits"));
}

static void test_html_escapes_and_is_complete(void **state)
{
    (void)state;
    RepKV knobs[] = {{"name", "<b>&\"x\""}};
    RepInterval iv[] = {{0, REP_FWD, 0.0, 0.5, 0}, {1, REP_BUBBLE, 0.0, 0.5, -1}, {5, REP_BWD, 0, 1, 0}};
    RepAmount mem[] = {{"weights", 10e9}};
    RepPlanView v = {.title = "t<i>", .knobs = knobs, .n_knobs = 1, .timeline = iv, .n_timeline = 3,
                     .n_stages = 2, .iteration_s = 1.0, .memory = mem, .n_memory = 1, .capacity_bytes = 80e9};
    TsBuf b = {0};
    TsError err = {0};
    assert_int_equal(rep_html_plan(&v, &b, &err), TS_OK);
    assert_non_null(strstr(b.data, "&lt;b&gt;&amp;&quot;x&quot;"));
    assert_null(strstr(b.data, "<b>"));
    assert_null(strstr(b.data, "<script"));
    assert_non_null(strstr(b.data, "</html>\n"));
    assert_non_null(strstr(b.data, "id=\"timeline\""));
    assert_null(strstr(b.data, "stage 5")); /* out-of-range stage is dropped */
    ts_buf_free(&b);
    char s[32];
    rep_fmt_bytes(s, sizeof s, 80e9);
    assert_string_equal(s, "74.5 GiB");
    rep_fmt_seconds(s, sizeof s, 0.0123);
    assert_string_equal(s, "12.3 ms");
    rep_fmt_si(s, sizeof s, 2.5e6);
    assert_string_equal(s, "2.5 M");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_space_matches_brute_force),
        cmocka_unit_test(test_cursor_matches_decode),
        cmocka_unit_test(test_deterministic_over_threads_and_ranks),
        cmocka_unit_test(test_objectives),
        cmocka_unit_test(test_branch_and_bound),
        cmocka_unit_test(test_limits_and_empty_space),
        cmocka_unit_test(test_html_escapes_and_is_complete),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
