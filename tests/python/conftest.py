"""pytest setup of the Python tests: the package under test and the GPU marker.

The package is the installed `moetune`, or the build tree's (PYTHONPATH=build/python, as ctest
runs it). GPU tests are marked `gpu` and skip only when torch sees no CUDA device.
"""

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA device (sm_90a); skipped without one")


def pytest_collection_modifyitems(config, items):
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device visible to torch")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)
