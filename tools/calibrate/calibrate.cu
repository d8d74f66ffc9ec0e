// calibrate — measure what the kernels of a training step take on the local
// GPU and write a trainsim calibration file ("trainsim-calibration" version 3,
// docs/hardware.md "Calibration file"), for `trainsim ... --calibration FILE`.
//
//   calibrate [--out FILE] [--dtypes bf16,fp16,tf32,fp8,fp32] [--iters N] [--sustain S] [--quick]
//
// What it measures (each time is the median of N CUDA-event-timed launches
// after 3 warm-up launches, queued with the GPU ahead of the host, so it is the
// kernel and the gap before it that the simulator's launch term stands for,
// not the host's dispatch):
//
//   gemm    C = A B on pseudo-normal N(0,1) data (cuBLAS runs up to ~20 %
//           faster on zero-filled matrices than on training data, so zeros are
//           never used). bf16, fp16, tf32, fp32: cublasGemmEx, column-major,
//           no transposes (NN), output in the input dtype, fp32 accumulation
//           (tf32: CUBLAS_COMPUTE_32F_FAST_TF32). fp8: cuBLASLt, e4m3 A and B,
//           per-tensor scales (1.0, as device scalars), bf16 D, fp32 compute
//           without fast accumulation (torch._scaled_mm's default), A
//           transposed (TN, the layout Hopper's FP8 tensor cores require);
//           skipped on GPUs below compute capability 8.9. Shapes: an M x N x K
//           grid plus transformer shapes (GPT-3 175B TP=8 and Llama-2 7B
//           layer GEMMs at 2048 and 4096 tokens: forward, dgrad, wgrad; and
//           square / Megatron shapes up to 16384 x 6656 x 16384).
//   reference  a bf16 4096^3 GEMM, first back to back for --sustain seconds
//           (the GPU's sustained, power-capped clock: the second half's
//           median per launch), then right after each grid GEMM, alternately
//           with it (its ref_us). A grid of short GEMMs runs anywhere between
//           the boost clock and the power cap (an H100: 1215-1980 MHz in one
//           run); time_us / ref_us does not depend on that clock where the
//           SM clock bounds the entry (not launch- or memory-bound ones), so
//           trainsim reads each entry at the sustained clock (time_us x
//           reference time_us / ref_us). The reference's operands (3 x 32
//           MiB) evict L2 between an entry's launches. The fp8 entries run
//           last, beside an fp8 reference (e4m3 4096^3 TN through cuBLASLt,
//           "fp8_reference") that first ran back to back for --sustain
//           seconds: fp8 holds a lower clock under the power cap than bf16
//           (an H100, 30 s back to back: 1260 against 1365 MHz), which a
//           bf16 reference beside an fp8 entry would not show.
//   clock   the SM clock, sampled every 20 ms from a host thread through NVML
//           (libnvidia-ml.so.1 opened at run time) while the GEMMs run:
//           median, min, max MHz. Omitted, with a note, without NVML.
//   memory  bytes moved (read + written) by a copy kernel, and by this file's
//           own fused bf16 kernels over [tokens, 4096] as Transformer Engine or
//           Apex run them in a layer: layernorm and rmsnorm forward / backward
//           (fp32 statistics; backward with per-block dgamma/dbeta partials and
//           a finalize kernel), tanh-GELU and SwiGLU forward / backward, the
//           residual add, and a cast to fp32. These are trainsim's kernels, not
//           the frameworks': simple, vectorised (16-byte accesses), so they
//           bound what a good fused framework kernel reaches. `bytes` counts
//           each tensor of the op once (inputs read, outputs written), not the
//           kernels' small workspaces. Below ~50 MB the repeated launches find
//           their data in L2, as back-to-back kernels of a layer partly do.
//   attention  not measured here: "attention" is written empty, and
//           tools/measure/measure.py attention-calibration adds PyTorch SDPA
//           (flash) timings to the same file.
//
// Progress goes to stderr; the file is written atomically (temp + rename).
// The default grid (140 shapes for each of 4 dtypes, each GEMM at most a few
// ms) is sized to run in well under a minute on an H100; --quick in seconds.
// Build: tools/calibrate/calibrate.cmake, or by hand with nvcc and the flags in
// tools/calibrate/nvcc.flags plus -lcublasLt -lcublas -ldl.
#include <cublasLt.h>
#include <cublas_v2.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <dlfcn.h>

#include <algorithm>
#include <cerrno>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#define TOOL_NAME "calibrate"
#include "cuda_check.h"

typedef __nv_bfloat16 bf16;

static const int WARMUP = 3;
static const size_t WORKSPACE_BYTES = (size_t)32 << 20; /* cuBLAS / cuBLASLt workspace */
static const long MAX_DIM = 16384; /* operand buffers: MAX_DIM^2 fp32 elements (16384^2 A) */
static const int MEM_HIDDEN = 4096;                     /* columns of the memory-bound ops */

/* ---- random data ---------------------------------------------------------------------- */
/* splitmix64's finalizer: a counter-based generator, so element i of a buffer
 * is the same whatever the launch shape. */
__device__ __forceinline__ uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* N(0,1) by Box-Muller from the two 24-bit halves of one 64-bit draw. */
__device__ __forceinline__ float normal_at(uint64_t seed, size_t i)
{
    uint64_t r = mix64(seed * 0x2545F4914F6CDD1Dull + i);
    float u1 = (float)((r >> 40) + 1) * (1.0f / 16777216.0f); /* (0, 1] */
    float u2 = (float)(r & 0xFFFFFF) * (1.0f / 16777216.0f);  /* [0, 1) */
    return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

template <class T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ bf16 from_float<bf16>(float v) { return __float2bfloat16_rn(v); }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_fp8_e4m3 from_float<__nv_fp8_e4m3>(float v)
{
    return __nv_fp8_e4m3(v); /* saturating; |N(0,1)| < 6 is far inside e4m3's 448 */
}

template <class T> __global__ void fill_normal(T *p, size_t n, uint64_t seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
        p[i] = from_float<T>(normal_at(seed, i));
}

static int g_sms = 132; /* SM count of the device, set in main */

template <class T> static void fill(void *p, size_t n, uint64_t seed)
{
    fill_normal<T><<<g_sms * 8, 256>>>((T *)p, n, seed);
    CK(cudaGetLastError());
}

/* ---- timing ---------------------------------------------------------------------------- */
/* The median of v (sorts it). */
template <typename T> static double median(std::vector<T> &v)
{
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return 0.5 * ((double)v[(n - 1) / 2] + (double)v[n / 2]);
}

/* The median of event times in ms, in us. */
static double median_of(std::vector<float> &t) { return 1000.0 * median(t); }

/* One thread that sleeps until `ns` of the GPU's global timer have passed:
 * enqueued before a timed launch it keeps the GPU busy while the host queues
 * the start event, the launch (cuBLAS's host side takes ~10 us) and the end
 * event, so the interval times the kernel as a training step runs it, the
 * GPU ahead of the host, not the host's dispatch. It touches no memory (L2
 * stays as the previous kernel left it) and draws little power. */
static const long long HOLD_NS = 50000;
__global__ void hold_kernel(long long ns)
{
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    } while ((long long)(t - t0) < ns);
}

/* Events for `n` timed intervals (n + 1 for pairs), destroyed together. */
struct Events {
    std::vector<cudaEvent_t> e;
    explicit Events(size_t n) : e(n)
    {
        for (auto &x : e) CK(cudaEventCreate(&x));
    }
    ~Events()
    {
        for (auto &x : e) cudaEventDestroy(x);
    }
    float ms(size_t i, size_t j) const
    {
        float t = 0;
        CK(cudaEventElapsedTime(&t, e[i], e[j]));
        return t;
    }
};

/* `launch` `iters` times after WARMUP, each behind a hold_kernel, the whole
 * series queued before the host waits once: the median kernel time. */
template <class F> static double median_us(F launch, int iters)
{
    for (int i = 0; i < WARMUP; i++) launch();
    Events ev(2 * (size_t)iters);
    for (int i = 0; i < iters; i++) {
        hold_kernel<<<1, 1>>>(HOLD_NS);
        CK(cudaEventRecord(ev.e[2 * i]));
        launch();
        CK(cudaEventRecord(ev.e[2 * i + 1]));
    }
    CK(cudaEventSynchronize(ev.e.back()));
    CK(cudaGetLastError());
    std::vector<float> t;
    for (int i = 0; i < iters; i++) t.push_back(ev.ms(2 * i, 2 * i + 1));
    return median_of(t);
}

/* `launch` and then `ref`, alternately, `iters` times after WARMUP pairs: the
 * median of each, both timed at whatever clock the GPU holds meanwhile. The
 * pairs are queued without a host wait, so the reference (hundreds of us)
 * keeps the GPU ahead of the host through the series, and each launch is
 * timed as the kernel, not its dispatch. Returns launch's; *ref_us gets
 * ref's. */
template <class F, class G> static double median_pair_us(F launch, G ref, int iters, double *ref_us)
{
    for (int i = 0; i < WARMUP; i++) launch(), ref();
    Events ev(2 * (size_t)iters + 1);
    CK(cudaEventRecord(ev.e[0]));
    for (int i = 0; i < iters; i++) {
        launch();
        CK(cudaEventRecord(ev.e[2 * i + 1]));
        ref();
        CK(cudaEventRecord(ev.e[2 * i + 2]));
    }
    CK(cudaEventSynchronize(ev.e.back()));
    CK(cudaGetLastError());
    std::vector<float> t, r;
    for (int i = 0; i < iters; i++) {
        t.push_back(ev.ms(2 * i, 2 * i + 1));
        r.push_back(ev.ms(2 * i + 1, 2 * i + 2));
    }
    *ref_us = median_of(r);
    return median_of(t);
}

/* `launch` back to back for `seconds`, timed in batches of 20 launches with
 * no host wait between them, so that the GPU settles at its sustained (power-
 * capped) clock: the median per-launch time of the second half's batches.
 * `half` is called once, when the second half starts. */
template <class F, class H> static double sustained_us(F launch, double seconds, H half)
{
    const int BATCH = 20;
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    std::vector<float> t;
    auto t0 = std::chrono::steady_clock::now();
    bool second = false;
    for (;;) {
        double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (el >= seconds) break;
        if (!second && el >= 0.5 * seconds) second = true, half();
        CK(cudaEventRecord(a));
        for (int i = 0; i < BATCH; i++) launch();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, a, b));
        if (second) t.push_back(ms / BATCH);
    }
    CK(cudaGetLastError());
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return t.empty() ? -1 : median_of(t);
}

/* ---- SM clock through NVML, opened at run time ---------------------------------------- */
/* The few NVML entry points used, declared here so no nvml.h is needed. */
typedef struct nvmlDevice_st *NvmlDevice;
typedef int (*NvmlInitFn)(void);
typedef int (*NvmlShutdownFn)(void);
typedef int (*NvmlByIndexFn)(unsigned int, NvmlDevice *);
typedef int (*NvmlByPciFn)(const char *, NvmlDevice *);
typedef int (*NvmlClockFn)(NvmlDevice, int, unsigned int *);
static const int NVML_SUCCESS_ = 0;
static const int NVML_CLOCK_SM_ = 1;

struct ClockSampler {
    void *lib = nullptr;
    NvmlShutdownFn shutdown = nullptr;
    NvmlClockFn clock = nullptr;
    NvmlDevice dev = nullptr;
    std::string why_not; /* set when NVML cannot be used */
    std::vector<unsigned> mhz;
    std::atomic<bool> running{false};
    std::thread th;

    /* Open NVML for the CUDA device `cuda_dev` (matched by PCI bus id, which
     * CUDA_VISIBLE_DEVICES does not renumber; by index if that fails). */
    bool open(int cuda_dev)
    {
        lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            why_not = std::string("libnvidia-ml.so.1 not loadable: ") + dlerror();
            return false;
        }
        NvmlInitFn init = (NvmlInitFn)dlsym(lib, "nvmlInit_v2");
        NvmlByIndexFn by_index = (NvmlByIndexFn)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
        NvmlByPciFn by_pci = (NvmlByPciFn)dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2");
        clock = (NvmlClockFn)dlsym(lib, "nvmlDeviceGetClockInfo");
        shutdown = (NvmlShutdownFn)dlsym(lib, "nvmlShutdown");
        if (!init || !by_index || !clock || !shutdown) {
            why_not = "libnvidia-ml.so.1 lacks nvmlInit_v2 / nvmlDeviceGetHandleByIndex_v2 / "
                      "nvmlDeviceGetClockInfo / nvmlShutdown";
            close();
            return false;
        }
        int rc = init();
        if (rc != NVML_SUCCESS_) {
            why_not = "nvmlInit_v2 returned " + std::to_string(rc);
            shutdown = nullptr;
            close();
            return false;
        }
        char bus[32] = "";
        bool found = false;
        if (by_pci && cudaDeviceGetPCIBusId(bus, (int)sizeof bus, cuda_dev) == cudaSuccess)
            found = by_pci(bus, &dev) == NVML_SUCCESS_;
        if (!found) found = by_index((unsigned)cuda_dev, &dev) == NVML_SUCCESS_;
        unsigned probe = 0;
        if (!found || clock(dev, NVML_CLOCK_SM_, &probe) != NVML_SUCCESS_) {
            why_not = "NVML has no SM clock for this device";
            close();
            return false;
        }
        return true;
    }
    void close()
    {
        if (shutdown) shutdown();
        shutdown = nullptr;
        if (lib) dlclose(lib);
        lib = nullptr;
        clock = nullptr;
    }
    void start()
    {
        if (!clock) return;
        running = true;
        th = std::thread([this] {
            while (running) {
                unsigned v = 0;
                if (clock(dev, NVML_CLOCK_SM_, &v) == NVML_SUCCESS_ && v > 0) mhz.push_back(v);
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
            }
        });
    }
    void stop()
    {
        if (!th.joinable()) return;
        running = false;
        th.join();
    }
};

/* ---- GEMMs ---------------------------------------------------------------------------- */
struct GemmDtype {
    const char *name;
    cudaDataType_t ab;           /* A, B (and C for cublasGemmEx) */
    cublasComputeType_t compute;
    bool fp8;                    /* cuBLASLt e4m3 path */
};

static const GemmDtype DTYPES[] = {
    {"bf16", CUDA_R_16BF, CUBLAS_COMPUTE_32F, false},
    {"fp16", CUDA_R_16F, CUBLAS_COMPUTE_32F, false},
    {"tf32", CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, false},
    {"fp8", CUDA_R_8F_E4M3, CUBLAS_COMPUTE_32F, true},
    {"fp32", CUDA_R_32F, CUBLAS_COMPUTE_32F, false},
};

struct Shape {
    long m, n, k;
};

/* One transformer layer's GEMMs as the model costs them (M = tokens for the
 * forward): QKV, attention output projection, FC1 (both halves when gated),
 * FC2; forward (T, out, in), dgrad (T, in, out), wgrad (in, out, T). */
static void add_layer(std::vector<Shape> &v, long T, long H, long qkv, long attn, long fc1, long fc2)
{
    const long in_out[4][2] = {{H, qkv}, {attn, H}, {H, fc1}, {fc2, H}};
    for (const auto &io : in_out) {
        long in = io[0], out = io[1];
        v.push_back({T, out, in});
        v.push_back({T, in, out});
        v.push_back({in, out, T});
    }
}

static std::vector<Shape> gemm_shapes(bool quick)
{
    std::vector<Shape> v;
    std::vector<long> sizes = quick ? std::vector<long>{1024, 4096} : std::vector<long>{512, 1024, 2048, 4096, 8192};
    std::vector<long> ks = quick ? std::vector<long>{1024, 4096} : std::vector<long>{256, 1024, 4096, 16384};
    for (long m : sizes)
        for (long n : sizes)
            for (long k : ks) v.push_back({m, n, k});
    /* square and Megatron shapes (docs/measure.md, part C and D-fp8 rows) */
    const Shape named[] = {{8192, 8192, 8192},  {4096, 4096, 4096}, {2048, 4608, 12288},
                           {4096, 12288, 4096}, {8192, 7168, 8192}, {16384, 6656, 16384}};
    for (const Shape &s : named) v.push_back(s);
    if (!quick)
        for (long T : {2048L, 4096L}) {
            add_layer(v, T, 12288, 3 * 12288 / 8, 12288 / 8, 49152 / 8, 49152 / 8); /* GPT-3 175B, TP=8 */
            add_layer(v, T, 4096, 3 * 4096, 4096, 2 * 11008, 11008);             /* Llama-2 7B, gated */
        }
    std::vector<Shape> out;
    std::set<std::tuple<long, long, long>> seen;
    for (const Shape &s : v)
        if (seen.insert(std::make_tuple(s.m, s.n, s.k)).second) out.push_back(s);
    return out;
}

/* The reference GEMM (file version 3): bf16 REF_DIM^3, NN, on its own
 * N(0,1) operands. Timed back to back for --sustain seconds (the GPU's
 * sustained clock) and then beside every grid entry (that entry's clock), so
 * that trainsim can bring each entry to the sustained clock whatever clock
 * it ran at (docs/hardware.md, "Calibration file"). */
static const long REF_DIM = 4096;

/* An fp8 GEMM through cuBLASLt as the grid times it: e4m3 A (stored K x M,
 * op T: the layout Hopper's FP8 tensor cores need) and B (K x N), per-tensor
 * scale pointers, bf16 C and D (M x N), all column-major; fp32 compute without
 * fast accumulation; the first algorithm of the heuristic within the
 * workspace. ok is false when there is none. */
struct Fp8Mm {
    cublasLtHandle_t lt;
    void *ws;
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
    cublasLtMatmulHeuristicResult_t res;
    bool ok = false;
    Fp8Mm(cublasLtHandle_t h, const float *scale, const Shape &s, void *workspace) : lt(h), ws(workspace)
    {
        CB(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
        cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
        CB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
        CB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
        const void *sp = scale;
        CB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sp, sizeof sp));
        CB(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sp, sizeof sp));
        CB(cublasLtMatrixLayoutCreate(&la, CUDA_R_8F_E4M3, (uint64_t)s.k, (uint64_t)s.m, s.k));
        CB(cublasLtMatrixLayoutCreate(&lb, CUDA_R_8F_E4M3, (uint64_t)s.k, (uint64_t)s.n, s.k));
        CB(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, (uint64_t)s.m, (uint64_t)s.n, s.m));
        cublasLtMatmulPreference_t pref;
        CB(cublasLtMatmulPreferenceCreate(&pref));
        size_t wsb = WORKSPACE_BYTES;
        CB(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
        int found = 0;
        cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(lt, desc, la, lb, lc, lc, pref, 1, &res, &found);
        ok = hs == CUBLAS_STATUS_SUCCESS && found > 0;
        cublasLtMatmulPreferenceDestroy(pref);
    }
    Fp8Mm(const Fp8Mm &) = delete;
    Fp8Mm &operator=(const Fp8Mm &) = delete;
    ~Fp8Mm()
    {
        cublasLtMatrixLayoutDestroy(la);
        cublasLtMatrixLayoutDestroy(lb);
        cublasLtMatrixLayoutDestroy(lc);
        cublasLtMatmulDescDestroy(desc);
    }
    void run(const void *A, const void *B, void *C) const
    {
        float one = 1.0f, zero = 0.0f;
        CB(cublasLtMatmul(lt, desc, &one, A, la, B, lb, &zero, C, lc, C, lc, &res.algo, ws, WORKSPACE_BYTES, 0));
    }
};

struct Gemm {
    cublasHandle_t h;
    cublasLtHandle_t lt;
    void *A, *B, *C, *ws;
    float *scale; /* device 1.0f: the fp8 per-tensor scale of A and of B */
    void *RA, *RB, *RC; /* the reference's operands, REF_DIM^2 bf16 each */
    void *FA, *FB;      /* the fp8 reference's, REF_DIM^2 e4m3 each (its D in RC) */
    const Fp8Mm *ref8mm = nullptr; /* the fp8 reference, once it ran back to back */
    void ref() const
    {
        float one = 1.0f, zero = 0.0f;
        int d = (int)REF_DIM;
        CB(cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, d, d, d, &one, RA, CUDA_R_16BF, d, RB, CUDA_R_16BF, d, &zero,
                        RC, CUDA_R_16BF, d, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    }
    void ref8() const { ref8mm->run(FA, FB, RC); }
};

/* Time one fp8 GEMM through cuBLASLt beside the fp8 reference where it ran
 * back to back, else the bf16 one (*ref_us); < 0 when no algorithm
 * supports it. An fp8 GEMM and a bf16 one beside it run at the pair's
 * clock, above the one fp8 holds under the power cap alone (an H100, 30 s
 * back to back: 1260 against 1365 MHz), so the fp8 entries are read at the
 * fp8 reference's sustained time. */
static double time_fp8(const Gemm &g, const Shape &s, int iters, double *ref_us)
{
    Fp8Mm mm(g.lt, g.scale, s, g.ws);
    if (!mm.ok) return -1;
    return median_pair_us([&] { mm.run(g.A, g.B, g.C); },
                          [&] {
                              if (g.ref8mm) g.ref8();
                              else g.ref();
                          },
                          iters, ref_us);
}

/* One grid GEMM's time, and the reference's beside it (*ref_us). */
static double time_gemm(const Gemm &g, const GemmDtype &d, const Shape &s, int iters, double *ref_us)
{
    if (d.fp8) return time_fp8(g, s, iters, ref_us);
    float one = 1.0f, zero = 0.0f;
    int m = (int)s.m, n = (int)s.n, k = (int)s.k;
    return median_pair_us(
        [&] {
            CB(cublasGemmEx(g.h, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, g.A, d.ab, m, g.B, d.ab, k, &zero, g.C,
                            d.ab, m, d.compute, CUBLAS_GEMM_DEFAULT));
        },
        [&] { g.ref(); }, iters, ref_us);
}

static void fill_operands(const Gemm &g, const GemmDtype &d, size_t elems, uint64_t seed)
{
    switch (d.ab) {
    case CUDA_R_16BF: fill<bf16>(g.A, elems, seed), fill<bf16>(g.B, elems, seed + 1); break;
    case CUDA_R_16F: fill<__half>(g.A, elems, seed), fill<__half>(g.B, elems, seed + 1); break;
    case CUDA_R_8F_E4M3: fill<__nv_fp8_e4m3>(g.A, elems, seed), fill<__nv_fp8_e4m3>(g.B, elems, seed + 1); break;
    default: fill<float>(g.A, elems, seed), fill<float>(g.B, elems, seed + 1); break;
    }
    CK(cudaDeviceSynchronize());
}

/* ---- memory-bound kernels: bf16 over [T, H], fp32 math ----------------------------------- */
/* H is a multiple of 8; each thread moves 8 bf16 (16 bytes) per access. Row
 * kernels (norms) run one block of NT threads per row, thread t holding the
 * 8-element chunks t, t + NT, ... (VPT of them) in registers. */
static const int NT = 256;

__device__ __forceinline__ void load8(const bf16 *p, float f[8])
{
    uint4 u = *reinterpret_cast<const uint4 *>(p);
    const __nv_bfloat162 *h = reinterpret_cast<const __nv_bfloat162 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) {
        float2 t = __bfloat1622float2(h[i]);
        f[2 * i] = t.x;
        f[2 * i + 1] = t.y;
    }
}

__device__ __forceinline__ void store8(bf16 *p, const float f[8])
{
    uint4 u;
    __nv_bfloat162 *h = reinterpret_cast<__nv_bfloat162 *>(&u);
#pragma unroll
    for (int i = 0; i < 4; i++) h[i] = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    *reinterpret_cast<uint4 *>(p) = u;
}

/* Sum v[0..N) over the block; every thread gets the totals. */
template <int N> __device__ __forceinline__ void block_sum(float (&v)[N])
{
    __shared__ float sh[N][32];
    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, nw = blockDim.x >> 5;
#pragma unroll
    for (int i = 0; i < N; i++)
        for (int o = 16; o > 0; o >>= 1) v[i] += __shfl_xor_sync(0xffffffffu, v[i], o);
    if (lane == 0)
#pragma unroll
        for (int i = 0; i < N; i++) sh[i][warp] = v[i];
    __syncthreads();
#pragma unroll
    for (int i = 0; i < N; i++) {
        float t = lane < nw ? sh[i][lane] : 0.0f;
        for (int o = 16; o > 0; o >>= 1) t += __shfl_xor_sync(0xffffffffu, t, o);
        v[i] = t;
    }
    __syncthreads(); /* sh may be reused by the next call */
}

/* LayerNorm (RMS = false) or RMSNorm forward of one row per block:
 * y = (x - mean) * rstd * gamma (+ beta); saves mean (LayerNorm) and rstd. */
template <int VPT, bool RMS>
__global__ void __launch_bounds__(NT) norm_fwd(const bf16 *__restrict__ x, const bf16 *__restrict__ gamma,
                                               const bf16 *__restrict__ beta, bf16 *__restrict__ y,
                                               float *__restrict__ mean, float *__restrict__ rstd, int H, float eps)
{
    const size_t row = blockIdx.x;
    const int nv = H / 8;
    const bf16 *xr = x + row * H;
    bf16 *yr = y + row * H;
    float v[VPT][8];
    float acc[2] = {0.0f, 0.0f};
#pragma unroll
    for (int j = 0; j < VPT; j++) {
        int c = threadIdx.x + j * NT;
        if (c < nv) {
            load8(xr + 8 * c, v[j]);
#pragma unroll
            for (int k = 0; k < 8; k++) acc[0] += v[j][k], acc[1] += v[j][k] * v[j][k];
        }
    }
    block_sum<2>(acc);
    const float mu = RMS ? 0.0f : acc[0] / (float)H;
    const float var = RMS ? acc[1] / (float)H : fmaxf(acc[1] / (float)H - mu * mu, 0.0f);
    const float rs = rsqrtf(var + eps);
#pragma unroll
    for (int j = 0; j < VPT; j++) {
        int c = threadIdx.x + j * NT;
        if (c < nv) {
            float g[8], b[8], o[8];
            load8(gamma + 8 * c, g);
            if (!RMS) load8(beta + 8 * c, b);
#pragma unroll
            for (int k = 0; k < 8; k++) o[k] = (v[j][k] - mu) * rs * g[k] + (RMS ? 0.0f : b[k]);
            store8(yr + 8 * c, o);
        }
    }
    if (threadIdx.x == 0) {
        if (!RMS) mean[row] = mu;
        rstd[row] = rs;
    }
}

/* Norm backward, fused as Transformer Engine does it: each block walks rows
 * blockIdx.x, + gridDim.x, ..., writes dx and keeps its share of dgamma
 * (and dbeta) in registers; at the end it stores them to part[block][2][H]
 * for norm_bwd_finalize. dx = rstd * (g*dy - mean(g*dy) - xhat * mean(g*dy*xhat))
 * (RMSNorm: without the mean(g*dy) term). */
template <int VPT, bool RMS>
__global__ void __launch_bounds__(NT) norm_bwd(const bf16 *__restrict__ x, const bf16 *__restrict__ dy,
                                               const bf16 *__restrict__ gamma, const float *__restrict__ mean,
                                               const float *__restrict__ rstd, bf16 *__restrict__ dx,
                                               float *__restrict__ part, int rows, int H)
{
    const int nv = H / 8;
    float g[VPT][8], dg[VPT][8], db[VPT][8];
#pragma unroll
    for (int j = 0; j < VPT; j++) {
        int c = threadIdx.x + j * NT;
#pragma unroll
        for (int k = 0; k < 8; k++) dg[j][k] = 0.0f, db[j][k] = 0.0f, g[j][k] = 0.0f;
        if (c < nv) load8(gamma + 8 * c, g[j]);
    }
    for (int row = blockIdx.x; row < rows; row += gridDim.x) {
        const size_t off = (size_t)row * H;
        const float mu = RMS ? 0.0f : mean[row], rs = rstd[row];
        float xh[VPT][8], gdy[VPT][8];
        float acc[2] = {0.0f, 0.0f};
#pragma unroll
        for (int j = 0; j < VPT; j++) {
            int c = threadIdx.x + j * NT;
            if (c < nv) {
                float xv[8], d[8];
                load8(x + off + 8 * c, xv);
                load8(dy + off + 8 * c, d);
#pragma unroll
                for (int k = 0; k < 8; k++) {
                    xh[j][k] = (xv[k] - mu) * rs;
                    gdy[j][k] = d[k] * g[j][k];
                    dg[j][k] += d[k] * xh[j][k];
                    db[j][k] += d[k];
                    acc[0] += gdy[j][k];
                    acc[1] += gdy[j][k] * xh[j][k];
                }
            }
        }
        block_sum<2>(acc);
        const float m1 = RMS ? 0.0f : acc[0] / (float)H, m2 = acc[1] / (float)H;
#pragma unroll
        for (int j = 0; j < VPT; j++) {
            int c = threadIdx.x + j * NT;
            if (c < nv) {
                float o[8];
#pragma unroll
                for (int k = 0; k < 8; k++) o[k] = rs * (gdy[j][k] - m1 - xh[j][k] * m2);
                store8(dx + off + 8 * c, o);
            }
        }
    }
    float *pg = part + (size_t)blockIdx.x * 2 * H, *pb = pg + H;
#pragma unroll
    for (int j = 0; j < VPT; j++) {
        int c = threadIdx.x + j * NT;
        if (c < nv) {
            float4 *g4 = reinterpret_cast<float4 *>(pg + 8 * c), *b4 = reinterpret_cast<float4 *>(pb + 8 * c);
            g4[0] = make_float4(dg[j][0], dg[j][1], dg[j][2], dg[j][3]);
            g4[1] = make_float4(dg[j][4], dg[j][5], dg[j][6], dg[j][7]);
            if (!RMS) {
                b4[0] = make_float4(db[j][0], db[j][1], db[j][2], db[j][3]);
                b4[1] = make_float4(db[j][4], db[j][5], db[j][6], db[j][7]);
            }
        }
    }
}

/* dgamma[c] (and dbeta[c]) = sum over the parts; a block is 32 columns x 8
 * lanes over the parts, reduced in shared memory. */
template <bool RMS>
__global__ void __launch_bounds__(256) norm_bwd_finalize(const float *__restrict__ part, int nparts, int H,
                                                         bf16 *__restrict__ dgamma, bf16 *__restrict__ dbeta)
{
    __shared__ float sg[8][33], sb[8][33];
    const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    const int c = blockIdx.x * 32 + tx;
    float a = 0.0f, b = 0.0f;
    if (c < H)
        for (int p = ty; p < nparts; p += 8) {
            a += part[(size_t)p * 2 * H + c];
            if (!RMS) b += part[(size_t)p * 2 * H + H + c];
        }
    sg[ty][tx] = a;
    sb[ty][tx] = b;
    __syncthreads();
    if (ty == 0 && c < H) {
        for (int i = 1; i < 8; i++) a += sg[i][tx], b += sb[i][tx];
        dgamma[c] = __float2bfloat16_rn(a);
        if (!RMS) dbeta[c] = __float2bfloat16_rn(b);
    }
}

/* Grid-stride elementwise kernels over n8 = elements / 8 vectors. */
#define EW_LOOP(i, n8) for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n8); i += (size_t)gridDim.x * blockDim.x)

__global__ void copy_kernel(const float4 *__restrict__ in, float4 *__restrict__ out, size_t n)
{
    EW_LOOP(i, n) out[i] = in[i];
}

#define GELU_K0 0.7978845608028654f /* sqrt(2 / pi) */
#define GELU_K1 0.044715f

__global__ void gelu_fwd(const bf16 *__restrict__ x, bf16 *__restrict__ y, size_t n8)
{
    EW_LOOP(i, n8)
    {
        float v[8], o[8];
        load8(x + 8 * i, v);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float t = tanhf(GELU_K0 * (v[k] + GELU_K1 * v[k] * v[k] * v[k]));
            o[k] = 0.5f * v[k] * (1.0f + t);
        }
        store8(y + 8 * i, o);
    }
}

__global__ void gelu_bwd(const bf16 *__restrict__ x, const bf16 *__restrict__ dy, bf16 *__restrict__ dx, size_t n8)
{
    EW_LOOP(i, n8)
    {
        float v[8], d[8], o[8];
        load8(x + 8 * i, v);
        load8(dy + 8 * i, d);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float t = tanhf(GELU_K0 * (v[k] + GELU_K1 * v[k] * v[k] * v[k]));
            float du = GELU_K0 * (1.0f + 3.0f * GELU_K1 * v[k] * v[k]);
            o[k] = d[k] * (0.5f * (1.0f + t) + 0.5f * v[k] * (1.0f - t * t) * du);
        }
        store8(dx + 8 * i, o);
    }
}

/* SwiGLU on Megatron's layout: in is [T, 2F] = [a | b], y = silu(a) * b is
 * [T, F]; f8 = F / 8 vectors per row. */
__global__ void swiglu_fwd(const bf16 *__restrict__ in, bf16 *__restrict__ y, size_t n8, size_t f8)
{
    EW_LOOP(i, n8)
    {
        size_t r = i / f8, c = i % f8;
        const bf16 *pa = in + (r * 2 * f8 + c) * 8, *pb = pa + f8 * 8;
        float a[8], b[8], o[8];
        load8(pa, a);
        load8(pb, b);
#pragma unroll
        for (int k = 0; k < 8; k++) o[k] = a[k] / (1.0f + __expf(-a[k])) * b[k];
        store8(y + 8 * i, o);
    }
}

__global__ void swiglu_bwd(const bf16 *__restrict__ in, const bf16 *__restrict__ dy, bf16 *__restrict__ din,
                           size_t n8, size_t f8)
{
    EW_LOOP(i, n8)
    {
        size_t r = i / f8, c = i % f8, off = (r * 2 * f8 + c) * 8;
        float a[8], b[8], d[8], da[8], db[8];
        load8(in + off, a);
        load8(in + off + f8 * 8, b);
        load8(dy + 8 * i, d);
#pragma unroll
        for (int k = 0; k < 8; k++) {
            float s = 1.0f / (1.0f + __expf(-a[k]));
            da[k] = d[k] * b[k] * s * (1.0f + a[k] * (1.0f - s));
            db[k] = d[k] * a[k] * s;
        }
        store8(din + off, da);
        store8(din + off + f8 * 8, db);
    }
}

__global__ void add_kernel(const bf16 *__restrict__ a, const bf16 *__restrict__ b, bf16 *__restrict__ y, size_t n8)
{
    EW_LOOP(i, n8)
    {
        float u[8], v[8];
        load8(a + 8 * i, u);
        load8(b + 8 * i, v);
#pragma unroll
        for (int k = 0; k < 8; k++) u[k] += v[k];
        store8(y + 8 * i, u);
    }
}

__global__ void cast_kernel(const bf16 *__restrict__ x, float *__restrict__ y, size_t n8)
{
    EW_LOOP(i, n8)
    {
        float v[8];
        load8(x + 8 * i, v);
        float4 *o = reinterpret_cast<float4 *>(y + 8 * i);
        o[0] = make_float4(v[0], v[1], v[2], v[3]);
        o[1] = make_float4(v[4], v[5], v[6], v[7]);
    }
}

/* Buffers of the memory phase (the GEMM operands, reused) and launch sizes. */
struct MemBufs {
    bf16 *a, *b, *c;    /* >= 2 * T * H bf16 each */
    bf16 *gamma, *beta; /* [H] */
    bf16 *dgamma, *dbeta;
    float *mean, *rstd; /* [T] */
    float *part;        /* [parts][2][H] */
    int parts_cap;
};

static int ew_blocks(size_t n8)
{
    size_t want = (n8 + NT - 1) / NT, cap = (size_t)g_sms * 16;
    return (int)std::max<size_t>(1, std::min(want, cap));
}

/* Blocks of norm_bwd: as many as fit on the GPU at once (asked once, in the
 * untimed warm-up), at most one per row and parts_cap. */
template <int VPT, bool RMS> static int norm_bwd_grid(int rows, int parts_cap)
{
    static int per_sm = 0;
    if (per_sm == 0) {
        CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, norm_bwd<VPT, RMS>, NT, 0));
        per_sm = std::max(per_sm, 1);
    }
    return std::max(1, std::min({rows, g_sms * per_sm, parts_cap}));
}

template <int VPT, bool RMS> static void run_norm(const MemBufs &m, int T, int H, bool backward)
{
    if (!backward) {
        norm_fwd<VPT, RMS><<<T, NT>>>(m.a, m.gamma, m.beta, m.c, m.mean, m.rstd, H, 1e-5f);
        return;
    }
    int parts = norm_bwd_grid<VPT, RMS>(T, m.parts_cap);
    norm_bwd<VPT, RMS><<<parts, NT>>>(m.a, m.b, m.gamma, m.mean, m.rstd, m.c, m.part, T, H);
    norm_bwd_finalize<RMS><<<(H + 31) / 32, 256>>>(m.part, parts, H, m.dgamma, m.dbeta);
}

template <bool RMS> static void norm(const MemBufs &m, int T, int H, bool backward)
{
    int vpt = (H / 8 + NT - 1) / NT;
    if (vpt <= 1) run_norm<1, RMS>(m, T, H, backward);
    else if (vpt <= 2) run_norm<2, RMS>(m, T, H, backward);
    else run_norm<4, RMS>(m, T, H, backward); /* H <= 8192, checked in main */
}

/* The named kernels: name, launch, and bytes (each tensor once) for T x H. */
enum MemKernel { MK_LN_FWD, MK_LN_BWD, MK_RMS_FWD, MK_RMS_BWD, MK_GELU_FWD, MK_GELU_BWD,
                 MK_SWIGLU_FWD, MK_SWIGLU_BWD, MK_ADD, MK_CAST, MK_COUNT };
static const char *const MK_NAMES[MK_COUNT] = {"layernorm_fwd", "layernorm_bwd", "rmsnorm_fwd", "rmsnorm_bwd",
                                               "gelu_fwd",      "gelu_bwd",      "swiglu_fwd",  "swiglu_bwd",
                                               "add",           "cast"};

static double mem_kernel_bytes(int k, double T, double H)
{
    const double N = T * H; /* elements of one [T, H] tensor */
    switch (k) {
    case MK_LN_FWD: return 2 * N * 2 + 2 * H * 2 + 2 * T * 4;   /* x; gamma, beta -> y; mean, rstd */
    case MK_LN_BWD: return 3 * N * 2 + 3 * H * 2 + 2 * T * 4;   /* x, dy, gamma, mean, rstd -> dx, dgamma, dbeta */
    case MK_RMS_FWD: return 2 * N * 2 + H * 2 + T * 4;          /* x, gamma -> y, rstd */
    case MK_RMS_BWD: return 3 * N * 2 + 2 * H * 2 + T * 4;      /* x, dy, gamma, rstd -> dx, dgamma */
    case MK_GELU_FWD: return 2 * N * 2;                         /* x -> y */
    case MK_GELU_BWD: return 3 * N * 2;                         /* x, dy -> dx */
    case MK_SWIGLU_FWD: return 3 * N * 2;                       /* [a|b] (2N) -> y */
    case MK_SWIGLU_BWD: return 5 * N * 2;                       /* [a|b], dy -> [da|db] */
    case MK_ADD: return 3 * N * 2;                              /* a, b -> y */
    case MK_CAST: return N * 2 + N * 4;                         /* bf16 x -> fp32 y */
    }
    return 0;
}

static void mem_kernel_launch(int k, const MemBufs &m, int T, int H)
{
    size_t n8 = (size_t)T * H / 8;
    int bl = ew_blocks(n8);
    switch (k) {
    case MK_LN_FWD: norm<false>(m, T, H, false); break;
    case MK_LN_BWD: norm<false>(m, T, H, true); break;
    case MK_RMS_FWD: norm<true>(m, T, H, false); break;
    case MK_RMS_BWD: norm<true>(m, T, H, true); break;
    case MK_GELU_FWD: gelu_fwd<<<bl, NT>>>(m.a, m.c, n8); break;
    case MK_GELU_BWD: gelu_bwd<<<bl, NT>>>(m.a, m.b, m.c, n8); break;
    case MK_SWIGLU_FWD: swiglu_fwd<<<bl, NT>>>(m.a, m.c, n8, (size_t)H / 8); break;
    case MK_SWIGLU_BWD: swiglu_bwd<<<bl, NT>>>(m.a, m.b, m.c, n8, (size_t)H / 8); break;
    case MK_ADD: add_kernel<<<bl, NT>>>(m.a, m.b, m.c, n8); break;
    case MK_CAST: cast_kernel<<<bl, NT>>>(m.a, (float *)m.c, n8); break;
    }
}

/* ---- output ------------------------------------------------------------------------------ */
static std::string json_str(const std::string &s)
{
    std::string o = "\"";
    for (unsigned char ch : s) {
        if (ch == '"' || ch == '\\') o += '\\', o += (char)ch;
        else if (ch < 0x20) {
            char u[8];
            snprintf(u, sizeof u, "\\u%04x", ch);
            o += u;
        } else o += (char)ch;
    }
    return o + "\"";
}

static bool write_atomic(const char *path, const std::string &text)
{
    std::string tmp = std::string(path) + ".tmp";
    FILE *fp = fopen(tmp.c_str(), "w");
    bool ok = fp && fwrite(text.data(), 1, text.size(), fp) == text.size();
    if (fp && fclose(fp) != 0) ok = false;
    if (ok && rename(tmp.c_str(), path) != 0) ok = false;
    if (!ok) remove(tmp.c_str());
    return ok;
}

/* A reference GEMM (`launch`, of `dtype`) back to back for `sustain`
 * seconds, NVML sampling the SM clock over the second half: its time per
 * launch (< 0 when it did not run), said on stderr, and the median clock
 * into *mhz (0 without samples). */
template <class F> static double sustain_reference(F launch, const char *dtype, double sustain, ClockSampler &clk,
                                                   double *mhz)
{
    double us = sustained_us(launch, sustain, [&] { clk.start(); });
    clk.stop();
    *mhz = clk.mhz.empty() ? 0 : median(clk.mhz);
    clk.mhz.clear();
    if (us > 0)
        fprintf(stderr,
                "calibrate: reference %s %ld^3 back to back for %g s: %.1f us, %.1f TFLOP/s, SM clock %.0f MHz\n",
                dtype, REF_DIM, sustain, us, 2.0 * REF_DIM * REF_DIM * REF_DIM / us / 1e6, *mhz);
    return us;
}

/* The fp8 reference back to back for `sustain` seconds, after the other
 * dtypes' entries (their clock samples already taken from clk): its time
 * per launch, and g.ref8mm set so the fp8 entries run beside it; 0, with a
 * note, when cuBLASLt has no algorithm for it (they then run beside the
 * bf16 reference). */
static double fp8_reference(Gemm &g, const Fp8Mm &mm, double sustain, ClockSampler &clk,
                            std::vector<std::string> &notes, double *mhz)
{
    if (!mm.ok) {
        notes.push_back("fp8_reference absent: no cuBLASLt algorithm for it; the fp8 entries' ref_us is the bf16 "
                        "reference");
        return 0;
    }
    double us = sustain_reference([&] { mm.run(g.FA, g.FB, g.RC); }, "fp8", sustain, clk, mhz);
    if (!(us > 0)) return 0;
    g.ref8mm = &mm;
    char r[300];
    snprintf(r, sizeof r,
             "fp8_reference: e4m3 %ldx%ldx%ld TN through cuBLASLt (as the fp8 entries) back to back for %g s after "
             "the other dtypes' entries; the fp8 entries' ref_us is it, timed beside each",
             REF_DIM, REF_DIM, REF_DIM, sustain);
    notes.push_back(r);
    return us;
}

/* A reference GEMM's line of the file: REF_DIM^3 of `dtype`, its time back
 * to back and (when NVML gave one) its median SM clock meanwhile. */
static std::string ref_json(const char *key, const char *dtype, double us, double mhz, double sustain)
{
    char r[260];
    int k = snprintf(r, sizeof r,
                     "  \"%s\": {\"dtype\": \"%s\", \"m\": %ld, \"n\": %ld, \"k\": %ld, \"time_us\": %.3f, "
                     "\"seconds\": %g",
                     key, dtype, REF_DIM, REF_DIM, REF_DIM, us, sustain);
    if (mhz > 0) snprintf(r + k, sizeof r - (size_t)k, ", \"clock_mhz\": %.1f", mhz);
    return std::string(r) + "},\n";
}

/* Every shape of `shapes` in every dtype of `want`, each beside the
 * reference: JSON rows into `out`; returns how many. */
static int gemm_grid(const Gemm &g, const std::vector<const GemmDtype *> &want, const std::vector<Shape> &shapes,
                     int iters, const cudaDeviceProp &prop, size_t max_elems, std::vector<std::string> &notes,
                     std::string &out)
{
    const int cc = prop.major * 10 + prop.minor;
    int rows = 0;
    for (const GemmDtype *d : want) {
        if (d->fp8 && cc < 89) {
            char why[160];
            snprintf(why, sizeof why, "fp8 gemm skipped: compute capability %d.%d < 8.9 has no FP8 tensor cores",
                     prop.major, prop.minor);
            fprintf(stderr, "calibrate: %s\n", why);
            notes.push_back(why);
            continue;
        }
        fill_operands(g, *d, max_elems, 1000u + (uint64_t)(d - DTYPES) * 2);
        int skipped = 0;
        for (const Shape &s : shapes) {
            if ((size_t)s.m * s.k > max_elems || (size_t)s.k * s.n > max_elems || (size_t)s.m * s.n > max_elems) {
                fprintf(stderr, "gemm %s %ldx%ldx%ld: larger than the operand buffers, skipped\n", d->name, s.m,
                        s.n, s.k);
                skipped++;
                continue;
            }
            double ref_us = 0, us = time_gemm(g, *d, s, iters, &ref_us);
            if (us < 0) {
                fprintf(stderr, "gemm %s %ldx%ldx%ld: no cuBLASLt algorithm, skipped\n", d->name, s.m, s.n, s.k);
                skipped++;
                continue;
            }
            char row[240];
            snprintf(row, sizeof row,
                     "%s    {\"dtype\": \"%s\", \"batch\": 1, \"m\": %ld, \"n\": %ld, \"k\": %ld, \"time_us\": %.3f, "
                     "\"ref_us\": %.3f}",
                     out.empty() ? "" : ",\n", d->name, s.m, s.n, s.k, us, ref_us);
            out += row;
            rows++;
            fprintf(stderr, "gemm %s %ldx%ldx%ld: %.1f us, %.1f TFLOP/s (reference beside it %.1f us)\n", d->name,
                    s.m, s.n, s.k, us, 2.0 * s.m * s.n * s.k / us / 1e6, ref_us);
        }
        if (skipped) {
            char why[120];
            snprintf(why, sizeof why, "%s gemm: %d shapes skipped (see the run's log)", d->name, skipped);
            notes.push_back(why);
        }
    }
    return rows;
}

/* The copy kernel over 64 KiB to 2 GiB and this file's fused bf16 kernels
 * over [tokens, MEM_HIDDEN]: JSON rows into `out`; returns how many. */
static int memory_grid(const Gemm &g, size_t buf_bytes, int iters, bool quick, std::string &out)
{
    int mrows = 0;
    auto add_mem = [&](const char *kernel, double bytes, double us) {
        char row[200];
        snprintf(row, sizeof row, "%s    {\"kernel\": \"%s\", \"bytes\": %.0f, \"time_us\": %.3f}", mrows ? ",\n" : "",
                 kernel, bytes, us);
        out += row;
        mrows++;
        fprintf(stderr, "memory %s %.0f bytes: %.2f us, %.1f GB/s\n", kernel, bytes, us, bytes / us / 1e3);
    };
    for (size_t bytes = (size_t)1 << 16; bytes <= ((size_t)1 << 31); bytes *= quick ? 16 : 4) {
        size_t n4 = bytes / 2 / sizeof(float4); /* half read, half written */
        if (n4 == 0 || n4 * sizeof(float4) > buf_bytes) continue;
        int blocks = g_sms * 8;
        double us = median_us([&] { copy_kernel<<<blocks, 256>>>((const float4 *)g.A, (float4 *)g.C, n4); }, iters);
        add_mem("copy", (double)(n4 * sizeof(float4) * 2), us);
    }
    const int H = MEM_HIDDEN;
    static_assert(MEM_HIDDEN % 8 == 0 && MEM_HIDDEN <= 8 * NT * 4, "norm kernels hold at most 4 vectors a thread");
    std::vector<int> tokens = quick ? std::vector<int>{256, 8192} : std::vector<int>{64, 256, 1024, 4096, 16384, 32768};
    MemBufs m;
    m.a = (bf16 *)g.A, m.b = (bf16 *)g.B, m.c = (bf16 *)g.C;
    m.parts_cap = g_sms * 8;
    size_t small = (size_t)4 * H * 2 + (size_t)2 * 32768 * 4 + (size_t)m.parts_cap * 2 * H * 4;
    char *sm_buf = nullptr;
    CK(cudaMalloc(&sm_buf, small));
    m.gamma = (bf16 *)sm_buf;
    m.beta = m.gamma + H;
    m.dgamma = m.beta + H;
    m.dbeta = m.dgamma + H;
    m.mean = (float *)(m.dbeta + H);
    m.rstd = m.mean + 32768;
    m.part = m.rstd + 32768;
    /* inputs a, b (up to [T, 2H] bf16), gamma, beta: N(0,1); stats for the
     * backward from one forward pass per size */
    fill<bf16>(m.a, buf_bytes / 2, 7);
    fill<bf16>(m.b, buf_bytes / 2, 8);
    fill<bf16>(m.gamma, (size_t)2 * H, 9);
    CK(cudaDeviceSynchronize());
    for (int k = 0; k < MK_COUNT; k++)
        for (int T : tokens) {
            if (k == MK_LN_BWD || k == MK_RMS_BWD) { /* saved statistics of this input */
                if (k == MK_LN_BWD) norm<false>(m, T, H, false);
                else norm<true>(m, T, H, false);
                CK(cudaDeviceSynchronize());
            }
            double us = median_us([&] { mem_kernel_launch(k, m, T, H); }, iters);
            add_mem(MK_NAMES[k], mem_kernel_bytes(k, T, H), us);
        }
    CK(cudaFree(sm_buf));

    return mrows;
}

static void usage(FILE *f)
{
    fprintf(f, "usage: calibrate [--out FILE] [--dtypes LIST] [--iters N] [--sustain S] [--quick]\n"
               "  --out FILE     calibration file to write (default calibration.json)\n"
               "  --dtypes LIST  GEMM dtypes, comma-separated, of bf16,fp16,tf32,fp8,fp32\n"
               "                 (default bf16,fp16,tf32,fp8)\n"
               "  --iters N      timed launches per measurement, median kept (default 20)\n"
               "  --sustain S    seconds each reference GEMM (bf16 first, fp8 before the fp8\n"
               "                 entries) runs back to back (default 5)\n"
               "  --quick        a small grid (a few seconds)\n");
}

static double seconds_since(std::chrono::steady_clock::time_point t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

/* The command line. */
struct Args {
    const char *out = "calibration.json";
    std::string dtypes = "bf16,fp16,tf32,fp8";
    int iters = 20;
    double sustain = 5;
    bool quick = false;
    std::vector<const GemmDtype *> want; /* --dtypes, in order, each once */
};

/* --dtypes into a->want; false (after saying why) on an unknown name. */
static bool parse_dtypes(Args *a)
{
    std::string rest = a->dtypes + ",";
    size_t p;
    while ((p = rest.find(',')) != std::string::npos) {
        std::string name = rest.substr(0, p);
        rest.erase(0, p + 1);
        if (name.empty()) continue;
        const GemmDtype *d = nullptr;
        for (const GemmDtype &x : DTYPES)
            if (name == x.name) d = &x;
        if (!d) {
            fprintf(stderr, "calibrate: unknown dtype '%s' in --dtypes (one of bf16, fp16, tf32, fp8, fp32)\n",
                    name.c_str());
            return false;
        }
        if (std::find(a->want.begin(), a->want.end(), d) == a->want.end()) a->want.push_back(d);
    }
    return true;
}

/* Parses argv into *a: -1 to go on, else the exit status (0 after --help,
 * 2 after a bad option, said on stderr). */
static int parse_args(int argc, char **argv, Args *a)
{
    for (int i = 1; i < argc; i++) {
        bool has = i + 1 < argc;
        if (!strcmp(argv[i], "--out") && has) a->out = argv[++i];
        else if (!strcmp(argv[i], "--dtypes") && has) a->dtypes = argv[++i];
        else if (!strcmp(argv[i], "--iters") && has) {
            char *end = nullptr;
            long v = strtol(argv[++i], &end, 10);
            if (!end || *end || v < 1 || v > 100000) {
                fprintf(stderr, "calibrate: --iters wants a whole number from 1 to 100000, got '%s'\n", argv[i]);
                return 2;
            }
            a->iters = (int)v;
        } else if (!strcmp(argv[i], "--sustain") && has) {
            char *end = nullptr;
            double v = strtod(argv[++i], &end);
            if (!end || *end || !(v >= 0.5 && v <= 600)) {
                fprintf(stderr, "calibrate: --sustain wants seconds from 0.5 to 600, got '%s'\n", argv[i]);
                return 2;
            }
            a->sustain = v;
        } else if (!strcmp(argv[i], "--quick")) a->quick = true;
        else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else {
            fprintf(stderr, "calibrate: unknown or incomplete option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }
    return parse_dtypes(a) ? -1 : 2;
}

int main(int argc, char **argv)
{
    Args args;
    int rc = parse_args(argc, argv, &args);
    if (rc >= 0) return rc;
    const char *out = args.out;
    const int iters = args.iters;
    const double sustain = args.sustain;
    const bool quick = args.quick;
    const std::vector<const GemmDtype *> &want = args.want;
    auto t0 = std::chrono::steady_clock::now();

    int dev = 0;
    CK(cudaGetDevice(&dev));
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, dev));
    g_sms = prop.multiProcessorCount;
    fprintf(stderr, "calibrate: %s, compute capability %d.%d, %d SMs, %.1f GiB\n", prop.name, prop.major,
            prop.minor, prop.multiProcessorCount, (double)prop.totalGlobalMem / 1073741824.0);
    std::vector<std::string> notes;
    notes.push_back("gemm: pseudo-normal N(0,1) operands; bf16/fp16/tf32/fp32 by cublasGemmEx, column-major, NN, "
                    "output in the input dtype, fp32 accumulation; fp8 by cuBLASLt, e4m3 A and B, TN, per-tensor "
                    "scales 1.0, bf16 output, fp32 compute without fast accumulation; 32 MiB workspace");
    notes.push_back("timing: the GPU ahead of the host (GEMM entries and the reference queued in pairs with one wait "
                    "at the end; each memory launch behind a 50 us sleeping one-thread kernel), so small kernels are "
                    "timed as kernels, not as cuBLAS's or the launch's host dispatch");

    /* operands: the largest shape needs MAX_DIM^2 fp32 elements per matrix */
    const size_t max_elems = (size_t)MAX_DIM * MAX_DIM;
    const size_t buf_bytes = max_elems * 4;
    size_t free_b = 0, total_b = 0;
    CK(cudaMemGetInfo(&free_b, &total_b));
    const size_t ref_bytes = (size_t)REF_DIM * REF_DIM * sizeof(bf16);
    const size_t ref8_bytes = (size_t)REF_DIM * REF_DIM; /* e4m3 */
    size_t need = 3 * buf_bytes + 3 * ref_bytes + 2 * ref8_bytes + WORKSPACE_BYTES + ((size_t)64 << 20);
    if (free_b < need) {
        fprintf(stderr, "calibrate: needs %.1f GiB of free GPU memory, %.1f GiB free\n", need / 1073741824.0,
                free_b / 1073741824.0);
        return 1;
    }
    Gemm g;
    CK(cudaMalloc(&g.A, buf_bytes));
    CK(cudaMalloc(&g.B, buf_bytes));
    CK(cudaMalloc(&g.C, buf_bytes));
    CK(cudaMalloc(&g.ws, WORKSPACE_BYTES));
    CK(cudaMalloc(&g.scale, sizeof(float)));
    CK(cudaMalloc(&g.RA, ref_bytes));
    CK(cudaMalloc(&g.RB, ref_bytes));
    CK(cudaMalloc(&g.RC, ref_bytes));
    CK(cudaMalloc(&g.FA, ref8_bytes));
    CK(cudaMalloc(&g.FB, ref8_bytes));
    const float one = 1.0f;
    CK(cudaMemcpy(g.scale, &one, sizeof one, cudaMemcpyHostToDevice));
    CB(cublasCreate(&g.h));
    CB(cublasSetWorkspace(g.h, g.ws, WORKSPACE_BYTES));
    CB(cublasLtCreate(&g.lt));

    ClockSampler clk;
    bool have_clock = clk.open(dev);
    if (!have_clock) {
        fprintf(stderr, "calibrate: no SM clock: %s\n", clk.why_not.c_str());
        notes.push_back("clock_mhz absent: " + clk.why_not);
    } else {
        notes.push_back("clock_mhz: SM clock sampled by NVML every 20 ms while the GEMMs ran");
    }
    {
        char r[300];
        snprintf(r, sizeof r,
                 "reference: bf16 %ldx%ldx%ld NN back to back for %g s (time_us: the second half's median per "
                 "launch), then timed right after each GEMM entry, alternately, at that entry's clock (ref_us)",
                 REF_DIM, REF_DIM, REF_DIM, sustain);
        notes.push_back(r);
    }

    /* ---- the reference back to back, then the GEMM grid beside it ---- */
    fill<bf16>(g.RA, (size_t)REF_DIM * REF_DIM, 11);
    fill<bf16>(g.RB, (size_t)REF_DIM * REF_DIM, 12);
    fill<__nv_fp8_e4m3>(g.FA, (size_t)REF_DIM * REF_DIM, 13);
    fill<__nv_fp8_e4m3>(g.FB, (size_t)REF_DIM * REF_DIM, 14);
    CK(cudaDeviceSynchronize());
    double ref_mhz = 0;
    double ref_us = sustain_reference([&] { g.ref(); }, "bf16", sustain, clk, &ref_mhz);
    if (!(ref_us > 0)) {
        fprintf(stderr, "calibrate: the reference GEMM did not run for --sustain %g s\n", sustain);
        return 1;
    }
    std::string gemm_rows;
    std::vector<const GemmDtype *> want16, want8; /* the fp8 entries last, beside the fp8 reference */
    for (const GemmDtype *d : want) (d->fp8 ? want8 : want16).push_back(d);
    const std::vector<Shape> shapes = gemm_shapes(quick);
    clk.start();
    int rows = gemm_grid(g, want16, shapes, iters, prop, max_elems, notes, gemm_rows);
    clk.stop();
    std::vector<unsigned> grid_mhz = clk.mhz;
    clk.mhz.clear();
    const int cc = prop.major * 10 + prop.minor;
    double ref8_mhz = 0;
    Fp8Mm ref8mm(g.lt, g.scale, Shape{REF_DIM, REF_DIM, REF_DIM}, g.ws);
    double ref8_us = want8.empty() || cc < 89 ? 0 : fp8_reference(g, ref8mm, sustain, clk, notes, &ref8_mhz);
    clk.start();
    rows += gemm_grid(g, want8, shapes, iters, prop, max_elems, notes, gemm_rows);
    clk.stop();
    clk.mhz.insert(clk.mhz.end(), grid_mhz.begin(), grid_mhz.end());
    fprintf(stderr, "calibrate: %d GEMMs in %.1f s\n", rows, seconds_since(t0));

    /* ---- memory-bound kernels ---- */
    std::string mem_rows;
    int mrows = memory_grid(g, buf_bytes, iters, quick, mem_rows);

    /* ---- the file ---- */
    int rtv = 0, cbv = 0;
    cudaRuntimeGetVersion(&rtv);
    cublasGetVersion(g.h, &cbv);
    char gen[240];
    snprintf(gen, sizeof gen,
             "trainsim tools/calibrate (CUDA runtime %d, cuBLAS %d, cuBLASLt %zu, %d iterations after %d warm-up, "
             "median%s)",
             rtv, cbv, cublasLtGetVersion(), iters, WARMUP, quick ? ", --quick grid" : "");
    notes.push_back("memory: copy, and trainsim's own fused bf16 kernels over [tokens, 4096] (fp32 math; a bound on "
                    "what a framework's fused kernel reaches); bytes = each tensor of the op read or written once");
    notes.push_back("attention: not measured by calibrate; tools/measure/measure.py attention-calibration adds "
                    "PyTorch SDPA timings to this file");
    std::string note;
    for (size_t i = 0; i < notes.size(); i++) note += (i ? "; " : "") + notes[i];

    std::string json = "{\n  \"format\": \"trainsim-calibration\",\n  \"version\": 3,\n";
    json += "  \"gpu\": " + json_str(prop.name) + ",\n";
    json += "  \"generator\": " + json_str(gen) + ",\n";
    json += "  \"notes\": " + json_str(note) + ",\n";
    std::vector<unsigned> &mhz = clk.mhz;
    if (have_clock && !mhz.empty()) {
        double med = median(mhz); /* sorts */
        size_t n = mhz.size();
        char c[200];
        snprintf(c, sizeof c, "  \"clock_mhz\": {\"median\": %.1f, \"min\": %u, \"max\": %u, \"samples\": %zu},\n",
                 med, mhz.front(), mhz.back(), n);
        json += c;
        fprintf(stderr, "calibrate: SM clock during the GEMMs: median %.0f MHz (%u to %u, %zu samples)\n", med,
                mhz.front(), mhz.back(), n);
    }
    clk.close();
    json += ref_json("reference", "bf16", ref_us, ref_mhz, sustain);
    if (ref8_us > 0) json += ref_json("fp8_reference", "fp8", ref8_us, ref8_mhz, sustain);
    json += "  \"gemm\": [\n" + gemm_rows + "\n  ],\n";
    json += "  \"attention\": [],\n";
    json += "  \"memory\": [\n" + mem_rows + "\n  ]\n}\n";
    if (!write_atomic(out, json)) {
        fprintf(stderr, "calibrate: cannot write %s: %s\n", out, strerror(errno));
        return 1;
    }
    fprintf(stderr, "calibrate: wrote %s (%d GEMMs, %d memory rows) in %.1f s\n", out, rows, mrows,
            seconds_since(t0));
    cublasLtDestroy(g.lt);
    cublasDestroy(g.h);
    cudaFree(g.A);
    cudaFree(g.B);
    cudaFree(g.C);
    cudaFree(g.ws);
    cudaFree(g.scale);
    cudaFree(g.RA);
    cudaFree(g.RB);
    cudaFree(g.RC);
    cudaFree(g.FA);
    cudaFree(g.FB);
    return 0;
}
