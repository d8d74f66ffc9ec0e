/*
 * html.c — the self-contained HTML/SVG report for a plan and for a sweep
 * (see report.h, HTML part). No script, no external resource: everything the
 * page needs is inline, so the file can be mailed or archived as is.
 *
 * Layout (pixels): SVGs are W_SVG wide; the timeline has one ROW_H row per
 * pipeline stage under a time axis; the breakdown and memory bars are one
 * stacked bar each with a legend; the sweep scatter is PLOT_W x PLOT_H with
 * memory per GPU on x and tokens/s on y. SVGs shrink to the width of their
 * section and tables scroll inside their own box, so a 1280 px window shows
 * the page without a horizontal scroll bar (checked in tests/browser).
 */
#include "trainsim/report.h"
#include "trainsim/report_html.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { W_SVG = 1200, LABEL_W = 90, ROW_H = 26, AXIS_H = 28, PLOT_W = 1040, PLOT_H = 420 };

TS_ENUM_NAMES(rep_kind, RepKind, REP_KIND_LIST, REP_KIND_COUNT)

/* One palette: a colour means one thing in every chart of every report.
 * The timeline's kinds (REP_KIND_LIST) take the same colours: forward blue,
 * backward green, recompute brown, communication orange, optimizer purple,
 * bubble grey; the kinds of exposed communication are shades of the
 * communication orange and red; memory categories have their own. */
static const struct {
    const char *name, *color;
} COLORS[] = {
    {"forward", "#4e79a7"},         {"backward", "#59a14f"},         {"compute", "#2f4b7c"},
    {"recompute", "#9c755f"},       {"communication", "#f28e2b"},    {"tp_comm_exposed", "#f28e2b"},
    {"cp_comm_exposed", "#ffbe7d"}, {"ep_comm_exposed", "#e15759"},  {"pp_comm_exposed", "#d37295"},
    {"dp_comm_exposed", "#b6992d"}, {"bubble", "#d3d3d3"},           {"optimizer", "#b07aa1"},
    {"overlap_slowdown", "#fabfd2"}, {"weights", "#499894"},         {"gradients", "#86bcb6"},
    {"activations", "#f1ce63"},     {"other", "#bab0ac"},            {"simulated_plan", "#9aa7b4"},
    {"top_plan", "#3b3b3b"},        {"best_plan", "#000000"},        {"capacity", "#cc0000"},
    {"warning", "#a4262c"},
};

/* The colour of a category by its name; an unknown one dark grey. */
static const char *color_of(const char *name)
{
    for (size_t i = 0; name && i < sizeof COLORS / sizeof COLORS[0]; i++)
        if (!strcmp(COLORS[i].name, name)) return COLORS[i].color;
    return "#555555";
}

/* ---- number formatting ------------------------------------------------------ */
void rep_fmt_si(char *out, size_t cap, double v)
{
    static const char *const SUF[] = {"", " k", " M", " G", " T", " P", " E"};
    int i = 0;
    double a = fabs(v);
    while (a >= 999.95 && i < 6) {
        a /= 1000.0;
        v /= 1000.0;
        i++;
    }
    snprintf(out, cap, "%.3g%s", v, SUF[i]);
}

void rep_fmt_bytes(char *out, size_t cap, double bytes)
{
    static const char *const SUF[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int i = 0;
    double a = bytes;
    while (fabs(a) >= 1024.0 && i < 5) {
        a /= 1024.0;
        i++;
    }
    snprintf(out, cap, i == 0 ? "%.0f %s" : "%.1f %s", a, SUF[i]);
}

void rep_fmt_seconds(char *out, size_t cap, double s)
{
    double a = fabs(s);
    if (a >= 1.0 || a == 0.0) snprintf(out, cap, "%.3g s", s);
    else if (a >= 1e-3) snprintf(out, cap, "%.3g ms", s * 1e3);
    else snprintf(out, cap, "%.3g us", s * 1e6);
}

/* ---- HTML helpers -------------------------------------------------------------- */
static void esc(TsBuf *b, const char *s)
{
    if (!s) return;
    for (; *s; s++) {
        switch (*s) {
        case '<': ts_buf_puts(b, "&lt;"); break;
        case '>': ts_buf_puts(b, "&gt;"); break;
        case '&': ts_buf_puts(b, "&amp;"); break;
        case '"': ts_buf_puts(b, "&quot;"); break;
        case '\'': ts_buf_puts(b, "&#39;"); break;
        default: ts_buf_append(b, s, 1);
        }
    }
}

static const char CSS[] =
    "body{font:14px/1.4 system-ui,-apple-system,'Segoe UI',Helvetica,Arial,sans-serif;"
    "margin:24px;color:#222;background:#fafafa}\n"
    "h1{font-size:22px;margin:0 0 12px}h2{font-size:17px;margin:24px 0 8px}\n"
    "section{background:#fff;border:1px solid #ddd;border-radius:6px;padding:12px 16px;margin:12px 0}\n"
    "p,li{overflow-wrap:anywhere}\n"
    "svg.chart{display:block;max-width:100%;height:auto}\n"
    ".scroll{overflow-x:auto;max-width:100%}\n"
    "section.warnings{border-left-width:5px}section.warnings li,section.notes li{margin:3px 0}\n"
    ".metrics{display:flex;flex-wrap:wrap;gap:10px}\n"
    ".metric{background:#fff;border:1px solid #ddd;border-radius:6px;padding:8px 12px;min-width:120px}\n"
    ".metric .k{font-size:12px;color:#666}.metric .v{font-size:18px;font-weight:600}\n"
    "table{border-collapse:collapse;font-size:13px}\n"
    "th,td{border-bottom:1px solid #eee;padding:3px 10px;text-align:right;white-space:nowrap}\n"
    "th{background:#f3f3f3}td:first-child,th:first-child{text-align:left}\n"
    ".legend span{display:inline-block;margin-right:14px}\n"
    ".sw{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px}\n"
    "svg text{font:12px system-ui,Helvetica,Arial,sans-serif;fill:#333}\n"
    "footer{color:#888;font-size:12px;margin-top:18px}\n";

static void page_open(TsBuf *b, const char *title, const char *kind)
{
    ts_buf_puts(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n");
    ts_buf_printf(b, "<meta name=\"generator\" content=\"trainsim %s\">\n", TRAINSIM_VERSION);
    ts_buf_printf(b, "<meta name=\"trainsim-report\" content=\"%s v1\">\n", kind);
    ts_buf_puts(b, "<title>");
    esc(b, title);
    ts_buf_puts(b, "</title>\n<style>\n");
    ts_buf_puts(b, CSS);
    ts_buf_puts(b, "</style>\n</head>\n<body>\n<h1>");
    esc(b, title);
    ts_buf_puts(b, "</h1>\n");
}

static void page_close(TsBuf *b, const char *generator)
{
    ts_buf_puts(b, "<footer>Generated by ");
    esc(b, generator ? generator : "trainsim " TRAINSIM_VERSION);
    ts_buf_puts(b, ". Self-contained report (trainsim HTML report v1): no script, no network.</footer>\n"
                   "</body>\n</html>\n");
}

static void metrics_html(TsBuf *b, const RepKV *kv, int n)
{
    if (n <= 0) return;
    ts_buf_puts(b, "<div class=\"metrics\">\n");
    for (int i = 0; i < n; i++) {
        ts_buf_puts(b, "<div class=\"metric\"><div class=\"k\">");
        esc(b, kv[i].key);
        ts_buf_puts(b, "</div><div class=\"v\">");
        esc(b, kv[i].value);
        ts_buf_puts(b, "</div></div>\n");
    }
    ts_buf_puts(b, "</div>\n");
}

static void kv_table(TsBuf *b, const RepKV *kv, int n)
{
    ts_buf_puts(b, "<div class=\"scroll\"><table class=\"knobs\">\n<tr><th>knob</th><th>value</th></tr>\n");
    for (int i = 0; i < n; i++) {
        ts_buf_puts(b, "<tr><td>");
        esc(b, kv[i].key);
        ts_buf_puts(b, "</td><td>");
        esc(b, kv[i].value);
        ts_buf_puts(b, "</td></tr>\n");
    }
    ts_buf_puts(b, "</table></div>\n");
}

/* A section of lines (the plan's warnings, the sweep's notes): a heading and
 * one list item per line, in the given colour's left border; nothing when
 * there are no lines. */
static void lines_section(TsBuf *b, const char *id, const char *heading, const char *color,
                          const char *const *lines, int n)
{
    if (n <= 0 || !lines) return;
    ts_buf_printf(b, "<section id=\"%s\" class=\"%s\" style=\"border-left-color:%s\"><h2>%s</h2>\n<ul>\n", id, id,
                  color, heading);
    for (int i = 0; i < n; i++) {
        ts_buf_puts(b, "<li>");
        esc(b, lines[i]);
        ts_buf_puts(b, "</li>\n");
    }
    ts_buf_puts(b, "</ul>\n</section>\n");
}

/* A "nice" tick step (1, 2 or 5 x 10^k) giving about `want` ticks on [0, span]. */
static double nice_step(double span, int want)
{
    if (!(span > 0)) return 1.0;
    double raw = span / want, p = pow(10.0, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1.0 : f < 3.5 ? 2.0 : f < 7.5 ? 5.0 : 10.0) * p;
}

/* ---- timeline ------------------------------------------------------------------ */
static void timeline_svg(TsBuf *b, const RepPlanView *v)
{
    int rows = v->n_stages > 0 ? v->n_stages : 1;
    double span = v->iteration_s > 0 ? v->iteration_s : 1.0;
    for (int i = 0; i < v->n_timeline; i++)
        if (v->timeline[i].end_s > span) span = v->timeline[i].end_s;
    double plot_w = W_SVG - LABEL_W - 20, sx = plot_w / span;
    int h = AXIS_H + rows * ROW_H + 8;
    ts_buf_printf(b, "<svg id=\"timeline\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" "
                     "width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n",
                  W_SVG, h, W_SVG, h);
    ts_buf_puts(b, "<title>pipeline timeline: stages by time</title>\n");
    double step = nice_step(span, 10);
    for (int t = 0; t * step <= span * 1.0000001; t++) {
        double x = LABEL_W + t * step * sx;
        char lab[32];
        rep_fmt_seconds(lab, sizeof lab, t * step);
        ts_buf_printf(b, "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"#e3e3e3\"/>"
                         "<text class=\"xtick\" x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%s</text>\n",
                      x, AXIS_H - 6, x, h - 8, x, AXIS_H - 10, lab);
    }
    for (int s = 0; s < rows; s++) {
        int y = AXIS_H + s * ROW_H;
        ts_buf_printf(b, "<text class=\"stage-label\" x=\"4\" y=\"%d\">stage %d</text>"
                         "<rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#f6f6f6\"/>\n",
                      y + ROW_H / 2 + 4, s, LABEL_W, y + 2, plot_w, ROW_H - 4);
    }
    for (int i = 0; i < v->n_timeline; i++) {
        const RepInterval *iv = &v->timeline[i];
        if (iv->stage < 0 || iv->stage >= rows || (unsigned)iv->kind >= REP_KIND_COUNT) continue;
        double x = LABEL_W + iv->start_s * sx, w = (iv->end_s - iv->start_s) * sx;
        if (w < 0.5) w = 0.5;
        /* compute bars fill the row; communication is a strip along its bottom,
         * since it runs on its own streams alongside the compute */
        bool comm = iv->kind == REP_COMM;
        int y = AXIS_H + iv->stage * ROW_H + (comm ? ROW_H - 8 : 3), bh = comm ? 5 : ROW_H - 10;
        char t0[32], t1[32];
        rep_fmt_seconds(t0, sizeof t0, iv->start_s);
        rep_fmt_seconds(t1, sizeof t1, iv->end_s);
        ts_buf_printf(b, "<rect class=\"%s\" x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" fill=\"%s\">"
                         "<title>stage %d %s",
                      rep_kind_names[iv->kind], x, y, w, bh, color_of(rep_kind_names[iv->kind]), iv->stage,
                      rep_kind_names[iv->kind]);
        if (iv->micro >= 0) ts_buf_printf(b, " micro-batch %d", iv->micro);
        ts_buf_printf(b, ": %s to %s</title></rect>\n", t0, t1);
    }
    ts_buf_puts(b, "</svg>\n<div class=\"legend\">");
    for (int k = 0; k < REP_KIND_COUNT; k++)
        ts_buf_printf(b, "<span><i class=\"sw\" style=\"background:%s\"></i>%s</span>", color_of(rep_kind_names[k]),
                      rep_kind_names[k]);
    ts_buf_puts(b, "</div>\n");
}

/* ---- stacked bar (breakdown in seconds, memory in bytes) --------------------------- */
static void fmt_amount(char *out, size_t cap, double v, bool bytes)
{
    if (bytes) rep_fmt_bytes(out, cap, v);
    else rep_fmt_seconds(out, cap, v);
}

static void stacked_bar(TsBuf *b, const char *id, const RepAmount *a, int n, bool bytes, double capacity)
{
    double total = 0;
    for (int i = 0; i < n; i++)
        if (a[i].value > 0) total += a[i].value;
    double scale_max = total > capacity ? total : capacity;
    if (!(scale_max > 0)) scale_max = 1.0;
    double plot_w = W_SVG - 20, sx = plot_w / scale_max, x = 10;
    int h = 70;
    ts_buf_printf(b, "<svg id=\"%s\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                     "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n<title>%s</title>\n",
                  id, W_SVG, h, W_SVG, h, id);
    ts_buf_printf(b, "<rect x=\"10\" y=\"10\" width=\"%.1f\" height=\"30\" fill=\"#f3f3f3\"/>\n", plot_w);
    for (int i = 0; i < n; i++) {
        if (!(a[i].value > 0)) continue;
        double w = a[i].value * sx;
        char val[32];
        fmt_amount(val, sizeof val, a[i].value, bytes);
        ts_buf_printf(b, "<rect x=\"%.2f\" y=\"10\" width=\"%.2f\" height=\"30\" fill=\"%s\"><title>", x, w,
                      color_of(a[i].name));
        esc(b, a[i].name);
        ts_buf_printf(b, ": %s</title></rect>\n", val);
        x += w;
    }
    if (capacity > 0) {
        double cx = 10 + capacity * sx;
        char cap[32];
        rep_fmt_bytes(cap, sizeof cap, capacity);
        const char *red = color_of("capacity");
        ts_buf_printf(b, "<line id=\"%s-capacity\" x1=\"%.1f\" y1=\"4\" x2=\"%.1f\" y2=\"46\" stroke=\"%s\" "
                         "stroke-width=\"2\" stroke-dasharray=\"4 3\"/>"
                         "<text x=\"%.1f\" y=\"62\" text-anchor=\"end\" fill=\"%s\">capacity %s</text>\n",
                      id, cx, cx, red, cx, red, cap);
    }
    char tot[32];
    fmt_amount(tot, sizeof tot, total, bytes);
    ts_buf_printf(b, "<text x=\"10\" y=\"62\">total %s</text>\n</svg>\n", tot);
    ts_buf_puts(b, "<div class=\"scroll\"><table>\n<tr><th>category</th><th>amount</th><th>share</th></tr>\n");
    for (int i = 0; i < n; i++) {
        char val[32];
        fmt_amount(val, sizeof val, a[i].value, bytes);
        ts_buf_printf(b, "<tr><td><i class=\"sw\" style=\"background:%s\"></i>", color_of(a[i].name));
        esc(b, a[i].name);
        ts_buf_printf(b, "</td><td>%s</td><td>%.1f%%</td></tr>\n", val,
                      total > 0 ? 100.0 * a[i].value / total : 0.0);
    }
    ts_buf_puts(b, "</table></div>\n");
}

/* One bar per pipeline stage on the iteration's time scale: where each
 * stage's time goes, so that the stage the others wait for stands out. */
static void stage_bars(TsBuf *b, const RepPlanView *v)
{
    if (!v->stage_breakdown || v->n_stages < 2 || v->n_breakdown < 1) return;
    const int rh = 20, h = 16 + v->n_stages * rh + 24;
    double plot_w = W_SVG - LABEL_W - 20, sx = plot_w / (v->iteration_s > 0 ? v->iteration_s : 1.0);
    ts_buf_puts(b, "<section id=\"sec-stages\"><h2>Pipeline stages</h2>\n");
    ts_buf_printf(b, "<svg id=\"stages\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                     "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n<title>stages</title>\n",
                  W_SVG, h, W_SVG, h);
    for (int s = 0; s < v->n_stages; s++) {
        double y = 10 + s * rh, x = LABEL_W;
        ts_buf_printf(b, "<text class=\"stage-label\" x=\"8\" y=\"%.0f\"%s>stage %d%s</text>\n", y + 13,
                      s == v->slowest_stage ? " font-weight=\"bold\"" : "", s, s == v->slowest_stage ? " *" : "");
        for (int i = 0; i < v->n_breakdown; i++) {
            const RepAmount *a = &v->stage_breakdown[s * v->n_breakdown + i];
            if (!(a->value > 0)) continue;
            char val[32];
            rep_fmt_seconds(val, sizeof val, a->value);
            ts_buf_printf(b, "<rect x=\"%.2f\" y=\"%.0f\" width=\"%.2f\" height=\"%d\" fill=\"%s\"><title>stage %d ",
                          x, y, a->value * sx, rh - 6, color_of(a->name), s);
            esc(b, a->name);
            ts_buf_printf(b, ": %s</title></rect>\n", val);
            x += a->value * sx;
        }
    }
    ts_buf_printf(b, "<text x=\"%d\" y=\"%d\">each stage up to its own end, on the iteration's scale; colours as in "
                     "the breakdown%s</text>\n</svg>\n",
                  LABEL_W, h - 6, v->slowest_stage >= 0 ? "; * = the busiest stage" : "");
    if (v->stage_note) {
        ts_buf_puts(b, "<p id=\"stage-note\">");
        esc(b, v->stage_note);
        ts_buf_puts(b, "</p>\n");
    }
    ts_buf_puts(b, "</section>\n");
}

static void plan_body(TsBuf *b, const RepPlanView *v)
{
    metrics_html(b, v->metrics, v->n_metrics);
    lines_section(b, "warnings", "Warnings", color_of("warning"), v->warnings, v->n_warnings);
    ts_buf_puts(b, "<section id=\"sec-timeline\"><h2>Pipeline timeline</h2>\n");
    timeline_svg(b, v);
    ts_buf_puts(b, "</section>\n<section id=\"sec-breakdown\"><h2>Where the iteration time goes</h2>\n");
    stacked_bar(b, "breakdown", v->breakdown, v->n_breakdown, false, 0.0);
    ts_buf_puts(b, "</section>\n");
    stage_bars(b, v);
    ts_buf_puts(b, "<section id=\"sec-memory\"><h2>Memory per GPU</h2>\n");
    stacked_bar(b, "memory", v->memory, v->n_memory, true, v->capacity_bytes);
    ts_buf_puts(b, "</section>\n<section id=\"sec-knobs\"><h2>Plan</h2>\n");
    kv_table(b, v->knobs, v->n_knobs);
    ts_buf_puts(b, "</section>\n");
}

static TsStatus finish(TsBuf *out, TsError *err)
{
    if (out->oom) return ts_err(err, TS_ERR_INTERNAL, "out of memory writing the HTML report");
    return TS_OK;
}

TsStatus rep_html_plan(const RepPlanView *v, TsBuf *out, TsError *err)
{
    page_open(out, v->title, "plan");
    plan_body(out, v);
    page_close(out, v->generator);
    return finish(out, err);
}

/* ---- sweep scatter --------------------------------------------------------------- */
static void scatter_axes(TsBuf *b, double xmax, double ymax, double ox, double oy)
{
    const double GIB = 1073741824.0; /* memory ticks at round GiB values */
    double xs = nice_step(xmax / GIB, 10) * GIB, ys = nice_step(ymax, 8);
    for (int t = 0; t * xs <= xmax * 1.0000001; t++) {
        double x = ox + t * xs / xmax * PLOT_W;
        char lab[32];
        rep_fmt_bytes(lab, sizeof lab, t * xs);
        ts_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                         "<text class=\"xtick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                      x, oy - PLOT_H, x, oy, x, oy + 16, lab);
    }
    for (int t = 0; t * ys <= ymax * 1.0000001; t++) {
        double y = oy - t * ys / ymax * PLOT_H;
        char lab[32];
        rep_fmt_si(lab, sizeof lab, t * ys);
        ts_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/>"
                         "<text class=\"ytick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
                      ox, y, ox + PLOT_W, y, ox - 6, y + 4, lab);
    }
    ts_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">memory per GPU</text>\n"
                     "<text x=\"14\" y=\"%.1f\" transform=\"rotate(-90 14 %.1f)\" text-anchor=\"middle\">"
                     "tokens/s</text>\n",
                  ox + PLOT_W / 2.0, oy + 36, oy - PLOT_H / 2.0, oy - PLOT_H / 2.0);
}

/* The labels "#k" of the first MAX_LABELS ranked plans, placed so that none
 * covers another (rep_place_labels); plans within 2 px of each other share
 * one label ("#1,#3"); a label set away from its point gets a leader line. */
enum { MAX_LABELS = 10 };
static void plan_labels(TsBuf *b, const RepSweepView *v, double xmax, double ymax, double ox, double oy)
{
    int by_rank[MAX_LABELS];
    for (int r = 0; r < MAX_LABELS; r++) by_rank[r] = -1;
    for (int i = 0; i < v->n_points; i++)
        if (v->points[i].rank >= 0 && v->points[i].rank < MAX_LABELS) by_rank[v->points[i].rank] = i;
    RepLabel l[MAX_LABELS];
    char txt[MAX_LABELS][4 * MAX_LABELS];
    bool done[MAX_LABELS] = {false};
    int n = 0;
    for (int r = 0; r < MAX_LABELS; r++) {
        if (by_rank[r] < 0 || done[r]) continue;
        const RepSweepPoint *p = &v->points[by_rank[r]];
        double x = ox + p->memory_bytes / xmax * PLOT_W, y = oy - p->tokens_per_s / ymax * PLOT_H, w = 4;
        int len = snprintf(txt[n], sizeof txt[n], "#%d", r + 1);
        for (int q = r + 1; q < MAX_LABELS; q++) {
            if (by_rank[q] < 0) continue;
            const RepSweepPoint *o = &v->points[by_rank[q]];
            if (fabs(ox + o->memory_bytes / xmax * PLOT_W - x) > 2 || fabs(oy - o->tokens_per_s / ymax * PLOT_H - y) > 2)
                continue;
            len += snprintf(txt[n] + len, sizeof txt[n] - (size_t)len, ",#%d", q + 1);
            done[q] = true;
        }
        for (const char *c = txt[n]; *c; c++) w += *c == '#' ? 10 : *c == ',' ? 4 : 7.5; /* 12 px type */
        l[n++] = (RepLabel){.x = x, .y = y, .w = w, .h = 15};
    }
    rep_place_labels(l, n, 7.0, ox, oy - PLOT_H, ox + PLOT_W, oy);
    for (int i = 0; i < n; i++) {
        if (l[i].moved) {
            double ex = l[i].lx > l[i].x ? l[i].lx : l[i].lx + l[i].w;
            ts_buf_printf(b, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
                             "stroke-width=\"0.7\"/>\n",
                          l[i].x, l[i].y, ex, l[i].ly + l[i].h / 2, color_of("top_plan"));
        }
        ts_buf_printf(b, "<text class=\"plan-label\" x=\"%.1f\" y=\"%.1f\">%s</text>\n", l[i].lx + 2,
                      l[i].ly + 11.5, txt[i]);
    }
}

/* Every simulated plan is a grey dot; dots falling on the same pixel are drawn
 * once (a sweep may simulate millions of plans). The top-k are drawn last, in
 * colour, ranked. */
static void scatter_svg(TsBuf *b, const RepSweepView *v)
{
    double xmax = v->capacity_bytes, ymax = 0;
    for (int i = 0; i < v->n_points; i++) {
        if (v->points[i].memory_bytes > xmax) xmax = v->points[i].memory_bytes;
        if (v->points[i].tokens_per_s > ymax) ymax = v->points[i].tokens_per_s;
    }
    xmax = xmax > 0 ? xmax * 1.05 : 1.0;
    ymax = ymax > 0 ? ymax * 1.08 : 1.0;
    const double ox = 100, oy = 20 + PLOT_H;
    int w = W_SVG, h = PLOT_H + 70;
    ts_buf_printf(b, "<svg id=\"scatter\" class=\"chart\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
                     "height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\">\n"
                     "<title>throughput against memory per GPU, every simulated plan</title>\n",
                  w, h, w, h);
    scatter_axes(b, xmax, ymax, ox, oy);
    if (v->capacity_bytes > 0) {
        double cx = ox + v->capacity_bytes / xmax * PLOT_W;
        const char *red = color_of("capacity");
        ts_buf_printf(b, "<line id=\"scatter-capacity\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                         "stroke=\"%s\" stroke-dasharray=\"4 3\"/><text x=\"%.1f\" y=\"%.1f\" fill=\"%s\" "
                         "text-anchor=\"end\">capacity</text>\n",
                      cx, oy - PLOT_H, cx, oy, red, cx - 4, oy - PLOT_H + 12, red);
    }
    unsigned char *seen = calloc((size_t)(PLOT_W + 1) * (PLOT_H + 1), 1);
    ts_buf_printf(b, "<g id=\"all-plans\" fill=\"%s\" fill-opacity=\"0.55\">\n", color_of("simulated_plan"));
    for (int i = 0; i < v->n_points; i++) {
        const RepSweepPoint *p = &v->points[i];
        int px = (int)(p->memory_bytes / xmax * PLOT_W), py = (int)(p->tokens_per_s / ymax * PLOT_H);
        if (px < 0 || px > PLOT_W || py < 0 || py > PLOT_H) continue;
        size_t cell = (size_t)py * (PLOT_W + 1) + (size_t)px;
        if (seen) {
            if (seen[cell]) continue;
            seen[cell] = 1;
        }
        ts_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.2\"/>\n", ox + px, oy - py);
    }
    free(seen);
    ts_buf_puts(b, "</g>\n<g id=\"top-plans\">\n");
    for (int i = 0; i < v->n_points; i++) {
        const RepSweepPoint *p = &v->points[i];
        if (p->rank < 0) continue;
        double x = ox + p->memory_bytes / xmax * PLOT_W, y = oy - p->tokens_per_s / ymax * PLOT_H;
        char tp[32], mem[32];
        rep_fmt_si(tp, sizeof tp, p->tokens_per_s);
        rep_fmt_bytes(mem, sizeof mem, p->memory_bytes);
        ts_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%s\" fill=\"%s\" stroke=\"#fff\">"
                         "<title>#%d: %s tokens/s, %s per GPU</title></circle>\n",
                      x, y, p->rank == 0 ? "7" : "5", color_of(p->rank == 0 ? "best_plan" : "top_plan"), p->rank + 1, tp,
                      mem);
    }
    plan_labels(b, v, xmax, ymax, ox, oy);
    ts_buf_printf(b,
                  "</g>\n</svg>\n<div class=\"legend\"><span><i class=\"sw\" style=\"background:%s\"></i>"
                  "simulated plan</span><span><i class=\"sw\" style=\"background:%s\"></i>top plans</span>"
                  "<span><i class=\"sw\" style=\"background:%s\"></i>best plan</span>"
                  "<span>#k: rank k in the table of best plans</span></div>\n",
                  color_of("simulated_plan"), color_of("top_plan"), color_of("best_plan"));
}

static void top_table(TsBuf *b, const RepSweepView *v)
{
    ts_buf_puts(b, "<div class=\"scroll\"><table id=\"top-table\">\n<tr>");
    for (int c = 0; c < v->n_columns; c++) {
        ts_buf_puts(b, "<th>");
        esc(b, v->columns[c]);
        ts_buf_puts(b, "</th>");
    }
    ts_buf_puts(b, "</tr>\n");
    for (int r = 0; r < v->n_rows; r++) {
        ts_buf_puts(b, "<tr>");
        for (int c = 0; c < v->n_columns; c++) {
            ts_buf_puts(b, "<td>");
            esc(b, v->cells[(size_t)r * (size_t)v->n_columns + (size_t)c]);
            ts_buf_puts(b, "</td>");
        }
        ts_buf_puts(b, "</tr>\n");
    }
    ts_buf_puts(b, "</table></div>\n");
}

TsStatus rep_html_sweep(const RepSweepView *v, TsBuf *out, TsError *err)
{
    page_open(out, v->title, "sweep");
    metrics_html(out, v->metrics, v->n_metrics);
    ts_buf_puts(out, "<section id=\"sec-scatter\"><h2>Throughput against memory per GPU</h2>\n");
    scatter_svg(out, v);
    ts_buf_puts(out, "</section>\n<section id=\"sec-top\"><h2>Best plans</h2>\n");
    top_table(out, v);
    ts_buf_puts(out, "</section>\n");
    lines_section(out, "notes", "Notes", "#ddd", v->notes, v->n_notes);
    if (v->best) {
        ts_buf_puts(out, "<h2>The best plan in detail</h2>\n");
        plan_body(out, v->best);
    }
    page_close(out, v->generator);
    return finish(out, err);
}
