/* cli_sim.c — the SimOptions option group (cli_sim.h). */
#include "cli_sim.h"

#include "trainsim/cost.h"

#include <stdlib.h>
#include <string.h>

/* COST_HOST_MCORE as the help text shows it */
#define STR_(x) #x
#define STR(x) STR_(x)
#define MCORE_HOST STR(COST_HOST_MCORE)

void cli_sim_init(CliSim *o)
{
    *o = (CliSim){.bucket_bytes = -1, .slowdown = -1, .spread = -1, .pair_share = -1};
}

/* The options, in help order; `wl`: the workload generator writes it too;
 * the sweep takes --cp-comm as a list of its own. */
static void add_options(CliSpec *s, CliSim *o, bool workload_only, bool no_cp_comm)
{
    const struct {
        const char *name;
        CliKind kind;
        void *dst;
        const char *metavar, *help;
        bool wl;
    } T[] = {
        {"no-dp-overlap", CLI_FLAG, &o->no_dp_overlap, NULL, "gradient reduction after the backward", true},
        {"no-param-gather-overlap", CLI_FLAG, &o->no_ag_overlap, NULL,
         "dist-opt parameter all-gather exposed at the step", true},
        {"fp16-grad-reduce", CLI_FLAG, &o->fp16_grads, NULL, "reduce gradients at 16 bit (default fp32)", true},
        {"deepspeed-pipe", CLI_FLAG, &o->ds_pipe, NULL,
         "DeepSpeed pipeline engine: blocking p2p, grads all-reduced after the flush", true},
        {"bucket-mb", CLI_BYTES, &o->bucket_bytes, "MB",
         "DP gradient bucket in MB of gradients, or a size as 64MiB (default: Megatron's max(40M, 1M x DP) elements)",
         true},
        {"overlap-slowdown", CLI_DOUBLE, &o->slowdown, "F", "compute slow-down under overlap (0.10)", false},
        {"pair-sm-share", CLI_DOUBLE, &o->pair_share, "F",
         "dualpipe(v): the SMs' share the all-to-alls hold while an F&B pair runs (20/132, DeepSeek-V3 on H800)",
         true},
        {"eager-pytorch", CLI_FLAG, &o->eager, NULL,
         "eager PyTorch model code (torchtitan): unfused norm/RoPE/SwiGLU, separate q/k/v and w1/w3 GEMMs", true},
        {"selective-ops", CLI_FLAG, &o->sel_ops, NULL, CLI_SEL_OPS_HELP, true},
        {"balance-stages", CLI_FLAG, &o->balance, NULL,
         "run a plan without --stage-layers on the split of the layers that evens the stages' work, when faster",
         false},
        {"sequential-experts", CLI_FLAG, &o->seq_experts, NULL,
         "MoE: a rank's experts one GEMM each, one after another (Megatron SequentialMLP; default: grouped GEMM)",
         true},
        {"cuda-graphs", CLI_FLAG, &o->graphs, NULL,
         "Megatron-Core's layer CUDA graphs (--cuda-graph-impl local): no host dispatch; MoE layers only with "
         "static shapes (--moe-capacity-factor, --moe-pad-to-capacity), no activation recompute",
         true},
        {"gpu-spread", CLI_DOUBLE, &o->spread, "F",
         "speed spread among a node's GPUs (0.05); a synchronous job runs at its slowest GPU", true},
        {"cp-comm", CLI_STR, &o->cp_comm, "MODE", CLI_CP_COMM_HELP, true},
        {"ce-fusion", CLI_STR, &o->ce_fusion, "K", CLI_CE_FUSION_HELP, true},
        {"host-us", CLI_STR, &o->host_us, "F[,B]",
         "--framework hf and Megatron-Core's MoE layers: the host's time to dispatch an eager op, "
         "forward[,backward] in us (24,25.2; module "
         "calls, casts and loops scale with it, Megatron-Core's MoE calls take " MCORE_HOST "x it; one value scales both: set "
         "it from a host-bound step of your own)",
         true},
        {"grads-freed", CLI_FLAG, &o->grads_freed, NULL, CLI_GRADS_FREED_HELP, true},
        {"mfu-convention", CLI_STR, &o->mfu, "C",
         "full|causal: attention in model FLOPs (MFU) as the full square (Megatron, torchtitan; default) or "
         "causal-halved",
         false},
    };
    for (size_t i = 0; i < sizeof T / sizeof T[0]; i++)
        if ((T[i].wl || !workload_only) && !(no_cp_comm && T[i].dst == &o->cp_comm))
            cli_add(s, T[i].name, T[i].kind, T[i].dst, T[i].metavar, T[i].help);
}

void cli_sim_add(CliSpec *s, CliSim *o) { add_options(s, o, false, false); }

void cli_sim_add_workload(CliSpec *s, CliSim *o) { add_options(s, o, true, false); }

void cli_sim_add_sweep(CliSpec *s, CliSim *o) { add_options(s, o, false, true); }

/* "invalid value 'V' for --opt" with `hint`, printed; 2. */
static int bad_value(const char *opt, const char *val, const char *hint)
{
    TsError e = {0};
    ts_err(&e, TS_ERR_USAGE, "invalid value '%s' for --%s", val, opt);
    ts_err_hint(&e, "%s", hint);
    return cli_fail(&e);
}

int cli_sim_check(const CliSpec *s, const CliSim *o)
{
    (void)s; /* the numbers' ranges are checked as they are parsed (cli.c) */
    SimCpComm cc;
    if (o->mfu && strcmp(o->mfu, "full") && strcmp(o->mfu, "causal"))
        return bad_value("mfu-convention", o->mfu,
                         "--mfu-convention takes full (the square of scores, Megatron's and torchtitan's count) "
                         "or causal (half of it)");
    SimCeFusion ce;
    double hs[2];
    int rc = cli_cp_comm(o->cp_comm, &cc);
    if (!rc) rc = cli_ce_fusion(o->ce_fusion, &ce);
    return rc ? rc : cli_host_us(o->host_us, hs);
}

/* --host-us F[,B]: microseconds a dispatched op, forward and backward; one
 * value gives the backward at the defaults' ratio. Seconds into out[2]
 * (the defaults, SimOptions.host_s, when not given). */
int cli_host_us(const char *v, double out[2])
{
    SimOptions d;
    sim_options_init(&d);
    out[0] = d.host_s[0], out[1] = d.host_s[1];
    if (!v) return 0;
    char *end = NULL;
    double f = strtod(v, &end), b = f * d.host_s[1] / d.host_s[0];
    bool ok = end != v;
    if (ok && *end == ',') {
        const char *s = end + 1;
        b = strtod(s, &end);
        ok = end != s;
    }
    ok = ok && !*end && f > 0 && f <= 1e5 && b > 0 && b <= 1e5;
    if (ok) {
        out[0] = f * 1e-6, out[1] = b * 1e-6;
        return 0;
    }
    return bad_value("host-us", v,
                     "--host-us takes the host's microseconds to dispatch one eager op forward, and optionally "
                     "backward, above 0 and up to 100000: 33 or 33,35 (the defaults are 24,25.2; module calls, "
                     "casts and the optimizer's loop scale with it, Megatron-Core's MoE calls take " MCORE_HOST "x it)");
}

int cli_ce_fusion(const char *v, SimCeFusion *out)
{
    *out = SIM_CE_NONE;
    if (!v || sim_ce_fusion_parse(v, out)) return 0;
    return bad_value("ce-fusion", v,
                     "--ce-fusion takes none (fp32 eager ops), native (Megatron-Core's fused loss) or te "
                     "(Transformer Engine's)");
}

int cli_cp_comm(const char *v, SimCpComm *out)
{
    *out = SIM_CP_P2P;
    if (!v || sim_cp_comm_parse(v, out)) return 0;
    return bad_value("cp-comm", v,
                     "--cp-comm takes p2p (ring send/receive), allgather (K/V all-gather) or a2a (all-to-all, "
                     "Ulysses)");
}

void cli_sim_options(const CliSim *o, SimOptions *so)
{
    sim_options_init(so);
    if (o->no_dp_overlap) so->dp_overlap = false;
    if (o->no_ag_overlap) so->param_gather_overlap = false;
    if (o->fp16_grads) so->fp32_grad_reduce = false;
    if (o->bucket_bytes > 0) so->bucket_bytes = o->bucket_bytes;
    if (o->slowdown >= 0) so->overlap_slowdown = o->slowdown;
    if (o->pair_share >= 0) so->pair_sm_share = o->pair_share;
    so->selective_ops = o->sel_ops;
    so->sequential_experts = o->seq_experts;
    so->cuda_graphs = o->graphs;
    so->grads_freed = o->grads_freed;
    so->balance_stages = o->balance;
    if (o->spread >= 0) so->gpu_spread = o->spread;
    if (o->cp_comm) sim_cp_comm_parse(o->cp_comm, &so->cp_comm); /* checked by cli_sim_check */
    if (o->ce_fusion) sim_ce_fusion_parse(o->ce_fusion, &so->ce_fusion);
    so->mfu_causal = o->mfu && !strcmp(o->mfu, "causal");
    if (o->host_us) cli_host_us(o->host_us, so->host_s); /* checked by cli_sim_check */
}

int cli_sim_framework(const CliSpec *s, const CliSim *o, PlanFramework *fw)
{
    if (!o->ds_pipe && !o->eager) return 0;
    const char *alias = o->ds_pipe ? "deepspeed-pipe" : "eager-pytorch";
    PlanFramework want = o->ds_pipe ? PLAN_FRAMEWORK_DEEPSPEED : PLAN_FRAMEWORK_TORCHTITAN;
    bool eager_ok = o->eager && !o->ds_pipe && (*fw == PLAN_FRAMEWORK_TORCHTITAN || *fw == PLAN_FRAMEWORK_HF);
    if ((o->ds_pipe && o->eager) || (cli_seen(s, "framework") && *fw != want && !eager_ok)) {
        TsError e = {0};
        ts_err(&e, TS_ERR_USAGE, "--%s contradicts --%s", alias,
               o->ds_pipe && o->eager ? "eager-pytorch" : "framework");
        ts_err_hint(&e, "--deepspeed-pipe is --framework deepspeed, --eager-pytorch is --framework torchtitan "
                        "(hf runs eager code too): give one framework");
        return cli_fail(&e);
    }
    if (!eager_ok) *fw = want;
    return 0;
}
