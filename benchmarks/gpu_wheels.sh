#!/usr/bin/env bash
# Download into .whl/ the wheels that the lent GPU machine lacks (docs/GPU.md), at constraints.txt's versions, for
# its Python (3.12, x86-64 Linux): what benchmarks/gpu_device.sh installs there. Needs the network (PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
pin() { grep -i "^$1==" constraints.txt requirements-nodeps.txt | head -1 | cut -d: -f2; }
mkdir -p .whl
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 \
    --platform manylinux2014_x86_64 --platform manylinux1_x86_64 -d .whl \
    "$(pin gymnasium)" "$(pin farama-notifications)" "$(pin ale-py)" "$(pin incremental-tasks)"
ls -l .whl
