/* The pipeline bubble told apart, and the stage the others wait for
 * (sim.h): what the warnings, the summary, the JSON and the HTML report of
 * a simulated plan all say about uneven stages. */
#include "trainsim/sim.h"

/* What each breakdown category is, for readers (SIM_BREAKDOWN_LIST order). */
static const char *const BD_WHAT[] = {
    "forward and backward kernels",
    "forward passes recomputed in the backward",
    "the TP collectives not hidden under GEMMs",
    "the CP K/V exchange",
    "the EP all-to-all",
    "pipeline sends and receives",
    "the DP gradient reduction and parameter gather",
    "idle: pipeline fill and drain, waiting for other stages",
    "the optimizer step",
    "compute slowed by overlapped communication",
};
_Static_assert(sizeof BD_WHAT / sizeof BD_WHAT[0] == SIM_BD_COUNT, "one description per breakdown category");

const char *sim_breakdown_what(int i) { return i >= 0 && i < SIM_BD_COUNT ? BD_WHAT[i] : "?"; }

bool sim_breakdown_busy(int i) { return i >= 0 && i < SIM_BD_COUNT && i != SIM_BD_bubble_s && i != SIM_BD_optimizer_s; }

double sim_fill_drain_fraction(const ParallelPlan *p)
{
    if (p->pp <= 1) return 0;
    return (double)(p->pp - 1) / (double)(p->vpp * p->grad_accum + p->pp - 1);
}

void sim_bubble_split(const ParallelPlan *p, double bubble_s, double pipe_s, double *fill_drain_s, double *waiting_s)
{
    double fill = sim_fill_drain_fraction(p) * pipe_s;
    if (fill > bubble_s) fill = bubble_s;
    if (fill < 0) fill = 0;
    *fill_drain_s = fill;
    *waiting_s = bubble_s - fill;
}

bool sim_slowest(const SimResult *r, SimSlowest *out)
{
    *out = (SimSlowest){.stage = -1, .dominant = -1};
    if (!r->stages || r->n_stages < 2 || r->slowest_stage == r->critical_stage) return false;
    const SimStageResult *sl = &r->stages[r->slowest_stage], *cr = &r->stages[r->critical_stage];
    if (!(sl->busy_s > SIM_SLOWEST_MARGIN * cr->busy_s)) return false;
    out->stage = r->slowest_stage;
    out->busy_s = sl->busy_s;
    out->critical_busy_s = cr->busy_s;
    for (int i = 0; i < SIM_BD_COUNT; i++) {
        double v = sim_breakdown_get(&sl->breakdown, i);
        if (sim_breakdown_busy(i) && v > out->dominant_s) out->dominant = i, out->dominant_s = v;
    }
    return true;
}

bool sim_critical_bubble(const SimSetup *in, const SimResult *r, double *fill_drain_s, double *waiting_s)
{
    *fill_drain_s = *waiting_s = 0;
    if (!r->stages || r->critical_stage < 0 || r->critical_stage >= r->n_stages) return false;
    const SimStageResult *cr = &r->stages[r->critical_stage];
    double bubble = sim_breakdown_get(&cr->breakdown, SIM_BD_bubble_s);
    if (r->sched_f_s > 0) { /* zb-h1, dualpipe(v): their own fill and drain, the published bubble */
        *fill_drain_s = r->sched_formula_bubble_s < bubble ? r->sched_formula_bubble_s : bubble;
        *waiting_s = bubble - *fill_drain_s;
        return true;
    }
    sim_bubble_split(&in->plan, bubble, cr->pipe_end_s, fill_drain_s, waiting_s);
    return true;
}
