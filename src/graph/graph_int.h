/* graph_int.h — helpers shared by the naming builders (src/graph only).
 * Legend: B batch, S seq, T = B*S tokens, H hidden, A heads, G kv heads,
 * D head dim, F ffn, V vocab, E experts, K top-k. */
#ifndef TRAINSIM_GRAPH_INT_H
#define TRAINSIM_GRAPH_INT_H

#include "trainsim/graph.h"

/* Index names "0".."n-1" interned once per build (experts, layers). */
typedef struct GraphNames {
    const char **idx;
    int64_t n;
} GraphNames;

bool graph_names_init(ModuleGraph *g, GraphNames *nm, int64_t n);
const char *graph_idx(ModuleGraph *g, const GraphNames *nm, int64_t i);

/* Routed experts are identical but for their name and expert_id: build
 * expert 0 (modules [m0, n_mods) with its root a child of `list`, ops
 * [o0, n_ops), params [p0, n_params)), then this appends experts 1..n-1 as
 * copies named by idx, exactly what building each would give. False after
 * an allocation failure (g->oom set). */
bool gb_clone_experts(ModuleGraph *g, int32_t list, int32_t m0, int32_t o0, int32_t p0, int64_t n,
                      const GraphNames *idx);

/* Set the cursor for the following ops. */
void graph_at(ModuleGraph *g, int32_t layer, GraphPart part, GraphRole role);

/* Python float repr of small constants such as eps (1e-05, 1e-12, 1e-06). */
void graph_fmt_eps(char *out, size_t cap, double eps);

/* A Dropout module's repr, "p=0.1, inplace=False" (NULL after an allocation
 * failure), and its op: none when p == 0, as PyTorch runs no kernel then. */
const char *gb_drop_extra(ModuleGraph *g, double p);
GraphOp *gb_dropout_op(ModuleGraph *g, int32_t module, const char *name, double numel, double p, GraphSplit split);

/* The framework builders; each fills g (modules, params, ops). */
TsStatus graph_build_megatron(ModuleGraph *g, TsError *err);
TsStatus graph_build_hf(ModuleGraph *g, TsError *err);
TsStatus graph_build_deepspeed(ModuleGraph *g, TsError *err);

/* Module + weight (out, in) [+ bias], no op (tree order and execution order
 * differ in Megatron, so ops are emitted separately with graph_op_gemm). */
int32_t gb_linear_mod(ModuleGraph *g, int32_t parent, const char *name, const char *cls, const char *extra,
                      int64_t in, int64_t out, bool bias, GraphSplit split);
/* Norm module + weight [+ bias when layernorm], no op. */
int32_t gb_norm_mod(ModuleGraph *g, int32_t parent, const char *name, const char *cls, const char *extra,
                    int64_t width, bool layernorm);
/* The router op (gating GEMM + softmax/top-k): ds_gemm counts the gating matmul,
 * ds_softmax_per_elem the softmax over T x E logits. */
GraphOp *gb_router_op(ModuleGraph *g, int32_t module, double tokens, int64_t H, int64_t E, int64_t K,
                      bool ds_gemm, double ds_softmax_per_elem);
/* Cross entropy over T x V logits (DeepSpeed: 0; saves fp32 softmax). */
/* A sliding-window layer's fused attention core: its FLOPs over the band's
 * keys (model_attn_keys), not S; nothing on full layers or a NULL op. */
void gb_attn_window(ModuleGraph *g, GraphOp *op, const ModelSpec *m, int64_t layer);
GraphOp *gb_loss_op(ModuleGraph *g, int32_t module, double tokens, int64_t V);
#endif
