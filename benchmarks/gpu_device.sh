#!/usr/bin/env bash
# The GPU check on a machine whose Python has torch with CUDA but not every package the project installs (the lent
# GPU machine of docs/GPU.md: torch 2.11, no network): the wheels in .whl/ (benchmarks/gpu_wheels.sh) go to a scratch
# folder on PYTHONPATH, beside this checkout's src/. On a node where the project is installed, run
# `python benchmarks/gpu_check.py` instead. Usage: benchmarks/gpu_device.sh OUT_DIR [gpu_check.py options]
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-results/gpu_check}"
shift || true
site=/tmp/reprobench-site
if compgen -G ".whl/*.whl" >/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" .whl/*.whl \
        || exit 1
fi
export PYTHONPATH="$site:$PWD/src${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,temperature.gpu --format=csv || true
python3 benchmarks/gpu_check.py --out "$out" "$@"
