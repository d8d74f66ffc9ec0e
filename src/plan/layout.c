/* layout.c — Megatron rank layout and process groups.
 *
 * Dense layout "tp-cp-dp-pp" (tp innermost), as Megatron-Core's
 * RankGenerator(order="tp-cp-ep-dp-pp") with ep = 1 for dense layers:
 *     rank = tp_i + TP*(cp_i + CP*(dp_i + DP*pp_i))
 * Expert layout (Megatron-Core expert RankGenerator, order "tp-ep-dp-pp"
 * with tp = ETP): the TP*CP*DP ranks of one pipeline stage are regrouped
 *     local = rank mod (TP*CP*DP) = etp_i + ETP*(ep_i + EP*edp_i).
 * Every group is an arithmetic progression base + i*stride, i < size. */
#include "trainsim/plan.h"

void plan_rank_coord(const ParallelPlan *p, int64_t rank, PlanCoord *c)
{
    int64_t stage = p->tp * p->cp * p->dp;
    c->tp = rank % p->tp;
    c->cp = (rank / p->tp) % p->cp;
    c->dp = (rank / (p->tp * p->cp)) % p->dp;
    c->pp = rank / stage;
    int64_t local = rank % stage;
    int64_t etp = p->etp > 0 ? p->etp : p->tp;
    c->etp = local % etp;
    c->ep = (local / etp) % p->ep;
    c->edp = local / (etp * p->ep);
}

int64_t plan_rank_of(const ParallelPlan *p, int64_t tp, int64_t cp, int64_t dp, int64_t pp)
{
    return tp + p->tp * (cp + p->cp * (dp + p->dp * pp));
}

/* size, stride and base of the group of `kind` holding `rank`. */
static void group_shape(const ParallelPlan *p, PlanGroup kind, int64_t rank, int64_t *size,
                        int64_t *stride, int64_t *base)
{
    PlanCoord c;
    plan_rank_coord(p, rank, &c);
    int64_t stage = p->tp * p->cp * p->dp;
    int64_t etp = p->etp > 0 ? p->etp : p->tp;
    switch (kind) {
    case PLAN_GROUP_TP: *size = p->tp; *stride = 1; *base = rank - c.tp; break;
    case PLAN_GROUP_CP: *size = p->cp; *stride = p->tp; *base = rank - c.cp * p->tp; break;
    case PLAN_GROUP_DP:
        *size = p->dp; *stride = p->tp * p->cp; *base = rank - c.dp * p->tp * p->cp; break;
    case PLAN_GROUP_PP: *size = p->pp; *stride = stage; *base = rank - c.pp * stage; break;
    case PLAN_GROUP_DPCP:
        *size = p->cp * p->dp; *stride = p->tp;
        *base = rank - (c.cp + p->cp * c.dp) * p->tp; break;
    case PLAN_GROUP_ETP: *size = etp; *stride = 1; *base = rank - c.etp; break;
    case PLAN_GROUP_EP: *size = p->ep; *stride = etp; *base = rank - c.ep * etp; break;
    case PLAN_GROUP_EDP: {
        int64_t edp = stage / (etp * p->ep);
        *size = edp; *stride = etp * p->ep; *base = rank - c.edp * etp * p->ep; break;
    }
    case PLAN_GROUP_SHARD: { /* dp_shard consecutive DP ranks x CP; DP x CP without HSDP */
        int64_t sd = p->dp_shard > 0 ? p->dp_shard : p->dp;
        *size = p->cp * sd; *stride = p->tp;
        *base = rank - (c.cp + p->cp * (c.dp % sd)) * p->tp; break;
    }
    case PLAN_GROUP_REPLICATE: { /* the same position in each shard group */
        int64_t sd = p->dp_shard > 0 ? p->dp_shard : p->dp;
        *size = p->dp / sd; *stride = p->tp * p->cp * sd;
        *base = rank - (c.dp / sd) * p->tp * p->cp * sd; break;
    }
    case PLAN_GROUP_EMBED:
    default:
        *base = rank - c.pp * stage;
        if (p->pp > 1) { *size = 2; *stride = (p->pp - 1) * stage; }
        else { *size = 1; *stride = 1; }
        break;
    }
}

void plan_group(const ParallelPlan *p, PlanGroup kind, int64_t rank, int64_t gpn,
                PlanGroupInfo *out)
{
    int64_t size, stride, base;
    group_shape(p, kind, rank, &size, &stride, &base);
    out->size = size;
    out->stride = stride;
    out->base = base;
    out->index = stride > 0 ? (rank - base) / stride : 0;
    if (kind == PLAN_GROUP_EMBED && rank != base && size == 2) out->index = 1;
    if (gpn <= 0 || size == 1) { out->nodes = 1; out->per_node = size; return; }
    int64_t first = base / gpn, last = (base + (size - 1) * stride) / gpn;
    if (first == last) { out->nodes = 1; out->per_node = size; return; }
    if (stride >= gpn) { out->nodes = size; out->per_node = 1; return; }
    if (gpn % stride == 0) {
        out->nodes = last - first + 1;
        int64_t c_first = (gpn - base % gpn + stride - 1) / stride;
        if (c_first > size) c_first = size;
        out->per_node = out->nodes == 2 ? (c_first > size - c_first ? c_first : size - c_first)
                                        : gpn / stride;
        return;
    }
    /* Irregular: walk the members once. */
    int64_t nodes = 0, best = 0, run = 0, cur = -1;
    for (int64_t i = 0; i < size; i++) {
        int64_t n = (base + i * stride) / gpn;
        if (n != cur) { nodes++; cur = n; run = 0; }
        if (++run > best) best = run;
    }
    out->nodes = nodes;
    out->per_node = best;
}

int64_t plan_group_members(const ParallelPlan *p, PlanGroup kind, int64_t rank, int64_t *out,
                           int64_t cap)
{
    int64_t size, stride, base;
    group_shape(p, kind, rank, &size, &stride, &base);
    for (int64_t i = 0; i < size && i < cap; i++) out[i] = base + i * stride;
    return size;
}

PlanGroup plan_fsdp_group(const ParallelPlan *p)
{
    return p->dp_shard > 0 && p->zero >= 3 ? PLAN_GROUP_SHARD : PLAN_GROUP_DPCP;
}

int64_t plan_dp_replicas(const ParallelPlan *p)
{
    return p->dp_shard > 0 && p->zero >= 3 ? p->dp / p->dp_shard : 1;
}
