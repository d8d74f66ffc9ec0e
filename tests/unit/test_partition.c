/* test_partition.c — Megatron's formula by hand, parameter bookkeeping
 * (per-layer counts vs model_count_params, all ranks add up to the model),
 * activation terms vs Korthikanti, per-rank op templates and collectives.
 * Tolerances: 1e-12 relative for closed forms, 1e-9 for sums of doubles. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "trainsim/partition.h"
#include "../../src/partition/part_int.h"

static void near(double got, double want, double tol, const char *what)
{
    double e = fabs(got - want) / (fabs(want) > 0 ? fabs(want) : 1);
    if (e > tol) {
        print_error("%s: got %.17g want %.17g (rel err %.3g > %.3g)\n", what, got, want, e, tol);
        fail();
    }
}

static ParallelPlan gpt3_plan(void)
{
    ParallelPlan p;
    plan_init(&p);
    p.tp = 8; p.pp = 8; p.vpp = 3; p.gpus = 64; p.seq = 2048; p.global_batch = 64;
    p.schedule = PLAN_SCHED_INTERLEAVED; p.recompute = PLAN_RECOMPUTE_SELECTIVE;
    return p;
}

static void test_megatron_gpt3(void **state)
{
    (void)state;
    ModelSpec m;
    assert_int_equal(model_preset("gpt3-175b", &m, NULL), TS_OK);
    ParallelPlan p = gpt3_plan();
    TsError err = {0};
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    /* by hand: see tests/golden/memory_gpt3_megatron/check */
    near(part_megatron_weight_optimizer_bytes(&m, &p), 18.0 * 2796626304.0, 1e-12, "weight+opt");
    near(part_megatron_activation_bytes(&m, &p), 82342707200.0 * 31.0 / 24.0 / 8.0, 1e-12, "act");
    PartMemOptions mo;
    part_mem_options_init(&mo);
    mo.model = PART_MEMMODEL_MEGATRON;
    PartMemory peak;
    assert_int_equal(part_memory(&m, &p, &mo, NULL, &peak, &err), TS_OK);
    assert_int_equal(peak.stage, 0);
    near(peak.weights_bytes + peak.gradients_bytes + peak.optimizer_bytes, 18.0 * 2796626304.0, 1e-12, "sum");
    assert_true(peak.other_bytes == 0);
    /* distributed optimizer: 6 + 12/DP bytes per parameter */
    p.dist_opt = true; p.gpus = 128; p.dp = 0; p.global_batch = 128;
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    near(part_megatron_weight_optimizer_bytes(&m, &p), 12.0 * 2796626304.0, 1e-12, "dist-opt");
}

static void test_counts_vs_model(void **state)
{
    (void)state;
    const char *names[] = {"gpt3-175b", "llama3-70b", "mixtral-8x7b", "deepseek-v3", "gpt2-medium", "qwen3-30b-a3b",
                           "gpt-oss-120b", "qwen3-235b-a22b", "deepseek-v2", "mixtral-8x22b"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ModelSpec m;
        assert_int_equal(model_preset(names[i], &m, NULL), TS_OK);
        ModelCounts mc;
        model_count_params(&m, &mc);
        PartCounts c;
        part_counts(&m, 1, &c);
        double nm = (double)c.n_moe, nd = (double)m.layers - nm;
        double total = nd * (c.dense_tp + c.dense_rep) + nm * (c.moe_tp + c.moe_rep + c.moe_exp) +
                       c.embed_tp + c.embed_rep + c.head_tp + c.head_rep;
        double pad = (c.vocab_padded - (double)m.vocab) * (double)m.hidden;
        double want = (double)mc.total + pad * (c.head_tp > 0 ? 2 : 1);
        near(total, want, 1e-12, names[i]);
    }
}

/* Parameters of every rank of gpt2-medium tp 4 pp 6 add up to the model:
 * TP-split tensors summed over TP ranks, replicated ones counted once. */
static void test_ranks_add_up(void **state)
{
    (void)state;
    ModelSpec m;
    assert_int_equal(model_preset("gpt2-medium", &m, NULL), TS_OK);
    ParallelPlan p;
    plan_init(&p);
    p.tp = 4; p.pp = 6; p.seq = 1024;
    GraphOptions go;
    graph_options_init(&go);
    go.naming = GRAPH_NAMING_DEEPSPEED; go.naming_set = true; go.seq = 1024; go.tp = 4;
    ModuleGraph *g = NULL;
    TsError err = {0};
    assert_int_equal(graph_build(&m, &go, &g, &err), TS_OK);
    double want = 0, got = 0;
    for (int32_t i = 0; i < g->n_params; i++)
        if (!g->params[i].tied) want += (double)g->params[i].numel;
    for (int64_t r = 0; r < 24; r++) {
        TsArena *a = ts_arena_create(4096);
        PartParamTable t;
        assert_int_equal(part_params(g, &p, r, a, &t, &err), TS_OK);
        PlanCoord c;
        ParallelPlan q = p;
        plan_resolve(&m, &q, &err);
        plan_rank_coord(&q, r, &c);
        for (int32_t k = 0; k < t.n_rows; k++) {
            const GraphParam *gp = &g->params[t.rows[k].graph_param];
            if (gp->tied) continue;
            double n = (double)t.rows[k].shape[0] * (double)(t.rows[k].ndim > 1 ? t.rows[k].shape[1] : 1);
            if (gp->split == GRAPH_SPLIT_NONE || (gp->split == GRAPH_SPLIT_ROW && gp->ndim == 1)) {
                if (c.tp == 0) got += n;
            } else {
                got += n;
            }
        }
        ts_arena_destroy(a);
    }
    near(got, want, 1e-12, "sum over ranks");
    graph_destroy(g);
}

/* Routed experts under EP (Megatron layout): every rank lists exactly E/ep
 * experts per MoE layer of its stage, ep rank e the experts e*E/ep ..
 * (e+1)*E/ep - 1, and the expert elements of the TP*DP ranks of one stage,
 * divided by the EDP replication, add up to the stage's experts once. */
static void test_params_expert_slice(void **state)
{
    (void)state;
    ModelSpec m;
    assert_int_equal(model_preset("mixtral-8x7b", &m, NULL), TS_OK);
    ParallelPlan p;
    plan_init(&p);
    p.tp = 2; p.ep = 4; p.pp = 2; p.gpus = 32; p.seq = 1024; /* dp 8, edp 2 */
    GraphOptions go;
    graph_options_init(&go);
    go.naming = GRAPH_NAMING_MEGATRON; go.naming_set = true; go.seq = 1024; go.tp = 2;
    ModuleGraph *g = NULL;
    TsError err = {0};
    assert_int_equal(graph_build(&m, &go, &g, &err), TS_OK);
    ParallelPlan q = p;
    assert_int_equal(plan_resolve(&m, &q, &err), TS_OK);
    double want = 0, got[2] = {0, 0};
    for (int32_t i = 0; i < g->n_params; i++)
        if (g->params[i].expert) want += (double)g->params[i].numel;
    for (int64_t r = 0; r < 32; r++) {
        TsArena *a = ts_arena_create(4096);
        PartParamTable t;
        assert_int_equal(part_params(g, &p, r, a, &t, &err), TS_OK);
        PlanCoord c;
        plan_rank_coord(&q, r, &c);
        assert_int_equal(t.n_local_experts, 2);
        assert_int_equal(t.first_expert, 2 * c.ep);
        assert_int_equal(t.edp, 2);
        int64_t n_exp = 0;
        for (int32_t k = 0; k < t.n_rows; k++) {
            const GraphParam *gp = &g->params[t.rows[k].graph_param];
            if (!gp->expert) continue;
            n_exp++;
            assert_true(gp->expert_id / 2 == c.ep);
            assert_true(t.rows[k].owner < t.edp);
            got[c.pp] += (double)t.rows[k].shape[0] * (double)t.rows[k].shape[1] / (double)t.edp;
        }
        assert_int_equal(n_exp, 16 * 2 * 2); /* 16 layers x 2 experts x (fc1, fc2) */
        ts_arena_destroy(a);
    }
    near(got[0] + got[1], want, 1e-12, "expert elements over ranks");
    near(got[0], want / 2, 1e-12, "expert elements of stage 0");
    graph_destroy(g);
}

static void test_korthikanti_layer(void **state)
{
    (void)state;
    /* GPT-22B, t 8, p 1, b 4, s 2048, no SP, no recompute, no flash:
     * per layer s*b*h*(10 + 24/t + 5*a*s/(h*t)) = sbh * (13 + 40/3) */
    ModelSpec m;
    model_defaults(&m, MODEL_ARCH_GPT);
    m.layers = 48; m.hidden = 6144; m.heads = 64; m.vocab = 51200; m.max_positions = 2048;
    model_finalize(&m);
    ParallelPlan p;
    plan_init(&p);
    p.tp = 8; p.gpus = 8; p.seq = 2048; p.micro_batch = 4; p.global_batch = 4;
    p.sp = false; p.sp_set = true; p.flash_attn = false;
    TsError err = {0};
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    PartMemory st[1], peak;
    assert_int_equal(part_memory(&m, &p, NULL, st, &peak, &err), TS_OK);
    double sbh = 2048.0 * 4 * 6144;
    near(st[0].act_layers_bytes, 48 * sbh * (13.0 + 40.0 / 3.0), 1e-12, "22B layers");
    /* selective + SP: 34 sbh / t per layer */
    p.sp = true; p.recompute = PLAN_RECOMPUTE_SELECTIVE;
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    assert_int_equal(part_memory(&m, &p, NULL, st, &peak, &err), TS_OK);
    near(st[0].act_layers_bytes, 48 * sbh * 34.0 / 8.0, 1e-12, "22B selective");
    /* full recompute: inputs 2sbh/t per layer + one layer's activations */
    p.recompute = PLAN_RECOMPUTE_FULL;
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    assert_int_equal(part_memory(&m, &p, NULL, st, &peak, &err), TS_OK);
    near(st[0].act_layers_bytes, 48 * sbh * 2.0 / 8.0 + sbh * (34.0 + 5.0 * 64 * 2048 / 6144) / 8.0,
         1e-12, "22B full");
}

static void test_sac_ops_layer(void **state)
{
    (void)state;
    /* Llama3-8B (h 4096, 32 heads of 128, 8 KV heads, ffn 14336), t 1, b 1,
     * s 8192, flash, selective recompute as op-level SAC: per layer the
     * input, wq, wv, w1 and w2 outputs (4096 + 4096 + 1024 + 14336 + 4096
     * elements per token, bf16) and the flash output + fp32 LSE
     * (32 x (128 x 2 + 4) B per token); plus, once, what one layer's backward
     * re-materializes: no-recompute bytes (norm/QKV/fc1 inputs 8h, Q K V and
     * proj input 2(4096 + 2048 + 4096), LSE 128, fc1 out + act out 6 x 14336)
     * less the saved ones. */
    ModelSpec m;
    TsError err = {0};
    assert_int_equal(model_preset("llama3-8b", &m, &err), TS_OK);
    ParallelPlan p;
    plan_init(&p);
    p.gpus = 64; p.seq = 8192; p.micro_batch = 1; p.global_batch = 64; p.zero = 3;
    p.recompute = PLAN_RECOMPUTE_SELECTIVE;
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    PartMemOptions o;
    part_mem_options_init(&o);
    o.selective_ops = true;
    PartMemory st[1], peak;
    assert_int_equal(part_memory(&m, &p, &o, st, &peak, &err), TS_OK);
    double sb = 8192.0;
    double saved = sb * (2.0 * 27648 + 32.0 * 260), none = sb * (8.0 * 4096 + 2.0 * 10240 + 128 + 6.0 * 14336);
    near(st[0].act_layers_bytes, 32 * saved + (none - saved), 1e-12, "8B op SAC");
    /* without the flag, Megatron's selective keeps everything but the scores
     * (none with flash) */
    o.selective_ops = false;
    assert_int_equal(part_memory(&m, &p, &o, st, &peak, &err), TS_OK);
    near(st[0].act_layers_bytes, 32 * none, 1e-12, "8B selective");
    /* op SAC applies to selective recompute only */
    o.selective_ops = true;
    p.recompute = PLAN_RECOMPUTE_NONE;
    assert_int_equal(part_memory(&m, &p, &o, st, &peak, &err), TS_OK);
    near(st[0].act_layers_bytes, 32 * none, 1e-12, "8B none");
}

static void test_sharding(void **state)
{
    (void)state;
    ModelSpec m;
    assert_int_equal(model_preset("llama3-8b", &m, NULL), TS_OK);
    ParallelPlan p;
    plan_init(&p);
    p.gpus = 8; p.seq = 4096;
    TsError err = {0};
    PartMemory z0, z1, z2, z3, d;
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    assert_int_equal(part_memory(&m, &p, NULL, NULL, &z0, &err), TS_OK);
    p.zero = 1; assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    assert_int_equal(part_memory(&m, &p, NULL, NULL, &z1, &err), TS_OK);
    p.zero = 2; assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    assert_int_equal(part_memory(&m, &p, NULL, NULL, &z2, &err), TS_OK);
    p.zero = 3; assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    assert_int_equal(part_memory(&m, &p, NULL, NULL, &z3, &err), TS_OK);
    p.zero = 0; p.dist_opt = true; assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    assert_int_equal(part_memory(&m, &p, NULL, NULL, &d, &err), TS_OK);
    near(z0.weights_bytes, 2 * z0.params, 1e-12, "bf16 weights");
    near(z0.gradients_bytes, 4 * z0.params, 1e-12, "fp32 grads");
    near(z0.optimizer_bytes, 12 * z0.params, 1e-12, "adam");
    near(z1.optimizer_bytes, 12 * z0.params / 8, 1e-12, "zero1");
    near(z2.gradients_bytes, 2 * z0.params / 8, 1e-12, "zero2");
    near(z3.weights_bytes, 2 * z0.params / 8, 1e-12, "zero3");
    near(d.optimizer_bytes, 12 * z0.params / 8, 1e-12, "dist-opt");
    near(d.gradients_bytes, 4 * z0.params, 1e-12, "dist-opt grads");
}

/* part_fit_alternatives: llama3-8b on 8 GPUs at 4096 tokens (mb 1) does not
 * fit 80 GiB; the first way is the optimizer state sharded (a single knob,
 * cheapest first), and each way, applied by hand, gives the memory it
 * names and fits. With no capacity, or room for none, there is nothing. */
static void test_fit_alternatives(void **state)
{
    (void)state;
    ModelSpec m;
    assert_int_equal(model_preset("llama3-8b", &m, NULL), TS_OK);
    ParallelPlan p;
    plan_init(&p);
    p.gpus = 8; p.seq = 4096; p.micro_batch = 1; p.global_batch = 64;
    TsError err = {0};
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    PartMemOptions o;
    part_mem_options_init(&o);
    o.capacity_bytes = 80.0 * 1073741824.0;
    PartMemory pk;
    assert_int_equal(part_memory(&m, &p, &o, NULL, &pk, &err), TS_OK);
    assert_true(pk.total_bytes > o.capacity_bytes);
    PartFitAlt alt[2];
    int n = part_fit_alternatives(&m, &p, &o, alt, 2);
    assert_int_equal(n, 2);
    assert_string_equal(alt[0].flags, "--dist-opt");
    assert_string_equal(alt[1].flags, "--zero 3"); /* neither recompute nor a smaller batch is enough */
    ParallelPlan q = p;
    q.dist_opt = true;
    assert_int_equal(part_memory(&m, &q, &o, NULL, &pk, &err), TS_OK);
    near(alt[0].total_bytes, pk.total_bytes, 1e-12, "dist-opt alternative");
    for (int i = 0; i < n; i++) assert_true(alt[i].total_bytes <= o.capacity_bytes);
    char h[320];
    part_fit_hint(&p, alt, n, h, sizeof h);
    assert_non_null(strstr(h, "fits with --dist-opt ("));
    assert_non_null(strstr(h, " or "));
    o.capacity_bytes = 0; /* unknown capacity: nothing to fit */
    assert_int_equal(part_fit_alternatives(&m, &p, &o, alt, 2), 0);
    o.capacity_bytes = 1073741824.0; /* 1 GiB: no knob, nor two, fits */
    assert_int_equal(part_fit_alternatives(&m, &p, &o, alt, 2), 0);
    part_fit_hint(&p, alt, 0, h, sizeof h);
    assert_non_null(strstr(h, "no knob of this layout"));
    assert_non_null(strstr(h, "more GPUs per model replica (tp, pp)"));
    p.framework = PLAN_FRAMEWORK_HF; /* data-parallel only */
    part_fit_hint(&p, alt, 0, h, sizeof h);
    assert_non_null(strstr(h, "more GPUs to shard it over (--gpus with --zero 3)"));
}

/* The peak asked for alone (middle stages with the layers of an earlier one
 * skipped) is the first stage of the largest total of all stages', exactly:
 * uneven splits of a dense and a MoE model under 1F1B and GPipe. */
static void test_peak_alone(void **state)
{
    (void)state;
    const char *models[] = {"llama3-405b", "deepseek-v3"};
    const int64_t pps[] = {4, 7, 16};
    for (int mi = 0; mi < 2; mi++)
        for (int k = 0; k < 3; k++)
            for (int sched = 0; sched < 2; sched++) {
                ModelSpec m;
                assert_int_equal(model_preset(models[mi], &m, NULL), TS_OK);
                ParallelPlan p;
                plan_init(&p);
                int64_t pp = pps[k], split[16];
                p.tp = 8, p.pp = pp, p.gpus = 8 * pp * 2, p.seq = 4096, p.global_batch = 64;
                if (m.experts > 0) p.ep = 2;
                p.schedule = sched ? PLAN_SCHED_GPIPE : PLAN_SCHED_1F1B;
                for (int64_t s = 0, left = m.layers; s < pp; s++) { /* lighter ends, heavier middle */
                    split[s] = s == pp - 1 ? left : (s == 0 ? m.layers / pp - 1 : (m.layers + pp - 1) / pp);
                    if (split[s] > left - (pp - 1 - s)) split[s] = left - (pp - 1 - s);
                    left -= split[s];
                }
                p.stage_layers = split, p.n_stage_layers = (int32_t)pp;
                TsError err = {0};
                assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
                PartMemory st[16], all, alone;
                assert_int_equal(part_memory(&m, &p, NULL, st, &all, &err), TS_OK);
                assert_int_equal(part_memory(&m, &p, NULL, NULL, &alone, &err), TS_OK);
                int64_t top = 0;
                for (int64_t s = 1; s < pp; s++)
                    if (st[s].total_bytes > st[top].total_bytes) top = s;
                assert_int_equal(alone.stage, top);
                assert_true(alone.total_bytes == st[top].total_bytes);
                assert_true(all.total_bytes == st[top].total_bytes);
            }
}

static void test_build_gpt3(void **state)
{
    (void)state;
    ModelSpec m;
    assert_int_equal(model_preset("gpt3-175b", &m, NULL), TS_OK);
    GraphOptions go;
    graph_options_init(&go);
    go.seq = 2048; go.batch = 1; go.tp = 8;
    ModuleGraph *g = NULL;
    TsError err = {0};
    assert_int_equal(graph_build(&m, &go, &g, &err), TS_OK);
    ParallelPlan p = gpt3_plan();
    Partition *pt = NULL;
    assert_int_equal(part_build(g, &p, NULL, &pt, &err), TS_OK);
    assert_int_equal(pt->n_chunks, 24);
    assert_int_equal(pt->chunks[23].first_layer, 92);
    assert_true(pt->chunks[0].has_embed && pt->chunks[23].has_head);
    const PartSegment *s = &pt->seg[PART_SEG_DENSE];
    assert_true(s->present && !pt->seg[PART_SEG_MOE].present);
    /* per-rank FLOPs x tp = the graph's layer-0 FLOPs (every op is TP- or SP-split) */
    double full = 0;
    for (int32_t i = 0; i < g->n_ops; i++)
        if (g->ops[i].layer == 0) full += g->ops[i].fwd_flops;
    assert_true(full > 1e12);
    near(s->fwd_flops * 8, full, 1e-9, "layer fwd flops");
    int ag = 0, rs = 0;
    for (int32_t i = 0; i < s->n_colls; i++) {
        const PartColl *c = &s->colls[i];
        assert_int_equal(c->group, PLAN_GROUP_TP);
        near(c->bytes, 2048.0 * 12288 * 2, 1e-12, "sp bytes");
        if (c->phase == PART_PHASE_FWD && c->coll == TS_COLL_ALLGATHER) ag++;
        if (c->phase == PART_PHASE_FWD && c->coll == TS_COLL_REDUCESCATTER) rs++;
    }
    assert_int_equal(ag, 2);
    assert_int_equal(rs, 2);
    near(pt->peak.total_bytes, pt->mem[0].total_bytes, 1e-12, "peak is stage 0");
    part_destroy(pt);
    part_destroy(NULL);
    graph_destroy(g);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_megatron_gpt3), cmocka_unit_test(test_counts_vs_model),
        cmocka_unit_test(test_ranks_add_up), cmocka_unit_test(test_params_expert_slice),
        cmocka_unit_test(test_korthikanti_layer), cmocka_unit_test(test_sac_ops_layer),
        cmocka_unit_test(test_sharding), cmocka_unit_test(test_fit_alternatives), cmocka_unit_test(test_build_gpt3), cmocka_unit_test(test_peak_alone),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
