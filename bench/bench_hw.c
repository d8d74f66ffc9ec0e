/* bench_hw: speed of the cost functions (the simulator calls them millions
 * of times) and the model's error against calibration_facts.md tables.
 * Prints figures only; tests never assert on time. Needs TRAINSIM_DATA or a
 * build tree with data/. */
#include <math.h>
#include <stdio.h>
#include <time.h>

#include "trainsim/hw.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

typedef struct GemmRow {
    const char *gpu;
    TsDtype dt;
    int64_t m, n, k;
    double meas; /* TFLOP/s */
    const char *src;
    HwSoftware sw; /* the libraries measured: 2024 for Azure's Sep 2024 sweep (CUDA 12.5/12.6) */
} GemmRow;

static const GemmRow GEMMS[] = {
    {"h100-sxm5-80gb", TS_DTYPE_BF16, 1024, 1024, 1024, 176.6, "torch sweep (launch-bound)", HW_SOFTWARE_2025},
    {"h100-sxm5-80gb", TS_DTYPE_BF16, 2048, 2048, 2048, 676.6, "torch sweep", HW_SOFTWARE_2025},
    {"h100-sxm5-80gb", TS_DTYPE_BF16, 4096, 4096, 4096, 788.7, "torch sweep", HW_SOFTWARE_2025},
    {"h100-sxm5-80gb", TS_DTYPE_BF16, 8192, 8192, 8192, 797.5, "torch sweep", HW_SOFTWARE_2025},
    {"h100-sxm5-80gb", TS_DTYPE_BF16, 10240, 10240, 10240, 719.7, "torch sweep (throttled)", HW_SOFTWARE_2025},
    {"h100-sxm5-80gb", TS_DTYPE_FP16, 4096, 4096, 4096, 760.0, "torch sweep", HW_SOFTWARE_2025},
    {"h100-sxm5-80gb", TS_DTYPE_TF32, 4096, 4096, 4096, 402.2, "torch sweep", HW_SOFTWARE_2025},
    {"h100-sxm5-80gb", TS_DTYPE_FP8, 4096, 4096, 4096, 1216.9, "Azure cuBLASLt", HW_SOFTWARE_2024},
    {"h100-sxm5-80gb", TS_DTYPE_FP8, 8192, 8192, 8192, 1290.1, "Azure cuBLASLt", HW_SOFTWARE_2024},
    {"h100-sxm5-80gb", TS_DTYPE_FP8, 6144, 12288, 12288, 1351.4, "Azure cuBLASLt", HW_SOFTWARE_2024},
    {"h100-sxm5-80gb", TS_DTYPE_FP8, 802816, 192, 768, 663.8, "Azure (huge M)", HW_SOFTWARE_2024},
    {"h100-sxm5-80gb", TS_DTYPE_BF16, 2048, 2048, 13312, 794.5, "MAMF best shape", HW_SOFTWARE_2025},
    {"a100-sxm4-80gb", TS_DTYPE_BF16, 1024, 10240, 5120, 271.2, "MAMF best shape", HW_SOFTWARE_2025},
    {"a100-sxm4-80gb", TS_DTYPE_FP16, 2048, 2048, 2048, 221.8, "Azure cuBLASLt", HW_SOFTWARE_2024},
    {"a100-sxm4-80gb", TS_DTYPE_FP16, 4096, 4096, 4096, 228.0, "Azure cuBLASLt", HW_SOFTWARE_2024},
    {"a100-sxm4-80gb", TS_DTYPE_FP16, 8192, 8192, 8192, 253.7, "Azure cuBLASLt", HW_SOFTWARE_2024},
    {"a100-sxm4-80gb", TS_DTYPE_FP16, 6144, 12288, 12288, 250.8, "Azure cuBLASLt", HW_SOFTWARE_2024},
    {"a100-sxm4-80gb", TS_DTYPE_FP16, 1024, 2145, 1024, 132.8, "Azure (odd N)", HW_SOFTWARE_2024},
    {"a100-sxm4-80gb", TS_DTYPE_FP16, 802816, 192, 768, 157.8, "Azure (huge M)", HW_SOFTWARE_2024},
    {"a100-pcie-40gb", TS_DTYPE_BF16, 4096, 4096, 4096, 234.1, "torch sweep #108", HW_SOFTWARE_2025},
    {"h200-sxm-141gb", TS_DTYPE_FP8, 8192, 8192, 8192, 1300.6, "Azure cuBLASLt", HW_SOFTWARE_2024},
    {"b200", TS_DTYPE_BF16, 1792, 16128, 3072, 1745.0, "MAMF best shape", HW_SOFTWARE_2025},
    {"mi300x", TS_DTYPE_BF16, 10240, 15360, 8192, 668.4, "MAMF best shape", HW_SOFTWARE_2025},
};

/* The kernel model of a GPU preset on the libraries `sw`; false (and a line saying why) when it does not load. */
static bool load_gpu(const char *name, HwSoftware sw, HwModel *m)
{
    TsError e = {0};
    hw_model_init(m);
    if (hw_gpu_load(name, &m->gpu, &e) == TS_OK) {
        hw_gpu_software(&m->gpu, sw);
        return true;
    }
    printf("  cannot load %s: %s\n", name, e.msg);
    return false;
}

static void gemm_table(void)
{
    printf("GEMM model vs measured TFLOP/s (calibration_facts.md 1.1-1.3)\n");
    printf("  %-15s %-5s %22s %9s %9s %8s  %s\n", "gpu", "dtype", "MxNxK", "pred", "meas", "error", "source");
    double sum = 0;
    int n = 0;
    for (size_t i = 0; i < sizeof GEMMS / sizeof GEMMS[0]; i++) {
        const GemmRow *r = &GEMMS[i];
        HwModel m;
        if (!load_gpu(r->gpu, r->sw, &m)) continue;
        double p = hw_gemm_flops_per_s(&m, 1, r->m, r->n, r->k, r->dt) / 1e12;
        char shape[40];
        snprintf(shape, sizeof shape, "%lldx%lldx%lld", (long long)r->m, (long long)r->n, (long long)r->k);
        double err = p / r->meas - 1;
        printf("  %-15s %-5s %22s %9.1f %9.1f %+7.1f%%  %s%s\n", r->gpu, ts_dtype_name(r->dt), shape, p, r->meas,
               err * 100, r->src, r->sw == HW_SOFTWARE_2024 ? " (2024 libraries)" : "");
        if (r->m > 1024) sum += fabs(err), n++;
    }
    printf("  mean |error| excluding 1024^3: %.1f%% over %d rows\n\n", 100 * sum / n, n);
}

/* Attention curves, calibration_facts.md 2.1 (FA2 fwd+bwd, flash-attention
 * README plots: hidden 2048, batch 16k/seq) and 2.2 (cuDNN on H100, fwd and
 * bwd panels of the FA3 paper). pass: 0 fwd, 1 bwd, 2 fwd+bwd (FA FLOP
 * convention: bwd 2.5x fwd, causal halves). */
typedef struct AttnRow {
    const char *gpu, *what;
    int d, causal, pass;
    double meas[6]; /* seq 512 .. 16k */
} AttnRow;
/* the FA3 paper's cuDNN rows: July 2024, the 2024 libraries */

static const AttnRow ATTNS[] = {
    {"a100-sxm4-80gb", "FA2 fwd+bwd", 64, 0, 2, {132, 153, 162, 171, 175, 176}},
    {"a100-sxm4-80gb", "FA2 fwd+bwd", 128, 0, 2, {151, 172, 187, 196, 201, 203}},
    {"a100-sxm4-80gb", "FA2 fwd+bwd", 64, 1, 2, {88, 119, 140, 156, 165, 171}},
    {"a100-sxm4-80gb", "FA2 fwd+bwd", 128, 1, 2, {99, 133, 155, 173, 182, 189}},
    {"h100-sxm5-80gb", "cuDNN fwd", 128, 0, 0, {497, 574, 617, 609, 600, 595}},
    {"h100-sxm5-80gb", "cuDNN fwd", 128, 1, 0, {315, 410, 484, 518, 529, 539}},
    {"h100-sxm5-80gb", "cuDNN bwd", 128, 0, 1, {305, 408, 465, 499, 518, 516}},
    {"h100-sxm5-80gb", "cuDNN fwd", 64, 0, 0, {335, 373, 395, 408, 412, 413}},
    {"h100-sxm5-80gb", "cuDNN fwd", 64, 1, 0, {225, 288, 334, 363, 379, 388}},
};

static void attn_table(void)
{
    printf("Attention model vs measured TFLOP/s (calibration_facts.md 2.1-2.2), seq 512..16k\n");
    double sum = 0;
    int n = 0;
    for (size_t i = 0; i < sizeof ATTNS / sizeof ATTNS[0]; i++) {
        const AttnRow *r = &ATTNS[i];
        HwModel m;
        bool cudnn = r->what[0] == 'c';
        if (!load_gpu(r->gpu, cudnn ? HW_SOFTWARE_2024 : HW_SOFTWARE_2025, &m)) continue;
        printf("  %-15s %-12s hd%-3d %-10s", r->gpu, r->what, r->d, r->causal ? "causal" : "non-causal");
        for (int k = 0; k < 6; k++) {
            int64_t s = 512LL << k, heads = 2048 / r->d, B = 16384 / s;
            double fl = 4.0 * (double)B * (double)heads * (double)s * (double)s * r->d * (r->causal ? 0.5 : 1.0);
            double tf = hw_attention_time_s(&m, B, heads, s, s, r->d, r->causal, false, TS_DTYPE_BF16);
            double tb = hw_attention_time_s(&m, B, heads, s, s, r->d, r->causal, true, TS_DTYPE_BF16);
            double p = r->pass == 0 ? fl / tf : r->pass == 1 ? 2.5 * fl / tb : 3.5 * fl / (tf + tb);
            double err = p / 1e12 / r->meas[k] - 1;
            printf(" %+5.1f%%", 100 * err);
            sum += fabs(err), n++;
        }
        printf("\n");
    }
    printf("  mean |error| %.1f%% over %d points\n\n", 100 * sum / n, n);
}

static void coll_table(void)
{
    static const double sz[] = {32768, 1048576, 4194304, 16777216, 67108864, 268435456, 1073741824, 8589934592.0};
    static const double a[] = {1.4, 36.2, 71.4, 109.2, 166.6, 213.9, 228.1, 231.6};
    static const double h[] = {1.71, 43.7, 128.7, 234.5, 361.8, 423.4, 466.4, 478.9};
    static const double b[] = {1.2, 36.1, 76.5, 255.0, 400.6, 646.1, 723.3, 845.7};
    struct { const char *cl; const double *m; const char *label; } rows[] = {
        {"dgx-a100", a, "8xA100 (Azure, NCCL 2.18.5)"},
        {"dgx-h100", h, "8xH100 NVLS (Azure, NCCL 2.18.5)"},
        {"gb200-nvl72", b, "8xB200 1 node (NCCL 2.27.7)"}};
    for (int r = 0; r < 3; r++) {
        ClusterSpec c;
        TsError e = {0};
        if (hw_cluster_load(rows[r].cl, 8, &c, &e)) continue;
        HwNet net;
        hw_net_init(&net, &c);
        printf("All-reduce busbw GB/s, %s vs model (%s), calibration_facts.md 4.2\n", rows[r].label, rows[r].cl);
        printf("  %12s %8s %8s %8s  %s\n", "bytes", "pred", "meas", "error", "algo/proto");
        for (int i = 0; i < 8; i++) {
            HwCollCost k = hw_coll_cost(&net, TS_COLL_ALLREDUCE, sz[i], 8, 1, 1, HW_GROUP_NONE);
            printf("  %12.0f %8.1f %8.1f %+7.1f%%  %s/%s\n", sz[i], k.busbw_bytes_per_s / 1e9, rows[r].m[i],
                   (k.busbw_bytes_per_s / 1e9 / rows[r].m[i] - 1) * 100, hw_algo_name(k.algo),
                   hw_proto_name(k.proto));
        }
        printf("\n");
    }
    ClusterSpec c;
    TsError e = {0};
    hw_cluster_load("dgx-h100", 8192, &c, &e);
    HwNet net;
    hw_net_init(&net, &c);
    printf("DGX H100 all-reduce busbw GB/s by scale (4.3: 16 GiB 365-380; 1 GiB 350 at 32 GPUs, ~300 at 8192)\n");
    printf("  %8s %10s %10s %10s %10s\n", "GPUs", "16 MiB", "64 MiB", "1 GiB", "16 GiB");
    for (int64_t g = 32; g <= 8192; g *= 4) {
        printf("  %8lld", (long long)g);
        double s4[] = {16777216, 67108864, 1073741824, 17179869184.0};
        for (int i = 0; i < 4; i++)
            printf(" %10.1f", hw_coll_cost(&net, TS_COLL_ALLREDUCE, s4[i], g, g / 8, 1, HW_GROUP_NONE).busbw_bytes_per_s / 1e9);
        printf("\n");
    }
    printf("\n");
}

static void speed(void)
{
    HwModel m;
    TsError e = {0};
    hw_model_init(&m);
    hw_gpu_load("h100-sxm5-80gb", &m.gpu, &e);
    ClusterSpec c;
    hw_cluster_load("dgx-h100", 1024, &c, &e);
    HwNet net;
    hw_net_init(&net, &c);
    const int N = 2000000;
    volatile double sink = 0;
    double t0 = now_s();
    for (int i = 0; i < N; i++) sink += hw_gemm_time_s(&m, 1, 4096 + (i & 1023), 12288, 4096, TS_DTYPE_BF16);
    double t1 = now_s();
    for (int i = 0; i < N; i++)
        sink += hw_attention_time_s(&m, 1, 32, 4096 + (i & 1023), 4096, 128, true, i & 1, TS_DTYPE_BF16);
    double t2 = now_s();
    for (int i = 0; i < N; i++) sink += hw_memory_time_s(&m, 1e6 + (double)i);
    double t3 = now_s();
    for (int i = 0; i < N; i++) sink += hw_coll_time_s(&net, TS_COLL_ALLREDUCE, 1e6 + (double)i * 100, 64, 8, 1, HW_GROUP_DP);
    double t4 = now_s();
    printf("Speed (one core, %d calls each):\n", N);
    printf("  hw_gemm_time_s       %6.1f ns/call\n", (t1 - t0) / N * 1e9);
    printf("  hw_attention_time_s  %6.1f ns/call\n", (t2 - t1) / N * 1e9);
    printf("  hw_memory_time_s     %6.1f ns/call\n", (t3 - t2) / N * 1e9);
    printf("  hw_coll_time_s       %6.1f ns/call\n", (t4 - t3) / N * 1e9);
    (void)sink;
}

int main(void)
{
    gemm_table();
    attn_table();
    coll_table();
    speed();
    return 0;
}
