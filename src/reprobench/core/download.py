"""Downloads: resumable (HTTP Range into a .part file), size- and checksum-checked, and a clear error when offline.

A file has either a pinned checksum (a published value) or none; for the latter a `manifest` (JSON) records the
digest and size at the first download, or at the first use of a file placed by hand, and every later use verifies
them, so a file that changed on the server or on disk is noticed. That first copy is trusted as it comes: recording
it logs a line saying so, with the caller's reason why the file has no pin (`unpinned`)."""

from __future__ import annotations

import hashlib
import json
import os
import urllib.error
import urllib.request
from pathlib import Path

from reprobench.core.atomic import write_text
from reprobench.core.errors import ReprobenchError
from reprobench.core.progress import Progress, log


class DownloadError(ReprobenchError):
    pass


def file_digest(path: str | os.PathLike, algorithm: str) -> str:
    h = hashlib.new(algorithm)
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def read_manifest(path: str | os.PathLike) -> dict:
    """{url: {"file", "algorithm", "digest", "size"}}; an absent manifest is empty."""
    path = Path(path)
    if not path.exists():
        return {}
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise DownloadError(f"checksum manifest {path} is unreadable ({exc}); fix or delete it") from None
    if not isinstance(data, dict):
        raise DownloadError(f"checksum manifest {path} is not a JSON object; fix or delete it")
    return data


def _record(manifest: Path, url: str, dest: Path, algorithm: str, digest: str, unpinned: str | None = None,
            first: bool = True) -> None:
    data = read_manifest(manifest)
    data[url] = {"file": dest.name, "algorithm": algorithm, "digest": digest, "size": dest.stat().st_size}
    write_text(manifest, json.dumps(data, indent=2, sort_keys=True) + "\n")
    if first:  # the one moment a copy is trusted unchecked: say so, and why
        why = f" ({unpinned})" if unpinned else ""
        log(f"{url} has no published checksum{why}: recorded the {algorithm} {digest} and size {dest.stat().st_size} "
            f"of {dest} in {manifest}. Later uses are checked against this record; this first copy is trusted as it "
            f"came (compare it with another download, or delete the entry to record a new one)")


def _manifest_entry(manifest: Path, url: str, algorithm: str, aliases: tuple[str, ...]) -> tuple[str, dict] | None:
    """(key, entry) of `url`, or of one of its former spellings (`aliases`, e.g. its http:// form), in `manifest`."""
    data = read_manifest(manifest)
    for key in (url, *aliases):
        entry = data.get(key)
        if entry is not None:
            if entry.get("algorithm") != algorithm or not entry.get("digest"):
                raise DownloadError(f"checksum manifest {manifest}: the entry for {key} is not a {algorithm} digest")
            return key, entry
    return None


def check_recorded(path: str | os.PathLike, key: str, manifest: str | os.PathLike, algorithm: str = "sha256") -> bool:
    """A file placed by hand that no published checksum pins, against its entry `key` in `manifest`: True when the
    entry is there and matches, False when there is none yet (record it with record_first_use once the file proved
    usable), a DownloadError naming the file when it does not match."""
    path, manifest = Path(path), Path(manifest)
    found = _manifest_entry(manifest, key, algorithm, ())
    if found is None:
        return False
    entry = found[1]
    size = path.stat().st_size
    if entry.get("size") is not None and size != entry["size"]:
        raise DownloadError(f"{path} has {size} bytes, not the size {entry['size']} recorded in {manifest} at its "
                            f"first use; place the right file there, or delete its entry ({key}) to record this one")
    digest = file_digest(path, algorithm)
    if digest != entry["digest"]:
        raise DownloadError(f"{path}: {algorithm} {digest} does not match the {entry['digest']} recorded in "
                            f"{manifest} at its first use; place the right file there, or delete its entry ({key}) "
                            f"to record this one")
    return True


def record_first_use(path: str | os.PathLike, key: str, manifest: str | os.PathLike, algorithm: str = "sha256",
                     unpinned: str | None = None) -> None:
    """Record the digest and size of `path` in `manifest` under `key`, logging that this copy is trusted as it is."""
    path = Path(path)
    _record(Path(manifest), key, path, algorithm, file_digest(path, algorithm), unpinned)


def download(url: str, dest: str | os.PathLike, checksum: str | None = None, algorithm: str = "md5",
             timeout: float = 60.0, *, manifest: str | os.PathLike | None = None, size: int | None = None,
             unpinned: str | None = None, aliases: tuple[str, ...] = ()) -> Path:
    """Fetch `url` to `dest` unless a file with the right checksum is already there. A partial download is
    resumed from `dest`.part; the file appears under its final name only once its size and checksum match.

    `checksum`: a pinned digest (`algorithm`). Without one, a `manifest` entry for `url` serves as the pin once it
    exists (or one under a former spelling of the URL in `aliases`, e.g. its http:// form, which is then carried
    over to `url`); with neither, an existing `dest` is taken as it is. `unpinned`: why `url` has no pin, for the
    line logged when its first copy is recorded. `size`: a pinned size in bytes (checked before the digest). A
    download shorter than the server announced keeps its .part, so a rerun resumes it."""
    dest = Path(dest)
    manifest = Path(manifest) if manifest is not None else None
    recorded = ""  # where a digest from the manifest came from, for the messages
    carry_over = False  # the entry is under an alias: record it under `url` once the file is verified
    if checksum is None and manifest is not None:
        found_entry = _manifest_entry(manifest, url, algorithm, aliases)
        if found_entry is not None:
            key, entry = found_entry
            checksum, size = entry["digest"], size if size is not None else entry.get("size")
            recorded = f" recorded in {manifest} at the first download"
            carry_over = key != url
    found = None  # why an existing dest was not accepted, for the offline message
    if dest.exists():
        if size is not None and dest.stat().st_size != size:
            found = f"{dest} is there but has {dest.stat().st_size} bytes, not {size}"
        elif checksum is None:
            if manifest is not None:  # placed by hand or downloaded before the manifest existed: first use
                _record(manifest, url, dest, algorithm, file_digest(dest, algorithm), unpinned)
            return dest
        else:
            digest = file_digest(dest, algorithm)
            if digest == checksum:
                if carry_over:
                    _record(manifest, url, dest, algorithm, digest, first=False)
                return dest
            found = f"{dest} is there but its {algorithm} {digest} does not match the {_pin(checksum, recorded)}"
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    have = part.stat().st_size if part.exists() else 0
    request = urllib.request.Request(url, headers={"Range": f"bytes={have}-"} if have else {})
    expected = None
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            resumed = have and response.status == 206
            length = response.headers.get("Content-Length")
            expected = int(length) + (have if resumed else 0) if length is not None else None
            bar = Progress(expected or 1, f"download {dest.name}", log_every_s=10)
            with open(part, "ab" if resumed else "wb") as fh:
                if resumed:
                    bar.update(have)
                for block in iter(lambda: response.read(1 << 20), b""):
                    fh.write(block)
                    bar.update(len(block))
            bar.close()
    except urllib.error.HTTPError as exc:
        if not (exc.code == 416 and have):  # 416: the .part already holds the whole file
            raise _offline(url, dest, exc, found) from None
    except (urllib.error.URLError, OSError) as exc:
        raise _offline(url, dest, exc, found) from None
    got = part.stat().st_size
    if expected is not None and got < expected:
        raise DownloadError(f"{url}: the download to {part} stopped after {got} of {expected} bytes; run again to "
                            f"resume it")
    if size is not None and got != size:
        part.unlink()
        raise DownloadError(f"{url}: {got} bytes, not the {_pin(size, recorded, 'size ')}; the partial file was "
                            f"removed, run again to download it anew")
    digest = file_digest(part, algorithm)
    if checksum is not None and digest != checksum:
        part.unlink()
        raise DownloadError(f"{url}: {algorithm} {digest} does not match the {_pin(checksum, recorded)}; the partial "
                            f"file was removed, run again to download it anew")
    os.replace(part, dest)
    if manifest is not None and (checksum is None or carry_over):
        _record(manifest, url, dest, algorithm, digest, unpinned, first=checksum is None)
    return dest


def _pin(value, recorded: str, what: str = "") -> str:
    return f"{what}{value}{recorded}" if recorded else f"pinned {what}{value}"


def _offline(url: str, dest: Path, exc: Exception, found: str | None) -> DownloadError:
    note = f" ({found})" if found else ""
    return DownloadError(f"cannot download {url} to {dest} ({exc}). This machine may be offline: download it "
                         f"elsewhere and place it at {dest}{note}, or use the synthetic stand-in")
