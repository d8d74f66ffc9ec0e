/* Number formatting shared by the reports, following DeepSpeed's profiler
 * (deepspeed/profiling/flops_profiler/profiler.py, DEFAULT_PRECISION = 2):
 * f"{round(num / magnitude, 2):g} {unit}" with units T, G, M, K, "", m, u. */
#include "trainsim/report.h"

#include <stdlib.h>
#include <string.h>

void rep_fmt_g2(char *out, size_t cap, double x)
{
    /* Python's round(x, 2) is correctly rounded (half-even on the exact binary
     * value), as is glibc's %.2f; then :g = %g (6 significant digits). */
    char tmp[64];
    snprintf(tmp, sizeof tmp, "%.2f", x);
    double r = strtod(tmp, NULL);
    if (r == 0) r = 0; /* no "-0" */
    snprintf(out, cap, "%g", r);
}

void rep_fmt_number(char *out, size_t cap, double num)
{
    double mag = 1;
    const char *u = "";
    if (num >= 1e12) mag = 1e12, u = "T";
    else if (num >= 1e9) mag = 1e9, u = "G";
    else if (num >= 1e6) mag = 1e6, u = "M";
    else if (num >= 1e3) mag = 1e3, u = "K";
    else if (num >= 1 || num == 0) mag = 1, u = "";
    else if (num >= 1e-3) mag = 1e-3, u = "m";
    else mag = 1e-6, u = "u";
    char g[48];
    rep_fmt_g2(g, sizeof g, num / mag);
    snprintf(out, cap, "%s %s", g, u);
}

void rep_fmt_macs(char *out, size_t cap, double macs)
{
    char n[64];
    rep_fmt_number(n, sizeof n, macs);
    snprintf(out, cap, "%sMACs", n);
}

void rep_fmt_flops(char *out, size_t cap, double flops)
{
    char n[64];
    rep_fmt_number(n, sizeof n, flops);
    snprintf(out, cap, "%sFLOPS", n);
}

void rep_fmt_duration(char *out, size_t cap, double s)
{
    char n[64];
    rep_fmt_number(n, sizeof n, s);
    snprintf(out, cap, "%ss", n);
}

void rep_fmt_params(char *out, size_t cap, double p)
{
    /* number_to_string(...).replace("G", "B").strip() */
    char n[64];
    rep_fmt_number(n, sizeof n, p);
    size_t len = strlen(n);
    while (len && n[len - 1] == ' ') n[--len] = '\0';
    for (char *q = n; *q; q++)
        if (*q == 'G') *q = 'B';
    snprintf(out, cap, "%s", n);
}
