/* The op-table generators' shared machinery (optable_gen.c: GPT-2 and the
 * dispatch; optable_llama.c: the Llama family with MoE; optable_bert.c:
 * BERT). Not a public header.
 *
 * A generator walks the forward of one HuggingFace model the way torch.fx
 * records it and appends one row per fx node whose value is a tensor:
 * kernels costed by hw.h, views (view, transpose, permute, expand, slicing,
 * tuple unpacking, a no-op .to/.float/.contiguous) as rows of time 0.0.
 * Nodes whose value is not a tensor (x.shape, x.dtype, a size's items,
 * arithmetic on them) have no row but take their name, so the names of the
 * rows are those fx gives: wl_ot_fn below.
 *
 * Row arguments (a, b, c, d) per kind; "elements" are of the activation dtype
 * (the plan's; fp32 with OT_FP32), "bytes" are exact (int64 indices, masks):
 *   R_MEM     a elements read + written, b other bytes
 *   R_EMB     a tokens, b width (the gathered rows)
 *   R_VEC     a elements of the output, b tensors of that size read + written
 *   R_SOFTMAX a elements            R_ACT  a elements
 *   R_NORM    a rows, b width       R_DROP a elements (1-byte mask)
 *   R_CAST    a elements converted between the activation dtype and fp32
 *   R_GEMM    a tokens (M), b out (N), c in (K)
 *   R_BMM     a batch, b M, c N, d K
 *   R_ATTN    a batch, b heads, c seq, d head dim (causal, flash-style SDPA)
 *   R_VIEW    nothing moved
 *   R_GRAD / R_TPAR / R_PP  a elements of the collective
 *
 * Legend: B micro-batch, S seq, H hidden, A heads, G kv heads, D head dim,
 * F ffn, V vocab, E experts, K top-k, T = B*S tokens. */
#ifndef TRAINSIM_OPTABLE_INT_H
#define TRAINSIM_OPTABLE_INT_H

#include "wl_internal.h"
#include "trainsim/workload_build.h"

typedef enum {
    R_MEM, R_EMB, R_VEC, R_SOFTMAX, R_NORM, R_ACT, R_GEMM, R_BMM, R_GRAD, R_TPAR, R_PP,
    R_VIEW, R_CAST, R_ATTN, R_DROP
} RKind;

enum {
    OT_FP32 = 1,   /* the row's tensors are fp32 whatever the plan's dtype (RMSNorm inside, router softmax) */
    OT_NOGRAD = 2  /* no backward: integer tensors, constants, torch.no_grad (rotary cos/sin) */
};

typedef struct OpRow {
    const char *name;
    RKind kind;
    double a, b, c, d;  /* see the file comment */
    unsigned flags;     /* OT_* */
} OpRow;

/* torch.fx's namespace (torch/fx/graph.py, _Namespace.create_name): a call
 * is named after its function or method, the n-th repeat "<name>_<n>"; a
 * name that would shadow a Python builtin (pow, float, getattr, sum) starts
 * at "_1". */
#define OT_FX_MAX 96
typedef struct OtFx {
    const char *base[OT_FX_MAX];
    int32_t used[OT_FX_MAX];
    int nb;
} OtFx;

typedef struct OtGen {
    const ModelSpec *m;
    const ParallelPlan *p;
    const HwModel *hw;
    TsDtype dt;         /* the plan's */
    bool neusight;      /* MEM rows by NeuSight's formula (and GPT-2's size quirks) */
    double act_bytes;   /* bytes of an activation element: 2 for bf16/fp16/fp8, 4 for fp32 */
    double mem_bw_gib;  /* NeuSight's Mem_Bw: the datasheet GB/s read as GiB/s */
    bool dp, tpm;       /* dp > 1, tp > 1 (at most one of dp, tp, pp) */
    double tp;          /* tensor-parallel degree */
    OtFx fx;
    char sfx[24];       /* ".<layer>" on the fx names of blocks after the first */
    char nm[192];       /* the name being built */
    WlRowSpec *r;       /* the rows */
    int64_t n, cap;
    char **names;       /* owned name strings */
    bool ok;            /* false after an allocation failure */
} OtGen;

/* Append one row (costed; collectives as NeuSight writes them).
 * OT(g, name, kind[, a[, b[, c[, d[, flags]]]]]): missing arguments are 0. */
void wl_ot_row(OtGen *g, const OpRow *o);
#define OT(g, ...) OT_((g), __VA_ARGS__, 0, 0, 0, 0, 0, 0)
#define OT_(g, nm, k, a, b, c, d, f, ...) wl_ot_row((g), &(OpRow){(nm), (k), (a), (b), (c), (d), (unsigned)(f)})

/* The fx name of the next call of `base` (g->nm, with the layer suffix). */
const char *wl_ot_fn(OtGen *g, const char *base);
/* A node whose value is not a tensor: takes its name, writes no row. */
void wl_ot_host(OtGen *g, const char *base);
/* g->nm = the formatted module path (fx: dots as underscores). */
const char *wl_ot_mod(OtGen *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The DP gradient row of a parameterized node: "<node>_grad", `elems`
 * elements, ALLREDUCE_ASYNC in backward (only when dp > 1). */
void wl_ot_grad(OtGen *g, const char *node, double elems);
/* The TP all-reduce after a row-parallel linear (only when tp > 1):
 * reduce_from_tensor_model_parallel_region[_n], blocking, both directions. */
void wl_ot_tp_allreduce(OtGen *g, double elems);
/* The PP send/recv row after layer l (pp > 1: after layer L/2 - 1, as
 * NeuSight places it after block 0 of its 2-stage split). */
void wl_ot_pp(OtGen *g, int64_t l, double elems);
/* Start block l: its fx names are a one-layer trace's (every block restarts
 * from `after_prologue`), suffixed ".l" after the first block. */
void wl_ot_layer(OtGen *g, const OtFx *after_prologue, int64_t l);

void wl_ot_llama(OtGen *g);
void wl_ot_bert(OtGen *g);

#endif
