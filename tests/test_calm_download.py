"""CALM raw corpora: small archives in the real formats served on loopback (resume, checksums, manifest, offline),
corrupt archives, and the BNC placed by hand and read through NLTK."""

import gzip
import hashlib
import io
import json
import re
import shutil
import tarfile
import zipfile

import pytest

from reprobench.calm import download as calm
from reprobench.calm.download import EUROPARL, NEWS, WIKITEXT, Source
from reprobench.core.download import DownloadError, read_manifest
from reprobench.core.errors import ReprobenchError
from test_core_download import FileHandler, file_server

NEWS_TEXT = {lang: "".join(f"{lang} sentence {i} \u00e9\n" for i in range(50)) for lang in ("fr", "es", "en", "de",
                                                                                           "cs", "hu")}
EUROPARL_TEXT = "Resumption of the session\nI declare resumed the session of the European Parliament.\n"
WIKI_TEXT = {"train": " = Valkyria = \n \n The game @-@ play .\n", "valid": " = V = \n", "test": " = T = \n"}


def sha256(data):
    return hashlib.sha256(data).hexdigest()


def news_tgz():
    """training-monolingual-news-2009.tgz's layout: training-monolingual/news.2009.<lang>.shuffled, more languages
    than CALM uses."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        folder = tarfile.TarInfo("training-monolingual")
        folder.type = tarfile.DIRTYPE
        tar.addfile(folder)
        for lang, text in NEWS_TEXT.items():
            data = text.encode()
            info = tarfile.TarInfo(f"training-monolingual/news.2009.{lang}.shuffled")
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def wikitext_zip():
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for split, text in WIKI_TEXT.items():
            zf.writestr(f"wikitext-103-raw/wiki.{split}.raw", text)
    return buf.getvalue()


NEWS_TGZ, WIKI_ZIP, EUROPARL_GZ = news_tgz(), wikitext_zip(), gzip.compress(EUROPARL_TEXT.encode())


@pytest.fixture
def base():
    with file_server() as start:
        yield start({"/news.tgz": NEWS_TGZ, "/wiki.zip": WIKI_ZIP, "/europarl.gz": EUROPARL_GZ})


def test_the_sources_are_the_reference_ones_over_https_and_the_unpinned_ones_say_why():
    assert NEWS.url == "https://www.statmt.org/wmt13/training-monolingual-news-2009.tgz" and NEWS.sha256 is None
    assert EUROPARL.url == "https://www.statmt.org/wmt14/training-monolingual-europarl-v7/europarl-v7.en.gz"
    assert WIKITEXT.url == "https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-raw-v1.zip"
    assert WIKITEXT.sha256 == "91c00ae287f0d699e18605c84afc9e45c192bc6b7797ff8837e5474655a33794"
    assert WIKITEXT.size == 191_984_949
    # every real corpus is either pinned or listed, with its reason, in the one list of unpinned ones
    sources = [NEWS, EUROPARL, WIKITEXT]
    assert all(s.url.startswith("https://") for s in sources)
    assert set(calm.UNPINNED) == {s.file for s in sources if s.sha256 is None} | {calm.BNC_ZIP}
    assert all(s.size is not None for s in sources if s.sha256 is not None)
    assert all("no checksum" in why for why in calm.UNPINNED.values())


def test_news_resumes_records_its_checksum_and_extracts_the_five_languages(tmp_path, base, capsys):
    source = Source(f"{base}/news.tgz", NEWS.file)
    archive = tmp_path / "calm/news/news.2009.tgz"
    archive.parent.mkdir(parents=True)
    archive.with_name("news.2009.tgz.part").write_bytes(NEWS_TGZ[:100])  # an interrupted download
    files = calm.fetch_news(tmp_path, source=source)
    said = " ".join(capsys.readouterr().err.split())  # the first copy is trusted as it came: the log says so, and why
    assert f"{source.url} has no published checksum ({calm.UNPINNED[NEWS.file]})" in said
    assert "this first copy is trusted as it came" in said
    assert FileHandler.ranges == [100] and archive.read_bytes() == NEWS_TGZ
    assert sorted(files) == sorted(["fr", "es", "en", "de", "cs"])
    for lang, path in files.items():
        assert path == tmp_path / f"calm/news/training-monolingual/news.2009.{lang}.shuffled"
        assert path.read_text() == NEWS_TEXT[lang]
    assert sorted(p.name for p in (tmp_path / "calm/news/training-monolingual").iterdir()) == sorted(
        f"news.2009.{lang}.shuffled" for lang in files)  # not hu, no temporary folder
    manifest = read_manifest(tmp_path / "calm/checksums.json")
    assert manifest[source.url] == {"file": "news.2009.tgz", "algorithm": "sha256", "digest": sha256(NEWS_TGZ),
                                    "size": len(NEWS_TGZ)}
    # A damaged archive is noticed against the manifest when it is next used, and fetched again.
    files["fr"].unlink()
    archive.write_bytes(b"\0" * len(NEWS_TGZ))
    calm.fetch_news(tmp_path, source=source)
    assert FileHandler.ranges == [100, 0] and files["fr"].read_text() == NEWS_TEXT["fr"]
    # The server's archive changed since the first download: it stops, naming the manifest.
    files["fr"].unlink()
    archive.unlink()
    FileHandler.files["/news.tgz"] = news_tgz()[:-1] + b"x"
    with pytest.raises(DownloadError, match=r"does not match the [0-9a-f]{64} recorded in .*calm/checksums.json"):
        calm.fetch_news(tmp_path, source=source)


def test_wikitext_is_checked_against_its_pinned_checksum_and_only_the_train_split_is_kept(tmp_path, base):
    wrong = Source(f"{base}/wiki.zip", WIKITEXT.file, "0" * 64, len(WIKI_ZIP))
    with pytest.raises(DownloadError, match=r"does not match the pinned 0{64}"):
        calm.fetch_wikitext(tmp_path, source=wrong)
    source = Source(f"{base}/wiki.zip", WIKITEXT.file, sha256(WIKI_ZIP), len(WIKI_ZIP))
    path = calm.fetch_wikitext(tmp_path, source=source)
    assert path == tmp_path / "calm/domain/wikitext-103-raw/wiki.train.raw"
    assert path.read_text() == WIKI_TEXT["train"] and [p.name for p in path.parent.iterdir()] == ["wiki.train.raw"]
    assert not (tmp_path / "calm/checksums.json").exists()  # a pinned checksum needs no record


def test_europarl_is_gunzipped_as_utf8(tmp_path, base):
    path = calm.fetch_europarl(tmp_path, source=Source(f"{base}/europarl.gz", EUROPARL.file))
    assert path == tmp_path / "calm/domain/europarl.raw" and path.read_text() == EUROPARL_TEXT
    bad = tmp_path / "other"
    (bad / "calm/domain").mkdir(parents=True)
    (bad / "calm/domain/europarl-v7.en.gz").write_bytes(gzip.compress(b"caf\xe9\n"))  # Latin-1, placed by hand
    with pytest.raises(ReprobenchError, match=r"europarl-v7.en.gz: not UTF-8"):
        calm.fetch_europarl(bad, source=Source("http://127.0.0.1:9/x.gz", EUROPARL.file))
    assert not (bad / "calm/domain/europarl.raw").exists()


def test_offline_names_the_url_and_where_to_place_the_file(tmp_path):
    url = "http://127.0.0.1:9/training-monolingual-news-2009.tgz"
    dest = re.escape(str(tmp_path / "calm/news/news.2009.tgz"))
    with pytest.raises(DownloadError, match=rf"cannot download {re.escape(url)} to {dest} .*place it at {dest}"):
        calm.fetch_news(tmp_path, source=Source(url, NEWS.file))


@pytest.mark.parametrize("what", ["news", "europarl", "wiki", "news-garbage"])
def test_a_corrupt_or_truncated_archive_stops_naming_it(tmp_path, what):
    source = {"news": NEWS, "news-garbage": NEWS, "europarl": EUROPARL, "wiki": WIKITEXT}[what]
    data = {"news": NEWS_TGZ, "news-garbage": b"not a tar archive" * 50, "europarl": EUROPARL_GZ,
            "wiki": WIKI_ZIP}[what]
    archive = tmp_path / "calm" / source.file
    archive.parent.mkdir(parents=True)
    archive.write_bytes(data if what == "news-garbage" else data[: len(data) // 2])  # placed by hand, cut short
    fetch = {"news": calm.fetch_news, "news-garbage": calm.fetch_news, "europarl": calm.fetch_europarl,
             "wiki": calm.fetch_wikitext}[what]
    with pytest.raises(ReprobenchError, match=rf"cannot read {re.escape(str(archive))}: .*corrupt or truncated"):
        fetch(tmp_path, source=Source("http://127.0.0.1:9/x", source.file))
    left = sorted(str(p.relative_to(tmp_path)) for p in (tmp_path / "calm").rglob("*"))
    assert left == sorted(["calm/checksums.json", f"calm/{source.file}", f"calm/{source.file.split('/')[0]}"])


def test_a_manifest_recorded_under_the_former_http_url_still_pins_the_file(tmp_path):
    """The statmt.org URLs moved from http:// to https://: a checksums.json written before keeps pinning the file
    (carried over to the new URL) instead of the file on disk being taken as a new first copy."""
    source = Source("https://127.0.0.1:9/news.tgz", NEWS.file)  # never contacted while the file matches
    archive = tmp_path / "calm" / NEWS.file
    archive.parent.mkdir(parents=True)
    archive.write_bytes(NEWS_TGZ)
    entry = {"file": "news.2009.tgz", "algorithm": "sha256", "digest": sha256(NEWS_TGZ), "size": len(NEWS_TGZ)}
    (tmp_path / "calm/checksums.json").write_text(json.dumps({"http://127.0.0.1:9/news.tgz": entry}))
    assert calm.fetch(source, tmp_path) == archive
    assert read_manifest(tmp_path / "calm/checksums.json")[source.url] == entry
    (tmp_path / "calm/checksums.json").write_text(json.dumps({"http://127.0.0.1:9/news.tgz": entry}))
    archive.write_bytes(b"\0" * len(NEWS_TGZ))  # changed on disk: not re-recorded, fetched again (offline here)
    with pytest.raises(DownloadError, match=r"does not match the [0-9a-f]{64} recorded in .*checksums.json"):
        calm.fetch(source, tmp_path, timeout=5)


def test_missing_bnc_names_the_oxford_text_archive_handle_and_the_path(tmp_path):
    where = re.escape(str(tmp_path / "calm/domain/bnc.zip"))
    with pytest.raises(ReprobenchError, match=rf"handle 20.500.12024/2554 \(https://ota.bodleian.ox.ac.uk/repository/"
                                              rf"xmlui/handle/20.500.12024/2554\), and place the zip at {where}"):
        calm.fetch_all(tmp_path)  # the BNC is checked first, before any download
    assert not (tmp_path / "calm").exists()


def bnc_doc(doc_id, sentences):
    """A BNC XML edition document: <bncDoc><teiHeader/><wtext><div><p><s n=..><w c5 hw pos>word </w>..."""
    body = []
    for n, sentence in enumerate(sentences, 1):
        words = "".join(f'<c c5="PUN">{w}</c>' if w in ".,!" else f'<w c5="NN1" hw="{w.lower()}" pos="SUBST">{w} </w>'
                        for w in sentence)
        body.append(f'<s n="{n}">{words}</s>')
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<bncDoc xml:id="{doc_id}"><teiHeader><fileDesc><titleStmt>'
            f'<title>{doc_id} sample</title></titleStmt></fileDesc></teiHeader><wtext type="OTHERPUB"><div level="1">'
            f'<head><s n="0"><w c5="NN1" hw="title" pos="SUBST">Title</w></s></head><p>{"".join(body)}</p></div>'
            f'</wtext></bncDoc>\n')


def bnc_zip(path, prefix="", extra=()):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{prefix}Texts/A/A0/A00.xml", bnc_doc("A00", [["The", "cat", "sat", "."], ["Yes", "!"]]))
        zf.writestr(f"{prefix}Texts/K/K1/K1A.xml", bnc_doc("K1A", [["Caf\u00e9", "au", "lait", ","]]))
        zf.writestr(f"{prefix}Texts/L/L0/L00.xml", bnc_doc("L00", [["not", "read"]]))  # outside [A-K]
        for name, data in extra:
            zf.writestr(name, data)


@pytest.mark.parametrize("prefix", ["", "download/"])
def test_bnc_is_read_through_nltk_one_sentence_a_line(tmp_path, prefix):
    pytest.importorskip("nltk", reason="NLTK is not installed (pip install -c constraints.txt nltk)")
    archive = tmp_path / "calm/domain/bnc.zip"
    archive.parent.mkdir(parents=True)
    bnc_zip(archive, prefix)
    path = calm.prepare_bnc(tmp_path)
    assert path == tmp_path / "calm/domain/bnc.raw"
    assert path.read_text(encoding="utf-8") == "Title\nThe cat sat .\nYes !\nTitle\nCaf\u00e9 au lait ,\n"
    assert (tmp_path / f"calm/domain/bnc/{prefix}Texts/A/A0/A00.xml").exists()
    # unpinned (no published checksum): recorded once it extracted, checked before any later extraction
    entry = read_manifest(tmp_path / "calm/checksums.json")[calm.BNC_PAGE]
    assert entry["digest"] == sha256(archive.read_bytes()) and entry["size"] == archive.stat().st_size
    path.unlink()
    shutil.rmtree(tmp_path / "calm/domain/bnc")
    bnc_zip(archive, prefix, extra=[("README", "another copy")])
    with pytest.raises(DownloadError, match=r"bnc.zip(: sha256 .* does not match| has \d+ bytes, not the size).* "
                                            r"recorded in .*checksums.json"):
        calm.prepare_bnc(tmp_path)


def test_a_bnc_zip_with_a_member_outside_its_folder_or_corrupt_stops_naming_it(tmp_path):
    archive = tmp_path / "calm/domain/bnc.zip"
    archive.parent.mkdir(parents=True)
    bnc_zip(archive, extra=[("../../escaped.xml", "x")])
    with pytest.raises(ReprobenchError, match=r"bnc.zip: member '../../escaped.xml' points outside"):
        calm.prepare_bnc(tmp_path)
    assert not (tmp_path / "escaped.xml").exists() and not (tmp_path / "calm/domain/bnc").exists()
    bnc_zip(archive)
    archive.write_bytes(archive.read_bytes()[:200])
    with pytest.raises(ReprobenchError, match=r"cannot read .*bnc.zip: .*place a good copy there"):
        calm.prepare_bnc(tmp_path)
    assert sorted(p.name for p in archive.parent.iterdir()) == ["bnc.zip"]
