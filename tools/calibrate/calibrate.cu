// calibrate — measure GEMM and memory-bound kernel times on the local GPU and
// write a trainsim calibration file ("trainsim-calibration" v1,
// docs/hardware.md), for `trainsim ... --calibration FILE`.
//
//   calibrate [--out FILE] [--dtypes bf16,fp16,tf32,fp32] [--iters N] [--quick]
//
// GEMMs: cublasGemmEx on a grid of M, N, K (powers of two and transformer-
// like shapes), column-major C = A B with the compute type of the dtype
// (TF32 uses CUBLAS_COMPUTE_32F_FAST_TF32). Times are the median of N
// CUDA-event-timed launches after warm-up, so they include the per-kernel
// gap the simulator's launch term stands for. Memory: a grid-stride copy
// kernel (bytes = read + written). FP8 (cuBLASLt) and attention (cuDNN /
// FlashAttention) are not measured here: the model keeps its own values.
#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CK(x)                                                                        \
    do {                                                                             \
        cudaError_t e_ = (x);                                                        \
        if (e_ != cudaSuccess) {                                                     \
            fprintf(stderr, "calibrate: %s: %s\n", #x, cudaGetErrorString(e_));      \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)
#define CB(x)                                                                        \
    do {                                                                             \
        cublasStatus_t s_ = (x);                                                     \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                           \
            fprintf(stderr, "calibrate: %s: cuBLAS status %d\n", #x, (int)s_);       \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

struct Dt {
    const char *name;
    cudaDataType_t ab;
    cublasComputeType_t compute;
    size_t bytes;
};

static const Dt DTYPES[] = {
    {"fp32", CUDA_R_32F, CUBLAS_COMPUTE_32F, 4},
    {"tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, 4},
    {"bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, 2},
    {"fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F, 2},
};

__global__ void copy_kernel(const float4 *__restrict__ in, float4 *__restrict__ out, size_t n)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        out[i] = in[i];
}

template <class F>
static double median_us(F launch, int iters)
{
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) launch();
    CK(cudaDeviceSynchronize());
    std::vector<float> t;
    for (int i = 0; i < iters; i++) {
        CK(cudaEventRecord(a));
        launch();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        t.push_back(ms);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    std::sort(t.begin(), t.end());
    return 1000.0 * t[t.size() / 2];
}

int main(int argc, char **argv)
{
    const char *out = "calibration.json";
    std::string dtypes = "bf16,fp16,tf32";
    int iters = 20;
    bool quick = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc) out = argv[++i];
        else if (!strcmp(argv[i], "--dtypes") && i + 1 < argc) dtypes = argv[++i];
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--quick")) quick = true;
        else {
            fprintf(stderr, "usage: calibrate [--out FILE] [--dtypes bf16,fp16,tf32,fp32] [--iters N] [--quick]\n");
            return 2;
        }
    }
    if (iters < 1) iters = 1;
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    cublasHandle_t h;
    CB(cublasCreate(&h));

    std::vector<long> sizes = quick ? std::vector<long>{1024, 4096} : std::vector<long>{512, 1024, 2048, 4096, 8192};
    std::vector<long> ks = quick ? std::vector<long>{1024, 4096} : std::vector<long>{256, 1024, 4096, 16384};
    long maxd = 16384;
    size_t max_elems = (size_t)maxd * maxd;
    void *A, *B, *C;
    CK(cudaMalloc(&A, max_elems * 4));
    CK(cudaMalloc(&B, max_elems * 4));
    CK(cudaMalloc(&C, max_elems * 4));
    CK(cudaMemset(A, 0, max_elems * 4));
    CK(cudaMemset(B, 0, max_elems * 4));

    std::string json = "{\n  \"format\": \"trainsim-calibration\",\n  \"version\": 1,\n";
    json += std::string("  \"gpu\": \"") + prop.name + "\",\n";
    int rtv = 0, cbv = 0;
    cudaRuntimeGetVersion(&rtv);
    cublasGetVersion(h, &cbv);
    char gen[200];
    snprintf(gen, sizeof gen, "trainsim tools/calibrate (CUDA runtime %d, cuBLAS %d, %d iterations, median)", rtv,
             cbv, iters);
    json += std::string("  \"generator\": \"") + gen + "\",\n  \"gemm\": [\n";
    bool first = true;
    for (const Dt &d : DTYPES) {
        if (("," + dtypes + ",").find(std::string(",") + d.name + ",") == std::string::npos) continue;
        float one = 1.0f, zero = 0.0f;
        for (long m : sizes)
            for (long n : sizes)
                for (long k : ks) {
                    if ((size_t)m * k > max_elems || (size_t)k * n > max_elems) continue;
                    double us = median_us(
                        [&] {
                            CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)m, (int)n, (int)k, &one, A, d.ab,
                                            (int)m, B, d.ab, (int)k, &zero, C, d.ab, (int)m, d.compute,
                                            CUBLAS_GEMM_DEFAULT));
                        },
                        iters);
                    char row[200];
                    snprintf(row, sizeof row,
                             "%s    {\"dtype\": \"%s\", \"batch\": 1, \"m\": %ld, \"n\": %ld, \"k\": %ld, \"time_us\": %.3f}",
                             first ? "" : ",\n", d.name, m, n, k, us);
                    json += row;
                    first = false;
                    fprintf(stderr, "gemm %s %ldx%ldx%ld: %.1f us, %.1f TFLOP/s\n", d.name, m, n, k, us,
                            2.0 * m * n * k / us / 1e6);
                }
    }
    json += "\n  ],\n  \"memory\": [\n";
    first = true;
    for (size_t bytes = 1 << 16; bytes <= ((size_t)1 << 31); bytes *= quick ? 16 : 4) {
        size_t n4 = bytes / 2 / sizeof(float4); /* half read, half written */
        if (n4 == 0 || n4 * sizeof(float4) > max_elems * 4) continue;
        int blocks = prop.multiProcessorCount * 8;
        double us = median_us([&] { copy_kernel<<<blocks, 256>>>((const float4 *)A, (float4 *)C, n4); }, iters);
        CK(cudaGetLastError());
        char row[160];
        snprintf(row, sizeof row, "%s    {\"bytes\": %zu, \"time_us\": %.3f, \"kernel\": \"copy\"}", first ? "" : ",\n",
                 n4 * sizeof(float4) * 2, us);
        json += row;
        first = false;
        fprintf(stderr, "copy %zu bytes: %.2f us, %.1f GB/s\n", n4 * sizeof(float4) * 2, us,
                n4 * sizeof(float4) * 2 / us / 1e3);
    }
    json += "\n  ]\n}\n";
    /* atomic: temp file + rename */
    std::string tmp = std::string(out) + ".tmp";
    FILE *fp = fopen(tmp.c_str(), "w");
    if (!fp || fwrite(json.data(), 1, json.size(), fp) != json.size() || fclose(fp) != 0 ||
        rename(tmp.c_str(), out) != 0) {
        fprintf(stderr, "calibrate: cannot write %s\n", out);
        remove(tmp.c_str());
        return 1;
    }
    fprintf(stderr, "wrote %s\n", out);
    cublasDestroy(h);
    cudaFree(A);
    cudaFree(B);
    cudaFree(C);
    return 0;
}
