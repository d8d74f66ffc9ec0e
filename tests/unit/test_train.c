/* test_train.c — the training-run estimate (train.h) by hand: steps, the
 * Young/Daly checkpoint interval, goodput's closed form, GPU-hours and cost;
 * its refusals. Tolerances: 1e-12 relative for closed forms. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "trainsim/train.h"

static void near(double got, double want, double tol, const char *what)
{
    double e = fabs(got - want) / (fabs(want) > 0 ? fabs(want) : 1);
    if (e > tol) {
        print_error("%s: got %.17g want %.17g (rel err %.3g > %.3g)\n", what, got, want, e, tol);
        fail();
    }
}

/* 1e12 tokens, 2 s a step of 4 Mi tokens, 1024 GPUs, 1 TB of state written
 * at 0.25 GB/s per GPU: 238419 steps; the job is interrupted every 50000 / 1024
 * hours; a checkpoint takes 1e12 / (0.25e9 x 1024) s. */
static void test_by_hand(void **state)
{
    (void)state;
    TrainOptions o;
    train_options_init(&o);
    o.tokens = 1e12;
    o.price_per_gpu_hour = 2.0;
    TrainEstimate e;
    TsError err = {0};
    assert_int_equal(train_estimate(&o, 2.0, 4194304, 1024, 1e12, &e, &err), TS_OK);
    near(e.steps, ceil(1e12 / 4194304), 1e-12, "steps");
    double m = 50000.0 * 3600 / 1024, d = 1e12 / (0.25e9 * 1024), t = sqrt(2 * d * m);
    near(e.job_mtbf_s, m, 1e-12, "job MTBF");
    near(e.checkpoint_s, d, 1e-12, "checkpoint");
    near(e.checkpoint_interval_s, t, 1e-12, "Young/Daly interval");
    double good = (1 - (t / 2 + 600 + d) / m) / (1 + d / t);
    near(e.goodput, good, 1e-12, "goodput");
    near(e.wall_s, e.steps * 2.0 / good, 1e-12, "wall clock");
    near(e.gpu_hours, e.wall_s * 1024 / 3600, 1e-12, "GPU-hours");
    near(e.cost, 2.0 * e.gpu_hours, 1e-12, "cost");
    assert_true(e.goodput > 0.9 && e.goodput < 1.0);
}

/* More GPUs: interrupted more often, less goodput; so many that the job
 * cannot checkpoint and restart between failures: a plan error. */
static void test_scale_and_refusals(void **state)
{
    (void)state;
    TrainOptions o;
    train_options_init(&o);
    o.tokens = 1e12;
    TrainEstimate a, b;
    TsError err = {0};
    assert_int_equal(train_estimate(&o, 1.0, 1e6, 1024, 1e12, &a, &err), TS_OK);
    assert_int_equal(train_estimate(&o, 1.0, 1e6, 16384, 1e12, &b, &err), TS_OK);
    assert_true(b.goodput < a.goodput);
    assert_int_equal(train_estimate(&o, 1.0, 1e6, 100000000, 1e12, &b, &err), TS_ERR_PLAN);
    assert_int_equal(train_estimate(&o, 0, 1e6, 8, 1e12, &b, &err), TS_ERR_USAGE);
    o.tokens = -1;
    assert_int_equal(train_estimate(&o, 1.0, 1e6, 8, 1e12, &b, &err), TS_ERR_USAGE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_by_hand), cmocka_unit_test(test_scale_and_refusals)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
