"""The triton family's testbed: one MoE problem run the way vLLM runs it, through vLLM's own kernel
(moetune.engines.vllm_triton), checked against a reference and timed.

Modes: "cuda" (compiled Triton on GPU 0) or "interpreter" (TRITON_INTERPRET=1 on the CPU: Triton
runs each program in numpy; chosen when the environment sets it or no GPU is visible, and fixed
for the process, since Triton reads it when the kernel is decorated).

  prepare  x ~ N(0,1) [M, K] bf16 from the seed, then the layer (triton_layers: bf16 weights,
           or for quant fp8_block / fp8_tensor e4m3 weights with their scales, vLLM's layer on
           them, and its reference: fp64 on the CPU, fp32 per expert on the GPU); routing from
           the profile (same kinds as core/routing.hpp, drawn with torch's generator: the same
           distributions, not the C++ workers' bits).
  run      vLLM's layer for one row: align (vLLM's wrapper, computed once per BLOCK_SIZE_M and
           kept out of the timings, as the anchors time vLLM), GEMM1, activation, GEMM2 with the
           routed weights, top-k sum.
  check    one run with the intermediate buffers poisoned (NaN), compared with the reference
           (first_bad past triton_layers.tolerance, the tuner gate's); digest = FNV-1a of
           the output's bits (the winner's recheck compares it).
  time     interpreter: wall time per run; cuda: one CUDA graph of the run, replayed `reps`
           times with L2 flushed before each replay, CUDA events around each replay.
  compile  cuda: vLLM's two launches traced with warmup=True, their specializations compiled in
           a pool of processes (triton_pool) into Triton's cache, from which the row's first
           launch loads them; the interpreter has nothing to compile.
"""

import math
import os
import sys
import time

import torch

from . import triton_layers, triton_rules

kFlushFactor = 2  # the L2 flush writes this many times the L2's size


class Failure(Exception):
    """A request's failure class (a tuner Outcome name) and why."""

    def __init__(self, outcome, message):
        super().__init__(message)
        self.outcome = outcome
        self.message = message


def fnv1a(data):
    """core's fnv1a_digest: 16 hex digits of FNV-1a 64 over the bytes."""
    h = 0xcbf29ce484222325
    for b in data:
        h = ((h ^ b) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
    return f"{h:016x}"


def _digest(out):
    """16 hex digits of the output's bits: FNV-1a (core's) for small outputs; for large ones a
    linear hash on the device, sum_i (bits_i + 2^16) * (i + 1) * 0x9E3779B97F4A7C15 mod 2^64
    (integer sums are exact in any order, so equal bits give equal digests)."""
    bits = out.detach().contiguous().view(torch.int16).flatten()
    if bits.numel() <= 1 << 15:
        return fnv1a(bits.cpu().numpy().tobytes())
    golden = -0x61C8864680B583EB  # 0x9E3779B97F4A7C15 as a signed 64-bit integer
    total = torch.zeros((), dtype=torch.int64, device=bits.device)
    step = 1 << 24
    for start in range(0, bits.numel(), step):
        chunk = bits[start:start + step].to(torch.int64) + 65536
        index = torch.arange(start + 1, start + 1 + chunk.numel(), dtype=torch.int64,
                             device=bits.device)
        total += (chunk * (index * golden)).sum()  # wraps mod 2^64, as intended
    return "h" + f"{int(total) & 0xFFFFFFFFFFFFFFFF:016x}"[1:]


def make_routing(profile, M, E, top_k, device):
    """topk_ids [M, top_k] int32 and topk_weights [M, top_k] fp32 (softmax probabilities of the
    chosen experts, not renormalised) for a core RoutingProfile JSON object."""
    kind = profile.get("kind", "uniform")
    g = torch.Generator().manual_seed(int(profile.get("seed", 0)))
    probs = torch.softmax(torch.randn(M, E, generator=g, dtype=torch.float64), dim=-1)
    if kind == "uniform":
        ids = torch.topk(probs, top_k, dim=-1).indices
    elif kind == "balanced":
        ids = (torch.arange(M * top_k) % E).view(M, top_k)
    elif kind == "single_expert":
        forced = probs.clone()
        forced[:, 0] = 2.0
        ids = torch.topk(forced, top_k, dim=-1).indices
    elif kind == "zipf":
        w = 1.0 / torch.arange(1, E + 1, dtype=torch.float64) ** float(profile.get("zipf_s", 1.2))
        ids = torch.multinomial(w.expand(M, E), top_k, replacement=False, generator=g)
    elif kind == "block_permutation":
        block = int(profile.get("block", 64))
        perms = [torch.randperm(E, generator=g)[:top_k] for _ in range(max(1, -(-M // block)))]
        ids = torch.stack([perms[t // block] for t in range(M)]) if M else \
            torch.zeros(0, top_k, dtype=torch.long)
    elif kind == "trace":
        ids = _trace_ids(profile.get("trace_path", ""), M, E, top_k)
    else:
        raise Failure("launch_failed", f"routing kind '{kind}' is not known to the triton worker")
    weights = probs.gather(1, ids.long())
    return (ids.to(torch.int32).contiguous().to(device),
            weights.to(torch.float32).contiguous().to(device))


def _trace_ids(path, M, E, top_k):
    import json

    with open(path) as f:
        text = f.read()
    rows = json.loads(text) if text.lstrip().startswith("[") else \
        [[int(v) for v in line.split()] for line in text.splitlines() if line.strip()]
    if not rows:
        raise Failure("launch_failed", f"{path}: an empty routing trace")
    for i, row in enumerate(rows):
        if len(row) != top_k or len(set(row)) != top_k or max(row) >= E or min(row) < 0:
            raise Failure("launch_failed", f"{path}: row {i} is {row}; expected {top_k} distinct "
                          f"expert ids below E={E}")
    return torch.tensor([rows[t % len(rows)] for t in range(M)], dtype=torch.long)


class Testbed:
    """One problem at a time; see the module docstring."""

    def __init__(self, interpret):
        self.interpret = interpret
        self.device = "cpu" if interpret else "cuda"
        self.engine = None
        self.data = None
        self.problem = None
        self._assignments = {}  # BLOCK_SIZE_M -> vLLM's Prepared
        self._pool = None  # triton_pool.CompilePool (cuda), started by load()
        self._pending = {}  # short(row) -> (row, [Future]): its launches in the pool
        # rows loaded after their compile, and the seconds checks waited for them (and loading)
        self.compile_stats = {"rows": 0, "wait_s": 0.0}

    # ---- setup ----

    def load(self):
        from moetune.engines import vllm_triton

        self.engine = vllm_triton.load()
        if not self.interpret and self._pool is None:  # its children load while the tuner plans
            from triton.runtime import driver

            from . import triton_pool

            t = driver.active.get_current_target()
            self._pool = triton_pool.CompilePool(self.engine.engine_dir,
                                                 (t.backend, t.arch, t.warp_size))
        return self.engine

    def smem_limit(self):
        """The device's shared memory per block (None in the interpreter: the arch's rule)."""
        if self.interpret:
            return None
        return torch.cuda.get_device_properties(0).shared_memory_per_block_optin

    def default_row(self, problem):
        """What vLLM runs at M = num_tokens without our table: on the GPU, the row nearest M of
        the file it reads for this E, I, GPU, dtype and block shape (VLLM_TUNED_CONFIG_FOLDER's,
        else the one it ships; fp8: dtype=fp8_w8a8[,block_shape=[128,128]]) when there is one;
        else, and in the interpreter, get_default_config for that dtype and block shape."""
        from moetune.engines import vllm_triton

        p, quant = problem, triton_rules.quant(problem)
        E, K, I = p["num_experts"], p["hidden_size"], p["intermediate_size"]
        device_name = capability = None
        if not self.interpret:
            device_name = torch.cuda.get_device_name(0)
            capability = torch.cuda.get_device_capability(0)
        block = [triton_rules.kFp8Group] * 2 if quant == "fp8_block" else None
        row = vllm_triton.engine_config(
            self.engine, (E, triton_rules.gemm1_n(p), K), (E, K, I), p["top_k"], p["num_tokens"],
            device_name=device_name, capability=capability,
            dtype=None if quant == "none" else "fp8_w8a8", block_shape=block).config
        # VLLM_BATCH_INVARIANT leaves warps and stages to Triton's defaults (4 and 3).
        return {f: row.get(f, {"num_warps": 4, "num_stages": 3}.get(f)) for f in
                triton_rules.ROW_FIELDS}

    def prepare(self, problem, routing, seed):
        self.stop()
        self.data, self.problem, self._assignments = None, None, {}
        reason = triton_rules.unsupported_problem(problem)
        if reason:
            raise Failure("launch_failed", reason)
        M, K = problem["num_tokens"], problem["hidden_size"]
        g = torch.Generator(device=self.device).manual_seed(int(seed))
        x = torch.randn(M, K, generator=g, device=self.device).to(torch.bfloat16)
        ids, tw = make_routing(routing, M, problem["num_experts"], problem["top_k"], self.device)
        fp8 = triton_rules.quant(problem) != "none"
        make = triton_layers.fp8_layer if fp8 else triton_layers.bf16_layer
        layer, ref = make(problem, x, tw, ids, g, self.engine, self._dt())
        self.data = dict(x=x, tw=tw, ids=ids, layer=layer, ref=ref,
                         ref_norm=float(ref.double().norm()))
        self.problem = problem

    def _dt(self):
        """The reference's dtype: fp64 on the CPU, fp32 on the GPU (fp64 matmuls are slow there)."""
        return torch.float64 if self.interpret else torch.float32

    def _need(self):
        if self.data is None:
            raise Failure("launch_failed", "no prepare before this request")
        return self.data

    def _assignment(self, row):
        """vLLM's expert assignment for the row (align once per BLOCK_SIZE_M), carrying the row."""
        d = self._need()
        bm = row["BLOCK_SIZE_M"]
        if bm not in self._assignments:
            self._assignments[bm] = d["layer"].prepare(d["ids"], config=row)
        return self._assignments[bm]._replace(config=dict(row))

    def _run(self, row, poison=None):
        d = self._need()
        return d["layer"].run(d["x"], d["tw"], d["ids"], self._assignment(row), poison=poison)

    # ---- compile ----

    def _trace(self, row, hook=None):
        """vLLM's two launches for row with warmup=True, without running them: each is compiled
        (or found in Triton's caches) or, with hook as Triton's jit_cache_hook, handed to it."""
        from triton import knobs

        eng = self.engine
        real = eng.fused_moe_kernel

        class Warm:
            def __getitem__(self, grid):
                def launch(*args, **kwargs):
                    real.run(*args, grid=grid, warmup=True, **kwargs)
                return launch

        eng.fused_moe_kernel = Warm()
        knobs.runtime.jit_cache_hook = hook
        try:
            self._run(row)
        finally:
            eng.fused_moe_kernel = real
            knobs.runtime.jit_cache_hook = None

    def compile(self, rows):
        """Compiles rows now, together; one Failure or None per row."""
        keys = self._start(rows)
        return [self._finish(key) for key in keys]

    def compile_in_background(self, rows):
        """Starts compiling rows; a row's check waits for its own (wait_for)."""
        self._start(rows)

    def _start(self, rows):
        """Hands each row's launches not compiled yet to the compiler processes (triton_pool);
        a launch Triton's frontend refuses is that row's failure at once."""
        keys = [triton_rules.short(r) for r in rows]
        if self.interpret:
            return keys
        if self._pool is None:
            self.load()
        for key, row in zip(keys, rows):
            if key in self._pending:
                continue
            specs = []
            try:
                def record(**kw):
                    specs.append(kw["compile"]["specialization_data"])
                    return True  # compiled by the pool, not here

                self._trace(row, record)
                futures = [self._pool.submit(s) for s in specs]
            except Exception as e:  # noqa: BLE001  (a frontend error is this row's own)
                futures = [e]
            self._pending[key] = (row, futures)
        return keys

    def _finish(self, key):
        """Waits for key's kernels, then loads them from Triton's cache into vLLM's kernel (a
        launch the processes did not compile is compiled here); its Failure or None."""
        row, futures = self._pending.pop(key, (None, []))
        started = time.perf_counter()
        try:
            for item in futures:
                if isinstance(item, Exception):
                    raise item
                item.result()
            if row is not None:
                self._trace(row)
                self.compile_stats["rows"] += 1
                self.compile_stats["wait_s"] += time.perf_counter() - started
        except Exception as e:  # noqa: BLE001
            return Failure("compile_failed", f"{type(e).__name__}: {e}"[:2000])
        return None

    def wait_for(self, row):
        """Compiles row (if no background compile has) and loads it; raises its Failure."""
        key = triton_rules.short(row)
        if key not in self._pending:
            self._start([row])
        failure = self._finish(key)
        if failure is not None:
            raise failure

    def stop(self):
        """Cancels compiles not started yet and waits for the running ones (no timing shares
        the host with a compile); a row that lost a compile starts again when it is needed."""
        lost = set()
        for key, (_, futures) in self._pending.items():
            for f in futures:
                if not isinstance(f, Exception) and f.cancel():
                    lost.add(key)
        for _, futures in self._pending.values():
            for f in futures:
                if not isinstance(f, Exception) and not f.cancelled():
                    f.exception()  # waits; a failure stays for the row's check
        for key in lost:
            del self._pending[key]
        stats = self.compile_stats
        if stats["rows"]:  # on the tuner's stderr: where a tune's time goes
            print(f"triton worker: {stats['rows']} configs compiled by {self._pool.processes} "
                  f"processes; their checks waited {stats['wait_s']:.1f} s for the compiles",
                  file=sys.stderr, flush=True)
            self.compile_stats = {"rows": 0, "wait_s": 0.0}

    # ---- check and time ----

    def check(self, row, corrupt=None):
        """The gate's inputs for one run of row; corrupt "wrong" / "nan" writes 1e4 / NaN into
        output element 0 after the run (test only: the gate must catch it)."""
        d = self._need()
        if not self.interpret:
            self.wait_for(row)
        out = self._run(row, poison=float("nan"))
        if corrupt == "wrong":
            out.view(-1)[0] = 1.0e4
        elif corrupt == "nan":
            out.view(-1)[0] = float("nan")
        if not self.interpret:
            torch.cuda.synchronize()
        flat = out.double().flatten()
        finite = torch.isfinite(flat)
        all_finite = bool(finite.all())
        first_bad = -1
        if not all_finite:
            first_bad = int((~finite).nonzero()[0])
            rel = math.inf
        else:
            err = flat - d["ref"].double().flatten()
            norm = d["ref_norm"]
            rel = float(err.norm()) / norm if norm > 0 else (0.0 if float(err.norm()) == 0 else
                                                             math.inf)
            if rel > triton_layers.tolerance(triton_rules.quant(self.problem)):
                first_bad = int(err.abs().argmax())
        return {"rel_l2_error": rel, "all_finite": all_finite, "all_written": all_finite,
                "digest": _digest(out), "first_bad": first_bad}

    def time(self, row, warmup, reps):
        """Samples in microseconds, one per run (see the module docstring)."""
        if self.interpret:
            for _ in range(warmup):
                self._run(row)
            samples = []
            for _ in range(reps):
                t0 = time.perf_counter()
                self._run(row)
                samples.append((time.perf_counter() - t0) * 1e6)
            return samples
        self.wait_for(row)
        self._run(row)  # compiled and loaded before the capture
        torch.cuda.synchronize()
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            self._run(row)
        l2 = torch.cuda.get_device_properties(0).L2_cache_size
        flush = torch.empty(kFlushFactor * l2, dtype=torch.uint8, device="cuda")
        for _ in range(warmup):
            graph.replay()
        events = []
        for _ in range(reps):
            flush.zero_()
            start, end = (torch.cuda.Event(enable_timing=True) for _ in range(2))
            start.record()
            graph.replay()
            end.record()
            events.append((start, end))
        torch.cuda.synchronize()
        samples = [s.elapsed_time(e) * 1e3 for s, e in events]
        del graph
        return samples
