/* trainsim workload: generation from model, plan and hardware options.
 * Maps ModelSpec/ParallelPlan onto the workload generators' flat dims and
 * wires hw.h's compute model in. */
#include "cmd_workload_gen.h"

#include <stdlib.h>
#include <string.h>

#include "cli_sim.h"
#include "trainsim/hw.h"
#include "trainsim/sim.h"

void wl_gen_cli_init(WlGenCli *g)
{
    memset(g, 0, sizeof *g);
    cli_model_init(&g->model);
    cli_plan_init(&g->plan);
    cli_hw_init(&g->hw);
    cli_sim_init(&g->sim);
}

void wl_gen_cli_add(CliSpec *s, WlGenCli *g)
{
    cli_model_add(s, &g->model);
    cli_plan_add(s, &g->plan, false);
    cli_hw_add(s, &g->hw);
    cli_sim_add_workload(s, &g->sim);
    g->spec = s;
}

static void model_dims(const ModelSpec *m, int64_t tp, WlModelDims *d)
{
    memset(d, 0, sizeof *d);
    snprintf(d->name, sizeof d->name, "%s", m->name);
    d->layers = m->layers;
    d->hidden = m->hidden;
    d->heads = m->heads;
    d->kv_heads = m->kv_heads;
    d->head_dim = m->head_dim;
    d->ffn = m->ffn;
    d->vocab = m->vocab;
    d->vocab_padded = model_padded_vocab(m, tp);
    d->swiglu = m->act == MODEL_ACT_SWIGLU;
    d->tied = m->tied_embeddings;
    d->learned_pos = m->pos == MODEL_POS_LEARNED;
    d->rope = m->pos == MODEL_POS_ROPE;
    d->dropout = m->arch == MODEL_ARCH_GPT || m->arch == MODEL_ARCH_BERT;
    d->experts = m->experts;
    d->topk = m->topk;
    d->moe_ffn = m->moe_ffn;
    d->dense_layers = m->dense_layers;
    d->shared_experts = m->shared_experts;
    d->q_lora_rank = m->q_lora_rank;
    d->kv_lora_rank = m->kv_lora_rank;
    d->qk_nope_dim = m->qk_nope_dim;
    d->qk_rope_dim = m->qk_rope_dim;
    d->v_head_dim = m->v_head_dim;
}

static void plan_dims(const ParallelPlan *p, WlPlanDims *d)
{
    memset(d, 0, sizeof *d);
    d->world = p->gpus;
    d->tp = p->tp;
    d->cp = p->cp;
    d->pp = p->pp;
    d->vpp = p->vpp;
    d->dp = p->dp;
    d->ep = p->ep;
    d->etp = p->etp;
    d->sp = p->sp;
    d->micro_batch = p->micro_batch;
    d->seq = p->seq;
    d->ga = p->grad_accum;
    d->dtype_bytes = ts_dtype_bytes(sim_activation_dtype(p->dtype)); /* activations, TP traffic: bf16 under fp8 */
    d->zero = p->zero;
    d->dist_opt = p->dist_opt;
    d->shampoo = p->optimizer == PLAN_OPTIM_SHAMPOO;
    d->shampoo_blocks = p->shampoo_blocks > 0 ? p->shampoo_blocks : 1;
    d->recompute = p->recompute == PLAN_RECOMPUTE_FULL        ? WL_RECOMPUTE_FULL
                   : p->recompute == PLAN_RECOMPUTE_SELECTIVE ? WL_RECOMPUTE_SELECTIVE
                                                              : WL_RECOMPUTE_NONE;
    d->schedule = p->schedule == PLAN_SCHED_GPIPE         ? WL_SCHED_GPIPE
                  : p->schedule == PLAN_SCHED_INTERLEAVED ? WL_SCHED_INTERLEAVED
                                                          : WL_SCHED_1F1B;
    d->flash = p->flash_attn;
    d->tp_overlap = p->tp_overlap;
    d->stage_layers = p->stage_layers;
    d->n_stage_layers = p->n_stage_layers;
}

/* The compute model of hw.h behind the generators' callbacks; tensor-core
 * kernels scaled as `simulate` scales them (sim_tensor_factor: sustained
 * clock, slowest GPU of the job). */
static double hw_gemm_cb(const void *ctx, int64_t batch, int64_t m, int64_t n, int64_t k)
{
    const WlGenCli *g = ctx;
    return g->tensor_factor * hw_gemm_time_s(&g->loaded.model, batch, m, n, k, g->dtype);
}

/* The three passes of a GEMM as the simulator's gemm_as costs them
 * (src/sim/cost.c): layer GEMMs at the plan's dtype, the LM head at the
 * activation dtype; under FP8 Transformer Engine's casts: the input cast
 * with its amax (3 B per element) forward, the output gradient cast and
 * transposed (4 B) and the saved input transposed (2 B) backward. */
static void hw_gemm3_cb(const void *ctx, int64_t batch, int64_t m, int64_t n, int64_t k, bool layer, double t[3])
{
    const WlGenCli *g = ctx;
    TsDtype dt = layer ? g->dtype : sim_activation_dtype(g->dtype);
    const HwModel *hm = &g->loaded.model;
    double f = g->tensor_factor;
    t[0] = f * hw_gemm_time_s(hm, batch, m, n, k, dt);
    t[1] = f * hw_gemm_time_s(hm, batch, m, k, n, dt);
    t[2] = f * hw_gemm_time_s(hm, batch, k, n, m, dt);
    if (dt == TS_DTYPE_FP8) {
        double mk = (double)batch * (double)m * (double)k, mn = (double)batch * (double)m * (double)n;
        t[0] += hw_memory_time_s(hm, 3 * mk);
        t[1] += hw_memory_time_s(hm, 4 * mn);
        t[2] += hw_memory_time_s(hm, 2 * mk);
    }
}

static double hw_attn_cb(const void *ctx, int64_t b, int64_t h, int64_t sq, int64_t sk, int64_t d, bool causal,
                         bool bwd)
{
    const WlGenCli *g = ctx;
    return g->tensor_factor *
           hw_attention_time_s(&g->loaded.model, b, h, sq, sk, d, causal, bwd, sim_activation_dtype(g->dtype));
}

static double hw_mem_cb(const void *ctx, double bytes)
{
    const WlGenCli *g = ctx;
    return hw_memory_time_s(&g->loaded.model, bytes);
}

int wl_gen_cli_build(WlGenCli *g, Workload **out)
{
    *out = NULL;
    ModelSpec m;
    int rc = cli_model_load(&g->model, "gpt3-175b", &m);
    if (rc) return rc;
    /* the plan fixes the GPU count when --gpus is not given */
    int64_t gpus = g->hw.gpus > 0 ? g->hw.gpus : 0;
    ParallelPlan p;
    if ((rc = cli_plan_load(g->spec, &g->plan, &m, gpus, &p))) return rc;
    if ((rc = cli_sim_check(g->spec, &g->sim))) return rc;
    SimOptions so;
    cli_sim_options(&g->sim, &so);
    /* what only the task graph (chakra, json) has a place for */
    static const char *const dag_only[] = {"no-dp-overlap", "no-param-gather-overlap", "fp16-grad-reduce", "bucket-mb",
                                           "eager-pytorch", "selective-ops", "cp-comm"};
    bool dag = g->fmt == WL_FMT_CHAKRA || g->fmt == WL_FMT_JSON;
    for (size_t i = 0; i < sizeof dag_only / sizeof dag_only[0] && !dag; i++)
        if (cli_seen(g->spec, dag_only[i])) {
            TsError e = {0};
            ts_err(&e, TS_ERR_USAGE, "--%s applies to --format chakra and json", dag_only[i]);
            ts_err_hint(&e, "AICB's SimAI layout (simai, astrasim) fixes its gradient and parameter collectives and "
                            "has no context-parallel group; the op table has neither");
            return cli_fail(&e);
        }
    TsError err = {0};
    if (sim_cp_comm_check(&m, &p, so.cp_comm, &err)) return cli_fail(&err);
    if (p.cp > 1 && (g->fmt == WL_FMT_SIMAI || g->fmt == WL_FMT_ASTRASIM))
        fprintf(stderr, "trainsim: warning: AICB's SimAI layout has no context parallelism (AICB ignores "
                        "--context-parallel-size): the %lld CP ranks are written as data-parallel ranks with whole "
                        "%lld-token sequences (%lldx the plan's tokens per step); --format chakra or json models "
                        "the CP exchange\n",
                (long long)p.cp, (long long)p.seq, (long long)p.cp);
    if ((rc = cli_hw_load(&g->hw, "dgx-h100", p.gpus, &g->loaded))) return rc;
    g->dtype = p.dtype;
    g->tensor_factor = sim_tensor_factor(&g->loaded.model.gpu, &so, p.gpus);
    WlCost cost = {.ctx = g, .gemm_s = hw_gemm_cb, .attn_s = hw_attn_cb, .mem_s = hw_mem_cb, .gemm3_s = hw_gemm3_cb};
    WlModelDims md;
    WlPlanDims pd;
    model_dims(&m, p.tp, &md);
    plan_dims(&p, &pd);
    /* the plan's uneven rule, spelled out per chunk for the generators */
    int64_t chunks = p.pp * p.vpp;
    int64_t *split = NULL;
    if (p.n_stage_layers == 0 && m.layers % chunks != 0) {
        split = malloc((size_t)chunks * sizeof *split);
        if (!split) {
            cli_hw_free(&g->loaded);
            return cli_fail(&(TsError){.code = TS_ERR_INTERNAL, .msg = "out of memory"});
        }
        for (int64_t c = 0; c < chunks; c++) split[c] = plan_chunk_layers(&p, m.layers, c);
        pd.stage_layers = split;
        pd.n_stage_layers = (int32_t)chunks;
    }
    TsStatus st;
    if (g->fmt == WL_FMT_SIMAI || g->fmt == WL_FMT_ASTRASIM) {
        WlAicbOptions ao = {.compat_1_1 = g->aicb_compat};
        st = wl_build_aicb(&md, &pd, &cost, &ao, out, &err);
    } else if (g->fmt == WL_FMT_OPTABLE) {
        WlOptableOptions oo = {.neusight = g->neusight};
        st = wl_build_optable(&md, &pd, &g->loaded.model, p.dtype, &oo, out, &err);
    } else {
        _Static_assert((int)WL_CP_P2P == (int)SIM_CP_P2P && (int)WL_CP_ALLGATHER == (int)SIM_CP_ALLGATHER &&
                           (int)WL_CP_A2A == (int)SIM_CP_A2A,
                       "WlCpComm follows SimCpComm");
        /* the simulator's runtime options, as the generator takes them */
        int gb = so.fp32_grad_reduce ? 4 : 2;
        WlBuildOptions bo = {.cp_comm = (WlCpComm)so.cp_comm,
                             .grad_bytes = gb,
                             .bucket_params = so.bucket_bytes > 0 ? so.bucket_bytes / gb : 0,
                             .param_gather_at_step = !so.param_gather_overlap,
                             .dp_after_backward = !so.dp_overlap,
                             .eager_elementwise = so.eager_elementwise,
                             .optimizer_bytes = so.optimizer_bytes_per_param,
                             .selective_ops = so.selective_ops};
        st = wl_build(&md, &pd, &cost, &bo, out, &err);
    }
    free(split);
    cli_hw_free(&g->loaded);
    return st ? cli_fail(&err) : 0;
}
