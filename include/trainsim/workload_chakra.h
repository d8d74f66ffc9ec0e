/*
 * trainsim/workload_chakra.h — Chakra execution traces (the ET protobuf that
 * ASTRA-sim reads): one <prefix>.<rank>.et per rank and
 * <prefix>.comm_groups.json. The writer expands a Workload's rank classes to
 * real ranks on the fly; the reader turns a set back into a Workload
 * (workload.h); the checker verifies a set across ranks (every collective
 * issued alike by its group, every send received).
 *
 * Units: whole microseconds and bytes in the traces; seconds and bytes in
 * the Workload.
 *
 * Ownership: a Workload read is the caller's (wl_destroy); a decoded trace
 * owns its nodes in its arena (wl_chakra_trace_free). Files are written
 * atomically; on failure those already committed are removed. Failure:
 * TS_ERR_INPUT naming the file, rank and node (byte offset for a decode
 * error); TS_ERR_USAGE for a missing output directory or too many ranks;
 * TS_ERR_INTERNAL on allocation failure.
 */
#ifndef TRAINSIM_WORKLOAD_CHAKRA_H
#define TRAINSIM_WORKLOAD_CHAKRA_H

#include "trainsim/common.h"
#include "trainsim/workload.h"

#define WL_CHAKRA_VERSION "0.0.4"  /* GlobalMetadata.version we write */

/* ---- writer ------------------------------------------------------------------ */
typedef struct WlChakraOptions {
    int64_t max_ranks;      /* refuse to write more files than this, 1<<20 */
    bool comm_groups;       /* also write <prefix>.comm_groups.json (true) */
    int involved_dims;      /* entries of involved_dim (all true) on group collectives, 1;
                               set it to the network's dimension count, 0 omits the attr */
    bool generator_attr;    /* GlobalMetadata attrs generator="trainsim X", trainsim_layout
                               (wl_layout_format) and trainsim_groups (the first pg id of
                               each group kind) (true) */
    bool world_pg;          /* all-ranks collectives name an all-ranks group in comm_groups.json
                               (true: ASTRA-sim hangs on pipelines otherwise); false: no
                               pg_name, as ASTRA-sim's own microbenchmark traces */
} WlChakraOptions;
void wl_chakra_options_init(WlChakraOptions *o);
/* Write <prefix>.<rank>.et for every rank and <prefix>.comm_groups.json,
 * each atomically. The prefix's directory must exist (TS_ERR_USAGE). On
 * failure files already committed are removed. *bytes_out (may be NULL) gets
 * the total bytes written. */
TsStatus wl_write_chakra(const Workload *w, const WlChakraOptions *o, const char *prefix,
                         int64_t *bytes_out, TsError *err);
/* Encode one rank's trace into out (binary, appended); o may be NULL. */
TsStatus wl_chakra_encode_rank(const Workload *w, const WlChakraOptions *o, int64_t rank,
                               TsBuf *out, TsError *err);

/* ---- reader and checker ------------------------------------------------------ */
typedef struct WlChakraNode {
    uint64_t id;
    const char *name;
    int type;               /* Chakra NodeType: 4 COMP, 5 SEND, 6 RECV, 7 COLL */
    uint64_t duration_us;
    int64_t comm_type, comm_size, num_ops;
    uint64_t tensor_size;
    int32_t comm_src, comm_dst, comm_tag;
    bool is_cpu_op, has_is_cpu_op;
    bool pair;              /* attr trainsim_pair: a collective of an F&B pair (WL_F_PAIR) */
    const char *pg_name;
    int32_t n_data, n_ctrl;
    uint64_t *data_deps, *ctrl_deps;
} WlChakraNode;

typedef struct WlChakraTrace {
    TsArena *arena;
    char version[32];
    char layout[256];       /* GlobalMetadata attr trainsim_layout (wl_layout_format), "" */
    char groups[256];       /* GlobalMetadata attr trainsim_groups: the first pg id of each group
                               kind, "tp:1 dp:9 world:13", "" */
    WlChakraNode *nodes;
    int64_t n_nodes;
    int64_t *dep_index;     /* after the graph check (wl_check_chakra_visit): the node index
                               of every dep, node by node, data deps then control deps;
                               NULL before */
} WlChakraTrace;

/* A Chakra trace set <prefix>.<rank>.et + <prefix>.comm_groups.json as the
 * IR, checked as wl_check_chakra checks it. A set trainsim wrote (its
 * GlobalMetadata carries trainsim_layout, and every rank of a stage has the
 * same graph as the stage's first rank) becomes one class per pipeline stage
 * with group kinds and peer stages, as the JSON task graph of the same plan;
 * any other set becomes a per-rank workload (Workload.rank_class): one class
 * per rank, its comm_groups.json entries as explicit groups, peers by rank.
 * Nodes are put in dependency order (their file order where it is one).
 * COMP: duration_micros, else (0 µs with num_ops or tensor_size) the
 * replay's roofline (duration_s < 0), else ASTRA-sim's 1 ns; is_cpu_op:
 * WL_F_CPU. COLL: comm_size as ASTRA-sim reads it (ALL_GATHER per rank:
 * times the group size for the IR's whole buffer); REDUCE, GATHER and
 * SCATTER are refused (ASTRA-sim does not run them). Other node types are
 * zero-time tasks keeping their dependencies. TS_ERR_INPUT naming the file
 * and node. */
TsStatus wl_read_chakra(const char *prefix, Workload **out, TsError *err);

/* Decode a varint-delimited trace. TS_ERR_INPUT with the byte offset as col. */
TsStatus wl_chakra_decode(const char *name, const uint8_t *data, size_t len,
                          WlChakraTrace *out, TsError *err);
void wl_chakra_trace_free(WlChakraTrace *t);

typedef struct WlChakraCheck {
    int64_t ranks, nodes, colls, sends, recvs, groups;
    double bytes;
} WlChakraCheck;
/* Ranks of the set: <prefix>.<r>.et exist for r = 0 .. result-1. */
int64_t wl_chakra_ranks(const char *prefix);
/* A Chakra trace set named by its prefix (DIR/gpt3 for DIR/gpt3.0.et) or by
 * one of its files (DIR/gpt3.5.et): the prefix into buf (cap bytes), true;
 * false when path names neither. */
bool wl_chakra_prefix(const char *path, char *buf, size_t cap);
/* Read <prefix>.<r>.et for r = 0.. until missing and <prefix>.comm_groups.json;
 * check every dep exists, each trace is acyclic, every rank of a group issues
 * the same collectives in the same order with the same sizes, and every send
 * has its receive. TS_ERR_INPUT naming the rank and node on failure. */
TsStatus wl_check_chakra(const char *prefix, WlChakraCheck *out, TsError *err);
/* The same, handing each rank's decoded trace (deps exist, acyclic, resolved
 * in dep_index) to
 * visit(user, rank, trace, err) before the cross-rank checks, which run
 * after the last rank; a visit error stops the check. One decode serves a
 * reader that needs the nodes (sim_replay_chakra). */
typedef TsStatus (*WlChakraVisit)(void *user, int64_t rank, const WlChakraTrace *t, TsError *err);
TsStatus wl_check_chakra_visit(const char *prefix, WlChakraVisit visit, void *user, WlChakraCheck *out,
                               TsError *err);

#endif
