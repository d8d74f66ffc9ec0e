/*
 * sweep.c — what `trainsim sweep` writes (report_sweep.h): the ranked table,
 * the JSON of every simulated plan, the CSV, and the HTML report's sweep
 * view (every plan, the top-k table, the best plan in detail).
 */
#include <stdlib.h>
#include <string.h>

#include "trainsim/report.h"
#include "trainsim/report_html.h"
#include "trainsim/report_sweep.h"

static const char *onoff(int b) { return b ? "on" : "off"; }

/* Layers per pipeline chunk of a swept plan whose pp*vpp does not divide the
 * model's layers (the sweep applies the uneven rule, plan.h), into `out`
 * separated by `sep`; false (and nothing written) for an even split. */
static bool uneven_split(const SearchPoint *p, int64_t layers, const char *sep, TsBuf *out)
{
    const SearchKnobs *k = &p->k;
    for (int32_t i = 0; i < p->n_stage_layers; i++) ts_buf_printf(out, "%s%d", i ? sep : "", p->stage_layers[i]);
    if (p->n_stage_layers > 0) return true;
    ParallelPlan q = {.pp = k->pp, .vpp = k->vpp, .uneven = true};
    return plan_split_format(&q, layers, sep, out);
}

static void knobs_json(TsBuf *b, const SearchPoint *p, int64_t layers)
{
    const SearchKnobs *k = &p->k;
    ts_buf_printf(b, "{\"index\":%lld,\"gpus\":%d,\"tp\":%d,\"pp\":%d,\"vpp\":%d,\"cp\":%d,\"ep\":%d,\"dp\":%d,"
                     "\"micro_batch\":%d,\"sp\":%s,\"recompute\":\"%s\",\"zero\":%d,\"schedule\":\"%s\","
                     "\"tp_overlap\":%s,\"cp_comm\":\"%s\",\"iteration_time_s\":",
                  (long long)p->index, k->gpus, k->tp, k->pp, k->vpp, k->cp, k->ep, k->dp, k->mbs,
                  k->sp ? "true" : "false", plan_recompute_name((PlanRecompute)k->recompute), k->zero,
                  plan_sched_name((PlanSchedule)k->schedule), k->tp_overlap ? "true" : "false",
                  sim_cp_comm_name((SimCpComm)k->cp_comm));
    ts_json_fmt_double(b, p->iteration_s);
    if (k->dp_shard > 0) ts_buf_printf(b, ",\"dp_shard\":%d", k->dp_shard);
    if (k->rc_layers > 0) ts_buf_printf(b, ",\"recompute_layers\":%d", k->rc_layers);
    if (p->vpp_group > 0) ts_buf_printf(b, ",\"vpp_group\":%d", p->vpp_group);
    TsBuf split = {0};
    if (uneven_split(p, layers, ",", &split)) ts_buf_printf(b, ",\"stage_layers\":[%s]", split.data);
    ts_buf_free(&split);
    if (p->train_wall_s > 0) {
        ts_buf_puts(b, ",\"train\":{\"wall_s\":");
        ts_json_fmt_double(b, p->train_wall_s);
        ts_buf_puts(b, ",\"gpu_hours\":");
        ts_json_fmt_double(b, p->train_gpu_hours);
        ts_buf_puts(b, ",\"cost\":");
        ts_json_fmt_double(b, p->train_cost);
        ts_buf_puts(b, "}");
    }
    ts_buf_puts(b, ",\"tokens_per_s\":");
    ts_json_fmt_double(b, p->tokens_per_s);
    ts_buf_puts(b, ",\"mfu\":");
    ts_json_fmt_double(b, p->mfu);
    ts_buf_puts(b, ",\"memory_bytes\":");
    ts_json_fmt_double(b, p->memory_bytes);
    ts_buf_puts(b, ",\"exposed_s\":{");
    for (int e = 0; e < SEARCH_EXPOSED_COUNT; e++) {
        ts_buf_printf(b, "%s\"%s\":", e ? "," : "", search_exposed_name((SearchExposed)e));
        ts_json_fmt_double(b, p->exposed_s[e]);
    }
    ts_buf_puts(b, "}}");
}

void rep_sweep_json(const RepSweep *o, const SearchConfig *c, const SearchResult *r, TsBuf *b)
{
    const ModelSpec *m = o->model;
    const GpuSpec *hw = o->gpu;
    ts_buf_puts(b, "{\"format\":\"trainsim-sweep\",\"version\":1,\"generator\":\"trainsim " TRAINSIM_VERSION "\",");
    ts_buf_puts(b, "\"model\":");
    ts_json_escape(b, m->name);
    ts_buf_puts(b, ",\"cluster\":");
    ts_json_escape(b, o->cluster);
    ts_buf_puts(b, ",\"gpu\":");
    ts_json_escape(b, hw->name);
    ts_buf_printf(b, ",\"seq\":%lld,\"global_batch\":%lld,\"dtype\":\"%s\",\"objective\":\"%s\",\"capacity_bytes\":",
                  (long long)o->seq, (long long)o->global_batch, ts_dtype_name(o->dtype), search_objective_name(c->objective));
    ts_json_fmt_double(b, hw->hbm_bytes);
    ts_buf_puts(b, ",\"min_headroom_bytes\":");
    ts_json_fmt_double(b, o->headroom_bytes);
    const SearchStats *s = &r->stats;
    ts_buf_printf(b, ",\"stats\":{\"candidates\":%lld,\"enumerated\":%lld,\"pruned\":%lld,\"bounded\":%lld,"
                     "\"simulated\":%lld,\"elapsed_s\":",
                  (long long)s->candidates, (long long)s->enumerated, (long long)s->pruned, (long long)s->bounded,
                  (long long)s->simulated);
    ts_json_fmt_double(b, s->elapsed_s);
    ts_buf_puts(b, ",\"plans_per_s\":");
    ts_json_fmt_double(b, s->plans_per_s);
    ts_buf_printf(b, ",\"threads\":%d,\"ranks\":%d},\n\"top\":[", s->threads, s->ranks);
    for (int i = 0; i < r->n_top; i++) {
        ts_buf_puts(b, i ? ",\n" : "\n");
        knobs_json(b, &r->top[i], m->layers);
    }
    ts_buf_puts(b, "],\n\"plans\":[");
    for (int64_t i = 0; i < r->n_all; i++) {
        ts_buf_puts(b, i ? ",\n" : "\n");
        knobs_json(b, &r->all[i], m->layers);
    }
    ts_buf_puts(b, "]}\n");
}

void rep_sweep_csv(const SearchResult *r, TsBuf *b)
{
    ts_buf_puts(b, "# trainsim " TRAINSIM_VERSION " sweep, every simulated plan (trainsim-sweep-csv v4)\n"
                   "index,gpus,tp,pp,vpp,cp,ep,dp,micro_batch,sp,recompute,recompute_layers,zero,schedule,tp_overlap,"
                   "cp_comm,vpp_group,iteration_time_s,tokens_per_s,mfu,memory_bytes");
    for (int e = 0; e < SEARCH_EXPOSED_COUNT; e++) ts_buf_printf(b, ",%s_s", search_exposed_name((SearchExposed)e));
    ts_buf_puts(b, "\n");
    for (int64_t i = 0; i < r->n_all; i++) {
        const SearchPoint *p = &r->all[i];
        const SearchKnobs *k = &p->k;
        ts_buf_printf(b, "%lld,%d,%d,%d,%d,%d,%d,%d,%d,%d,%s,%d,%d,%s,%d,%s,%d,%.9g,%.9g,%.6f,%.0f", (long long)p->index,
                      k->gpus, k->tp, k->pp, k->vpp, k->cp, k->ep, k->dp, k->mbs, k->sp,
                      plan_recompute_name((PlanRecompute)k->recompute), k->rc_layers, k->zero,
                      plan_sched_name((PlanSchedule)k->schedule), k->tp_overlap,
                      sim_cp_comm_name((SimCpComm)k->cp_comm), p->vpp_group, p->iteration_s, p->tokens_per_s, p->mfu,
                      p->memory_bytes);
        for (int e = 0; e < SEARCH_EXPOSED_COUNT; e++) ts_buf_printf(b, ",%.6g", p->exposed_s[e]);
        ts_buf_puts(b, "\n");
    }
}

#define N_COLS 28
#define COL_EP_EXP 18 /* shown for MoE models only */
#define COL_CPX 21    /* shown when more than one CP exchange is searched, after cp */
#define COL_CP_EXP 22 /* shown when a ranked plan has cp > 1, after tp_exp_s */
#define COL_GPUS 23   /* shown when more than one GPU count is searched, after # */
#define COL_COST 24   /* GPU-hours per million tokens, likewise, after tokens/s */
#define COL_DAYS 25   /* --train-tokens: the run's wall-clock days, GPU-hours and cost, after tokens/s */
#define COL_GPUH 26
#define COL_TCOST 27
static const char *const COLS[N_COLS] = {"#",        "tp",       "pp",       "vpp",      "cp",      "ep",
                                         "dp",       "mbs",      "sp",       "recompute", "zero",   "schedule",
                                         "tp-ovl",   "iter_s",   "tokens/s", "MFU",      "mem_GiB", "tp_exp_s",
                                         "ep_exp_s", "dp_exp_s", "bubble_s", "cp-x",
                                         "cp_exp_s", "gpus",     "gpu_h/Mtok", "days",   "GPU-h",   "cost"};

/* The columns of the table for model m (indices into COLS): ep_exp_s only
 * when it has experts, cp-x (right after cp) only when the search tried more
 * than one CP exchange, cp_exp_s (after tp_exp_s) only when a ranked plan
 * has cp > 1, gpus (after #) and the cost in GPU-hours per million tokens
 * (after tokens/s) only when it tried more than one GPU count; with
 * --train-tokens the run's days, GPU-hours and (with a price) cost instead of
 * that cost. Returns the count. */
static int table_cols(const ModelSpec *m, const SearchConfig *c, const SearchResult *r, int *cols)
{
    int n = 0;
    bool cpx = (c->cp_comm_mask & (c->cp_comm_mask - 1)) != 0, cpe = false, many = c->gpus.n > 1;
    bool run = false, price = false;
    for (int t = 0; t < r->n_top; t++) {
        cpe |= r->top[t].k.cp > 1;
        run |= r->top[t].train_wall_s > 0;
        price |= r->top[t].train_cost > 0;
    }
    for (int i = 0; i < COL_CPX; i++) {
        if (i != COL_EP_EXP || m->experts > 0) cols[n++] = i;
        if (i == 0 && many) cols[n++] = COL_GPUS;
        if (i == 4 && cpx) cols[n++] = COL_CPX;
        if (i == 14 && many && !run) cols[n++] = COL_COST;
        if (i == 14 && run) cols[n++] = COL_DAYS, cols[n++] = COL_GPUH;
        if (i == 14 && price) cols[n++] = COL_TCOST;
        if (i == 17 && cpe) cols[n++] = COL_CP_EXP;
    }
    return n;
}

/* The cells of one ranked row (shared by the text table and the HTML table). */
static void row_cells(const SearchPoint *p, int rank, char cells[N_COLS][24])
{
    const SearchKnobs *k = &p->k;
    snprintf(cells[0], 24, "%d%s", rank + 1, p->vpp_group_flag ? "*" : ""); /* *: its micro-batch group, noted */
    snprintf(cells[1], 24, "%d", k->tp);
    snprintf(cells[2], 24, "%d", k->pp);
    snprintf(cells[3], 24, "%d", k->vpp);
    snprintf(cells[4], 24, "%d", k->cp);
    snprintf(cells[5], 24, "%d", k->ep);
    snprintf(cells[6], 24, "%d", k->dp);
    snprintf(cells[7], 24, "%d", k->mbs);
    snprintf(cells[8], 24, "%s", onoff(k->sp));
    if (k->rc_layers > 0) snprintf(cells[9], 24, "full:%d", k->rc_layers); /* the fewest layers that fit */
    else snprintf(cells[9], 24, "%s", plan_recompute_name((PlanRecompute)k->recompute));
    if (k->dp_shard > 0) snprintf(cells[10], 24, "%d/s%d", k->zero, k->dp_shard); /* HSDP: shard degree */
    else snprintf(cells[10], 24, "%d", k->zero);
    snprintf(cells[11], 24, "%s", plan_sched_name((PlanSchedule)k->schedule));
    snprintf(cells[12], 24, "%s", onoff(k->tp_overlap));
    snprintf(cells[13], 24, "%.4f", p->iteration_s);
    snprintf(cells[14], 24, "%.0f", p->tokens_per_s);
    snprintf(cells[15], 24, "%.1f%%", 100.0 * p->mfu);
    snprintf(cells[16], 24, "%.1f", p->memory_bytes / 1073741824.0);
    snprintf(cells[17], 24, "%.4f", p->exposed_s[SEARCH_EXPOSED_TP]);
    snprintf(cells[COL_EP_EXP], 24, "%.4f", p->exposed_s[SEARCH_EXPOSED_EP]);
    snprintf(cells[19], 24, "%.4f", p->exposed_s[SEARCH_EXPOSED_DP]);
    snprintf(cells[20], 24, "%.4f", p->exposed_s[SEARCH_EXPOSED_BUBBLE]);
    snprintf(cells[COL_CPX], 24, "%s", sim_cp_comm_name((SimCpComm)k->cp_comm));
    snprintf(cells[COL_CP_EXP], 24, "%.4f", p->exposed_s[SEARCH_EXPOSED_CP]);
    snprintf(cells[COL_GPUS], 24, "%d", k->gpus);
    snprintf(cells[COL_COST], 24, "%.4g", p->tokens_per_s > 0 ? (double)k->gpus / p->tokens_per_s * 1e6 / 3600.0 : 0);
    snprintf(cells[COL_DAYS], 24, "%.1f", p->train_wall_s / 86400.0);
    snprintf(cells[COL_GPUH], 24, "%.4g", p->train_gpu_hours);
    snprintf(cells[COL_TCOST], 24, "%.4g", p->train_cost);
}

/* The notes under the ranked table, one a line into out (each ending in a
 * newline; nothing when there are none): for plans whose layers per chunk
 * differ (uneven, or balanced by the work), a heading and "#k: 1,2,2,1".
 * Returns whether there are any. */
static bool sweep_notes(const ModelSpec *m, const SearchResult *r, TsBuf *out)
{
    bool head = false, bal = false;
    for (int r_ = 0; r_ < r->n_top; r_++) bal |= r->top[r_].n_stage_layers > 0;
    for (int r_ = 0; r_ < r->n_top; r_++) {
        TsBuf split = {0};
        if (uneven_split(&r->top[r_], m->layers, ",", &split)) {
            if (!head && !bal)
                ts_buf_printf(out, "%lld layers do not divide into pp*vpp chunks for these plans; "
                                   "layers per chunk (--uneven-stages, or --stage-layers as shown):\n",
                              (long long)m->layers);
            else if (!head)
                ts_buf_printf(out, "layers per chunk where they differ (the even split of the work under "
                                   "--balance-stages, else the uneven rule; --stage-layers as shown):\n");
            head = true;
            ts_buf_printf(out, "#%d: %s\n", r_ + 1, split.data);
        }
        ts_buf_free(&split);
    }
    /* the micro-batch groups of the plans that need one (an interleaved* cell) */
    bool grp = false;
    for (int r_ = 0; r_ < r->n_top; r_++) {
        if (!r->top[r_].vpp_group_flag) continue;
        if (!grp)
            ts_buf_puts(out, "*: micro-batches that pp does not divide, run in Megatron-Core's interleaved groups "
                             "(--vpp-group N, --microbatch-group-size-per-virtual-pipeline-stage):\n");
        grp = true;
        ts_buf_printf(out, "#%d: --vpp-group %d\n", r_ + 1, r->top[r_].vpp_group);
    }
    return head || grp;
}

void rep_sweep_text(const RepSweep *o, const SearchConfig *c, const SearchResult *r, TsBuf *b)
{
    const ModelSpec *m = o->model;
    const GpuSpec *hw = o->gpu;
    const SearchStats *s = &r->stats;
    char cap[96], full[32], room[32];
    rep_fmt_bytes(cap, sizeof cap, hw->hbm_bytes - o->headroom_bytes);
    if (o->headroom_bytes > 0) {
        rep_fmt_bytes(full, sizeof full, hw->hbm_bytes);
        rep_fmt_bytes(room, sizeof room, o->headroom_bytes);
        size_t k = strlen(cap);
        snprintf(cap + k, sizeof cap - k, ": %s less %s of --headroom", full, room);
    }
    ts_buf_printf(b, "sweep: %s on %s x %s (%s)%s, seq %lld, global batch %lld, %s, ranked by %s\n", m->name,
                  o->gpus, hw->name, o->cluster, hw_software_suffix(hw),
                  (long long)o->seq, (long long)o->global_batch, ts_dtype_name(o->dtype),
                  search_objective_name(c->objective));
    ts_buf_printf(b, "plans: %lld candidates, %lld valid (enumerated), %lld pruned (do not fit in %s), "
                     "%lld bounded (cannot reach the top %d), %lld simulated\n\n",
                  (long long)s->candidates, (long long)s->enumerated, (long long)s->pruned, cap,
                  (long long)s->bounded, c->top_k, (long long)s->simulated);
    static const int W0[N_COLS] = {3, 3, 3, 3, 3, 3, 5, 3, 3, 9, 4, 11, 6, 9, 11, 6, 7, 8, 8, 8, 8, 9, 8, 6, 10, 6, 9, 9};
    int W[N_COLS];
    memcpy(W, W0, sizeof W);
    /* the rank, and its star where the plan runs in a noted micro-batch group */
    int star = 0;
    for (int t = 0; t < r->n_top; t++) star |= r->top[t].vpp_group_flag;
    int digits = 1;
    for (int n = r->n_top; n >= 10; n /= 10) digits++;
    if (digits + star > W[0]) W[0] = digits + star;
    int cols[N_COLS], nc = table_cols(m, c, r, cols);
    for (int j = 0; j < nc; j++) ts_buf_printf(b, "%s%*s", j ? " " : "", W[cols[j]], COLS[cols[j]]);
    ts_buf_puts(b, "\n");
    for (int r_ = 0; r_ < r->n_top; r_++) {
        char cells[N_COLS][24];
        row_cells(&r->top[r_], r_, cells);
        for (int j = 0; j < nc; j++) ts_buf_printf(b, "%s%*s", j ? " " : "", W[cols[j]], cells[cols[j]]);
        ts_buf_puts(b, "\n");
    }
    /* the notes under the table, their rows ("#1: ...") indented under their heading */
    TsBuf notes = {0};
    if (sweep_notes(m, r, &notes)) {
        ts_buf_puts(b, "\n");
        for (char *save = NULL, *line = strtok_r(notes.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
            ts_buf_printf(b, "%s%s\n", line[0] == '#' ? "  " : "", line);
    }
    ts_buf_free(&notes);
}

TsStatus rep_sweep_html(const RepSweep *o, const SearchConfig *c, const SearchResult *r, const SimSetup *best_in,
                        const SimResult *best_r, TsBuf *out, TsError *err)
{
    const ModelSpec *m = o->model;
    TsArena *a = ts_arena_create(1 << 16);
    RepSweepPoint *pts = malloc((size_t)(r->n_all + 1) * sizeof *pts);
    const char **cells = malloc((size_t)(r->n_top + 1) * N_COLS * sizeof *cells);
    if (!a || !pts || !cells) {
        ts_arena_destroy(a);
        free(pts);
        free(cells);
        return ts_err(err, TS_ERR_INTERNAL, "out of memory writing the HTML report");
    }
    for (int64_t i = 0; i < r->n_all; i++) {
        pts[i] = (RepSweepPoint){r->all[i].tokens_per_s, r->all[i].memory_bytes, -1};
        for (int t = 0; t < r->n_top; t++)
            if (r->top[t].index == r->all[i].index) pts[i].rank = t;
    }
    int cols[N_COLS], nc = table_cols(m, c, r, cols);
    const char *heads[N_COLS];
    for (int j = 0; j < nc; j++) heads[j] = COLS[cols[j]];
    for (int t = 0; t < r->n_top; t++) {
        char row[N_COLS][24];
        row_cells(&r->top[t], t, row);
        for (int j = 0; j < nc; j++) cells[t * nc + j] = ts_arena_strdup(a, row[cols[j]]);
    }
    RepPlanView best_view;
    const RepPlanView *best = NULL;
    if (r->n_top > 0 && best_in && best_r) {
        TsError verr = {0}; /* without the view the report leaves the best plan's details out */
        const char *title = ts_arena_printf(a, "best plan: %s on %d x %s", m->name, r->top[0].k.gpus, o->gpu->name);
        if (rep_plan_view_from_sim(best_in, best_r, title, a, &best_view, &verr) == TS_OK) best = &best_view;
    }
    char st[4][32];
    snprintf(st[0], 32, "%lld", (long long)r->stats.candidates);
    snprintf(st[1], 32, "%lld", (long long)r->stats.enumerated);
    snprintf(st[2], 32, "%lld", (long long)r->stats.pruned);
    snprintf(st[3], 32, "%lld", (long long)r->stats.simulated);
    RepKV metrics[] = {{"candidates", st[0]}, {"valid plans", st[1]}, {"pruned (memory)", st[2]},
                       {"simulated", st[3]}, {"ranked by", search_objective_name(c->objective)}, {NULL, NULL}};
    int n_metrics = 5;
    if (o->headroom_bytes > 0) { /* what the pruning kept free */
        char lim[32], room[32];
        rep_fmt_bytes(lim, sizeof lim, o->gpu->hbm_bytes - o->headroom_bytes);
        rep_fmt_bytes(room, sizeof room, o->headroom_bytes);
        metrics[n_metrics++] = (RepKV){"memory per GPU at most", ts_arena_printf(a, "%s (%s kept free)", lim, room)};
    }
    /* two headings, a line a plan under each */
    const char **notes = ts_arena_alloc(a, (size_t)(2 * r->n_top + 2) * sizeof *notes);
    int n_notes = 0;
    TsBuf nb = {0};
    if (notes && sweep_notes(m, r, &nb))
        for (char *save = NULL, *line = strtok_r(nb.data, "\n", &save); line && n_notes < 2 * r->n_top + 2;
             line = strtok_r(NULL, "\n", &save))
            notes[n_notes++] = line;
    RepSweepView v = {.title = ts_arena_printf(a, "sweep: %s on %s x %s, seq %lld, global batch %lld, %s", m->name,
                                               o->gpus, o->gpu->name, (long long)o->seq, (long long)o->global_batch,
                                               ts_dtype_name(o->dtype)),
                      .generator = "trainsim " TRAINSIM_VERSION " sweep", .metrics = metrics, .n_metrics = n_metrics,
                      .points = pts, .n_points = (int)r->n_all, .capacity_bytes = o->gpu->hbm_bytes,
                      .columns = heads, .n_columns = nc, .cells = cells, .n_rows = r->n_top, .best = best,
                      .notes = notes, .n_notes = n_notes};
    TsStatus rc = rep_html_sweep(&v, out, err);
    ts_buf_free(&nb);
    ts_arena_destroy(a);
    free(pts);
    free(cells);
    return rc;
}
