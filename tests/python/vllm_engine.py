"""Where the tests find vLLM's extracted kernel (.engines/vllm-0.33.0, which
scripts/fetch_engine_kernels.py writes), and the mark that skips a test, saying why, without it."""

import os

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ENGINE = os.path.join(REPO, ".engines", "vllm-0.33.0")
needs_engine = pytest.mark.skipif(
    not os.path.isfile(os.path.join(ENGINE, "manifest.json")),
    reason=".engines/vllm-0.33.0 is absent: run scripts/fetch_engine_kernels.py (needs PyPI, or "
           "--wheel vllm-0.33.0-*.whl) to extract vLLM's kernel")
