"""Progress on long work: a tqdm bar on a terminal, plain lines in a log file."""

from __future__ import annotations

import sys
import time


class Progress:
    """Call update(n) as work advances. Logs a plain line at most every `log_every_s` seconds when stderr is
    not a terminal (a Snakemake log), and shows a tqdm bar when it is."""

    def __init__(self, total: int, desc: str, log_every_s: float = 30.0, stream=None):
        self.stream = stream or sys.stderr
        self.total, self.desc, self.done = total, desc, 0
        self.start = self.last = time.monotonic()
        self.log_every_s = log_every_s
        self.bar = None
        if self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=total, desc=desc, file=self.stream, unit_scale=True, mininterval=0.5)

    def update(self, n: int, note: str = "") -> None:
        self.done += n
        if self.bar is not None:
            self.bar.update(n)
            if note:
                self.bar.set_postfix_str(note, refresh=False)
            return
        now = time.monotonic()
        if now - self.last >= self.log_every_s or self.done >= self.total:
            self.last = now
            rate = self.done / max(now - self.start, 1e-9)
            print(f"{self.desc}: {self.done}/{self.total} ({100 * self.done / max(self.total, 1):.1f}%), "
                  f"{rate:.1f}/s {note}", file=self.stream, flush=True)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)
