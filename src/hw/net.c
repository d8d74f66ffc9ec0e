/* Communication model: NCCL-style ring / tree / NVLS collectives with the
 * LL / LL128 / Simple protocols, the fastest (algorithm, protocol) chosen
 * per call as NCCL's tuner does (NVIDIA/nccl src/graph/tuning.cc;
 * calibration_facts.md 4.6; astrasim_chakra.md 3.3).
 *
 *   time = overhead + latency(algo, proto) + (fill(proto) + S) * factor / busbw(algo, proto)
 *
 * factor is nccl-tests' (2(n-1)/n all-reduce, (n-1)/n AG/RS/A2A, 1 broadcast),
 * S the whole buffer. busbw is link-bound: intra-node the per-GPU scale-up
 * bandwidth x efficiency; across nodes min(intra, GPUs-of-the-group-per-node x
 * per-GPU NIC share) (NCCL rings use one rail per GPU; ml-engineering: inter-node
 * AR busbw ~ sum of node NIC bandwidth x 0.95). fill models the pipeline ramp
 * that makes effective bandwidth fall for mid-size messages (a single alpha-beta
 * line does not fit the measured curves, calibration_facts 4.2). */
#include "hw_internal.h"

#include <math.h>
#include <string.h>

/* NCCL base latency [algo][proto] and per-hop NVLink / NET latencies (us),
 * tuning.cc defaults (calibration_facts 4.6). Index: 0 ring, 1 tree. */
static const double BASE_US[2][HW_PROTO_COUNT] = {{6.6, 14.0, 8.4}, {6.8, 14.0, 8.4}};
static const double HOP_NVL_US[2][HW_PROTO_COUNT] = {{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}};
static const double HOP_NET_US[2][HW_PROTO_COUNT] = {{2.7, 4.0, 14.0}, {5.0, 8.5, 14.0}};
/* The cluster's per-hop latencies (scaleup / scaleout latency_us, NCCL's LL
 * hop: NVLink 0.6, PCI 1.0, NET 2.7 us) scale the tables above, whose LL
 * entries are NCCL's NVLink and NET ones. */
static double hop_nvl(const ClusterSpec *cl, int a, int p)
{
    return HOP_NVL_US[a][p] * (cl->scaleup_lat_s > 0 ? cl->scaleup_lat_s / (HOP_NVL_US[0][HW_PROTO_LL] * 1e-6) : 1);
}
static double hop_net(const ClusterSpec *cl, int a, int p)
{
    return HOP_NET_US[a][p] * (cl->nic_lat_s > 0 ? cl->nic_lat_s / (HOP_NET_US[0][HW_PROTO_LL] * 1e-6) : 1);
}
#define NVLS_HOP_US 25.0
#define NVLS_NET_US 18.0
#define NVLSTREE_NET_US 20.9
/* Per-collective launch + synchronisation seen by nccl-tests beyond NCCL's
 * model: 8xH100 32 KiB all-reduce takes ~33 us where LL's model gives 15. */
#define COLL_OVERHEAD_US 15.0
/* Pipeline ramp (bytes of buffer) per protocol: fitted to the shape of the
 * 8xA100 / 8xH100 busbw-vs-size curves (calibration_facts 4.2): Simple
 * reaches half its bandwidth around 20 MiB, LL128 around 2 MiB. */
static const double FILL_BYTES[HW_PROTO_COUNT] = {0.0, 2.0 * 1048576.0, 20.0 * 1048576.0};

TS_ENUM_NAMES(hw_algo, HwAlgo, HW_ALGO_LIST, HW_ALGO_COUNT)
TS_ENUM_NAMES(hw_proto, HwProto, HW_PROTO_LIST, HW_PROTO_COUNT)

void hw_net_init(HwNet *net, const ClusterSpec *c)
{
    memset(net, 0, sizeof *net);
    net->cl = *c;
}

/* NCCL per-generation caps (tuning.cc): LL busbw cap on one node, LL128 per
 * channel cap, channels. */
typedef struct GenCaps {
    double ll_max, ll128_ch;
    int channels;
} GenCaps;

static GenCaps gen_caps(const char gen[static 16])
{
    /* fixed-length compares (names and NUL within gen[16]): no strcmp per collective */
    if (!memcmp(gen, "ampere", 7)) return (GenCaps){87.7e9, 20e9, 8};
    if (!memcmp(gen, "blackwell", 10)) return (GenCaps){282e9, 40e9, 24};
    return (GenCaps){141e9, 36.7e9, 16}; /* hopper and others */
}

/* fmin of two non-NaN values, inline (libm's fmin is a call) */
static inline double fmin_pos(double a, double b) { return a < b ? a : b; }

static double coll_factor(TsColl c, int64_t n)
{
    double dn = (double)n;
    switch (c) {
    case TS_COLL_ALLREDUCE: return 2.0 * (dn - 1) / dn;
    case TS_COLL_ALLGATHER:
    case TS_COLL_REDUCESCATTER:
    case TS_COLL_ALLTOALL: return (dn - 1) / dn;
    default: return 1.0;
    }
}

/* Ring steps (NCCL nsteps) and inter-node steps. */
static void ring_steps(TsColl c, int64_t n, int64_t nodes, double *steps, double *inter)
{
    double k = c == TS_COLL_ALLREDUCE ? 2.0 : 1.0;
    *steps = k * (double)(n - 1);
    *inter = k * (double)(nodes - 1);
}

/* Per-GPU NIC share of bandwidth, with oversubscription past one leaf. */
static double nic_gpu_bw(const ClusterSpec *cl, int64_t nodes, int64_t sharing)
{
    if (cl->nics_per_node <= 0) return 0;
    double per_gpu = cl->nic_bw_bytes_per_s * cl->nic_eff * (double)cl->nics_per_node / (double)cl->gpus_per_node;
    if (nodes > cl->nodes_per_leaf) per_gpu /= cl->oversubscription;
    return per_gpu / (double)(sharing > 0 ? sharing : 1);
}

/* NVLS pipelines in the switch: half its bandwidth near 8 MiB (8xH100:
 * 234 GB/s busbw at 16 MiB, 362 at 64 MiB). */
#define NVLS_FILL_BYTES (8.0 * 1048576.0)

/* The pipeline ramp is a time, fitted in bytes on NVLink rings of 232-370
 * GB/s busbw (FILL_BYTES); over PCIe (scaleup.link pcie) the same ramp
 * carries the bytes of its slower link: FILL_BYTES x busbw / 232 GB/s. */
#define FILL_REF_BW 232e9
static double fill_scale(const ClusterSpec *cl, double bw)
{
    return cl->scaleup_link == HW_LINK_PCIE ? fmin(1.0, bw / FILL_REF_BW) : 1.0;
}

/* NCCL enables LL128 only where the paths inside a node are NVLink
 * (tuning.cc: typeIntra <= PATH_NVB): not over PCIe (scaleup.link pcie). */
static bool proto_on(const ClusterSpec *cl, int p) { return !(p == HW_PROTO_LL128 && cl->scaleup_link == HW_LINK_PCIE); }

static void consider(HwCollCost *best, HwAlgo a, HwProto p, double lat_s, double bw, double bytes,
                     double factor, double fscale)
{
    if (!(bw > 0)) return;
    double fill = (a == HW_ALGO_NVLS ? NVLS_FILL_BYTES : FILL_BYTES[p]) * fscale;
    double t = lat_s + (fill + bytes) * factor / bw;
    if (t < best->time_s) {
        best->time_s = t;
        best->lat_s = lat_s;
        best->algo = a;
        best->proto = p;
    }
}

static HwCollCost model_cost(const HwNet *net, TsColl c, double S, int64_t n, int64_t nodes, int64_t sharing)
{
    const ClusterSpec *cl = &net->cl;
    GenCaps caps = gen_caps(cl->gen);
    HwCollCost best = {INFINITY, 0, 0, HW_ALGO_RING, HW_PROTO_SIMPLE};
    if (nodes < 1) nodes = 1;
    if (nodes > n) nodes = n;
    int64_t ppn = ts_ceil_div(n, nodes);
    double factor = coll_factor(c, n);
    double intra = cl->scaleup_bw_bytes_per_s * cl->scaleup_eff;
    double link = intra;
    if (nodes > 1) {
        double inter = (double)ppn * nic_gpu_bw(cl, nodes, sharing);
        if (!(inter > 0)) inter = 1e9; /* no NICs: a PCIe-ish host path */
        link = ppn > 1 && intra < inter ? intra : inter;
    }
    double over = COLL_OVERHEAD_US * 1e-6;

    if (c == TS_COLL_ALLTOALL || c == TS_COLL_SENDRECV) {
        /* direct: every pair at once; intra share over NVLink, the rest over NICs */
        double a2a_intra = intra * 0.88; /* DGX A100 210 vs 232 ring; H100 320 vs 370 (4.1) */
        double peers = (double)(n - 1);
        double frac_inter = nodes > 1 ? (double)(n - ppn) / peers : 0.0;
        for (int p = 0; p < HW_PROTO_COUNT; p++) {
            if (!proto_on(cl, p)) continue;
            double pbw = p == HW_PROTO_LL ? 0.5 : p == HW_PROTO_LL128 ? 0.92 : 1.0;
            double t_in = (1.0 - frac_inter) / (a2a_intra * pbw);
            double t_out = frac_inter > 0 ? frac_inter / (nic_gpu_bw(cl, nodes, sharing) * pbw) : 0;
            double per_byte = fmax(t_in, t_out); /* seconds per busbw-byte */
            double lat = over + (BASE_US[0][p] + (nodes > 1 ? hop_net(cl, 0, p) : hop_nvl(cl, 0, p))) * 1e-6;
            double bw = 1.0 / per_byte;
            consider(&best, HW_ALGO_DIRECT, (HwProto)p, lat, bw, S, factor, fill_scale(cl, bw));
        }
        return best;
    }

    double steps, inter_steps, lg_nodes = c == TS_COLL_ALLREDUCE && nodes > 1 ? log2((double)nodes) : 0;
    ring_steps(c, n, nodes, &steps, &inter_steps);
    if (c == TS_COLL_BROADCAST) steps = (double)(n - 1), inter_steps = (double)(nodes - 1);
    for (int p = 0; p < HW_PROTO_COUNT; p++) {
        if (!proto_on(cl, p)) continue;
        /* ---- ring */
        double lat = over + (BASE_US[0][p] + (steps - inter_steps) * hop_nvl(cl, 0, p) +
                             inter_steps * hop_net(cl, 0, p)) * 1e-6;
        double bw = link;
        if (p == HW_PROTO_LL) bw = nodes == 1 && caps.ll_max < 0.5 * link ? caps.ll_max : 0.5 * link;
        if (p == HW_PROTO_LL128) bw = fmin_pos(0.92 * link, caps.ll128_ch * caps.channels);
        consider(&best, HW_ALGO_RING, (HwProto)p, lat, bw, S, factor, fill_scale(cl, bw));
        /* ---- tree (all-reduce across nodes): chain inside, tree across */
        if (c == TS_COLL_ALLREDUCE && nodes > 1) {
            double tl = over + (BASE_US[1][p] + 2.0 * ((double)(ppn - 1) * hop_nvl(cl, 1, p) +
                                                       lg_nodes * hop_net(cl, 1, p))) * 1e-6;
            /* NCCL: tree algbw = 0.5 x 0.92 x busbw (LL a further 1/3.8) */
            double tbw = 0.46 * link * factor * (p == HW_PROTO_LL ? 1.0 / 3.8 : 1.0);
            consider(&best, HW_ALGO_TREE, (HwProto)p, tl, tbw, S, factor, fill_scale(cl, tbw));
        }
    }
    /* ---- NVLS (Simple only): all-reduce inside the NVLink domain; with
     * nodes > 1 NVLS-Tree (SHARP across nodes halves the NIC traffic). */
    if (c == TS_COLL_ALLREDUCE && cl->nvls && ppn >= 2) {
        /* The switch reduces: each GPU sends S once and receives S once, so
         * algbw = scaleup x nvls_eff (8xH100: ~275 GB/s = busbw 480). Across
         * nodes (NVLS-Tree) each rail carries S/ppn, twice without SHARP. */
        double algbw = cl->scaleup_bw_bytes_per_s * cl->nvls_eff;
        double lat = over + NVLS_HOP_US * 1e-6;
        if (nodes > 1) {
            algbw = fmin(algbw, (double)ppn * nic_gpu_bw(cl, nodes, sharing) * (cl->sharp ? 1.0 : 0.5));
            lat += (cl->sharp ? NVLS_NET_US : 2.0 * lg_nodes * NVLSTREE_NET_US) * 1e-6;
        }
        consider(&best, HW_ALGO_NVLS, HW_PROTO_SIMPLE, lat, algbw * factor, S, factor, 1.0);
    }
    return best;
}

/* Measured table: t = S * factor / busbw (SimAI's analytical formula), plus
 * the modelled latency of a small message so tiny messages are not free. */
HwCollCost hw_coll_cost(const HwNet *net, TsColl c, double bytes, int64_t group_size, int64_t group_nodes,
                        int64_t nic_sharing, HwGroupKind kind)
{
    HwCollCost r = {0, 0, 0, HW_ALGO_RING, HW_PROTO_SIMPLE};
    if (group_size <= 1 || !(bytes > 0) || c == TS_COLL_NONE) return r;
    if (c == TS_COLL_SENDRECV) group_size = 2;
    double factor = coll_factor(c, group_size);
    if (net->busbw) {
        double bw = hw_busbw_lookup(net->busbw, kind, c, bytes);
        if (bw > 0) {
            r.time_s = bytes * factor / bw;
            r.busbw_bytes_per_s = bw;
            r.algo = HW_ALGO_TABLE;
            return r;
        }
    }
    r = model_cost(net, c, bytes, group_size, group_nodes, nic_sharing);
    r.busbw_bytes_per_s = bytes * factor / r.time_s;
    return r;
}

double hw_coll_time_s(const HwNet *net, TsColl c, double bytes, int64_t group_size, int64_t group_nodes,
                      int64_t nic_sharing, HwGroupKind kind)
{
    return hw_coll_cost(net, c, bytes, group_size, group_nodes, nic_sharing, kind).time_s;
}

/* One message to one peer: NVLink p2p (A100 274 of 300, H100 376 of 450 ~
 * scaleup_eff) or one NIC share; LL for small, Simple for large. A "pp"
 * table row (SimAI's PP busbw) overrides. */
double hw_p2p_time_s(const HwNet *net, double bytes, bool cross_node)
{
    if (!(bytes > 0)) return 0;
    if (net->busbw) {
        double bw = hw_busbw_lookup(net->busbw, HW_GROUP_PP, TS_COLL_SENDRECV, bytes);
        if (bw > 0) return bytes / bw;
    }
    const ClusterSpec *cl = &net->cl;
    double bw = cross_node ? nic_gpu_bw(cl, 2, 1) : cl->scaleup_bw_bytes_per_s * cl->scaleup_eff;
    if (!(bw > 0)) bw = 1e9;
    double best = INFINITY;
    for (int p = 0; p < HW_PROTO_COUNT; p++) {
        if (!proto_on(cl, p)) continue;
        double hop = cross_node ? hop_net(cl, 0, p) : hop_nvl(cl, 0, p);
        double pbw = bw * (p == HW_PROTO_LL ? 0.5 : p == HW_PROTO_LL128 ? 0.92 : 1.0);
        double fill = FILL_BYTES[p] * 0.125 * fill_scale(cl, pbw);
        double t = (COLL_OVERHEAD_US + BASE_US[0][p] + hop) * 1e-6 + (fill + bytes) / pbw;
        if (t < best) best = t;
    }
    return best;
}

double hw_alltoall_time_s(const HwNet *net, double bytes_per_rank, int64_t ep, int64_t nodes)
{
    return hw_coll_time_s(net, TS_COLL_ALLTOALL, bytes_per_rank, ep, nodes, 1, HW_GROUP_EP);
}

/* Distinct nodes a token's topk expert copies reach among n nodes. */
static double ep_token_nodes(const HwEpRoute *r, double n)
{
    double k = (double)(r->topk > 0 ? r->topk : 1);
    if (r->node_limit > 0) return fmin(fmin((double)r->node_limit, k), n);
    return n * (1.0 - pow(1.0 - 1.0 / n, k));
}

double hw_ep_a2a_time_s(const HwNet *net, double bytes_per_rank, int64_t ep, int64_t nodes, const HwEpRoute *r)
{
    double load = r && r->load > 1.0 ? r->load : 1.0, S = bytes_per_rank * load;
    if (!r || !r->deepep || nodes <= 1 || ep <= 1 || !(S > 0)) return hw_alltoall_time_s(net, S, ep, nodes);
    const ClusterSpec *cl = &net->cl;
    if (nodes > ep) nodes = ep;
    double n = (double)nodes, ppn = (double)ts_ceil_div(ep, nodes), k = (double)(r->topk > 0 ? r->topk : 1);
    double remote = ep_token_nodes(r, n) * (n - 1.0) / n;
    double nic = nic_gpu_bw(cl, nodes, 1), nvl = cl->scaleup_bw_bytes_per_s * cl->scaleup_eff * 0.88;
    if (!(nic > 0)) nic = 1e9;
    double t_ib = S * remote / k / nic, t_nvl = ppn > 1 ? S * (ppn - 1.0) / ppn / nvl : 0;
    double lat = (COLL_OVERHEAD_US + BASE_US[0][HW_PROTO_SIMPLE] + hop_net(cl, 0, HW_PROTO_SIMPLE)) * 1e-6;
    return lat + fmax(t_ib, t_nvl);
}

