/* trainsim simulate — predict one training iteration (sim.h).
 *
 * With no options: GPT-3 175B on 1024 H100s (dgx-h100), TP 8, PP 8, DP 16,
 * global batch 1536, micro-batch 1, seq 2048, SP, distributed optimizer,
 * bf16, 1F1B. */
#include <string.h>

#include "cli.h"
#include "trainsim/report_html.h"
#include "trainsim/report_trace.h"
#include "trainsim/sim.h"

#define DEFAULT_MODEL "gpt3-175b"
#define DEFAULT_CLUSTER "dgx-h100"

typedef struct SimCli {
    int64_t tp, pp, vpp, dp, cp, ep, etp, gpus, micro, global, seq, zero, blocks;
    bool sp, no_sp, dist_opt, tp_overlap, no_flash, json;
    bool no_dp_overlap, no_ag_overlap, fp16_grads;
    const char *recompute, *schedule, *optimizer, *dtype, *gpu, *cluster, *trace, *workload, *busbw, *html;
    double bucket_mb, slowdown;
} SimCli;

static int bad(const char *opt, const char *val, const char *expect)
{
    fprintf(stderr, "trainsim: invalid value '%s' for --%s (expected %s)\n", val, opt, expect);
    return 2;
}

int cmd_simulate(int argc, char **argv)
{
    CliSpec s = {.cmd = "simulate",
                 .usage = "trainsim simulate [--model M] [model flags] [plan flags] [--gpu G] [--cluster C] "
                          "[--gpus N] [--seq S] [--json] [--trace FILE] [--workload FILE]",
                 .summary = "Simulate one training iteration: pipeline schedule, communication overlap, optimizer "
                            "step. Prints iteration time, tokens/s, MFU/HFU, memory per GPU and where the time "
                            "goes. With no options: GPT-3 175B on 1024 H100s, TP 8, PP 8, DP 16, global batch "
                            "1536."};
    CliModel cm;
    cli_model_init(&cm);
    cli_model_add(&s, &cm);
    SimCli o = {.tp = -1, .pp = -1, .vpp = -1, .dp = -1, .cp = -1, .ep = -1, .etp = -1, .gpus = -1,
                .micro = -1, .global = -1, .seq = -1, .zero = -1, .blocks = -1, .bucket_mb = -1, .slowdown = -1};
    cli_add(&s, "tp", CLI_INT, &o.tp, "N", "tensor parallel size");
    cli_add(&s, "pp", CLI_INT, &o.pp, "N", "pipeline stages");
    cli_add(&s, "vpp", CLI_INT, &o.vpp, "N", "model chunks per stage (interleaved 1F1B when > 1)");
    cli_add(&s, "dp", CLI_INT, &o.dp, "N", "data parallel size (default: gpus / (tp*pp*cp))");
    cli_add(&s, "cp", CLI_INT, &o.cp, "N", "context parallel size");
    cli_add(&s, "ep", CLI_INT, &o.ep, "N", "expert parallel size");
    cli_add(&s, "etp", CLI_INT, &o.etp, "N", "expert tensor parallel size (default tp)");
    cli_add(&s, "gpus", CLI_INT, &o.gpus, "N", "GPUs in the job");
    cli_add(&s, "micro-batch", CLI_INT, &o.micro, "N", "sequences per micro-batch");
    cli_add(&s, "global-batch", CLI_INT, &o.global, "N", "sequences per iteration");
    cli_add(&s, "seq", CLI_INT, &o.seq, "S", "sequence length");
    cli_add(&s, "sp", CLI_FLAG, &o.sp, NULL, "sequence parallelism (default when tp > 1)");
    cli_add(&s, "no-sp", CLI_FLAG, &o.no_sp, NULL, "no sequence parallelism");
    cli_add(&s, "zero", CLI_INT, &o.zero, "0-3", "ZeRO stage (3 = FSDP)");
    cli_add(&s, "dist-opt", CLI_FLAG, &o.dist_opt, NULL, "Megatron distributed optimizer");
    cli_add(&s, "recompute", CLI_STR, &o.recompute, "R", "none|selective|full");
    cli_add(&s, "schedule", CLI_STR, &o.schedule, "S", "1f1b|interleaved|gpipe");
    cli_add(&s, "optimizer", CLI_STR, &o.optimizer, "O", "adam|shampoo");
    cli_add(&s, "shampoo-blocks", CLI_INT, &o.blocks, "K", "Shampoo blocks per weight dimension");
    cli_add(&s, "dtype", CLI_STR, &o.dtype, "T", "bf16|fp16|fp8|fp32");
    cli_add(&s, "tp-overlap", CLI_FLAG, &o.tp_overlap, NULL, "overlap TP communication with GEMMs");
    cli_add(&s, "no-flash", CLI_FLAG, &o.no_flash, NULL, "unfused attention (S^2 scores in memory)");
    cli_add(&s, "no-dp-overlap", CLI_FLAG, &o.no_dp_overlap, NULL, "gradient reduction after the backward");
    cli_add(&s, "no-param-gather-overlap", CLI_FLAG, &o.no_ag_overlap, NULL,
            "dist-opt parameter all-gather exposed at the step");
    cli_add(&s, "fp16-grad-reduce", CLI_FLAG, &o.fp16_grads, NULL, "reduce gradients at 16 bit (default fp32)");
    cli_add(&s, "bucket-mb", CLI_DOUBLE, &o.bucket_mb, "MB", "DP gradient bucket size (default 40)");
    cli_add(&s, "overlap-slowdown", CLI_DOUBLE, &o.slowdown, "F", "compute slow-down under overlap (0.10)");
    cli_add(&s, "gpu", CLI_STR, &o.gpu, "G", "GPU preset (overrides the cluster's)");
    cli_add(&s, "cluster", CLI_STR, &o.cluster, "C", "cluster preset (default dgx-h100)");
    cli_add(&s, "json", CLI_FLAG, &o.json, NULL, "JSON output");
    cli_add(&s, "trace", CLI_STR, &o.trace, "FILE", "write a Chrome trace (Perfetto, chrome://tracing)");
    cli_add(&s, "html", CLI_STR, &o.html, "FILE", "write a self-contained HTML report (timeline, breakdown, memory)");
    cli_add(&s, "workload", CLI_STR, &o.workload, "FILE", "simulate an imported SimAI/ASTRA-sim/op-table workload");
    int rc = cli_parse(&s, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;

    ModelSpec m;
    bool defaults = !cm.model && !cm.arch;
    rc = cli_model_load(&cm, DEFAULT_MODEL, &m);
    if (rc) return rc;

    ParallelPlan p;
    plan_init(&p);
    if (defaults && o.tp < 0 && o.pp < 0 && o.gpus < 0) {
        p.tp = 8;
        p.pp = 8;
        p.gpus = 1024;
        p.global_batch = 1536;
        p.seq = 2048;
        p.dist_opt = true;
    }
    if (o.tp > 0) p.tp = o.tp;
    if (o.pp > 0) p.pp = o.pp;
    if (o.vpp > 0) p.vpp = o.vpp;
    if (o.cp > 0) p.cp = o.cp;
    if (o.ep > 0) p.ep = o.ep;
    if (o.etp > 0) p.etp = o.etp;
    if (o.dp > 0) p.dp = o.dp;
    if (o.gpus > 0) p.gpus = o.gpus;
    if (o.micro > 0) p.micro_batch = o.micro;
    if (o.global > 0) p.global_batch = o.global;
    if (o.seq > 0) p.seq = o.seq;
    if (o.zero >= 0) p.zero = (int)o.zero;
    if (o.blocks > 0) p.shampoo_blocks = o.blocks;
    if (o.dist_opt) p.dist_opt = true;
    if (o.sp || o.no_sp) {
        p.sp = o.sp && !o.no_sp;
        p.sp_set = true;
    }
    p.tp_overlap = o.tp_overlap;
    if (o.no_flash) p.flash_attn = false;
    if (o.recompute && !plan_recompute_parse(o.recompute, &p.recompute))
        return bad("recompute", o.recompute, "none, selective or full");
    if (o.schedule && !plan_sched_parse(o.schedule, &p.schedule))
        return bad("schedule", o.schedule, "1f1b, interleaved or gpipe");
    if (p.vpp > 1 && !o.schedule) p.schedule = PLAN_SCHED_INTERLEAVED;
    if (o.optimizer) {
        if (strcmp(o.optimizer, "adam") == 0) p.optimizer = PLAN_OPTIM_ADAM;
        else if (strcmp(o.optimizer, "shampoo") == 0) p.optimizer = PLAN_OPTIM_SHAMPOO;
        else return bad("optimizer", o.optimizer, "adam or shampoo");
    }
    if (o.dtype && !ts_dtype_parse(o.dtype, &p.dtype)) return bad("dtype", o.dtype, "bf16, fp16, fp8, fp32 or tf32");

    int64_t gpus = p.gpus > 0 ? p.gpus : p.tp * p.pp * p.cp * (p.dp > 0 ? p.dp : 1);
    TsError err = {0};
    ClusterSpec cl;
    if (hw_cluster_load(o.cluster ? o.cluster : DEFAULT_CLUSTER, gpus, &cl, &err) != TS_OK) return cli_fail(&err);
    if (o.gpu && hw_gpu_load(o.gpu, &cl.gpu, &err) != TS_OK) return cli_fail(&err);
    HwModel hw;
    hw_model_init(&hw);
    hw.gpu = cl.gpu;
    HwNet net;
    hw_net_init(&net, &cl);

    SimSetup in = {.model = &m, .plan = p, .hw = &hw, .net = &net};
    sim_options_init(&in.opt);
    if (o.no_dp_overlap) in.opt.dp_overlap = false;
    if (o.no_ag_overlap) in.opt.param_gather_overlap = false;
    if (o.fp16_grads) in.opt.fp32_grad_reduce = false;
    if (o.bucket_mb > 0) in.opt.bucket_bytes = o.bucket_mb * 1e6;
    if (o.slowdown >= 0) in.opt.overlap_slowdown = o.slowdown;
    in.opt.record = o.trace != NULL || o.html != NULL;

    SimResult r;
    if (sim_simulate(&in, NULL, &r, &err) != TS_OK) return cli_fail(&err);
    TsBuf out = {0};
    int code = 0;
    if (o.trace) {
        TsBuf tb = {0};
        char title[160];
        snprintf(title, sizeof title, "%s tp%lld pp%lld vpp%lld dp%lld", m.name, (long long)in.plan.tp,
                 (long long)in.plan.pp, (long long)in.plan.vpp, (long long)in.plan.dp);
        int64_t lpc = m.layers / (in.plan.pp * in.plan.vpp);
        rep_trace_chrome(&r, title, lpc, &tb);
        if (tb.oom || ts_write_file_atomic(o.trace, tb.data, tb.len, &err) != TS_OK) {
            ts_buf_free(&tb);
            sim_result_free(&r);
            if (tb.oom) ts_err(&err, TS_ERR_INTERNAL, "out of memory writing the trace");
            return cli_fail(&err);
        }
        ts_buf_free(&tb);
    }
    if (o.html) {
        TsArena *a = ts_arena_create(1 << 16);
        RepPlanView v;
        TsBuf hb = {0};
        char title[200];
        snprintf(title, sizeof title, "%s on %lld x %s", m.name, (long long)gpus, cl.gpu.name);
        TsStatus hs = a ? rep_plan_view_from_sim(&in, &r, title, a, &v, &err) : ts_err(&err, TS_ERR_INTERNAL, "out of memory");
        if (hs == TS_OK) v.generator = "trainsim " TRAINSIM_VERSION " simulate";
        if (hs == TS_OK) hs = rep_html_plan(&v, &hb, &err);
        if (hs == TS_OK) hs = ts_write_file_atomic(o.html, hb.data, hb.len, &err);
        ts_buf_free(&hb);
        ts_arena_destroy(a);
        if (hs != TS_OK) {
            sim_result_free(&r);
            return cli_fail(&err);
        }
    }
    if (o.json) sim_result_json(&in, &r, &out);
    else sim_result_text(&in, &r, &out);
    code = cli_emit(NULL, &out);
    ts_buf_free(&out);
    sim_result_free(&r);
    return code;
}
