/*
 * fixture — writes two hand-made reports for the browser test, independent
 * of the simulator: <dir>/plan.html (a 4-stage 1F1B pipeline, 8 micro-batches,
 * forward 1 unit, backward 2 units, p2p 0.1 unit, two warnings, one of them a
 * long unbroken word) and <dir>/sweep.html (400 plans on a deterministic
 * pseudo-random cloud, top 10 highlighted: six of them crowded within a few
 * pixels, two on one spot, so their labels must be placed apart; a top-k
 * table of 25 columns, as wide as the widest `sweep` table; two notes).
 *   usage: fixture DIR
 */
#include <stdio.h>
#include <stdlib.h>

#include "trainsim/report_html.h"

enum { P = 4, M = 8, N_PTS = 400, TOP = 10, COLS = 25 };

/* 1F1B: on stage s, warm-up forwards, then one forward / one backward, then
 * the remaining backwards. Times come from the dependencies
 * F(s,m) after F(s-1,m) and B(s,m) after B(s+1,m). */
static double fend[P][M], bend[P][M];

static int build_timeline(RepInterval *iv)
{
    const double tf = 0.010, tb = 0.020, tc = 0.001;
    int order[P][2 * M][2], n = 0;
    for (int s = 0; s < P; s++) {
        int warm = P - s - 1 < M ? P - s - 1 : M, f = 0, b = 0, k = 0;
        for (; f < warm; f++) order[s][k][0] = 0, order[s][k++][1] = f;
        while (b < M) {
            if (f < M) order[s][k][0] = 0, order[s][k++][1] = f++;
            order[s][k][0] = 1, order[s][k++][1] = b++;
        }
    }
    /* relax until stable: each op starts after its stage's previous op and its dependency */
    for (int it = 0; it < 4 * P * M; it++) {
        for (int s = 0; s < P; s++) {
            double t = 0;
            for (int k = 0; k < 2 * M; k++) {
                int bw = order[s][k][0], m = order[s][k][1];
                double dep = bw ? (s + 1 < P ? bend[s + 1][m] + tc : fend[s][m]) : (s ? fend[s - 1][m] + tc : 0);
                double start = t > dep ? t : dep, end = start + (bw ? tb : tf);
                if (bw) bend[s][m] = end;
                else fend[s][m] = end;
                t = end;
            }
        }
    }
    for (int s = 0; s < P; s++) {
        double t = 0;
        for (int k = 0; k < 2 * M; k++) {
            int bw = order[s][k][0], m = order[s][k][1];
            double end = bw ? bend[s][m] : fend[s][m], start = end - (bw ? tb : tf);
            if (start > t + 1e-12) iv[n++] = (RepInterval){s, REP_BUBBLE, t, start, -1};
            if (start > t + tc && (bw ? s + 1 < P : s > 0))
                iv[n++] = (RepInterval){s, REP_COMM, start - tc, start, m};
            iv[n++] = (RepInterval){s, bw ? REP_BWD : REP_FWD, start, end, m};
            t = end;
        }
        iv[n++] = (RepInterval){s, REP_OPTIMIZER, t, t + 0.004, -1};
    }
    return n;
}

static int write(const char *dir, const char *name, const TsBuf *b)
{
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    TsError err = {0};
    if (b->oom || ts_write_file_atomic(path, b->data, b->len, &err) != TS_OK) {
        fprintf(stderr, "fixture: cannot write %s\n", path);
        return 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: fixture DIR\n");
        return 2;
    }
    static RepInterval iv[P * (6 * M + 1)];
    int n_iv = build_timeline(iv);
    double iter = 0;
    for (int i = 0; i < n_iv; i++)
        if (iv[i].end_s > iter) iter = iv[i].end_s;
    RepKV metrics[] = {{"iteration time", "0.31 s"}, {"tokens/s", "1.05 M"}, {"MFU", "41.2%"}, {"memory", "61.0 GiB"}};
    RepKV knobs[] = {{"tp", "8"}, {"pp", "4"}, {"dp", "32"}, {"micro-batch", "1"}, {"schedule", "1f1b"},
                     {"recompute", "selective"}, {"zero", "1 <dist-opt>"}};
    RepAmount brk[] = {{"compute", 0.24}, {"tp_comm_exposed", 0.02}, {"bubble", 0.03}, {"dp_comm_exposed", 0.01},
                       {"optimizer", 0.004}};
    RepAmount mem[] = {{"weights", 17.5e9}, {"gradients", 17.5e9}, {"optimizer", 4.4e9}, {"activations", 21.0e9},
                       {"other", 3.0e9}};
    const char *warnings[] = {"pipeline bubble is 33% of the step: more micro-batches or interleaving would help",
                              "a long word: --stage-layers=5,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,"
                              "4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,4,3,1"};
    RepPlanView pv = {.title = "fixture: 4-stage 1F1B pipeline", .generator = "trainsim browser-test fixture",
                      .metrics = metrics, .n_metrics = 4, .knobs = knobs, .n_knobs = 7,
                      .timeline = iv, .n_timeline = n_iv, .n_stages = P, .iteration_s = iter,
                      .breakdown = brk, .n_breakdown = 5, .memory = mem, .n_memory = 5,
                      .capacity_bytes = 80e9, .warnings = warnings, .n_warnings = 2};
    TsBuf b = {0};
    TsError err = {0};
    rep_html_plan(&pv, &b, &err);
    int rc = write(argv[1], "plan.html", &b);
    ts_buf_free(&b);

    static RepSweepPoint pts[N_PTS];
    unsigned seed = 12345;
    for (int i = 0; i < N_PTS; i++) {
        seed = seed * 1103515245u + 12345u;
        double u = (double)(seed >> 8 & 0xffff) / 65536.0;
        seed = seed * 1103515245u + 12345u;
        double w = (double)(seed >> 8 & 0xffff) / 65536.0;
        pts[i] = (RepSweepPoint){0.3e6 + 0.8e6 * u * (0.5 + 0.5 * w), 20e9 + 60e9 * w, -1};
    }
    for (int i = 0; i < 6; i++) /* the crowd: about 12 px apart sideways, 2 px up; 4 and 5 on one spot */
        pts[i] = (RepSweepPoint){1.2e6 - (i < 5 ? i : 4) * 6e3, 50e9 + (i < 5 ? i : 4) * 1e9, -1};
    for (int r = 0; r < TOP; r++) { /* rank by tokens/s: selection, ties by index */
        int best = -1;
        for (int i = 0; i < N_PTS; i++)
            if (pts[i].rank < 0 && pts[i].memory_bytes <= 80e9 &&
                (best < 0 || pts[i].tokens_per_s > pts[best].tokens_per_s))
                best = i;
        pts[best].rank = r;
    }
    const char *cols[COLS];
    static char head[COLS][16];
    for (int c = 0; c < COLS; c++) {
        snprintf(head[c], sizeof head[c], c ? "column_%d" : "#", c);
        cols[c] = head[c];
    }
    const char *cells[TOP * COLS];
    static char txt[TOP][COLS][32];
    for (int r = 0; r < TOP; r++)
        for (int c = 0; c < COLS; c++) {
            if (c == 0) snprintf(txt[r][c], 32, "%d", r + 1);
            else snprintf(txt[r][c], 32, "%.4f", 1.1 / (1.0 + 0.01 * r) / c);
            cells[r * COLS + c] = txt[r][c];
        }
    const char *notes[] = {"10 layers do not divide into pp*vpp chunks for these plans; layers per chunk "
                           "(--uneven-stages, or --stage-layers as shown):",
                           "#1: 1,2,2,2,2,1"};
    RepKV sm[] = {{"enumerated", "400"}, {"pruned", "0"}, {"simulated", "400"}};
    RepSweepView sv = {.title = "fixture: sweep of 400 plans", .generator = "trainsim browser-test fixture",
                       .metrics = sm, .n_metrics = 3, .points = pts, .n_points = N_PTS, .capacity_bytes = 80e9,
                       .columns = cols, .n_columns = COLS, .cells = cells, .n_rows = TOP, .best = &pv,
                       .notes = notes, .n_notes = 2};
    rep_html_sweep(&sv, &b, &err);
    rc |= write(argv[1], "sweep.html", &b);
    ts_buf_free(&b);
    return rc;
}
