"""The raw CALM corpora (specs/calm.md 1.1): download, check, extract, and the BNC from a zip placed by hand.

Everything lives under <resources>/calm/, in the reference's data/ layout:

    news/news.2009.tgz -> news/training-monolingual/news.2009.{fr,es,en,de,cs}.shuffled
    domain/europarl-v7.en.gz -> domain/europarl.raw
    domain/wikitext-103-raw-v1.zip -> domain/wikitext-103-raw/wiki.train.raw (the train split only)
    domain/bnc.zip (placed by hand) -> domain/bnc/ (extracted) -> domain/bnc.raw
    checksums.json: SHA-256 and size of each file that has no published checksum (UNPINNED), recorded at first use

An extracted file is written to a temporary name and renamed, so its presence means it is complete; once it is
there its archive is not read (or checked) again. prepare() then writes news_{dev,test} and domain_{dev,test}
beside them (reprobench.calm.corpora)."""

from __future__ import annotations

import codecs
import gzip
import os
import shutil
import tarfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from reprobench.calm import corpora
from reprobench.core.atomic import atomic_path
from reprobench.core.download import check_recorded, download, record_first_use
from reprobench.core.errors import ReprobenchError
from reprobench.core.progress import log


@dataclass(frozen=True)
class Source:
    url: str
    file: str  # where it is saved, relative to <resources>/calm
    sha256: str | None = None  # a published value; None: recorded in checksums.json at first use
    size: int | None = None


# www.statmt.org serves the same files over https (the reference's data.py fetched them over http): the transfer
# is authenticated, though the content is still unpinned (UNPINNED).
NEWS = Source("https://www.statmt.org/wmt13/training-monolingual-news-2009.tgz", "news/news.2009.tgz")
EUROPARL = Source("https://www.statmt.org/wmt14/training-monolingual-europarl-v7/europarl-v7.en.gz",
                  "domain/europarl-v7.en.gz")
# Pinned with the SHA-256 that ml-explore/mlx-data (python/mlx/data/datasets/wikitext.py) and the Julia DataDeps
# registration of dellison/LanguageModelingDatasets.jl (src/datasets/wikitext.jl) pin for this URL, also the Git LFS
# SHA-256 of the Hugging Face Hub's copy of the zip (datasets/mattdangerw/wikitext-103-raw, commit 3555105, 192 MB);
# the size in bytes is the one public download scripts check together with that digest.
WIKITEXT = Source("https://s3.amazonaws.com/research.metamind.io/wikitext/wikitext-103-raw-v1.zip",
                  "domain/wikitext-103-raw-v1.zip",
                  "91c00ae287f0d699e18605c84afc9e45c192bc6b7797ff8837e5474655a33794", 191_984_949)
NEWS_MEMBER = "training-monolingual/news.2009.{lang}.shuffled"
WIKI_MEMBER = "wikitext-103-raw/wiki.train.raw"
BNC_ZIP = "domain/bnc.zip"
BNC_HANDLE = "20.500.12024/2554"
BNC_PAGE = "https://ota.bodleian.ox.ac.uk/repository/xmlui/handle/20.500.12024/2554"
# The corpora without a pinned checksum, and why: no published SHA-256 (or size) was found for them. Their SHA-256 and
# size are recorded in checksums.json at first use and every later use is checked against that record, so a file
# that changes on the server or on disk is noticed, but the first copy is trusted as it comes (fetch logs this).
UNPINNED = {
    NEWS.file: "statmt.org publishes no checksum for the WMT09 monolingual news archive, and no dataset registry or "
               "download script found pins one",
    EUROPARL.file: "statmt.org publishes no checksum for the Europarl v7 monolingual English file, and no dataset "
                   "registry or download script found pins one",
    BNC_ZIP: "the BNC is licensed and placed by hand; the Oxford Text Archive publishes no checksum for its zip",
}
BNC_FILEIDS = r"[A-K]/\w*/\w*\.xml"
MANIFEST = "checksums.json"
_ARCHIVE_ERRORS = (tarfile.TarError, zipfile.BadZipFile, OSError, EOFError, zlib.error, NotImplementedError)


def calm_root(resources) -> Path:
    return Path(resources) / "calm"


def fetch(source: Source, resources, timeout: float = 60.0) -> Path:
    """Download (resumable) and check `source`; an offline machine gets an error naming the URL and the path to
    place the file at by hand."""
    root = calm_root(resources)
    why = None if source.sha256 else UNPINNED.get(source.file, "no published checksum is known for it")
    # a manifest written when these URLs were http:// still pins the file
    aliases = ("http://" + source.url.removeprefix("https://"),) if source.url.startswith("https://") else ()
    return download(source.url, root / source.file, source.sha256, "sha256", timeout, manifest=root / MANIFEST,
                    size=source.size, unpinned=why, aliases=aliases)


def _bad_archive(archive, exc, by_hand: bool = False) -> ReprobenchError:
    again = ("place a good copy there" if by_hand else
             f"delete it and its entry in {MANIFEST} (if any), then run again to download it anew")
    why = " ".join(str(exc).split()) or type(exc).__name__  # tarfile's reasons span lines
    return ReprobenchError(f"cannot read {archive}: {why} (corrupt or truncated? {again})")


def fetch_news(resources, langs=corpora.LANGS, source: Source = NEWS) -> dict[str, Path]:
    """{lang: news/training-monolingual/news.2009.<lang>.shuffled}, extracted from the WMT09 archive."""
    folder = calm_root(resources) / "news"
    wanted = {lang: folder / NEWS_MEMBER.format(lang=lang) for lang in langs}
    if all(p.exists() for p in wanted.values()):
        return wanted
    archive = fetch(source, resources)
    tmp = folder / ".news.extracting"
    shutil.rmtree(tmp, ignore_errors=True)
    targets = {NEWS_MEMBER.format(lang=lang) for lang in langs}
    try:
        with tarfile.open(archive) as tar:
            found = set()
            for member in tar:  # one pass over the compressed stream
                if member.name in targets:
                    tar.extract(member, tmp, filter="data")
                    found.add(member.name)
                    if found == targets:
                        break
        if found != targets:
            raise ReprobenchError(f"{archive}: no member {', '.join(sorted(targets - found))}; not the WMT09 news "
                                  f"archive")
        for lang, path in wanted.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(tmp / NEWS_MEMBER.format(lang=lang), path)
    except _ARCHIVE_ERRORS as exc:
        raise _bad_archive(archive, exc) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return wanted


def fetch_europarl(resources, source: Source = EUROPARL) -> Path:
    """domain/europarl.raw: the gunzipped Europarl v7 English text, checked to be UTF-8 as the reference decodes it."""
    out = calm_root(resources) / "domain" / "europarl.raw"
    if out.exists():
        return out
    archive = fetch(source, resources)
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        with gzip.open(archive, "rb") as src, atomic_path(out) as tmp, open(tmp, "wb") as dst:
            for block in iter(lambda: src.read(1 << 20), b""):
                decoder.decode(block)
                dst.write(block)
            decoder.decode(b"", final=True)
    except UnicodeDecodeError as exc:
        raise ReprobenchError(f"{archive}: not UTF-8 text ({exc.reason})") from None
    except _ARCHIVE_ERRORS as exc:
        raise _bad_archive(archive, exc) from None
    return out


def fetch_wikitext(resources, source: Source = WIKITEXT) -> Path:
    """domain/wikitext-103-raw/wiki.train.raw: the raw WikiText-103 train split (the only split CALM uses)."""
    out = calm_root(resources) / "domain" / WIKI_MEMBER
    if out.exists():
        return out
    archive = fetch(source, resources)
    try:
        with zipfile.ZipFile(archive) as zf:
            if WIKI_MEMBER not in zf.namelist():
                raise ReprobenchError(f"{archive}: no member {WIKI_MEMBER}; not the WikiText-103 raw archive")
            with zf.open(WIKI_MEMBER) as src, atomic_path(out) as tmp, open(tmp, "wb") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)  # the zip's CRC is checked at the member's end
    except _ARCHIVE_ERRORS as exc:
        raise _bad_archive(archive, exc) from None
    return out


def _extract_zip(archive: Path, dest: Path) -> None:
    """Extract into a temporary folder, then rename onto `dest`; a member named outside the folder stops it."""
    tmp = dest.with_name(f".{dest.name}.extracting")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with zipfile.ZipFile(archive) as zf:
            for name in zf.namelist():
                parts = PurePosixPath(name.replace("\\", "/")).parts
                if name.startswith(("/", "\\")) or ".." in parts or (parts and ":" in parts[0]):
                    raise ReprobenchError(f"{archive}: member {name!r} points outside the extraction folder")
            zf.extractall(tmp)
        os.replace(tmp, dest)
    except _ARCHIVE_ERRORS as exc:
        raise _bad_archive(archive, exc, by_hand=True) from None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _texts_folder(folder: Path, archive: Path) -> Path:
    for candidate in (folder / "Texts", folder / "download" / "Texts", *sorted(folder.glob("*/Texts")),
                      *sorted(folder.glob("*/*/Texts"))):
        if candidate.is_dir():
            return candidate
    raise ReprobenchError(f"{archive}: no Texts/ folder inside; not the BNC XML edition")


def prepare_bnc(resources) -> Path:
    """domain/bnc.raw from domain/bnc.zip: every sentence of NLTK's BNCCorpusReader (Texts/, files A-K) as its
    tokens joined by one space, one sentence a line. The BNC needs a licence, so the zip is placed by hand; no
    checksum is published for it (UNPINNED), so its SHA-256 and size are recorded in checksums.json once it has
    extracted, and checked before any later extraction."""
    root = calm_root(resources)
    out = root / "domain" / "bnc.raw"
    if out.exists():
        return out
    archive = root / BNC_ZIP
    if not archive.exists():
        raise ReprobenchError(
            f"the British National Corpus (XML edition) cannot be downloaded without a licence: get it from the "
            f"Oxford Text Archive, handle {BNC_HANDLE} ({BNC_PAGE}), and place the zip at {archive}")
    folder = root / "domain" / "bnc"
    if not folder.is_dir():
        recorded = check_recorded(archive, BNC_PAGE, root / MANIFEST, "sha256")
        log(f"extracting {archive}")
        _extract_zip(archive, folder)
        if not recorded:  # only a zip that extracted: a bad first copy is replaced without editing the manifest
            record_first_use(archive, BNC_PAGE, root / MANIFEST, "sha256", UNPINNED[BNC_ZIP])
    texts = _texts_folder(folder, archive)
    try:
        import nltk.data
        from nltk.corpus.reader.bnc import BNCCorpusReader
    except ImportError:
        raise ReprobenchError("reading the BNC needs NLTK: pip install -c constraints.txt nltk") from None
    # NLTK (3.9.3 on) reads corpora only under its data path: authorise the extracted BNC for this read only.
    nltk.data.path.append(str(folder.resolve()))
    try:
        _write_bnc_sentences(BNCCorpusReader(root=str(texts), fileids=BNC_FILEIDS), texts, out)
    finally:
        nltk.data.path.remove(str(folder.resolve()))
    return out


def _write_bnc_sentences(reader, texts: Path, out: Path) -> None:
    fileids = reader.fileids()
    if not fileids:
        raise ReprobenchError(f"{texts}: no BNC files matching {BNC_FILEIDS}")
    log(f"reading {len(fileids)} BNC files from {texts}")
    with atomic_path(out) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
        for fileid in fileids:  # file by file, in the reader's (sorted) order: the same as reader.sents()
            try:
                for sent in reader.sents(fileid):
                    fh.write(" ".join(sent) + "\n")
            except Exception as exc:  # NLTK raises parse errors of several kinds; name the file
                raise ReprobenchError(f"{texts / fileid}: cannot read it as BNC XML ({exc})") from None


def fetch_all(resources) -> tuple[dict[str, Path], dict[str, Path]]:
    """The raw sources: ({lang: news file} for MultiLingual, {domain: file} for MultiDomain). The BNC comes first:
    it is the one that can stop for a file to place by hand, before hours of downloading."""
    bnc = prepare_bnc(resources)
    news = fetch_news(resources)
    domains = {"wiki": fetch_wikitext(resources), "europarl": fetch_europarl(resources), "bnc": bnc,
               "news": news["en"]}
    return news, domains


def prepare(resources, top_words: int = corpora.TOP_WORDS) -> Path:
    """Download, extract and prepare everything; returns <resources>/calm (holding news_* and domain_*)."""
    news, domains = fetch_all(resources)
    root = calm_root(resources)
    corpora.prepare_multilingual(news, root)
    corpora.prepare_multidomain(domains, root, top=top_words)
    return root
