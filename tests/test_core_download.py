"""core.download: resume, size check, checksum pinned or recorded in a manifest, and the offline message."""

import contextlib
import hashlib
import http.server
import json
import threading

import pytest

from reprobench.core.download import DownloadError, check_recorded, download, read_manifest, record_first_use


class FileHandler(http.server.BaseHTTPRequestHandler):
    """Serves `files` by path with HTTP Range support, as the real servers do; a path in `cut` announces its full
    length but stops after that many bytes (a dropped connection)."""
    files: dict = {}
    cut: dict = {}
    ranges: list = []

    def do_GET(self):
        data = self.files.get(self.path)
        if data is None:
            self.send_error(404)
            return
        start = int(self.headers["Range"].split("=")[1].split("-")[0]) if "Range" in self.headers else 0
        self.ranges.append(start)
        if start >= len(data) and start:
            self.send_response(416)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        self.send_response(206 if start else 200)
        body = data[start:]
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body[: self.cut.get(self.path, len(body))])

    def log_message(self, *args):
        pass


@contextlib.contextmanager
def file_server():
    """Yields serve({path: bytes}) -> base URL on loopback; the handler's class attributes are reset each time."""
    FileHandler.files, FileHandler.cut, FileHandler.ranges = {}, {}, []
    httpd = http.server.HTTPServer(("127.0.0.1", 0), FileHandler)
    threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()

    def start(files):
        FileHandler.files.update(files)
        return f"http://127.0.0.1:{httpd.server_port}"

    try:
        yield start
    finally:
        httpd.shutdown()
        httpd.server_close()


@pytest.fixture
def serve():
    with file_server() as start:
        yield start


PAYLOAD = bytes(range(256)) * 40


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def test_manifest_records_the_first_download_and_verifies_later_ones(tmp_path, serve):
    url = serve({"/f.bin": PAYLOAD}) + "/f.bin"
    dest, manifest = tmp_path / "d" / "f.bin", tmp_path / "d" / "checksums.json"
    assert download(url, dest, algorithm="sha256", manifest=manifest) == dest and dest.read_bytes() == PAYLOAD
    assert read_manifest(manifest) == {url: {"file": "f.bin", "algorithm": "sha256", "digest": sha256(PAYLOAD),
                                             "size": len(PAYLOAD)}}
    download(url, dest, algorithm="sha256", manifest=manifest)  # verified against the record, not fetched again
    assert FileHandler.ranges == [0]
    dest.write_bytes(b"x" * len(PAYLOAD))  # damaged on disk: fetched again and checked against the record
    download(url, dest, algorithm="sha256", manifest=manifest)
    assert dest.read_bytes() == PAYLOAD
    dest.unlink()
    FileHandler.files["/f.bin"] = PAYLOAD[::-1]  # the server's file changed since the first download
    with pytest.raises(DownloadError, match=r"does not match the [0-9a-f]{64} recorded in .*checksums.json"):
        download(url, dest, algorithm="sha256", manifest=manifest)
    assert not dest.exists() and not (tmp_path / "d" / "f.bin.part").exists()


def test_an_unpinned_first_download_says_so_and_a_former_url_keeps_its_record(tmp_path, serve, capsys):
    url = serve({"/f.bin": PAYLOAD}) + "/f.bin"
    dest, manifest = tmp_path / "f.bin", tmp_path / "m.json"
    download(url, dest, algorithm="sha256", manifest=manifest, unpinned="no one publishes one")
    said = " ".join(capsys.readouterr().err.split())
    assert f"{url} has no published checksum (no one publishes one): recorded the sha256 {sha256(PAYLOAD)}" in said
    assert "this first copy is trusted as it came" in said
    download(url, dest, algorithm="sha256", manifest=manifest)  # verified: nothing logged, nothing fetched
    assert capsys.readouterr().err == "" and FileHandler.ranges == [0]
    # the URL's former spelling (aliases): its entry pins a fresh download, which is then recorded under the new URL
    old = "http://old.example/f.bin"
    manifest.write_text(json.dumps({old: read_manifest(manifest)[url]}))
    dest.unlink()
    download(url, dest, algorithm="sha256", manifest=manifest, aliases=(old,))
    assert read_manifest(manifest)[url] == read_manifest(manifest)[old] and "first copy" not in capsys.readouterr().err
    manifest.write_text(json.dumps({old: read_manifest(manifest)[old]}))
    dest.unlink()
    FileHandler.files["/f.bin"] = PAYLOAD[::-1]  # changed on the server: refused against the former URL's record
    with pytest.raises(DownloadError, match=r"does not match the [0-9a-f]{64} recorded in .*m.json"):
        download(url, dest, algorithm="sha256", manifest=manifest, aliases=(old,))


def test_a_file_placed_by_hand_is_checked_against_its_record_once_it_has_one(tmp_path):
    path, manifest = tmp_path / "bnc.zip", tmp_path / "m.json"
    path.write_bytes(PAYLOAD)
    assert not check_recorded(path, "by-hand", manifest)  # nothing recorded yet
    record_first_use(path, "by-hand", manifest, unpinned="licensed")
    assert check_recorded(path, "by-hand", manifest)
    path.write_bytes(PAYLOAD[::-1])
    with pytest.raises(DownloadError, match=r"bnc.zip: sha256 [0-9a-f]{64} does not match the [0-9a-f]{64} recorded "
                                            r"in .*m.json at its first use; .*delete its entry \(by-hand\)"):
        check_recorded(path, "by-hand", manifest)
    path.write_bytes(PAYLOAD[:-1])
    with pytest.raises(DownloadError, match=r"bnc.zip has 10239 bytes, not the size 10240 recorded"):
        check_recorded(path, "by-hand", manifest)


def test_a_file_placed_by_hand_is_recorded_at_first_use(tmp_path):
    dest, manifest = tmp_path / "f.bin", tmp_path / "m.json"
    dest.write_bytes(PAYLOAD)
    url = "http://127.0.0.1:9/f.bin"  # never contacted
    download(url, dest, algorithm="sha256", manifest=manifest)
    assert read_manifest(manifest)[url]["digest"] == sha256(PAYLOAD)
    dest.write_bytes(PAYLOAD[:-1])
    with pytest.raises(DownloadError, match=r"cannot download http://127.0.0.1:9/f.bin to .*f.bin .*place it at "
                                            r".*f.bin \(.*f.bin is there but has 10239 bytes, not 10240\)"):
        download(url, dest, algorithm="sha256", manifest=manifest, timeout=5)


def test_resume_after_a_dropped_connection_then_size_and_checksum(tmp_path, serve):
    url = serve({"/f.bin": PAYLOAD}) + "/f.bin"
    FileHandler.cut["/f.bin"] = 1000
    dest = tmp_path / "f.bin"
    with pytest.raises(DownloadError, match=r"stopped after 1000 of 10240 bytes; run again to resume"):
        download(url, dest, sha256(PAYLOAD), "sha256")
    assert (tmp_path / "f.bin.part").stat().st_size == 1000 and not dest.exists()
    FileHandler.cut.clear()
    download(url, dest, sha256(PAYLOAD), "sha256", size=len(PAYLOAD))
    assert dest.read_bytes() == PAYLOAD and FileHandler.ranges == [0, 1000]


def test_a_complete_part_file_is_accepted_on_416(tmp_path, serve):
    url = serve({"/f.bin": PAYLOAD}) + "/f.bin"
    (tmp_path / "f.bin.part").write_bytes(PAYLOAD)
    assert download(url, tmp_path / "f.bin", sha256(PAYLOAD), "sha256").read_bytes() == PAYLOAD


def test_pinned_size_mismatch_removes_the_partial_file(tmp_path, serve):
    url = serve({"/f.bin": PAYLOAD}) + "/f.bin"
    with pytest.raises(DownloadError, match=r"10240 bytes, not the pinned size 99"):
        download(url, tmp_path / "f.bin", sha256(PAYLOAD), "sha256", size=99)
    assert list(tmp_path.iterdir()) == []


def test_the_md5_default_and_no_checksum_still_work(tmp_path, serve):
    url = serve({"/f.bin": PAYLOAD}) + "/f.bin"
    download(url, tmp_path / "a.bin", hashlib.md5(PAYLOAD).hexdigest())  # the existing callers' form
    assert download(url, tmp_path / "b.bin").read_bytes() == PAYLOAD  # no checksum, no manifest: taken as is


def test_an_unreadable_manifest_is_named(tmp_path):
    manifest = tmp_path / "m.json"
    manifest.write_text("{not json")
    with pytest.raises(DownloadError, match=r"checksum manifest .*m.json is unreadable"):
        download("http://127.0.0.1:9/f", tmp_path / "f", algorithm="sha256", manifest=manifest)
    manifest.write_text(json.dumps({"http://127.0.0.1:9/f": {"algorithm": "md5", "digest": "0"}}))
    with pytest.raises(DownloadError, match=r"the entry for http://127.0.0.1:9/f is not a sha256 digest"):
        download("http://127.0.0.1:9/f", tmp_path / "f", algorithm="sha256", manifest=manifest)
