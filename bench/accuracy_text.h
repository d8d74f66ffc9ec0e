/*
 * accuracy_text.h — what a row of build/accuracy's runs file says in words.
 *
 * A published run states some of its knobs only in its source and notes
 * cells ("FP8 current scaling", "recompute_num_layers 5", "TP/DP/PP
 * communication overlap enabled"). These read them; `text` is the row's
 * {source, notes}. Matching is ASCII, in any case.
 */
#ifndef TRAINSIM_BENCH_ACCURACY_TEXT_H
#define TRAINSIM_BENCH_ACCURACY_TEXT_H

#include <stdbool.h>
#include <stdint.h>

/* Does s start with pre? */
bool acc_starts_ci(const char *s, const char *pre);
/* Does the source or the notes contain `what`? */
bool acc_says(const char *const text[2], const char *what);
/* TP communication overlap as the row states it: 1 on (tp_comm_overlap /
 * tp-comm-overlap with any value but false, off or 0; "userbuffers"; "TP" as
 * a word, also in a list such as "TP/DP/PP", with "overlap" among the next
 * few words, not negated), 0 off (tp_comm_overlap False, "no TP
 * overlap", "TP overlap off"), -1 unsaid. */
int acc_tp_overlap(const char *const text[2]);
/* acc_says, not negated: not after "no", "not", "without", "w/o", "non-",
 * nor followed by "off", "disabled", "false", "none" or "=0". */
bool acc_says_on(const char *const text[2], const char *what);
/* The layers per pipeline chunk a full recompute covers (Megatron's
 * --recompute-method block --recompute-num-layers N), from the recompute
 * cell `rc` ("full:5", "full(5)", "full 5") or the notes
 * ("recompute_num_layers 5", "5 layers recomputed"); 0: every layer. */
int64_t acc_recompute_layers(const char *rc, const char *const text[2]);
/* The gradient reduction's precision they state: 1 fp32, 0 16-bit, -1 unsaid. */
int acc_fp32_grad(const char *const text[2]);
/* The cross-entropy kernels they state (SimCeFusion: 0 none, 1 Megatron-
 * Core's fused, 2 Transformer Engine's), -1 unsaid: cross_entropy_fusion_impl
 * te | native (or the flag's spelling), cross_entropy_loss_fusion True
 * (native, Megatron-Core's default implementation) or False; a
 * Megatron-Bridge performance recipe fuses with TE's (its
 * _benchmark_common sets cross_entropy_fusion_impl "te"; its GPT provider
 * fuses by default); a NeMo 2 run (acc_says_nemo2) with Megatron-Core's
 * (NeMo 2's GPTConfig sets cross_entropy_loss_fusion True). */
int acc_ce_fusion(const char *const text[2]);
/* The latest NeMo release the row names, as a container YYMM: "NeMo 24.07"
 * 2407, "nemo:24.12" 2412, "25.09 NeMo container" 2509, "NeMo 2.5" 2509
 * (NeMo 2.x by its container: 2.0 24.09 .. 2.5 25.09), "NeMo2" 2409; 0 where
 * none is written (a year, "NeMo 2024", is not a release). */
int acc_nemo_release(const char *const text[2]);
/* How the publisher counts the model FLOPs of its TFLOP/s:
 *   ACC_FLOPS_CAUSAL  causal attention halved: Megatron-Bridge (flop_utils,
 *                     every table from 25.09), NeMo 25.09 on (flops_formulas.py,
 *                     "Discount FLOPs in dot-product att", NeMo 2.5), Megatron-LM /
 *                     Megatron-Core 0.12 on (num_floating_point_operations, May
 *                     2025; a stated core_v0.12+ or a row dated 2026 on);
 *   ACC_FLOPS_N21     Narayanan et al. 2021's formula, 24·k·B·s·l·h²(1 + s/6h +
 *                     V/16lh), k = 4 with the recompute pass: Megatron's papers to
 *                     2022 (a row naming Megatron or MT-NLG, dated 2022 or before;
 *                     MT-NLG 530B's 126 TFLOP/s at 60.1 s is that formula);
 *   ACC_FLOPS_FULL    the whole score square: every other row (Megatron-LM
 *                     2023 to core 0.11, NeMo before 25.09, torchtitan, PaLM's
 *                     6N + 12LHQT).
 * *why: the rule's words ("" for full). */
enum { ACC_FLOPS_FULL, ACC_FLOPS_CAUSAL, ACC_FLOPS_N21 };
int acc_flops_count(const char *const text[2], const char **why);
/* Does the row name NeMo 2: "NeMo 2.x", or a NeMo container 24.09 or later
 * ("NeMo 24.12", "NeMo 25", "NeMo container 25.04", "nemo:24.12", "NeMo v2.0";
 * not "NeMo 24.07", not a year)? */
bool acc_says_nemo2(const char *const text[2]);
/* Does the text name NeMo (any version: "NeMo", "NeMo2", "nemo:24.07"), not
 * a word that starts with it ("Nemotron")? */
bool acc_says_nemo(const char *const text[2]);
/* The cross-entropy kernels the row's words set (cross_entropy_fusion_impl,
 * cross_entropy_loss_fusion), -1 unsaid. */
int acc_ce_fusion_stated(const char *const text[2]);
/* The latest year (2016-2030, four digits on their own) they name; 0 if none. */
int acc_latest_year(const char *const text[2]);

#endif
