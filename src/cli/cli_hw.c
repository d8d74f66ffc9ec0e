/* The hardware option group (cli_hw.h). */
#include "cli_hw.h"

#include <stdio.h>
#include <string.h>

#include "cli_values.h"

void cli_hw_init(CliHw *h)
{
    memset(h, 0, sizeof *h);
    h->gpus = -1;
}

static void add_group(CliSpec *s, CliHw *h, const char *gpus_help)
{
    cli_add(s, "gpu", CLI_STR, &h->gpu, "G", "GPU preset or JSON file (trainsim hw lists them)");
    cli_add(s, "cluster", CLI_STR, &h->cluster, "C", "cluster preset or JSON file (default dgx-h100)");
    if (gpus_help) cli_add(s, "gpus", CLI_STR, &h->gpus_list, "N[,N..]", gpus_help);
    else cli_add(s, "gpus", CLI_INT, &h->gpus, "N", "GPUs in the job (nodes = ceil(N / GPUs per node))");
    cli_add(s, "calibration", CLI_STR, &h->calibration, "FILE", "measured kernel times (tools/calibrate)");
    cli_add(s, "busbw", CLI_STR, &h->busbw, "FILE", "measured bus bandwidth table (SimAI busbw.yaml or JSON)");
    cli_hw_add_software(s, &h->software);
}

void cli_hw_add_software(CliSpec *s, const char **software)
{
    cli_add(s, "software", CLI_STR, software, "Y",
            "CUDA libraries: 2025 (cuBLAS 12.9+, default) or 2024 (CUDA 12.4-12.6: slower Hopper FP8 GEMMs "
            "and attention)");
    cli_add_check(s, "software", cli_check_software);
}

void cli_hw_software(const char *software, GpuSpec *g)
{
    HwSoftware sw = HW_SOFTWARE_2025;
    if (software) hw_software_parse(software, &sw);
    hw_gpu_software(g, sw);
}

void cli_hw_add(CliSpec *s, CliHw *h) { add_group(s, h, NULL); }

void cli_hw_add_list(CliSpec *s, CliHw *h, const char *gpus_help)
{
    add_group(s, h, gpus_help ? gpus_help : "GPU counts, comma-separated");
}

/* A PCIe card: its preset's name says so ("a100-pcie-40gb"), or it has no
 * scale-up link at all (l40s: scaleup_gb_per_s 0). */
static bool pcie_card(const GpuSpec *g) { return strstr(g->name, "pcie") || g->scaleup_bw_bytes_per_s <= 0; }

/* How well cluster c fits GPU g of family fam: 2 built of g, 1 built of a
 * GPU of g's family over the link g's form has (an SXM A100 40 GB in
 * dgx-a100's NVLink network, as in the DGX A100 320 GB; a PCIe card only
 * in a PCIe server), 0 not at all. */
static int cluster_fit(const ClusterSpec *c, const GpuSpec *g, const char *fam)
{
    if (!strcmp(c->gpu.name, g->name)) return 2;
    const char *cf = hw_gpu_family(c->gpu.name);
    return fam && cf && !strcmp(cf, fam) && (c->scaleup_link == HW_LINK_PCIE) == pcie_card(g) ? 1 : 0;
}

/* The cluster preset that fits `gpu` best (cluster_fit, the first by name
 * among equals) into out: its fit, 0 when none does. */
static int cluster_for_gpu(const GpuSpec *gpu, char *out, size_t cap)
{
    static char names[64][64];
    int n = hw_cluster_names(names, 64), found = 0;
    const char *fam = hw_gpu_family(gpu->name);
    for (int i = 0; i < n && i < 64 && found < 2; i++) {
        ClusterSpec c;
        TsError e = {0};
        if (hw_cluster_load(names[i], 1, &c, &e) != TS_OK) continue;
        int k = cluster_fit(&c, gpu, fam);
        if (k > found) {
            snprintf(out, cap, "%.63s", names[i]);
            found = k;
        }
    }
    return found;
}

/* No cluster preset is built of --gpu's kind: say whose network it runs in. */
static void cluster_stand_in(const GpuSpec *gpu, const ClusterSpec *c)
{
    fprintf(stderr,
            "trainsim: warning: no cluster preset is built of %s%s: it runs in %s's network (%.0f GB/s a GPU "
            "within a node, %lld NICs of %.0f Gb/s a node); describe its servers with --cluster FILE\n",
            gpu->name, pcie_card(gpu) ? " (a PCIe card)" : "", c->name, c->scaleup_bw_bytes_per_s / 1e9,
            (long long)c->nics_per_node, c->nic_bw_bytes_per_s * 8 / 1e9);
}

int cli_hw_load(const CliHw *h, const char *default_cluster, int64_t default_gpus, CliHwLoaded *out)
{
    memset(out, 0, sizeof *out);
    TsError err = {0};
    GpuSpec gpu;
    bool have_gpu = false;
    if (h->gpu) {
        if (hw_gpu_load(h->gpu, &gpu, &err) != TS_OK) return cli_fail(&err);
        have_gpu = true;
    }
    char cname[64];
    const char *cl = h->cluster;
    bool stand_in = false;
    if (!cl) {
        cl = default_cluster ? default_cluster : "dgx-h100";
        if (have_gpu && cluster_for_gpu(&gpu, cname, sizeof cname)) cl = cname;
        else stand_in = have_gpu;
    }
    /* Size after loading (the per-node count is needed for the default). */
    if (hw_cluster_load(cl, 1, &out->cluster, &err) != TS_OK) return cli_fail(&err);
    if (stand_in && !h->no_traffic && (h->gpus > 1 || default_gpus > 1))
        cluster_stand_in(&gpu, &out->cluster); /* GPUs that talk */
    int64_t gpus = h->gpus > 0 ? h->gpus : default_gpus > 0 ? default_gpus : out->cluster.gpus_per_node;
    /* Re-load at the real size: hw_cluster_load checks what depends on it
     * (a cluster without NICs cannot span nodes). */
    if (gpus != 1 && hw_cluster_load(cl, gpus, &out->cluster, &err) != TS_OK) return cli_fail(&err);
    out->cluster.gpus = gpus;
    out->cluster.nodes = ts_ceil_div(gpus, out->cluster.gpus_per_node);
    if (have_gpu) {
        out->cluster.gpu = gpu;
        snprintf(out->cluster.gpu_name, sizeof out->cluster.gpu_name, "%s", gpu.name);
    }
    cli_hw_software(h->software, &out->cluster.gpu);
    if (h->calibration && hw_calib_load(h->calibration, &out->calib, &err) != TS_OK) return cli_fail(&err);
    if (out->calib) cli_calib_gpu_check(h->calibration, out->calib, &out->cluster.gpu);
    if (h->busbw && hw_busbw_load(h->busbw, &out->busbw, &err) != TS_OK) {
        cli_hw_free(out);
        return cli_fail(&err);
    }
    hw_model_init(&out->model);
    out->model.gpu = out->cluster.gpu;
    out->model.calib = out->calib;
    hw_net_init(&out->net, &out->cluster);
    out->net.busbw = out->busbw;
    return 0;
}

void cli_calib_gpu_check(const char *path, const HwCalib *c, const GpuSpec *g)
{
    const char *fc = hw_gpu_family(hw_calib_gpu(c)), *fg = hw_gpu_family(g->name);
    if (fc && fg && strcmp(fc, fg))
        fprintf(stderr,
                "trainsim: warning: %s was measured on '%s' and the GPU is %s: its kernel times stand for "
                "another GPU (run tools/calibrate on this one)\n",
                path, hw_calib_gpu(c), g->name);
}

void cli_hw_net_sized(const CliHwLoaded *l, int64_t gpus, HwNet *net)
{
    ClusterSpec c = l->cluster;
    c.gpus = gpus;
    c.nodes = ts_ceil_div(gpus, c.gpus_per_node);
    hw_net_init(net, &c);
    net->busbw = l->busbw;
}

int cli_headroom_check(double room, const GpuSpec *gpu)
{
    if (room < gpu->hbm_bytes) return 0;
    TsError e = {.code = TS_ERR_USAGE};
    ts_err(&e, TS_ERR_USAGE, "--headroom %.1f GiB leaves nothing of the %.1f GiB of %s", room / 1073741824.0,
           gpu->hbm_bytes / 1073741824.0, gpu->name);
    ts_err_hint(&e, "the memory each GPU keeps free, below its capacity, e.g. --headroom 4");
    return cli_fail(&e);
}

void cli_hw_free(CliHwLoaded *l)
{
    hw_calib_free(l->calib);
    hw_busbw_free(l->busbw);
    l->calib = NULL;
    l->busbw = NULL;
}
