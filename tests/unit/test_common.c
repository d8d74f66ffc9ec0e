/* Unit tests: arena (incl. injected failure), errors, buffers, number and size parsers, JSON positions,
 * atomic output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainsim/common.h"
#include "../../src/common/common_int.h"

static void test_arena_alloc_and_fail(void **state)
{
    (void)state;
    TsArena *a = ts_arena_create(64);
    assert_non_null(a);
    char *s = ts_arena_strdup(a, "hello");
    assert_string_equal(s, "hello");
    void *big = ts_arena_alloc(a, 10000); /* larger than a block */
    assert_non_null(big);
    ts_arena_fail_after(a, 1);
    assert_non_null(ts_arena_alloc(a, 8));
    assert_null(ts_arena_alloc(a, 8));
    ts_arena_fail_after(a, -1);
    assert_non_null(ts_arena_alloc(a, 8));
    ts_arena_destroy(a);
    ts_arena_destroy(NULL);
}

static void test_error_format(void **state)
{
    (void)state;
    TsError e = {0};
    ts_err(&e, TS_ERR_INPUT, "bad value '%s'", "x");
    ts_err_at(&e, "f.json", 2, 5, "{\n  \"a\": x\n}");
    ts_err_hint(&e, "fix it");
    TsBuf b = {0};
    ts_err_format(&e, &b);
    assert_string_equal(b.data, "f.json:2:5: error: bad value 'x'\n      \"a\": x\n        ^\nhint: fix it\n");
    ts_buf_free(&b);
}

static void test_json_positions(void **state)
{
    (void)state;
    TsJsonDoc d;
    TsError e = {0};
    assert_int_equal(ts_json_load_text(&d, "c.json", "{\n \"x\": {\"y\": 1},\n \"h\": \"big\"\n}", &e), TS_OK);
    int64_t v = 0;
    assert_int_equal(ts_json_int(&d, d.root, "h", "h", true, 1, 100, &v, &e), TS_ERR_INPUT);
    assert_int_equal(e.line, 3);
    assert_int_equal(e.col, 7);
    assert_non_null(strstr(e.msg, "must be an integer"));
    int l, c;
    assert_true(ts_json_locate(&d, "x.y", &l, &c));
    assert_int_equal(l, 2);
    assert_int_equal(c, 13);
    ts_json_free(&d);

    assert_int_equal(ts_json_load_text(&d, "n.json", "{\"a\": NaN}", &e), TS_ERR_INPUT);
    assert_int_equal(e.line, 1);
    ts_json_free(&d);
    char deep[300];
    memset(deep, '[', 100);
    deep[100] = 0;
    char doc[400];
    snprintf(doc, sizeof doc, "{\"a\": %s}", deep);
    assert_int_equal(ts_json_load_text(&d, "d.json", doc, &e), TS_ERR_INPUT);
    assert_non_null(strstr(e.msg, "nested"));
    ts_json_free(&d);
}

static void test_atomic_output(void **state)
{
    (void)state;
    char dir[] = "/tmp/tsXXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/out.txt", dir);
    TsError e = {0};
    assert_int_equal(ts_write_file_atomic(path, "abc", 3, &e), TS_OK);
    TsOutFile o;
    assert_int_equal(ts_out_open(&o, path, &e), TS_OK);
    fputs("half", o.fp);
    ts_out_abort(&o);
    char *text;
    size_t n;
    assert_int_equal(ts_read_file(path, 100, &text, &n, &e), TS_OK);
    assert_string_equal(text, "abc"); /* the old file survives an aborted write */
    free(text);
    snprintf(path, sizeof path, "%s/missing/out.txt", dir);
    assert_int_equal(ts_write_file_atomic(path, "x", 1, &e), TS_ERR_USAGE);
    assert_non_null(strstr(e.msg, "does not exist"));
    snprintf(path, sizeof path, "rm -rf %s", dir);
    assert_int_equal(system(path), 0);
}

static void test_buf_and_parse(void **state)
{
    (void)state;
    TsBuf b = {0};
    for (int i = 0; i < 1000; i++) ts_buf_printf(&b, "%d,", i);
    assert_int_equal(b.len, 3890);
    ts_buf_free(&b);
    int64_t v;
    assert_true(ts_parse_i64("42", &v));
    assert_false(ts_parse_i64("42x", &v));
    double d;
    assert_false(ts_parse_f64("nan", &d));
    assert_int_equal(ts_round_up(50257, 128), 50304);
    ts_json_fmt_double(&b, 0.1);
    ts_json_fmt_double(&b, 3.0);
    assert_string_equal(b.data, "0.13");
    ts_buf_free(&b);
}

/* ts_parse_bytes: every unit, both cases, the bare-number unit, and what is
 * not a size. Exact comparisons: each result is one product of two doubles
 * that are exact here (powers of 2 and 10 up to 1e15). */
static void test_parse_bytes(void **state)
{
    (void)state;
    static const struct { const char *s; double unit, want; } ok[] = {
        {"4096", 1, 4096},       {"1GiB", 1, 0x1p30},     {"64MiB", 1, 0x1p26},  {"1.5GB", 1, 1.5e9},
        {"512k", 1, 512e3},      {"512K", 1, 512e3},      {"2kB", 1, 2e3},       {"3Ki", 1, 3072},
        {"1 TiB", 1, 0x1p40},    {"2T", 1, 2e12},         {"1pib", 1, 0x1p50},   {"1PB", 1, 1e15},
        {"7b", 1, 7},            {"7B", 1, 7},            {"1mb", 1, 1e6},       {"1e9", 1, 1e9},
        {"2.5e3M", 1, 2.5e9},    {".5k", 1, 500},         {"0", 1, 0},           {"-5", 1, -5},
        {"+8G", 1, 8e9},         {"25", 1e6, 25e6},       {"64MiB", 1e6, 0x1p26}, {"100B", 1e6, 100},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        double v = -1;
        if (!ts_parse_bytes(ok[i].s, ok[i].unit, &v) || v != ok[i].want)
            fail_msg("ts_parse_bytes(\"%s\", %g): got %.17g, want %.17g", ok[i].s, ok[i].unit, v, ok[i].want);
    }
    static const char *const bad[] = {
        "", " ", "GiB", "1GiBB", "1 GiB ", "1  GiB", "64 ", "1.5.GB", "1e", "1x", "0x10", "inf", "nan",
        "1e999", "1e300P", "1iB", "1 k B", "k1", "--1", NULL,
    };
    for (int i = 0; bad[i]; i++) {
        double v = 42;
        if (ts_parse_bytes(bad[i], 1, &v) || v != 42) fail_msg("ts_parse_bytes(\"%s\") accepted: %g", bad[i], v);
    }
    assert_false(ts_parse_bytes(NULL, 1, &(double){0}));
}

static void test_enum_names(void **state)
{
    (void)state;
    TsDtype d = TS_DTYPE_FP32;
    assert_true(ts_dtype_parse("bf16", &d));
    assert_int_equal(d, TS_DTYPE_BF16);
    assert_false(ts_dtype_parse("bf17", &d)); /* *out untouched */
    assert_false(ts_dtype_parse(NULL, &d));
    assert_int_equal(d, TS_DTYPE_BF16);
    assert_string_equal(ts_dtype_name(TS_DTYPE_FP8), "fp8");
    assert_string_equal(ts_dtype_name((TsDtype)TS_DTYPE_COUNT), "?");
    for (int i = 0; i < TS_COLL_COUNT; i++) {
        TsColl c;
        assert_true(ts_coll_parse(ts_coll_name((TsColl)i), &c));
        assert_int_equal(c, i);
    }
}

static void test_edit_distance(void **state)
{
    (void)state;
    assert_int_equal(ts_edit_distance("", ""), 0);
    assert_int_equal(ts_edit_distance("tp", ""), 2);
    assert_int_equal(ts_edit_distance("kitten", "sitting"), 3);
    assert_int_equal(ts_edit_distance("global-batch", "global-bacth"), 2); /* a swap is two edits */
    assert_int_equal(ts_edit_distance("micro-batch", "micro_batch"), 1);
    char longer[80];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    assert_int_equal(ts_edit_distance(longer, "a"), TS_EDIT_FAR);
    longer[63] = '\0';
    assert_int_equal(ts_edit_distance(longer, "a"), 62);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arena_alloc_and_fail), cmocka_unit_test(test_error_format),
        cmocka_unit_test(test_json_positions),       cmocka_unit_test(test_atomic_output),
        cmocka_unit_test(test_buf_and_parse),        cmocka_unit_test(test_parse_bytes),
        cmocka_unit_test(test_edit_distance),        cmocka_unit_test(test_enum_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
