/* Unit tests: workload IR, rank layout and groups, Python float formatting,
 * readers (positions), the 82-byte Chakra trace, the generator's DAG
 * (deps backwards, sends matched, schedules), injected allocation failure,
 * the JSON reader (byte-identical round trips, positioned errors). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainsim/workload.h"
#include "trainsim/workload_build.h"
#include "trainsim/workload_chakra.h"
#include "trainsim/workload_io.h"
#include "../../src/workload/wl_internal.h"

static void test_pyfloat(void **state)
{
    (void)state;
    struct { double v; const char *s; } C[] = {
        {0.0, "0.0"}, {4.791370158793459e-09, "4.791370158793459e-09"}, {9.9808843806386, "9.9808843806386"},
        {127.3467093706131, "127.3467093706131"}, {100000.0, "100000.0"}, {1e16, "1e+16"}, {0.0001, "0.0001"},
        {1e-05, "1e-05"}, {0.05028040846061094, "0.05028040846061094"}, {-2.5, "-2.5"}};
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        TsBuf b = {0};
        wl_fmt_pyfloat(&b, C[i].v);
        assert_string_equal(b.data, C[i].s);
        ts_buf_free(&b);
    }
}

static void test_groups(void **state)
{
    (void)state;
    TsError err = {0};
    Workload *w = wl_create(1024, &err);
    assert_non_null(w);
    w->par = (WlParallel){.world = 1024, .tp = 8, .cp = 1, .pp = 8, .dp = 16, .ep = 4, .vpp = 1, .ga = 1};
    int64_t m[64], gid;
    assert_int_equal(wl_group_members(w, WL_GROUP_TP, 13, m, 64, &gid), 8);
    assert_int_equal(m[0], 8);
    assert_int_equal(m[7], 15);
    assert_int_equal(wl_group_members(w, WL_GROUP_DP, 13, m, 64, &gid), 16);
    assert_int_equal(m[0], 5);
    assert_int_equal(m[1], 13);
    assert_int_equal(wl_group_members(w, WL_GROUP_PP, 13, m, 64, &gid), 8);
    assert_int_equal(m[1], 13 + 128);
    assert_int_equal(wl_group_members(w, WL_GROUP_EP, 13, m, 64, &gid), 4);   /* dp 1 -> block 0..3 */
    assert_int_equal(m[3], 5 + 3 * 8);
    assert_int_equal(wl_group_members(w, WL_GROUP_DP_EP, 13, m, 64, &gid), 4);
    assert_int_equal(m[1], 13 + 4 * 8);
    assert_int_equal(wl_rank_stage(w, 300), 2);
    assert_int_equal(wl_stage_peer(w, 300, 3), 300 + 128);
    /* with CP the expert groups draw from the CP ranks too (Megatron's
     * etp-ep-edp order over TP*CP*DP, as plan.h): tp 2, cp 2, dp 4, ep 4;
     * local rank l = tp + 2 (cp + 2 dp), ep_i = (l / 2) mod 4, edp = l / 8.
     * Rank 3 (tp 1, cp 1, dp 0): EP {1, 3, 5, 7}, expert DP {3, 11}. */
    w->par = (WlParallel){.world = 16, .tp = 2, .cp = 2, .pp = 1, .dp = 4, .ep = 4, .vpp = 1, .ga = 1};
    assert_int_equal(wl_group_size(w, WL_GROUP_DP_EP), 2); /* dp * cp / ep */
    assert_int_equal(wl_group_members(w, WL_GROUP_EP, 3, m, 64, &gid), 4);
    assert_int_equal(m[0], 1);
    assert_int_equal(m[1], 3);
    assert_int_equal(m[3], 7);
    assert_int_equal(wl_group_members(w, WL_GROUP_DP_EP, 3, m, 64, &gid), 2);
    assert_int_equal(m[0], 3);
    assert_int_equal(m[1], 11);
    wl_destroy(w);
    wl_destroy(NULL);
}

static const char SIMAI[] =
    "HYBRID_TRANSFORMER_FWD_IN_BCKWD model_parallel_NPU_group: 8 ep: 1 pp: 16 vpp: 8 ga: 16 all_gpus: 1024 "
    "checkpoints: 0 checkpoint_initiates: 0 pp_comm: 16777216.0\n"
    "2\n"
    "grad_gather\t-1\t1\tNONE\t0\t1\tNONE\t0\t1\tALLGATHER\t640\t100\n"
    "mlp  -1 5278888 ALLGATHER_EP 134217728   5278888 None 0 5278888 NONE 0 100\n";

static void test_read_simai(void **state)
{
    (void)state;
    Workload *w;
    TsError err = {0};
    assert_int_equal(wl_read_simai("t.txt", SIMAI, strlen(SIMAI), &w, &err), TS_OK);
    assert_int_equal(w->simai_header, WL_SIMAI_HDR_CURRENT);
    assert_int_equal(w->par.dp, 8);
    assert_true(w->par.pp_comm_bytes == 16777216.0);
    assert_int_equal(w->n_rows, 2);
    const WlTask *t = &w->tasks[w->rows[1].comm[WL_PHASE_FWD]];
    assert_int_equal(t->group, WL_GROUP_EP);
    assert_int_equal(t->coll, TS_COLL_ALLGATHER);
    assert_int_equal(wl_validate(w, &err), TS_OK);
    TsBuf b = {0};
    WlSimaiOptions o = {WL_SIMAI_HDR_CURRENT};
    wl_write_simai(w, &o, &b);
    assert_non_null(strstr(b.data, "pp_comm: 16777216\n2\n"));
    assert_non_null(strstr(b.data, "mlp\t-1\t5278888\tALLGATHER_EP\t134217728\t5278888\tNONE\t0\t"));
    ts_buf_free(&b);
    wl_destroy(w);
}

static void test_read_errors(void **state)
{
    (void)state;
    Workload *w;
    TsError err = {0};
    const char *bad = "MICRO\n1\nx -1 1 NONE 0 1 NONE 0 1 ALLGATHER -5 1\n";
    assert_int_equal(wl_read_simai("b.txt", bad, strlen(bad), &w, &err), TS_ERR_INPUT);
    assert_null(w);
    assert_int_equal(err.line, 3);
    assert_int_equal(err.col, 36);
    assert_non_null(strstr(err.msg, "wg_comm_size must be >= 0"));
}

/* Op-table rows keep names of any length: fx names of deep modules run past
 * 63 characters (a gradient row of a shared expert in layer 100). */
static void test_optable_long_name(void **state)
{
    (void)state;
    const char *t = "name\tforward_compute_time\tforward_comm_type\tforward_comm_size\tbackward_compute_time\t"
                    "backward_comm_type\tbackward_comm_size\tweight_grad_compute_time\tweight_grad_comm_type\t"
                    "weight_grad_comm_size\tprocess_time\n"
                    "model_layers_100_block_sparse_moe_shared_experts_gate_proj_grad_of_a_longer_name\t0\tNone\t0\t"
                    "0\tALLREDUCE_ASYNC\t4096\t0\tNone\t0\t0\n";
    Workload *w = NULL;
    TsError err = {0};
    assert_int_equal(wl_read_optable("t.tsv", t, strlen(t), &w, &err), TS_OK);
    TsBuf b = {0};
    wl_write_optable(w, &b);
    assert_string_equal(b.data, t);
    ts_buf_free(&b);
    wl_destroy(w);
}

/* Generated op tables of every family read back byte for byte (times are
 * fixed points of the ms text), name their rows as torch.fx does (pow and
 * float shadow Python builtins: pow_1, float_1) and size GQA's k/v rows. */
static void test_optable_generated(void **state)
{
    (void)state;
    static HwModel hw;
    TsError err = {0};
    hw_model_init(&hw);
    assert_int_equal(hw_gpu_load("h100-sxm5-80gb", &hw.gpu, &err), TS_OK);
    const ModelArch archs[] = {MODEL_ARCH_GPT, MODEL_ARCH_LLAMA, MODEL_ARCH_MIXTRAL, MODEL_ARCH_QWEN, MODEL_ARCH_BERT};
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++) {
        ModelSpec m;
        memset(&m, 0, sizeof m);
        model_defaults(&m, archs[i]);
        snprintf(m.name, sizeof m.name, "tiny");
        m.layers = 2, m.hidden = 256, m.heads = 8, m.kv_heads = archs[i] == MODEL_ARCH_BERT || archs[i] == MODEL_ARCH_GPT ? 8 : 2;
        m.ffn = 688, m.vocab = 1000, m.max_positions = 512;
        if (archs[i] == MODEL_ARCH_MIXTRAL || archs[i] == MODEL_ARCH_QWEN) m.experts = 4, m.topk = 2, m.moe_ffn = 512;
        model_finalize(&m);
        assert_int_equal(model_validate(&m, &err), TS_OK);
        ParallelPlan p;
        plan_init(&p);
        p.dp = 2, p.gpus = 2, p.micro_batch = 2, p.seq = 128, p.global_batch = 4;
        assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
        Workload *w = NULL;
        assert_int_equal(wl_build_optable(&m, &p, &hw, NULL, &w, &err), TS_OK);
        assert_int_equal(wl_validate(w, &err), TS_OK);
        TsBuf a = {0}, b = {0};
        wl_write_optable(w, &a);
        Workload *r = NULL;
        assert_int_equal(wl_read_optable("gen.tsv", a.data, a.len, &r, &err), TS_OK);
        wl_write_optable(r, &b);
        assert_int_equal(a.len, b.len);
        assert_memory_equal(a.data, b.data, a.len);
        if (archs[i] == MODEL_ARCH_LLAMA) {
            assert_non_null(strstr(a.data, "\npow_1\t"));
            assert_non_null(strstr(a.data, "\nfloat_1\t"));
            assert_null(strstr(a.data, "\npow\t"));
            /* k_proj: H x G*D = 256 x 64 gradient elements */
            assert_non_null(strstr(a.data, "\nmodel_layers_1_self_attn_k_proj_grad\t0\tNone\t0\t0\tALLREDUCE_ASYNC\t16384\t"));
        }
        ts_buf_free(&a);
        ts_buf_free(&b);
        wl_destroy(r);
        wl_destroy(w);
    }
}

/* A converted op-table row with an expert-DP gradient collective and no
 * other task: a workload without any dependency validates (found by
 * fuzz_optable: wl_task_deps offset a NULL deps array). */
static void test_optable_converted_types(void **state)
{
    (void)state;
    const char *t = "name\tforward_compute_time\tforward_comm_type\tforward_comm_size\tbackward_compute_time\t"
                    "backward_comm_type\tbackward_comm_size\tweight_grad_compute_time\tweight_grad_comm_type\t"
                    "weight_grad_comm_size\tprocess_time\n"
                    "g\t0\tNone\t0\t0\tALLREDUCE_DP_EP\t4880\t0\tREDUCESCATTER_ASYNC\t10.5\t0\n";
    Workload *w = NULL;
    TsError err = {0};
    assert_int_equal(wl_read_optable("t.tsv", t, strlen(t), &w, &err), TS_OK);
    assert_int_equal(wl_validate(w, &err), TS_OK);
    assert_true(w->world_unstated);
    const WlRow *r = &w->rows[0];
    const WlTask *ig = &w->tasks[r->comm[WL_PHASE_IG]], *wg = &w->tasks[r->comm[WL_PHASE_WG]];
    assert_int_equal(ig->coll, TS_COLL_ALLREDUCE);
    assert_int_equal(ig->group, WL_GROUP_DP_EP);
    assert_int_equal(wg->coll, TS_COLL_REDUCESCATTER);
    assert_int_equal(wg->group, WL_GROUP_DP); /* _ASYNC without a group: dp */
    assert_true(wg->flags & WL_F_ASYNC);
    assert_true(wg->comm_bytes == 42.0); /* 10.5 fp32 elements */
    wl_destroy(w);
}

/* the ASTRA-sim microbenchmark trace, byte for byte (astrasim_chakra.md §2.2) */
static void test_chakra_82_bytes(void **state)
{
    (void)state;
    static const unsigned char want[82] = {
        0x07, 0x0a, 0x05, '0', '.', '0', '.', '4', 0x49, 0x12, 0x15, 'a', 'l', 'l', '_', 'g', 'a', 't', 'h', 'e',
        'r', '_', '1', '6', 'n', 'p', 'u', 's', '_', '1', 'M', 'B', 0x18, 0x07, 0x52, 0x0e, 0x0a, 0x09, 'i', 's',
        '_', 'c', 'p', 'u', '_', 'o', 'p', 0xd8, 0x01, 0x00, 0x52, 0x0d, 0x0a, 0x09, 'c', 'o', 'm', 'm', '_', 't',
        'y', 'p', 'e', 0x48, 0x02, 0x52, 0x0f, 0x0a, 0x09, 'c', 'o', 'm', 'm', '_', 's', 'i', 'z', 'e', 0x48, 0x80,
        0x80, 0x40};
    TsError err = {0};
    Workload *w = wl_create(16, &err);
    /* 16 ranks gather 1 MiB each: the IR's whole buffer is 16 MiB, Chakra's
     * comm_size each rank's input; ASTRA-sim's trace names no group */
    WlTask t = wl_task_coll("all_gather_16npus_1MB", WL_PHASE_FWD, TS_COLL_ALLGATHER, WL_GROUP_WORLD, 16.0 * 1048576);
    assert_true(wl_task_add(w, &t, NULL, 0, NULL, 0) == 0);
    WlChakraOptions o;
    wl_chakra_options_init(&o);
    o.generator_attr = false;
    o.world_pg = false;
    TsBuf b = {0};
    assert_int_equal(wl_chakra_encode_rank(w, &o, 5, &b, &err), TS_OK);
    assert_int_equal(b.len, 82);
    assert_memory_equal(b.data, want, 82);
    WlChakraTrace tr;
    assert_int_equal(wl_chakra_decode("x.et", (const uint8_t *)b.data, b.len, &tr, &err), TS_OK);
    assert_string_equal(tr.version, "0.0.4");
    assert_int_equal(tr.n_nodes, 1);
    assert_int_equal(tr.nodes[0].comm_size, 1048576);
    assert_int_equal(tr.nodes[0].comm_type, 2);
    assert_true(tr.nodes[0].has_is_cpu_op && !tr.nodes[0].is_cpu_op);
    wl_chakra_trace_free(&tr);
    ts_buf_free(&b);
    wl_destroy(w);
}

/* The tiny model and plan of these tests: a GPT of 8 layers, hidden 256, 8
 * heads of 32, ffn 1024, vocab 1000 (1024 padded at TP 2), untied; TP 2, PP 4,
 * DP 4 (32 GPUs), SP, seq 128, 8 micro-batches, distributed optimizer. */
static void small_plan(ModelSpec *m, ParallelPlan *p)
{
    memset(m, 0, sizeof *m);
    model_defaults(m, MODEL_ARCH_GPT);
    snprintf(m->name, sizeof m->name, "tiny");
    m->layers = 8, m->hidden = 256, m->heads = 8, m->kv_heads = 8, m->head_dim = 32, m->ffn = 1024;
    m->vocab = 1000, m->max_positions = 2048, m->tied_embeddings = false;
    model_finalize(m);
    plan_init(p);
    p->tp = 2, p->pp = 4, p->dp = 4, p->gpus = 32, p->micro_batch = 1, p->seq = 128, p->global_batch = 32;
    p->dist_opt = true;
}

/* The task graph of plan p (resolved here on a copy) with the H100 preset's
 * kernel times; TS_OK expected unless `want` says otherwise (then NULL). */
static Workload *build_as(const ModelSpec *m, const ParallelPlan *p0, const WlBuildOptions *o, TsStatus want)
{
    static HwModel hw;
    static WlStepStore store;
    TsError err = {0};
    hw_model_init(&hw);
    assert_int_equal(hw_gpu_load("h100-sxm5-80gb", &hw.gpu, &err), TS_OK);
    ParallelPlan p = *p0;
    TsStatus st = plan_resolve(m, &p, &err);
    Workload *w = NULL;
    if (st == TS_OK) {
        CostCtx cc = {.hw = &hw, .dtype = p.dtype, .act_dtype = p.dtype, .tensor_factor = 1.0};
        PartRuntime rt;
        part_runtime_init(&rt);
        if (o) rt.cp_comm = (int)o->cp_comm, rt.grad_bytes = o->grad_bytes > 0 ? o->grad_bytes : 4;
        WlStep step;
        wl_step_make(m, &p, &rt, &cc, &store, &step);
        st = wl_build(&step, o, &w, &err);
    }
    assert_int_equal(st, want);
    return w;
}

static Workload *build(const ModelSpec *m, const ParallelPlan *p, const WlBuildOptions *o)
{
    return build_as(m, p, o, TS_OK);
}

static Workload *build_aicb(const ModelSpec *m, const ParallelPlan *p0, const WlAicbOptions *ao)
{
    static HwModel hw;
    static WlStepStore store;
    TsError err = {0};
    hw_model_init(&hw);
    assert_int_equal(hw_gpu_load("h100-sxm5-80gb", &hw.gpu, &err), TS_OK);
    ParallelPlan p = *p0;
    assert_int_equal(plan_resolve(m, &p, &err), TS_OK);
    CostCtx cc = {.hw = &hw, .dtype = p.dtype, .act_dtype = p.dtype, .tensor_factor = 1.0};
    WlStep step;
    wl_step_make(m, &p, NULL, &cc, &store, &step);
    Workload *w = NULL;
    assert_int_equal(wl_build_aicb(&step, ao, &w, &err), TS_OK);
    return w;
}

/* Every send of stage s to stage s' has a receive with the same tag on s'. */
static void check_dag(const Workload *w)
{
    TsError err = {0};
    assert_int_equal(wl_validate(w, &err), TS_OK);
    int64_t sends = 0, recvs = 0, tagsum_s = 0, tagsum_r = 0;
    for (int32_t i = 0; i < w->n_tasks; i++) {
        const WlTask *t = &w->tasks[i];
        if (t->kind == WL_KIND_SEND) sends++, tagsum_s += t->tag;
        if (t->kind == WL_KIND_RECV) recvs++, tagsum_r += t->tag;
    }
    assert_int_equal(sends, recvs);
    assert_int_equal(tagsum_s, tagsum_r);
}

/* The small plan built with schedule i of {1F1B, GPipe, interleaved v=2}. */
static const int N_SCHEDULES = 3;
static Workload *build_schedule(int i)
{
    static const PlanSchedule sch[] = {PLAN_SCHED_1F1B, PLAN_SCHED_GPIPE, PLAN_SCHED_INTERLEAVED};
    ModelSpec m;
    ParallelPlan p;
    small_plan(&m, &p);
    p.schedule = sch[i];
    p.vpp = sch[i] == PLAN_SCHED_INTERLEAVED ? 2 : 1;
    return build(&m, &p, NULL);
}

static void test_build_schedules(void **state)
{
    (void)state;
    ModelSpec m;
    ParallelPlan p;
    small_plan(&m, &p);
    Workload *w;
    for (int i = 0; i < N_SCHEDULES; i++) {
        w = build_schedule(i);
        assert_int_equal(w->n_classes, 4);
        check_dag(w);
        WlSummary s;
        wl_summary(w, 0, &s);
        assert_true(s.n_coll > 0 && s.n_p2p > 0 && s.comp_s > 0);
        wl_destroy(w);
    }
    /* 1F1B: stage 0 runs pp-1 = 3 warm-up forwards before its first backward */
    w = build(&m, &p, NULL);
    int fwd_mb = -1;
    for (int32_t i = 0; i < w->classes[0].n_tasks; i++) {
        const WlTask *t = &w->tasks[i];
        if (t->phase == WL_PHASE_IG) break;
        if (t->micro > fwd_mb) fwd_mb = t->micro;
    }
    assert_int_equal(fwd_mb, 3); /* micro-batches 0..3 forward before the first backward */
    wl_destroy(w);
}

static void test_build_aicb_rows(void **state)
{
    (void)state;
    ModelSpec m;
    ParallelPlan p;
    small_plan(&m, &p);
    WlAicbOptions ao = {.compat_1_1 = false};
    Workload *w = build_aicb(&m, &p, &ao);
    assert_int_equal(w->n_rows, 6 + 8 * (1 + 2 * 4 + 1) + 7);
    wl_destroy(w);
}

/* Tasks of class cls named `name`: count, and the group/bytes of the last. */
static int count_named(const Workload *w, int32_t cls, const char *name, WlGroup *grp, double *bytes)
{
    int n = 0;
    const WlClass *c = &w->classes[cls];
    for (int32_t i = c->first_task; i < c->first_task + c->n_tasks; i++)
        if (strcmp(w->tasks[i].name, name) == 0) {
            n++;
            if (grp) *grp = w->tasks[i].group;
            if (bytes) *bytes = w->tasks[i].comm_bytes;
        }
    return n;
}

/* Megatron's embedding group: stage 0 and stage pp-1 with the same tp/cp/dp
 * coordinates all-reduce the tied word-embedding gradient (V_pad/TP x H in
 * the gradient dtype) once per step, after the DP reduction; middle stages
 * and untied models do not. */
static void test_build_tied_embedding_allreduce(void **state)
{
    (void)state;
    ModelSpec m;
    ParallelPlan p;
    small_plan(&m, &p);
    m.tied_embeddings = true;
    Workload *w;
    w = build(&m, &p, NULL);
    check_dag(w);
    for (int32_t s = 0; s < 4; s++) {
        WlGroup g = WL_GROUP_NONE;
        double bytes = 0;
        int n = count_named(w, s, "embed_grad.ar", &g, &bytes);
        assert_int_equal(n, s == 0 || s == 3 ? 1 : 0);
        if (n) {
            assert_int_equal(g, WL_GROUP_EMB);
            assert_true(bytes == 1024.0 / 2 * 256 * 4); /* V_pad/TP x H x fp32 */
        }
    }
    /* group: rank 5 (tp 1, dp 2, stage 0) pairs with the same tp/dp on stage 3 */
    int64_t mem[4], gid, gid2;
    assert_int_equal(wl_group_members(w, WL_GROUP_EMB, 5, mem, 4, &gid), 2);
    assert_int_equal(mem[0], 5);
    assert_int_equal(mem[1], 5 + 3 * 8);
    assert_int_equal(wl_group_members(w, WL_GROUP_EMB, 5 + 3 * 8, mem, 4, &gid2), 2);
    assert_true(gid == gid2);
    /* after the gradient buckets are joined, before the grad-norm */
    const WlClass *c0 = &w->classes[0];
    int32_t ready = -1, ar = -1, norm = -1;
    for (int32_t i = c0->first_task; i < c0->first_task + c0->n_tasks; i++) {
        if (!strcmp(w->tasks[i].name, "grads.ready")) ready = i;
        if (!strcmp(w->tasks[i].name, "embed_grad.ar")) ar = i;
        if (!strcmp(w->tasks[i].name, "grad_norm.ar")) norm = i;
    }
    assert_true(ready >= 0 && ready < ar && ar < norm);
    wl_destroy(w);
    /* untied, or one stage: no such collective */
    m.tied_embeddings = false;
    w = build(&m, &p, NULL);
    assert_int_equal(count_named(w, 0, "embed_grad.ar", NULL, NULL), 0);
    wl_destroy(w);
    m.tied_embeddings = true;
    p.pp = 1, p.gpus = 8;
    w = build(&m, &p, NULL);
    assert_int_equal(count_named(w, 0, "embed_grad.ar", NULL, NULL), 0);
    wl_destroy(w);
}

/* cp > 1: gradients (and the dist-opt parameter gather) go over DP x CP. */
static void test_build_dp_cp_reduction(void **state)
{
    (void)state;
    ModelSpec m;
    ParallelPlan p;
    small_plan(&m, &p);
    p.cp = 2, p.gpus = 64;
    Workload *w;
    w = build(&m, &p, NULL);
    check_dag(w);
    WlGroup g = WL_GROUP_NONE;
    assert_true(count_named(w, 0, "grad.rs", &g, NULL) > 0);
    assert_int_equal(g, WL_GROUP_DP_CP);
    /* overlapped (default): the parameters are gathered by the gradient
     * buckets (Megatron's distributed optimizer), opening the iteration */
    assert_int_equal(count_named(w, 0, "param.ag", &g, NULL), count_named(w, 0, "grad.rs", NULL, NULL));
    assert_int_equal(g, WL_GROUP_DP_CP);
    int32_t first_ag = -1, l0 = -1;
    for (int32_t i = w->classes[0].first_task; i < w->classes[0].first_task + w->classes[0].n_tasks; i++) {
        if (first_ag < 0 && !strcmp(w->tasks[i].name, "param.ag")) first_ag = i;
        if (l0 < 0 && !strcmp(w->tasks[i].name, "L0.attn.f")) l0 = i;
    }
    assert_true(first_ag == w->classes[0].first_task && l0 > first_ag);
    bool waits = false; /* layer 0's first forward waits for a parameter gather */
    const int32_t *dp = wl_task_deps(w, &w->tasks[l0]);
    for (int32_t j = 0; j < w->tasks[l0].n_data_deps + w->tasks[l0].n_ctrl_deps; j++)
        waits |= !strcmp(w->tasks[dp[j]].name, "param.ag");
    assert_true(waits);
    assert_int_equal(wl_group_size(w, WL_GROUP_DP_CP), 8);
    wl_destroy(w);
    /* at the step (exposed): the same buckets (one here: the small stage's
     * parameters fit one bucket) */
    WlBuildOptions bo = {.param_gather_at_step = true};
    w = build(&m, &p, &bo);
    assert_int_equal(count_named(w, 0, "param.ag", &g, NULL), 1);
    assert_int_equal(g, WL_GROUP_DP_CP);
    /* members of rank 3 (tp 1, cp 1, dp 0): tp 1 of every (cp, dp), cp fastest */
    int64_t mem[8], gid;
    assert_int_equal(wl_group_members(w, WL_GROUP_DP_CP, 3, mem, 8, &gid), 8);
    for (int i = 0; i < 8; i++) assert_int_equal(mem[i], 1 + 2 * i);
    wl_destroy(w);
    p.cp = 1, p.gpus = 32; /* cp 1 keeps the plain DP group */
    w = build(&m, &p, NULL);
    assert_int_equal(count_named(w, 0, "param.ag", &g, NULL), count_named(w, 0, "grad.rs", NULL, NULL));
    assert_int_equal(g, WL_GROUP_DP);
    wl_destroy(w);
}

/* --cp-comm: the ring (one asynchronous K/V gather per attention forward,
 * gather + reduce-scatter per backward), the blocking all-gather, and
 * Ulysses' all-to-alls (Q/K/V in, output back; the reverse in backward).
 * Small plan, cp 2: 2 local layers x 8 micro-batches on stage 0, T = 64
 * local tokens, 8/2 = 4 heads of 32 per TP rank. */
static void test_build_cp_comm(void **state)
{
    (void)state;
    ModelSpec m;
    ParallelPlan p;
    small_plan(&m, &p);
    p.cp = 2, p.gpus = 64;
    double kv = 64.0 * 2 * 128 * 2 * 2; /* tok x (K,V) x 4 heads x 32 x 2 B x cp */
    double qkv = 64.0 * (128 + 2 * 128) * 2, out = 64.0 * 128 * 2;
    WlCpComm modes[] = {WL_CP_P2P, WL_CP_ALLGATHER, WL_CP_A2A};
    for (int i = 0; i < 3; i++) {
        WlBuildOptions bo = {.cp_comm = modes[i]};
        Workload *w = NULL;
        w = build(&m, &p, &bo);
        check_dag(w);
        WlGroup g = WL_GROUP_NONE;
        double b = 0;
        bool a2a = modes[i] == WL_CP_A2A;
        assert_int_equal(count_named(w, 0, "cp.kv", &g, &b), a2a ? 0 : 16);
        if (!a2a) assert_true(g == WL_GROUP_CP && b == kv);
        assert_int_equal(count_named(w, 0, "cp.dkv", NULL, &b), a2a ? 0 : 16);
        if (!a2a) assert_true(b == kv);
        assert_int_equal(count_named(w, 0, "cp.a2a.qkv", &g, &b), a2a ? 16 : 0);
        if (a2a) assert_true(g == WL_GROUP_CP && b == qkv);
        assert_int_equal(count_named(w, 0, "cp.a2a.o.b", NULL, &b), a2a ? 16 : 0);
        if (a2a) assert_true(b == out);
        /* only the ring hides its exchange: asynchronous, with the core split off */
        int async = 0, ring = 0;
        const WlClass *cl = &w->classes[0];
        for (int32_t k = cl->first_task; k < cl->first_task + cl->n_tasks; k++) {
            const WlTask *t = &w->tasks[k];
            if (t->group == WL_GROUP_CP && (t->flags & WL_F_ASYNC)) async++;
            if (strstr(t->name, ".ring")) ring++;
        }
        assert_int_equal(async, modes[i] == WL_CP_P2P ? 48 : 0); /* kv, kv.b, dkv */
        assert_int_equal(ring, modes[i] == WL_CP_P2P ? 32 : 0);
        wl_destroy(w);
    }
}

/* dp_after_backward (simulate --no-dp-overlap): no gradient bucket before
 * the stage's last weight-gradient task; by default the first buckets go
 * out under the backward. */
static void test_build_dp_after_backward(void **state)
{
    (void)state;
    ModelSpec m;
    ParallelPlan p;
    small_plan(&m, &p);
    p.dist_opt = false;
    for (int after = 0; after < 2; after++) {
        WlBuildOptions bo = {.dp_after_backward = after != 0, .bucket_params = 1e5};
        Workload *w = NULL;
        w = build(&m, &p, &bo);
        check_dag(w);
        const WlClass *cl = &w->classes[0];
        int32_t first_ar = -1, last_wg = -1, n_ar = 0;
        for (int32_t k = cl->first_task; k < cl->first_task + cl->n_tasks; k++) {
            const WlTask *t = &w->tasks[k];
            if (!strcmp(t->name, "grad.ar")) {
                n_ar++;
                if (first_ar < 0) first_ar = k;
            }
            if (t->kind == WL_KIND_COMP && t->phase == WL_PHASE_WG) last_wg = k;
        }
        assert_true(n_ar > 1 && first_ar >= 0 && last_wg >= 0);
        if (after) assert_true(first_ar > last_wg);
        else assert_true(first_ar < last_wg);
        wl_destroy(w);
    }
}

/* ZeRO-3 with experts: dense parameters are gathered and reduced over DP,
 * the routed experts over the expert-DP group, and not at all where that
 * group has one rank (every expert shard lives on one rank). */
static void test_build_zero3_experts(void **state)
{
    (void)state;
    ModelSpec m;
    ParallelPlan p;
    small_plan(&m, &p);
    m.experts = 4, m.topk = 2, m.moe_ffn = 512;
    model_finalize(&m);
    p.pp = 1, p.dp = 4, p.ep = 2, p.gpus = 8, p.zero = 3, p.dist_opt = false, p.global_batch = 8;
    for (int edp1 = 0; edp1 < 2; edp1++) {
        if (edp1) p.ep = 4, p.dp = 4; /* expert DP = dp / ep = 1 */
        Workload *w = NULL;
        w = build(&m, &p, NULL);
        check_dag(w);
        WlGroup g = WL_GROUP_NONE;
        double dense_b = 0, exp_b = 0;
        int nd = count_named(w, 0, "fsdp.ag", &g, &dense_b);
        assert_true(nd > 0);
        assert_int_equal(g, WL_GROUP_DP);
        int ne = count_named(w, 0, "efsdp.ag", &g, &exp_b);
        int nr = count_named(w, 0, "efsdp.rs", NULL, NULL);
        if (edp1) {
            assert_int_equal(ne, 0);
            assert_int_equal(nr, 0);
        } else {
            /* a layer's experts: E/EP = 2 of them, fc1 (2 x 512 wide, swiglu
             * off: 512) and fc2, 256 x 512 each, TP 2 -> 2 x 2 x 256 x 256 */
            assert_true(ne > 0 && nr > 0);
            assert_int_equal(g, WL_GROUP_DP_EP);
            assert_true(exp_b == 2.0 * 2 * 256 * 256 * 2);
        }
        wl_destroy(w);
    }
}

/* --stage-layers: chunk c runs stage_layers[c] layers, in order. */
static void test_build_stage_layers(void **state)
{
    (void)state;
    ModelSpec m;
    ParallelPlan p;
    small_plan(&m, &p);
    static const int64_t sl[4] = {1, 3, 3, 1};
    p.stage_layers = sl, p.n_stage_layers = 4;
    Workload *w;
    w = build(&m, &p, NULL);
    check_dag(w);
    int64_t first = 0;
    for (int32_t s = 0; s < 4; s++) {
        const WlClass *cl = &w->classes[s];
        int64_t lo = 1 << 30, hi = -1;
        for (int32_t i = cl->first_task; i < cl->first_task + cl->n_tasks; i++) {
            int32_t l = w->tasks[i].layer;
            if (l < 0) continue;
            if (l < lo) lo = l;
            if (l > hi) hi = l;
        }
        assert_int_equal(lo, first);
        assert_int_equal(hi, first + sl[s] - 1);
        first += sl[s];
    }
    wl_destroy(w);
    static const int64_t bad[4] = {1, 3, 3, 2}; /* adds up to 9, not 8 */
    p.stage_layers = bad;
    w = build_as(&m, &p, NULL, TS_ERR_PLAN);
    assert_null(w);
}

/* json -> read -> json is byte-identical, and the layer formats written from
 * the re-read workload equal those written from the original. */
static void json_roundtrip(const Workload *w)
{
    TsBuf a = {0}, b = {0};
    wl_write_json(w, &a);
    assert_false(a.oom);
    TsError err = {0};
    Workload *r = NULL;
    assert_int_equal(wl_read_json("rt.json", a.data, a.len, &r, &err), TS_OK);
    wl_write_json(r, &b);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.data, b.data, a.len);
    assert_int_equal(r->n_tasks, w->n_tasks);
    assert_int_equal(r->n_rows, w->n_rows);
    for (int32_t i = 0; i < w->n_tasks; i++) {
        assert_int_equal(r->tasks[i].flags, w->tasks[i].flags);
        assert_int_equal(r->tasks[i].row, w->tasks[i].row);
        assert_int_equal(r->tasks[i].coll, w->tasks[i].coll);
        assert_int_equal(r->tasks[i].group, w->tasks[i].group);
    }
    for (int f = 0; f < 3; f++) {
        TsBuf x = {0}, y = {0};
        if (f == 0) wl_write_simai(w, NULL, &x), wl_write_simai(r, NULL, &y);
        if (f == 1) wl_write_astrasim(w, &x), wl_write_astrasim(r, &y);
        if (f == 2) wl_write_optable(w, &x), wl_write_optable(r, &y);
        assert_int_equal(x.len, y.len);
        assert_memory_equal(x.data, y.data, x.len);
        ts_buf_free(&x);
        ts_buf_free(&y);
    }
    ts_buf_free(&a);
    ts_buf_free(&b);
    wl_destroy(r);
}

static void test_json_roundtrip(void **state)
{
    (void)state;
    ModelSpec m;
    ParallelPlan p;
    small_plan(&m, &p);
    TsError err = {0};
    Workload *w;
    for (int i = 0; i < N_SCHEDULES; i++) {
        w = build_schedule(i);
        json_roundtrip(w);
        wl_destroy(w);
    }
    WlAicbOptions ao = {.compat_1_1 = false};
    w = build_aicb(&m, &p, &ao);
    json_roundtrip(w);
    wl_destroy(w);
    assert_int_equal(wl_read_simai("t.txt", SIMAI, sizeof SIMAI - 1, &w, &err), TS_OK);
    json_roundtrip(w);
    wl_destroy(w);
    /* flags only the JSON extras carry */
    w = wl_create(8, &err);
    assert_non_null(w);
    snprintf(w->policy, sizeof w->policy, "DATA");
    w->origin = WL_FMT_ASTRASIM;
    WlTask t = wl_task_coll("a2a", WL_PHASE_WG, TS_COLL_ALLREDUCE, WL_GROUP_DP, 4096);
    t.flags = WL_F_AR_A2A | WL_F_ASYNC | WL_F_RECOMPUTE;
    assert_true(wl_task_add(w, &t, NULL, 0, NULL, 0) >= 0);
    json_roundtrip(w);
    wl_destroy(w);
}

static void test_json_errors(void **state)
{
    (void)state;
    static const struct { const char *text; int line, col; const char *msg; } C[] = {
        {"{\"format\": \"trainsim-workload\", \"version\": 2}", 1, 44, "unsupported trainsim-workload version 2"},
        {"{\"format\": \"other\", \"version\": 1}", 1, 12, "unknown format 'other'"},
        {"[1]", 1, 1, "expected a JSON object"},
        {"{\"format\": \"trainsim-workload\", \"version\": 1, \"generator\": \"x\", \"source\": \"s\",\n"
         " \"parallel\": {\"world\": 8, \"tp\": 2, \"cp\": 1, \"pp\": 1, \"dp\": 2, \"ep\": 1, \"vpp\": 1,"
         " \"layers_per_stage\": 0, \"ga\": 1, \"pp_comm_bytes\": 0}, \"classes\": []}", 2, 24,
         "'parallel.world' is 8, not tp*cp*pp*dp"},
        {"{\"format\": \"trainsim-workload\", \"version\": 1, \"generator\": \"x\", \"source\": \"s\",\n"
         " \"parallel\": {\"world\": 1, \"tp\": 1, \"cp\": 1, \"pp\": 1, \"dp\": 1, \"ep\": 1, \"vpp\": 1,"
         " \"layers_per_stage\": 0, \"ga\": 1, \"pp_comm_bytes\": 0},\n \"classes\": [{\"name\": \"c\", \"stage\": 0,"
         " \"tasks\": [{\"id\": 0, \"kind\": \"comp\", \"phase\": \"fwd\", \"name\": \"t\", \"micro\": -1, \"chunk\": 0,"
         " \"layer\": -1, \"flops\": 0, \"mem_bytes\": 0, \"duration_s\": 1, \"deps\": [0], \"ctrl_deps\": []}],"
         " \"rows\": []}]}", 3, 197, "'classes[0].tasks[0].deps[0]' is 0, not an earlier task of this class"},
    };
    for (size_t i = 0; i < sizeof C / sizeof C[0]; i++) {
        TsError err = {0};
        Workload *w = (Workload *)1;
        assert_int_equal(wl_read_json("bad.json", C[i].text, strlen(C[i].text), &w, &err), TS_ERR_INPUT);
        assert_null(w);
        assert_string_equal(err.file, "bad.json");
        if (!strstr(err.msg, C[i].msg)) fail_msg("case %zu: '%s'", i, err.msg);
        if (err.line != C[i].line || err.col != C[i].col)
            fail_msg("case %zu: at %d:%d, expected %d:%d", i, err.line, err.col, C[i].line, C[i].col);
    }
    /* an embedded NUL */
    TsError err = {0};
    Workload *w = NULL;
    assert_int_equal(wl_read_json("nul.json", "{\"a\0\": 1}", 9, &w, &err), TS_ERR_INPUT);
    assert_int_equal(err.col, 4);
}

/* The Chakra encoding of the small plan at 256 GPUs (dp 32, every group kind
 * it uses): every collective names a group of comm_groups.json, with an id
 * from 1 and below 2148 (ASTRA-sim multiplies ids by 10^6 in an int32); an
 * all-gather's comm_size is the task's whole buffer over its group; every
 * COMP node moving bytes has num_ops > 0 (ASTRA-sim's roofline: no 0 / 0). */
static void test_chakra_groups_and_sizes(void **state)
{
    (void)state;
    ModelSpec m;
    ParallelPlan p;
    small_plan(&m, &p);
    p.gpus = 256;
    p.dp = 32;
    p.global_batch = 256;
    TsError err = {0};
    Workload *w;
    w = build(&m, &p, NULL);
    char dir[] = "/tmp/ts_wl_chakra_XXXXXX", prefix[64], path[96];
    assert_non_null(mkdtemp(dir));
    snprintf(prefix, sizeof prefix, "%s/s", dir);
    assert_int_equal(wl_write_chakra(w, NULL, prefix, NULL, &err), TS_OK);
    snprintf(path, sizeof path, "%s.comm_groups.json", prefix);
    json_error_t je;
    json_t *groups = json_load_file(path, 0, &je);
    assert_non_null(groups);
    const char *key;
    json_t *v;
    json_object_foreach(groups, key, v) {
        long id = strtol(key, NULL, 10);
        assert_true(id >= 1 && id < 2148);
    }
    for (int64_t rank = 0; rank < 256; rank += 37) {
        TsBuf b = {0};
        assert_int_equal(wl_chakra_encode_rank(w, NULL, rank, &b, &err), TS_OK);
        WlChakraTrace t;
        assert_int_equal(wl_chakra_decode("r", (const uint8_t *)b.data, b.len, &t, &err), TS_OK);
        const WlClass *cl = &w->classes[wl_rank_class(w, rank)];
        assert_int_equal(t.n_nodes, cl->n_tasks);
        for (int64_t i = 0; i < t.n_nodes; i++) {
            const WlChakraNode *n = &t.nodes[i];
            const WlTask *k = &w->tasks[cl->first_task + i];
            if (n->type == 4 && n->tensor_size > 0) assert_true(n->num_ops > 0);
            if (n->type != 7) continue;
            assert_non_null(n->pg_name);
            json_t *members = json_object_get(groups, n->pg_name);
            assert_non_null(members);
            double want = k->comm_bytes;
            if (k->coll == TS_COLL_ALLGATHER) want /= (double)json_array_size(members);
            assert_true(llabs(n->comm_size - llround(want)) <= 1);
        }
        wl_chakra_trace_free(&t);
        ts_buf_free(&b);
    }
    json_decref(groups);
    char cmd[96];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
    wl_destroy(w);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pyfloat),       cmocka_unit_test(test_groups),
        cmocka_unit_test(test_optable_converted_types),
        cmocka_unit_test(test_optable_long_name),
        cmocka_unit_test(test_optable_generated),
        cmocka_unit_test(test_read_simai),    cmocka_unit_test(test_read_errors),
        cmocka_unit_test(test_chakra_82_bytes), cmocka_unit_test(test_build_schedules),
        cmocka_unit_test(test_build_aicb_rows), cmocka_unit_test(test_build_tied_embedding_allreduce),
        cmocka_unit_test(test_build_dp_cp_reduction), cmocka_unit_test(test_build_cp_comm),
        cmocka_unit_test(test_build_dp_after_backward), cmocka_unit_test(test_build_zero3_experts),
        cmocka_unit_test(test_build_stage_layers), cmocka_unit_test(test_chakra_groups_and_sizes),
        cmocka_unit_test(test_json_roundtrip), cmocka_unit_test(test_json_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
