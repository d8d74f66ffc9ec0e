/* builder_int.h — the task-graph generator's state, shared by builder.c
 * (emission: layers, schedules, step) and builder_cost.c (the costed step's
 * blocks as the emission reads them). Not a public header. */
#ifndef TRAINSIM_BUILDER_INT_H
#define TRAINSIM_BUILDER_INT_H

#include "wl_internal.h"
#include "trainsim/workload_build.h"

/* One block of a layer (or the embedding, the head) for one micro-batch on
 * one rank: the costed step's times (cost.h) with the template's FLOPs,
 * bytes, parameters and gradient tensors (partition.h). */
typedef struct Block {
    double fwd_s, ig_s, wg_s;       /* per rank per micro-batch */
    double fwd_flops, ig_flops, wg_flops;
    double fwd_bytes, bwd_bytes;
    double recompute_s;             /* extra forward work redone in backward */
    double nr_ig_s, nr_wg_s;        /* ZeRO-3 under --recompute-layers: a layer left out of the full
                                       recompute copies its parameters out in its backward too
                                       (the copy kernel without recompute, part_fsdp_copy_kernel) */
    double gemm_fwd_s;              /* of fwd_s: GEMMs */
    double gemm_ig_s;               /* of ig_s: GEMMs (dgrad) */
    double gemm_wg_s;               /* of wg_s: GEMMs (wgrad) */
    double core_fwd_s, core_ig_s;   /* the attention core (attention block) */
    double params;                  /* per-rank parameter elements */
    double eparams;                 /* of which routed experts (reduced over DP_EP) */
    double grad_t[2];               /* dense tensors in backward order (PartBlockT.grad_t) */
    double egrad_t[2];              /* routed experts: all local fc2, then fc1 */
} Block;

typedef struct Gen {
    Workload *w;
    const ModelSpec *m;
    const ParallelPlan *p;
    const PartTemplate *t;
    const CostCtx *cc;
    const WlBuildOptions *o;
    int32_t last;                   /* tail of the compute stream */
    int32_t *pending; int64_t n_pending; size_t cap_pending; /* async DP collectives */
    int32_t *fwd_last;              /* [mb * n_path + path chunk] */
    Block attn, mlp, moe, embed, head;
    double bucket;                  /* grad elements waiting for a bucket */
    double ebucket;                 /* expert grad elements waiting (expert-DP group) */
    double bucket_max;
    bool final_flush;               /* dp_after_backward: the step's flush is running */
    double *deferred; int64_t n_deferred; size_t cap_deferred; /* dp_after_backward: closed buckets
                                       waiting for the step (elements; < 0: expert buffer) */
    int64_t *first;                 /* [n_chunks + 1]: first layer of each chunk */
    int64_t n_chunks;               /* model chunks, pp x vpp */
    int64_t n_path;                 /* chunks the schedule walks ("path chunks"): the model's, or
                                       dualpipe's two copies of the pipeline, 2 x n_chunks (path
                                       chunk n_chunks + c: model chunk c of the copy entering at
                                       rank pp-1, on rank pp-1-c) */
    int32_t unit_end[2];            /* last task of the two latest FSDP units (layers, root;
                                       [1] newest): a ZeRO-3 gather waits for [1] */
    int32_t *pg_ag;                 /* [layers + 2]: the dist-opt parameter gather of each layer
                                       (then embedding, head) of this class, -1 none */
    int32_t join;                   /* an asynchronous task the next task on the stream
                                       also waits for (CP ring), -1 */
    WlGroup dpg;                    /* gradient reduction group: DP, or DP_CP when cp > 1 */
    int64_t dpn;                    /* its size, dp*cp */
    int64_t edpn;                   /* expert-DP group size (DP_EP) */
    int64_t rpn;                    /* HSDP replicas (REPLICATE group size), 1 without */
    bool split_w;                   /* this backward runs its input gradients only (plan_order's
                                       I task); its weight gradients run later as a W pass (chunk_w) */
    bool in_pair;                   /* emitting an F&B pair (pair()): its EP all-to-alls chain on
                                       pair_ep, its compute takes pair_stretch */
    int32_t pair_ep;                /* the tail of the pair's all-to-all chain */
    double pair_stretch;            /* compute time factor inside the pair, 1/(1 - share) */
    double pair_comm_s;             /* the pair's collectives on the compute stream, seconds
                                       (WlBuildOptions.net) */
    double pair_ring_s;             /* what the pair's CP ring exchanges left exposed lacks of
                                       the stretch (pair_ring), seconds */
    bool oom;
} Gen;

/* Bytes per gradient element reduced over DP (fp32 main grads by default). */
double wl_gen_grad_bytes(const Gen *g);
/* The blocks of g->t costed by cs: g->attn ... g->head. */
void wl_gen_blocks(Gen *g, const CostStep *cs);
/* first[c] = the first layer of chunk c (n_chunks + 1 entries), the plan's
 * split (plan_model_chunk_layers: the MTP modules' layers on the last). */
/* Layers the builder numbers: the model's and its MTP modules' (the
 * embedding's and the head's gathers take the two indices after). */
static inline int64_t wl_gen_layers(const ModelSpec *m) { return m->layers + m->mtp_layers; }
void wl_gen_chunk_split(const ModelSpec *m, const ParallelPlan *p, int64_t n_chunks, int64_t *first);

#endif
