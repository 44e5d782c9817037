"""Runs a test file's cases under Triton's interpreter in a child process (TRITON_INTERPRET must
be set before triton is imported, so the parent cannot run them itself) and returns what the
child saved with torch.save."""

import os
import subprocess
import sys
import time

import torch


def run_interpreter_child(test_file, out_dir, seed, timeout):
    """Runs `python test_file OUT` with TRITON_INTERPRET=1 and MOETUNE_TEST_SEED=seed; returns the
    child's saved results and the parent's wall seconds. Fails naming the seed and the output."""
    out = os.path.join(str(out_dir), "outputs.pt")
    env = dict(os.environ, TRITON_INTERPRET="1", MOETUNE_TEST_SEED=str(seed))
    started = time.monotonic()
    proc = subprocess.run([sys.executable, os.path.abspath(test_file), out], env=env,
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, (f"interpreter child exited {proc.returncode} (seed={seed}):\n"
                                  f"{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}")
    return torch.load(out), time.monotonic() - started
