// sm_margin — how much longer a GEMM takes while other kernels hold some of
// the GPU's SMs, as a communication kernel overlapped with it does
// (Transformer Engine's userbuffers "pipeline" overlap keeps num_sm SMs from
// the GEMM, set_sm_margin; NCCL's ring kernels hold one SM per channel).
//
//   sm_margin [--held 0,8,16,24,32] [--iters N] [--shapes MxNxK,...]
//
// For each GEMM shape (bf16 in and out, fp32 accumulation, column-major NN,
// pseudo-normal data) and each count k of held SMs, k blocks of a holding
// kernel are launched first on their own stream, each asking for the most
// shared memory a block may have, so that no GEMM block fits beside one on
// its SM; once all k run, the GEMM is timed N times with CUDA events on a
// second stream; then the holders are released through a flag in device
// memory (polled with a sleep between reads: polling host memory slows the
// whole GPU several-fold).
// k = 0 is the GEMM alone. Also the other order ("gemm-first"): the
// holders launched right after the first GEMM, taking SMs as the GEMMs
// leave them (holders_started: how many ran before the GEMMs ended). Two
// ways of running the GEMM: "untold"
// (cublasGemmEx: cuBLAS sizes its grid for every SM, as beside an NCCL
// kernel) and "told" (cuBLASLt with CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET =
// SMs - k, what Transformer Engine's set_sm_margin passes as math_sm_count).
// One JSON object per line on stdout: {"part": "G-smmargin", "gemm":
// "MxNxK", "dtype": "bf16", "cublas": "told"|"untold", "held_sms": k, "ms":
// ..., "alone_ms": ..., "stretch": ms / alone_ms, "model": SMs / (SMs - k),
// "sm_count": ..., "gpu": ...}. The simulator's model of the margin is
// SMs / (SMs - k) (include/trainsim/cost.h, COST_UB_*).
//
// Build: tools/calibrate/calibrate.cmake (target sm_margin), or by hand with
// nvcc and the flags in tools/calibrate/nvcc.flags plus -lcublasLt -lcublas.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define TOOL_NAME "sm_margin"
#include "cuda_check.h"

// Hold an SM: count itself in, then sleep-poll a flag in device memory
// (every ~2 us, so that the polling itself costs the GPU nothing) until
// released, or ~10 s.
__global__ void hold(volatile int *stop, int *started)
{
    extern __shared__ char smem[];
    if (threadIdx.x == 0) {
        smem[0] = 1;
        atomicAdd(started, 1);
        long long t0 = clock64();
        while (!*stop && clock64() - t0 < 20000000000LL) __nanosleep(2000);
    }
    __syncthreads();
}

// Pseudo-normal fill (sum of 4 uniforms, centred and scaled).
__global__ void fill(__nv_bfloat16 *x, size_t n, unsigned seed)
{
    size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x;
    if (i >= n) return;
    unsigned h = (unsigned)i * 2654435761u ^ seed;
    float s = 0;
    for (int k = 0; k < 4; k++) {
        h ^= h << 13, h ^= h >> 17, h ^= h << 5;
        s += (h & 0xffffff) / 16777216.0f;
    }
    x[i] = __float2bfloat16((s - 2.0f) * 1.7320508f);
}

struct Shape {
    long m, n, k;
};

// C = A B through cuBLASLt on at most `sms` SMs (0: no target).
struct LtGemm {
    cublasLtHandle_t lt;
    cublasLtMatmulDesc_t desc;
    cublasLtMatrixLayout_t la, lb, lc;
    cublasLtMatmulHeuristicResult_t res;
    void *ws;
    size_t wsb;
};

static void lt_init(LtGemm *g, cublasLtHandle_t lt, const Shape &s, int sms, void *ws, size_t wsb)
{
    g->lt = lt, g->ws = ws, g->wsb = wsb;
    CB(cublasLtMatmulDescCreate(&g->desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    if (sms > 0) CB(cublasLtMatmulDescSetAttribute(g->desc, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &sms, sizeof sms));
    CB(cublasLtMatrixLayoutCreate(&g->la, CUDA_R_16BF, (uint64_t)s.m, (uint64_t)s.k, s.m));
    CB(cublasLtMatrixLayoutCreate(&g->lb, CUDA_R_16BF, (uint64_t)s.k, (uint64_t)s.n, s.k));
    CB(cublasLtMatrixLayoutCreate(&g->lc, CUDA_R_16BF, (uint64_t)s.m, (uint64_t)s.n, s.m));
    cublasLtMatmulPreference_t pref;
    CB(cublasLtMatmulPreferenceCreate(&pref));
    CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
    int found = 0;
    CB(cublasLtMatmulAlgoGetHeuristic(lt, g->desc, g->la, g->lb, g->lc, g->lc, pref, 1, &g->res, &found));
    if (!found) {
        fprintf(stderr, "sm_margin: no cuBLASLt algorithm for %ldx%ldx%ld\n", s.m, s.n, s.k);
        exit(1);
    }
    cublasLtMatmulPreferenceDestroy(pref);
}

static void lt_run(LtGemm *g, const void *a, const void *b, void *c, cudaStream_t st)
{
    const float one = 1.0f, zero = 0.0f;
    CB(cublasLtMatmul(g->lt, g->desc, &one, a, g->la, b, g->lb, &zero, c, g->lc, c, g->lc, &g->res.algo, g->ws, g->wsb,
                      st));
}

static void lt_free(LtGemm *g)
{
    cublasLtMatrixLayoutDestroy(g->la);
    cublasLtMatrixLayoutDestroy(g->lb);
    cublasLtMatrixLayoutDestroy(g->lc);
    cublasLtMatmulDescDestroy(g->desc);
}

static std::vector<Shape> parse_shapes(const char *s)
{
    std::vector<Shape> v;
    std::string str(s);
    size_t p = 0;
    while (p < str.size()) {
        size_t q = str.find(',', p);
        std::string t = str.substr(p, q == std::string::npos ? std::string::npos : q - p);
        Shape sh;
        if (sscanf(t.c_str(), "%ldx%ldx%ld", &sh.m, &sh.n, &sh.k) != 3) {
            fprintf(stderr, "sm_margin: bad shape '%s' (want MxNxK)\n", t.c_str());
            exit(2);
        }
        v.push_back(sh);
        if (q == std::string::npos) break;
        p = q + 1;
    }
    return v;
}

static std::vector<int> parse_ints(const char *s)
{
    std::vector<int> v;
    for (const char *p = s; *p;) {
        v.push_back(atoi(p));
        const char *c = strchr(p, ',');
        if (!c) break;
        p = c + 1;
    }
    return v;
}

int main(int argc, char **argv)
{
    // default shapes: Llama-3 70B at TP 4 and 405B at TP 8, 8192 tokens: the
    // attention output projection and the MLP's fc2 forward, whole and as
    // one of TE's 4 pipeline chunks
    const char *shapes_arg = "8192x8192x2048,8192x8192x7168,2048x8192x2048,2048x8192x7168,8192x16384x2048,8192x16384x6656";
    const char *held_arg = "0,8,16,24,32";
    int iters = 50;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--shapes") && i + 1 < argc) shapes_arg = argv[++i];
        else if (!strcmp(argv[i], "--held") && i + 1 < argc) held_arg = argv[++i];
        else if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: sm_margin [--held 0,8,16,24,32] [--iters N] [--shapes MxNxK,...]\n");
            return 2;
        }
    }
    std::vector<Shape> shapes = parse_shapes(shapes_arg);
    std::vector<int> held = parse_ints(held_arg);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    int smem = (int)prop.sharedMemPerBlockOptin;
    CK(cudaFuncSetAttribute(hold, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    int *dflags = nullptr; // device memory: [0] stop, [1] started
    CK(cudaMalloc(&dflags, 2 * sizeof(int)));
    cudaStream_t sh, sg, sc; // holders, GEMMs, control copies
    CK(cudaStreamCreateWithFlags(&sh, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&sg, cudaStreamNonBlocking));
    CK(cudaStreamCreateWithFlags(&sc, cudaStreamNonBlocking));
    const int one_i = 1;
    auto started = [&]() {
        int v = 0;
        CK(cudaMemcpyAsync(&v, dflags + 1, sizeof v, cudaMemcpyDeviceToHost, sc));
        CK(cudaStreamSynchronize(sc));
        return v;
    };
    cublasHandle_t h;
    CB(cublasCreate(&h));
    CB(cublasSetStream(h, sg));
    cublasLtHandle_t lt;
    CB(cublasLtCreate(&lt));
    size_t wsb = 64u << 20;
    void *ws;
    CK(cudaMalloc(&ws, wsb));
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    for (const Shape &s : shapes) {
        size_t na = (size_t)s.m * s.k, nb = (size_t)s.k * s.n, nc = (size_t)s.m * s.n;
        __nv_bfloat16 *a, *b, *c;
        CK(cudaMalloc(&a, na * 2));
        CK(cudaMalloc(&b, nb * 2));
        CK(cudaMalloc(&c, nc * 2));
        fill<<<(unsigned)((na + 255) / 256), 256>>>(a, na, 1u);
        fill<<<(unsigned)((nb + 255) / 256), 256>>>(b, nb, 2u);
        CK(cudaDeviceSynchronize());
        const float one = 1.0f, zero = 0.0f;
        auto gemm = [&]() {
            CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, (int)s.m, (int)s.n, (int)s.k, &one, a, CUDA_R_16BF, (int)s.m,
                            b, CUDA_R_16BF, (int)s.k, &zero, c, CUDA_R_16BF, (int)s.m, CUBLAS_COMPUTE_32F,
                            CUBLAS_GEMM_DEFAULT));
        };
        for (int w = 0; w < 5; w++) gemm();
        CK(cudaStreamSynchronize(sg));
        const int sm = prop.multiProcessorCount;
        for (int mode = 0; mode < 4; mode++) {
            const int told = mode & 1, first = mode >> 1;
            double alone = 0;
            for (int k : held) {
                if (k >= sm) continue;
                LtGemm g;
                if (told) {
                    lt_init(&g, lt, s, sm - k, ws, wsb);
                    for (int w = 0; w < 3; w++) lt_run(&g, a, b, c, sg);
                    CK(cudaStreamSynchronize(sg));
                }
                CK(cudaMemsetAsync(dflags, 0, 2 * sizeof(int), sc));
                CK(cudaStreamSynchronize(sc));
                if (k > 0 && first) { /* the holders first: the GEMMs take the SMs left */
                    hold<<<k, 1024, smem, sh>>>(dflags, dflags + 1);
                    CK(cudaGetLastError());
                    while (started() < k) std::this_thread::yield();
                }
                CK(cudaEventRecord(e0, sg));
                for (int i = 0; i < iters; i++) {
                    if (told) lt_run(&g, a, b, c, sg);
                    else gemm();
                    /* the GEMMs first: the holders take SMs as the GEMM leaves them */
                    if (i == 0 && k > 0 && !first) {
                        hold<<<k, 1024, smem, sh>>>(dflags, dflags + 1);
                        CK(cudaGetLastError());
                    }
                }
                CK(cudaEventRecord(e1, sg));
                CK(cudaEventSynchronize(e1));
                int got = k > 0 ? started() : 0; /* holders running when the GEMMs ended */
                CK(cudaMemcpyAsync(dflags, &one_i, sizeof one_i, cudaMemcpyHostToDevice, sc));
                CK(cudaStreamSynchronize(sh));
                if (told) lt_free(&g);
                float ms = 0;
                CK(cudaEventElapsedTime(&ms, e0, e1));
                double per = ms / iters;
                if (k == 0) alone = per;
                printf("{\"part\": \"G-smmargin\", \"gemm\": \"%ldx%ldx%ld\", \"dtype\": \"bf16\", \"cublas\": \"%s\", "
                       "\"order\": \"%s\", \"held_sms\": %d, \"holders_started\": %d, \"ms\": %.4f, \"alone_ms\": %.4f, "
                       "\"stretch\": %.4f, \"model\": %.4f, \"sm_count\": %d, \"gpu\": \"%s\"}\n",
                       s.m, s.n, s.k, told ? "told" : "untold", first ? "holders-first" : "gemm-first", k, got, per,
                       alone, alone > 0 ? per / alone : 0.0, (double)sm / (sm - k), sm, prop.name);
                fflush(stdout);
            }
        }
        CK(cudaFree(a));
        CK(cudaFree(b));
        CK(cudaFree(c));
    }
    CB(cublasDestroy(h));
    cublasLtDestroy(lt);
    CK(cudaFree(ws));
    return 0;
}
