"""Count and name the host synchronisations of a stretch of torch code, on any device.

A host sync (the Python side waiting for the device) inside a training step serialises the GPU's queue: one per
step can cost more than the step. `HostSyncs` counts them two ways:

- on CUDA, torch's own sync debug mode (`torch.cuda.set_sync_debug_mode("warn")`), which warns at every
  synchronising CUDA call: the ground truth;
- everywhere (and so on a CPU, where nothing syncs), a `TorchFunctionMode` that counts the tensor calls that make
  the host wait on an accelerator: reading a value (`item`, `bool`, `int`, `float`, `tolist`, `numpy`, `__array__`),
  a copy to the host (`cpu`, `to` a CPU device from another), and the ops whose output size depends on the data
  (`nonzero`, `argwhere`, `masked_select`, `unique`, one-argument `where`, indexing with a bool tensor,
  `repeat_interleave` without `output_size`). A `.cpu().numpy()` on one line is one sync. Reads made by torch.optim
  itself are not counted: its step counts stay on the host whatever the parameters' device (no device sync).

The CPU count cannot see a copy to the device from pageable host memory (`torch.as_tensor(array, device=...)`,
`.to(device)` of a CPU tensor), after which CUDA waits for the stream: on a CPU the target is the CPU. CUDA's mode
counts those; code that uploads in a step should go through pinned memory (`pin_memory().to(device,
non_blocking=True)`).

Each sync is named by the innermost frame outside torch and this module ("path:line function (call)"), so a test can
say which line syncs. Counting slows code down: time without it.
"""

from __future__ import annotations

import sys
import traceback
import warnings
from collections import Counter
from pathlib import Path

import torch
from torch.overrides import TorchFunctionMode

READS = {"item", "tolist", "numpy", "__array__", "__bool__", "__int__", "__float__", "__index__", "__len__"}
DATA_SIZED = {"nonzero", "argwhere", "masked_select", "unique", "unique_consecutive", "_unique", "_unique2"}
_OPTIM = str(Path(torch.__file__).parent / "optim")
_SKIP = (str(Path(torch.__file__).parent), __file__, "<frozen ", str(Path(warnings.__file__)))


def _name(func) -> str:
    return getattr(func, "__name__", str(func))


def _on_cpu_device(value) -> bool:
    if isinstance(value, torch.device):
        return value.type == "cpu"
    return isinstance(value, str) and value.split(":")[0] == "cpu"


def _syncs(name: str, args, kwargs) -> bool:
    """Whether this call makes the host wait when its tensors are on an accelerator."""
    if name in READS or name in DATA_SIZED:
        return name != "__len__"  # len() reads the shape, not the data
    if name == "cpu":
        return True
    if name == "to":
        target = kwargs.get("device", next((a for a in args[1:] if isinstance(a, (str, torch.device))), None))
        return _on_cpu_device(target) and isinstance(args[0], torch.Tensor) and args[0].device.type != "cpu"
    if name == "where":
        return len(args) + len(kwargs) == 1
    if name == "repeat_interleave":
        return "output_size" not in kwargs and isinstance(args[1] if len(args) > 1 else kwargs.get("repeats"),
                                                          torch.Tensor)
    if name in ("__getitem__", "__setitem__"):
        index = args[1] if len(args) > 1 else None
        items = index if isinstance(index, tuple) else (index,)
        return any(isinstance(i, torch.Tensor) and i.dtype == torch.bool for i in items)
    return False


def _caller() -> traceback.FrameSummary | None:
    """The innermost frame of the code under test (outside torch, this module and the warnings machinery)."""
    for frame in reversed(traceback.extract_stack()):
        if not frame.filename.startswith(_SKIP):
            return frame
    return None


class HostSyncs(TorchFunctionMode):
    """`with HostSyncs(device) as syncs: ...` then `syncs.count` and `syncs.points` (Counter of named sync points).

    On CUDA the count is the sync debug mode's (set back afterwards) and `syncs.calls` holds the function mode's
    count beside it; elsewhere both are the function mode's."""

    def __init__(self, device=None):
        super().__init__()
        self.cuda = torch.device(device or "cpu").type == "cuda"
        self.points: Counter = Counter()
        self.call_points: Counter = Counter()
        self._last = None

    @property
    def count(self) -> int:
        return sum(self.points.values())

    @property
    def calls(self) -> int:
        return sum(self.call_points.values())

    @property
    def counter(self) -> str:
        return "torch.cuda sync debug mode" if self.cuda else "tensor calls that sync on an accelerator"

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        name = _name(func)
        if _syncs(name, args, kwargs) and not (name in READS and _OPTIM in sys._getframe(1).f_code.co_filename):
            frame = _caller()
            where = f"{_short(frame.filename)}:{frame.lineno} {frame.name}" if frame else "?"
            if name == "numpy" and self._last == (where, "cpu"):
                self._last = None  # .cpu().numpy(): one copy, one sync
            else:
                self.call_points[f"{where} ({name})"] += 1
                self._last = (where, name)
        return func(*args, **kwargs)

    def _warned(self, message, category, filename, lineno, file=None, line=None):
        if "synchronizing" not in str(message):
            return self._previous_show(message, category, filename, lineno, file, line)
        frame = _caller()
        self.points[f"{_short(frame.filename)}:{frame.lineno} {frame.name}" if frame else "?"] += 1

    def __enter__(self):
        if self.cuda:
            self._warnings = warnings.catch_warnings()
            self._warnings.__enter__()
            warnings.simplefilter("always")
            self._previous_show = warnings.showwarning
            warnings.showwarning = self._warned
            self._mode = torch.cuda.get_sync_debug_mode()
            torch.cuda.set_sync_debug_mode("warn")
        return super().__enter__()

    def __exit__(self, *exc):
        out = super().__exit__(*exc)
        if self.cuda:
            torch.cuda.set_sync_debug_mode(self._mode)
            self._warnings.__exit__(*exc)
        else:
            self.points = Counter(self.call_points)
        return out

    def report(self, steps: int = 1) -> dict:
        """{syncs_per_step, sync_points (named, per step), sync_counter} for `steps` steps counted."""
        return {"syncs_per_step": self.count / steps, "sync_counter": self.counter,
                "sync_points": {k: v / steps for k, v in self.points.most_common()}}


def _short(path: str) -> str:
    """A path from the package or checkout root, for readable names."""
    roots = [r.rstrip("/") for r in sys.path if r and "site-packages" not in r and path.startswith(r.rstrip("/") + "/")]
    if roots:  # the deepest: src/ rather than the checkout above it, when both are on the path
        return path[len(max(roots, key=len)) + 1:]
    parts = Path(path).parts
    return str(Path(*parts[parts.index("reprobench"):])) if "reprobench" in parts else path
