/* accuracy_text.c — what a row of a runs file says in its free text (its
 * source and notes cells): the knobs a published run states in words
 * (accuracy_text.h). Written by hand: a few fixed phrases, no grammar a
 * library would bring. */
#include "accuracy_text.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

/* Does s start with pre (ASCII, any case)? */
bool acc_starts_ci(const char *s, const char *pre)
{
    while (*pre && tolower((unsigned char)*s) == tolower((unsigned char)*pre)) s++, pre++;
    return !*pre;
}

/* The first place `what` (ASCII, any case) occurs in s, or NULL. */
static const char *find_ci(const char *s, const char *what)
{
    for (; *s; s++)
        if (acc_starts_ci(s, what)) return s;
    return NULL;
}

bool acc_says(const char *const text[2], const char *what)
{
    return find_ci(text[0], what) || find_ci(text[1], what);
}

/* Is the text at s (of length n, inside t) negated: "no ", "not ",
 * "without ", "w/o " just before it, or " off", " disabled", "=false",
 * ": false", " false", "=none", "=0" just after? */
static bool negated(const char *t, const char *s, size_t n)
{
    static const char *const BEFORE[] = {"no ", "not ", "without ", "w/o ", "non-"};
    static const char *const AFTER[] = {" off", " disabled", "=false", ": false", " false", "=none", "=0"};
    for (size_t i = 0; i < sizeof BEFORE / sizeof BEFORE[0]; i++) {
        size_t k = strlen(BEFORE[i]);
        if ((size_t)(s - t) >= k && acc_starts_ci(s - k, BEFORE[i])) return true;
    }
    for (size_t i = 0; i < sizeof AFTER / sizeof AFTER[0]; i++)
        if (acc_starts_ci(s + n, AFTER[i])) return true;
    return false;
}

bool acc_says_on(const char *const text[2], const char *what)
{
    size_t n = strlen(what);
    for (int c = 0; c < 2; c++)
        for (const char *s = find_ci(text[c], what); s; s = find_ci(s + 1, what))
            if (!negated(text[c], s, n)) return true;
    return false;
}

/* The row's "TP ... overlap" phrases: "TP" as a word (also in a list such
 * as "TP/DP/PP") with "overlap" among the next few words ("TP overlap", "TP
 * comm overlap", "TP/DP/PP communication overlap enabled"). 1 where one is
 * not negated, 0 where every one is ("no TP overlap", "TP 8, no overlap",
 * "TP overlap off"), -1 where there is none. */
static int tp_overlap_phrase(const char *const text[2])
{
    int said = -1;
    for (int c = 0; c < 2; c++)
        for (const char *s = find_ci(text[c], "tp"); s; s = find_ci(s + 2, "tp")) {
            bool word = (s == text[c] || !isalnum((unsigned char)s[-1])) && !isalnum((unsigned char)s[2]);
            if (!word) continue;
            const char *ov = find_ci(s, "overlap");
            if (!ov || ov - s > 32) continue;
            bool before = (s - text[c] >= 3 && acc_starts_ci(s - 3, "no ")) ||
                          (ov - s >= 3 && acc_starts_ci(ov - 3, "no ")) ||
                          (ov - s >= 8 && acc_starts_ci(ov - 8, "without "));
            bool after = acc_starts_ci(ov + 7, " off") || acc_starts_ci(ov + 7, " disabled") ||
                         acc_starts_ci(ov + 7, "=false") || acc_starts_ci(ov + 7, " false");
            if (!(before || after)) return 1;
            said = 0;
        }
    return said;
}

/* The word after s, past spaces and ':', '=', '(': its integer (-1 if it is
 * not one) and, through *word, where it starts. */
static long word_after(const char *s, const char **word)
{
    while (*s == ' ' || *s == ':' || *s == '=' || *s == '(') s++;
    if (word) *word = s;
    return isdigit((unsigned char)*s) ? strtol(s, NULL, 10) : -1;
}

/* How many layers per pipeline chunk a full recompute covers, when the row
 * says it: Megatron's --recompute-method block with --recompute-num-layers N
 * (N layers of each chunk recomputed, the others stored). Said in the
 * recompute cell ("full:5", "full(5)", "full 5") or the notes
 * ("recompute_num_layers 5", "recompute-num-layers=5", "recompute of 5
 * layers", "5 layers recomputed"). 0: every layer (unsaid, or the uniform
 * method, whose N is the size of a checkpointed group). */
int64_t acc_recompute_layers(const char *rc, const char *const text[2])
{
    const char *notes = text[1];
    long n = acc_starts_ci(rc, "full") ? word_after(rc + 4, NULL) : -1;
    if (n > 0) return n;
    if (acc_says(text, "uniform")) return 0;
    static const char *const keys[] = {"recompute_num_layers", "recompute-num-layers", "recompute num layers"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        const char *at = find_ci(notes, keys[k]);
        if (at && (n = word_after(at + strlen(keys[k]), NULL)) > 0) return n;
    }
    /* "<N> layer" within a few words of "recomput" */
    for (const char *at = find_ci(notes, "recomput"); at; at = find_ci(at + 1, "recomput")) {
        const char *from = at - notes > 32 ? at - 32 : notes, *to = at + 48;
        for (const char *q = from; *q && q < to; q++)
            if (isdigit((unsigned char)*q) && (q == notes || !isalnum((unsigned char)q[-1]))) {
                char *end;
                long v = strtol(q, &end, 10);
                while (*end == ' ') end++;
                if (v > 0 && acc_starts_ci(end, "layer")) return v;
            }
    }
    return 0;
}

/* The latest year (2016-2030, a number of four digits on its own) the
 * row's source or notes name; 0 if none. */
int acc_latest_year(const char *const text[2])
{
    int y = 0;
    for (int c = 0; c < 2; c++)
        for (const char *s = text[c]; *s; s++) {
            bool edge = s == text[c] || !(isdigit((unsigned char)s[-1]) || s[-1] == '.');
            if (!edge || !isdigit((unsigned char)s[0])) continue;
            int n = 0;
            while (isdigit((unsigned char)s[n])) n++;
            if (n == 4 && !(s[4] == '.' && isdigit((unsigned char)s[5]))) { /* not an arXiv id's 2201. */
                int v = atoi(s);
                if (v >= 2016 && v <= 2030 && v > y) y = v;
            }
            s += n - 1;
        }
    return y;
}

/* The value a setting is given in the source or the notes: the word after
 * the first of its spellings `keys` (a setting's name in Python and as a
 * flag: "grad_reduce_in_fp32", "grad-reduce-in-fp32"), past spaces, ':',
 * '=', '(' and a quote; NULL when neither names it. */
static const char *setting(const char *const text[2], const char *const keys[2])
{
    for (int c = 0; c < 2; c++)
        for (int k = 0; k < 2; k++) {
            const char *at = find_ci(text[c], keys[k]), *w;
            if (!at) continue;
            word_after(at + strlen(keys[k]), &w);
            return *w == '"' || *w == '\'' ? w + 1 : w;
        }
    return NULL;
}

/* The gradient reduction's precision as the notes say it: fp32
 * (grad_reduce_in_fp32 True, --accumulate-allreduce-grads-in-fp32) 1, 16-bit
 * (grad_reduce_in_fp32 False, --grad-reduce-in-bf16, "bf16 gradient
 * reduction") 0; unsaid -1. */
int acc_fp32_grad(const char *const text[2])
{
    static const char *const keys[] = {"grad_reduce_in_fp32", "grad-reduce-in-fp32"};
    const char *w = setting(text, keys);
    if (w && acc_starts_ci(w, "false")) return 0;
    if (w && acc_starts_ci(w, "true")) return 1;
    static const char *const bf16[] = {"grad-reduce-in-bf16", "grad_reduce_in_bf16", "bf16 gradient reduc",
                                       "bf16 grad reduc"};
    static const char *const fp32[] = {"accumulate-allreduce-grads-in-fp32", "fp32 gradient reduc", "fp32 grad reduc"};
    for (size_t k = 0; k < sizeof bf16 / sizeof bf16[0]; k++)
        if (acc_says(text, bf16[k])) return 0;
    for (size_t k = 0; k < sizeof fp32 / sizeof fp32[0]; k++)
        if (acc_says(text, fp32[k])) return 1;
    return -1;
}

/* NeMo 2's releases as containers (YYMM): 2.0 came as 24.09, 2.1 24.12,
 * 2.2 25.02, 2.3 25.04, 2.4 25.07, 2.5 25.09 (NeMo's tags: v2.5.0 and
 * 25.09-alpha hold the same commits); a later 2.x at least 25.11. */
static int nemo2_container(long minor)
{
    static const int REL[] = {2409, 2412, 2502, 2504, 2507, 2509};
    return minor < 0 ? 2409 : minor < 6 ? REL[minor] : 2511;
}

/* The release after one "nemo" at s (s + 4 on), as a container YYMM: past
 * ':', '-', '_', spaces, a 'v' and the words "container" / "framework"
 * ("NeMo container 24.09" 2409, "nvcr.io/nvidia/nemo:24.12" 2412, "NeMo
 * v2.0" 2409, "NeMo-2.5" 2509, "NeMo2" 2409, "NeMo 25" 2501); 0 where none
 * is written. A bare "2" counts only glued to the name ("NeMo2", not "NeMo 2
 * x 8 GPUs"); four digits are a year. */
static int nemo_release_at(const char *s)
{
    const char *v = s + 4;
    bool glued = isdigit((unsigned char)*v);
    for (bool more = true; more;) {
        more = false;
        while (*v == ' ' || *v == ':' || *v == '-' || *v == '_') v++, more = true;
        if (acc_starts_ci(v, "container ") || acc_starts_ci(v, "framework ")) v += 10, more = true;
        if ((*v == 'v' || *v == 'V') && isdigit((unsigned char)v[1])) v++, more = true;
    }
    if (!isdigit((unsigned char)*v)) return 0;
    char *end;
    long major = strtol(v, &end, 10), minor = -1;
    if (*end == '.' && isdigit((unsigned char)end[1])) minor = strtol(end + 1, NULL, 10);
    if (major >= 100) return 0; /* a year ("NeMo 2024") or a table id ("NEMO2407"), not a version */
    if (major == 2) return minor >= 0 || glued ? nemo2_container(minor) : 0;
    if (major < 20 || minor > 12) return 0;
    return (int)(major * 100 + (minor > 0 ? minor : 1));
}

/* A container tag written before the name ("25.09 NeMo container"), as
 * YYMM; 0 where none is. */
static int nemo_release_before(const char *text, const char *s)
{
    const char *b = s;
    if (b == text || b[-1] != ' ') return 0;
    b--;
    while (b > text && (isdigit((unsigned char)b[-1]) || b[-1] == '.')) b--;
    if (b > text && isalnum((unsigned char)b[-1])) return 0;
    char *end;
    long major = strtol(b, &end, 10);
    if (end == b || *end != '.' || !isdigit((unsigned char)end[1])) return 0;
    long minor = strtol(end + 1, NULL, 10);
    return major >= 20 && major < 100 && minor >= 1 && minor <= 12 ? (int)(major * 100 + minor) : 0;
}

int acc_nemo_release(const char *const text[2])
{
    int rel = 0;
    for (int c = 0; c < 2; c++)
        for (const char *s = find_ci(text[c], "nemo"); s; s = find_ci(s + 4, "nemo")) {
            int a = nemo_release_at(s), b = nemo_release_before(text[c], s);
            if (a > rel) rel = a;
            if (b > rel) rel = b;
        }
    return rel;
}

bool acc_says_nemo(const char *const text[2])
{
    for (int c = 0; c < 2; c++)
        for (const char *s = find_ci(text[c], "nemo"); s; s = find_ci(s + 4, "nemo"))
            if (!isalpha((unsigned char)s[4]) && (s == text[c] || !isalpha((unsigned char)s[-1]))) return true;
    return false;
}

bool acc_says_nemo2(const char *const text[2]) { return acc_nemo_release(text) >= 2409; }

int acc_ce_fusion_stated(const char *const text[2])
{
    static const char *const impl[] = {"cross_entropy_fusion_impl", "cross-entropy-fusion-impl"};
    static const char *const fuse[] = {"cross_entropy_loss_fusion", "cross-entropy-loss-fusion"};
    const char *w = setting(text, impl);
    if (w && acc_starts_ci(w, "te")) return 2;
    if (w && acc_starts_ci(w, "native")) return 1;
    if ((w = setting(text, fuse))) return acc_starts_ci(w, "false") ? 0 : 1;
    return -1;
}

int acc_ce_fusion(const char *const text[2])
{
    int said = acc_ce_fusion_stated(text);
    if (said >= 0) return said;
    if (acc_says(text, "Megatron-Bridge")) return 2;
    return acc_says_nemo2(text) ? 1 : -1;
}

/* The Megatron-Core release a row names ("core_v0.12.0", "core_r0.13",
 * "Megatron-Core 0.14", "mcore 0.12"), as its minor number; 0 where none. */
static int mcore_minor(const char *const text[2])
{
    static const char *const names[] = {"core_v", "core_r", "Megatron-Core ", "Megatron Core ", "mcore "};
    int best = 0;
    for (int c = 0; c < 2; c++)
        for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
            for (const char *s = find_ci(text[c], names[k]); s; s = find_ci(s + 1, names[k])) {
                const char *v = s + strlen(names[k]);
                if ((*v == 'v' || *v == 'V') && isdigit((unsigned char)v[1])) v++;
                if (v[0] != '0' || v[1] != '.' || !isdigit((unsigned char)v[2])) continue;
                int minor = atoi(v + 2);
                if (minor > best) best = minor;
            }
    return best;
}

int acc_flops_count(const char *const text[2], const char **why)
{
    if (acc_says(text, "Megatron-Bridge") || acc_says(text, "Megatron Bridge")) {
        *why = "causal attention FLOPs (Megatron-Bridge's flop_utils); ";
        return ACC_FLOPS_CAUSAL;
    }
    if (acc_nemo_release(text) >= 2509) {
        *why = "causal attention FLOPs (NeMo 25.09 on: flops_formulas.py); ";
        return ACC_FLOPS_CAUSAL;
    }
    bool mlm = acc_says(text, "Megatron-LM") || acc_says(text, "Megatron-Core") || acc_says(text, "Megatron Core") ||
               acc_says(text, "mcore");
    int year = acc_latest_year(text);
    if (mlm && (mcore_minor(text) >= 12 || year >= 2026)) {
        *why = "causal attention FLOPs (Megatron-Core 0.12 on: num_floating_point_operations); ";
        return ACC_FLOPS_CAUSAL;
    }
    bool megatron = acc_says(text, "Megatron") || acc_says(text, "MT-NLG");
    if (megatron && year > 0 && year <= 2022) {
        *why = "the N21 FLOP formula (Megatron's papers to 2022); ";
        return ACC_FLOPS_N21;
    }
    *why = "";
    return ACC_FLOPS_FULL;
}

int acc_tp_overlap(const char *const text[2])
{
    static const char *const keys[] = {"tp_comm_overlap", "tp-comm-overlap"};
    const char *w = setting(text, keys);
    if (w && (acc_starts_ci(w, "false") || acc_starts_ci(w, "off") || (w[0] == '0' && !isdigit((unsigned char)w[1]))))
        return 0;
    if (w || acc_says(text, "userbuffers")) return 1;
    return tp_overlap_phrase(text);
}
