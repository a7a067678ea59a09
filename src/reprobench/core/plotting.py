"""One plotting style for every figure, and PNG/PDF output that is byte-stable for equal input."""

from __future__ import annotations

import contextlib
import io

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

from reprobench.core.atomic import write_bytes

STYLE = {
    "figure.dpi": 100, "savefig.dpi": 150, "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8,
    "legend.fontsize": 7, "xtick.labelsize": 7, "ytick.labelsize": 7, "axes.spines.top": False,
    "axes.spines.right": False, "axes.grid": True, "grid.alpha": 0.3, "lines.linewidth": 1.2,
    "lines.markersize": 4, "svg.hashsalt": "reprobench", "pdf.compression": 6,
}
COLORS = ["#1b6ca8", "#d1495b", "#2e933c", "#edae49", "#6a4c93", "#00798c"]


@contextlib.contextmanager
def style():
    with matplotlib.rc_context(STYLE):
        yield


def save(fig, stem: str) -> list[str]:
    """Write stem.png and stem.pdf atomically, without creation dates, so equal figures give equal bytes."""
    paths = []
    for ext, meta in (("png", {"Software": None}), ("pdf", {"CreationDate": None, "ModDate": None, "Producer": None,
                                                           "Creator": None})):
        buf = io.BytesIO()
        fig.savefig(buf, format=ext, metadata=meta, bbox_inches="tight")
        write_bytes(f"{stem}.{ext}", buf.getvalue())
        paths.append(f"{stem}.{ext}")
    plt.close(fig)
    return paths
