/*
 * trainsim/graph.h — ModuleGraph: the module tree of a model, its ops and
 * their costs, for one micro-batch of B sequences of S tokens.
 *
 * A ModuleGraph lives in one arena. Modules form a tree (name, class,
 * parent, children) named the way one framework names them (Megatron-Core
 * GPTModel, HuggingFace, DeepSpeed GPT2ModelPipe). Each module owns a list of
 * ops (rows of the GRAPH_OP_LIST table) and of parameter tensors. Every op
 * carries two sets of numbers:
 *   - DeepSpeed Flops Profiler counts (ds_flops, ds_macs): forward only, by
 *     the profiler's rules (linear without bias, softmax = numel,
 *     LayerNorm = 5*numel, embedding = 0, RMSNorm/RoPE/residual = 0, ...);
 *   - exact training FLOPs: fwd_flops, dgrad_flops (input gradient),
 *     wgrad_flops (weight gradient); attention core backward = 2.5x forward.
 * plus bytes moved at the graph's dtype and the parameters it owns.
 *
 * Ops and parameters are annotated with how tensor parallelism splits them
 * (GraphSplit), so partition.h can derive per-rank shapes without knowing
 * the framework. All op FLOPs and bytes are linear in B (build once with
 * batch 1 and scale when sweeping micro-batches).
 *
 * Ordering: modules are stored in tree order (pre-order, children in the
 * framework's registration order, which is what `print(model)` shows);
 * ops are stored in forward EXECUTION order (Megatron lists core_attention
 * before linear_qkv but runs linear_qkv first); parameters in module order.
 * A module's ops, its own and its descendants', form the contiguous span
 * [first_op, first_op + n_ops): a forward call nests its children's calls.
 * op.module is the module that owns an op directly (where the DeepSpeed
 * profiler would credit it). Routed experts have one module/op/param row per
 * expert (expert_id 0..E-1); nothing is multiplied implicitly.
 *
 * Dimensions: B batch, S seq, H hidden, A heads, G kv heads, D head dim,
 * F ffn, V vocab (padded when the naming is Megatron/DeepSpeed with tp>1),
 * E experts, K top-k.
 *
 * Example:
 *     GraphOptions o; graph_options_init(&o); o.batch = 4; o.seq = 128;
 *     ModuleGraph *g; graph_build(&bert_base, &o, &g, &err);
 *     GraphTotals t; graph_totals(g, g->root, &t);  // t.ds_macs = 44.7e9
 *     graph_destroy(g);
 */
#ifndef TRAINSIM_GRAPH_H
#define TRAINSIM_GRAPH_H

#include "trainsim/model.h"

/* X(NAME, "name", is_matmul) — op kinds. dims[] meaning per kind:
 *  GEMM          dims = {M tokens, K in, N out, has_bias}
 *  BATCHED_GEMM  dims = {batch*heads, M, K, N}
 *  ATTENTION_CORE dims = {B, A, Sq, Sk, D (qk), Dv} fused softmax(QK^T)V, flash-style
 *  SOFTMAX       dims = {numel}
 *  NORM          dims = {rows, width, is_layernorm, has_affine}
 *  ACTIVATION    dims = {numel, act kind}
 *  ELEMENTWISE   dims = {numel, inputs}
 *  EMBEDDING     dims = {tokens, width, rows}
 *  DROPOUT       dims = {numel}
 *  LOSS          dims = {tokens, V}
 *  ROUTER        dims = {tokens, H, E, K}
 *  ROPE          dims = {tokens, heads, D}
 */
#define GRAPH_OP_LIST(X)                 \
    X(GEMM, "gemm", 1)                   \
    X(BATCHED_GEMM, "batched_gemm", 1)   \
    X(ATTENTION_CORE, "attention_core", 1) \
    X(SOFTMAX, "softmax", 0)             \
    X(NORM, "norm", 0)                   \
    X(ACTIVATION, "activation", 0)       \
    X(ELEMENTWISE, "elementwise", 0)     \
    X(EMBEDDING, "embedding", 0)         \
    X(DROPOUT, "dropout", 0)             \
    X(LOSS, "loss", 0)                   \
    X(ROUTER, "router", 1)               \
    X(ROPE, "rope", 0)

typedef enum {
#define X(e, n, mm) GRAPH_OP_##e,
    GRAPH_OP_LIST(X)
#undef X
    GRAPH_OP_COUNT
} GraphOpKind;

/* How tensor parallelism (and expert parallelism) splits an op or a tensor. */
typedef enum {
    GRAPH_SPLIT_NONE,   /* replicated on every TP rank (norms, biases of row linears) */
    GRAPH_SPLIT_COL,    /* column-parallel: output dim / TP (QKV, fc1, LM head) */
    GRAPH_SPLIT_ROW,    /* row-parallel: input dim / TP (proj, fc2) */
    GRAPH_SPLIT_HEADS,  /* per-head work / TP (attention core, softmax) */
    GRAPH_SPLIT_VOCAB,  /* vocabulary rows / TP (word embedding, loss) */
    GRAPH_SPLIT_SEQ     /* sequence-parallel region: tokens / TP when SP is on */
} GraphSplit;

/* Where a module sits in the model, for stage assignment. */
typedef enum {
    GRAPH_ROLE_ROOT,
    GRAPH_ROLE_EMBED,   /* first pipeline stage */
    GRAPH_ROLE_LAYER,   /* inside transformer layer `layer` */
    GRAPH_ROLE_HEAD,    /* final norm, LM head, loss, pooler: last stage */
    GRAPH_ROLE_OTHER
} GraphRole;

/* Module-naming frameworks: X(enum suffix, name). */
#define GRAPH_NAMING_LIST(X) X(MEGATRON, "megatron") X(HF, "hf") X(DEEPSPEED, "deepspeed")
typedef enum {
#define X(e, n) GRAPH_NAMING_##e,
    GRAPH_NAMING_LIST(X)
#undef X
    GRAPH_NAMING_COUNT
} GraphNaming;

/* Which part of a layer an op belongs to (for AICB-style per-layer lines,
 * recompute rules and the optable writer). */
typedef enum {
    GRAPH_PART_NONE,
    GRAPH_PART_ATTN,     /* input norm, QKV, core, proj */
    GRAPH_PART_ATTN_CORE,/* the part selective recompute drops */
    GRAPH_PART_MLP,      /* post-attn norm, fc1, act, fc2 */
    GRAPH_PART_MOE       /* router and experts */
} GraphPart;

typedef struct GraphOp {
    GraphOpKind kind;
    int32_t module;        /* owning module id */
    const char *name;      /* "linear_qkv", "core_attention", arena string */
    int64_t dims[6];       /* see GRAPH_OP_LIST */
    GraphSplit split;      /* TP split */
    GraphPart part;
    int32_t layer;         /* transformer layer index, -1 outside layers */
    bool expert;           /* work of routed expert expert_id; dims[0] = its average
                              tokens B*S*K/E (rounded; FLOPs use the exact ratio) */
    int32_t expert_id;     /* 0..E-1 for expert ops, -1 otherwise */
    GraphRole role;        /* EMBED / LAYER / HEAD: which pipeline stage runs it */
    double ds_flops;       /* DeepSpeed profiler forward FLOPs */
    double ds_macs;        /* DeepSpeed profiler forward MACs */
    double fwd_flops;      /* exact forward FLOPs (causal per GraphOptions) */
    double dgrad_flops;    /* exact input-gradient FLOPs */
    double wgrad_flops;    /* exact weight-gradient FLOPs */
    double fwd_bytes;      /* bytes read+written in forward at the dtype */
    double bwd_bytes;      /* bytes read+written in backward (dgrad+wgrad) */
    double act_bytes;      /* activation bytes this op saves for backward */
    double drop;           /* ATTENTION_CORE: dropout probability on the probabilities, drawn
                              inside the fused kernel (the model's attn_dropout), 0 none */
} GraphOp;

typedef struct GraphParam {
    int32_t module;        /* owning module id */
    const char *name;      /* "weight", "bias" */
    int64_t shape[3];      /* logical (unsharded) shape, torch order (out, in) */
    int ndim;              /* 1, 2, or 3 for a packed experts tensor */
    GraphSplit split;      /* GRAPH_SPLIT_COL splits shape[0], ROW shape[1], VOCAB shape[0];
                              a packed tensor: COL its last dim, ROW shape[1] */
    bool expert;           /* a routed expert's tensor (one row per expert, see expert_id) */
    bool packed;           /* every routed expert's tensor stacked on dim 0 (transformers'
                              GptOssExperts): dim 0 is split over EP, expert_id is -1 */
    int32_t expert_id;     /* 0..E-1, -1 when not an expert tensor */
    bool tied;             /* shares storage with an earlier tensor (counted once) */
    int32_t tied_to;       /* the param id holding the storage when tied, else -1 */
    int32_t layer;         /* transformer layer of the owning module, -1 outside */
    int64_t numel;         /* product of the shape (per expert when expert) */
} GraphParam;

typedef struct GraphModule {
    const char *name;      /* attribute name in the parent: "linear_qkv", "0" */
    const char *cls;       /* class: "ColumnParallelLinear" */
    const char *extra_repr;/* PyTorch extra_repr: "in_features=768, out_features=768, bias=True" */
    int32_t parent;        /* -1 for the root */
    int32_t first_child;   /* -1 if leaf */
    int32_t next_sibling;  /* -1 if last */
    int32_t depth;         /* root = 0 */
    int32_t layer;         /* transformer layer index, -1 outside layers */
    GraphRole role;
    int32_t first_op, n_ops;     /* ops run inside this module (own + descendants'),
                                    contiguous in execution order; n_ops 0 if none */
    int32_t first_param, n_params;/* params owned directly (contiguous) */
    int32_t last_child;    /* -1 if leaf (for appending children in O(1)) */
    int32_t end_mod;       /* one past the last descendant: the subtree is [id, end_mod) */
    const char *repr;      /* non-NULL: the module overrides __repr__ (HF Conv1D prints
                              "Conv1D(nf=2304, nx=768)"), so DeepSpeed stats never show */
} GraphModule;

typedef struct GraphOptions {
    GraphNaming naming;    /* default: the family's usual framework */
    bool naming_set;
    int64_t batch;         /* B, 1 */
    int64_t seq;           /* S, e.g. 1024; 0: plan_default_seq(m) */
    int dtype_bytes;       /* 2 (bf16) */
    bool causal;           /* exact FLOPs skip the masked half of attention */
    bool flash;            /* attention core fused (no S^2 activations stored) */
    int64_t tp;            /* used only for vocab padding in names/shapes; 1 */
} GraphOptions;

/* Builder position: what the next ops belong to (set by the naming builders). */
typedef struct GraphCursor {
    int32_t layer;         /* -1 outside transformer layers */
    GraphPart part;
    GraphRole role;
    int32_t expert_id;     /* -1 outside routed experts */
} GraphCursor;

typedef struct ModuleGraph {
    TsArena *arena;
    ModelSpec spec;
    GraphOptions opt;
    GraphModule *mods;  int32_t n_mods;
    GraphOp *ops;       int32_t n_ops;
    GraphParam *params; int32_t n_params;
    int32_t root;       /* 0 */
    int64_t vocab;      /* V as built: padded for megatron/deepspeed naming, e.g. 50304 */
    int64_t tokens;     /* B*S */
    int32_t *layer_first_op;  /* [spec.layers + 1]: layer l runs ops [layer_first_op[l],
                                 layer_first_op[l + 1]) (contiguous in execution order);
                                 [spec.layers] = one past the last layer op */
    int32_t *layer_expert_ops;/* [2 * spec.layers]: routed-expert ops of layer l are the
                                 contiguous run [x[2l], x[2l + 1]), expert 0 first, each
                                 expert's ops contiguous; empty (equal) in dense layers */
    GraphCursor at;     /* builder state (see graph_add_*) */
    bool oom;           /* an allocation failed while building; graph_build fails */
    int32_t cap_mods, cap_ops, cap_params;
} ModuleGraph;

/* Sums over a subtree (recursive, like the profiler's get_module_*). */
typedef struct GraphTotals {
    double ds_flops, ds_macs;
    double fwd_flops, dgrad_flops, wgrad_flops;
    double fwd_bytes, bwd_bytes, act_bytes;
    int64_t params;        /* tied tensors counted once */
} GraphTotals;

const char *graph_op_name(GraphOpKind k);
const char *graph_naming_name(GraphNaming n);
bool graph_naming_parse(const char *s, GraphNaming *out);

void graph_options_init(GraphOptions *o);
/* Build the graph of `m`. On failure returns a status, fills err and *out is
 * NULL. The caller owns *out (graph_destroy). */
TsStatus graph_build(const ModelSpec *m, const GraphOptions *o, ModuleGraph **out, TsError *err);
void graph_destroy(ModuleGraph *g);

void graph_totals(const ModuleGraph *g, int32_t module, GraphTotals *out);
/* Totals of the whole model (root), with tied params counted once. */
void graph_model_totals(const ModuleGraph *g, GraphTotals *out);
/* Parameter count of a subtree the DeepSpeed way: a tied tensor counts in
 * every module holding it, once within the subtree. */
int64_t graph_params(const ModuleGraph *g, int32_t module);
/* Dotted path of a module from the root ("decoder.layers.0.mlp"); "" for
 * the root. Returns the length written (truncated to cap). */
size_t graph_module_path(const ModuleGraph *g, int32_t module, char *out, size_t cap);
/* Module id at a dotted path, -1 if none. */
int32_t graph_find(const ModuleGraph *g, const char *path);

/* ---- builders ----------------------------------------------------------------
 * Each returns the new module id (or -1 after an allocation failure, which
 * also sets g->oom), computes shapes, FLOPs, MACs, bytes and params, and
 * tags ops with g->at (layer, part, role, expert). `tokens` is the M of the
 * GEMM (B*S normally, fewer for experts or the BERT pooler); for experts
 * pass the exact average as double via graph_add_linear_f. */
int32_t graph_add_module(ModuleGraph *g, int32_t parent, const char *name, const char *cls,
                         const char *extra_repr);
int32_t graph_add_param(ModuleGraph *g, int32_t module, const char *name, int64_t d0, int64_t d1,
                        GraphSplit split);
/* Every routed expert's (d1, d2) tensor stacked into one (E, d1, d2) — or
 * (E, d1) when d2 is 0 — parameter (transformers' GptOssExperts): GraphParam.packed.
 * split: GRAPH_SPLIT_COL splits the last dim, ROW dim 1. */
int32_t graph_add_packed_param(ModuleGraph *g, int32_t module, const char *name, int64_t experts, int64_t d1,
                               int64_t d2, GraphSplit split);
/* A tied parameter: shares `owner`'s storage; counted once in totals. */
int32_t graph_add_tied_param(ModuleGraph *g, int32_t module, const char *name, int32_t owner);
/* Append an op to `module` with all costs zero; the caller fills them. */
GraphOp *graph_add_op(ModuleGraph *g, int32_t module, GraphOpKind kind, const char *name);
/* Linear layer (x W^T + b): module + weight (out, in) [+ bias] + GEMM op.
 * DeepSpeed: 2*MACs (bias not counted). */
int32_t graph_add_linear(ModuleGraph *g, int32_t parent, const char *name, const char *cls,
                         const char *extra_repr, double tokens, int64_t in, int64_t out, bool bias,
                         GraphSplit split);
/* GEMM op only, owned by `module` (e.g. an LM head that reuses tied weights). */
GraphOp *graph_op_gemm(ModuleGraph *g, int32_t module, const char *name, double tokens, int64_t in,
                       int64_t out, bool bias, GraphSplit split);
/* Norm over `width` for `rows` rows. ds_per_elem: DeepSpeed FLOPs per element
 * (5 for F.layer_norm with affine, 0 for apex FusedLayerNorm and RMSNorm). */
GraphOp *graph_op_norm(ModuleGraph *g, int32_t module, const char *name, double rows, int64_t width,
                       bool layernorm, double ds_per_elem);
/* Elementwise op over numel elements with `inputs` inputs; ds_per_elem as above. */
GraphOp *graph_op_eltwise(ModuleGraph *g, int32_t module, GraphOpKind kind, const char *name,
                          double numel, int inputs, double ds_per_elem, GraphSplit split);
/* Rotary embedding of `heads` heads of width `dim` on `tokens` tokens, split
 * by heads over TP: dims {tokens, heads, dim} (numel = their product). */
GraphOp *graph_op_rope(ModuleGraph *g, int32_t module, double tokens, int64_t heads, int64_t dim);
/* Batched matmul [b, m, k] x [b, k, n] of two activations (eager attention). */
GraphOp *graph_op_bmm(ModuleGraph *g, int32_t module, const char *name, int64_t b, int64_t m, int64_t k,
                      int64_t n, bool ds_baddbmm);
/* Fused attention softmax(Q K^T) V: B, A query heads, G kv heads, Sq, Sk, Dqk, Dv.
 * DeepSpeed counts it as SDPA (two matmuls, no causal halving). Exact FLOPs
 * honour o.causal; backward = 2.5x forward. */
GraphOp *graph_op_attention(ModuleGraph *g, int32_t module, const char *name, int64_t B, int64_t A,
                            int64_t G, int64_t Sq, int64_t Sk, int64_t Dqk, int64_t Dv);
/* Print the tree in the "Module: X / Submodule: name (Class)" format of a
 * Megatron module-tree dump (no trailing newline after the last line). */
void graph_print_tree(const ModuleGraph *g, TsBuf *out);
/* JSON array of modules with depth, class, params, MACs, FLOPs. */
void graph_to_json(const ModuleGraph *g, TsBuf *out);
/* Graphviz DOT of the module tree. */
void graph_to_dot(const ModuleGraph *g, TsBuf *out);

#endif
