"""Downloads: resumable (HTTP Range into a .part file), checksummed, and a clear error when offline."""

from __future__ import annotations

import hashlib
import os
import urllib.error
import urllib.request
from pathlib import Path

from reprobench.core.errors import ReprobenchError
from reprobench.core.progress import Progress


class DownloadError(ReprobenchError):
    pass


def file_digest(path: str | os.PathLike, algorithm: str) -> str:
    h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def download(url: str, dest: str | os.PathLike, checksum: str, algorithm: str = "md5", timeout: float = 60.0) -> Path:
    """Fetch `url` to `dest` unless a file with the right checksum is already there. A partial download is
    resumed from `dest`.part; the file appears under its final name only once its checksum matches."""
    dest = Path(dest)
    if dest.exists() and file_digest(dest, algorithm) == checksum:
        return dest
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            resumed = have and response.status == 206
            total = int(response.headers.get("Content-Length") or 0) + (have if resumed else 0)
            bar = Progress(total or 1, f"download {dest.name}", log_every_s=10)
            with open(part, "ab" if resumed else "wb") as fh:
                if resumed:
                    bar.update(have)
                for block in iter(lambda: response.read(1 << 20), b""):
                    fh.write(block)
                    bar.update(len(block))
            bar.close()
    except (urllib.error.URLError, OSError) as exc:
        raise DownloadError(f"cannot download {url} to {dest} ({exc}). This machine may be offline: "
                            f"download it elsewhere and place it at {dest}, or use the synthetic stand-in") from None
    digest = file_digest(part, algorithm)
    if digest != checksum:
        part.unlink()
        raise DownloadError(f"{url}: {algorithm} {digest} does not match the pinned {checksum}; the partial file "
                            f"was removed, run again to download it anew")
    os.replace(part, dest)
    return dest
