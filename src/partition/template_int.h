/* template_int.h — internals shared by the layer-template files
 * (template.c: Megatron-Core, torchtitan, Megatron-DeepSpeed; template_hf.c:
 * HuggingFace transformers in eager mode). Not public. */
#ifndef TRAINSIM_TEMPLATE_INT_H
#define TRAINSIM_TEMPLATE_INT_H

#include "part_int.h"

typedef struct Tx {
    const ModelSpec *m;
    const ParallelPlan *p;
    const PartRuntime *rt;
    int64_t t, T, Tsp, S, Sl, B;
    double ab;
    bool gated;
} Tx;

/* A kernel appended to block b (zeroed, one launch). */
PartKernel *tpl_add(PartBlockT *b, const char *name, PartKernelKind kind, PartKernelPart part);
/* `batch` products (M x K) @ (K x N); K*N parameters each. */
PartKernel *tpl_gemm(PartBlockT *b, const char *name, int64_t batch, int64_t M, int64_t N, int64_t K);
/* A memory-bound kernel: bytes read + written forward / by its backward. */
PartKernel *tpl_mem(PartBlockT *b, const char *name, double fwd, double bwd, double flops);
int64_t tpl_kv_heads(const ModelSpec *m);

/* HuggingFace transformers' modules in eager mode (--framework hf): the
 * blocks of a layer, the embedding and the head with the loss. */
void tpl_hf_attention(const Tx *x, PartBlockT *b);
void tpl_hf_mlp(const Tx *x, PartBlockT *b);
void tpl_hf_moe(const Tx *x, PartBlockT *b);
void tpl_hf_embed_head(const Tx *x, PartTemplate *o);
/* autograd's AccumulateGrad into the block's kept gradients, and the
 * block's parameter tensors (after its parameters are counted). */
void tpl_hf_accumulate(const Tx *x, PartBlockT *b, PartBlock which);

#endif
