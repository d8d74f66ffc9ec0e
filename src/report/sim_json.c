/* sim_json.c — the JSON of `trainsim simulate --json` (report_sim.h). */
#include "trainsim/report_sim.h"

static void plan_json(const ParallelPlan *p, TsBuf *b)
{
    ts_buf_printf(b,
                  "{\"gpus\": %lld, \"tp\": %lld, \"pp\": %lld, \"vpp\": %lld, \"dp\": %lld, \"cp\": %lld, "
                  "\"ep\": %lld, \"etp\": %lld, \"sp\": %s, \"zero\": %d, \"dist_opt\": %s, \"optimizer\": \"%s\", "
                  "\"recompute\": \"%s\", \"flash_attn\": %s, \"tp_overlap\": %s, \"micro_batch\": %lld, "
                  "\"global_batch\": %lld, \"seq\": %lld, \"dtype\": \"%s\", \"framework\": \"%s\", "
                  "\"precision\": \"%s\", \"schedule\": \"%s\", \"grad_accum\": %lld",
                  (long long)p->gpus, (long long)p->tp, (long long)p->pp, (long long)p->vpp, (long long)p->dp,
                  (long long)p->cp, (long long)p->ep, (long long)p->etp, p->sp ? "true" : "false", p->zero,
                  p->dist_opt ? "true" : "false", p->optimizer == PLAN_OPTIM_SHAMPOO ? "shampoo" : "adam",
                  plan_recompute_name(p->recompute), p->flash_attn ? "true" : "false",
                  p->tp_overlap ? "true" : "false", (long long)p->micro_batch, (long long)p->global_batch,
                  (long long)p->seq, ts_dtype_name(p->dtype), plan_framework_name(p->framework),
                  plan_precision_name(p->precision), plan_sched_name(p->schedule),
                  (long long)p->grad_accum);
    /* the MoE, FP8, optimizer and recompute-module knobs, when set */
    bool moe = p->moe_dispatch != PLAN_MOE_DISPATCH_ALLTOALL || p->moe_node_limit > 0 || p->moe_imbalance > 1.0 ||
               p->moe_capacity > 0;
    if (moe)
        ts_buf_printf(b, ", \"moe\": {\"dispatcher\": \"%s\", \"node_limit\": %lld, \"imbalance\": %.17g, "
                         "\"capacity_factor\": %.17g, \"pad_to_capacity\": %s}",
                      plan_moe_dispatch_name(p->moe_dispatch), (long long)p->moe_node_limit, p->moe_imbalance,
                      p->moe_capacity, p->moe_pad ? "true" : "false");
    if (plan_vpp_group_shown(p)) ts_buf_printf(b, ", \"vpp_group\": %lld", (long long)plan_vpp_group_shown(p));
    if (p->dtype == TS_DTYPE_FP8) ts_buf_printf(b, ", \"fp8_recipe\": \"%s\"", plan_fp8_name(p->fp8_recipe));
    if (p->adam_moments == TS_DTYPE_BF16) ts_buf_puts(b, ", \"adam_moments\": \"bf16\"");
    if (p->recompute_modules) {
        char mods[64];
        plan_rc_modules_format(p->recompute_modules, mods, sizeof mods);
        ts_buf_printf(b, ", \"recompute_modules\": \"%s\"", mods);
    }
    ts_buf_puts(b, "}");
}

static void num(TsBuf *b, const char *key, double v, bool comma)
{
    ts_buf_printf(b, "\"%s\": ", key);
    ts_json_fmt_double(b, v);
    if (comma) ts_buf_puts(b, ", ");
}

static void breakdown_json(const SimBreakdown *bd, TsBuf *b)
{
    ts_buf_puts(b, "{");
    for (int i = 0; i < SIM_BD_COUNT; i++) num(b, sim_breakdown_key(i), sim_breakdown_get(bd, i), i + 1 < SIM_BD_COUNT);
    ts_buf_puts(b, "}");
}

/* "stages": each pipeline stage's busy time, end and breakdown (the schedule
 * engine's result only; replays have no stage table). */
static void stages_json(const SimResult *r, TsBuf *b)
{
    if (!r->stages) return;
    ts_buf_puts(b, "\"stages\": [");
    for (int32_t s = 0; s < r->n_stages; s++) {
        const SimStageResult *st = &r->stages[s];
        ts_buf_printf(b, "%s{\"stage\": %d, ", s ? ", " : "", s);
        num(b, "busy_s", st->busy_s, true);
        num(b, "end_s", st->end_s, true);
        ts_buf_puts(b, "\"breakdown_s\": ");
        breakdown_json(&st->breakdown, b);
        ts_buf_puts(b, "}");
    }
    ts_buf_puts(b, "], ");
}

/* "balance": the split that evens the stages' work, or null (SimBalance). */
static void balance_json(const SimBalance *bl, TsBuf *b)
{
    if (!bl->n) {
        ts_buf_puts(b, "\"balance\": null, ");
        return;
    }
    ts_buf_puts(b, "\"balance\": {\"stage_layers\": [");
    for (int32_t s = 0; s < bl->n; s++) ts_buf_printf(b, s ? ", %d" : "%d", bl->layers[s]);
    ts_buf_puts(b, "], ");
    num(b, "busiest_s", bl->busiest_s, true);
    num(b, "current_s", bl->current_s, false);
    ts_buf_puts(b, "}, ");
}

/* "critical_bubble": the critical stage's idle time as the schedule's fill and drain
 * and waiting; "waits_on": the stage it waits for and the largest part of
 * that stage's busy time, or null when no stage stands out (sim_slowest). */
static void stall_json(const SimSetup *in, const SimResult *r, TsBuf *b)
{
    double fill, wait;
    sim_critical_bubble(in, r, &fill, &wait);
    ts_buf_puts(b, "\"critical_bubble\": {");
    num(b, "fill_drain_s", fill, true);
    num(b, "waiting_s", wait, false);
    ts_buf_puts(b, "}, ");
    balance_json(&r->balance, b);
    ts_buf_puts(b, "\"waits_on\": ");
    SimSlowest sw;
    if (!sim_slowest(r, &sw)) {
        ts_buf_puts(b, "null, ");
        return;
    }
    ts_buf_printf(b, "{\"stage\": %d, ", sw.stage);
    num(b, "busy_s", sw.busy_s, true);
    num(b, "critical_busy_s", sw.critical_busy_s, true);
    ts_buf_printf(b, "\"largest_part\": \"%s\", ", sim_breakdown_key(sw.dominant));
    num(b, "largest_part_s", sw.dominant_s, false);
    ts_buf_puts(b, "}, ");
}

/* "options": the runtime behaviours the step ran with; the host's wait. */
static void options_json(const SimSetup *in, const SimResult *r, TsBuf *b)
{
    const ParallelPlan *p = &in->plan;
    const SimOptions *o = &in->opt;
    const bool ds = plan_ds_pipe(p);
    ts_buf_printf(b, ", \"options\": {\"pipeline_engine\": \"%s\", \"dp_overlap\": %s, \"param_gather_overlap\": %s, "
                     "\"grad_reduce_dtype\": \"%s\", \"bucket_bytes\": %.17g, \"overlap_slowdown\": %.17g, "
                     "\"model_code\": \"%s\", \"selective_recompute\": \"%s\", \"gpu_spread\": %.17g, "
                     "\"cp_comm\": \"%s\", \"cross_entropy\": \"%s\", \"experts\": \"%s\", "
                     "\"mfu_convention\": \"%s\"%s",
                  ds ? "deepspeed" : "megatron", o->dp_overlap && !ds ? "true" : "false",
                  o->param_gather_overlap && !ds ? "true" : "false", o->fp32_grad_reduce ? "fp32" : "16-bit",
                  sim_dp_bucket_bytes(o, p->dp * p->cp), o->overlap_slowdown,
                  plan_hf(p) ? "hf" : plan_eager(p) ? "eager" : "fused",
                  o->selective_ops ? "ops" : "attention", o->gpu_spread, sim_cp_comm_name(o->cp_comm),
                  sim_ce_fusion_name(o->ce_fusion),
                  o->sequential_experts ? "sequential" : "grouped", o->mfu_causal ? "causal" : "full",
                  o->balance_stages ? ", \"balance_stages\": true" : "");
    if (o->cuda_graphs) /* requested; applied unless a warning says why not */
        ts_buf_printf(b, ", \"cuda_graphs\": %s", sim_cuda_graphs(o, p, in->model->experts > 0, NULL) ? "true" : "false");
    /* the host's dispatch time an op, forward and backward (cost.h, --host-us),
     * where it is in the loop: HF's modules, Megatron-Core's MoE layers */
    bool host = sim_host_in_loop(o, p, in->model);
    if (host)
        ts_buf_printf(b, ", \"host_dispatch_us\": [%.10g, %.10g]",
                      1e6 * o->host_s[0], 1e6 * o->host_s[1]);
    ts_buf_puts(b, "}");
    if (host)
        ts_buf_printf(b, ", \"host_wait_s\": %.17g, \"host_wait_optimizer_s\": %.17g", r->host_wait_s,
                      r->host_wait_optimizer_s);
}

/* "model": name, parameter counts, shape, dropouts. */
static void model_json(const SimSetup *in, TsBuf *b)
{
    ModelCounts mc;
    model_count_params(in->model, &mc);
    ts_buf_puts(b, ", \"model\": {\"name\": ");
    ts_json_escape(b, in->model->name);
    ts_buf_printf(b, ", \"params\": %lld, \"active_params\": %lld, \"layers\": %lld, \"hidden\": %lld",
                  (long long)mc.total, (long long)mc.active, (long long)in->model->layers,
                  (long long)in->model->hidden);
    ts_buf_puts(b, ", \"hidden_dropout\": ");
    ts_json_fmt_double(b, in->model->hidden_dropout);
    ts_buf_puts(b, ", \"attention_dropout\": ");
    ts_json_fmt_double(b, in->model->attn_dropout);
    ts_buf_puts(b, "}");
}

/* "cluster": its name, GPU, size and the SM clock the step ran at. */
static void cluster_json(const SimSetup *in, TsBuf *b)
{
    const ParallelPlan *p = &in->plan;
    const ClusterSpec *cl = &in->net->cl;
    ts_buf_puts(b, ", \"cluster\": {\"name\": ");
    ts_json_escape(b, cl->name);
    ts_buf_puts(b, ", \"gpu\": ");
    ts_json_escape(b, in->hw->gpu.name);
    ts_buf_printf(b, ", \"gpus\": %lld, \"nodes\": %lld, \"gpus_per_node\": %lld, \"software\": %d, \"sm_clock_mhz\": ",
                  (long long)p->gpus,
                  (long long)ts_ceil_div(p->gpus, cl->gpus_per_node > 0 ? cl->gpus_per_node : 1),
                  (long long)cl->gpus_per_node,
                  in->hw->gpu.software == HW_SOFTWARE_2024 ? HW_SOFTWARE_2024 : HW_SOFTWARE_2025);
    double clk = sim_sm_clock_mhz(&in->hw->gpu, p->gpus);
    if (clk > 0) ts_json_fmt_double(b, clk);
    else ts_buf_puts(b, "null"); /* a GPU file without clocks */
    if (in->hw->calib) { /* --calibration: the GPU it measured and its entries */
        ts_buf_puts(b, ", \"calibration\": {\"gpu\": ");
        ts_json_escape(b, hw_calib_gpu(in->hw->calib));
        ts_buf_printf(b, ", \"entries\": %d}", hw_calib_entries(in->hw->calib));
    }
    ts_buf_puts(b, "}");
}

/* "train": the whole run's estimate. */
static void train_json(const RepTrain *train, TsBuf *b)
{
    const TrainEstimate *e = train->est;
    ts_buf_puts(b, ", \"train\": {");
    num(b, "tokens", train->opt->tokens, true);
    num(b, "steps", e->steps, true);
    num(b, "wall_s", e->wall_s, true);
    num(b, "compute_s", e->compute_s, true);
    num(b, "gpu_hours", e->gpu_hours, true);
    num(b, "cost", e->cost, true);
    num(b, "price_per_gpu_hour", train->opt->price_per_gpu_hour, true);
    num(b, "goodput", e->goodput, true);
    num(b, "job_mtbf_s", e->job_mtbf_s, true);
    num(b, "checkpoint_bytes", e->checkpoint_bytes, true);
    num(b, "checkpoint_s", e->checkpoint_s, true);
    num(b, "checkpoint_interval_s", e->checkpoint_interval_s, true);
    num(b, "restart_s", train->opt->restart_s, false);
    ts_buf_puts(b, "}");
}

void rep_sim_json(const SimSetup *in, const SimResult *r, const RepTrain *train, TsBuf *b)
{
    const ParallelPlan *p = &in->plan;
    ts_buf_puts(b, "{\"format\": \"trainsim-simulate\", \"version\": 1, ");
    num(b, "iteration_time_s", r->iteration_time_s, true);
    num(b, "tokens_per_s", r->tokens_per_s, true);
    num(b, "tokens_per_s_per_gpu", r->tokens_per_s_per_gpu, true);
    num(b, "samples_per_s", r->samples_per_s, true);
    num(b, "model_flops_per_iteration", r->model_flops_per_iteration, true);
    num(b, "hardware_flops_per_iteration", r->hardware_flops_per_iteration, true);
    num(b, "model_tflops_per_gpu", r->model_tflops_per_gpu, true);
    num(b, "hardware_tflops_per_gpu", r->hardware_tflops_per_gpu, true);
    num(b, "mfu", r->mfu, true);
    num(b, "hfu", r->hfu, true);
    num(b, "bubble_fraction", r->bubble_fraction, true);
    if (r->sched_f_s > 0) { /* zb-h1, dualpipe, dualpipev, 1f1b-a2a */
        ts_buf_puts(b, "\"schedule_figures_s\": {");
        num(b, "f", r->sched_f_s, true);
        num(b, "b", r->sched_b_s, true);
        num(b, "w", r->sched_w_s, true);
        num(b, "pair", r->sched_pair_s, true);
        num(b, "formula_bubble", r->sched_formula_bubble_s, false);
        ts_buf_puts(b, "}, ");
    }
    ts_buf_printf(b, "\"critical_stage\": %d, ", r->critical_stage);
    if (r->stages) {
        ts_buf_printf(b, "\"slowest_stage\": %d, ", r->slowest_stage);
        stall_json(in, r, b);
    }
    const SimMemory *mm = &r->memory;
    ts_buf_puts(b, "\"memory\": {");
    num(b, "weights_bytes", mm->weights_bytes, true);
    num(b, "gradients_bytes", mm->gradients_bytes, true);
    num(b, "optimizer_bytes", mm->optimizer_bytes, true);
    num(b, "activations_bytes", mm->activations_bytes, true);
    num(b, "other_bytes", mm->other_bytes, true);
    num(b, "total_bytes", mm->total_bytes, true);
    num(b, "capacity_bytes", mm->capacity_bytes, true);
    num(b, "min_headroom_bytes", mm->min_headroom_bytes, true);
    ts_buf_printf(b, "\"fits\": %s}, ", mm->fits ? "true" : "false");
    ts_buf_puts(b, "\"breakdown_s\": ");
    breakdown_json(&r->breakdown, b);
    ts_buf_puts(b, ", ");
    stages_json(r, b);
    ts_buf_puts(b, "\"plan\": ");
    plan_json(p, b);
    options_json(in, r, b);
    model_json(in, b);
    cluster_json(in, b);
    if (train) train_json(train, b);
    ts_buf_puts(b, ", \"warnings\": [");
    for (int i = 0; i < r->n_warnings; i++) {
        if (i) ts_buf_puts(b, ", ");
        char w[320];
        rep_sim_warning(r, i, w, sizeof w);
        ts_json_escape(b, w);
    }
    ts_buf_puts(b, "]}\n");
}
