/*
 * trainsim/search.h — plan search: enumerate every candidate parallel plan
 * for a model on N GPUs, reject the invalid ones, prune the ones that do not
 * fit in memory with a cheap memory-only check BEFORE simulating, simulate
 * the rest and rank them. Threads (pthreads) split the work inside a
 * process; MPI ranks (search_mpi.c, when built with MPI) split it across
 * processes.
 *
 * The plan space. A candidate is a SearchKnobs. It is built in two levels:
 *   shapes  (gpus, tp, pp, cp, ep, dp) with tp*pp*cp*dp == gpus and ep
 *           dividing dp*cp (experts are carved out of the data-parallel
 *           ranks, as in Megatron-Core);
 *   inner   micro-batch x (schedule, vpp) x sp x recompute x zero x
 *           tp-overlap, with redundant combinations left out (sp and
 *           tp-overlap only when tp > 1; one schedule when pp = 1; vpp > 1
 *           only with the interleaved schedule, and vpp 2 with dualpipev;
 *           dualpipe only for even pp; the micro-batch rules of dualpipe
 *           and dualpipev are plan_validate's).
 * Every candidate has an index in [0, candidates): shapes in order, then
 * the inner knobs as a mixed-radix number. The index is the stable key: ties
 * in the objective are broken by the lower index, so the ranking is the same
 * for any thread count and any number of MPI ranks.
 *
 * Work: candidates are cut into chunks of SEARCH_CHUNK; MPI rank r owns the
 * chunks c with c % ranks == r, and its threads take those chunks in turn.
 * Per plan the evaluator is called twice: check() (validity + memory, cheap)
 * and, if the plan fits, simulate(). The evaluator is a table of callbacks
 * so the search can be tested without the simulator (tests/unit) and so the
 * real one (search_eval.c: plan.h + partition.h + sim.h) stays in one file.
 *
 * Units: seconds, bytes, tokens/s. Counts are int64_t.
 *
 * Example:
 *     SearchConfig c; search_config_init(&c);
 *     c.gpus = 1024; c.global_batch = 1024; c.seq = 8192; c.layers = 80;
 *     search_space_defaults(&c);
 *     SearchResult r; search_run(&c, &eval, &r, &err);
 *     // r.top[0] is the best plan; r.stats.simulated plans were simulated
 *     search_result_free(&r);
 */
#ifndef TRAINSIM_SEARCH_H
#define TRAINSIM_SEARCH_H

#include "trainsim/common.h"
#include "trainsim/partition.h"
#include "trainsim/plan.h"
#include "trainsim/sim.h"
#include "trainsim/train.h"

#define SEARCH_MAX_VALUES 32 /* values per dimension list */
#define SEARCH_CHUNK 256     /* candidates per work item: small enough that the
                                last chunks do not leave threads idle (valid
                                plans cluster: a chunk's cost varies 100x) */

/* The pipeline schedules (plan.h's PlanSchedule) in the order the sweep
 * enumerates them and lists them: gpipe, 1f1b, interleaved, zb-h1, dualpipe,
 * dualpipev. The order fixes the candidates' indices, so it also breaks ties
 * in the ranking. */
#define SEARCH_SCHEDULE_ORDER                                                                  \
    {PLAN_SCHED_GPIPE, PLAN_SCHED_1F1B, PLAN_SCHED_INTERLEAVED, PLAN_SCHED_ZBH1, PLAN_SCHED_DUALPIPE, \
     PLAN_SCHED_DUALPIPEV, PLAN_SCHED_1F1B_A2A}

/* X(NAME, "json key") — the exposed costs kept per simulated plan (seconds
 * per iteration). Keys follow simulate's breakdown_s. */
#define SEARCH_EXPOSED_LIST(X)            \
    X(TP, "tp_comm_exposed")              \
    X(CP, "cp_comm_exposed")              \
    X(EP, "ep_comm_exposed")              \
    X(PP, "pp_comm_exposed")              \
    X(DP, "dp_comm_exposed")              \
    X(BUBBLE, "bubble")                   \
    X(RECOMPUTE, "recompute")             \
    X(OPTIMIZER, "optimizer")
typedef enum {
#define X(e, n) SEARCH_EXPOSED_##e,
    SEARCH_EXPOSED_LIST(X)
#undef X
    SEARCH_EXPOSED_COUNT
} SearchExposed;

/* X(NAME, "name") — what to rank by. */
#define SEARCH_OBJECTIVE_LIST(X) \
    X(THROUGHPUT, "throughput")  \
    X(TIME, "time")              \
    X(MEMORY, "memory")          \
    X(COST, "cost")              \
    X(TIME_TO_TRAIN, "time-to-train")
typedef enum {
#define X(e, n) SEARCH_OBJ_##e,
    SEARCH_OBJECTIVE_LIST(X)
#undef X
    SEARCH_OBJ_COUNT
} SearchObjective;

const char *search_exposed_name(SearchExposed e);
const char *search_objective_name(SearchObjective o);
/* Parse a name (also "tokens", "tokens/s" for throughput). false if unknown. */
bool search_objective_parse(const char *s, SearchObjective *out);

/* One candidate plan. Plain values, 28 bytes: cheap to decode and copy. */
typedef struct SearchKnobs {
    int32_t gpus;        /* GPUs used, e.g. 1024 */
    int16_t tp, pp;      /* tensor / pipeline parallel, e.g. 8, 4 */
    int16_t cp, ep;      /* context / expert parallel, e.g. 1, 1 */
    int32_t dp;          /* data parallel = gpus / (tp*pp*cp), e.g. 32 */
    int16_t mbs;         /* micro-batch size in sequences, e.g. 1 */
    int8_t vpp;          /* virtual stages per pipeline rank, 1 unless interleaved (2: dualpipev) */
    int8_t sp;           /* sequence parallel: 0/1 (only with tp > 1) */
    int8_t recompute;    /* PlanRecompute */
    int8_t zero;         /* ZeRO stage 0-3; 1 = Megatron distributed optimizer */
    int8_t schedule;     /* PlanSchedule */
    int8_t tp_overlap;   /* TP communication overlapped with GEMMs: 0/1 */
    int8_t cp_comm;      /* SimCpComm: how CP exchanges K/V (SIM_CP_P2P when cp = 1) */
    int8_t rc_layers;    /* full recompute: layers per chunk recomputed (Megatron's
                            --recompute-num-layers, the block method), the fewest that fit
                            (set by the memory check, not enumerated); 0 = all. Also keeps the
                            struct without padding, so knobs compare and travel (MPI) as bytes */
    int16_t dp_shard;    /* HSDP shard degree (zero 3 only), e.g. 8; 0 = plain FSDP / not HSDP */
} SearchKnobs;
_Static_assert(sizeof(SearchKnobs) == 28, "SearchKnobs has no padding");

/* A dimension limited from the command line: the allowed values, or all
 * sensible values up to `max` when n == 0. */
typedef struct SearchDim {
    int n;                              /* 0 = any value up to max */
    int64_t v[SEARCH_MAX_VALUES];       /* allowed values, e.g. {1, 2, 4, 8} */
    int64_t max;                        /* upper bound when n == 0, e.g. 8 */
} SearchDim;

typedef struct SearchConfig {
    /* problem */
    SearchDim gpus;          /* GPU counts to try; usually one value, e.g. {1024} */
    int64_t global_batch;    /* sequences per iteration, e.g. 1024 */
    int64_t seq;             /* tokens per sequence, e.g. 8192 */
    int64_t layers;          /* transformer blocks (bounds pp*vpp), e.g. 80 */
    int64_t experts;         /* routed experts, 0 for dense models (ep = 1), e.g. 256 */
    /* the space */
    SearchDim tp, pp, vpp, cp, ep, mbs; /* vpp applies to the interleaved schedule */
    unsigned recompute_mask; /* bit per PlanRecompute; default all */
    unsigned schedule_mask;  /* bit per PlanSchedule; default gpipe, 1f1b, interleaved */
    unsigned zero_mask;      /* bit per ZeRO stage 0..3; default all */
    SearchDim dp_shard;      /* HSDP shard degrees tried beside plain ZeRO-3 (dividing dp, below it);
                                n == 0 (default): none, HSDP is not enumerated */
    unsigned sp_mask;        /* bit 0: sp off, bit 1: sp on; default both */
    unsigned overlap_mask;   /* bit 0: tp-overlap off, bit 1: on; default both */
    unsigned cp_comm_mask;   /* bit per SimCpComm, tried when cp > 1; default p2p only */
    /* ranking and output */
    SearchObjective objective; /* default SEARCH_OBJ_THROUGHPUT */
    int top_k;               /* plans kept in the ranking, e.g. 10 */
    bool keep_all;           /* keep every simulated point (for --csv/--json/--html) */
    /* execution */
    int threads;             /* worker threads, >= 1 */
    int rank, ranks;         /* this process's share of the chunks: 0 of 1 */
    /* progress, called from the calling thread about 10 times a second;
     * may be NULL */
    void (*progress)(void *user, int64_t done, int64_t total, double elapsed_s);
    void *progress_user;
} SearchConfig;

/* A plan and what simulating it gave. */
typedef struct SearchPoint {
    SearchKnobs k;
    int64_t index;          /* enumeration index: the stable tie-break key */
    double iteration_s;     /* seconds per iteration, e.g. 5.2 */
    double tokens_per_s;    /* whole cluster, e.g. 1.6e6 */
    double mfu;             /* model FLOPs utilisation, 0..1, e.g. 0.41 */
    double memory_bytes;    /* peak per GPU (worst rank), e.g. 6.1e10 */
    double capacity_bytes;  /* HBM per GPU, e.g. 8.0e10 */
    double exposed_s[SEARCH_EXPOSED_COUNT]; /* seconds per iteration */
    double train_wall_s;     /* --train-tokens: the run's wall clock with its goodput, e.g. 4.1e6; 0 none */
    double train_gpu_hours;  /* its GPU-hours, e.g. 2.3e6 */
    double train_cost;       /* at the price per GPU-hour; 0 without one */
    int32_t n_stage_layers;  /* > 0: simulated on this split of the layers (--balance-stages), else the
                                uneven rule or an even one */
    int16_t stage_layers[SIM_BALANCE_MAX];
    int32_t vpp_group;       /* interleaved, the micro-batch group when other than pp: Megatron-Core's
                                for micro-batches that pp does not divide (plan_least_vpp_group),
                                torchtitan's PyTorch rounds (plan_vpp_group_shown); 0 = pp's */
    bool vpp_group_flag;     /* the group is Megatron-Core's --vpp-group (noted under the table) */
} SearchPoint;

typedef enum { SEARCH_EVAL_OK, SEARCH_EVAL_INVALID, SEARCH_EVAL_NOFIT } SearchEvalStatus;

/* How plans are judged. ctx is shared read-only by every thread; each
 * thread gets its own scratch from thread_begin (NULL allowed when the
 * evaluator needs none; thread_begin/thread_end may be NULL).
 *   check:    validity and memory only; fills p->memory_bytes and
 *             p->capacity_bytes; returns OK, INVALID or NOFIT. Must be cheap.
 *   simulate: called only after check returned OK on the same point; fills
 *             the remaining fields; returns OK or INVALID.
 *   bound:    optional (NULL: every plan that fits is simulated); called
 *             after check returned OK: fills p->iteration_s with a lower
 *             bound on what simulate would give and p->tokens_per_s with
 *             the matching upper bound (cheaper than simulate); returns OK or
 *             INVALID. Without keep_all, the search then simulates plans in
 *             the order of their bound and stops where the bound is worse
 *             than the k-th best plan found (branch and bound: the ranking
 *             stays exact; the plans left out are counted as bounded).
 * All must be pure functions of the knobs (the search is deterministic). */
typedef struct SearchEvaluator {
    void *ctx;
    void *(*thread_begin)(void *ctx);
    void (*thread_end)(void *ctx, void *scratch);
    SearchEvalStatus (*check)(void *ctx, void *scratch, SearchPoint *p);
    SearchEvalStatus (*simulate)(void *ctx, void *scratch, SearchPoint *p);
    SearchEvalStatus (*bound)(void *ctx, void *scratch, SearchPoint *p);
} SearchEvaluator;

typedef struct SearchStats {
    int64_t candidates;  /* index space size: every combination of the knobs */
    int64_t enumerated;  /* valid plans among the candidates */
    int64_t pruned;      /* valid plans rejected by the memory check */
    int64_t bounded;     /* plans that fit but whose lower bound could not reach the top k
                            (not simulated; 0 with keep_all or without a bound) */
    int64_t simulated;   /* plans simulated (= enumerated - pruned - bounded - failed) */
    double elapsed_s;    /* wall clock of the search (max over ranks) */
    double plans_per_s;  /* enumerated / elapsed_s */
    int threads;         /* threads per rank */
    int ranks;           /* processes */
    double leanest_bytes;/* of the plans the memory check rejected, the least peak memory per
                            GPU, e.g. 9.3e10; 0 when none was rejected */
    SearchKnobs leanest; /* that plan's knobs (ties: the lowest index) */
    int64_t leanest_index;
} SearchStats;

typedef struct SearchResult {
    SearchPoint *top;    /* best first, n_top <= top_k; malloc'd */
    int n_top;
    SearchPoint *all;    /* every simulated plan in index order when keep_all; malloc'd */
    int64_t n_all;
    SearchStats stats;
} SearchResult;

/* Defaults: gpus/global_batch/seq/layers/experts zero (must be set), every
 * dimension unrestricted with max tp 8, pp 64, vpp 8, cp 8, ep 64, mbs 8,
 * all masks full, top_k 10, threads 1, rank 0 of 1. */
void search_config_init(SearchConfig *c);

/* Number of candidates and the knobs of candidate `index` (for tests and
 * for re-deriving a plan from its key). search_space_size returns -1 and
 * fills err when the space is empty or inconsistent (e.g. no tp divides gpus). */
int64_t search_space_size(const SearchConfig *c, TsError *err);

/* Run this process's share of the search (rank of ranks) with c->threads
 * threads. Returns TS_OK with the ranking in r (free with
 * search_result_free), TS_ERR_USAGE for an empty space, TS_ERR_INTERNAL on
 * allocation or thread failure. No plan fitting is not an error: n_top = 0. */
TsStatus search_run(const SearchConfig *c, const SearchEvaluator *ev, SearchResult *r, TsError *err);
void search_result_free(SearchResult *r);

/* Ranking order: returns <0 when a ranks before b under objective o (ties
 * by index). */
int search_compare(SearchObjective o, const SearchPoint *a, const SearchPoint *b);
/* Merge several rankings / point sets (e.g. from MPI ranks) into one:
 * `parts` are concatenated, re-ranked, cut to top_k; `all` sorted by index.
 * Stats are summed (elapsed_s: max). Takes ownership of nothing. */
TsStatus search_merge(const SearchConfig *c, const SearchResult *parts, int n_parts, SearchResult *out,
                      TsError *err);

/* ---- the real evaluator: plan.h + partition.h + sim.h (eval_sim.c) ---------- */
typedef struct SearchEvalCtx {
    const ModelSpec *model;   /* borrowed, e.g. llama3-70b */
    const HwModel *hw;        /* borrowed GPU compute model; capacity = hw->gpu.hbm_bytes */
    const HwNet *nets[SEARCH_MAX_VALUES]; /* borrowed, one per GPU count searched */
    int64_t net_gpus[SEARCH_MAX_VALUES];  /* the GPU count each net is sized for */
    int n_nets;
    int64_t global_batch;     /* sequences per iteration, e.g. 1024 */
    int64_t seq;              /* tokens per sequence, e.g. 8192 */
    TsDtype dtype;            /* compute dtype, bf16 */
    PlanFramework framework;  /* the code path of every plan, megatron */
    PlanPrecision precision;  /* the precision recipe of every plan, mixed */
    const TrainOptions *train; /* --train-tokens and the run's options: each plan's wall clock,
                                 GPU-hours and cost (SearchPoint.train_*); NULL none */
    int64_t model_params;     /* every parameter of the model (the checkpoint's count), once */
    ParallelPlan knobs;       /* every plan's MoE dispatch, node limit, imbalance, capacity,
                                 FP8 recipe, Adam moments, and recompute modules (under
                                 selective recompute); plan_init's defaults */
    SimOptions sim_opts;      /* sim_options_init defaults */
    PartMemOptions mem_opts;  /* memory model for pruning, as sim_simulate uses it; a plan fits
                                 in the HBM less sim_opts.min_headroom_bytes */
    bool rc_all;              /* full recompute of every layer, not the fewest that fit
                                 (SearchKnobs.rc_layers): ranking by memory, false */
} SearchEvalCtx;

void search_eval_init(SearchEvalCtx *x, const ModelSpec *m, const HwModel *hw, int64_t global_batch, int64_t seq);
/* Register the network model for `gpus` GPUs (up to SEARCH_MAX_VALUES). */
bool search_eval_add_net(SearchEvalCtx *x, int64_t gpus, const HwNet *net);
/* The evaluator over x (which must outlive the search): check = plan_resolve
 * + part_memory against the HBM capacity; simulate = sim_simulate. */
SearchEvaluator search_eval_sim(SearchEvalCtx *x);
/* The plan of a candidate, and its simulation setup (for reports and for
 * re-simulating the best plan with spans recorded). setup fails (false) when
 * no net was registered for k->gpus. */
void search_plan_from_knobs(const SearchEvalCtx *x, const SearchKnobs *k, ParallelPlan *p);
bool search_sim_setup(const SearchEvalCtx *x, const SearchKnobs *k, SimSetup *in);

/* Distributed search (compiled only with MPI; see TS_HAVE_MPI). search_mpi_init
 * initialises MPI only when the process was started by mpirun (else it reports
 * rank 0 of 1 and touches nothing); search_mpi_run runs this rank's share and
 * gathers the merged result on rank 0 (other ranks get stats only). */
#ifdef TS_HAVE_MPI
void search_mpi_init(int *argc, char ***argv, int *rank, int *ranks);
void search_mpi_finalize(void);
TsStatus search_mpi_run(const SearchConfig *c, const SearchEvaluator *ev, SearchResult *r, TsError *err);
#endif

#endif
