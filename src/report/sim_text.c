/* sim_text.c — the readable summary of `trainsim simulate` (report_sim.h). */
#include "trainsim/report_sim.h"

#include <stdio.h>

static double gib(double b) { return b / 1073741824.0; }

static void tm(TsBuf *b, double s)
{
    if (s >= 1) ts_buf_printf(b, "%9.3f s ", s);
    else if (s >= 1e-3) ts_buf_printf(b, "%9.3f ms", s * 1e3);
    else ts_buf_printf(b, "%9.3f us", s * 1e6);
}

/* The runtime behaviours that differ from sim_options_init, one line ("" when none). */
/* The plan's MoE, FP8, optimizer and recompute-module knobs that differ
 * from the defaults, as phrases (written into buf, pointed to by out). */
static int plan_knob_phrases(const ParallelPlan *p, char buf[4][64], const char **out)
{
    int n = 0;
    if (p->moe_dispatch == PLAN_MOE_DISPATCH_DEEPEP) out[n++] = "DeepEP dispatch";
    if (p->moe_node_limit > 0) {
        snprintf(buf[0], sizeof buf[0], "tokens to at most %lld nodes", (long long)p->moe_node_limit);
        out[n++] = buf[0];
    }
    if (p->moe_imbalance > 1.0) {
        snprintf(buf[1], sizeof buf[1], "MoE imbalance %g", p->moe_imbalance);
        out[n++] = buf[1];
    }
    if (p->moe_capacity > 0) {
        snprintf(buf[2], sizeof buf[2], "capacity factor %g%s", p->moe_capacity, p->moe_pad ? " (padded)" : "");
        out[n++] = buf[2];
    }
    if (p->dtype == TS_DTYPE_FP8 && p->fp8_recipe != PLAN_FP8_DELAYED)
        out[n++] = p->fp8_recipe == PLAN_FP8_BLOCKWISE ? "blockwise FP8 scaling" : "current FP8 scaling";
    if (p->adam_moments == TS_DTYPE_BF16) out[n++] = "bf16 Adam moments";
    if (p->recompute_modules) {
        char mods[48];
        plan_rc_modules_format(p->recompute_modules, mods, sizeof mods);
        snprintf(buf[3], sizeof buf[3], "recompute %s", mods);
        out[n++] = buf[3];
    }
    return n;
}

/* The SM clock the tensor-core work was timed at (sim_tensor_factor): the
 * preset's sustained clock in training, or one GPU's alone, less the
 * slowest GPU's lag; memory-bound kernels keep the HBM's pace. */
static void clock_line(const SimSetup *in, TsBuf *b)
{
    const GpuSpec *g = &in->hw->gpu;
    const int64_t n = in->plan.gpus;
    const bool one = n == 1 && g->single_clock_mhz > 0;
    const double clk = sim_sm_clock_mhz(g, n);
    const double lag = sim_straggler(in->opt.gpu_spread, n);
    if (one || g->sustained_clock_mhz > 0)
        ts_buf_printf(b, "  SM clock              %.0f MHz %s (peak %.0f)", clk,
                      one ? "of one GPU alone" : "sustained in training", g->clock_mhz);
    else if (g->clock_mhz > 0)
        ts_buf_printf(b, "  SM clock              %.0f MHz (peak; no sustained clock: the GPU's efficiencies carry it)",
                      g->clock_mhz);
    else ts_buf_puts(b, "  SM clock              unknown (the GPU file gives none: its efficiencies carry it)");
    if (lag > 0) ts_buf_printf(b, "; the slowest of %lld GPUs %.1f%% behind (--gpu-spread)", (long long)n, 100 * lag);
    ts_buf_puts(b, "\n");
}

static void runtime_line(const SimOptions *o, const ParallelPlan *p, bool moe, TsBuf *b)
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
    if (o->cuda_graphs) part[n++] = sim_cuda_graphs(o, p, moe, NULL) ? "CUDA graphs" : "CUDA graphs (not applied)";
    if (o->balance_stages) part[n++] = "stages balanced by work";
    if (!o->dp_overlap && !ds) part[n++] = "gradient reduction after the backward";
    if (!o->param_gather_overlap && !ds) part[n++] = "parameter gather at the step";
    if (!o->fp32_grad_reduce) part[n++] = "16-bit gradient reduction";
    if (o->bucket_bytes != d.bucket_bytes) part[n++] = "bucket size";
    if (o->overlap_slowdown != d.overlap_slowdown) part[n++] = "overlap slow-down";
    if (o->gpu_spread != d.gpu_spread) part[n++] = "GPU speed spread";
    if (o->cp_comm == SIM_CP_ALLGATHER) part[n++] = "CP K/V all-gather";
    if (o->cp_comm == SIM_CP_A2A) part[n++] = "CP all-to-all (Ulysses)";
    if (o->ce_fusion == SIM_CE_NATIVE) part[n++] = "Megatron-Core's fused cross-entropy";
    if (o->ce_fusion == SIM_CE_TE) part[n++] = "Transformer Engine's fused cross-entropy";
    if (!sim_host_default(o) && plan_hf(p)) part[n++] = "host dispatch time";
    char knobs[4][64];
    int n_opt = n, nk = plan_knob_phrases(p, knobs, &part[n]);
    n += nk;
    if (!n) return;
    ts_buf_puts(b, "runtime (not the defaults):");
    for (int i = 0; i < n; i++) ts_buf_printf(b, "%s %s", i ? "," : "", part[i]);
    ts_buf_printf(b, " (values in --json %s)\n\n",
                  !nk ? "\"options\"" : !n_opt ? "\"plan\"" : "\"options\" and \"plan\"");
}

/* --framework hf, Megatron-Core's MoE layers: the part of compute (or of
 * the optimizer step) the GPU spends idle, waiting for the host to dispatch
 * eager ops (a small model at a small batch) or the MoE layer's calls after
 * its token-count sync. */
static void host_text(const SimResult *r, double wait, const char *what, TsBuf *b)
{
    if (!(wait > 0)) return;
    ts_buf_printf(b, "    %-16s ", "of it host_wait");
    tm(b, wait);
    ts_buf_printf(b, "  %5.1f%%  the GPU idle while the host %s (--host-us)\n",
                  r->iteration_time_s > 0 ? 100 * wait / r->iteration_time_s : 0, what);
}

/* zb-h1, dualpipe, dualpipev: the critical stage's per-micro-batch F, B, W
 * (and F&B pair) and the published bubble on them beside the simulated one. */
static void sched_text(const ParallelPlan *p, const SimResult *r, TsBuf *b)
{
    if (!(r->sched_f_s > 0)) return;
    static const char *const formula[] = {"(p-1)(F+B-2W)", "(p/2-1)(F&B+B-3W)", "(p-1)(F&B+B-3W)", "(p-1)(F+B)"};
    int k = p->schedule == PLAN_SCHED_ZBH1           ? 0
            : p->schedule == PLAN_SCHED_DUALPIPE     ? 1
            : p->schedule == PLAN_SCHED_1F1B_A2A ? 3
                                                     : 2;
    ts_buf_printf(b, "\n%s per micro-batch (critical stage): F %.4g ms, B %.4g ms (W %.4g ms)",
                  plan_sched_name(p->schedule), 1e3 * r->sched_f_s, 1e3 * r->sched_b_s, 1e3 * r->sched_w_s);
    if (r->sched_pair_s > 0) ts_buf_printf(b, ", F&B pair %.4g ms", 1e3 * r->sched_pair_s);
    ts_buf_printf(b, "\n  published bubble %s = %.4g s; simulated bubble %.4g s\n", formula[k],
                  r->sched_formula_bubble_s, r->breakdown.bubble_s);
}

/* When another stage works markedly longer than the critical one (uneven
 * work per stage), the critical stage's bubble is mostly waiting for it:
 * name it and what its busy time holds. */
static void slowest_text(const SimSetup *in, const SimResult *r, TsBuf *b)
{
    SimSlowest sw;
    if (!sim_slowest(r, &sw)) return;
    const SimStageResult *sl = &r->stages[sw.stage];
    double fill, wait;
    sim_critical_bubble(in, r, &fill, &wait);
    ts_buf_printf(b, "\nslowest stage %d (busy %.4g s, the critical stage %.4g s: its bubble is mostly waiting "
                     "for this one):\n",
                  sw.stage, sw.busy_s, sw.critical_busy_s);
    for (int i = 0; i < SIM_BD_COUNT; i++) {
        double v = sim_breakdown_get(&sl->breakdown, i);
        if (!sim_breakdown_busy(i) || v <= 0) continue;
        ts_buf_printf(b, "  %-18s ", sim_breakdown_key(i));
        tm(b, v);
        ts_buf_printf(b, "  %5.1f%%\n", sl->end_s > 0 ? 100 * v / sl->end_s : 0);
    }
    ts_buf_printf(b, "  the critical stage's bubble: %.4g s fill and drain, %.4g s waiting for stage %d, "
                     "whose largest part is %s (%.4g s)\n",
                  fill, wait, sw.stage, sim_breakdown_what(sw.dominant), sw.dominant_s);
}

/* Under --balance-stages, the split the plan ran on and what it evened. */
static void balance_text(const ParallelPlan *p, const SimBalance *bl, TsBuf *b)
{
    if (!bl->n || p->n_stage_layers != bl->n) return;
    ts_buf_puts(b, "\nstages balanced by work: --stage-layers ");
    for (int32_t s = 0; s < bl->n; s++) ts_buf_printf(b, s ? ",%d" : "%d", bl->layers[s]);
    ts_buf_printf(b, " (busiest stage %.4g s per micro-batch, %.4g s on the plan's own split)\n", bl->busiest_s,
                  bl->current_s);
}

/* A duration in the unit that reads best: s, min, h or days. */
static void span(TsBuf *b, double s)
{
    if (s >= 2 * 86400) ts_buf_printf(b, "%.1f days", s / 86400);
    else if (s >= 2 * 3600) ts_buf_printf(b, "%.1f h", s / 3600);
    else if (s >= 120) ts_buf_printf(b, "%.1f min", s / 60);
    else ts_buf_printf(b, "%.3g s", s);
}

static void train_text(const RepTrain *t, TsBuf *b)
{
    const TrainEstimate *e = t->est;
    ts_buf_printf(b, "\ntraining run: %.4g tokens in %.0f steps: ", t->opt->tokens, e->steps);
    span(b, e->wall_s);
    ts_buf_printf(b, " (");
    span(b, e->compute_s);
    ts_buf_printf(b, " of steps at %.1f%% goodput), %.4g GPU-hours", 100 * e->goodput, e->gpu_hours);
    if (t->opt->price_per_gpu_hour > 0)
        ts_buf_printf(b, ", cost %.4g at %g per GPU-hour", e->cost, t->opt->price_per_gpu_hour);
    ts_buf_printf(b, "\n  failures: the job is interrupted every ");
    span(b, e->job_mtbf_s);
    ts_buf_printf(b, " (%g GPU-hours per GPU); each loses half a checkpoint interval, the restart (",
                  t->opt->mtbf_gpu_hours);
    span(b, t->opt->restart_s);
    ts_buf_printf(b, ") and the checkpoint's read\n  checkpoints: %.3g GB of model state, ", e->checkpoint_bytes / 1e9);
    span(b, e->checkpoint_s);
    ts_buf_printf(b, " to write, every ");
    span(b, e->checkpoint_interval_s);
    ts_buf_printf(b, " (Young/Daly: sqrt(2 x write x MTBF))\n");
}

void rep_sim_text(const SimSetup *in, const SimResult *r, const RepTrain *train, TsBuf *b)
{
    const ParallelPlan *p = &in->plan;
    ModelCounts mc;
    model_count_params(in->model, &mc);
    ts_buf_printf(b, "trainsim simulate: %s (%.2f B params) on %lld x %s (%s)%s\n", in->model->name,
                  (double)mc.total / 1e9, (long long)p->gpus, in->hw->gpu.name, in->net->cl.name,
                  hw_software_suffix(&in->hw->gpu));
    if (in->hw->calib) /* the kernel times are the file's where it answers */
        ts_buf_printf(b, "calibration: %d kernel measurements of \"%s\" (--calibration) correct the model's times\n",
                      hw_calib_entries(in->hw->calib), hw_calib_gpu(in->hw->calib));
    char grp[40] = "";
    if (plan_vpp_group_shown(p)) snprintf(grp, sizeof grp, " (groups of %lld)", (long long)plan_vpp_group_shown(p));
    ts_buf_printf(b, "plan: tp %lld, pp %lld, vpp %lld, dp %lld, cp %lld, ep %lld%s, zero %d%s, recompute %s, "
                     "%s%s, micro-batch %lld, global batch %lld (%lld micro-batches), seq %lld, %s%s\n\n",
                  (long long)p->tp, (long long)p->pp, (long long)p->vpp, (long long)p->dp, (long long)p->cp,
                  (long long)p->ep, p->sp ? ", sp" : "", p->zero, p->dist_opt ? ", dist-opt" : "",
                  plan_recompute_name(p->recompute), plan_sched_name(p->schedule), grp, (long long)p->micro_batch,
                  (long long)p->global_batch, (long long)p->grad_accum, (long long)p->seq, ts_dtype_name(p->dtype),
                  p->tp_overlap ? ", tp-overlap" : "");
    TsBuf split = {0}; /* (a split --balance-stages chose is shown with the balance) */
    bool balanced = r->balance.n > 0 && p->n_stage_layers == r->balance.n;
    if (!balanced && plan_split_format(p, in->model->layers, ",", &split))
        ts_buf_printf(b, "layers per chunk (--stage-layers): %s%s\n\n", split.data,
                      plan_chunk_layers(p, in->model->layers, 0) == 0 ||
                              plan_chunk_layers(p, in->model->layers, p->pp * p->vpp - 1) == 0
                          ? " (a chunk of 0: the embedding, or the output and loss, alone)"
                          : "");
    ts_buf_free(&split);
    runtime_line(&in->opt, &in->plan, in->model->experts > 0, b);
    ts_buf_printf(b, "  iteration time        %.4g s\n", r->iteration_time_s);
    ts_buf_printf(b, "  tokens/s              %.0f  (%.1f per GPU, %.2f samples/s)\n", r->tokens_per_s,
                  r->tokens_per_s_per_gpu, r->samples_per_s);
    ts_buf_printf(b, "  TFLOP/s per GPU       %.1f model, %.1f hardware\n", r->model_tflops_per_gpu,
                  r->hardware_tflops_per_gpu);
    /* a dtype without tensor-core support is timed and scored at bf16 (sim_simulate) */
    TsDtype pk = hw_usable_dtype(&in->hw->gpu, p->dtype);
    ts_buf_printf(b, "  MFU / HFU             %.1f%% / %.1f%%  (of %s peak%s)\n", 100 * r->mfu, 100 * r->hfu,
                  ts_dtype_name(pk), in->opt.mfu_causal ? "; attention causal-halved" : "");
    clock_line(in, b);
    const SimMemory *mm = &r->memory;
    char asked[64] = "";
    if (mm->min_headroom_bytes > 0) snprintf(asked, sizeof asked, ", %.1f GiB to keep free", gib(mm->min_headroom_bytes));
    ts_buf_printf(b, "  memory per GPU        %.1f GiB of %.1f GiB%s%s  (weights %.1f, grads %.1f, optimizer %.1f, "
                     "activations %.1f, other %.1f)\n",
                  gib(mm->total_bytes), gib(mm->capacity_bytes), asked, mm->fits ? "" : "  DOES NOT FIT",
                  gib(mm->weights_bytes), gib(mm->gradients_bytes), gib(mm->optimizer_bytes),
                  gib(mm->activations_bytes), gib(mm->other_bytes));
    ts_buf_printf(b, "\nwhere the time goes (critical stage %d of %d):\n", r->critical_stage, r->n_stages);
    for (int i = 0; i < SIM_BD_COUNT; i++) {
        double v = sim_breakdown_get(&r->breakdown, i);
        ts_buf_printf(b, "  %-18s ", sim_breakdown_key(i));
        tm(b, v);
        ts_buf_printf(b, "  %5.1f%%\n", r->iteration_time_s > 0 ? 100 * v / r->iteration_time_s : 0);
        if (i == SIM_BD_compute_s)
            host_text(r, r->host_wait_s,
                      plan_hf(p) ? "dispatches eager ops" : "dispatches the MoE layers' calls after their sync", b);
        if (i == SIM_BD_optimizer_s) host_text(r, r->host_wait_optimizer_s, "walks the parameter tensors", b);
    }
    sched_text(p, r, b);
    slowest_text(in, r, b);
    balance_text(&in->plan, &r->balance, b);
    if (train) train_text(train, b);
    for (int i = 0; i < r->n_warnings; i++) {
        char w[320];
        rep_sim_warning(r, i, w, sizeof w);
        ts_buf_printf(b, "warning: %s\n", w);
    }
}
