/* test_hf.c — --framework hf and --precision: the eager modules' bytes by
 * hand (GPT-2's gelu_new chain, the loss on fp32 logits), what autograd
 * keeps against a count by hand of GPT-2's layer, the bytes per parameter
 * of each precision recipe, where the HF peak falls, the host's
 * dispatch floor (a tiny model at micro-batch 1 waits on Python, a real
 * batch does not) and the parameter tensors the optimizer's host loop walks. Tolerances: 1e-12 relative for closed forms. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "trainsim/cost.h"
#include "trainsim/partition.h"

static void near(double got, double want, double tol, const char *what)
{
    double e = fabs(got - want) / (fabs(want) > 0 ? fabs(want) : 1);
    if (e > tol) {
        print_error("%s: got %.17g want %.17g (rel err %.3g > %.3g)\n", what, got, want, e, tol);
        fail();
    }
}

static ParallelPlan hf_plan(const ModelSpec *m, int64_t mb, int64_t seq, PlanPrecision prec)
{
    ParallelPlan p;
    plan_init(&p);
    p.gpus = 1, p.micro_batch = mb, p.global_batch = mb, p.seq = seq;
    p.framework = PLAN_FRAMEWORK_HF;
    p.precision = prec;
    TsError err = {0};
    assert_int_equal(plan_resolve(m, &p, &err), TS_OK);
    return p;
}

/* The H100 preset, without its calibration or cluster. */
static void h100(HwModel *hw)
{
    hw_model_init(hw);
    TsError err = {0};
    assert_int_equal(hw_gpu_load("h100-sxm5-80gb", &hw->gpu, &err), TS_OK);
}

/* Model preset `name` on the H100 preset. */
static void preset_on_h100(const char *name, ModelSpec *m, HwModel *hw)
{
    assert_int_equal(model_preset(name, m, NULL), TS_OK);
    h100(hw);
}

static const PartKernel *find(const PartBlockT *b, const char *name)
{
    for (int i = 0; i < b->n_k; i++)
        if (!strcmp(b->k[i].name, name)) return &b->k[i];
    fail_msg("no kernel %s", name);
    return NULL;
}

static double saved(const PartBlockT *b)
{
    double s = 0;
    for (int i = 0; i < b->n_k; i++) s += b->k[i].saved_bytes;
    return s;
}

/* GPT-2 under amp, by hand per element e of one [T, H] tensor (F = 4H):
 * kept: the two fp32 streams 8, c_attn's and c_fc's bf16 inputs 2 + 2,
 * q/k/v 6 (views of c_attn's output, which q keeps alive), the KV cache's
 * copies of k and v 4, SDPA's output 2 (+ its fp32 log-sum-exp, 4 per token
 * and head), two dropout masks 2, gelu_new's fp32 input, tanh, 0.5*x (bf16)
 * and 1 + tanh and c_proj's bf16 input 16 per F element = 64: 90 B per e; and the
 * bf16 copies of the layer's weights. The loss: 22 B per logit forward
 * (cast to fp32 6, log_softmax's three reads and a write 16), 26 backward. */
static void test_gpt2_amp_by_hand(void **state)
{
    (void)state;
    ModelSpec m;
    assert_int_equal(model_preset("gpt2", &m, NULL), TS_OK);
    ParallelPlan p = hf_plan(&m, 16, 1024, PLAN_PRECISION_AMP);
    static PartTemplate t;
    part_template(&m, &p, NULL, &t);
    double T = 16384, H = 768, e = T * H, A = 12, V = 50257;
    const PartKernel *g = find(&t.b[PART_BLOCK_MLP], "gelu_new");
    near(g->fwd_bytes, 76.0 * 4 * e, 1e-12, "gelu_new forward bytes");
    near(g->saved_bytes, 16.0 * 4 * e, 1e-12, "gelu_new kept");
    assert_int_equal(g->launches[0], 10);
    /* bf16 copies: c_attn, c_proj with biases and ln_1 (4H^2 + 6H); c_fc, c_proj with biases (8H^2 + 5H) */
    double weights = 2.0 * (12 * H * H + 11 * H);
    double want = 90.0 * e + T * A * 4.0 + weights;
    near(saved(&t.b[PART_BLOCK_ATTN]) + saved(&t.b[PART_BLOCK_MLP]), want, 1e-12, "GPT-2 layer kept");
    const PartKernel *loss = find(&t.b[PART_BLOCK_HEAD], "loss");
    near(loss->fwd_bytes, 22.0 * T * V, 1e-12, "loss forward");
    near(loss->bwd_bytes, 26.0 * T * V, 1e-12, "loss backward");
    near(t.loss_workspace_bytes, 8.0 * T * V, 1e-12, "loss workspace");
    /* the attention core: one SDPA kernel, causal */
    assert_true(find(&t.b[PART_BLOCK_ATTN], "sdpa")->causal);
}

/* Bytes per parameter of the three recipes (ZeRO 0): weights, gradients,
 * Adam state. */
static void test_precision_bytes(void **state)
{
    (void)state;
    ParallelPlan p;
    plan_init(&p);
    PartMemOptions o;
    part_mem_options_init(&o);
    PartParamBytes b;
    part_param_bytes(&p, &o, &b);
    near(b.weight + b.grad + b.optim, 18, 1e-12, "mixed");
    p.precision = PLAN_PRECISION_AMP;
    part_param_bytes(&p, &o, &b);
    near(b.weight + b.grad + b.optim, 16, 1e-12, "amp");
    p.precision = PLAN_PRECISION_PURE;
    part_param_bytes(&p, &o, &b);
    near(b.weight + b.grad + b.optim, 8, 1e-12, "pure");
}

/* The HF peak: gradients kept between steps add their bytes to the
 * activation peak; a loop that frees them has none there, and a model with
 * little activation (2 MoE layers) peaks at the end of the backward with all
 * gradients and no activation. */
static void test_hf_peak(void **state)
{
    (void)state;
    ModelSpec m;
    assert_int_equal(model_preset("gpt2", &m, NULL), TS_OK);
    ParallelPlan p = hf_plan(&m, 16, 1024, PLAN_PRECISION_AMP);
    PartMemOptions o;
    part_mem_options_init(&o);
    PartMemory kept, freed;
    TsError err = {0};
    assert_int_equal(part_memory(&m, &p, &o, NULL, &kept, &err), TS_OK);
    o.grads_freed = true;
    assert_int_equal(part_memory(&m, &p, &o, NULL, &freed, &err), TS_OK);
    near(freed.gradients_bytes, 0, 1e-12, "no gradient at the loss");
    near(kept.total_bytes - freed.total_bytes, kept.gradients_bytes, 1e-9, "kept gradients add their bytes");
    near(kept.gradients_bytes, 4.0 * kept.params, 1e-12, "amp gradients fp32");
    assert_int_equal(model_preset("mixtral-8x7b", &m, NULL), TS_OK);
    m.layers = 2;
    p = hf_plan(&m, 1, 1024, PLAN_PRECISION_PURE);
    assert_int_equal(part_memory(&m, &p, &o, NULL, &freed, &err), TS_OK);
    near(freed.activations_bytes, 0, 1e-12, "end of the backward: no activation");
    near(freed.gradients_bytes, 2.0 * freed.params, 1e-12, "pure gradients 16-bit");
    near(freed.workspace_bytes, 0, 1e-12, "untied embedding: its gradient is the .grad itself");
    /* GPT-2 (tied) at 1 x 256 pure peaks at the end of the backward too,
     * with the embedding's fp32 dense gradient beside every gradient */
    assert_int_equal(model_preset("gpt2", &m, NULL), TS_OK);
    p = hf_plan(&m, 1, 256, PLAN_PRECISION_PURE);
    assert_int_equal(part_memory(&m, &p, &o, NULL, &freed, &err), TS_OK);
    near(freed.activations_bytes, 0, 1e-12, "gpt2 1x256: end of the backward");
    near(freed.workspace_bytes, 4.0 * (double)m.vocab * (double)m.hidden, 1e-12, "tied: fp32 vocab x hidden");
}

/* The host's dispatch floor: GPT-2 at micro-batch 1 and 64 tokens runs each
 * forward pass at the host's pace (COST_HOST_FWD_S per forward kernel); at
 * 16 x 1024 tokens the kernels outlast their dispatch. Megatron's fused dense
 * kernels never wait. */
static void test_host_floor(void **state)
{
    (void)state;
    ModelSpec m;
    HwModel hw;
    preset_on_h100("gpt2", &m, &hw);
    static PartTemplate t;
    static CostStep cs;
    for (int big = 0; big < 2; big++) {
        ParallelPlan p = hf_plan(&m, big ? 16 : 1, big ? 1024 : 64, PLAN_PRECISION_AMP);
        CostCtx c;
        cost_ctx_init(&c, &hw, &p, 1.0);
        part_template(&m, &p, NULL, &t);
        cost_step(&c, &m, &p, NULL, &t, &cs);
        /* the whole forward pass: layers x (attention + MLP), embedding, head */
        double n[PART_BLOCK_COUNT] = {12, 12, 0, 1, 1}, gpu = 0, host = 0, wait = 0;
        for (int k = 0; k < PART_BLOCK_COUNT; k++) {
            gpu += n[k] * cs.b[k].fwd;
            host += n[k] * cs.b[k].host_fwd;
            wait += n[k] * cs.b[k].wait_fwd;
        }
        if (big) {
            near(wait, 0, 1e-12, "a real batch does not wait");
        } else {
            assert_true(wait > 0);
            near(gpu, host, 1e-9, "the forward at the host's pace");
        }
        /* Megatron's fused dense layer: nothing dispatched waits the GPU
         * (only its MoE layer's ops carry a host time) */
        p.framework = PLAN_FRAMEWORK_MEGATRON;
        cost_ctx_init(&c, &hw, &p, 1.0);
        near(c.host_mod_s[0] + c.host_mod_s[1] + c.host_opt_s, 0, 1e-12, "fused kernels: no module or optimizer loop");
        part_template(&m, &p, NULL, &t);
        cost_step(&c, &m, &p, NULL, &t, &cs);
        double floor = cs.host_wait_s + cs.host_opt_s;
        for (int k = 0; k < PART_BLOCK_COUNT; k++) floor += cs.b[k].host_fwd + cs.b[k].host_bwd;
        near(floor, 0, 1e-12, "fused kernels: no host floor");
    }
}

/* Megatron-Core's MoE layer (Qwen3-30B-A3B, EP 8: 16 local experts, bf16,
 * 1 x 1024 tokens, H100): by hand, at COST_HOST_MCORE times an eager op's
 * host time, 57 Python calls before the dispatcher's host sync (24 us each:
 * 1.368 ms) hide under the attention block's GPU time; after it 43 calls
 * plus one GEMM launch per local expert and projection from C++ (6.9 us
 * each): 1.0320 + 0.2208 = 1.2528 ms, against the GPU time of the kernels
 * after the sync and, given the network (cost_ctx_net), of the dispatch and
 * combine all-to-alls the host runs ahead of. Padded to capacity (token
 * drop) the shapes are static: no sync, and the forward waits only where
 * the whole pass dispatches longer than it runs: 48 layers x (100 calls x
 * 24 us + 32 launches x 6.9 us) = 48 x 2.6208 ms against the pass's GPU
 * time (at 1024 tokens a layer, it does). */
static void test_mcore_moe_sync(void **state)
{
    (void)state;
    ModelSpec m;
    HwModel hw;
    preset_on_h100("qwen3-30b-a3b", &m, &hw);
    static ClusterSpec cl;
    static HwNet net;
    TsError err = {0};
    assert_int_equal(hw_cluster_load("dgx-h100", 8, &cl, &err), TS_OK);
    hw_net_init(&net, &cl);
    static PartTemplate t;
    static CostStep cs;
    const double f = COST_HOST_MCORE;
    for (int run = 0; run < 3; run++) {
        bool pad = run == 1, a2a = run == 2;
        ParallelPlan p;
        plan_init(&p);
        p.gpus = 8, p.ep = 8, p.micro_batch = 1, p.global_batch = 8, p.seq = 1024;
        if (pad) p.moe_capacity = 1.0, p.moe_pad = true;
        assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
        CostCtx c;
        cost_ctx_init(&c, &hw, &p, 1.0);
        if (a2a) cost_ctx_net(&c, &net, 1);
        part_template(&m, &p, NULL, &t);
        cost_step(&c, &m, &p, NULL, &t, &cs);
        const PartBlockT *b = &t.b[PART_BLOCK_MOE];
        double g[2] = {0, 0};
        for (int i = 0; i < b->n_k; i++) g[(b->k[i].flags & PART_KF_AFTER_SYNC) ? 1 : 0] += cs.b[PART_BLOCK_MOE].k[i][0];
        /* the dispatch and the combine over the node's 8 GPUs, run ahead of */
        HwEpRoute r = {.topk = m.topk, .load = t.moe_load};
        double ep = a2a ? hw_ep_a2a_time_s(&net, t.ep_dispatch_bytes, 8, 1, &r) + hw_ep_a2a_time_s(&net, t.ep_bytes, 8, 1, &r)
                        : 0;
        double post = f * 1.2528e-3 - g[1] - ep, pre = f * 1.368e-3 - cs.b[PART_BLOCK_ATTN].fwd - g[0];
        double gpu = 0, n[PART_BLOCK_COUNT] = {48, 0, 48, 1, 1};
        for (int k = 0; k < PART_BLOCK_COUNT; k++) gpu += n[k] * (cs.b[k].fwd - cs.b[k].wait_fwd);
        double want = pad ? f * 2.6208e-3 - gpu / 48 : (post > 0 ? post : 0) + (pre > 0 ? pre : 0);
        assert_true(want > 0);
        if (a2a) assert_true(ep > 0);
        near(cs.b[PART_BLOCK_MOE].wait_fwd, want, 1e-9,
             pad ? "token drop: no sync" : a2a ? "the sync's wait beside the all-to-alls" : "the sync's wait");
    }
}

/* GPT-OSS's fc2 bias under Megatron-Core (template.c grouped_fc2_bias),
 * counted by hand: gpt-oss-20b (32 experts, top-4, H 2880) on EP 8 holds 4
 * local experts; 1 x 1024 tokens route 4096 token-expert pairs to a rank
 * (balanced), whose fc2 output is 4096 x 2880 bf16 elements: 6 such tensors
 * forward, 8 backward; per expert a multiply and an add (+ the cat) forward,
 * two multiplies and two sums (+ the cat) backward, after the sync, each
 * called from the Python loop. A model without expert biases has no such
 * kernel, nor does another framework's code path. */
static void test_mcore_fc2_bias(void **state)
{
    (void)state;
    static PartTemplate t;
    for (int run = 0; run < 3; run++) {
        ModelSpec m;
        assert_int_equal(model_preset(run == 1 ? "qwen3-30b-a3b" : "gpt-oss-20b", &m, NULL), TS_OK);
        ParallelPlan p;
        plan_init(&p);
        p.gpus = 8, p.ep = 8, p.micro_batch = 1, p.global_batch = 8, p.seq = 1024;
        if (run == 2) p.framework = PLAN_FRAMEWORK_TORCHTITAN;
        TsError err = {0};
        assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
        part_template(&m, &p, NULL, &t);
        const PartBlockT *b = &t.b[PART_BLOCK_MOE];
        const PartKernel *k = NULL;
        for (int i = 0; i < b->n_k; i++)
            if (!strcmp(b->k[i].name, "experts.fc2_bias")) k = &b->k[i];
        if (run) {
            assert_null(k);
            continue;
        }
        assert_non_null(k);
        double el = 4096.0 * 2880.0;
        near(k->fwd_bytes, 6 * el * 2, 1e-12, "forward bytes");
        near(k->bwd_bytes, 8 * el * 2, 1e-12, "backward bytes");
        assert_int_equal(k->launches[0], 2 * 4 + 1);
        assert_int_equal(k->launches[1], 4 * 4 + 1);
        assert_int_equal(k->flags & (PART_KF_AFTER_SYNC | PART_KF_PYLOOP | PART_KF_GENERIC),
                         PART_KF_AFTER_SYNC | PART_KF_PYLOOP | PART_KF_GENERIC);
    }
}

/* GPT-OSS's experts under --framework hf (template_hf.c gpt_oss_experts),
 * by hand: gpt-oss-20b (32 experts, top-4, H = F = 2880) on one H100 at
 * 1 x 4096 tokens routes 16384 pairs, 512 an expert on average; the
 * busiest, 512 + sqrt(2 ln 32) x sqrt(4096 x 1/8 x 7/8) = 567.7, is walked
 * once per bias (two), 2.0 us a duplicate (index_put_dup_us): 2.271 ms of
 * weight-gradient time, far above the gradients' bytes. A model without
 * expert biases keeps SiLU x up (experts.act_fn_mul) and has no such op. */
static void test_hf_gpt_oss_experts(void **state)
{
    (void)state;
    static PartTemplate t;
    static CostStep cs;
    for (int run = 0; run < 2; run++) {
        ModelSpec m;
        HwModel hw;
        preset_on_h100(run ? "qwen3-30b-a3b" : "gpt-oss-20b", &m, &hw);
        ParallelPlan p = hf_plan(&m, 1, 4096, PLAN_PRECISION_PURE);
        part_template(&m, &p, NULL, &t);
        const PartBlockT *b = &t.b[PART_BLOCK_MOE];
        if (run) {
            find(b, "experts.act_fn_mul");
            for (int i = 0; i < b->n_k; i++) assert_false(b->k[i].flags & PART_KF_DUPS);
            continue;
        }
        CostCtx c;
        cost_ctx_init(&c, &hw, &p, 1.0);
        cost_step(&c, &m, &p, NULL, &t, &cs);
        const PartKernel *k = find(b, "experts.bias");
        double busiest = 512.0 + sqrt(2.0 * log(32.0)) * sqrt(4096.0 * 0.125 * 0.875);
        near(k->elems[1], 2.0 * busiest, 1e-12, "duplicates walked");
        assert_int_equal(k->flags & (PART_KF_DUPS | PART_KF_WGRAD), PART_KF_DUPS | PART_KF_WGRAD);
        near(cs.b[PART_BLOCK_MOE].k[k - b->k][2], 2.0 * busiest * 2.0e-6, 1e-9, "the bias gradients' time");
        near(cs.b[PART_BLOCK_MOE].k[k - b->k][1], 0, 0, "no input-gradient time");
        const PartKernel *g = find(b, "experts.gate_split");
        near(g->elems[0], 2.0 * 16384.0 * 2880.0, 1e-12, "the two strided clamps' elements");
        assert_true(g->flags & PART_KF_GENERIC);
    }
}

/* A Megatron-Core step of preset `name` on two H100s at TP 2, 2 x seq
 * tokens: its template in *t, its costs in *cs. Returns the attention
 * block. */
static const PartBlockT *tp2_cp_step(const char *name, int64_t seq, int64_t cp, const PartRuntime *rt,
                                     PartTemplate *t, CostStep *cs)
{
    ModelSpec m;
    HwModel hw;
    preset_on_h100(name, &m, &hw);
    ParallelPlan p;
    plan_init(&p);
    p.gpus = 2 * cp, p.tp = 2, p.cp = cp, p.micro_batch = 2, p.global_batch = 2, p.seq = seq;
    TsError err = {0};
    assert_int_equal(plan_resolve(&m, &p, &err), TS_OK);
    part_template(&m, &p, rt, t);
    CostCtx c;
    cost_ctx_init(&c, &hw, &p, 1.0);
    cost_step(&c, &m, &p, rt, t, cs);
    return &t->b[PART_BLOCK_ATTN];
}

static const PartBlockT *tp2_step(const char *name, int64_t seq, PartTemplate *t, CostStep *cs)
{
    return tp2_cp_step(name, seq, 1, NULL, t, cs);
}

/* The index of block b's kernel `name`, -1 where it has none. */
static int kernel_ix(const PartBlockT *b, const char *name)
{
    for (int i = 0; i < b->n_k; i++)
        if (!strcmp(b->k[i].name, name)) return i;
    return -1;
}

/* GPT-OSS's learned sinks in the fused attention (template.c core.sink):
 * the backward only, 1.74 ns at the preset's clock a query row (cuDNN on an
 * H200 and an H100, bench/data/gpu/sink_2026-11-27{i_h200,j_h100}.jsonl)
 * whatever the window: gpt-oss-20b, TP 2 (32 of 64 heads a rank), 2 x 4096
 * tokens, 262144 rows: 0.456 ms a layer. A model without sinks has no such
 * kernel. */
static void test_sink_backward(void **state)
{
    (void)state;
    static PartTemplate t;
    static CostStep cs;
    for (int run = 0; run < 2; run++) {
        int ix = kernel_ix(tp2_step(run ? "qwen3-30b-a3b" : "gpt-oss-20b", 4096, &t, &cs), "core.sink");
        if (run) {
            assert_int_equal(ix, -1);
            continue;
        }
        assert_true(ix >= 0);
        near(cs.b[PART_BLOCK_ATTN].k[ix][0], 0, 1e-15, "no forward");
        near(cs.b[PART_BLOCK_ATTN].k[ix][1], 2.0 * 32 * 4096 * 1.74e-9, 1e-9, "backward per query row");
    }
}

/* The windowed layers' core with learned sinks runs on cuDNN, whose
 * windowed forward skips no tile (PART_CUDNN_SWA_FWD, bench/data/gpu/
 * sink_2026-11-27{i,j,l}_*.jsonl): gpt-oss-20b, half its layers windowed,
 * its core.swa_fwd is 1.16x the causal core's forward (both half the
 * layers) and has no backward, and core.swa keeps the band's backward
 * alone. Gemma 2, windowed without sinks (flash kernels), keeps the band
 * both ways. */
static void test_swa_cudnn_forward(void **state)
{
    (void)state;
    static PartTemplate t;
    static CostStep cs;
    for (int run = 0; run < 2; run++) {
        const PartBlockT *b = tp2_step(run ? "gemma-2-9b" : "gpt-oss-20b", 8192, &t, &cs);
        int core = kernel_ix(b, "core"), swa = kernel_ix(b, "core.swa"), fwd = kernel_ix(b, "core.swa_fwd");
        assert_true(core >= 0 && swa >= 0);
        const double(*k)[3] = cs.b[PART_BLOCK_ATTN].k;
        assert_true(k[swa][1] > 0);
        if (run) {
            assert_int_equal(fwd, -1);
            assert_true(k[swa][0] > 0);
            continue;
        }
        assert_true(fwd >= 0);
        near(k[swa][0], 0, 1e-15, "the band: no forward");
        near(k[fwd][0] / k[core][0], 1.16, 1e-9, "the forward: the causal kernel over every key, masked");
        near(k[fwd][1] + k[fwd][2], 0, 1e-15, "no backward");
    }
}

/* Under context parallelism the sinks' windowed forward is exchanged as
 * the full layers' causal core is (template.c causal_core): gpt-oss-20b,
 * CP 2 x TP 2, 2 x 8192 tokens, ring, all-gather and all-to-all exchanges, its
 * forward stays 1.16x the causal core's, ring steps included. */
static void test_swa_cudnn_forward_cp(void **state)
{
    (void)state;
    static PartTemplate t;
    static CostStep cs;
    for (int comm = 0; comm < 3; comm++) {
        PartRuntime rt;
        part_runtime_init(&rt);
        rt.cp_comm = comm;
        const PartBlockT *b = tp2_cp_step("gpt-oss-20b", 8192, 2, &rt, &t, &cs);
        double core = 0, fwd = 0;
        for (int i = 0; i < b->n_k; i++) {
            if (!strncmp(b->k[i].name, "core.swa_fwd", 12)) fwd += cs.b[PART_BLOCK_ATTN].k[i][0];
            else if (!strcmp(b->k[i].name, "core") || !strcmp(b->k[i].name, "core.ring"))
                core += cs.b[PART_BLOCK_ATTN].k[i][0];
        }
        assert_true(core > 0);
        near(fwd / core, 1.16, 1e-9, "the windowed forward exchanged as the causal core");
    }
}

/* Parameter tensors, counted by hand from the HF modules: GPT-2 wte, wpe,
 * ln_f (2) and 12 per layer (ln_1, c_attn, c_proj, ln_2, c_fc, mlp.c_proj,
 * each weight and bias), the head tied: 148. BERT-base (masked-LM): three
 * tables and the embedding LayerNorm 5, 16 per layer (q, k, v, attention
 * output, intermediate, output: weight and bias; two LayerNorms), the
 * transform's dense and LayerNorm and the decoder's bias 5: 202. Llama 3
 * 8B: the table, 9 per layer (q, k, v, o, gate, up, down, two RMSNorms), the
 * final norm, the head untied: 291. The optimizer's host loop over them
 * (COST_HOST_OPT_TENSOR_S each) waits the GPU at micro-batch 1 x 64 tokens
 * (its backward dispatch outlasts its kernels) and hides behind 64 x 512
 * tokens' backward. */
static void test_param_tensors(void **state)
{
    (void)state;
    static const struct { const char *name; int tensors; } CASES[] = {
        {"gpt2", 148}, {"bert-base-uncased", 202}, {"llama3-8b", 291}};
    HwModel hw;
    h100(&hw);
    static PartTemplate t;
    static CostStep cs;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        ModelSpec m;
        assert_int_equal(model_preset(CASES[i].name, &m, NULL), TS_OK);
        if (m.arch == MODEL_ARCH_BERT) m.lm_head = true, m.pooler = false;
        for (int big = 0; big < 2; big++) {
            ParallelPlan p = hf_plan(&m, big ? 64 : 1, big ? 512 : 64, PLAN_PRECISION_PURE);
            part_template(&m, &p, NULL, &t);
            double n[PART_BLOCK_COUNT] = {(double)m.layers, (double)m.layers, 0, 1, 1}, tensors = 0;
            for (int k = 0; k < PART_BLOCK_COUNT; k++) tensors += n[k] * t.b[k].param_tensors;
            near(tensors, CASES[i].tensors, 1e-12, CASES[i].name);
            CostCtx c;
            cost_ctx_init(&c, &hw, &p, 1.0);
            cost_step(&c, &m, &p, NULL, &t, &cs);
            if (big) near(cs.host_opt_s, 0, 1e-12, "hidden behind the backward");
            else near(cs.host_opt_s, CASES[i].tensors * COST_HOST_OPT_TENSOR_S, 1e-12, "the loop, exposed");
        }
    }
}

/* nn.Module calls of the forward, counted by hand from the HF modules:
 * GPT-2 a layer: GPT2Block, ln_1, attn, c_attn, c_proj, resid_dropout |
 * ln_2, mlp, c_fc, act, c_proj, dropout (6 | 6); BERT: BertLayer,
 * BertAttention, self, query, key, value, BertSelfOutput, dense, dropout,
 * LayerNorm | BertIntermediate, dense, act, BertOutput, dense, dropout,
 * LayerNorm (10 | 7); Llama 3 8B: the layer, input_layernorm, self_attn,
 * q, k, v, o | post_attention_layernorm, mlp, gate, up, down, act_fn (7 |
 * 6). Each costs COST_HOST_MODULE_FWD_S of host time forward and
 * COST_HOST_MODULE_BWD_S backward;
 * Qwen3's fp32 experts under amp are a Python loop (PART_KF_PYLOOP). */
static void test_module_calls(void **state)
{
    (void)state;
    static const struct { const char *name; int attn, mlp; } CASES[] = {
        {"gpt2", 6, 6}, {"bert-base-uncased", 10, 7}, {"llama3-8b", 7, 6}};
    HwModel hw;
    h100(&hw);
    static PartTemplate t;
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        ModelSpec m;
        assert_int_equal(model_preset(CASES[i].name, &m, NULL), TS_OK);
        ParallelPlan p = hf_plan(&m, 1, 64, PLAN_PRECISION_PURE);
        part_template(&m, &p, NULL, &t);
        assert_int_equal(t.b[PART_BLOCK_ATTN].modules, CASES[i].attn);
        assert_int_equal(t.b[PART_BLOCK_MLP].modules, CASES[i].mlp);
        CostCtx c;
        cost_ctx_init(&c, &hw, &p, 1.0);
        CostBlock with, without;
        cost_block(&c, &t.b[PART_BLOCK_MLP], &with);
        c.host_mod_s[0] = c.host_mod_s[1] = 0;
        cost_block(&c, &t.b[PART_BLOCK_MLP], &without);
        near(with.host_fwd - without.host_fwd, CASES[i].mlp * COST_HOST_MODULE_FWD_S, 1e-12, "modules forward");
        near(with.host_bwd - without.host_bwd, CASES[i].mlp * COST_HOST_MODULE_BWD_S, 1e-12, "modules backward");
    }
    ModelSpec m;
    assert_int_equal(model_preset("qwen3-30b-a3b", &m, NULL), TS_OK);
    ParallelPlan p = hf_plan(&m, 1, 64, PLAN_PRECISION_AMP);
    part_template(&m, &p, NULL, &t);
    const PartKernel *k = find(&t.b[PART_BLOCK_MOE], "experts.gate_up");
    assert_non_null(k);
    assert_true((k->flags & PART_KF_PYLOOP) && !(k->flags & PART_KF_INNER));
    assert_int_equal(k->launches[0], m.experts);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gpt2_amp_by_hand),
        cmocka_unit_test(test_precision_bytes),
        cmocka_unit_test(test_hf_peak),
        cmocka_unit_test(test_host_floor),
        cmocka_unit_test(test_mcore_moe_sync),
        cmocka_unit_test(test_mcore_fc2_bias), cmocka_unit_test(test_sink_backward), cmocka_unit_test(test_swa_cudnn_forward),
        cmocka_unit_test(test_swa_cudnn_forward_cp),
        cmocka_unit_test(test_hf_gpt_oss_experts),
        cmocka_unit_test(test_param_tensors),
        cmocka_unit_test(test_module_calls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
