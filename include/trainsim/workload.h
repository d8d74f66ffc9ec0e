/*
 * trainsim/workload.h — the workload IR: one training iteration as a
 * per-rank task DAG, which the formats (SimAI/AICB text, ASTRA-sim 1.0 text,
 * Chakra execution traces, NeuSight-style op tables, our JSON) carry.
 *
 * What it models: the work ONE rank does in one iteration, as tasks:
 *   - COMP  a kernel (or a fused group): FLOPs, bytes moved, duration_s;
 *   - COLL  a collective over a process group kind (TP, DP, EP, ...), with the
 *           WHOLE buffer in bytes (nccl-tests/SimAI convention: the gathered
 *           tensor for all-gather, the input of reduce-scatter);
 *   - SEND/RECV  pipeline point-to-point to the same rank of another stage.
 * Every task has a phase (fwd, input-grad, weight-grad, optimizer), a
 * micro-batch (-1 when not per micro-batch), a pipeline chunk and dependency
 * ids (data deps then control deps, ids of tasks of the same rank class).
 *
 * Rank classes: ranks that behave identically share one task list (with a
 * symmetric plan that is one class per pipeline stage). Memory grows with the
 * number of classes, never with the GPU count; writers that need one file per
 * rank (Chakra) expand classes on the fly through wl_rank_class().
 *
 * Rows: layer formats (SimAI, ASTRA-sim, op tables) describe a rank as a list
 * of rows `name, fwd comp/comm, ig comp/comm, wg comp/comm, process_time`.
 * Readers of those formats keep the rows (WlRow: task ids per slot) next to
 * the DAG they imply, so conversion between row formats is lossless.
 *
 * Units: seconds, bytes, FLOPs (double) inside; formats convert at the edge
 * (SimAI/ASTRA-sim ns ticks, op tables ms and fp32 element counts, Chakra
 * whole µs). Rank layout (Megatron order): rank = tp_i + TP*(cp_i + CP*(dp_i
 * + DP*pp_i)); EP groups are blocks of EP consecutive dp indices.
 *
 * Example (the 82-byte ASTRA-sim microbenchmark trace):
 *     Workload *w = wl_create(16, &err);           // 16 ranks, one class
 *     wl_class_begin(w, "all", 0);
 *     WlTask t = wl_task_coll("all_gather_16npus_1MB", WL_PHASE_FWD,
 *                             TS_COLL_ALLGATHER, WL_GROUP_WORLD, 1048576);
 *     wl_task_add(w, &t, NULL, 0, NULL, 0);
 *     wl_write_chakra(w, &copt, "dir/all_gather", NULL, &err); // workload_chakra.h:
 *     wl_destroy(w);                                  // dir/all_gather.0.et ...
 *
 * Ownership: a Workload owns everything in it (one arena, wl_destroy; NULL
 * is a no-op); names and arrays handed to the builders are copied. Failure:
 * the builders return -1 (NULL for wl_create, TS_ERR_INTERNAL) when out of
 * memory; wl_validate returns TS_ERR_INTERNAL for a malformed graph.
 *
 * The other workload headers: workload_build.h (the costed step -> a
 * Workload), workload_io.h (SimAI, ASTRA-sim, op-table and JSON readers and
 * writers), workload_chakra.h (Chakra execution traces).
 */
#ifndef TRAINSIM_WORKLOAD_H
#define TRAINSIM_WORKLOAD_H

#include "trainsim/common.h"
#include "trainsim/hw.h"

/* Task phases: X(enum suffix, name). fwd forward; ig input gradient (the
 * backward through activations, recomputation included); wg weight
 * gradient (with the DP gradient reduction); opt the step once the gradients
 * are in (embedding-gradient and grad-norm all-reduces, the optimizer). The
 * partition's templates use the coarser PartPhase (fwd, bwd, step). */
#define WL_PHASE_LIST(X) X(FWD, "fwd") X(IG, "ig") X(WG, "wg") X(OPT, "opt")
typedef enum {
#define X(e, n) WL_PHASE_##e,
    WL_PHASE_LIST(X)
#undef X
    WL_PHASE_COUNT
} WlPhase;

#define WL_KIND_LIST(X) X(COMP, "comp") X(COLL, "coll") X(SEND, "send") X(RECV, "recv")
typedef enum {
#define X(e, n) WL_KIND_##e,
    WL_KIND_LIST(X)
#undef X
    WL_KIND_COUNT
} WlKind;

/* Process-group kinds a collective runs over. DP_EP: the data-parallel
 * replicas of one expert shard (SimAI's `_DP_EP`). DP_CP: the data-parallel
 * and context-parallel ranks of one model shard (Megatron reduces gradients
 * over it when cp > 1), dp*cp ranks. EMB: Megatron's embedding group, the
 * ranks of stage 0 and stage pp-1 with the same tp/cp/dp coordinates (the
 * tied word-embedding gradient all-reduce), 2 ranks when pp > 1.
 * X(enum suffix, name, the busbw tables' kind: hw.h's HwGroupKind suffix). */
#define WL_GROUP_LIST(X)                                                                         \
    X(NONE, "none", ANY) X(TP, "tp", TP) X(DP, "dp", DP) X(PP, "pp", PP) X(EP, "ep", EP)          \
    X(DP_EP, "dp_ep", DP_EP) X(CP, "cp", CP) X(WORLD, "world", ANY) X(DP_CP, "dp_cp", ANY)         \
    X(EMB, "emb", ANY) X(SHARD, "shard", DP) X(REPLICATE, "replicate", DP)
typedef enum {
#define X(e, n, h) WL_GROUP_##e,
    WL_GROUP_LIST(X)
#undef X
    WL_GROUP_COUNT
} WlGroup;

/* Task flags. */
enum {
    WL_F_ASYNC = 1,     /* non-blocking collective (overlaps later work) */
    WL_F_AR_A2A = 2,    /* SimAI ALLREDUCEALLTOALL (kept for round trips) */
    WL_F_RECOMPUTE = 4, /* forward recomputation inside the backward */
    WL_F_SYNC = 8,      /* send/recv pair as a rendezvous (blocking NCCL send and recv,
                           DeepSpeed's pipeline engine): the transfer starts once both
                           sides have posted, and both wait for it to end */
    WL_F_CPU = 16,      /* COMP on the host CPU, beside the GPU (Chakra is_cpu_op) */
    WL_F_PAIR = 32      /* COLL of an overlapped F&B pair (DualPipe, 1f1b-a2a), run under the
                           pair's compute: the SMs its kernels hold are in the compute's
                           durations (the pair's SM share), so overlapping costs no more */
};

typedef struct WlTask {
    WlKind kind;
    WlPhase phase;
    const char *name;      /* "attention_column", "layer3.fc1" (arena) */
    int32_t micro;         /* micro-batch 0..GA-1, -1 when not per micro-batch */
    int32_t chunk;         /* virtual pipeline chunk, 0 */
    int32_t layer;         /* transformer layer, -1 outside layers */
    int32_t row;           /* row of the layer formats, -1 */
    uint32_t flags;        /* WL_F_* */
    double flops;          /* COMP: FLOPs, e.g. 2.2e12 */
    double mem_bytes;      /* COMP: bytes read+written */
    double duration_s;     /* COMP: seconds from the compute model, e.g. 5.7e-3; < 0: not
                              given, the replay costs flops and mem_bytes on the GPU's
                              roofline (a Chakra node with num_ops but no duration) */
    TsColl coll;           /* COLL: ALLREDUCE, ...; SEND/RECV: SENDRECV */
    WlGroup group;         /* COLL: process group kind */
    int32_t xgroup;        /* COLL in a per-rank workload: 1 + its index in Workload.xgroups;
                              0: the group kind says (every other workload) */
    double comm_bytes;     /* COLL: whole buffer; SEND/RECV: message bytes */
    int32_t peer_stage;    /* SEND/RECV: pipeline stage of the peer (a per-rank workload:
                              the peer's rank), -1 */
    int32_t tag;           /* SEND/RECV: matching tag (same on both sides) */
    int32_t dep_first;     /* into Workload.deps (filled by wl_task_add) */
    int32_t n_data_deps;   /* deps[dep_first .. +n_data_deps) are data deps */
    int32_t n_ctrl_deps;   /* then n_ctrl_deps control (schedule) deps */
} WlTask;

/* One row of a layer format: the task id of each slot, -1 when empty. */
typedef struct WlRow {
    const char *name;
    int32_t comp[3];       /* indexed by WL_PHASE_FWD/IG/WG */
    int32_t comm[3];
    int64_t process_time;  /* SimAI update_time ticks (100) / op table process_time (0) */
} WlRow;

typedef struct WlClass {
    const char *name;      /* "stage3" */
    int32_t stage;         /* pipeline stage 0..PP-1 (a per-rank workload: 0) */
    int32_t first_task, n_tasks; /* task ids are global; a class's are contiguous */
    int32_t first_row, n_rows;
    int64_t rank;          /* a per-rank workload: the rank this class is; -1: every rank of
                              its stage */
} WlClass;

/* An explicit process group of a per-rank workload (a Chakra set whose ranks
 * are not one layout's: its comm_groups.json entry). */
typedef struct WlXGroup {
    const char *name;      /* the pg_name; "" = all ranks (collectives without pg_name) */
    int64_t *members;      /* ascending ranks */
    int64_t n;
} WlXGroup;

/* Parallel layout the workload was made for (header fields of SimAI). */
typedef struct WlParallel {
    int64_t world;          /* all GPUs, 1024 */
    int64_t tp, cp, pp, dp, ep; /* degrees; world = tp*cp*pp*dp; ep divides dp*cp */
    int64_t etp;            /* expert tensor parallel size; 0 = tp (EP inside DP). Else
                               Megatron's expert layout within a stage: local rank
                               l = tp + TP*(cp + CP*dp), etp_i = l mod ETP, ep_i =
                               (l/ETP) mod EP, edp_i = l/(ETP*EP); ETP*EP divides
                               TP*CP*DP */
    int64_t vpp;            /* virtual pipeline chunks per stage, 1 */
    int64_t layers_per_stage; /* what AICB writes as `vpp:`, 8 */
    int64_t ga;             /* micro-batches per iteration per DP rank, 16 */
    int64_t vpp_group;      /* interleaved: micro-batches a rank runs through one chunk before the
                               next (plan_vpp_group) when set or other than pp; 0 = pp's groups */
    double pp_comm_bytes;   /* one stage-boundary activation per micro-batch, 16777216 */
    int64_t micro_batch;    /* sequences per micro-batch when known (generated), else 0 */
    int64_t seq;            /* tokens per sequence when known (generated), else 0 */
    int64_t dp_shard;       /* HSDP: DP ranks per shard group (SHARD: dp_shard consecutive DP
                               ranks x CP; REPLICATE: dp/dp_shard, one per shard group); 0 none */
    HwEpRoute ep_route;     /* how the EP all-to-alls travel (hw.h: DeepEP, the node limit, the
                               busiest rank's load); zero: NCCL all-to-alls, balanced */
} WlParallel;
/* The route differs from a balanced NCCL all-to-all (formats then carry it). */
static inline bool wl_ep_route_set(const HwEpRoute *r) { return r->deepep || r->load > 1.0; }

/* Workload file formats: X(enum suffix, name as --format and JSON "origin" spell it). */
#define WL_FMT_LIST(X) \
    X(NONE, "none") X(SIMAI, "simai") X(ASTRASIM, "astrasim") X(OPTABLE, "optable") X(CHAKRA, "chakra") X(JSON, "json")
typedef enum {
#define X(e, n) WL_FMT_##e,
    WL_FMT_LIST(X)
#undef X
    WL_FMT_COUNT
} WlFormat;

/* SimAI header generations (simai_aicb.md §1). */
typedef enum {
    WL_SIMAI_HDR_NONE,    /* not read from SimAI text */
    WL_SIMAI_HDR_V1_0,    /* Jul 2024: model_parallel_NPU_group + checkpoints */
    WL_SIMAI_HDR_V1_1,    /* Sep 2024: + ep pp ga all_gpus */
    WL_SIMAI_HDR_CURRENT  /* Nov 2024 on: + vpp, pp_comm */
} WlSimaiHeader;

typedef struct Workload {
    TsArena *arena;
    char source[256];       /* "trainsim 0.1.0: llama3-405b tp8 pp16" or the input path */
    WlFormat origin;        /* the format it was read from, NONE when generated */
    char policy[40];        /* ASTRA-sim policy token: "HYBRID_TRANSFORMER_FWD_IN_BCKWD" */
    WlSimaiHeader simai_header;
    int64_t optable_elem_bytes; /* op table sizes are element counts of this size, 4 */
    WlParallel par;
    WlClass *classes;  int32_t n_classes, cap_classes;
    WlTask *tasks;     int32_t n_tasks, cap_tasks;
    int32_t *deps;     int32_t n_deps, cap_deps;
    WlRow *rows;       int32_t n_rows, cap_rows;
    /* per-rank workloads (wl_read_chakra of a set whose ranks are not one
     * layout's): one class per rank, explicit groups, peers by rank */
    int32_t *rank_class;    /* [par.world] the class of each rank; NULL: classes by stage */
    WlXGroup *xgroups;  int32_t n_xgroups, cap_xgroups;
    char warning[256];      /* a non-fatal note for the CLI to print, "" if none */
    bool world_unstated;    /* the file does not give the GPU count (SimAI headers without
                               all_gpus: AICB v1.0, MICRO; ASTRA-sim text; op tables):
                               par.world is the least it can be, tp*pp; simulate --gpus
                               may set it */
} Workload;

const char *wl_phase_name(WlPhase p);
const char *wl_kind_name(WlKind k);
const char *wl_group_name(WlGroup g);
bool wl_group_parse(const char *s, WlGroup *out);
/* The busbw table rows a collective over group g takes (HW_GROUP_ANY: only
 * the tables' "*" rows). */
HwGroupKind wl_group_hw(WlGroup g);
bool wl_kind_parse(const char *s, WlKind *out);
bool wl_phase_parse(const char *s, WlPhase *out);
const char *wl_format_name(WlFormat f);
bool wl_format_parse(const char *s, WlFormat *out);

/* ---- building ------------------------------------------------------------- */
/* Create an empty workload for `world` ranks (par.* = 1, world set).
 * NULL + TS_ERR_INTERNAL on allocation failure. wl_destroy(NULL) is a no-op. */
Workload *wl_create(int64_t world, TsError *err);
void wl_destroy(Workload *w);
/* Start a rank class; tasks/rows added afterwards belong to it. Returns its
 * id, -1 on allocation failure. */
int32_t wl_class_begin(Workload *w, const char *name, int32_t stage);
/* Append a task (copied; name copied into the arena) with its data and
 * control deps (task ids of the current class, each < the new id). Returns
 * the new id, -1 on allocation failure. */
int32_t wl_task_add(Workload *w, const WlTask *t, const int32_t *data_deps, int n_data,
                    const int32_t *ctrl_deps, int n_ctrl);
int32_t wl_row_add(Workload *w, const char *name, int64_t process_time);
/* Per-rank workloads: start the class of `rank` (w->rank_class must be set
 * up by the caller), and add an explicit group (members copied; returns the
 * value for WlTask.xgroup, 1 + its index; -1 on allocation failure). */
int32_t wl_class_begin_rank(Workload *w, const char *name, int64_t rank);
int32_t wl_xgroup_add(Workload *w, const char *name, const int64_t *members, int64_t n);
/* Nodes spanned by explicit group xg (1-based, as WlTask.xgroup). */
int64_t wl_xgroup_nodes(const Workload *w, int32_t xg, int64_t gpus_per_node);
/* Templates with micro = -1, row = -1, layer = -1, peer_stage = -1. */
WlTask wl_task_comp(const char *name, WlPhase ph, double flops, double mem_bytes, double dur_s);
WlTask wl_task_coll(const char *name, WlPhase ph, TsColl c, WlGroup g, double bytes);
WlTask wl_task_p2p(const char *name, WlPhase ph, bool send, int32_t peer_stage, double bytes, int32_t tag);
static inline const int32_t *wl_task_deps(const Workload *w, const WlTask *t)
{
    return w->deps ? w->deps + t->dep_first : NULL; /* no deps in the whole workload yet: NULL */
}

/* ---- ranks and groups ------------------------------------------------------ */
/* The layout as one line, "world=32 tp=8 cp=1 pp=2 dp=2 ep=1 etp=0 vpp=1
 * ga=8 micro_batch=1 seq=2048" (Chakra's trainsim_layout attribute), and back:
 * false when the text is not such a line. */
void wl_layout_format(const WlParallel *p, char *out, size_t cap);
bool wl_layout_parse(const char *s, WlParallel *p);
/* Class of a rank (the class whose stage is the rank's pipeline stage;
 * class 0 when there is one class). */
int32_t wl_rank_class(const Workload *w, int64_t rank);
int64_t wl_rank_stage(const Workload *w, int64_t rank);
/* The rank of `rank`'s pipeline peer in stage `stage`. */
int64_t wl_stage_peer(const Workload *w, int64_t rank, int64_t stage);
/* Members of the group of kind g that contains `rank`, ascending; returns the
 * count (<= cap); *gid gets a stable id unique over (kind, group). */
int64_t wl_group_members(const Workload *w, WlGroup g, int64_t rank, int64_t *out,
                         int64_t cap, int64_t *gid);
int64_t wl_group_size(const Workload *w, WlGroup g);
/* Size of group g and the nodes its members span (gpus_per_node ranks per
 * node), from the group of rank 0: the pipeline stage is the outermost rank
 * coordinate, so every stage's groups of a kind have this shape. false when
 * out of memory. */
bool wl_group_span(const Workload *w, WlGroup g, int64_t gpus_per_node, int64_t *size, int64_t *nodes);
/* Seconds of collective t over its group kind, of `size` ranks on `nodes`
 * nodes (wl_group_span), on net: EP all-to-alls by the workload's route
 * (hw_ep_a2a_time_s with par.ep_route), the others by hw_coll_time_s; 0 for
 * a group of one rank or nothing to move. */
double wl_coll_time_s(const Workload *w, const HwNet *net, const WlTask *t, int64_t size, int64_t nodes);

/* ---- summaries ------------------------------------------------------------- */
typedef struct WlSummary {
    int64_t n_tasks, n_comp, n_coll, n_p2p;
    double comp_s;          /* sum of COMP durations of class 0 */
    double coll_bytes;      /* sum of COLL bytes of class 0 */
    double flops;
} WlSummary;
void wl_summary(const Workload *w, int32_t cls, WlSummary *out);
/* Structural checks: deps exist, point backwards inside the class (hence
 * acyclic), rows refer to tasks of their class. TS_ERR_INTERNAL on failure. */
TsStatus wl_validate(const Workload *w, TsError *err);
/* Pair every RECV with the SEND of its peer stage that has the same tag (the
 * class's stage is the receiver's; the send's peer_stage must be it).
 * send_of (may be NULL): [n_tasks], the SEND of each RECV, -1 for other
 * tasks. Returns -1 when all pair up, else the id of the first RECV
 * without a SEND; -2 when out of memory. */
int32_t wl_pair_p2p(const Workload *w, int32_t *send_of);

#endif
