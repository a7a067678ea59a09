"""Every job is a new process, so what its modules import at start-up is paid once per job (issue 30): a render or
compare job does not import torch (1.1 s), a training job not the agent-free probes' scipy and sklearn (1.4 s), and
a CALM stream not scipy.stats (0.4 s with its frozen distribution)."""

import subprocess
import sys

import pytest

CHECK = "import importlib, sys; [importlib.import_module(m) for m in sys.argv[2:]]; print(sys.argv[1] in sys.modules)"
STREAM = ("import sys; from reprobench.calm.stream import Stream; "
          "Stream(['a', 'b'], 200, 0, n_fragments=4, b=2, window=20, bptt=20); print('scipy.stats' in sys.modules)")


@pytest.mark.parametrize("modules,heavy", [
    (["reprobench.calm.render", "reprobench.calm.summary"], "torch"),
    (["reprobench.s2b.runs", "reprobench.s2b.train"], "scipy"),
    (["reprobench.s2b.runs", "reprobench.s2b.train"], "sklearn"),
])
def test_a_job_imports_only_what_it_needs(modules, heavy):
    out = subprocess.run([sys.executable, "-c", CHECK, heavy, *modules], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", f"{modules} import {heavy}"


def test_the_check_sees_an_import():
    out = subprocess.run([sys.executable, "-c", CHECK, "scipy", "reprobench.s2b.probes"], capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "True"


def test_a_calm_stream_draws_without_scipy_stats():
    out = subprocess.run([sys.executable, "-c", STREAM], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
