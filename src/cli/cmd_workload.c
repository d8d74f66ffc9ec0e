/* trainsim workload — write one training iteration as a workload file
 * (SimAI/AICB, ASTRA-sim 1.0, Chakra, op table, JSON), generated from a
 * model and plan or converted from an imported workload (--in). */
#include "cli.h"

#include <inttypes.h>
#include <string.h>

#include "trainsim/workload.h"
#include "trainsim/workload_chakra.h"
#include "trainsim/workload_io.h"
#include "cmd_workload_gen.h"

typedef struct WlCli {
    const char *format, *output, *in, *aicb_compat, *optable_compat, *check_chakra;
    int64_t chakra_dims;
    bool chakra_example;
} WlCli;

static int write_out(const Workload *w, const WlCli *o, WlFormat fmt)
{
    TsError err = {0};
    if (w->rank_class) { /* explicit groups and peer ranks: no other format holds them */
        ts_err(&err, TS_ERR_INPUT, "'%s' is a Chakra set read rank by rank (its ranks are not one trainsim layout): "
                                   "it can be replayed and checked, not converted", o->in);
        ts_err_hint(&err, "simulate --workload %s replays it; workload --check-chakra %s checks it", o->in, o->in);
        return cli_fail(&err);
    }
    if (fmt == WL_FMT_CHAKRA) {
        WlChakraOptions co;
        wl_chakra_options_init(&co);
        co.involved_dims = (int)o->chakra_dims;
        if (o->chakra_example) co.generator_attr = co.world_pg = false; /* ASTRA-sim's own trace, byte for byte */
        int64_t bytes = 0;
        if (wl_write_chakra(w, &co, o->output, &bytes, &err)) return cli_fail(&err);
        if (w->par.world == 1)
            printf("wrote 1 Chakra trace %s.0.et and %s.comm_groups.json, %" PRId64 " bytes\n", o->output, o->output,
                   bytes);
        else
            printf("wrote %" PRId64 " Chakra traces %s.{0..%" PRId64 "}.et and %s.comm_groups.json, %" PRId64 " bytes\n",
                   w->par.world, o->output, w->par.world - 1, o->output, bytes);
        return 0;
    }
    if ((fmt == WL_FMT_SIMAI || fmt == WL_FMT_ASTRASIM) && w->par.vpp_group > 0 && w->par.vpp_group != w->par.pp) {
        /* layer rows: the simulator prices the schedule from pp, vpp and ga alone */
        ts_err(&err, TS_ERR_INPUT, "'%s' runs its interleaved micro-batches in groups of %" PRId64 " (pp %" PRId64
                                   "): %s layer rows have no such group, the simulator prices the schedule from pp, "
                                   "vpp and ga alone",
               o->in, w->par.vpp_group, w->par.pp, fmt == WL_FMT_SIMAI ? "AICB's" : "ASTRA-sim's");
        ts_err_hint(&err, "write it as --format json or chakra, whose task graphs run its order, or replay it with "
                          "simulate --workload %s", o->in);
        return cli_fail(&err);
    }
    TsBuf b = {0};
    if (fmt == WL_FMT_SIMAI) {
        WlSimaiOptions so = {WL_SIMAI_HDR_CURRENT};
        if (o->aicb_compat && !strcmp(o->aicb_compat, "1.1")) so.header = WL_SIMAI_HDR_V1_1;
        if (o->aicb_compat && !strcmp(o->aicb_compat, "1.0")) so.header = WL_SIMAI_HDR_V1_0;
        if (so.header != WL_SIMAI_HDR_CURRENT && strcmp(w->policy, "MICRO") != 0)
            fprintf(stderr, "trainsim: warning: --aicb-compat %s writes AICB's %s header, without %s; current SimAI "
                            "(1.7) %s: leave out --aicb-compat to run the file in SimAI\n",
                    o->aicb_compat, so.header == WL_SIMAI_HDR_V1_0 ? "July 2024" : "Sep 2024",
                    so.header == WL_SIMAI_HDR_V1_0 ? "pp:" : "vpp: and pp_comm:",
                    so.header == WL_SIMAI_HDR_V1_0 ? "stops on it with a floating-point exception (SIGFPE)"
                                                   : "warns 'Input workload format mismatch' and gives NaN bubble "
                                                     "and total times for it");
        wl_write_simai(w, &so, &b);
    } else if (fmt == WL_FMT_ASTRASIM) {
        wl_write_astrasim(w, &b);
    } else if (fmt == WL_FMT_OPTABLE) {
        wl_write_optable(w, &b);
    } else {
        wl_write_json(w, &b);
    }
    int rc = cli_emit(o->output, &b);
    ts_buf_free(&b);
    return rc;
}

/* The ASTRA-sim microbenchmark all_gather/16npus_1MB: every rank gathers
 * 1 MiB from each of the 16 (the IR's whole buffer: 16 MiB; Chakra's
 * comm_size, each rank's input: 1 MiB). */
static Workload *example_allgather(TsError *err)
{
    Workload *w = wl_create(16, err);
    if (!w) return NULL;
    WlTask t = wl_task_coll("all_gather_16npus_1MB", WL_PHASE_FWD, TS_COLL_ALLGATHER, WL_GROUP_WORLD, 16.0 * 1048576);
    if (wl_class_begin(w, "all", 0) < 0 || wl_task_add(w, &t, NULL, 0, NULL, 0) < 0) {
        wl_destroy(w);
        ts_err(err, TS_ERR_INTERNAL, "out of memory");
        return NULL;
    }
    return w;
}

static int check_chakra(const char *prefix)
{
    TsError err = {0};
    WlChakraCheck c;
    if (wl_check_chakra(prefix, &c, &err)) return cli_fail(&err);
    printf("%s: %" PRId64 " ranks, %" PRId64 " nodes, %" PRId64 " collectives, %" PRId64 " sends, %" PRId64
           " receives, %" PRId64 " groups: ok (deps exist, acyclic, groups consistent, sends matched)\n",
           prefix, c.ranks, c.nodes, c.colls, c.sends, c.recvs, c.groups);
    return 0;
}

int cmd_workload(int argc, char **argv)
{
    WlCli o = {.chakra_dims = 1};
    WlGenCli g;
    wl_gen_cli_init(&g);
    CliSpec s = {.cmd = "workload",
                 .usage = "trainsim workload --format simai|astrasim|chakra|optable|json --output PATH "
                          "[--recipe NAME] [model/plan/hw options | --in FILE]",
                 .summary = "Write one training iteration as a workload: SimAI/AICB text, ASTRA-sim 1.0 text, "
                            "Chakra traces (one <PATH>.<rank>.et per rank + <PATH>.comm_groups.json), a "
                            "per-operator table or trainsim JSON. --in converts a SimAI/ASTRA-sim text workload "
                            "or an op table into another format."};
    cli_add(&s, "format", CLI_STR, &o.format, "F", "simai | astrasim | chakra | optable | json");
    cli_add(&s, "output", CLI_STR, &o.output, "PATH", "output file (chakra: path prefix); '-' = stdout");
    cli_add(&s, "in", CLI_STR, &o.in, "FILE", "convert this workload instead of generating one");
    cli_add(&s, "aicb-compat", CLI_STR, &o.aicb_compat, "V", "simai: '1.1' writes AICB's Sep-2024 header and quirks");
    cli_add(&s, "optable-compat", CLI_STR, &o.optable_compat, "T", "optable: 'neusight' reproduces the seed's size quirks");
    cli_add(&s, "chakra-dims", CLI_INT, &o.chakra_dims, "N", "chakra: network dimensions for involved_dim (1; 0 omits)");
    cli_add(&s, "check-chakra", CLI_STR, &o.check_chakra, "PREFIX", "verify a Chakra trace set and exit");
    cli_add(&s, "chakra-example", CLI_FLAG, &o.chakra_example, NULL,
            "write ASTRA-sim's 16-NPU 1 MiB all-gather microbenchmark trace");
    wl_gen_cli_add(&s, &g);
    int rc = cli_parse(&s, argc, argv);
    if (rc) return rc < 0 ? 0 : rc;
    /* the modes that take no model, plan or hardware: refuse what they would ignore */
    static const char *const ok_check[] = {"check-chakra", NULL};
    static const char *const ok_in[] = {"in", "format", "output", "aicb-compat", "chakra-dims", NULL};
    static const char *const ok_example[] = {"chakra-example", "format", "output", "chakra-dims", NULL};
    if (o.check_chakra && (rc = cli_only(&s, ok_check, "it only reads and checks the trace set",
                                         "run it on its own")))
        return rc;
    if (o.check_chakra) return check_chakra(o.check_chakra);
    if (o.in && (rc = cli_only(&s, ok_in, "the workload file fixes the model, the plan and the timings",
                               "to write another plan, generate it from model and plan options without --in")))
        return rc;
    if (o.chakra_example &&
        (rc = cli_only(&s, ok_example, "the example is ASTRA-sim's fixed 16-NPU all-gather", "drop the other options")))
        return rc;
    WlFormat fmt = WL_FMT_NONE;
    if (o.format && !wl_format_parse(o.format, &fmt)) fmt = WL_FMT_NONE;
    if (fmt == WL_FMT_NONE) {
        fprintf(stderr, "trainsim workload: %s --format (simai, astrasim, chakra, optable or json) "
                        "(see 'trainsim workload --help')\n", o.format ? "unknown" : "missing");
        return 2;
    }
    if (fmt == WL_FMT_CHAKRA && (!o.output || !strcmp(o.output, "-"))) {
        fprintf(stderr, "trainsim workload: --format chakra needs --output PREFIX (files PREFIX.<rank>.et) "
                        "(see 'trainsim workload --help')\n");
        return 2;
    }
    if (o.aicb_compat && strcmp(o.aicb_compat, "1.1") && strcmp(o.aicb_compat, "1.0")) {
        fprintf(stderr, "trainsim workload: --aicb-compat expects 1.0 or 1.1, got '%s' (see 'trainsim workload --help')\n",
                o.aicb_compat);
        return 2;
    }
    if (o.optable_compat && strcmp(o.optable_compat, "neusight")) {
        fprintf(stderr, "trainsim workload: --optable-compat expects 'neusight', got '%s' (see 'trainsim workload --help')\n",
                o.optable_compat);
        return 2;
    }
    TsError err = {0};
    Workload *w = NULL;
    if (o.chakra_example) {
        if (!(w = example_allgather(&err))) return cli_fail(&err);
    } else if (o.in) {
        if (wl_read_file(o.in, &w, &err)) return cli_fail(&err);
    } else {
        g.fmt = fmt;
        g.aicb_compat = o.aicb_compat != NULL;
        g.neusight = o.optable_compat != NULL;
        rc = wl_gen_cli_build(&g, &w);
        if (rc) return rc;
    }
    if (w->warning[0]) fprintf(stderr, "trainsim: warning: %s\n", w->warning);
    rc = write_out(w, &o, fmt);
    /* the GPU the task times are of, where the workload went to files */
    if (!rc && !o.in && !o.chakra_example && o.output && g.costed_on[0])
        printf("task times of %s (--gpu, --cluster)\n", g.costed_on);
    wl_destroy(w);
    return rc;
}
