/* part_int.h — internals shared by the partition files (not public).
 *
 * Per-layer parameter counts from a ModelSpec, split by how TP shards them:
 *   tp   elements split over the TP ranks (column/row-parallel weights)
 *   rep  elements replicated on every TP rank (norms, row-linear biases,
 *        MLA down-projections, router)
 *   exp  routed-expert elements of ALL experts (split over EP x ETP)
 * Counts are the full (unsharded) model's, in elements. */
#ifndef TRAINSIM_PART_INT_H
#define TRAINSIM_PART_INT_H

#include "trainsim/partition.h"

typedef struct PartCounts {
    double dense_tp, dense_rep;        /* one dense layer */
    double moe_tp, moe_rep, moe_exp;   /* one MoE layer (attention + shared experts + router + experts) */
    double embed_tp, embed_rep;        /* word embedding (padded vocab) / positions, token types */
    double head_tp, head_rep;          /* LM head (untied: own matrix) / final norm (+ pooler) */
    double vocab_padded;               /* V padded for TP */
    int64_t n_moe;                     /* MoE layers in the model */
} PartCounts;

void part_counts(const ModelSpec *m, int64_t tp, PartCounts *c);

/* One module's parameter elements, unsharded (tp: split over TP, rep:
 * replicated on every TP rank), as Megatron-Core's layer specs hold them:
 * the attention block with its norms (and the output projection's share),
 * a dense MLP of width F without its norms (and fc2's share). */
typedef struct PartAttnParams {
    double tp, rep;              /* the whole block */
    double proj_tp, proj_rep;    /* of which the output projection (row-parallel, bias replicated) */
} PartAttnParams;
typedef struct PartMlpParams {
    double tp, rep;              /* fc1 (gate + up) and fc2, biases */
    double fc2_tp, fc2_rep;      /* of which fc2 */
} PartMlpParams;
void part_attn_params(const ModelSpec *m, PartAttnParams *out);
void part_mlp_params(const ModelSpec *m, double F, bool bias, PartMlpParams *out);
/* A norm's weights: LayerNorm 2H (weight + bias), RMSNorm H. */
double part_norm_params(const ModelSpec *m);
/* The norms of one sublayer (the MLP's, or the attention's without its
 * q/k norms): part_norm_params x model_sublayer_norms (2 for a sandwich). */
double part_sublayer_norm_params(const ModelSpec *m);
/* MoE layers among layers [a, b). O(1). */
int64_t part_moe_in_range(const ModelSpec *m, int64_t a, int64_t b);
/* Shampoo preconditioner bytes (fp32 statistics + inverse roots, 8*(a^2+b^2)
 * per block) of one layer on one rank, before DP sharding. */
double part_shampoo_layer_bytes(const ModelSpec *m, const ParallelPlan *p, bool moe);

/* Activation bytes of one layer for one micro-batch on one rank (trainsim
 * model). `full` = everything stored (recompute none/selective per plan);
 * `input` = the checkpointed layer input kept under full recompute. */
/* Stored activation bytes of one layer and micro-batch: `full` as the plan's
 * recompute mode keeps them (all of them under full recompute, where only
 * `input` stays between forward and backward), `remat` what op-level SAC
 * re-materializes in the layer's backward (0 otherwise). */
typedef struct PartLayerAct {
    double full, input, remat;
} PartLayerAct;
void part_layer_act(const ModelSpec *m, const ParallelPlan *p, bool moe, bool sac_ops,
                    PartLayerAct *out);

TsStatus part_memory_megatron(const ModelSpec *m, const ParallelPlan *p, const PartMemOptions *o,
                              PartMemory *stages, PartMemory *peak);

#endif
