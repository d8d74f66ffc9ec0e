/*
 * eval_sim.c — the real evaluator of the search: a candidate's knobs become
 * a ParallelPlan (plan_resolve: every validity rule), its memory comes from
 * part_memory (no graph, no allocation: the cheap pruning path), and the
 * plans that fit are simulated with sim_simulate on a per-thread SimWork.
 */
#include "trainsim/search.h"

#include <string.h>

#include "trainsim/partition.h"

void search_plan_from_knobs(const SearchEvalCtx *x, const SearchKnobs *k, ParallelPlan *p)
{
    plan_init(p);
    p->gpus = k->gpus;
    p->tp = k->tp;
    p->pp = k->pp;
    p->vpp = k->vpp;
    p->cp = k->cp;
    p->ep = k->ep;
    p->dp = k->dp;
    p->sp = k->sp != 0;
    p->sp_set = true;
    /* ZeRO 1 is Megatron's distributed optimizer (fp32 main gradients,
     * --use-distributed-optimizer) under megatron, DeepSpeed's ZeRO-1 (16-bit
     * gradients) elsewhere */
    bool dist_opt = k->zero == 1 && x->framework == PLAN_FRAMEWORK_MEGATRON;
    p->zero = dist_opt ? 0 : k->zero;
    p->dist_opt = dist_opt;
    p->dp_shard = k->dp_shard;
    p->recompute = (PlanRecompute)k->recompute;
    p->recompute_layers = p->recompute == PLAN_RECOMPUTE_FULL ? k->rc_layers : 0;
    p->tp_overlap = k->tp_overlap != 0;
    p->micro_batch = k->mbs;
    p->global_batch = x->global_batch;
    p->seq = x->seq;
    p->dtype = x->dtype;
    p->framework = x->framework;
    p->precision = x->precision;
    const ParallelPlan *f = &x->knobs;
    p->moe_dispatch = f->moe_dispatch;
    p->moe_node_limit = f->moe_node_limit;
    p->moe_imbalance = f->moe_imbalance;
    p->moe_capacity = f->moe_capacity;
    p->moe_pad = f->moe_pad;
    p->fp8_recipe = f->fp8_recipe;
    p->adam_moments = f->adam_moments;
    p->recompute_modules = p->recompute == PLAN_RECOMPUTE_SELECTIVE ? f->recompute_modules : 0;
    p->uneven = true; /* layers that do not divide pp*vpp: the uneven rule (plan.h) */
    p->schedule = (PlanSchedule)k->schedule;
    /* micro-batches that pp does not divide: Megatron-Core's smallest group
     * that runs them (--microbatch-group-size-per-virtual-pipeline-stage) */
    int64_t md = (int64_t)k->mbs * k->dp;
    if (plan_interleaved(p) && p->framework == PLAN_FRAMEWORK_MEGATRON && md > 0 &&
        x->global_batch % md == 0)
        p->vpp_group = plan_least_vpp_group(k->pp, x->global_batch / md);
}

bool search_sim_setup(const SearchEvalCtx *x, const SearchKnobs *k, SimSetup *in)
{
    const HwNet *net = NULL;
    for (int i = 0; i < x->n_nets; i++)
        if (x->net_gpus[i] == k->gpus) net = x->nets[i];
    if (!net) return false;
    memset(in, 0, sizeof *in);
    in->model = x->model;
    in->hw = x->hw;
    in->net = net;
    in->opt = x->sim_opts;
    in->opt.cp_comm = (SimCpComm)k->cp_comm;
    search_plan_from_knobs(x, k, &in->plan);
    return true;
}

static void *thread_begin(void *ctx)
{
    (void)ctx;
    SimWork *w = sim_work_create();
    /* the model, hw and nets of the context stay put during the search */
    sim_work_cache_costs(w, true);
    return w;
}

static void thread_end(void *ctx, void *scratch)
{
    (void)ctx;
    sim_work_destroy(scratch);
}

/* The micro-batch group a resolved plan runs, and whether a flag sets it. */
static void point_group(SearchPoint *pt, const ParallelPlan *p)
{
    pt->vpp_group = (int32_t)plan_vpp_group_shown(p);
    pt->vpp_group_flag = p->vpp_group > 0;
}

/* A plan with full recompute of every layer that fits (memory *bytes):
 * the fewest layers per chunk recomputed that still fit
 * (part_fewest_recompute_layers), as Megatron runs it; DeepSpeed's pipeline
 * engine recomputes uniformly (activation_checkpoint_interval), torchtitan
 * and HuggingFace every layer or none. The count goes to k->rc_layers (0:
 * all, where no fewer fit or it exceeds int8). */
static void fewest_rc_layers(const SearchEvalCtx *x, ParallelPlan *p, SearchKnobs *k, double cap, double *bytes)
{
    k->rc_layers = 0;
    if (x->rc_all || p->recompute != PLAN_RECOMPUTE_FULL || p->framework != PLAN_FRAMEWORK_MEGATRON) return;
    double b = *bytes;
    int64_t n = part_fewest_recompute_layers(x->model, p, &x->mem_opts, cap, &b);
    if (n < 1 || n > 127) { /* every layer: the memory the caller had */
        p->recompute_layers = 0;
        return;
    }
    k->rc_layers = (int8_t)n;
    *bytes = b;
}

static SearchEvalStatus check(void *ctx, void *scratch, SearchPoint *pt)
{
    (void)scratch;
    const SearchEvalCtx *x = ctx;
    ParallelPlan p;
    /* err = NULL: only the verdict matters here, and most candidates are
     * invalid; formatting their messages was 40% of a sweep (perf). */
    search_plan_from_knobs(x, &pt->k, &p);
    if (plan_resolve(x->model, &p, NULL) != TS_OK) return SEARCH_EVAL_INVALID;
    point_group(pt, &p);
    if (sim_cp_comm_check(x->model, &p, (SimCpComm)pt->k.cp_comm, NULL) != TS_OK) return SEARCH_EVAL_INVALID;
    PartMemory peak;
    if (part_memory(x->model, &p, &x->mem_opts, NULL, &peak, NULL) != TS_OK) return SEARCH_EVAL_INVALID;
    pt->memory_bytes = peak.total_bytes;
    pt->capacity_bytes = x->hw->gpu.hbm_bytes - x->sim_opts.min_headroom_bytes;
    if (pt->memory_bytes > pt->capacity_bytes) return SEARCH_EVAL_NOFIT;
    fewest_rc_layers(x, &p, &pt->k, pt->capacity_bytes, &pt->memory_bytes);
    return SEARCH_EVAL_OK;
}

/* --train-tokens: the run at iteration time it_s (monotone in it_s, so a
 * bound's iteration time gives a bound on the run). */
static void train_point(const SearchEvalCtx *x, const ParallelPlan *p, double it_s, SearchPoint *pt)
{
    pt->train_wall_s = pt->train_gpu_hours = pt->train_cost = 0;
    if (!x->train) return;
    PartParamBytes pb;
    part_param_bytes(p, NULL, &pb);
    TrainEstimate e;
    if (train_estimate(x->train, it_s, (double)x->global_batch * (double)x->seq, p->gpus,
                       (double)x->model_params * (pb.weight + pb.optim), &e, NULL) != TS_OK)
        return;
    pt->train_wall_s = e.wall_s;
    pt->train_gpu_hours = e.gpu_hours;
    pt->train_cost = e.cost;
}

static SearchEvalStatus simulate(void *ctx, void *scratch, SearchPoint *pt)
{
    const SearchEvalCtx *x = ctx;
    SimSetup in;
    if (!search_sim_setup(x, &pt->k, &in)) return SEARCH_EVAL_INVALID;
    SimResult r;
    TsError err;
    if (sim_simulate(&in, scratch, &r, &err) != TS_OK) return SEARCH_EVAL_INVALID;
    pt->iteration_s = r.iteration_time_s;
    pt->tokens_per_s = r.tokens_per_s;
    pt->mfu = r.mfu;
    point_group(pt, &in.plan);
    const SimBreakdown *b = &r.breakdown;
    pt->exposed_s[SEARCH_EXPOSED_TP] = b->tp_comm_exposed_s;
    pt->exposed_s[SEARCH_EXPOSED_CP] = b->cp_comm_exposed_s;
    pt->exposed_s[SEARCH_EXPOSED_EP] = b->ep_comm_exposed_s;
    pt->exposed_s[SEARCH_EXPOSED_PP] = b->pp_comm_exposed_s;
    pt->exposed_s[SEARCH_EXPOSED_DP] = b->dp_comm_exposed_s;
    pt->exposed_s[SEARCH_EXPOSED_BUBBLE] = b->bubble_s;
    pt->exposed_s[SEARCH_EXPOSED_RECOMPUTE] = b->recompute_s;
    pt->exposed_s[SEARCH_EXPOSED_OPTIMIZER] = b->optimizer_s;
    pt->n_stage_layers = in.plan.n_stage_layers > 0 && in.plan.n_stage_layers <= SIM_BALANCE_MAX
                             ? in.plan.n_stage_layers : 0;
    /* check() costed the default split's memory; the run's split holds its own */
    if (pt->n_stage_layers > 0) pt->memory_bytes = r.memory.total_bytes;
    for (int32_t s = 0; s < pt->n_stage_layers; s++) pt->stage_layers[s] = (int16_t)in.plan.stage_layers[s];
    train_point(x, &in.plan, r.iteration_time_s, pt);
    return SEARCH_EVAL_OK;
}

/* Branch and bound: sim_lower_bound (the costing without the schedule
 * engine). The bound is lowered by 1e-9 so that rounding in the engine's
 * sums can never put a plan's simulated time below it. */
static SearchEvalStatus bound(void *ctx, void *scratch, SearchPoint *pt)
{
    const SearchEvalCtx *x = ctx;
    SimSetup in;
    if (!search_sim_setup(x, &pt->k, &in)) return SEARCH_EVAL_INVALID;
    double lb;
    TsError err;
    if (sim_lower_bound(&in, scratch, &lb, &err) != TS_OK || !(lb > 0)) return SEARCH_EVAL_INVALID;
    lb *= 1 - 1e-9;
    pt->iteration_s = lb;
    pt->tokens_per_s = (double)x->global_batch * (double)x->seq / lb;
    train_point(x, &in.plan, lb, pt);
    return SEARCH_EVAL_OK;
}

void search_eval_init(SearchEvalCtx *x, const ModelSpec *m, const HwModel *hw, int64_t global_batch, int64_t seq)
{
    memset(x, 0, sizeof *x);
    x->model = m;
    x->hw = hw;
    x->global_batch = global_batch;
    x->seq = seq;
    x->dtype = TS_DTYPE_BF16;
    ModelCounts mc;
    model_count_params(m, &mc);
    x->model_params = mc.total;
    sim_options_init(&x->sim_opts);
    part_mem_options_init(&x->mem_opts);
    x->mem_opts.capacity_bytes = hw->gpu.hbm_bytes;
}

bool search_eval_add_net(SearchEvalCtx *x, int64_t gpus, const HwNet *net)
{
    if (x->n_nets >= SEARCH_MAX_VALUES) return false;
    x->net_gpus[x->n_nets] = gpus;
    x->nets[x->n_nets++] = net;
    return true;
}

SearchEvaluator search_eval_sim(SearchEvalCtx *x)
{
    /* the bound is the plan's own split's: an even split may beat it */
    return (SearchEvaluator){.ctx = x, .thread_begin = thread_begin, .thread_end = thread_end,
                             .check = check, .simulate = simulate,
                             .bound = x->sim_opts.balance_stages ? NULL : bound};
}
