/* trainsim params — the parameter table of one rank's pipeline stage:
 * name;module;shape;partitioning_ranks;precs (docs/plan.md). */
#include "cli.h"
#include "cli_hw.h"
#include "cli_plan.h"
#include "trainsim/partition.h"

int cmd_params(int argc, char **argv)
{
    CliSpec s = {.cmd = "params",
                 .usage = "trainsim params --rank R [--model M] [--naming deepspeed|megatron|hf] [plan options] "
                          "[--cluster C --gpus N] [--optimizer shampoo --shampoo-blocks K] [--balance]",
                 .summary = "One line per parameter tensor of the rank's pipeline stage in module order: "
                            "name;module;shape;partitioning_ranks;precs. With Shampoo, layer weight matrices "
                            "are split into K blocks along their model-parallel dim; precs lists each block's "
                            "Kronecker factors and partitioning_ranks the DP rank computing them (LPT on sum d^3; "
                            "for routed experts the expert-DP rank). With --ep, the rank holds and lists "
                            "its E/ep experts (global indices; GPT-OSS's stacked experts tensors under hf naming, "
                            "E/ep rows each)."};
    CliModel cm;
    CliPlan cp;
    CliHw hw;
    int64_t rank = 0;
    bool balance = false;
    const char *out_path = NULL;
    cli_model_init(&cm);
    cli_plan_init(&cp);
    cli_model_add(&s, &cm);
    cli_hw_init(&hw);
    cli_plan_add(&s, &cp, false);
    cli_hw_add(&s, &hw);
    cli_add(&s, "rank", CLI_INT, &rank, "R", "global rank whose stage is listed (default 0)");
    cli_add(&s, "balance", CLI_FLAG, &balance, NULL, "print the preconditioner work per DP rank to stderr");
    cli_add(&s, "output", CLI_STR, &out_path, "FILE", "write to FILE instead of stdout");
    int rc = cli_parse(&s, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    ModelSpec m;
    if ((rc = cli_model_load(&cm, "gpt2", &m)) != 0) return rc;
    ParallelPlan p;
    if ((rc = cli_plan_load(&s, &cp, &m, hw.gpus > 0 ? hw.gpus : 0, &p)) != 0) return rc;
    /* The table needs no costs, but the hardware options are checked as in
     * every other command (a bad --cluster or --gpu is an error here too). */
    CliHwLoaded l;
    hw.no_traffic = true;
    if ((rc = cli_hw_load(&hw, "dgx-h100", p.gpus, &l)) != 0) return rc;
    cli_hw_free(&l);
    GraphOptions go;
    graph_options_init(&go);
    if ((rc = cli_naming(&cm, &m, &go.naming)) != 0) return rc;
    go.naming_set = true;
    go.batch = 1;
    go.seq = p.seq;
    go.tp = p.tp;
    go.dtype_bytes = ts_dtype_bytes(p.dtype);
    TsError err = {0};
    ModuleGraph *g = NULL;
    if (graph_build(&m, &go, &g, &err) != TS_OK) return cli_fail(&err);
    TsArena *a = ts_arena_create(64 * 1024);
    PartParamTable t;
    if (!a) { graph_destroy(g); return 1; }
    if (part_params(g, &p, rank, a, &t, &err) != TS_OK) {
        ts_arena_destroy(a);
        graph_destroy(g);
        return cli_fail(&err);
    }
    TsBuf b = {0};
    part_params_write(&t, &b);
    if (balance) {
        fprintf(stderr, "preconditioner work (sum of d^3) per DP rank, stage %lld:\n", (long long)t.stage);
        for (int64_t d = 0; d < t.dp; d++) fprintf(stderr, "  dp %lld: %.6g\n", (long long)d, t.load[d]);
        fprintf(stderr, "imbalance (max/mean): %.4f\n", t.imbalance);
        if (t.n_local_experts > 0) {
            fprintf(stderr, "routed experts %lld..%lld (ep rank %lld), work per expert-DP rank:\n",
                    (long long)t.first_expert, (long long)(t.first_expert + t.n_local_experts - 1),
                    (long long)t.ep_rank);
            for (int64_t d = 0; d < t.edp; d++)
                fprintf(stderr, "  edp %lld: %.6g\n", (long long)d, t.expert_load[d]);
            fprintf(stderr, "expert imbalance (max/mean): %.4f\n", t.expert_imbalance);
        }
    }
    rc = cli_emit(out_path, &b);
    ts_buf_free(&b);
    ts_arena_destroy(a);
    graph_destroy(g);
    return rc;
}
