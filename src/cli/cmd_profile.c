/* trainsim profile — FLOPs / params / latency profile in the layout of the
 * DeepSpeed Flops Profiler, then exact training FLOPs next to the closed
 * forms. --json writes every module with its figures instead. */
#include "cli.h"
#include "cli_hw.h"

#include "trainsim/report.h"

#include <string.h>

int cmd_profile(int argc, char **argv)
{
    CliSpec s = {.cmd = "profile",
                 .usage = "trainsim profile [--model M] [model flags] [--batch B] [--seq S] [options]",
                 .summary = "Profile a model's forward pass the way the DeepSpeed Flops Profiler prints it\n"
                            "(summary, aggregated profile per depth, detailed module tree), with forward\n"
                            "latencies from the compute model of the chosen GPU (tile/wave-quantized GEMMs,\n"
                            "flash attention, memory-bound ops, launch overhead; --calibration FILE corrects\n"
                            "it with measured kernel times), then the exact training FLOPs for each\n"
                            "recompute mode next to the Narayanan 2021 / Korthikanti 2022 closed forms."};
    CliModel cm;
    cli_model_init(&cm);
    cli_model_add(&s, &cm);
    int64_t batch = 1, seq = 0, depth = -1, top = 1, step = 1;
    bool no_detailed = false, json = false, causal = false, no_flash = false;
    const char *output = NULL, *gpu = "h100-sxm5-80gb", *dtype = "bf16", *recompute = "none", *calib = NULL;
    const char *software = NULL;
    cli_add(&s, "batch", CLI_INT, &batch, "B", "micro-batch size (sequences), default 1");
    cli_add(&s, "seq", CLI_INT, &seq, "S", "sequence length, default min(max positions, 4096)");
    cli_add(&s, "module-depth", CLI_INT, &depth, "D", "aggregated profile depths 0..D-1 (-1: all but the innermost)");
    cli_add(&s, "top-modules", CLI_INT, &top, "K", "classes shown per depth, default 1");
    cli_add(&s, "no-detailed", CLI_FLAG, &no_detailed, NULL, "leave out the detailed module tree");
    cli_add(&s, "profile-step", CLI_INT, &step, "N", "step number printed in the summary, default 1");
    cli_add(&s, "gpu", CLI_STR, &gpu, "NAME", "GPU preset for latencies, default h100-sxm5-80gb (as every command)");
    cli_add(&s, "dtype", CLI_STR, &dtype, "T", "fp32|tf32|bf16|fp16|fp8, default bf16");
    cli_add(&s, "calibration", CLI_STR, &calib, "FILE", "measured kernel times (tools/calibrate) correcting the model");
    cli_hw_add_software(&s, &software);
    cli_add(&s, "recompute", CLI_STR, &recompute, "R", "none|selective|full: the training row marked");
    cli_add(&s, "causal", CLI_FLAG, &causal, NULL, "exact FLOPs skip the masked half of causal attention");
    cli_add(&s, "no-flash", CLI_FLAG, &no_flash, NULL, "unfused attention core (Megatron/DeepSpeed namings)");
    cli_add(&s, "json", CLI_FLAG, &json, NULL, "write JSON (every module) instead of the text report");
    cli_add(&s, "output", CLI_STR, &output, "FILE", "write to FILE (atomically) instead of stdout");
    int rc = cli_parse(&s, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;

    RepProfileOptions po;
    rep_profile_options_init(&po);
    if (!plan_recompute_parse(recompute, &po.recompute)) {
        fprintf(stderr, "trainsim profile: unknown value '%s' for --recompute (expected none, selective or full)\n",
                recompute);
        return 2;
    }
    TsDtype dt;
    if (!ts_dtype_parse(dtype, &dt)) {
        fprintf(stderr, "trainsim profile: unknown value '%s' for --dtype (expected fp32, tf32, bf16, fp16 or fp8)\n",
                dtype);
        return 2;
    }
    po.module_depth = depth;
    po.top_modules = top;
    po.detailed = !no_detailed;
    po.profile_step = step;

    ModelSpec m;
    rc = cli_model_load(&cm, "gpt2", &m);
    if (rc) return rc;
    GraphOptions o;
    graph_options_init(&o);
    rc = cli_naming(&cm, &m, &o.naming);
    if (rc) return rc;
    o.naming_set = true;
    o.batch = batch;
    o.seq = seq;
    o.dtype_bytes = ts_dtype_bytes(dt);
    o.causal = causal;
    o.flash = !no_flash;
    TsError err = {0};
    RepCompute comp;
    if (rep_compute_init(&comp, gpu, dt, &err) != TS_OK) return cli_fail(&err);
    cli_hw_software(software, &comp.hw.gpu);
    HwCalib *cal = NULL;
    if (calib && hw_calib_load(calib, &cal, &err) != TS_OK) return cli_fail(&err);
    if (cal) cli_calib_gpu_check(calib, cal, &comp.hw.gpu);
    comp.hw.calib = cal;
    ModuleGraph *g;
    if (graph_build(&m, &o, &g, &err) != TS_OK) {
        hw_calib_free(cal);
        return cli_fail(&err);
    }
    TsBuf b = {0};
    if (json)
        rep_profile_json(g, &comp, &po, &b);
    else
        rep_profile_text(g, &comp, &po, &b);
    graph_destroy(g);
    hw_calib_free(cal);
    rc = cli_emit(output, &b);
    ts_buf_free(&b);
    return rc;
}
