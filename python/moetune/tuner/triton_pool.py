"""A pool of compiler processes that fills Triton's on-disk cache with vLLM's fused_moe_kernel.

Triton compiles a kernel mostly while holding the GIL: a 15-thread pool (Triton's own
AsyncCompileMode) reached about 4 kernels a second on the H100 machine's 16 cores, where one
compile takes 0.4-0.8 s of one core. Here each compile runs in its own process: the caller
records a launch's specialization (Triton's serialize_specialization_data, what
JITFunction.preload reads) instead of compiling it, a child compiles it for the GPU's target
into the cache directory both share (TRITON_CACHE_DIR, or Triton's default), and the caller's
own launch then finds it there and only loads it.

    pool = CompilePool(engine_dir, target=("cuda", 90, 32))
    future = pool.submit(specialization_json)   # -> shared memory in bytes, or raises CompileError
    pool.close()

A child is `python3 -c` entering the moetune package without its __init__ (as the tuner's worker
does), loading vLLM's kernel from engine_dir once, then answering one JSON line per request on
its pipes. All children start with the pool (each takes seconds to load torch, Triton and
vLLM). It ends with its parent (PR_SET_PDEATHSIG). A child that dies mid-compile fails that
request with CompileError and is started again for the next one.
"""

import concurrent.futures
import json
import os
import queue
import subprocess
import sys
import threading

_LAUNCHER = (
    "import importlib.util as u, sys\n"
    "sys.modules['moetune'] = u.module_from_spec(u.find_spec('moetune'))\n"
    "from moetune.tuner import triton_pool\n"
    "sys.exit(triton_pool.child_main(sys.argv[1]))\n")


class CompileError(Exception):
    """A kernel that did not compile (Triton's message), or a child that died compiling it."""


def default_processes():
    """One per core but one (the caller's), at most 16."""
    return max(1, min(16, (os.cpu_count() or 2) - 1))


class CompilePool:
    def __init__(self, engine_dir, target, processes=None):
        self._engine_dir = engine_dir
        self._target = list(target)
        self._jobs = queue.Queue()
        self.processes = processes or default_processes()
        self._threads = [threading.Thread(target=self._serve, daemon=True)
                         for _ in range(self.processes)]
        for t in self._threads:
            t.start()

    def submit(self, specialization):
        """A Future of the kernel's shared memory in bytes, compiled into Triton's cache."""
        future = concurrent.futures.Future()
        self._jobs.put((future, specialization))
        return future

    def close(self):
        for _ in self._threads:
            self._jobs.put(None)
        for t in self._threads:
            t.join()

    # ---- one feeding thread per child ----

    def _spawn(self):
        package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (package_root, env.get("PYTHONPATH")) if p)
        env.pop("TRITON_INTERPRET", None)  # the interpreter compiles nothing
        return subprocess.Popen([sys.executable, "-c", _LAUNCHER, self._engine_dir],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env,
                                close_fds=True, text=True, bufsize=1)

    def _serve(self):
        child = self._spawn()  # at once: a child takes seconds to load torch, Triton and vLLM
        while True:
            job = self._jobs.get()
            if job is None:
                break
            future, specialization = job
            if not future.set_running_or_notify_cancel():
                continue
            if child is None or child.poll() is not None:
                child = self._spawn()
            try:
                child.stdin.write(json.dumps({"spec": specialization,
                                              "target": self._target}) + "\n")
                child.stdin.flush()
                line = child.stdout.readline()
            except OSError:
                line = ""
            if not line:
                child.kill()
                child.wait()
                future.set_exception(CompileError(
                    f"the compiler process died (exit {child.returncode}) compiling this kernel"))
                continue
            answer = json.loads(line)
            if answer["ok"]:
                future.set_result(answer["shared"])
            else:
                future.set_exception(CompileError(answer["error"]))
        if child is not None:
            child.stdin.close()
            child.wait()


# ---- the child ----

def _die_with_parent():
    try:
        import ctypes
        import signal

        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass  # not Linux: the child ends when its stdin closes


def compile_specialization(kernel, specialization, target):
    """Compiles one serialized specialization of kernel for target [backend, arch, warp_size]
    as JITFunction.preload reads it, into Triton's cache; the kernel's shared memory in bytes."""
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    data = json.loads(specialization)
    if data["name"].rsplit(".", 1)[-1] != kernel.fn.__qualname__:
        raise CompileError(f"the specialization is for {data['name']}, not "
                           f"{kernel.fn.__qualname__}")
    constexprs = {
        tuple(k): tl.dtype(v) if tl.dtype.is_dtype(v) else
        tl.constexpr(v["constexpr"]) if isinstance(v, dict) and "constexpr" in v else v
        for k, v in zip(data["constant_keys"], data["constant_vals"])}
    attrs = {tuple(k): v for k, v in zip(data["attrs_keys"], data["attrs_vals"])}
    signature = {k: tuple(v) if isinstance(v, list) else v for k, v in data["signature"].items()}
    options = {k: tuple(v) if isinstance(v, list) else v for k, v in data["options"].items()}
    src = ASTSource(kernel, signature, constexprs, attrs)
    compiled = triton.compile(src, target=GPUTarget(*target), options=options)
    return compiled.metadata.shared


def child_main(engine_dir):
    _die_with_parent()
    from moetune.engines import vllm_triton

    kernel = vllm_triton.load(engine_dir).fused_moe_kernel
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever the compiler prints goes to stderr, not into the replies
    for line in sys.stdin:
        request = json.loads(line)
        try:
            shared = compile_specialization(kernel, request["spec"], request["target"])
            answer = {"ok": True, "shared": shared}
        except Exception as e:  # noqa: BLE001  (a compile failure is this request's answer)
            text = str(e).strip().splitlines()
            answer = {"ok": False, "error": f"{type(e).__name__}: {text[-1] if text else ''}"}
        replies.write(json.dumps(answer) + "\n")
        replies.flush()
    return 0
