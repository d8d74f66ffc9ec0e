#!/usr/bin/env python3
"""Write data/recipes/<id>.json for every throughput row of the public
calibration set, bench/data/calibration_runs.csv (metric tflops_per_gpu or
tokens_per_s_per_gpu).

Each recipe states the row's plan, GPU and GPU count with the row's source,
and every knob the row does not state by the rule bench/accuracy.c applies to
it (row_plan, eval_row), with the rule's text as the knob's source: so that
`trainsim simulate --recipe <id>` runs the plan `build/accuracy` scores.

Generated once and committed with its output; trainsim reads the recipes
without this script. To regenerate (after changing the rules in
bench/accuracy.c, the presets or the CSV), from the repository root, with a
built tree:

    TRAINSIM_DATA=$PWD/data python3 scripts/gen_calibration_recipes.py build/trainsim

It calls the binary to read the presets (`trainsim model --json`) and to
apply the rule for an unstated recompute (the least that fits in memory:
`trainsim simulate --json`).
"""
import csv
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CSV = os.path.join(ROOT, "bench", "data", "calibration_runs.csv")
OUT = os.path.join(ROOT, "data", "recipes")
METRICS = ("tflops_per_gpu", "tokens_per_s_per_gpu")
ACC = "bench/accuracy.c"
# The model dimensions a row states: CSV column -> option.
DIMS = [("layers", "layers"), ("hidden", "hidden"), ("heads", "heads"), ("kv_heads", "kv-heads"),
        ("ffn", "ffn"), ("vocab", "vocab")]
SPEC_DIMS = {"layers", "hidden", "heads", "kv_heads", "head_dim", "ffn", "vocab", "max_positions"}


def run(trainsim, args):
    p = subprocess.run([trainsim] + args, capture_output=True, text=True)
    return p.returncode, p.stdout


def spec(trainsim, preset):
    rc, out = run(trainsim, ["model", "--model", preset, "--json"])
    return json.loads(out)["spec"] if rc == 0 else None


def kind(row_id):
    for k, pre in (("n21", "N21"), ("nemo", "NEMO"), ("bloom", "BLOOM"), ("opt", "OPT"), ("tt", "TT"),
                   ("mb", "MB-")):
        if row_id.startswith(pre):
            return k
    raise SystemExit("unknown table for row " + row_id)


class Recipe:
    def __init__(self, row):
        self.row = row
        self.knobs = {}

    def stated(self, option, value, column):
        """A knob the row states: its source is the row's source and the column."""
        r = self.row
        self.knobs[option] = {"value": value,
                              "source": "%s (bench/data/calibration_runs.csv %s: %s %s)"
                                        % (r["source"], r["id"], column, r[column])}

    def rule(self, option, value, text):
        """A knob the row does not state: bench/accuracy.c's rule for it."""
        self.knobs[option] = {"value": value, "source": ACC + " " + text}

    def args(self):
        out = []
        for opt, k in self.knobs.items():
            v = k["value"]
            if v is True:
                out.append("--" + opt)
            elif v is not False:
                out += ["--" + opt, str(v)]
        return out


def row_dims(row):
    """The dimensions bench/accuracy.c's row_model gives the model."""
    d = {c: int(row[c]) for c, _ in DIMS if row[c]}
    d.setdefault("kv_heads", d["heads"])
    d["head_dim"] = d["hidden"] // d["heads"]
    return d


def arch_preset(trainsim, row):
    """row_model: the preset of the row's model name supplies the architecture."""
    name = row["model"].lower()
    tries = [name]
    if name.startswith("gpt-175b"):
        tries.append("gpt3-175b")
    tries.append("llama2-7b" if "llama" in name else "gpt3-175b")
    for t in tries:
        s = spec(trainsim, t)
        if s:
            return t, s
    raise SystemExit("no preset for " + row["id"])


def model_knobs(trainsim, rec, presets):
    """A preset equal to the row's model, else the architecture preset with
    the row's dimensions as options."""
    row = rec.row
    base_name, base = arch_preset(trainsim, row)
    want = dict(base, **row_dims(row))
    seq = int(row["seq"])
    rule = ("row_model: the preset of the row's model name (%s) supplies the architecture, the row every "
            "dimension; a preset with the same architecture and dimensions stands for it" % base_name)
    for name in [base_name] + [p for p in presets if p != base_name]:
        s = spec(trainsim, name)
        if s and all(s[k] == want[k] for k in want if k not in ("name", "source", "max_positions")):
            rec.rule("model", name, rule)
            if s["max_positions"] < seq:
                rec.rule("max-positions", seq, "row_model: the learned positions cover the row's sequence")
            return
    rec.rule("model", base_name, rule)
    for col, opt in DIMS:
        if row[col] and base[col] != int(row[col]):
            rec.stated(opt, int(row[col]), col)
    if base["head_dim"] != want["head_dim"]:
        rec.rule("head-dim", want["head_dim"], "row_model: head dim = hidden / heads")
    if base["max_positions"] < seq:
        rec.rule("max-positions", seq, "row_model: the learned positions cover the row's sequence")


def cluster(row, k):
    gpu = row["gpu"]
    if "B200" in gpu:
        return "gb200-nvl72" if "GB200" in gpu else "dgx-b200"
    return "dgx-h100" if "H100" in gpu else "jean-zay-a100" if k == "bloom" else "dgx-a100"


def plan_knobs(rec, k, layers):
    row = rec.row
    rec.rule("cluster", cluster(row, k), "eval_row: BLOOM on jean-zay-a100 (4x100G Omni-Path), other A100 rows "
             "on dgx-a100 (8x200G HDR), H100 rows on dgx-h100 (8x400G NDR)" +
             (", B200 on dgx-b200 (8x400G NDR)" if "B200" in row["gpu"] else "") + "; the row's GPU is " + row["gpu"])
    rec.stated("gpus", int(row["num_gpus"]), "num_gpus")
    for col in ("tp", "pp", "vpp", "dp", "cp", "ep"):
        if row[col] and (col in ("tp", "pp", "dp") or int(row[col]) > 1):
            rec.stated(col, int(row[col]), col)
    rec.stated("seq", int(row["seq"]), "seq")
    tp, pp, dp = int(row["tp"]), int(row["pp"]), int(row["dp"])
    vpp = int(row["vpp"] or 1)
    gb = int(row["global_batch"])
    if row["micro_batch"]:
        mb = int(row["micro_batch"])
        rec.stated("micro-batch", mb, "micro_batch")
    elif k == "bloom":
        mb = 2
        rec.rule("micro-batch", mb, "row_plan: the run's launch script states it: bigscience-workshop/bigscience "
                 "train/tr11-176B-ml/tr11-176B-ml.slurm, MICRO_BATCH_SIZE=2")
    else:
        mb = 1
        per = gb // dp
        while pp == 1 and mb * 2 <= 8 and per % (mb * 2) == 0:
            mb *= 2
        rec.rule("micro-batch", mb, "row_plan (mb rule): unstated micro-batch: 1 with pipelining (Megatron's "
                 "choice for pipelined runs); without pipelining the per-replica batch up to 8")
    if gb % (mb * dp):
        rounded = max(gb // (mb * dp), 1) * mb * dp
        rec.rule("global-batch", rounded, "row_plan (gb rounded to dp): the row's global batch %d is not a multiple "
                 "of micro-batch x dp = %d: rounded down to one" % (gb, mb * dp))
    else:
        rec.stated("global-batch", gb, "global_batch")
    rec.stated("sp" if row["seq_parallel"] == "yes" else "no-sp", True, "seq_parallel")
    rc = row["recompute"]
    if rc:
        rec.stated("recompute", "full" if rc.startswith("full") else "selective" if rc.startswith("selective")
                   else "none", "recompute")
    dopt = row["dist_opt"]
    if "zero3" in dopt:
        rec.stated("zero", 3, "dist_opt")
    elif dopt.startswith("distopt"):
        rec.stated("dist-opt", True, "dist_opt")
    elif "zero1" in dopt:
        rec.stated("zero", 1, "dist_opt")
    if layers % (pp * vpp):
        rec.rule("uneven-stages", True, "row_plan (uneven stages): %d layers do not divide over %d chunks: the "
                 "plan's rule, last and first chunk one layer lighter first" % (layers, pp * vpp))
    return tp, pp, vpp


def says(row, what):
    """row_plan's says(): the row's source or notes name it (any case)."""
    return what in (row["source"] + " " + row["notes"]).lower()


def runtime_knobs(rec, k, tp):
    row = rec.row
    if k == "mb":  # the precision and TP overlap the row's notes state (row_plan's says())
        dtype = "fp8" if says(row, "fp8") else "bf16" if says(row, "bf16") else "fp16"
        rec.rule("dtype", dtype, "row_plan (precision): as the row's source or notes say (fp8, else bf16, else fp16)")
        if dtype == "fp8" and says(row, "current scaling"):
            rec.rule("fp8-recipe", "current", "row_plan (precision): fp8 current scaling, as the notes say")
        if tp > 1 and (says(row, "tp overlap") or says(row, "userbuffers")):
            rec.rule("tp-overlap", True, "row_plan (TP overlap): the notes say TP overlap (TE userbuffers)")
    else:
        dtype = "fp8" if k == "nemo" else "fp16" if k in ("n21", "opt") else "bf16"
        rec.rule("dtype", dtype, "row_plan (precision): N21 and OPT fp16; NeMo fp8 (Transformer Engine); others bf16")
    if k in ("n21", "bloom", "opt"):
        rec.rule("no-flash", True, "row_plan (attention): fused attention only in the 2024 frameworks (NeMo/TE, "
                 "torchtitan SDPA); unfused (fused softmax) for N21, BLOOM and OPT")
    if k == "nemo" and tp > 1:
        rec.rule("tp-overlap", True, "row_plan (TP overlap): NeMo performance recipes overlap TP communication "
                 "(TE userbuffers)")
    if k == "tt":
        rec.rule("framework", "torchtitan", "eval_row: torchtitan 2024 defaults: eager PyTorch (compile off, "
                 "norm_type rmsnorm)")
        rec.rule("selective-ops", True, "eval_row: torchtitan's selective op activation checkpointing")
    if k == "bloom":
        rec.rule("framework", "deepspeed", "eval_row: BLOOM ran Megatron-DeepSpeed, DeepSpeed's PipelineEngine "
                 "with the BF16 optimizer (ZeRO-1)")
    if k == "n21":
        rec.rule("no-dp-overlap", True, "eval_row: Megatron-LM 2021 all-reduced gradients after the backward "
                 "pass, at the 16-bit training dtype")
    if any(says(row, w) for w in ("nemo 24.", "container 24.", "cuda 12.4", "cuda 12.5", "cuda 12.6")):
        rec.rule("software", "2024", "eval_row (libraries): a NeMo 24.x container (CUDA 12.5) ran the 2024 CUDA "
                 "libraries: cuBLAS before 12.9 (slower Hopper FP8 GEMMs), cuDNN 9.2 attention")
    if k == "mb":
        rec.rule("mfu-convention", "causal", "row_flops: Megatron-Bridge counts model FLOPs with causal attention "
                 "halved (flop_utils.py; every published table), so the printed TFLOP/s per GPU reads as its tables'")
        rec.rule("ce-fusion", "te", "row_setup (loss): a Megatron-Bridge performance recipe fuses the cross-entropy "
                 "with Transformer Engine's kernel (_benchmark_common: cross_entropy_fusion_impl te; the GPT "
                 "provider's cross_entropy_loss_fusion True)")
    if dtype != "bf16":
        rec.rule("fp16-grad-reduce", True, "eval_row (gradients): bf16 runs reduce in fp32 (Megatron default); "
                 "fp16 and fp8 rows at 16 bit (NeMo 24.07: Apex distributed_fused_adam, grad_sync_dtype bf16)")


def fits(trainsim, args):
    rc, out = run(trainsim, ["simulate"] + args + ["--json"])
    if rc not in (0, 4):
        raise SystemExit("simulate failed: " + " ".join(args))
    return json.loads(out)["memory"]["fits"]


def recompute_rule(trainsim, rec, k, layers, pp, vpp):
    """eval_row: unstated recompute, the least that fits in memory."""
    text = ("eval_row (recompute): unstated: the least that fits in memory: none, else full recompute of the "
            "fewest layers per chunk (Megatron-Core: NeMo, Megatron-Bridge, Megatron-LM) or of every layer "
            "(Megatron 2021, Megatron-DeepSpeed 2022, metaseq, torchtitan)")
    rec.rule("recompute", "none", text)
    if fits(trainsim, rec.args()):
        return
    per_chunk = -(-layers // (pp * vpp))
    nl = 1 if k in ("nemo", "mb") else per_chunk
    while nl <= per_chunk:
        rec.rule("recompute", "full", text)
        rec.knobs.pop("recompute-layers", None)
        if nl < per_chunk:
            rec.rule("recompute-layers", nl, text)
        if fits(trainsim, rec.args()):
            return
        nl += 1


def description(row, k):
    """One line for `trainsim recipes` (the model and GPU count have columns)."""
    gpu = "H100" if "H100" in row["gpu"] else "B200" if "B200" in row["gpu"] else "A100"
    if k == "n21":
        return "Megatron-LM, SC21 Table %s, %s fp16" % (row["id"][5], gpu)
    return {
            "nemo": "NeMo 24.07 recipe, %s FP8" % gpu,
            "bloom": "BLOOM, Megatron-DeepSpeed, Jean Zay",
            "opt": "OPT, metaseq FSDP + TP, %s fp16" % gpu,
            "tt": "torchtitan FSDP2, %s bf16" % gpu,
            "mb": "Megatron-Bridge recipe (NeMo %s), DGX-%s FP8 current scaling" % (
                "25.11" if "25.11 NeMo container" in row["source"] else "25.09", gpu)}[k]


def notes(row, k):
    metric = {"tflops_per_gpu": "TFLOP/s per GPU", "tokens_per_s_per_gpu": "tokens/s per GPU"}[row["metric"]]
    counted = {"n21": "the paper's formula 96 B s l h^2 (1 + s/6h + V/16lh), the recompute pass counted",
               "bloom": "Megatron-DeepSpeed's logger formula, the recompute pass counted",
               "opt": "metaseq's convention is not published; build/accuracy compares model FLOPs"}.get(k)
    out = ["published: %s %s%s (bench/accuracy.c scores it; docs/accuracy.md)"
           % (row["value"], metric, "; counted as " + counted if counted else "")]
    out.append("calibration_runs.csv notes: " + row["notes"])
    return out


def recipe(trainsim, row, presets):
    k = kind(row["id"])
    rec = Recipe(row)
    model_knobs(trainsim, rec, presets)
    layers = int(row["layers"])
    tp, pp, vpp = plan_knobs(rec, k, layers)
    runtime_knobs(rec, k, tp)
    if not row["recompute"]:
        recompute_rule(trainsim, rec, k, layers, pp, vpp)
    return {"format": "trainsim-recipe", "version": 1, "description": description(row, k),
            "knobs": rec.knobs, "notes": notes(row, k)}


def dump(r):
    """The recipe with one knob and one note per line (as data/recipes/deepseek-v3.json)."""
    j = lambda v: json.dumps(v, ensure_ascii=False)
    knobs = ",\n".join("    %s: %s" % (j(o), j(k)) for o, k in r["knobs"].items())
    notes = ",\n".join("    " + j(n) for n in r["notes"])
    return ('{\n  "format": %s,\n  "version": %d,\n  "description": %s,\n  "knobs": {\n%s\n  },\n'
            '  "notes": [\n%s\n  ]\n}\n' % (j(r["format"]), r["version"], j(r["description"]), knobs, notes))


def main():
    trainsim = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "trainsim")
    presets = sorted(f[:-5] for f in os.listdir(os.path.join(ROOT, "data", "models")) if f.endswith(".json"))
    rows = [r for r in csv.DictReader(open(CSV, newline="")) if r["metric"] in METRICS]
    os.makedirs(OUT, exist_ok=True)
    for row in rows:
        path = os.path.join(OUT, row["id"].lower() + ".json")
        with open(path, "w") as f:
            f.write(dump(recipe(trainsim, row, presets)))
        print("wrote", os.path.relpath(path, ROOT))


if __name__ == "__main__":
    main()
