/* TEMPORARY: stand-ins for plan/partition/hw functions sim needs until the
 * plan and hw branches land (then this file is deleted). Rough models only. */
#include <math.h>
#include <string.h>

#include "trainsim/hw.h"
#include "trainsim/partition.h"
#include "trainsim/plan.h"

void plan_init(ParallelPlan *p)
{
    memset(p, 0, sizeof *p);
    p->tp = p->pp = p->vpp = p->cp = p->ep = 1;
    p->flash_attn = true;
    p->micro_batch = 1;
    p->dtype = TS_DTYPE_BF16;
    p->schedule = PLAN_SCHED_1F1B;
}

TsStatus plan_validate(const ModelSpec *m, const ParallelPlan *p, TsError *err)
{
    if (m && m->heads % p->tp) return ts_err(err, TS_ERR_PLAN, "--tp %lld does not divide the %lld attention heads", (long long)p->tp, (long long)m->heads);
    if (m && m->layers < p->pp * p->vpp) return ts_err(err, TS_ERR_PLAN, "--pp*--vpp exceeds the layers");
    if (p->global_batch % (p->micro_batch * p->dp)) return ts_err(err, TS_ERR_PLAN, "--global-batch %lld is not a multiple of --micro-batch x dp = %lld", (long long)p->global_batch, (long long)(p->micro_batch * p->dp));
    return TS_OK;
}

TsStatus plan_resolve(const ModelSpec *m, ParallelPlan *p, TsError *err)
{
    if (p->etp == 0) p->etp = p->tp;
    if (p->dp == 0) p->dp = p->gpus ? p->gpus / (p->tp * p->pp * p->cp) : 1;
    if (p->dp < 1) return ts_err(err, TS_ERR_PLAN, "--gpus %lld is smaller than tp*pp*cp", (long long)p->gpus);
    if (p->gpus == 0) p->gpus = p->tp * p->pp * p->cp * p->dp;
    if (p->gpus != p->tp * p->pp * p->cp * p->dp) return ts_err(err, TS_ERR_PLAN, "--gpus %lld is not tp*pp*cp*dp", (long long)p->gpus);
    if (!p->sp_set) p->sp = p->tp > 1;
    if (p->global_batch == 0) p->global_batch = p->micro_batch * p->dp;
    if (p->seq == 0 && m) p->seq = m->max_positions < 2048 ? m->max_positions : 2048;
    if (p->vpp > 1) p->schedule = PLAN_SCHED_INTERLEAVED;
    p->grad_accum = p->global_batch / (p->micro_batch * p->dp);
    p->n_chunks = p->pp * p->vpp;
    return plan_validate(m, p, err);
}

const char *plan_recompute_name(PlanRecompute r)
{
    static const char *n[] = {"none", "selective", "full"};
    return n[r];
}
const char *plan_sched_name(PlanSchedule s)
{
    static const char *n[] = {"1f1b", "interleaved", "gpipe"};
    return n[s];
}
bool plan_recompute_parse(const char *s, PlanRecompute *out)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, plan_recompute_name((PlanRecompute)i)) == 0) { *out = (PlanRecompute)i; return true; }
    return false;
}
bool plan_sched_parse(const char *s, PlanSchedule *out)
{
    for (int i = 0; i < 3; i++)
        if (strcmp(s, plan_sched_name((PlanSchedule)i)) == 0) { *out = (PlanSchedule)i; return true; }
    return false;
}

int64_t plan_chunk_layers(const ParallelPlan *p, int64_t n_layers, int64_t chunk)
{
    int64_t n = p->pp * p->vpp, q = n_layers / n, r = n_layers % n;
    return q + (chunk < r ? 1 : 0);
}

void plan_group(const ParallelPlan *p, PlanGroup kind, int64_t rank, int64_t gpn, PlanGroupInfo *o)
{
    (void)rank;
    int64_t size = 1, stride = 1;
    switch (kind) {
    case PLAN_GROUP_TP: size = p->tp; stride = 1; break;
    case PLAN_GROUP_CP: size = p->cp; stride = p->tp; break;
    case PLAN_GROUP_DP: size = p->dp; stride = p->tp * p->cp; break;
    case PLAN_GROUP_DPCP: size = p->dp * p->cp; stride = p->tp; break;
    case PLAN_GROUP_PP: size = p->pp; stride = p->tp * p->cp * p->dp; break;
    case PLAN_GROUP_EP: size = p->ep; stride = p->etp; break;
    case PLAN_GROUP_EDP: size = p->tp * p->cp * p->dp / (p->etp * p->ep); stride = p->etp * p->ep; break;
    default: break;
    }
    memset(o, 0, sizeof *o);
    o->size = size;
    o->stride = stride;
    if (gpn <= 0) gpn = 1 << 30;
    if (stride >= gpn) { o->nodes = size; o->per_node = 1; }
    else {
        int64_t span = (size - 1) * stride + 1;
        o->nodes = (span + gpn - 1) / gpn;
        o->per_node = size < gpn / stride ? size : gpn / stride;
    }
}

void part_mem_options_init(PartMemOptions *o)
{
    memset(o, 0, sizeof *o);
    o->cuda_context_bytes = 0.75 * 1073741824.0;
    o->nccl_comm_bytes = 64.0 * 1048576.0;
    o->frag_fraction = 0.05;
}

TsStatus part_memory(const ModelSpec *m, const ParallelPlan *p, const PartMemOptions *o,
                     PartMemory *stages, PartMemory *peak, TsError *err)
{
    (void)stages; (void)err;
    ModelCounts c;
    model_count_params(m, &c);
    double layer = (double)c.per_layer_dense;
    double params = (layer * (double)m->layers / (double)p->pp + (double)c.embedding) / (double)p->tp;
    memset(peak, 0, sizeof *peak);
    peak->weights_bytes = 2 * params;
    peak->gradients_bytes = 4 * params;
    double shard = (p->dist_opt || p->zero >= 1) ? (double)(p->dp * p->cp) : 1.0;
    peak->optimizer_bytes = 12 * params / shard;
    double sbh = (double)(p->seq * p->micro_batch * m->hidden);
    double per_layer = sbh * (p->recompute == PLAN_RECOMPUTE_FULL ? 2.0 : 34.0) / (double)p->tp;
    peak->activations_bytes = per_layer * (double)m->layers;
    peak->other_bytes = o->cuda_context_bytes + 4 * o->nccl_comm_bytes;
    peak->total_bytes = peak->weights_bytes + peak->gradients_bytes + peak->optimizer_bytes + peak->activations_bytes + peak->other_bytes;
    peak->params = params;
    return TS_OK;
}

void hw_model_init(HwModel *m) { memset(m, 0, sizeof *m); }

static double peak(const HwModel *m, TsDtype dt)
{
    double p = m->gpu.peak_flops[dt];
    if (p <= 0) p = m->gpu.peak_flops[TS_DTYPE_BF16];
    return p;
}

double hw_gemm_time_s(const HwModel *m, int64_t batch, int64_t M, int64_t N, int64_t K, TsDtype dt)
{
    if (batch <= 0 || M <= 0 || N <= 0 || K <= 0) return 0;
    double f = 2.0 * (double)batch * (double)M * (double)N * (double)K;
    double e = m->gpu.gemm_eff[dt] > 0 ? m->gpu.gemm_eff[dt] : 0.8;
    e *= f / (f + 2e9);
    return f / (peak(m, dt) * e) + m->gpu.launch_s;
}

double hw_attention_time_s(const HwModel *m, int64_t B, int64_t heads, int64_t sq, int64_t sk, int64_t d,
                           bool causal, bool backward, TsDtype dt)
{
    double f = 4.0 * (double)B * (double)heads * (double)sq * (double)sk * (double)d * (causal ? 0.5 : 1.0);
    if (backward) f *= 2.5;
    double e = backward ? m->gpu.attn_bwd_eff : m->gpu.attn_fwd_eff;
    if (e <= 0) e = 0.5;
    if (dt == TS_DTYPE_FP8) dt = TS_DTYPE_BF16;
    return f / (peak(m, dt) * e) + m->gpu.launch_s;
}

double hw_memory_time_s(const HwModel *m, double bytes)
{
    if (bytes <= 0) return 0;
    double e = m->gpu.mem_eff > 0 ? m->gpu.mem_eff : 0.85;
    return bytes / (m->gpu.hbm_bw_bytes_per_s * e) + m->gpu.launch_s;
}

TsStatus hw_cluster_load(const char *name, int64_t gpus, ClusterSpec *c, TsError *err)
{
    memset(c, 0, sizeof *c);
    bool a100 = strstr(name, "a100") != NULL;
    snprintf(c->name, sizeof c->name, "%s", name);
    snprintf(c->gpu_name, sizeof c->gpu_name, "%s", a100 ? "a100-sxm4-80gb" : "h100-sxm5-80gb");
    TsStatus st = hw_gpu_load(c->gpu_name, &c->gpu, err);
    if (st) return st;
    c->gpus = gpus;
    c->gpus_per_node = 8;
    c->nodes = (gpus + 7) / 8;
    c->scaleup_bw_bytes_per_s = a100 ? 300e9 : 450e9;
    c->scaleup_eff = 0.8;
    c->scaleup_lat_s = 5e-6;
    c->nics_per_node = strstr(name, "jean") ? 4 : 8;
    c->nic_bw_bytes_per_s = a100 ? (strstr(name, "jean") ? 12.5e9 : 25e9) : 50e9;
    c->nic_eff = 0.94;
    c->nic_lat_s = 10e-6;
    c->nvls = !a100;
    return TS_OK;
}

void hw_net_init(HwNet *net, const ClusterSpec *c)
{
    memset(net, 0, sizeof *net);
    net->cl = *c;
}

double hw_coll_time_s(const HwNet *net, TsColl c, double bytes, int64_t n, int64_t nodes, int64_t share,
                      const char *kind)
{
    (void)kind;
    if (n <= 1 || bytes <= 0) return 0;
    const ClusterSpec *cl = &net->cl;
    double f = (double)(n - 1) / (double)n * (c == TS_COLL_ALLREDUCE ? 2.0 : 1.0);
    double bw = cl->scaleup_bw_bytes_per_s * cl->scaleup_eff, lat = cl->scaleup_lat_s;
    if (nodes > 1) {
        double nic = cl->nic_bw_bytes_per_s * cl->nic_eff * (double)cl->nics_per_node / (double)cl->gpus_per_node / (double)(share > 0 ? share : 1);
        int64_t per = n / nodes;
        bw = nic * (per > 1 ? (double)per : 1.0);
        if (bw > cl->scaleup_bw_bytes_per_s * cl->scaleup_eff) bw = cl->scaleup_bw_bytes_per_s * cl->scaleup_eff;
        lat = cl->nic_lat_s;
    }
    double steps = (c == TS_COLL_ALLREDUCE ? 2.0 : 1.0) * (double)(n - 1);
    return lat * (steps < 20 ? steps : 20) + bytes * f / bw;
}

double hw_p2p_time_s(const HwNet *net, double bytes, bool cross)
{
    const ClusterSpec *cl = &net->cl;
    if (bytes <= 0) return 0;
    return cross ? cl->nic_lat_s + bytes / (cl->nic_bw_bytes_per_s * cl->nic_eff)
                 : cl->scaleup_lat_s + bytes / (cl->scaleup_bw_bytes_per_s * cl->scaleup_eff);
}

double hw_alltoall_time_s(const HwNet *net, double bytes_per_rank, int64_t ep, int64_t nodes)
{
    return hw_coll_time_s(net, TS_COLL_ALLTOALL, bytes_per_rank * (double)ep, ep, nodes, 1, "ep");
}

double hw_cp_step_time_s(const HwNet *net, double bytes, int64_t cp, int64_t nodes)
{
    (void)cp;
    return hw_p2p_time_s(net, bytes, nodes > 1);
}
