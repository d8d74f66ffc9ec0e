/* sim_warnings.c — the sentence of each simulation warning (SimWarning:
 * its kind and figures; simulate's "warning:" lines, the JSON's
 * "warnings", the HTML report's list). */
#include <stdio.h>

#include "trainsim/report_sim.h"

/* "5,4,...,3,1" into buf (cap bytes); false when it does not fit. */
static bool split_text(const SimBalance *b, char *buf, size_t cap)
{
    size_t k = 0;
    for (int32_t s = 0; s < b->n && k < cap; s++) k += (size_t)snprintf(buf + k, cap - k, s ? ",%d" : "%d", b->layers[s]);
    return k < cap;
}

static void balance_warning(const SimBalance *bl, char *buf, size_t cap)
{
    char split[96];
    if (split_text(bl, split, sizeof split))
        snprintf(buf, cap, "--stage-layers %s evens the stages' work: %.3g s per micro-batch on the busiest, now %.3g s",
                 split, bl->busiest_s, bl->current_s);
    else
        snprintf(buf, cap,
                 "an even split of the layers lowers the busiest stage's work per micro-batch from %.3g s to %.3g s "
                 "(--json: \"balance\")",
                 bl->current_s, bl->busiest_s);
}

void rep_sim_warning(const SimResult *r, int k, char *buf, size_t cap)
{
    const SimWarning *w = &r->warnings[k];
    long long i = (long long)w->i, j = (long long)w->j;
    switch (w->kind) {
    case SIM_WARN_NO_FIT: {
        const char *hint = r->memory.fit_hint;
        snprintf(buf, cap, "does not fit: %.1f GiB per GPU needed, %.1f GiB available (stage %lld)%s%s", w->a, w->b, i,
                 hint[0] ? "; " : "", hint);
        return;
    }
    case SIM_WARN_NO_MEMORY: snprintf(buf, cap, "memory not estimated: %s", w->text); return;
    case SIM_WARN_NO_TENSOR_CORES:
        snprintf(buf, cap, "%s has no %s tensor cores: its GEMMs are timed at %s, MFU/HFU are of the %s peak", w->text,
                 ts_dtype_name((TsDtype)w->i), ts_dtype_name((TsDtype)w->j), ts_dtype_name((TsDtype)w->j));
        return;
    case SIM_WARN_FEW_MB:
        snprintf(buf, cap, "only %lld micro-batches for %lld pipeline stages: the bubble dominates (%.0f%%)", i, j,
                 100 * w->a);
        return;
    case SIM_WARN_BUBBLE_SLOW:
        snprintf(buf, cap,
                 "pipeline bubble is %.0f%% of the step, fill and drain %.0f%%: the rest is waiting for slower stages "
                 "(slowest: %lld); balance the work per stage (--stage-layers)",
                 100 * w->a, 100 * w->b, i);
        return;
    case SIM_WARN_BUBBLE:
        snprintf(buf, cap, "pipeline bubble is %.0f%% of the step: more micro-batches%s would help", 100 * w->a,
                 w->i ? "" : " or interleaving");
        return;
    case SIM_WARN_BALANCE: balance_warning(&r->balance, buf, cap); return;
    case SIM_WARN_TP_NODES:
        snprintf(buf, cap, "tensor parallel group of %lld spans %lld nodes: TP traffic crosses the network", i, j);
        return;
    case SIM_WARN_CP_NODES: snprintf(buf, cap, "context parallel group spans %lld nodes", i); return;
    case SIM_WARN_EP_NODES: snprintf(buf, cap, "expert parallel all-to-all spans %lld nodes", i); return;
    case SIM_WARN_SEQ_EXPERTS:
        snprintf(buf, cap, "--sequential-experts has no effect: %s has no routed experts", w->text);
        return;
    case SIM_WARN_SELECTIVE_OPS: snprintf(buf, cap, "--selective-ops has no effect without --recompute selective"); return;
    case SIM_WARN_FP32_EXPERTS:
        snprintf(buf, cap,
                 "the routed experts run in FP32 on the CUDA cores: under amp their weights are fp32 and "
                 "transformers' grouped_mm takes bf16 only, so each expert is one fp32 mm; --precision pure keeps "
                 "them in bf16");
        return;
    case SIM_WARN_CP_COMM:
        snprintf(buf, cap, "--cp-comm %s has no effect with cp 1", sim_cp_comm_name((SimCpComm)w->i));
        return;
    case SIM_WARN_MOE_HOST:
        snprintf(buf, cap,
                 "the GPU waits %.0f%% of the step for the host (Megatron-Core's MoE layer syncs on its token "
                 "counts, launches each expert's kernels): token drop under CUDA graphs removes it "
                 "(--moe-capacity-factor 1 --moe-pad-to-capacity --cuda-graphs); a larger --ep or micro-batch "
                 "shrinks it",
                 100 * w->a);
        return;
    case SIM_WARN_TP_OVERLAP_PCIE:
        snprintf(buf, cap,
                 "--tp-overlap on %s, whose GPUs talk over PCIe: Transformer Engine's comm+GEMM overlap "
                 "(Userbuffers) is built on CUDA multicast within an NVLink domain (TransformerEngine issue 1071); "
                 "its overlap here is an assumption",
                 w->text);
        return;
    case SIM_WARN_CUDA_GRAPHS:
        snprintf(buf, cap, "--cuda-graphs not applied: %s", w->text);
        return;
    case SIM_WARN_HOST_US:
        snprintf(buf, cap, "--host-us has no effect: only --framework hf and Megatron-Core's MoE layers (without "
                            "CUDA graphs) put the host's dispatch in the loop");
        return;
    case SIM_WARN_GRADS_FREED:
        snprintf(buf, cap, "%s", SIM_GRADS_FREED_NO_EFFECT);
        return;
    case SIM_WARN_SOFTWARE:
        snprintf(buf, cap, "--software 2024 has no effect: the %s preset has no 2024 figures (model.software_2024)",
                 w->text);
        return;
    }
    snprintf(buf, cap, "warning %d", (int)w->kind);
}
