/*
 * trainsim/report_memory.h — what `trainsim memory` prints: memory per GPU
 * of every pipeline stage by category against the GPU's capacity, as a
 * table or as JSON ("trainsim-memory", version 1).
 *
 * Inputs: part_memory's stages and peak (partition.h) with the names the
 * command resolved. The text has one row per stage (weights, gradients,
 * optimizer, activations, other, total, headroom in GiB, and the verdict),
 * then the most loaded GPU and, when stages do not fit, how many. The JSON
 * carries every figure in bytes at full precision and each stage's detail
 * (parameters, activation parts, in-flight micro-batches, workspace,
 * runtime, fragmentation).
 *
 * Ownership: text is appended to the caller's TsBuf; nothing is allocated
 * beyond it. Failure: an allocation failure sets TsBuf.oom.
 *
 * Example:
 *     RepMemory r = {.model = m.name, .plan = desc, .memory_model = "trainsim", .gpu = g->name,
 *                    .capacity_bytes = g->hbm_bytes, .stages = st, .n_stages = p.pp, .peak = &peak};
 *     rep_memory_text(&r, &b);
 */
#ifndef TRAINSIM_REPORT_MEMORY_H
#define TRAINSIM_REPORT_MEMORY_H

#include "trainsim/common.h"
#include "trainsim/partition.h"

typedef struct RepMemory {
    const char *model;        /* "llama3-70b" */
    const char *plan;         /* plan_describe's text, "tp8 pp4 dp32 ..." */
    const char *memory_model; /* "trainsim" or "megatron" */
    bool selective_ops;       /* selective recompute as op-level SAC */
    bool grads_16bit;         /* the gradient buffer at 16 bit (--fp16-grad-reduce) */
    bool grads_freed;         /* --framework hf's loop frees the gradients after each step (--grads-freed) */
    const char *ce_fusion;    /* the loss's kernels: "none", "native" or "te" (--ce-fusion) */
    const char *gpu;          /* "h100-sxm5-80gb" */
    double capacity_bytes;    /* its HBM, e.g. 85899345920 */
    double min_headroom_bytes;/* --headroom: what a stage must leave free to fit, 0 */
    const PartMemory *stages; /* [n_stages] */
    int64_t n_stages;
    const PartMemory *peak;   /* the most loaded stage */
    const PartFitAlt *fit;    /* when a stage does not fit: the ways that fit (part_fit_alternatives) */
    int n_fit;
} RepMemory;

/* Stages whose total exceeds the capacity. */
int64_t rep_memory_over(const RepMemory *r);
void rep_memory_text(const RepMemory *r, TsBuf *out);
void rep_memory_json(const RepMemory *r, TsBuf *out);

#endif
