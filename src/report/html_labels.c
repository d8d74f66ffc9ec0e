/*
 * html_labels.c — where the HTML report writes the labels of chart points
 * (rep_place_labels, report_html.h): beside each point, never over another
 * label or point. Pure geometry on boxes, no output.
 */
#include "trainsim/report_html.h"

enum { MAX_STEPS = 64 }; /* box heights stepped up or down before giving up */

typedef struct Box {
    double x0, y0, x1, y1;
} Box;

static bool overlap(Box a, Box b)
{
    return a.x0 < b.x1 && b.x0 < a.x1 && a.y0 < b.y1 && b.y0 < a.y1;
}

/* Candidate k of a label: 0-3 right, left, above, below its point; then
 * right and left of it, stepped up and down by one box height. */
static Box candidate(const RepLabel *l, double r, int k)
{
    const double gap = 2.0;
    double right = l->x + r + gap, left = l->x - r - gap - l->w, mid = l->y - l->h / 2;
    switch (k) {
    case 0: return (Box){right, mid, right + l->w, mid + l->h};
    case 1: return (Box){left, mid, left + l->w, mid + l->h};
    case 2: return (Box){l->x - l->w / 2, l->y - r - gap - l->h, l->x + l->w / 2, l->y - r - gap};
    case 3: return (Box){l->x - l->w / 2, l->y + r + gap, l->x + l->w / 2, l->y + r + gap + l->h};
    default: break;
    }
    int step = (k - 4) / 4 + 1, side = (k - 4) % 4; /* up right, down right, up left, down left */
    double x = side < 2 ? right : left, y = mid + (side % 2 ? 1 : -1) * step * (l->h + 1);
    return (Box){x, y, x + l->w, y + l->h};
}

static Box clamp(Box b, double x0, double y0, double x1, double y1)
{
    double dx = b.x0 < x0 ? x0 - b.x0 : b.x1 > x1 ? x1 - b.x1 : 0;
    double dy = b.y0 < y0 ? y0 - b.y0 : b.y1 > y1 ? y1 - b.y1 : 0;
    return (Box){b.x0 + dx, b.y0 + dy, b.x1 + dx, b.y1 + dy};
}

/* Whether box b of label i is clear of labels [0, i) and of every point. */
static bool free_spot(const RepLabel *l, int n, int i, double r, Box b)
{
    for (int j = 0; j < i; j++)
        if (overlap(b, (Box){l[j].lx, l[j].ly, l[j].lx + l[j].w, l[j].ly + l[j].h})) return false;
    for (int j = 0; j < n; j++)
        if (overlap(b, (Box){l[j].x - r, l[j].y - r, l[j].x + r, l[j].y + r})) return false;
    return true;
}

void rep_place_labels(RepLabel *l, int n, double r, double x0, double y0, double x1, double y1)
{
    for (int i = 0; i < n; i++) {
        Box b = {0, 0, 0, 0};
        int k = 0;
        for (; k < 4 + 4 * MAX_STEPS; k++) {
            b = clamp(candidate(&l[i], r, k), x0, y0, x1, y1);
            if (free_spot(l, n, i, r, b)) break;
        }
        l[i].lx = b.x0;
        l[i].ly = b.y0;
        l[i].moved = k >= 4;
    }
}
