// sdpa_sink.cpp — times cuDNN's fused attention (the kernel Transformer
// Engine's FusedAttention runs) forward and backward with the options
// GPT-OSS trains with: a learned sink per head (softmax_type "learnable") and
// a sliding window, beside the plain causal kernel, so that their cost can be
// read off at one shape. Needs the cuDNN frontend's headers (header-only,
// github.com/NVIDIA/cudnn-frontend, include/), cuDNN >= 9.13 and nvcc; not
// part of the build:
//
//   nvcc -std=c++17 -O2 -I FRONTEND/include -I CUDNN/include sdpa_sink.cpp \
//        -L CUDNN/lib -lcudnn -o sdpa_sink
//   ./sdpa_sink B HQ HKV S D WINDOW SINK [ITERS]
//
// WINDOW 0: causal over the whole sequence; W > 0: each query sees the W
// keys up to itself (Megatron's window_size (W, 0)). SINK 1: a learned
// logit per head in the softmax's denominator (and its gradient). Layout as
// Megatron-Core hands TE its tensors (sbhd), bf16, fp32 statistics. Prints one
// JSON line: the shape, the options, the median forward and backward ms of
// ITERS runs (default 20) after 5 warm-ups, the median SM clock NVML read
// after each run (clock_mhz; absent where libnvidia-ml cannot be opened) and
// the cuDNN version. Each run is timed with the host in the loop (CUDA events
// around the graph's execute, then a synchronize).
#include <cuda_runtime_api.h>
#include <cudnn_frontend.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <unordered_map>
#include <vector>

namespace fe = cudnn_frontend;

enum { Q_UID = 1, K_UID, V_UID, O_UID, STATS_UID, SINK_UID, DO_UID, DQ_UID, DK_UID, DV_UID, DSINK_UID };

struct Shape {
    int64_t b, hq, hkv, s, d, window;
    bool sink;
};

// The GPU's SM clock now (MHz), read through NVML opened at run time (the
// driver's libnvidia-ml, as pynvml does), so that nothing links against it;
// 0 where it cannot be read.
static unsigned sm_clock_mhz()
{
    typedef int (*init_t)(void);
    typedef int (*handle_t)(unsigned, void **);
    typedef int (*clock_t_)(void *, int, unsigned *);
    static bool tried = false, ok = false;
    static void *dev = nullptr;
    static clock_t_ clock_of = nullptr;
    if (!tried) {
        tried = true;
        void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        init_t init = lib ? (init_t)dlsym(lib, "nvmlInit_v2") : nullptr;
        handle_t handle = lib ? (handle_t)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2") : nullptr;
        clock_of = lib ? (clock_t_)dlsym(lib, "nvmlDeviceGetClockInfo") : nullptr;
        ok = init && handle && clock_of && init() == 0 && handle(0, &dev) == 0;
    }
    unsigned mhz = 0;
    if (!ok || clock_of(dev, 1 /* NVML_CLOCK_SM */, &mhz) != 0) return 0;
    return mhz;
}

static void cuda_ok(cudaError_t e, const char *what)
{
    if (e != cudaSuccess) {
        fprintf(stderr, "sdpa_sink: %s: %s\n", what, cudaGetErrorString(e));
        exit(1);
    }
}

static void fe_ok(fe::error_object e, const char *what)
{
    if (!e.is_good()) {
        fprintf(stderr, "sdpa_sink: %s: %s\n", what, e.get_message().c_str());
        exit(2);
    }
}

// sbhd: dims {b, h, s, d}, strides of a [s, b, h, d] tensor
static std::vector<int64_t> sbhd(const Shape &x, int64_t h) { return {h * x.d, x.d, x.b * h * x.d, 1}; }

static std::shared_ptr<fe::graph::Tensor_attributes> input(fe::graph::Graph &g, const char *name, int64_t uid,
                                                          const Shape &x, int64_t h)
{
    return g.tensor(fe::graph::Tensor_attributes().set_name(name).set_uid(uid).set_dim({x.b, h, x.s, x.d}).set_stride(
        sbhd(x, h)));
}

static std::shared_ptr<fe::graph::Tensor_attributes> per_head(fe::graph::Graph &g, const char *name, int64_t uid,
                                                             const Shape &x)
{
    return g.tensor(fe::graph::Tensor_attributes()
                        .set_name(name)
                        .set_uid(uid)
                        .set_dim({1, x.hq, 1, 1})
                        .set_stride({x.hq, 1, 1, 1})
                        .set_data_type(fe::DataType_t::FLOAT));
}

template <class A> static void masks(A &o, const Shape &x)
{
    o.set_diagonal_alignment(fe::DiagonalAlignment_t::TOP_LEFT).set_diagonal_band_right_bound(0);
    if (x.window > 0) o.set_diagonal_band_left_bound((int)x.window);
}

static std::shared_ptr<fe::graph::Graph> new_graph()
{
    auto g = std::make_shared<fe::graph::Graph>();
    g->set_io_data_type(fe::DataType_t::BFLOAT16)
        .set_intermediate_data_type(fe::DataType_t::FLOAT)
        .set_compute_data_type(fe::DataType_t::FLOAT);
    return g;
}

static std::shared_ptr<fe::graph::Graph> forward_graph(const Shape &x, float scale)
{
    auto g = new_graph();
    auto Q = input(*g, "Q", Q_UID, x, x.hq), K = input(*g, "K", K_UID, x, x.hkv), V = input(*g, "V", V_UID, x, x.hkv);
    auto o = fe::graph::SDPA_attributes().set_name("fwd").set_generate_stats(true).set_attn_scale(scale);
    masks(o, x);
    if (x.sink) o.set_sink_token(per_head(*g, "sink", SINK_UID, x));
    auto [O, Stats] = g->sdpa(Q, K, V, o);
    O->set_output(true).set_dim({x.b, x.hq, x.s, x.d}).set_stride(sbhd(x, x.hq)).set_uid(O_UID);
    Stats->set_output(true).set_data_type(fe::DataType_t::FLOAT).set_uid(STATS_UID);
    return g;
}

static std::shared_ptr<fe::graph::Graph> backward_graph(const Shape &x, float scale)
{
    auto g = new_graph();
    auto Q = input(*g, "Q", Q_UID, x, x.hq), K = input(*g, "K", K_UID, x, x.hkv), V = input(*g, "V", V_UID, x, x.hkv);
    auto O = input(*g, "O", O_UID, x, x.hq), dO = input(*g, "dO", DO_UID, x, x.hq);
    auto Stats = g->tensor(fe::graph::Tensor_attributes()
                               .set_name("Stats")
                               .set_uid(STATS_UID)
                               .set_dim({x.b, x.hq, x.s, 1})
                               .set_stride({x.hq * x.s, x.s, 1, 1})
                               .set_data_type(fe::DataType_t::FLOAT));
    auto o = fe::graph::SDPA_backward_attributes().set_name("bwd").set_attn_scale(scale);
    masks(o, x);
    if (x.sink) {
        o.set_sink_token(per_head(*g, "sink", SINK_UID, x));
        o.set_dsink_token(per_head(*g, "dsink", DSINK_UID, x));
    }
    auto [dQ, dK, dV] = g->sdpa_backward(Q, K, V, O, dO, Stats, o);
    dQ->set_output(true).set_uid(DQ_UID).set_dim({x.b, x.hq, x.s, x.d}).set_stride(sbhd(x, x.hq));
    dK->set_output(true).set_uid(DK_UID).set_dim({x.b, x.hkv, x.s, x.d}).set_stride(sbhd(x, x.hkv));
    dV->set_output(true).set_uid(DV_UID).set_dim({x.b, x.hkv, x.s, x.d}).set_stride(sbhd(x, x.hkv));
    return g;
}

static void build(fe::graph::Graph &g, cudnnHandle_t h)
{
    fe_ok(g.validate(), "validate");
    fe_ok(g.build_operation_graph(h), "build_operation_graph");
    fe_ok(g.create_execution_plans({fe::HeurMode_t::A}), "create_execution_plans");
    fe_ok(g.check_support(h), "check_support");
    fe_ok(g.build_plans(h), "build_plans");
}

static void *dev(size_t bytes, float fill)
{
    void *p = nullptr;
    cuda_ok(cudaMalloc(&p, bytes), "cudaMalloc");
    // small random-ish values: bf16 0x3c00 (~0.0078) pattern; the timing
    // does not depend on them beyond avoiding NaN/Inf
    std::vector<uint16_t> h(bytes / 2, (uint16_t)(fill > 0 ? 0x3c00 : 0x3b80));
    cuda_ok(cudaMemcpy(p, h.data(), bytes, cudaMemcpyHostToDevice), "cudaMemcpy");
    return p;
}

static double median_ms(fe::graph::Graph &g, cudnnHandle_t h, std::unordered_map<int64_t, void *> &pack, int iters,
                        std::vector<unsigned> &clocks)
{
    int64_t ws = 0;
    fe_ok(g.get_workspace_size(ws), "get_workspace_size");
    void *work = nullptr;
    if (ws > 0) cuda_ok(cudaMalloc(&work, (size_t)ws), "cudaMalloc workspace");
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    std::vector<float> t;
    for (int i = 0; i < iters + 5; i++) {
        cudaEventRecord(e0);
        fe_ok(g.execute(h, pack, work), "execute");
        cudaEventRecord(e1);
        cuda_ok(cudaEventSynchronize(e1), "execute");
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        if (i >= 5) {
            t.push_back(ms);
            if (unsigned c = sm_clock_mhz()) clocks.push_back(c);
        }
    }
    if (work) cudaFree(work);
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

int main(int argc, char **argv)
{
    if (argc < 8) {
        fprintf(stderr, "usage: sdpa_sink B HQ HKV S D WINDOW SINK [ITERS]\n");
        return 2;
    }
    Shape x{atoll(argv[1]), atoll(argv[2]), atoll(argv[3]), atoll(argv[4]), atoll(argv[5]), atoll(argv[6]),
            atoi(argv[7]) != 0};
    int iters = argc > 8 ? atoi(argv[8]) : 20;
    cudnnHandle_t h;
    if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS) {
        fprintf(stderr, "sdpa_sink: cudnnCreate failed\n");
        return 1;
    }
    float scale = 1.0f / std::sqrt((float)x.d);
    size_t q = (size_t)(x.b * x.hq * x.s * x.d) * 2, kv = (size_t)(x.b * x.hkv * x.s * x.d) * 2;
    std::unordered_map<int64_t, void *> pack = {
        {Q_UID, dev(q, 1)},   {K_UID, dev(kv, 1)},  {V_UID, dev(kv, 1)},  {O_UID, dev(q, 1)},
        {DO_UID, dev(q, -1)}, {DQ_UID, dev(q, 1)},  {DK_UID, dev(kv, 1)}, {DV_UID, dev(kv, 1)},
        {STATS_UID, dev((size_t)(x.b * x.hq * x.s) * 4, 0)}, {SINK_UID, dev((size_t)x.hq * 4, 0)},
        {DSINK_UID, dev((size_t)x.hq * 4, 0)}};
    auto fwd = forward_graph(x, scale);
    build(*fwd, h);
    std::unordered_map<int64_t, void *> fpack = {{Q_UID, pack[Q_UID]}, {K_UID, pack[K_UID]}, {V_UID, pack[V_UID]},
                                                 {O_UID, pack[O_UID]}, {STATS_UID, pack[STATS_UID]}};
    if (x.sink) fpack[SINK_UID] = pack[SINK_UID];
    std::vector<unsigned> clocks;
    double f = median_ms(*fwd, h, fpack, iters, clocks);
    auto bwd = backward_graph(x, scale);
    build(*bwd, h);
    std::unordered_map<int64_t, void *> bpack = fpack;
    for (int64_t u : {DO_UID, DQ_UID, DK_UID, DV_UID}) bpack[u] = pack[u];
    if (x.sink) bpack[DSINK_UID] = pack[DSINK_UID];
    double b = median_ms(*bwd, h, bpack, iters, clocks);
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    char clk[32] = "";
    if (!clocks.empty()) {
        std::sort(clocks.begin(), clocks.end());
        snprintf(clk, sizeof clk, ", \"clock_mhz\": %u", clocks[clocks.size() / 2]);
    }
    printf("{\"part\": \"D-attn-fe\", \"gpu\": \"%s\", \"cudnn\": %zu, \"batch\": %lld, \"heads\": %lld, \"kv_heads\": "
           "%lld, \"seq\": %lld, \"head_dim\": %lld, \"causal\": true, \"window\": %lld, \"sink\": %s, \"layout\": "
           "\"sbhd\", \"fwd_ms\": %.4f, \"bwd_ms\": %.4f, \"iters\": %d%s}\n",
           prop.name, cudnnGetVersion(), (long long)x.b, (long long)x.hq, (long long)x.hkv, (long long)x.s,
           (long long)x.d, (long long)x.window, x.sink ? "true" : "false", f, b, iters, clk);
    cudnnDestroy(h);
    return 0;
}
