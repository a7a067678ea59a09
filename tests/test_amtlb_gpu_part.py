"""amtlb's part of the GPU check (benchmarks/gpu_parts/amtlb.py): what it says where the emulator is missing (the GPU
machine has no ale-py or gymnasium of its own). The part itself runs in the CPU check of benchmarks/gpu_check.py."""

import importlib.util
import sys

import pytest

from conftest import ROOT

sys.path.insert(0, str(ROOT / "benchmarks"))


@pytest.mark.parametrize("module, wheel", [("ale_py", "ale-py"), ("gymnasium", "gymnasium")])
def test_a_missing_emulator_is_named(monkeypatch, module, wheel):
    from gpu_parts import amtlb

    find = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == module else find(name, *a))
    with pytest.raises(RuntimeError, match=f"lacks {wheel}: install"):
        amtlb._require_emulator()
    monkeypatch.undo()
    amtlb._require_emulator()  # both present here
