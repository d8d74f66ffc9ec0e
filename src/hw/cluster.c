/* Cluster presets: data/clusters/<name>.json ("trainsim-cluster" v1).
 *
 *   {"format": "trainsim-cluster", "version": 1, "name": "dgx-h100", "source": "...",
 *    "gpu": "h100-sxm5-80gb", "gpus_per_node": 8,
 *    "scaleup":  {"gb_per_s": 450, "latency_us": 0.6, "efficiency": 0.82,
 *                 "nvls": true, "nvls_efficiency": 0.85, "link": "nvlink"},
 *    "scaleout": {"nics_per_node": 8, "nic_gbit_per_s": 400, "latency_us": 2.7,
 *                 "efficiency": 0.94, "sharp": false, "oversubscription": 1,
 *                 "nodes_per_leaf": 32}}
 */
#include "hw_internal.h"

#include <string.h>

/* "gpus" and "nodes": the size hw --cluster --json writes, read back and
 * ignored (--gpus sizes a job) */
static const char *const TOP_KEYS[] = {"format", "version", "name", "source", "gpu", "gpus_per_node", "gen",
                                       "scaleup", "scaleout", "notes", "gpus", "nodes", NULL};
static const char *const UP_KEYS[] = {"gb_per_s", "latency_us", "efficiency", "nvls", "nvls_efficiency",
                                      "link", NULL};
/* scaleup.link (HwLink order): what carries GPU-to-GPU traffic inside a node */
static const char *const LINKS[] = {"nvlink", "xgmi", "pcie", NULL};
static const char *const LINK_SHOWN[] = {"NVLink", "xGMI", "PCIe"};

const char *hw_link_name(HwLink l) { return l >= 0 && l < HW_LINK_COUNT ? LINKS[l] : "?"; }
const char *hw_link_display(HwLink l) { return l >= 0 && l < HW_LINK_COUNT ? LINK_SHOWN[l] : "?"; }
static const char *const OUT_KEYS[] = {"nics_per_node", "nic_gbit_per_s", "latency_us", "efficiency",
                                       "sharp", "oversubscription", "nodes_per_leaf", NULL};

static TsStatus num(const TsJsonDoc *doc, json_t *o, const char *prefix, const char *key, bool req,
                    double lo, double hi, double scale, double *out, TsError *err)
{
    char p[128];
    snprintf(p, sizeof p, "%s.%s", prefix, key);
    double v = *out / scale;
    TsStatus st = ts_json_num(doc, o, key, p, req, lo, hi, &v, err);
    if (!st) *out = v * scale;
    return st;
}

static TsStatus parse(const TsJsonDoc *doc, ClusterSpec *c, TsError *err)
{
    json_t *r = doc->root, *up, *out;
    TsStatus st;
    /* the format first: another trainsim file is named as such, not by its fields */
    if ((st = hw_check_format(doc, "trainsim-cluster", err))) return st;
    if ((st = hw_check_keys(doc, r, "", TOP_KEYS, err))) return st;
    if ((st = ts_json_str(doc, r, "name", "name", true, c->name, sizeof c->name, err))) return st;
    if ((st = ts_json_str(doc, r, "source", "source", true, c->source, sizeof c->source, err))) return st;
    if ((st = ts_json_str(doc, r, "gpu", "gpu", true, c->gpu_name, sizeof c->gpu_name, err))) return st;
    if ((st = ts_json_int(doc, r, "gpus_per_node", "gpus_per_node", true, 1, 100000, &c->gpus_per_node, err)))
        return st;
    if ((st = ts_json_str(doc, r, "gen", "gen", false, c->gen, sizeof c->gen, err))) return st;
    if ((st = hw_json_obj(doc, r, "scaleup", "scaleup", true, &up, err))) return st;
    if ((st = hw_check_keys(doc, up, "scaleup", UP_KEYS, err))) return st;
    if ((st = num(doc, up, "scaleup", "gb_per_s", true, 0.1, 1e6, 1e9, &c->scaleup_bw_bytes_per_s, err)) ||
        (st = num(doc, up, "scaleup", "latency_us", false, 0, 1e4, 1e-6, &c->scaleup_lat_s, err)) ||
        (st = num(doc, up, "scaleup", "efficiency", false, 0.01, 1, 1, &c->scaleup_eff, err)) ||
        (st = ts_json_bool(doc, up, "nvls", "scaleup.nvls", false, &c->nvls, err)) ||
        (st = num(doc, up, "scaleup", "nvls_efficiency", false, 0.01, 1, 1, &c->nvls_eff, err)))
        return st;
    char link[16] = "nvlink";
    if ((st = ts_json_str(doc, up, "link", "scaleup.link", false, link, sizeof link, err))) return st;
    int li = 0;
    while (LINKS[li] && strcmp(LINKS[li], link)) li++;
    if (!LINKS[li]) {
        char msg[96];
        snprintf(msg, sizeof msg, "unknown scaleup.link '%.15s'", link);
        return hw_err_path(doc, "scaleup.link", err, msg, "one of nvlink, xgmi, pcie (default nvlink)");
    }
    c->scaleup_link = (HwLink)li;
    if ((st = hw_json_obj(doc, r, "scaleout", "scaleout", true, &out, err))) return st;
    if ((st = hw_check_keys(doc, out, "scaleout", OUT_KEYS, err))) return st;
    double gbit = 0;
    if ((st = ts_json_int(doc, out, "nics_per_node", "scaleout.nics_per_node", true, 0, 1024,
                          &c->nics_per_node, err)) ||
        (st = num(doc, out, "scaleout", "nic_gbit_per_s", true, 0, 1e6, 1, &gbit, err)) ||
        (st = num(doc, out, "scaleout", "latency_us", false, 0, 1e5, 1e-6, &c->nic_lat_s, err)) ||
        (st = num(doc, out, "scaleout", "efficiency", false, 0.01, 1, 1, &c->nic_eff, err)) ||
        (st = ts_json_bool(doc, out, "sharp", "scaleout.sharp", false, &c->sharp, err)) ||
        (st = num(doc, out, "scaleout", "oversubscription", false, 1, 1000, 1, &c->oversubscription, err)) ||
        (st = ts_json_int(doc, out, "nodes_per_leaf", "scaleout.nodes_per_leaf", false, 1, 1 << 30,
                          &c->nodes_per_leaf, err)))
        return st;
    c->nic_bw_bytes_per_s = gbit * 1e9 / 8.0;
    if (c->nics_per_node > 0 && !(c->nic_bw_bytes_per_s > 0))
        return hw_err_path(doc, "scaleout.nic_gbit_per_s", err,
                           "'scaleout.nic_gbit_per_s' must be > 0 when the node has NICs",
                           "line rate of one NIC in Gb/s, e.g. 400 for NDR");
    return TS_OK;
}

TsStatus hw_cluster_load(const char *name_or_path, int64_t gpus, ClusterSpec *out, TsError *err)
{
    if (gpus < 1) return ts_err(err, TS_ERR_USAGE, "--gpus must be at least 1 (got %lld)", (long long)gpus);
    char path[1200];
    TsStatus st = hw_resolve("clusters", "cluster", name_or_path, path, sizeof path, err);
    if (st) return st;
    TsJsonDoc doc;
    if ((st = ts_json_load(&doc, path, err))) {
        ts_json_free(&doc);
        return st;
    }
    ClusterSpec c;
    memset(&c, 0, sizeof c);
    c.scaleup_link = HW_LINK_NVLINK;
    c.scaleup_lat_s = 0.6e-6;
    c.scaleup_eff = 0.8;
    c.nvls_eff = 0.85;
    c.nic_lat_s = 2.7e-6;
    c.nic_eff = 0.94;
    c.oversubscription = 1;
    c.nodes_per_leaf = 32;
    st = parse(&doc, &c, err);
    if (!st) {
        TsError gerr = {0};
        TsStatus gs = hw_gpu_load(c.gpu_name, &c.gpu, &gerr);
        if (gs) {
            char msg[TS_ERR_MSG_MAX];
            snprintf(msg, sizeof msg, "cluster's GPU '%.60s': %.400s", c.gpu_name, gerr.msg);
            st = hw_err_path(&doc, "gpu", err, msg, gerr.hint[0] ? gerr.hint : NULL);
        }
    }
    ts_json_free(&doc);
    if (st) return st;
    if (!c.gen[0]) snprintf(c.gen, sizeof c.gen, "%s", c.gpu.arch);
    c.gpus = gpus;
    c.nodes = ts_ceil_div(gpus, c.gpus_per_node);
    if (c.nodes > 1 && c.nics_per_node <= 0) { /* no scale-out: inter-node traffic would take forever */
        ts_err(err, TS_ERR_INPUT, "%lld GPUs need %lld nodes, but cluster '%s' has no NICs (scaleout.nics_per_node 0)",
               (long long)gpus, (long long)c.nodes, c.name);
        ts_err_hint(err, "use at most %lld GPUs, or give the nodes NICs", (long long)c.gpus_per_node);
        return TS_ERR_INPUT;
    }
    *out = c;
    return TS_OK;
}

int hw_cluster_names(char names[][64], int cap) { return hw_list_names("clusters", names, cap); }

void hw_cluster_to_json(const ClusterSpec *c, TsBuf *b)
{
    ts_buf_puts(b, "{\n  \"format\": \"trainsim-cluster\",\n  \"version\": 1,\n  \"name\": ");
    ts_json_escape(b, c->name);
    ts_buf_puts(b, ",\n  \"source\": ");
    ts_json_escape(b, c->source);
    ts_buf_puts(b, ",\n  \"gpu\": ");
    ts_json_escape(b, c->gpu_name);
    ts_buf_printf(b, ",\n  \"gpus_per_node\": %lld,\n  \"gen\": ", (long long)c->gpus_per_node);
    ts_json_escape(b, c->gen);
    ts_buf_puts(b, ",\n  \"scaleup\": {\"gb_per_s\": ");
    ts_json_fmt_double(b, c->scaleup_bw_bytes_per_s / 1e9);
    ts_buf_puts(b, ", \"latency_us\": ");
    ts_json_fmt_double(b, c->scaleup_lat_s * 1e6);
    ts_buf_puts(b, ", \"efficiency\": ");
    ts_json_fmt_double(b, c->scaleup_eff);
    ts_buf_printf(b, ", \"nvls\": %s, \"nvls_efficiency\": ", c->nvls ? "true" : "false");
    ts_json_fmt_double(b, c->nvls_eff);
    ts_buf_printf(b, ", \"link\": \"%s\"", hw_link_name(c->scaleup_link));
    ts_buf_printf(b, "},\n  \"scaleout\": {\"nics_per_node\": %lld, \"nic_gbit_per_s\": ",
                  (long long)c->nics_per_node);
    ts_json_fmt_double(b, c->nic_bw_bytes_per_s * 8 / 1e9);
    ts_buf_puts(b, ", \"latency_us\": ");
    ts_json_fmt_double(b, c->nic_lat_s * 1e6);
    ts_buf_puts(b, ", \"efficiency\": ");
    ts_json_fmt_double(b, c->nic_eff);
    ts_buf_printf(b, ", \"sharp\": %s, \"oversubscription\": ", c->sharp ? "true" : "false");
    ts_json_fmt_double(b, c->oversubscription);
    ts_buf_printf(b, ", \"nodes_per_leaf\": %lld},\n", (long long)c->nodes_per_leaf);
    ts_buf_printf(b, "  \"gpus\": %lld,\n  \"nodes\": %lld\n}\n", (long long)c->gpus, (long long)c->nodes);
}
