#!/usr/bin/env python3
"""measure.py - time training work on your own GPU, for checking and calibrating trainsim.

Optional: trainsim never needs this file to build, test or run. It needs Python 3,
PyTorch with CUDA, and (for `step`) transformers; pynvml (nvidia-ml-py) is used when
it can be imported, to record the SM clock. Nothing is downloaded: models are built
from their configs with random weights.

Every subcommand appends JSON lines (one object a line, each written whole, so a run
that is stopped never leaves a partial line) to --out, or prints them to stdout. The
rows have the fields of trainsim's GPU measurements (docs/measure.md), and each also
says where it was measured: `gpu`, `torch`, `cuda`, `clock_mhz` (median SM clock
sampled every 20 ms while the row was measured; null without NVML) and `date`.

Subcommands (docs/measure.md says field by field what each writes):

  step     part A (dense) / E (Mixture-of-Experts): one whole training step of a
           HuggingFace model built from a config (--config FILE.json or --preset):
           model(input_ids, labels).loss.backward(), then fused AdamW step and
           zero_grad. amp = fp32 parameters under torch.autocast(bfloat16); pure =
           everything bf16. step_ms, fwd_bwd_ms, opt_ms, fwd_nograd_ms and
           fwd_grad_ms (the forward recorded for autograd, its graph dropped) as
           [median, min, max] over --steps timed steps after --warmup steps;
           --profile adds one step under torch.profiler (GPU time per ATen op).
  shard    part B: every kernel of one Megatron transformer layer as a
           tensor-parallel shard (per-GPU shapes): the four GEMMs forward, dgrad and
           wgrad, the attention core (SDPA flash) forward and backward, the norm and
           the activation forward and backward, each timed alone (--sustained S:
           back to back for S seconds, with each op's SM clock; --in-layer S: the
           layer's ops in training order, the layer over and over for S seconds).
  kernels  parts C (bf16 GEMMs on zeros and on random data), D-fp8 (FP8 GEMMs with
           torch._scaled_mm against bf16), D-attn (causal flash attention by heads and
           sequence), F (memory-bound ops forward and backward; fp32 cross-entropy).
  attn     part D-attn at one shape: --batch, --heads, --seq, --head-dim, --full (no
           causal mask), --backend cudnn|flash|default; the rows of
           bench/data/gpu/attn_batch_2026-11-26_h100.jsonl are this at the HF steps' shapes.
  attention-calibration
           times the attention core (SDPA flash, bf16, batch 1, causal and not, head
           dim 64 and 128, 8 to 64 heads, sequence 512 to 32768) and writes the
           "attention" table of a trainsim-calibration file (tools/calibrate writes
           the rest), rewriting the file atomically.
  eager    part F-eager: eager elementwise ops by the path PyTorch takes
           (contiguous add, broadcast row / column scale, a [T, 1] mask, a dtype
           cast, a mixed-dtype mul), forward, at two sizes in bf16 and fp32.
  power    part G-power: one bf16 GEMM (--gemm) alternating with fp32 adds at each
           GEMM duty (--duties), --seconds each; NVML's SM clock, board power and
           temperature, and the GEMM's rate (needs pynvml).
  batch    runs a file of the subcommands above, one a line, in one process (saves
           the imports and CUDA start-up per line).

Timing: CUDA events around the work, the median of N repetitions after warm-up; a
backward is timed alone, as the backward of a retained graph. --budget-s caps a
subcommand's wall time: once it is spent no new row is started.

Example:
  python3 tools/measure/measure.py step --preset gpt2 --micro-batch 16 --seq 1024 \\
      --precision amp --out rows.jsonl
"""

import argparse
import datetime
import gc
import json
import math
import os
import shlex
import signal
import statistics
import sys
import threading
import time
import traceback

torch = None  # imported by main(), so --help and the syntax check need no PyTorch
F = None

# Megatron shard row note, as the shared measurements write it.
SHARD_NOTE = "norm counted twice per layer; attn_core dgrad = flash bwd (dq,dk,dv); act = gelu or swiglu"

# Presets built in code (no download): published hyper-parameters.
GPT2_PRESETS = {  # name: (n_layer, n_embd, n_head)
    "gpt2": (12, 768, 12),
    "gpt2-medium": (24, 1024, 16),
    "gpt2-large": (36, 1280, 20),
    "gpt2-xl": (48, 1600, 25),
}
BERT_PRESETS = {  # name: (layers, hidden, heads, intermediate)
    "bert-base-uncased": (12, 768, 12, 3072),
    "bert-large-uncased": (24, 1024, 16, 4096),
}
ENCODER_TYPES = ("bert", "roberta", "distilbert", "albert", "electra", "deberta", "deberta-v2")
MOE_KEYS = ("num_local_experts", "num_experts", "n_routed_experts")


class MeasureError(Exception):
    """A user-facing error: printed as 'measure.py: error: ...' without a traceback."""


def log(msg):
    print(msg, file=sys.stderr, flush=True)


# ---- output --------------------------------------------------------------------------------
class Rows:
    """Appends whole JSON lines to a file (one write() per line) or to stdout."""

    def __init__(self, path):
        self.path = path
        self.fd = None
        self.count = 0
        if path and path != "-":
            try:
                self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            except OSError as e:
                raise MeasureError(f"cannot open --out {path}: {e.strerror}")

    def write(self, row):
        line = (json.dumps(row, allow_nan=False) + "\n").encode()
        if self.fd is None:
            sys.stdout.write(line.decode())
            sys.stdout.flush()
        else:
            view = memoryview(line)
            while view:
                n = os.write(self.fd, view)
                view = view[n:]
        self.count += 1

    def close(self):
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None


class Budget:
    """Wall-clock cap of one subcommand: no new row once `seconds` are spent."""

    def __init__(self, seconds):
        self.seconds = seconds
        self.t0 = time.monotonic()

    def elapsed(self):
        return time.monotonic() - self.t0

    def spent(self):
        return self.seconds is not None and self.elapsed() >= self.seconds

    def left(self):
        return math.inf if self.seconds is None else self.seconds - self.elapsed()


# ---- the SM clock (pynvml, optional) ----------------------------------------------------------
class NvmlSampler:
    """Reads one NVML sample (read(), None to skip) every `period` seconds on
    a thread between start() and halt(); self.samples holds them."""

    period = 0.1

    def __init__(self, nv, handle):
        self.nv, self.handle = nv, handle
        self.samples = []
        self.stamps = []  # time.monotonic() of each sample
        self.running = False
        self.thread = None

    def read(self):
        raise NotImplementedError

    def _sample(self):
        try:
            v = self.read()
        except Exception:  # NVML errors are many classes; a missed sample is skipped
            return
        if v is not None:
            self.samples.append(v)
            self.stamps.append(time.monotonic())

    def _loop(self):
        while self.running:
            self._sample()
            time.sleep(self.period)

    def start(self):
        self.samples = []
        self.stamps = []
        if self.nv is None:
            return
        self._sample()
        self.running = True
        self.thread = threading.Thread(target=self._loop, daemon=True)
        self.thread.start()

    def halt(self):
        self.running = False
        if self.thread is not None:
            self.thread.join()
            self.thread = None


class Clock(NvmlSampler):
    """Samples the SM clock of the CUDA device every 20 ms between start() and stop()."""

    period = 0.02

    def __init__(self):
        super().__init__(None, None)
        self.why = ""
        try:
            import pynvml  # nvidia-ml-py
        except ImportError:
            self.why = "pynvml (nvidia-ml-py) is not installed"
            return
        try:
            pynvml.nvmlInit()
            self.handle = self._handle(pynvml)
            pynvml.nvmlDeviceGetClockInfo(self.handle, pynvml.NVML_CLOCK_SM)
            self.nv = pynvml
        except Exception as e:  # NVML errors are many classes; any of them means no clock
            self.why = f"NVML: {e}"
            self.handle = None

    @staticmethod
    def _handle(nv):
        dev = torch.cuda.current_device()
        props = torch.cuda.get_device_properties(dev)
        bus = getattr(props, "pci_bus_id", None)
        if bus is not None:  # the PCI address is the same under CUDA_VISIBLE_DEVICES
            busid = "%08x:%02x:%02x.0" % (getattr(props, "pci_domain_id", 0), bus, getattr(props, "pci_device_id", 0))
            try:
                return nv.nvmlDeviceGetHandleByPciBusId(busid)
            except Exception:
                pass
        index = dev
        visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")
        if dev < len(visible) and visible[dev].strip().isdigit():
            index = int(visible[dev])
        return nv.nvmlDeviceGetHandleByIndex(index)

    def read(self):
        v = self.nv.nvmlDeviceGetClockInfo(self.handle, self.nv.NVML_CLOCK_SM)
        return v if v > 0 else None

    def stop(self):
        """Median MHz since start(), or None without NVML."""
        if self.nv is None:
            return None
        self.halt()
        self._sample()
        return self.median()

    def median(self):
        """Median of the samples so far (None without NVML or samples)."""
        return float(statistics.median(self.samples)) if self.samples else None

    def median_between(self, t0, t1):
        """Median of the samples taken between monotonic times t0 and t1
        (None without NVML or samples there)."""
        xs = [v for v, t in zip(list(self.samples), list(self.stamps)) if t0 <= t <= t1]
        return float(statistics.median(xs)) if xs else None


class Context:
    """What every row records about where it ran, and the shared clock sampler."""

    def __init__(self):
        if not torch.cuda.is_available():
            raise MeasureError("no CUDA device visible to PyTorch (torch.cuda.is_available() is False)")
        self.device = torch.device("cuda", torch.cuda.current_device())
        self.gpu = torch.cuda.get_device_name(self.device)
        self.capability = torch.cuda.get_device_capability(self.device)
        self.clock = Clock()
        if self.clock.nv is None:
            log(f"measure.py: no SM clock in the rows ({self.clock.why})")

    def stamp(self, row, clock_mhz):
        row["gpu"] = self.gpu
        row["torch"] = torch.__version__
        row["cuda"] = torch.version.cuda
        row["clock_mhz"] = clock_mhz
        if row.get("part") not in ("A", "E", "G-power", "H-host") and hasattr(torch.cuda, "_sleep"):
            row["timing"] = "host-ahead"  # time_ms: the GPU busy while the host dispatches
        row["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        return row


# ---- timing --------------------------------------------------------------------------------------
# A spin kernel queued before the start event keeps the GPU busy while the host
# dispatches fn (Python, ATen, autograd, cuDNN's plan lookup), as it is in a
# training step where the host runs ahead: the events then time the kernels
# alone. Without it a kernel shorter than its dispatch is timed as the dispatch
# (a 16 MB layer_norm as 24 us instead of 8).
SLEEP_CYCLES_PER_MS = 2.1e6  # above any SM clock (MHz x 1e3): the spin lasts at least as asked


def time_ms(fn, iters, warmup, host_ahead=True):
    """CUDA-event time of fn() in ms, each of `iters` runs after `warmup` runs;
    host_ahead: the GPU kept busy (twice fn's dispatch time) while the host
    dispatches it."""
    host = 0.0
    for _ in range(warmup):
        t = time.perf_counter()
        fn()
        host = max(host, (time.perf_counter() - t) * 1e3)
    torch.cuda.synchronize()
    ahead = host_ahead and hasattr(torch.cuda, "_sleep")
    spin = int(min(2.0 * host + 0.05, 50.0) * SLEEP_CYCLES_PER_MS)
    out = []
    for _ in range(iters):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        if ahead:
            torch.cuda._sleep(spin)
        a.record()
        fn()
        b.record()
        b.synchronize()
        out.append(a.elapsed_time(b))
    return out


def median_ms(fn, iters, warmup, host_ahead=True):
    return float(statistics.median(time_ms(fn, iters, warmup, host_ahead)))


def sustained_ms(fn, seconds, clock):
    """fn() back to back for `seconds`, as the kernels of a training step run
    (the GPU at its power cap after a second or two): (ms per call over the
    second half of the GPU's time, the median SM clock NVML read meanwhile or
    None). Events mark batches of about 10 ms of calls; the GPU's timeline is
    placed on the host's clock at the final synchronize."""
    t = time.perf_counter()
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    per_call = max((time.perf_counter() - t) / 3.0, 1e-6)
    batch = max(1, int(0.01 / per_call))
    marks, calls = [], 0
    t_end = time.perf_counter() + seconds
    while True:
        ev = torch.cuda.Event(enable_timing=True)
        ev.record()
        marks.append((ev, calls))
        if time.perf_counter() >= t_end and len(marks) >= 3:
            break
        for _ in range(batch):
            fn()
        calls += batch
    marks[-1][0].synchronize()
    t_sync = time.monotonic()
    first, last = marks[0][0], marks[-1][0]
    total = first.elapsed_time(last)
    mid_ev, mid_calls = next((e, c) for e, c in marks if first.elapsed_time(e) >= total / 2.0)
    if mid_ev is last:
        mid_ev, mid_calls = marks[-2]
    span = mid_ev.elapsed_time(last)
    ms = span / (calls - mid_calls)
    return ms, clock.median_between(t_sync - span / 1e3, t_sync)


# A layer's ops in the order training runs them: forward, then backward (the
# norm twice each way; its time is the median of both)
LAYER_ORDER = [("norm", "fwd"), ("qkv", "fwd"), ("attn_core", "fwd"), ("proj", "fwd"), ("norm", "fwd"),
               ("fc1", "fwd"), ("act", "fwd"), ("fc2", "fwd"),
               ("fc2", "dgrad"), ("fc2", "wgrad"), ("act", "dgrad"), ("fc1", "dgrad"), ("fc1", "wgrad"),
               ("norm", "dgrad"), ("proj", "dgrad"), ("proj", "wgrad"), ("attn_core", "dgrad"),
               ("qkv", "dgrad"), ("qkv", "wgrad"), ("norm", "dgrad")]


def in_layer_ms(seq, seconds, clock):
    """The functions of seq ([(key, fn)], a layer's ops in order) run one
    after another, the whole sequence over and over for `seconds`, as a
    training step runs its layers: the GPU's clock is then set by the layer's
    mix of GEMMs and the rest, and the host, ahead by whole layers, never
    keeps the GPU waiting. Returns ({key: ms}, the median of each op's
    event-to-event times over the second half of the GPU's time; the median
    SM clock NVML read meanwhile or None)."""
    for _, fn in seq:
        fn()
    torch.cuda.synchronize()
    laps = []
    t_end = time.perf_counter() + seconds
    while time.perf_counter() < t_end or len(laps) < 4:
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(len(seq) + 1)]
        for e, (_, fn) in zip(ev, seq):
            e.record()
            fn()
        ev[-1].record()
        laps.append(ev)
    laps[-1][-1].synchronize()
    t_sync = time.monotonic()
    half = laps[len(laps) // 2:]
    span = half[0][0].elapsed_time(laps[-1][-1])
    per = {}
    for ev in half:
        for i, (key, _) in enumerate(seq):
            per.setdefault(key, []).append(ev[i].elapsed_time(ev[i + 1]))
    return {k: float(statistics.median(v)) for k, v in per.items()}, clock.median_between(t_sync - span / 1e3,
                                                                                          t_sync)


def backward_fn(make_graph, inputs):
    """Backward alone: the graph built once (out = make_graph()); the function
    runs torch.autograd.grad(out, inputs, dout, retain_graph=True)."""
    out = make_graph()
    dout = torch.randn_like(out)

    def bwd():
        torch.autograd.grad(out, inputs, dout, retain_graph=True)

    return bwd


def backward_ms(make_graph, inputs, iters, warmup):
    """The backward alone (backward_fn) timed as median_ms."""
    return median_ms(backward_fn(make_graph, inputs), iters, warmup)


def med_min_max(xs):
    return [float(statistics.median(xs)), float(min(xs)), float(max(xs))]


def free_cuda():
    gc.collect()
    torch.cuda.empty_cache()


class SdpaBackend:
    """Context manager forcing one of PyTorch SDPA's backends: "flash"
    (FlashAttention-2) or "cudnn" (cuDNN attention, what a training step on
    Hopper runs and what trainsim's attention model describes)."""

    def __init__(self, backend="flash"):
        self.cm = None
        try:
            from torch.nn.attention import SDPBackend, sdpa_kernel

            which = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]
            self.cm = sdpa_kernel([which])
        except ImportError:
            self.cm = None

    def __enter__(self):
        if self.cm is not None:
            self.cm.__enter__()
        return self

    def __exit__(self, *exc):
        if self.cm is not None:
            return self.cm.__exit__(*exc)
        return False


def attention_ms(ctx, batch, heads, seq, d, causal, iters, warmup, kv_heads=None, backend="flash"):
    """(fwd_ms, bwd_ms) of SDPA attention on [batch, heads, seq, d] bf16 on
    `backend` (SdpaBackend); K/V of kv_heads heads are expanded (materialised)
    to the query heads first."""
    f, b = attention_timed(ctx, batch, heads, seq, d, causal, lambda fn: median_ms(fn, iters, warmup), kv_heads,
                           backend)
    return f, b


def attention_timed(ctx, batch, heads, seq, d, causal, timed, kv_heads=None, backend="flash"):
    """attention_ms's forward and backward, each timed by timed(fn)."""
    kv = kv_heads or heads
    dev = ctx.device
    q = torch.randn(batch, heads, seq, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(batch, kv, seq, d, device=dev, dtype=torch.bfloat16)
    v = torch.randn(batch, kv, seq, d, device=dev, dtype=torch.bfloat16)
    if kv != heads:
        k = k.repeat_interleave(heads // kv, dim=1)
        v = v.repeat_interleave(heads // kv, dim=1)
    k = k.contiguous().requires_grad_(True)
    v = v.contiguous().requires_grad_(True)
    with SdpaBackend(backend):

        def fwd():
            with torch.no_grad():
                F.scaled_dot_product_attention(q, k, v, is_causal=causal)

        t_fwd = timed(fwd)
        t_bwd = timed(backward_fn(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal), (q, k, v)))
    return t_fwd, t_bwd


# ---- step: parts A and E -------------------------------------------------------------------------
def load_config(args):
    """(name, transformers config) from --preset or --config."""
    import transformers

    if args.preset:
        p = args.preset
        if p in GPT2_PRESETS:
            n_layer, n_embd, n_head = GPT2_PRESETS[p]
            cfg = transformers.GPT2Config(
                n_layer=n_layer, n_embd=n_embd, n_head=n_head, vocab_size=50257, n_positions=1024
            )
        elif p in BERT_PRESETS:
            layers, hidden, heads, inter = BERT_PRESETS[p]
            cfg = transformers.BertConfig(
                num_hidden_layers=layers,
                hidden_size=hidden,
                num_attention_heads=heads,
                intermediate_size=inter,
                vocab_size=30522,
                max_position_embeddings=512,
                type_vocab_size=2,
            )
        else:
            names = ", ".join(list(GPT2_PRESETS) + list(BERT_PRESETS))
            raise MeasureError(f"unknown --preset '{p}' (one of {names}; or give --config FILE.json)")
        return p, cfg
    path = args.config
    try:
        with open(path) as f:
            d = json.load(f)
    except OSError as e:
        raise MeasureError(f"cannot read --config {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        raise MeasureError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}")
    if not isinstance(d, dict) or "model_type" not in d:
        raise MeasureError(f"{path}: a HuggingFace config.json with a \"model_type\" is expected")
    model_type = d.pop("model_type")
    try:
        cfg = transformers.AutoConfig.for_model(model_type, **d)
    except (ValueError, KeyError) as e:
        raise MeasureError(f"{path}: transformers {transformers.__version__} cannot build model_type '{model_type}': {e}")
    name = os.path.splitext(os.path.basename(path))[0]
    return name, cfg


def build_model(cfg, dtype, ctx):
    """The model on the GPU with random weights in `dtype`, SDPA attention, or
    eager attention where the architecture has no SDPA path (GPT-OSS's sinks)."""
    import transformers

    encoder = getattr(cfg, "model_type", "") in ENCODER_TYPES
    auto = transformers.AutoModelForMaskedLM if encoder else transformers.AutoModelForCausalLM
    # transformers 5 names the argument dtype, 4.x torch_dtype; the .to() below
    # settles the dtype whichever one (or none) this version took
    model, err = None, None
    for attn in ("sdpa", "eager"):
        for kw in ({"dtype": dtype}, {"torch_dtype": dtype}, {}):
            try:
                with torch.device(ctx.device):
                    model = auto.from_config(cfg, attn_implementation=attn, **kw)
                break
            except TypeError as e:
                err = e
            except ValueError as e:  # "does not support ... scaled_dot_product_attention"
                if attn != "sdpa" or "scaled_dot_product_attention" not in str(e):
                    raise
                err = e
                break  # no SDPA path: eager attention, each keyword again
        if model is not None or not isinstance(err, ValueError):
            break
    if model is None:
        raise MeasureError(f"transformers cannot build {cfg.model_type} from its config: {err}")
    model = model.to(device=ctx.device, dtype=dtype)
    model.train()
    return model, encoder


def is_moe(cfg):
    return any((getattr(cfg, k, None) or 0) > 1 for k in MOE_KEYS)


# The host's speed at dispatching eager ops (part H-host): a loop of HOST_LAYERS
# nn.Linear(256, 256) on 4 tokens, so small that the host alone sets its pace.
# It does not tell how fast a host dispatches a HuggingFace step: two hosts it
# put 2x apart ran the same small steps alike (bench/data/gpu/README.md,
# host_2026-11-27_*.jsonl).
HOST_LAYERS = 200


def host_loop_us(dev, autocast, dtype, reps, warmup):
    """Median host microseconds a layer of the linear loop takes forward
    (with autograd) and backward, over reps runs after warmup."""
    net = torch.nn.Sequential(*[torch.nn.Linear(256, 256) for _ in range(HOST_LAYERS)]).to(dev, dtype)
    x = torch.randn(4, 256, device=dev, dtype=dtype)
    fw, bw = [], []
    for i in range(reps + warmup):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=autocast):
            y = net(x).float().sum()
        t1 = time.perf_counter()
        y.backward()
        t2 = time.perf_counter()
        torch.cuda.synchronize()
        net.zero_grad(set_to_none=True)
        if i >= warmup:
            fw.append((t1 - t0) * 1e6 / HOST_LAYERS)
            bw.append((t2 - t1) * 1e6 / HOST_LAYERS)
    del net
    return statistics.median(fw), statistics.median(bw)


def cmd_host(args, ctx, rows, budget):
    """Part H-host: the linear loop in fp32, fp32 under autocast and bf16."""
    for name, ac, dt in (("float32", False, torch.float32), ("float32", True, torch.float32),
                         ("bfloat16", False, torch.bfloat16)):
        f, b = host_loop_us(ctx.device, ac, dt, args.iters, args.warmup)
        row = {"part": "H-host", "op": f"nn.Linear(256,256), [4,256] input, {HOST_LAYERS} layers",
               "param_dtype": name, "autocast": ac, "fwd_us_per_layer": f, "bwd_us_per_layer": b}
        log(f"host: {f:.1f} us a layer forward, {b:.1f} backward ({name}{', autocast' if ac else ''})")
        rows.write(ctx.stamp(row, None))


def cmd_step(args, ctx, rows, budget):
    if not args.preset and not args.config:
        raise MeasureError("step needs --preset NAME or --config FILE.json")
    if args.preset and args.config:
        raise MeasureError("step takes one of --preset and --config, not both")
    name, cfg = load_config(args)
    maxpos = getattr(cfg, "max_position_embeddings", None) or getattr(cfg, "n_positions", None)
    if maxpos and args.seq > maxpos:
        raise MeasureError(f"--seq {args.seq} exceeds the model's {maxpos} positions")
    dtype = torch.float32 if args.precision == "amp" else torch.bfloat16
    torch.manual_seed(0)
    free_cuda()
    log(f"step {name}: building ({args.precision}, micro-batch {args.micro_batch}, seq {args.seq})")
    model, encoder = build_model(cfg, dtype, ctx)
    params = sum(p.numel() for p in model.parameters())
    vocab = model.config.vocab_size
    ids = torch.randint(0, vocab, (args.micro_batch, args.seq), device=ctx.device)
    labels = ids.clone()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)

    def forward():
        if args.precision == "amp":
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
                return model(input_ids=ids, labels=labels).loss
        return model(input_ids=ids, labels=labels).loss

    def fwd_bwd():
        forward().backward()

    def opt_step():
        opt.step()
        opt.zero_grad(set_to_none=True)

    ctx.clock.start()
    for _ in range(args.warmup):
        fwd_bwd()
        opt_step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats(ctx.device)
    step, fb, op = [], [], []
    for i in range(args.steps):
        if i >= 3 and budget.spent():
            log(f"step {name}: budget spent, {i} of {args.steps} steps timed")
            break
        e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
        e[0].record()
        fwd_bwd()
        e[1].record()
        opt_step()
        e[2].record()
        e[2].synchronize()
        fb.append(e[0].elapsed_time(e[1]))
        op.append(e[1].elapsed_time(e[2]))
        step.append(e[0].elapsed_time(e[2]))
    peak = torch.cuda.max_memory_allocated(ctx.device) / 2**30

    def fwd_nograd():
        with torch.no_grad():
            forward()

    nograd = time_ms(fwd_nograd, len(step), 1, host_ahead=False)
    # the forward as training records it (autograd's nodes and saved
    # tensors), its graph dropped unused: what recording adds to a forward
    grad = time_ms(forward, len(step), 1, host_ahead=False)
    mhz = ctx.clock.stop()
    row = {
        "part": "E" if is_moe(cfg) else "A",
        "model": args.name or name,
        "micro_batch": args.micro_batch,
        "seq": args.seq,
        "precision": args.precision,
        "params": params,
        "step_ms": med_min_max(step),
        "fwd_bwd_ms": med_min_max(fb),
        "opt_ms": med_min_max(op),
        "fwd_nograd_ms": med_min_max(nograd),
        "fwd_grad_ms": med_min_max(grad),
        "attn": getattr(model.config, "_attn_implementation", None) or "sdpa",
        "peak_mem_GiB": peak,
        "steps": len(step),
        "zero_grad": "set_to_none",  # opt_step() frees the gradients after each step
        "config": json.loads(model.config.to_json_string(use_diff=False)),  # what was built
    }
    impl = getattr(model.config, "_experts_implementation", None)
    if is_moe(cfg) and impl:
        row["experts_impl"] = impl
    if args.profile:
        row["profile"] = profile_step(fwd_bwd, opt_step)
    if encoder:
        row["loss"] = "masked-lm, labels = input ids"
    rows.write(ctx.stamp(row, mhz))
    log(f"step {row['model']}: {row['step_ms'][0]:.1f} ms a step ({row['fwd_bwd_ms'][0]:.1f} fwd+bwd, "
        f"{row['opt_ms'][0]:.2f} optimizer), {peak:.1f} GiB peak, {params / 1e6:.0f} M parameters")


def profile_step(fwd_bwd, opt_step):
    """One more step under torch.profiler: the GPU time of each ATen op (its
    kernels' self time, summed over calls), the same for the other profiler
    keys with GPU time of their own (other_keys: autograd nodes, copies and
    fills outside an ATen op), the step's kernel time in all and its wall
    time; busy_ms below wall_ms is the GPU waiting on the host."""
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        e = [torch.cuda.Event(enable_timing=True) for _ in range(2)]
        e[0].record()
        fwd_bwd()
        opt_step()
        e[1].record()
        e[1].synchronize()
    ops, rest = [], []
    for a in prof.key_averages():
        t = getattr(a, "self_device_time_total", None)
        if t is None:
            t = getattr(a, "self_cuda_time_total", 0)
        if t > 0:
            (ops if a.key.startswith("aten::") else rest).append({"op": a.key, "calls": a.count,
                                                                  "device_ms": t / 1e3})
    ops.sort(key=lambda o: -o["device_ms"])
    rest.sort(key=lambda o: -o["device_ms"])
    busy = 0.0
    for ev in prof.events():  # kernels, copies and fills; not a record_function range's GPU span
        if getattr(ev, "device_type", None) == torch.autograd.DeviceType.CUDA and \
                not getattr(ev, "is_user_annotation", False):
            busy += ev.device_time_total if hasattr(ev, "device_time_total") else ev.cuda_time_total
    return {"wall_ms": e[0].elapsed_time(e[1]), "busy_ms": busy / 1e3, "ops": ops[:80], "other_keys": rest[:20]}


# ---- shard: part B -----------------------------------------------------------------------------------
def cmd_shard(args, ctx, rows, budget):
    H, A, T = args.hidden, args.heads, args.tp
    K = args.kv_heads or A
    if H % A:
        raise MeasureError(f"--hidden {H} is not a multiple of --heads {A}")
    if A % T:
        raise MeasureError(f"--heads {A} is not a multiple of --tp {T}")
    if K % T and T % K:
        raise MeasureError(f"--kv-heads {K} and --tp {T}: one must divide the other")
    if args.ffn % T:
        raise MeasureError(f"--ffn {args.ffn} is not a multiple of --tp {T}")
    hd = args.head_dim or H // A
    a_loc, kv_loc = A // T, max(1, K // T)
    f_loc = args.ffn // T
    M = args.micro_batch * args.seq
    norm = args.norm or ("rms" if args.gated else "layer")
    dev, bf = ctx.device, torch.bfloat16
    iters, warm = args.iters, args.warmup
    # (in, out) of each GEMM: y[M, out] = x[M, in] W[out, in]^T
    gemms = {
        "qkv": (H, (a_loc + 2 * kv_loc) * hd),
        "proj": (a_loc * hd, H),
        "fc1": (H, 2 * f_loc if args.gated else f_loc),
        "fc2": (f_loc, H),
    }
    torch.manual_seed(0)
    fns = {}  # (op, pass): the op's function, its tensors kept alive
    for name, (n_in, n_out) in gemms.items():
        x = torch.randn(M, n_in, device=dev, dtype=bf)
        w = torch.randn(n_out, n_in, device=dev, dtype=bf)
        dy = torch.randn(M, n_out, device=dev, dtype=bf)
        fns[name, "fwd"] = lambda x=x, w=w: torch.matmul(x, w.t())  # F.linear forward
        fns[name, "dgrad"] = lambda dy=dy, w=w: torch.matmul(dy, w)  # grad_input = dy W
        fns[name, "wgrad"] = lambda dy=dy, x=x: torch.matmul(dy.t(), x)  # grad_weight = dy^T x
    with SdpaBackend("flash"):  # the backward's graph is built on the flash backend
        fns["attn_core", "fwd"], fns["attn_core", "dgrad"] = attention_timed(
            ctx, args.micro_batch, a_loc, args.seq, hd, True, lambda fn: fn, kv_heads=kv_loc)
    # norm over [M, H]
    xn = torch.randn(M, H, device=dev, dtype=bf, requires_grad=True)
    g = torch.randn(H, device=dev, dtype=bf, requires_grad=True)
    b = torch.randn(H, device=dev, dtype=bf, requires_grad=True)
    if norm == "rms":
        nf = lambda: rms_norm(xn, g)  # noqa: E731
        inputs = (xn, g)
    else:
        nf = lambda: F.layer_norm(xn, (H,), g, b)  # noqa: E731
        inputs = (xn, g, b)
    fns["norm", "fwd"], fns["norm", "dgrad"] = no_grad_fn(nf), backward_fn(nf, inputs)
    # activation over the FC1 output [M, F/T] (gated: [M, 2F/T] in, [M, F/T] out)
    a_in = torch.randn(M, gemms["fc1"][1], device=dev, dtype=bf, requires_grad=True)
    if args.gated:
        af = lambda: swiglu(a_in)  # noqa: E731
    else:
        af = lambda: F.gelu(a_in, approximate="tanh")  # noqa: E731
    fns["act", "fwd"], fns["act", "dgrad"] = no_grad_fn(af), backward_fn(af, (a_in,))
    ctx.clock.start()
    with SdpaBackend("flash"):
        if args.in_layer:  # the whole layer over and over: one clock for its mix
            got, layer_mhz = in_layer_ms([(k, fns[k]) for k in LAYER_ORDER], args.in_layer, ctx.clock)
            timed = {k: (got[k], None) for k in fns}
        elif args.sustained:  # each op back to back for --sustained seconds: (ms, its SM clock)
            timed = {k: sustained_ms(fn, args.sustained, ctx.clock) for k, fn in fns.items()}
        else:
            ahead = not args.host_in_loop
            timed = {k: (median_ms(fn, iters, warm, ahead), None) for k, fn in fns.items()}
    ops, clocks = {}, {}
    for (op, ps), (ms, mhz_op) in timed.items():
        ops.setdefault(op, {"fwd": 0.0, "dgrad": 0.0, "wgrad": 0.0})[ps] = ms
        clocks.setdefault(op, {"fwd": None, "dgrad": None, "wgrad": None})[ps] = mhz_op
    mhz = ctx.clock.stop()
    fwd_sum = sum(ops[o]["fwd"] for o in ops) + ops["norm"]["fwd"]
    bwd_sum = sum(ops[o]["dgrad"] + ops[o]["wgrad"] for o in ops) + ops["norm"]["dgrad"]
    row = {
        "part": "B",
        "shard": args.name or f"h{H}_a{A}_tp{T}",
        "hidden": H,
        "heads": A,
        "kv_heads": K,
        "head_dim": hd,
        "ffn": args.ffn,
        "gated": bool(args.gated),
        "tp": T,
        "seq": args.seq,
        "micro_batch": args.micro_batch,
        "norm": norm,
        "sdpa_backend": "flash",  # attention_ms forces SDPA's flash backend
        "ops_ms": ops,
        "layer_fwd_ms_sum_ops": fwd_sum,
        "layer_bwd_ms_sum_ops": bwd_sum,
        "note": SHARD_NOTE,
    }
    if args.sustained:
        row["sustained_s"] = args.sustained
        row["ops_clock_mhz"] = clocks
    if args.in_layer:
        row["in_layer_s"] = args.in_layer
        mhz = layer_mhz  # the clock over the timed half
    ctx.stamp(row, mhz)
    if args.sustained or args.in_layer:  # ctx.stamp's host-ahead is time_ms's
        row["timing"] = "in-layer" if args.in_layer else "sustained"
    elif args.host_in_loop:
        row["timing"] = "host-in-loop"
    rows.write(row)
    log(f"shard {row['shard']}: layer forward {fwd_sum:.3f} ms, backward {bwd_sum:.3f} ms (sum of ops)")
    free_cuda()


def no_grad_fn(fn):
    """fn run under torch.no_grad() (a forward alone)."""
    def run():
        with torch.no_grad():
            fn()

    return run


def fwd_only_ms(fn, iters, warmup):
    return median_ms(no_grad_fn(fn), iters, warmup)


def rms_norm(x, g, eps=1e-5):
    if hasattr(F, "rms_norm"):
        return F.rms_norm(x, (x.shape[-1],), g, eps)
    xf = x.float()
    return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype) * g


def swiglu(x):
    a, b = x.chunk(2, dim=-1)
    return F.silu(a) * b


# ---- kernels: parts C, D-fp8, D-attn, F ----------------------------------------------------------------
C_SHAPES = [(8192, 8192, 8192), (2048, 4608, 12288), (8192, 7168, 8192), (4096, 4096, 4096)]
FP8_SHAPES = [(8192, 8192, 8192), (4096, 12288, 4096), (8192, 7168, 8192), (2048, 4608, 12288), (16384, 6656, 16384)]
ATTN_GRID = [(8, 2048), (8, 4096), (8, 8192), (8, 16384), (8, 32768), (32, 4096), (12, 2048), (16, 8192)]
F_SIZES = [(4096, 1024), (16384, 768), (8192, 4096), (16384, 8192)]
F_OPS = ["layer_norm", "rms_norm", "gelu_tanh", "silu", "add", "softmax", "cast_to_fp32"]
CE_SIZES = [(16384, 50257), (4096, 128256), (8192, 32000)]
KERNEL_PARTS = ("C", "D-fp8", "D-attn", "F")


def tflops(flops, ms):
    return flops / (ms * 1e-3) / 1e12


def cmd_attn(args, ctx, rows, budget):
    """Part D-attn at one shape: SDPA's attention core forward and backward
    on the backend asked for (cudnn, flash, or PyTorch's default choice)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    backends = {"cudnn": [SDPBackend.CUDNN_ATTENTION], "flash": [SDPBackend.FLASH_ATTENTION]}
    B, H, S, D, causal = args.batch, args.heads, args.seq, args.head_dim, not args.full
    dev = ctx.device
    q, k, v = (torch.randn(B, H, S, D, device=dev, dtype=torch.bfloat16, requires_grad=True) for _ in range(3))

    def core():
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal, dropout_p=args.dropout)

    def fwd():
        with torch.no_grad():
            core()

    ctx.clock.start()
    try:
        if args.backend == "default":
            t_fwd = median_ms(fwd, args.iters, args.warmup)
            t_bwd = backward_ms(core, (q, k, v), args.iters, args.warmup)
        else:
            with sdpa_kernel(backends[args.backend]):
                t_fwd = median_ms(fwd, args.iters, args.warmup)
                t_bwd = backward_ms(core, (q, k, v), args.iters, args.warmup)
    except RuntimeError as e:
        ctx.clock.stop()
        raise MeasureError(f"attn: SDPA's {args.backend} backend cannot run this shape here: {e}")
    mhz = ctx.clock.stop()
    flops = 2.0 * 2.0 * S * S * D * H * B / (2.0 if causal else 1.0)
    row = {"part": "D-attn", "batch": B, "heads": H, "seq": S, "head_dim": D, "causal": causal,
           "fwd_ms": t_fwd, "bwd_ms": t_bwd, "fwd_tflops": tflops(flops, t_fwd),
           "bwd_tflops": tflops(2.5 * flops, t_bwd), "sdpa_backend": args.backend}
    if args.dropout > 0:
        row["dropout"] = args.dropout
    rows.write(ctx.stamp(row, mhz))
    log(f"D-attn {B}x{H}x{S} d{D} {'causal' if causal else 'full'} p{args.dropout:g} {args.backend}: "
        f"fwd {t_fwd:.3f} ms, bwd {t_bwd:.3f} ms")
    free_cuda()


def fp8_gemm(a, bt):
    """A callable running one FP8 e4m3 GEMM a @ bt.t() with unit scales and a
    bf16 output (torch._scaled_mm), from bf16 a [m, k] and bt [n, k] (bt's
    transpose is column-major, the layout _scaled_mm takes)."""
    one = torch.tensor(1.0, device=a.device, dtype=torch.float32)
    a8, bt8 = a.to(torch.float8_e4m3fn), bt.to(torch.float8_e4m3fn)
    return lambda: torch._scaled_mm(a8, bt8.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)


def cmd_kernels(args, ctx, rows, budget):
    parts = [p.strip() for p in args.parts.split(",") if p.strip()]
    for p in parts:
        if p not in KERNEL_PARTS:
            raise MeasureError(f"unknown part '{p}' in --parts (one of {', '.join(KERNEL_PARTS)})")
    dev, bf, it, wu = ctx.device, torch.bfloat16, args.iters, args.warmup
    torch.manual_seed(0)

    def stop():
        if budget.spent():
            log(f"kernels: budget of {budget.seconds:g} s spent after {rows.count} rows; stopping")
            return True
        return False

    if "C" in parts:
        for m, n, k in args.shapes or C_SHAPES:
            if stop():
                return
            ctx.clock.start()
            row = {"part": "C", "m": m, "n": n, "k": k}
            for label, make in (("zeros", torch.zeros), ("randn", torch.randn)):
                a = make(m, k, device=dev, dtype=bf)
                b = make(k, n, device=dev, dtype=bf)
                ms = median_ms(lambda: torch.matmul(a, b), it, wu)
                row[label] = {"ms": ms, "tflops": tflops(2.0 * m * n * k, ms)}
            rows.write(ctx.stamp(row, ctx.clock.stop()))
            log(f"C {m}x{n}x{k}: zeros {row['zeros']['tflops']:.0f}, randn {row['randn']['tflops']:.0f} TFLOP/s")
    if "D-fp8" in parts:
        if ctx.capability < (8, 9):
            log(f"D-fp8 skipped: compute capability {ctx.capability[0]}.{ctx.capability[1]} has no FP8 tensor cores")
        elif not hasattr(torch, "_scaled_mm") or not hasattr(torch, "float8_e4m3fn"):
            log("D-fp8 skipped: this PyTorch has no torch._scaled_mm / float8_e4m3fn")
        else:
            for m, n, k in args.shapes or FP8_SHAPES:
                if stop():
                    return
                ctx.clock.start()
                a = torch.randn(m, k, device=dev, dtype=bf)
                bt = torch.randn(n, k, device=dev, dtype=bf)
                try:
                    fp8 = median_ms(fp8_gemm(a, bt), it, wu)
                except RuntimeError as e:
                    ctx.clock.stop()
                    log(f"D-fp8 {m}x{n}x{k}: torch._scaled_mm failed ({e}); skipping part D-fp8")
                    break
                b = bt.t().contiguous()
                bf16 = median_ms(lambda: torch.matmul(a, b), it, wu)
                flops = 2.0 * m * n * k
                row = {"part": "D-fp8", "m": m, "n": n, "k": k, "fp8_ms": fp8, "bf16_ms": bf16,
                       "fp8_tflops": tflops(flops, fp8), "bf16_tflops": tflops(flops, bf16)}
                rows.write(ctx.stamp(row, ctx.clock.stop()))
                log(f"D-fp8 {m}x{n}x{k}: fp8 {row['fp8_tflops']:.0f}, bf16 {row['bf16_tflops']:.0f} TFLOP/s")
    if "D-attn" in parts:
        for heads, seq in ATTN_GRID:
            if stop():
                return
            ctx.clock.start()
            fwd, bwd = attention_ms(ctx, 1, heads, seq, 128, True, it, wu)
            flops = 2.0 * 2.0 * seq * seq * 128 * heads / 2.0  # causal: half the score matrix
            row = {"part": "D-attn", "heads": heads, "seq": seq, "head_dim": 128, "fwd_ms": fwd, "bwd_ms": bwd,
                   "fwd_tflops": tflops(flops, fwd), "bwd_tflops": tflops(2.5 * flops, bwd), "sdpa_backend": "flash"}
            rows.write(ctx.stamp(row, ctx.clock.stop()))
            log(f"D-attn heads {heads} seq {seq}: fwd {row['fwd_tflops']:.0f}, bwd {row['bwd_tflops']:.0f} TFLOP/s")
    if "F" in parts:
        for tokens, hidden in F_SIZES:
            for op in F_OPS:
                if stop():
                    return
                ctx.clock.start()
                fwd, bwd = memory_op_ms(op, tokens, hidden, dev, it, wu)
                row = {"part": "F", "op": op, "tokens": tokens, "hidden": hidden, "dtype": "bf16",
                       "fwd_ms": fwd, "bwd_ms": bwd, "bytes_fwd": tokens * hidden * 2 * 2}
                rows.write(ctx.stamp(row, ctx.clock.stop()))
                log(f"F {op} {tokens}x{hidden}: fwd {fwd:.4f} ms, bwd {bwd:.4f} ms")
        for tokens, vocab in CE_SIZES:
            if stop():
                return
            ctx.clock.start()
            logits = torch.randn(tokens, vocab, device=dev, dtype=bf, requires_grad=True)
            target = torch.randint(0, vocab, (tokens,), device=dev)
            ce = lambda: F.cross_entropy(logits.float(), target)  # noqa: E731  (HF upcasts logits)
            fwd = fwd_only_ms(ce, it, wu)
            bwd = backward_ms(ce, (logits,), it, wu)
            row = {"part": "F", "op": "cross_entropy_fp32_upcast", "tokens": tokens, "vocab": vocab,
                   "fwd_ms": fwd, "bwd_ms": bwd}
            rows.write(ctx.stamp(row, ctx.clock.stop()))
            log(f"F cross_entropy {tokens}x{vocab}: fwd {fwd:.3f} ms, bwd {bwd:.3f} ms")


def memory_op_ms(op, tokens, hidden, dev, iters, warmup):
    """(fwd_ms, bwd_ms) of one memory-bound op over [tokens, hidden] bf16."""
    bf = torch.bfloat16
    x = torch.randn(tokens, hidden, device=dev, dtype=bf, requires_grad=True)
    inputs = [x]
    if op == "layer_norm":
        w = torch.randn(hidden, device=dev, dtype=bf, requires_grad=True)
        b = torch.randn(hidden, device=dev, dtype=bf, requires_grad=True)
        fn = lambda: F.layer_norm(x, (hidden,), w, b)  # noqa: E731
        inputs += [w, b]
    elif op == "rms_norm":
        w = torch.randn(hidden, device=dev, dtype=bf, requires_grad=True)
        fn = lambda: rms_norm(x, w)  # noqa: E731
        inputs += [w]
    elif op == "gelu_tanh":
        fn = lambda: F.gelu(x, approximate="tanh")  # noqa: E731
    elif op == "silu":
        fn = lambda: F.silu(x)  # noqa: E731
    elif op == "add":
        y = torch.randn(tokens, hidden, device=dev, dtype=bf, requires_grad=True)
        fn = lambda: x + y  # noqa: E731
        inputs += [y]
    elif op == "softmax":
        fn = lambda: F.softmax(x, dim=-1)  # noqa: E731
    elif op == "cast_to_fp32":
        fn = lambda: x.float()  # noqa: E731
    else:
        raise MeasureError(f"unknown memory op '{op}'")
    fwd = fwd_only_ms(fn, iters, warmup)
    bwd = backward_ms(fn, tuple(inputs), iters, warmup)
    return fwd, bwd


# ---- eager: part F-eager ---------------------------------------------------------------------------------
EAGER_SIZES = [(8192, 2048), (16384, 4096)]
EAGER_OPS = ("add", "mul_rowscale", "mul_colscale", "masked_fill_rows", "cast", "mul_mixed")


def eager_op(op, x, dev):
    """(fn, bytes read + written) of one eager elementwise op on x [T, H]:
    add (two contiguous operands, PyTorch's vectorized kernel), mul_rowscale
    (x * s[T, 1]: RMSNorm's rsqrt, the routing weights), mul_colscale (w[H] *
    x: a norm's weight), masked_fill_rows (a [T, 1] mask), cast (to the other
    of bf16 / fp32), mul_mixed (x * an operand of the other dtype: type
    promotion)."""
    T, H = x.shape
    eb = x.element_size()
    other = torch.float32 if x.dtype == torch.bfloat16 else torch.bfloat16
    ob = torch.empty((), dtype=other).element_size()
    wide = max(eb, ob)
    if op == "add":
        y = torch.randn_like(x)
        return (lambda: x + y), 3 * T * H * eb
    if op == "mul_rowscale":
        r = torch.randn(T, 1, device=dev, dtype=x.dtype)
        return (lambda: x * r), 2 * T * H * eb
    if op == "mul_colscale":
        w = torch.randn(H, device=dev, dtype=x.dtype)
        return (lambda: w * x), 2 * T * H * eb
    if op == "masked_fill_rows":
        m = torch.rand(T, 1, device=dev) < 0.01
        return (lambda: x.masked_fill(m, 0.0)), 2 * T * H * eb
    if op == "cast":
        return (lambda: x.to(other)), T * H * (eb + ob)
    if op == "mul_mixed":
        y = torch.randn(T, H, device=dev, dtype=other)
        return (lambda: x * y), T * H * (eb + ob + wide)
    raise MeasureError(f"unknown eager op '{op}'")


def cmd_eager(args, ctx, rows, budget):
    """Part F-eager: the paths PyTorch's eager elementwise ops take, forward
    only, at two sizes in bf16 and fp32: what a broadcast operand, a mask,
    a dtype conversion or a mixed-dtype operand costs beside a contiguous
    add of the same size."""
    dev = ctx.device
    for T, H in EAGER_SIZES:
        for dt in (torch.bfloat16, torch.float32):
            x = torch.randn(T, H, device=dev, dtype=dt)
            for op in EAGER_OPS:
                if budget.spent():
                    log("eager: budget spent")
                    return
                fn, nbytes = eager_op(op, x, dev)
                ctx.clock.start()
                ms = median_ms(fn, args.iters, args.warmup)
                row = {"part": "F-eager", "op": op, "tokens": T, "hidden": H,
                       "dtype": "bf16" if dt == torch.bfloat16 else "fp32", "fwd_ms": ms, "bytes": nbytes,
                       "elements": T * H, "tb_per_s": nbytes / (ms * 1e9), "gelem_per_ms": T * H / (ms * 1e9)}
                rows.write(ctx.stamp(row, ctx.clock.stop()))
                log(f"F-eager {op} {T}x{H} {row['dtype']}: {ms:.4f} ms, {row['tb_per_s']:.2f} TB/s")
            del x
            free_cuda()


# ---- attention-calibration ------------------------------------------------------------------------------
CAL_FORMAT = "trainsim-calibration"
CAL_KEY_ORDER = ("format", "version", "gpu", "generator", "notes", "clock_mhz", "reference", "gemm",
                 "attention", "attention_backend", "attention_clock_mhz", "memory")


def read_calibration(path, ctx):
    if not os.path.exists(path):
        log(f"attention-calibration: {path} does not exist; starting a new calibration file")
        return {"format": CAL_FORMAT, "version": 2, "gpu": ctx.gpu,
                "generator": "trainsim tools/measure/measure.py attention-calibration", "attention": []}
    try:
        with open(path) as f:
            d = json.load(f)
    except OSError as e:
        raise MeasureError(f"cannot read --calibration {path}: {e.strerror}")
    except json.JSONDecodeError as e:
        raise MeasureError(f"{path}:{e.lineno}:{e.colno}: not valid JSON: {e.msg}")
    if not isinstance(d, dict) or d.get("format") != CAL_FORMAT:
        raise MeasureError(f"{path}: not a {CAL_FORMAT} file (its \"format\" is {d.get('format')!r})"
                           if isinstance(d, dict) else f"{path}: not a {CAL_FORMAT} file")
    if d.get("version", 1) not in (1, 2, 3):
        raise MeasureError(f"{path}: {CAL_FORMAT} version {d.get('version')} is newer than this script (1 to 3)")
    if d.get("gpu") and d["gpu"] != ctx.gpu:
        log(f"attention-calibration: warning: {path} was measured on '{d['gpu']}', this GPU is '{ctx.gpu}'")
    if not isinstance(d.get("attention", []), list):
        raise MeasureError(f"{path}: \"attention\" must be an array")
    return d


def calibration_text(d):
    """The calibration file as tools/calibrate lays it out: one entry a line."""
    keys = [k for k in CAL_KEY_ORDER if k in d] + [k for k in d if k not in CAL_KEY_ORDER]
    lines = ["{"]
    for i, k in enumerate(keys):
        comma = "," if i + 1 < len(keys) else ""
        v = d[k]
        if isinstance(v, list) and v:
            lines.append(f"  {json.dumps(k)}: [")
            for j, e in enumerate(v):
                lines.append("    " + json.dumps(e, allow_nan=False) + ("," if j + 1 < len(v) else ""))
            lines.append("  ]" + comma)
        else:
            lines.append(f"  {json.dumps(k)}: {json.dumps(v, allow_nan=False)}{comma}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def write_atomic(path, text):
    tmp = f"{path}.tmp{os.getpid()}"
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise MeasureError(f"cannot write {path}: {e.strerror}")


def attention_grid(max_seq):
    """(seq, heads, d, causal), cheapest sequence first so a budget cuts the longest."""
    grid = []
    for seq in (512, 1024, 2048, 4096, 8192, 16384, 32768):
        if seq > max_seq:
            continue
        for heads in (8, 16, 32, 64):
            if heads * seq * seq > 64 * 16384 * 16384:  # at most ~9 TFLOP a forward
                continue
            for d in (128, 64):
                for causal in (True, False):
                    grid.append((seq, heads, d, causal))
    return grid


def attention_key(e):
    return (e.get("dtype", "bf16"), e.get("pass", "fwd"), e.get("batch", 1), e.get("heads"), e.get("sq"),
            e.get("sk"), e.get("d"), bool(e.get("causal", False)))


def cmd_attention_calibration(args, ctx, rows, budget):
    path = args.calibration
    d = read_calibration(path, ctx)
    old = [e for e in d.get("attention", []) if isinstance(e, dict)]
    new = []
    note = (f"attention: PyTorch {torch.__version__} SDPA {args.backend}, bf16, batch 1, backward alone, median of "
            f"{args.iters} after {args.warmup} warm-up, the GPU ahead of the host, by tools/measure/measure.py "
            f"attention-calibration")

    def save():
        keys = {attention_key(e) for e in new}
        d["attention"] = [e for e in old if attention_key(e) not in keys] + new
        # cuDNN attention is the fused attention the model describes
        d["attention_backend"] = "flash" if args.backend == "flash" else "default"
        mhz = ctx.clock.median()
        if mhz is not None:  # the attention entries' own clock (the GEMMs' is "clock_mhz")
            d["attention_clock_mhz"] = mhz
            d["version"] = max(2, d.get("version", 2))
        notes = d.get("notes")
        if not isinstance(notes, str) or not notes:
            d["notes"] = note
        elif note not in notes:
            d["notes"] = notes + "; " + note
        write_atomic(path, calibration_text(d))

    grid = attention_grid(args.max_seq)
    last_seq = None
    ctx.clock.start()
    for seq, heads, hd, causal in grid:
        if budget.spent():
            log(f"attention-calibration: budget of {budget.seconds:g} s spent after {len(new) // 2} of "
                f"{len(grid)} shapes")
            break
        if last_seq is not None and seq != last_seq and new:
            save()  # after each sequence length: a stopped run keeps what it measured
        last_seq = seq
        fwd, bwd = attention_ms(ctx, 1, heads, seq, hd, causal, args.iters, args.warmup, backend=args.backend)
        for pas, ms in (("fwd", fwd), ("bwd", bwd)):
            new.append({"dtype": "bf16", "pass": pas, "batch": 1, "heads": heads, "sq": seq, "sk": seq, "d": hd,
                        "causal": causal, "time_us": round(ms * 1000.0, 3)})
        log(f"attention heads {heads} seq {seq} d {hd} {'causal' if causal else 'full'}: "
            f"fwd {fwd * 1000:.1f} us, bwd {bwd * 1000:.1f} us")
        free_cuda()
    ctx.clock.stop()
    if not new:
        raise MeasureError("attention-calibration measured nothing (budget too small?)")
    save()
    log(f"attention-calibration: wrote {len(new)} attention entries to {path}")


# ---- batch ---------------------------------------------------------------------------------------------
class PowerSampler(NvmlSampler):
    """NVML's SM clock, board power and temperature every 0.1 s, with the
    time of each sample (none without NVML)."""

    def __init__(self, clock):
        super().__init__(clock.nv, clock.handle)

    def read(self):
        nv, h = self.nv, self.handle
        return (time.monotonic(), nv.nvmlDeviceGetClockInfo(h, nv.NVML_CLOCK_SM), nv.nvmlDeviceGetPowerUsage(h) / 1e3,
                nv.nvmlDeviceGetTemperature(h, nv.NVML_TEMPERATURE_GPU))

    def stop(self, since):
        """Medians (clock MHz, power W, temperature C) of the samples after `since`."""
        self.halt()
        late = [s for s in self.samples if s[0] >= since]
        if not late:
            return None, None, None
        return tuple(float(statistics.median(s[i] for s in late)) for i in (1, 2, 3))


def cmd_power(args, ctx, rows, budget):
    """Part G-power: the SM clock and board power a GPU holds when one large
    GEMM alternates with memory-bound kernels (an fp32 add streaming three
    256 MB tensors), at each GEMM duty (share of the GPU's busy time in the
    GEMM), each for --seconds; figures are the medians of the second half."""
    if ctx.clock.nv is None:
        raise MeasureError(f"power needs NVML ({ctx.clock.why})")
    m, n, k = args.gemm
    duties = args.duties
    dev = ctx.device
    bf = torch.bfloat16
    if args.dtype == "fp8":
        if ctx.capability < (8, 9) or not hasattr(torch, "_scaled_mm"):
            raise MeasureError("power --dtype fp8 needs FP8 tensor cores and torch._scaled_mm")
        gemm = fp8_gemm(torch.randn(m, k, device=dev, dtype=bf), torch.randn(n, k, device=dev, dtype=bf))
    else:
        a = torch.randn(m, k, device=dev, dtype=bf)
        b = torch.randn(k, n, device=dev, dtype=bf)
        c = torch.empty(m, n, device=dev, dtype=bf)

        def gemm():
            torch.mm(a, b, out=c)
    el = 64 * 2**20
    x, y, z = (torch.randn(el, device=dev) for _ in range(3))

    def mem():
        torch.add(x, y, out=z)

    tg = statistics.median(time_ms(gemm, 20, 5))
    tm = statistics.median(time_ms(mem, 20, 5))
    sampler = PowerSampler(ctx.clock)
    for d in duties:
        if budget.spent():
            log(f"power: budget spent, duty {d:g} and later not run")
            break
        ng = 1 if d > 0 else 0
        nm = 0 if d >= 1 else (max(1, round(tg * (1 - d) / (d * tm))) if d > 0 else 1)
        sampler.start()
        t0 = time.monotonic()
        half = t0 + args.seconds / 2
        ev, it = [], 0
        while time.monotonic() - t0 < args.seconds:
            timed = it % 8 == 0 and time.monotonic() >= half
            if timed:
                e = [torch.cuda.Event(enable_timing=True) for _ in range(3)]
                e[0].record()
            for _ in range(ng):
                gemm()
            if timed:
                e[1].record()
            for _ in range(nm):
                mem()
            if timed:
                e[2].record()
                ev.append(e)
            it += 1
            if it % 4 == 0:
                torch.cuda.synchronize()  # keep the host within a few iterations of the GPU
        torch.cuda.synchronize()
        mhz, watts, temp = sampler.stop(half)
        g = statistics.median(e[0].elapsed_time(e[1]) for e in ev) if ev and ng else 0.0
        mm = statistics.median(e[1].elapsed_time(e[2]) for e in ev) if ev and nm else 0.0
        row = {
            "part": "G-power",
            "duty_target": d,
            "duty": g / (g + mm) if g + mm > 0 else 0.0,
            "gemm": f"{m}x{n}x{k}",
            "dtype": args.dtype,
            "gemms_per_iter": ng,
            "mem_kernels_per_iter": nm,
            "mem_kernel": "fp32 add, 3 x 256 MB",
            "seconds": args.seconds,
            "gemm_ms_steady": g,
            "gemm_tflops_steady": 2.0 * m * n * k / (g * 1e9) if g > 0 else None,
            "mem_gbps_steady": nm * 3 * 4 * el / (mm * 1e6) if mm > 0 else None,
            "clock_mhz_steady": mhz,
            "power_w_steady": watts,
            "temp_c_steady": temp,
            "power_limit_w": ctx.clock.nv.nvmlDeviceGetEnforcedPowerLimit(ctx.clock.handle) / 1e3,
        }
        rows.write(ctx.stamp(row, mhz))
        log(f"power {args.dtype}: duty {row['duty']:.2f} ({ng} GEMM + {nm} adds): {mhz} MHz, {watts} W, "
            f"GEMM {row['gemm_tflops_steady'] or 0:.0f} TFLOP/s, adds {row['mem_gbps_steady'] or 0:.0f} GB/s")


def cmd_batch(args, ctx, rows, budget, parser):
    try:
        with open(args.file) as f:
            lines = f.readlines()
    except OSError as e:
        raise MeasureError(f"cannot read batch file {args.file}: {e.strerror}")
    jobs = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            words = shlex.split(line)
        except ValueError as e:
            raise MeasureError(f"{args.file}:{n}: {e}")
        if words and words[0] == "batch":
            raise MeasureError(f"{args.file}:{n}: a batch file cannot run 'batch'")
        jobs.append((n, words))
    failed = 0
    for n, words in jobs:
        if budget.spent():
            log(f"batch: budget of {budget.seconds:g} s spent; {args.file}:{n} and later lines not run")
            break
        log(f"batch: {args.file}:{n}: {' '.join(words)}")
        try:
            sub = parser.parse_args(words)
        except SystemExit:
            log(f"batch: {args.file}:{n}: bad arguments, skipped")
            failed += 1
            continue
        if sub.out is None:
            sub.out = args.out
        left = budget.left()
        if not math.isinf(left):  # no line outlives the batch's budget
            sub.budget_s = max(0.0, min(sub.budget_s or left, left))
        try:
            run_command(sub, ctx, parser)
        except MeasureError as e:
            log(f"batch: {args.file}:{n}: error: {e}")
            failed += 1
        except torch.cuda.OutOfMemoryError as e:
            log(f"batch: {args.file}:{n}: out of GPU memory: {str(e).splitlines()[0]}")
            failed += 1
        except Exception:  # report and go on with the next line
            log(f"batch: {args.file}:{n}: failed:\n{traceback.format_exc()}")
            failed += 1
        free_cuda()
    if failed:
        raise MeasureError(f"batch: {failed} line(s) of {args.file} failed")


# ---- command line ----------------------------------------------------------------------------------------
def positive_int(s):
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{s}' is not a whole number")
    if v < 1:
        raise argparse.ArgumentTypeError(f"{v} must be at least 1")
    return v


def probability(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{s}' is not a number")
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"{s} must be at least 0 and below 1")
    return v


def positive_float(s):
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{s}' is not a number")
    if not v > 0 or math.isinf(v):
        raise argparse.ArgumentTypeError(f"{s} must be a positive number")
    return v


def gemm_shape(s):
    try:
        m, n, k = (int(v) for v in s.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{s}' is not MxNxK, e.g. 8192x7168x8192")
    if min(m, n, k) < 1:
        raise argparse.ArgumentTypeError(f"'{s}': every dimension must be at least 1")
    return m, n, k


def gemm_shapes(s):
    shapes = [gemm_shape(v) for v in s.split(",") if v.strip()]
    if not shapes:
        raise argparse.ArgumentTypeError("no GEMM shape given, e.g. 16384x131072x2048,16384x2048x131072")
    return shapes


def duty_list(s):
    out = []
    for v in s.split(","):
        try:
            d = float(v)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{v}' is not a number (a GEMM share of the busy time, 0 to 1)")
        if not 0 <= d <= 1:
            raise argparse.ArgumentTypeError(f"{d:g} is not between 0 and 1")
        out.append(d)
    return out


def make_parser():
    p = argparse.ArgumentParser(
        prog="measure.py",
        description="Time training work on this GPU and write trainsim measurement rows (JSON lines).",
        epilog="docs/measure.md describes every row and field.",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    def common(sp, iters, warmup):
        sp.add_argument("--out", help="append the JSON lines to FILE (default: stdout)", metavar="FILE")
        sp.add_argument("--budget-s", type=positive_float, metavar="S",
                        help="start no new row after S seconds of wall time")
        if iters:
            sp.add_argument("--iters", type=positive_int, default=iters, metavar="N",
                            help=f"timed repetitions per figure, median kept (default {iters})")
        sp.add_argument("--warmup", type=positive_int, default=warmup, metavar="N",
                        help=f"untimed runs first (default {warmup})")

    s = sub.add_parser("step", help="part A/E: one training step of a HuggingFace model")
    src = s.add_mutually_exclusive_group()
    src.add_argument("--config", metavar="FILE.json", help="a HuggingFace config.json")
    src.add_argument("--preset", metavar="NAME",
                     help="built-in config: " + ", ".join(list(GPT2_PRESETS) + list(BERT_PRESETS)))
    s.add_argument("--name", help="the row's model name (default: the preset or the config's file name)")
    s.add_argument("--micro-batch", type=positive_int, required=True, metavar="B")
    s.add_argument("--seq", type=positive_int, required=True, metavar="S")
    s.add_argument("--precision", choices=("amp", "pure"), required=True,
                   help="amp: fp32 weights under bf16 autocast; pure: all bf16")
    s.add_argument("--steps", type=positive_int, default=10, metavar="N", help="timed steps (default 10)")
    s.add_argument("--profile", action="store_true",
                   help="then one step under torch.profiler: GPU time per ATen op in the row's \"profile\"")
    common(s, None, 3)

    s = sub.add_parser("host", help="part H-host: the host's time to dispatch a loop of tiny eager linears")
    common(s, 10, 3)

    s = sub.add_parser("shard", help="part B: every kernel of one Megatron layer shard")
    s.add_argument("--hidden", type=positive_int, required=True, metavar="H")
    s.add_argument("--heads", type=positive_int, required=True, metavar="A")
    s.add_argument("--kv-heads", type=positive_int, metavar="K", help="key/value heads (default: --heads)")
    s.add_argument("--head-dim", type=positive_int, metavar="D", help="default hidden / heads")
    s.add_argument("--ffn", type=positive_int, required=True, metavar="F", help="FFN width of the whole layer")
    s.add_argument("--tp", type=positive_int, required=True, metavar="T")
    s.add_argument("--seq", type=positive_int, required=True, metavar="S")
    s.add_argument("--micro-batch", type=positive_int, required=True, metavar="B")
    s.add_argument("--gated", action="store_true", help="SwiGLU FFN (FC1 is 2F wide) instead of GELU")
    s.add_argument("--norm", choices=("layer", "rms"), help="default rms when --gated, else layer")
    s.add_argument("--name", help="the row's shard name, e.g. llama2-7b_tp1")
    timing = s.add_mutually_exclusive_group()  # two ways to time the ops back to back
    timing.add_argument("--sustained", type=positive_float, metavar="SECONDS",
                        help="time each op back to back for SECONDS (its GEMMs at the power cap) instead of "
                             "--iters single runs; the row gets each op's SM clock (ops_clock_mhz)")
    timing.add_argument("--in-layer", type=positive_float, metavar="SECONDS",
                        help="run the layer's ops in training order, the whole layer over and over for "
                             "SECONDS (one clock for the layer's mix, as in training); each op's time from "
                             "the second half")
    timing.add_argument("--host-in-loop", action="store_true",
                        help="time each op alone with the GPU idle while the host dispatches it (the dispatch "
                             "inside the timed interval, as harnesses without a spin kernel time it)")
    common(s, 20, 5)

    s = sub.add_parser("kernels", help="parts C, D-fp8, D-attn, F: single kernels")
    s.add_argument("--parts", default=",".join(KERNEL_PARTS), metavar="LIST",
                   help="comma-separated subset of " + ",".join(KERNEL_PARTS))
    s.add_argument("--shapes", type=gemm_shapes, metavar="LIST",
                   help="GEMMs of parts C and D-fp8 as MxNxK, comma-separated (default: the built-in grid)")
    common(s, 20, 5)

    s = sub.add_parser("attn", help="part D-attn: SDPA's attention core at one shape, forward and backward")
    s.add_argument("--batch", type=positive_int, default=1, metavar="B")
    s.add_argument("--heads", type=positive_int, required=True, metavar="H")
    s.add_argument("--seq", type=positive_int, required=True, metavar="S")
    s.add_argument("--head-dim", type=positive_int, default=128, metavar="D")
    s.add_argument("--full", action="store_true", help="no causal mask (encoders)")
    s.add_argument("--dropout", type=probability, default=0.0, metavar="P",
                   help="dropout on the attention probabilities (GPT-2's and BERT's 0.1; default 0)")
    s.add_argument("--backend", choices=("cudnn", "flash", "default"), default="cudnn",
                   help="SDPA backend (default cudnn; default: PyTorch's own choice)")
    common(s, 20, 5)

    s = sub.add_parser("attention-calibration", help="write the attention table of a trainsim-calibration file")
    s.add_argument("--calibration", required=True, metavar="FILE",
                   help="calibration file to add to (created when missing)")
    s.add_argument("--max-seq", type=positive_int, default=32768, metavar="S", help="longest sequence (default 32768)")
    s.add_argument("--backend", choices=("cudnn", "flash"), default="cudnn",
                   help="SDPA backend timed (default cudnn: what training steps run on Hopper)")
    common(s, 10, 3)

    s = sub.add_parser("eager", help="part F-eager: eager elementwise kernels by the path PyTorch takes")
    common(s, 20, 5)

    s = sub.add_parser("power", help="part G-power: SM clock and board power at each GEMM duty")
    s.add_argument("--gemm", type=gemm_shape, default="8192x7168x8192", metavar="MxNxK",
                   help="the GEMM (default 8192x7168x8192)")
    s.add_argument("--duties", type=duty_list, default="1,0.8,0.6,0.4,0.2,0", metavar="LIST",
                   help="GEMM shares of the busy time, comma-separated (default 1,0.8,0.6,0.4,0.2,0)")
    s.add_argument("--seconds", type=positive_float, default=8.0, metavar="S", help="seconds per duty (default 8)")
    s.add_argument("--dtype", choices=("bf16", "fp8"), default="bf16",
                   help="the GEMM's type: bf16 (torch.mm) or fp8 e4m3 (torch._scaled_mm, bf16 out)")
    common(s, None, 0)

    s = sub.add_parser("batch", help="run the subcommands in FILE (one a line) in one process")
    s.add_argument("file", metavar="FILE")
    s.add_argument("--out", help="default --out of the lines that have none", metavar="FILE")
    s.add_argument("--budget-s", type=positive_float, metavar="S", help="start no new line after S seconds")
    return p


def run_command(args, ctx, parser):
    budget = Budget(args.budget_s)
    rows = Rows(args.out)
    try:
        if args.command == "step":
            cmd_step(args, ctx, rows, budget)
        elif args.command == "shard":
            cmd_shard(args, ctx, rows, budget)
        elif args.command == "kernels":
            cmd_kernels(args, ctx, rows, budget)
        elif args.command == "attn":
            cmd_attn(args, ctx, rows, budget)
        elif args.command == "attention-calibration":
            cmd_attention_calibration(args, ctx, rows, budget)
        elif args.command == "eager":
            cmd_eager(args, ctx, rows, budget)
        elif args.command == "power":
            cmd_power(args, ctx, rows, budget)
        elif args.command == "host":
            cmd_host(args, ctx, rows, budget)
        elif args.command == "batch":
            cmd_batch(args, ctx, rows, budget, parser)
    finally:
        rows.close()
        free_cuda()  # the command's tensors and models are gone with its frame


def main(argv=None):
    global torch, F
    parser = make_parser()
    args = parser.parse_args(argv)
    if not args.command:
        parser.print_help(sys.stderr)
        return 2
    # `timeout` and job control send SIGTERM: unwind (temp files removed, rows closed)
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    # Kineto leaves CUPTI attached after a torch.profiler session unless
    # TEARDOWN_CUPTI=1 (pytorch/pytorch#144455: training 10-20 % slower after
    # profiling): in a batch, every line after a --profile line would be timed
    # with its per-launch callbacks
    os.environ.setdefault("TEARDOWN_CUPTI", "1")
    try:
        import torch as torch_module
        import torch.nn.functional as functional
    except ImportError as e:
        log(f"measure.py: error: PyTorch is needed ({e}); trainsim itself does not need it")
        return 1
    torch, F = torch_module, functional
    try:
        ctx = Context()
        run_command(args, ctx, parser)
    except MeasureError as e:
        log(f"measure.py: error: {e}")
        return 1
    except torch.cuda.OutOfMemoryError as e:
        log(f"measure.py: error: out of GPU memory: {str(e).splitlines()[0]}")
        return 1
    except ImportError as e:
        log(f"measure.py: error: {e} (step needs transformers)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
