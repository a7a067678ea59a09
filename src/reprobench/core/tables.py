"""Tables as Markdown, CSV and LaTeX from one list of rows, written atomically."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from reprobench.core.atomic import write_text


def _md_escape(text: str) -> str:
    return str(text).replace("|", "\\|")


def _tex_escape(text: str) -> str:
    text = str(text)
    if text.startswith("$") and text.endswith("$"):
        return text  # already LaTeX math
    return re.sub(r"([&%#_{}])", r"\\\1", text).replace("•", r"$\bullet$")


def to_markdown(header: list[str], rows: list[list[str]], bold: set[tuple[int, int]] = frozenset()) -> str:
    cells = [[f"**{c}**" if (i, j) in bold and c not in ("", "—") else c for j, c in enumerate(r)]
             for i, r in enumerate(rows)]
    lines = ["| " + " | ".join(_md_escape(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md_escape(c) for c in r) + " |" for r in cells]
    return "\n".join(lines) + "\n"


def to_latex(header: list[str], rows: list[list[str]], bold: set[tuple[int, int]] = frozenset(),
             caption: str = "") -> str:
    def cell(i, j, c):
        c = _tex_escape(c)
        if (i, j) in bold and c not in ("", "---"):
            return rf"$\mathbf{{{c[1:-1]}}}$" if c.startswith("$") else rf"\textbf{{{c}}}"
        return c

    lines = [r"\begin{table}[t]", r"\centering", r"\begin{tabular}{" + "l" * len(header) + "}", r"\toprule",
             " & ".join(_tex_escape(h) for h in header) + r" \\", r"\midrule"]
    lines += [" & ".join(cell(i, j, c) for j, c in enumerate(r)) + r" \\" for i, r in enumerate(rows)]
    lines += [r"\bottomrule", r"\end{tabular}"]
    if caption:
        lines.append(r"\caption{" + _tex_escape(caption) + "}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


def write_all(stem: str, header_md: list[str], rows_md: list[list[str]], rows_tex: list[list[str]],
              data: pd.DataFrame, bold: set[tuple[int, int]] = frozenset(), note: str = "") -> list[str]:
    """Write stem.md (with `note` under the table), stem.tex and stem.csv (the full numbers in `data`)."""
    write_text(f"{stem}.md", to_markdown(header_md, rows_md, bold) + (f"\n{note}\n" if note else ""))
    write_text(f"{stem}.tex", to_latex(header_md, rows_tex, bold, caption=note))
    write_text(f"{stem}.csv", data.to_csv(index=False, float_format="%.6g"))
    return [f"{stem}.md", f"{stem}.tex", f"{stem}.csv"]


def best(values, higher: bool = True) -> list[int]:
    """Positions of the best value, ties included, for bolding: none when every value is missing, or when there
    are several values, all present and all equal (nothing is best)."""
    values = np.asarray(values, dtype=float)
    finite = values[~np.isnan(values)]
    if len(finite) == 0 or (len(values) > 1 and len(finite) == len(values) and np.all(finite == finite[0])):
        return []
    target = finite.max() if higher else finite.min()
    return [i for i, v in enumerate(values) if v == target]


def sci(x: float, digits: int = 1) -> str:
    """3.0e6 style, as the paper's d.d*10^k."""
    if x is None or pd.isna(x):
        return "—"
    return f"{x:.{digits}e}".replace("e+0", "e").replace("e-0", "e-").replace("e+", "e")


def sci_tex(x: float, digits: int = 1) -> str:
    if x is None or pd.isna(x):
        return "---"
    mantissa, exponent = f"{x:.{digits}e}".split("e")
    return rf"{mantissa} \cdot 10^{{{int(exponent)}}}"
