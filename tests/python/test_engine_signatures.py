"""The engine drop-ins take exactly the parameters of the engines' own functions, as recorded
from their released wheels (tests/python/data/, written by scripts/record_engine_signatures.py):
same names, order, kinds, and the same defaults, except where a default is an engine object that
the drop-in replaces by an equivalent (listed below)."""

import ast
import inspect
import json
import os

import pytest

from moetune.integrations import sglang as mt_sgl
from moetune.integrations import vllm as mt_vllm

DATA = os.path.join(os.path.dirname(__file__), "data")

# (engine default text, drop-in default): defaults that are engine objects.
EQUIVALENT_DEFAULTS = {
    ("MoEActivation.SILU", "silu"),   # the enum's value; the drop-in takes either
    ("MoeRunnerConfig()", None),      # None means SGLang's default MoeRunnerConfig()
}

CASES = [("vllm-0.33.0-fused_experts.json", mt_vllm.fused_experts),
         ("sglang-0.5.23-fused_moe.json", mt_sgl.fused_moe)]


def _default(p):
    return None if p.default is inspect.Parameter.empty else p.default


def compare(recorded, fn):
    """The differences between a recorded signature and a function's; [] when they agree."""
    ours = list(inspect.signature(fn).parameters.values())
    theirs = recorded["parameters"]
    problems = []
    if [p.name for p in ours] != [p["name"] for p in theirs]:
        return [f"names {[p.name for p in ours]} != {[p['name'] for p in theirs]}"]
    for o, t in zip(ours, theirs):
        if o.kind.name != t["kind"]:
            problems.append(f"{o.name}: kind {o.kind.name} != {t['kind']}")
        if (t["default"] is None) != (o.default is inspect.Parameter.empty):
            problems.append(f"{o.name}: has default {o.default is not inspect.Parameter.empty}")
            continue
        if t["default"] is None:
            continue
        try:
            same = ast.literal_eval(t["default"]) == _default(o)
        except ValueError:
            same = (t["default"], _default(o)) in EQUIVALENT_DEFAULTS
        if not same:
            problems.append(f"{o.name}: default {_default(o)!r} != {t['default']}")
    return problems


@pytest.mark.parametrize("recorded_file,fn", CASES, ids=["vllm", "sglang"])
def test_drop_in_matches_the_engines_signature(recorded_file, fn):
    with open(os.path.join(DATA, recorded_file)) as f:
        recorded = json.load(f)
    assert compare(recorded, fn) == [], f"{recorded['engine']} {recorded['version']}"


def test_comparison_catches_a_renamed_or_reordered_parameter():
    # The negative twin: a drop-in with one parameter renamed, or a default changed, fails.
    with open(os.path.join(DATA, CASES[0][0])) as f:
        recorded = json.load(f)

    def renamed(hidden_states, w1, w2, topk_weights, topk_ids, activation="silu",
                apply_router_weight_on_input=False, num_experts=-1, expert_map=None,
                quant_config=None):
        pass

    def other_default(hidden_states, w1, w2, topk_weights, topk_ids, activation="silu",
                      apply_router_weight_on_input=True, global_num_experts=-1, expert_map=None,
                      quant_config=None):
        pass

    assert compare(recorded, renamed)
    assert compare(recorded, other_default) == [
        "apply_router_weight_on_input: default True != False"]
