/* summary.c — the readable summary and the JSON of `trainsim simulate`. */
#include <math.h>
#include <string.h>

#include "trainsim/sim.h"

static double gib(double b) { return b / 1073741824.0; }

static void plan_json(const ParallelPlan *p, TsBuf *b)
{
    ts_buf_printf(b,
                  "{\"gpus\": %lld, \"tp\": %lld, \"pp\": %lld, \"vpp\": %lld, \"dp\": %lld, \"cp\": %lld, "
                  "\"ep\": %lld, \"etp\": %lld, \"sp\": %s, \"zero\": %d, \"dist_opt\": %s, \"optimizer\": \"%s\", "
                  "\"recompute\": \"%s\", \"flash_attn\": %s, \"tp_overlap\": %s, \"micro_batch\": %lld, "
                  "\"global_batch\": %lld, \"seq\": %lld, \"dtype\": \"%s\", \"framework\": \"%s\", "
                  "\"precision\": \"%s\", \"schedule\": \"%s\", \"grad_accum\": %lld}",
                  (long long)p->gpus, (long long)p->tp, (long long)p->pp, (long long)p->vpp, (long long)p->dp,
                  (long long)p->cp, (long long)p->ep, (long long)p->etp, p->sp ? "true" : "false", p->zero,
                  p->dist_opt ? "true" : "false", p->optimizer == PLAN_OPTIM_SHAMPOO ? "shampoo" : "adam",
                  plan_recompute_name(p->recompute), p->flash_attn ? "true" : "false",
                  p->tp_overlap ? "true" : "false", (long long)p->micro_batch, (long long)p->global_batch,
                  (long long)p->seq, ts_dtype_name(p->dtype), plan_framework_name(p->framework),
                  plan_precision_name(p->precision), plan_sched_name(p->schedule),
                  (long long)p->grad_accum);
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

void sim_result_json(const SimSetup *in, const SimResult *r, TsBuf *b)
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
    ts_buf_printf(b, "\"critical_stage\": %d, ", r->critical_stage);
    if (r->stages) ts_buf_printf(b, "\"slowest_stage\": %d, ", r->slowest_stage);
    const SimMemory *mm = &r->memory;
    ts_buf_puts(b, "\"memory\": {");
    num(b, "weights_bytes", mm->weights_bytes, true);
    num(b, "gradients_bytes", mm->gradients_bytes, true);
    num(b, "optimizer_bytes", mm->optimizer_bytes, true);
    num(b, "activations_bytes", mm->activations_bytes, true);
    num(b, "other_bytes", mm->other_bytes, true);
    num(b, "total_bytes", mm->total_bytes, true);
    num(b, "capacity_bytes", mm->capacity_bytes, true);
    ts_buf_printf(b, "\"fits\": %s}, ", mm->fits ? "true" : "false");
    ts_buf_puts(b, "\"breakdown_s\": ");
    breakdown_json(&r->breakdown, b);
    ts_buf_puts(b, ", ");
    stages_json(r, b);
    ts_buf_puts(b, "\"plan\": ");
    plan_json(p, b);
    const SimOptions *o = &in->opt;
    const bool ds = plan_ds_pipe(p);
    ts_buf_printf(b, ", \"options\": {\"pipeline_engine\": \"%s\", \"dp_overlap\": %s, \"param_gather_overlap\": %s, "
                     "\"grad_reduce_dtype\": \"%s\", \"bucket_bytes\": %.17g, \"overlap_slowdown\": %.17g, "
                     "\"model_code\": \"%s\", \"selective_recompute\": \"%s\", \"gpu_spread\": %.17g, "
                     "\"cp_comm\": \"%s\", \"experts\": \"%s\"}",
                  ds ? "deepspeed" : "megatron", o->dp_overlap && !ds ? "true" : "false",
                  o->param_gather_overlap && !ds ? "true" : "false", o->fp32_grad_reduce ? "fp32" : "16-bit",
                  sim_dp_bucket_bytes(o, p->dp * p->cp), o->overlap_slowdown,
                  plan_hf(p) ? "hf" : plan_eager(p) ? "eager" : "fused",
                  o->selective_ops ? "ops" : "attention", o->gpu_spread, sim_cp_comm_name(o->cp_comm),
                  o->sequential_experts ? "sequential" : "grouped");
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
    const ClusterSpec *cl = &in->net->cl;
    ts_buf_puts(b, ", \"cluster\": {\"name\": ");
    ts_json_escape(b, cl->name);
    ts_buf_puts(b, ", \"gpu\": ");
    ts_json_escape(b, in->hw->gpu.name);
    ts_buf_printf(b, ", \"gpus\": %lld, \"nodes\": %lld, \"gpus_per_node\": %lld}", (long long)p->gpus,
                  (long long)((p->gpus + cl->gpus_per_node - 1) / (cl->gpus_per_node > 0 ? cl->gpus_per_node : 1)),
                  (long long)cl->gpus_per_node);
    ts_buf_puts(b, ", \"warnings\": [");
    for (int i = 0; i < r->n_warnings; i++) {
        if (i) ts_buf_puts(b, ", ");
        ts_json_escape(b, r->warnings[i]);
    }
    ts_buf_puts(b, "]}\n");
}

static void tm(TsBuf *b, double s)
{
    if (s >= 1) ts_buf_printf(b, "%9.3f s ", s);
    else if (s >= 1e-3) ts_buf_printf(b, "%9.3f ms", s * 1e3);
    else ts_buf_printf(b, "%9.3f us", s * 1e6);
}

/* The runtime behaviours that differ from sim_options_init, one line ("" when none). */
static void runtime_line(const SimOptions *o, const ParallelPlan *p, TsBuf *b)
{
    SimOptions d;
    sim_options_init(&d);
    const char *part[16];
    int n = 0;
    const bool ds = plan_ds_pipe(p);
    if (ds) part[n++] = "DeepSpeed pipeline engine";
    if (plan_hf(p)) part[n++] = "HuggingFace transformers modules (eager)";
    else if (plan_eager(p)) part[n++] = "eager PyTorch model code";
    if (p->precision == PLAN_PRECISION_AMP) part[n++] = "fp32 parameters with autocast (amp)";
    if (p->precision == PLAN_PRECISION_PURE) part[n++] = "all-16-bit parameters and optimizer (pure)";
    if (o->selective_ops) part[n++] = "op-level selective recompute";
    if (o->sequential_experts) part[n++] = "sequential experts";
    if (!o->dp_overlap && !ds) part[n++] = "gradient reduction after the backward";
    if (!o->param_gather_overlap && !ds) part[n++] = "parameter gather at the step";
    if (!o->fp32_grad_reduce) part[n++] = "16-bit gradient reduction";
    if (o->bucket_bytes != d.bucket_bytes) part[n++] = "bucket size";
    if (o->overlap_slowdown != d.overlap_slowdown) part[n++] = "overlap slow-down";
    if (o->gpu_spread != d.gpu_spread) part[n++] = "GPU speed spread";
    if (o->cp_comm == SIM_CP_ALLGATHER) part[n++] = "CP K/V all-gather";
    if (o->cp_comm == SIM_CP_A2A) part[n++] = "CP all-to-all (Ulysses)";
    if (!n) return;
    ts_buf_puts(b, "runtime (not the defaults):");
    for (int i = 0; i < n; i++) ts_buf_printf(b, "%s %s", i ? "," : "", part[i]);
    ts_buf_puts(b, " (values in --json \"options\")\n\n");
}

/* When another stage works markedly longer than the critical one (uneven
 * work per stage), the critical stage's bubble is mostly waiting for it:
 * name it and what its busy time holds. */
static void slowest_text(const SimResult *r, TsBuf *b)
{
    if (!r->stages || r->n_stages < 2 || r->slowest_stage == r->critical_stage) return;
    const SimStageResult *sl = &r->stages[r->slowest_stage], *cr = &r->stages[r->critical_stage];
    if (!(sl->busy_s > 1.05 * cr->busy_s)) return;
    ts_buf_printf(b, "\nslowest stage %d (busy %.4g s, the critical stage %.4g s: its bubble is mostly waiting "
                     "for this one):\n",
                  r->slowest_stage, sl->busy_s, cr->busy_s);
    static const int busy_part[] = {SIM_BD_compute_s,         SIM_BD_recompute_s,        SIM_BD_tp_comm_exposed_s,
                                    SIM_BD_cp_comm_exposed_s, SIM_BD_ep_comm_exposed_s,  SIM_BD_pp_comm_exposed_s,
                                    SIM_BD_dp_comm_exposed_s, SIM_BD_overlap_slowdown_s};
    for (size_t i = 0; i < sizeof busy_part / sizeof busy_part[0]; i++) {
        double v = sim_breakdown_get(&sl->breakdown, busy_part[i]);
        if (v <= 0) continue;
        ts_buf_printf(b, "  %-18s ", sim_breakdown_key(busy_part[i]));
        tm(b, v);
        ts_buf_printf(b, "  %5.1f%%\n", sl->end_s > 0 ? 100 * v / sl->end_s : 0);
    }
}

void sim_result_text(const SimSetup *in, const SimResult *r, TsBuf *b)
{
    const ParallelPlan *p = &in->plan;
    ModelCounts mc;
    model_count_params(in->model, &mc);
    ts_buf_printf(b, "trainsim simulate: %s (%.2f B params) on %lld x %s (%s)\n", in->model->name,
                  (double)mc.total / 1e9, (long long)p->gpus, in->hw->gpu.name, in->net->cl.name);
    ts_buf_printf(b, "plan: tp %lld, pp %lld, vpp %lld, dp %lld, cp %lld, ep %lld%s, zero %d%s, recompute %s, "
                     "%s, micro-batch %lld, global batch %lld (%lld micro-batches), seq %lld, %s%s\n\n",
                  (long long)p->tp, (long long)p->pp, (long long)p->vpp, (long long)p->dp, (long long)p->cp,
                  (long long)p->ep, p->sp ? ", sp" : "", p->zero, p->dist_opt ? ", dist-opt" : "",
                  plan_recompute_name(p->recompute), plan_sched_name(p->schedule), (long long)p->micro_batch,
                  (long long)p->global_batch, (long long)p->grad_accum, (long long)p->seq, ts_dtype_name(p->dtype),
                  p->tp_overlap ? ", tp-overlap" : "");
    runtime_line(&in->opt, &in->plan, b);
    ts_buf_printf(b, "  iteration time        %.4g s\n", r->iteration_time_s);
    ts_buf_printf(b, "  tokens/s              %.0f  (%.1f per GPU, %.2f samples/s)\n", r->tokens_per_s,
                  r->tokens_per_s_per_gpu, r->samples_per_s);
    ts_buf_printf(b, "  TFLOP/s per GPU       %.1f model, %.1f hardware\n", r->model_tflops_per_gpu,
                  r->hardware_tflops_per_gpu);
    /* a dtype without tensor-core support is timed and scored at bf16 (sim_simulate) */
    TsDtype pk = hw_usable_dtype(&in->hw->gpu, p->dtype);
    ts_buf_printf(b, "  MFU / HFU             %.1f%% / %.1f%%  (of %s peak)\n", 100 * r->mfu, 100 * r->hfu,
                  ts_dtype_name(pk));
    const SimMemory *mm = &r->memory;
    ts_buf_printf(b, "  memory per GPU        %.1f GiB of %.1f GiB%s  (weights %.1f, grads %.1f, optimizer %.1f, "
                     "activations %.1f, other %.1f)\n",
                  gib(mm->total_bytes), gib(mm->capacity_bytes), mm->fits ? "" : "  DOES NOT FIT",
                  gib(mm->weights_bytes), gib(mm->gradients_bytes), gib(mm->optimizer_bytes),
                  gib(mm->activations_bytes), gib(mm->other_bytes));
    ts_buf_printf(b, "\nwhere the time goes (critical stage %d of %d):\n", r->critical_stage, r->n_stages);
    for (int i = 0; i < SIM_BD_COUNT; i++) {
        double v = sim_breakdown_get(&r->breakdown, i);
        ts_buf_printf(b, "  %-18s ", sim_breakdown_key(i));
        tm(b, v);
        ts_buf_printf(b, "  %5.1f%%\n", r->iteration_time_s > 0 ? 100 * v / r->iteration_time_s : 0);
    }
    slowest_text(r, b);
    for (int i = 0; i < r->n_warnings; i++) ts_buf_printf(b, "warning: %s\n", r->warnings[i]);
}
