"""The triton family's tuner worker: vLLM's own Triton fused-MoE kernel behind the worker protocol.

    moetune worker --backend triton   (what `moetune tune` starts) execs
    python3 -m moetune.tuner.triton_worker --fd-in 3 --fd-out 4

One JSON object per line each way, as src/tuner/protocol.hpp documents (hello, space, feasible,
prepare, precompile, check, time, quit); the parent (isolation, timeouts, outcomes, store,
statistics, selection, tables) is the same as for the C++ families. Answers:
  hello      backend "triton", family "triton_vllm" (triton_rules), the device: the GPU, or
             "cpu: <model> (Triton <version> interpreter)" under TRITON_INTERPRET=1 or without one;
  space      default_config = what vLLM runs without our table (Testbed.default_row: on the GPU
             the row of the file vLLM reads for this shape, GPU, dtype and block shape, when it
             has one, else its get_default_config), which is the search's incumbent when the
             table has no row; configs = triton_rules.space (joint: vLLM reads one row for both
             GEMMs, so no per-GEMM spaces);
  feasible   triton_rules.feasible against the device's shared memory per block;
  prepare / precompile / check / time   triton_testbed.Testbed (bf16 problems, and fp8 w8a8
             ones, problem "quant" fp8_block or fp8_tensor: triton_layers).
Test-only faults (--inject-fault) act as in src/tuner/worker_main.cpp: compile, launch, oom answer
that outcome; crash raises SIGSEGV in this process; hang sleeps forever; wrong, nan corrupt the
real output before the comparison (and report timings 100x faster).
"""

import argparse
import json
import math
import os
import signal
import sys
import time

PROTOCOL_VERSION = 3  # tuner::kProtocolVersion
FAULTS = ("compile", "launch", "crash", "wrong", "nan", "hang", "oom")


def _injected(fault):
    return f"injected {fault} fault (test-only --inject-fault)"


def _finite(v):
    """JSON as core's json_double writes it: non-finite numbers become null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _finite(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_finite(x) for x in v]
    return v


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


class Worker:
    def __init__(self, interpret):
        from . import triton_rules, triton_testbed

        self.rules, self.tb = triton_rules, triton_testbed
        self.bed = triton_testbed.Testbed(interpret)

    def device(self):
        import torch
        import triton

        if self.bed.interpret:
            return {"name": f"cpu: {_cpu_model()} (Triton {triton.__version__} interpreter)",
                    "arch": "cpu", "sm_count": os.cpu_count() or 1, "driver": "",
                    "toolchain": f"triton {triton.__version__} interpreter", "l2_bytes": 0,
                    "smem_per_block_bytes": 0}
        props = torch.cuda.get_device_properties(0)
        arch = f"sm_{props.major}{props.minor}" + ("a" if props.major == 9 else "")
        return {"name": props.name, "arch": arch, "sm_count": props.multi_processor_count,
                "driver": "", "toolchain": f"triton {triton.__version__}",
                "l2_bytes": props.L2_cache_size,
                "smem_per_block_bytes": props.shared_memory_per_block_optin}

    # ---- one request ----

    def answer(self, req):
        op = req.get("op")
        rules, bed = self.rules, self.bed
        if op != "check" and not (op == "precompile" and req.get("background")):
            bed.stop()  # only a check runs beside a background compile
        if op == "hello":
            bed.load()
            return {"protocol_version": PROTOCOL_VERSION, "backend": rules.BACKEND,
                    "family": rules.FAMILY, "family_version": rules.FAMILY_VERSION,
                    "device": self.device()}
        if op == "space":
            problem = req["problem"]
            if bed.interpret and problem.get("arch") != "cpu":
                raise self.tb.Failure(
                    "launch_failed", f"problem.arch = {problem.get('arch')} is a GPU's, but this "
                    "worker runs Triton's interpreter (no GPU visible, or TRITON_INTERPRET=1); "
                    "tune it on that GPU, or give the recipe arch cpu (recipes/demo-triton.json)")
            default = bed.default_row(problem)
            return {"default_config": rules.config_of_row(default),
                    "configs": [rules.config_of_row(r) for r in rules.space(problem, default)],
                    "gemm_spaces": []}
        if op == "feasible":
            limit = bed.smem_limit()
            return {"reasons": [rules.feasible(req["problem"], c, limit)
                                for c in req.get("configs", [])]}
        if op == "prepare":
            bed.prepare(req["problem"], req.get("routing", {}), req.get("seed", 0))
            return {}
        if op == "precompile":
            return self.precompile(req)
        if op in ("check", "time"):
            fault = req.get("fault", "")
            self.inject_before(fault)
            row = rules.row_of(rules.moe_config(req["config"]))
            if op == "check":
                corrupt = fault if fault in ("wrong", "nan") else None
                return bed.check(row, corrupt=corrupt)
            samples = bed.time(row, int(req.get("warmup", 0)), int(req.get("reps", 1)))
            if fault in ("wrong", "nan"):
                samples = [s * 0.01 for s in samples]
            return {"samples_us": samples}
        raise self.tb.Failure("launch_failed", f"unknown request op '{op}'")

    def precompile(self, req):
        """Per config: "" and ok, or its failure; an injected compile fault answers for its
        config without compiling it. background: all ok at once, compiled while checks come."""
        configs, faults = req.get("configs", []), req.get("faults", [])
        rows = [self.rules.row_of(self.rules.moe_config(c)) for c in configs]
        faulty = [i < len(faults) and faults[i] == "compile" for i in range(len(rows))]
        todo = [r for r, f in zip(rows, faulty) if not f]
        if req.get("background"):
            self.bed.compile_in_background(todo)
            return {"reasons": [""] * len(rows), "outcomes": ["ok"] * len(rows)}
        done = iter(self.bed.compile(todo))
        reasons, outcomes = [], []
        for f in faulty:
            failure = None if f else next(done)
            if f:
                reasons.append(_injected("compile"))
                outcomes.append("compile_failed")
            else:
                reasons.append("" if failure is None else failure.message)
                outcomes.append("ok" if failure is None else failure.outcome)
        return {"reasons": reasons, "outcomes": outcomes}

    def inject_before(self, fault):
        Failure = self.tb.Failure
        if fault == "compile":
            raise Failure("compile_failed", _injected(fault))
        if fault == "launch":
            raise Failure("launch_failed", _injected(fault))
        if fault == "oom":
            raise Failure("oom", _injected(fault))
        if fault == "crash":
            signal.signal(signal.SIGSEGV, signal.SIG_DFL)  # a real segfault, whatever torch set
            os.kill(os.getpid(), signal.SIGSEGV)
        if fault == "hang":
            while True:
                time.sleep(3600)
        if fault and fault not in FAULTS:
            raise Failure("launch_failed", f"unknown fault '{fault}'")

    def respond(self, line):
        """The answer line to one request line (never raises)."""
        try:
            req = json.loads(line)
            out = dict(ok=True, **self.answer(req))
        except self.tb.Failure as e:
            out = {"ok": False, "outcome": e.outcome, "message": e.message}
        except MemoryError as e:
            out = {"ok": False, "outcome": "oom", "message": f"MemoryError: {e}"}
        except Exception as e:  # noqa: BLE001  (every other failure is this request's)
            name = type(e).__name__
            outcome = "oom" if name == "OutOfMemoryError" else "launch_failed"
            out = {"ok": False, "outcome": outcome, "message": f"{name}: {e}"[:2000]}
        return json.dumps(_finite(out), allow_nan=False)


def _interpret_mode():
    """TRITON_INTERPRET=1 when asked for or when no GPU is visible; set before Triton loads."""
    if os.environ.get("TRITON_INTERPRET") == "1":
        return True
    import torch

    if torch.cuda.is_available():
        return False
    os.environ["TRITON_INTERPRET"] = "1"
    return True


def serve(fd_in, fd_out):
    worker = Worker(_interpret_mode())
    buffer = b""
    while True:
        while b"\n" not in buffer:
            chunk = os.read(fd_in, 65536)
            if not chunk:
                return 0
            buffer += chunk
        line, buffer = buffer.split(b"\n", 1)
        try:
            if json.loads(line).get("op") == "quit":
                return 0
        except (ValueError, AttributeError):
            pass  # respond() answers it as a failed request
        data = (worker.respond(line) + "\n").encode()
        while data:
            try:
                n = os.write(fd_out, data)
            except BrokenPipeError:
                return 0
            data = data[n:]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fd-in", type=int, default=0)
    ap.add_argument("--fd-out", type=int, default=1)
    a = ap.parse_args(argv)
    return serve(a.fd_in, a.fd_out)


if __name__ == "__main__":
    sys.exit(main())
