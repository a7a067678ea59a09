"""The CALM corpora as the reference prepares and loads them (specs/calm.md 1.2-1.6), from raw text to token arrays.

Layout under a root (the reference's data/ folder; the synthetic stand-in writes the same):

    news_{dev,test}/news.<split>.<lang>.txt        char level, one per language (MultiLingual)
    domain_{dev,test}/<domain>.<split>.txt         word level, one per domain (MultiDomain)
    <split folder>/vocab/<stem>.vocab              that file's vocabulary, one entry a line
    <split folder>/cache/<stem>_<n>_<key>.npy      its first n token ids (int32), for the vocabulary <key>
    <split folder>/cache/vocab_<key>.json          that vocabulary

A class is named by its file stem (news.test.fr, wiki.dev). Text is read as UTF-8 in Python's text mode, as the
reference reads it: '\\r\\n' and '\\r' become '\\n', and lines end at '\\n' only.

Decisions on specs/calm.md D6: the vocabulary files of a split are read in sorted name order, where the
reference takes unsorted glob order, so token ids do not depend on the filesystem. The reference's `strip()` of each
vocabulary line is kept by default (strip_quirk=True): in a char vocabulary every whitespace character (' ', '\\t',
'\\n', NBSP, thin space, ...) reads back as the empty string '', an entry no token ever matches, and then ' ', '\\t',
'\\n' and '<unk>' are added. So non-ASCII whitespace in the text (NBSP in French news) is tokenised as '<unk>'.
strip_quirk=False reads a char vocabulary exactly instead (whitespace characters keep their own ids, no '').
Word vocabularies are the same either way: tokens from str.split() hold no whitespace."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
from array import array
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path

import numpy as np

from reprobench.core.atomic import atomic_path, write_text
from reprobench.core.errors import ReprobenchError

LANGS = ("fr", "es", "en", "de", "cs")  # the reference's lang_list, in its order
DOMAINS = ("wiki", "europarl", "bnc", "news")
SPLITS = ("dev", "test")
MIN_CHAR_COUNT = 100  # a char (and every line holding it) is kept only if it occurs this often in the split
TOP_WORDS = 25_000
UNK = "<unk>"
LEVELS = {"news": "char", "domain": "word"}  # split-folder prefix -> level
SYNTHETIC_MARKER = "SYNTHETIC_STAND_IN"  # no .txt suffix: class files are the split folder's *.txt


class CorpusError(ReprobenchError):
    pass


def read_lines(path: str | os.PathLike) -> Iterator[str]:
    """The lines of a UTF-8 text file, each with its '\\n' (the last may lack one), as text-mode iteration gives."""
    path = Path(path)
    if not path.is_file():
        raise CorpusError(f"{path}: file is missing")
    n = 0
    try:
        with open(path, encoding="utf-8") as fh:
            for line in fh:
                n += 1
                yield line
    except UnicodeDecodeError as exc:
        raise CorpusError(f"{path}: not UTF-8 near line {n + 1} ({exc.reason})") from None


def count_lines(path: str | os.PathLike) -> int:
    return sum(1 for _ in read_lines(path))


def halves(num_lines: int) -> dict[str, tuple[int, int]]:
    """0-based [start, stop) line ranges: dev = lines 1..num_lines//2 (1-based), test = the rest."""
    return {"dev": (0, num_lines // 2), "test": (num_lines // 2, num_lines)}


def _lines(path, start: int, stop: int) -> Iterator[str]:
    return itertools.islice(read_lines(path), start, stop)


def _write_lines(path: Path, lines) -> None:
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8", newline="") as fh:
        fh.writelines(lines)


def filter_char_level(src, out_text, out_vocab, start: int, stop: int, min_count: int = MIN_CHAR_COUNT) -> list[str]:
    """Lines [start, stop) of `src`, keeping a line only if every char in it (its '\\n' included) occurs at least
    `min_count` times in that range, counted before filtering. The vocabulary is those chars in first-appearance
    order, written one per line (char + '\\n'). Returns it."""
    counts: Counter[str] = Counter()
    for line in _lines(src, start, stop):
        counts.update(line)
    vocab = [c for c, n in counts.items() if n >= min_count]
    rare = {c for c, n in counts.items() if n < min_count}
    _write_lines(Path(out_text), (line for line in _lines(src, start, stop) if rare.isdisjoint(line)))
    write_text(out_vocab, "".join(c + "\n" for c in vocab))
    return vocab


def filter_word_level(src, out_text, out_vocab, start: int, stop: int, top: int = TOP_WORDS) -> list[str]:
    """Lines [start, stop) of `src` copied unchanged. The vocabulary is the `top` most frequent whitespace tokens
    (a stable sort, so ties keep first-appearance order) followed by '<unk>'. Returns it."""
    counts: Counter[str] = Counter()
    for line in _lines(src, start, stop):
        counts.update(line.split())
    vocab = [w for w, _ in sorted(counts.items(), key=lambda item: item[1], reverse=True)[:top]] + [UNK]
    _write_lines(Path(out_text), _lines(src, start, stop))
    write_text(out_vocab, "".join(w + "\n" for w in vocab))
    return vocab


def _prepare(sources: Mapping[str, str | os.PathLike], root, prefix: str, name, filter_fn, **kwargs) -> None:
    for key, src in sources.items():
        todo = []
        for split in SPLITS:
            stem = name(split, key)
            text = Path(root) / f"{prefix}_{split}" / f"{stem}.txt"
            vocab = text.parent / "vocab" / f"{stem}.vocab"
            if not (text.exists() and vocab.exists()):  # each is written atomically, the vocabulary last
                todo.append((split, text, vocab))
        if todo:
            bounds = halves(count_lines(src))
            for split, text, vocab in todo:
                filter_fn(src, text, vocab, *bounds[split], **kwargs)


def prepare_multilingual(sources: Mapping[str, str | os.PathLike], root, min_count: int = MIN_CHAR_COUNT) -> Path:
    """{lang: raw file} (news.2009.<lang>.shuffled) -> root/news_{dev,test}; files already there are kept."""
    _prepare(sources, root, "news", lambda split, lang: f"news.{split}.{lang}", filter_char_level,
             min_count=min_count)
    return Path(root)


def prepare_multidomain(sources: Mapping[str, str | os.PathLike], root, top: int = TOP_WORDS) -> Path:
    """{domain: raw file} (wiki: wiki.train.raw, europarl: europarl.raw, bnc: bnc.raw, news:
    news.2009.en.shuffled) -> root/domain_{dev,test}; files already there are kept."""
    _prepare(sources, root, "domain", lambda split, domain: f"{domain}.{split}", filter_word_level, top=top)
    return Path(root)


def level_of(split_dir) -> str:
    prefix = Path(split_dir).name.split("_")[0]
    if prefix not in LEVELS:
        raise CorpusError(f"{split_dir}: not a CALM split folder (news_dev, news_test, domain_dev or domain_test); "
                          f"give the level")
    return LEVELS[prefix]


def class_files(split_dir) -> dict[str, Path]:
    """{class name (file stem): text file}, in sorted order."""
    split_dir = Path(split_dir)
    files = sorted(split_dir.glob("*.txt"))
    if not files:
        raise CorpusError(f"{split_dir}: no class files (*.txt); prepare the corpora first")
    return {f.stem: f for f in files}


def _exact_chars(path: Path) -> list[str]:
    with open(path, encoding="utf-8", newline="") as fh:
        text = fh.read()
    if len(text) % 2 or set(text[1::2]) - {"\n"}:
        raise CorpusError(f"{path}: not a char vocabulary (one char and '\\n' per entry)")
    return list(text[0::2])


def read_vocabulary(split_dir, level: str | None = None, strip_quirk: bool = True) -> list[str]:
    """The union vocabulary of a split as the reference loads it: every vocab/*.vocab (sorted by name), each line
    `strip()`ed, new entries appended in order; then ' ', '\\t', '\\n' for char level; then '<unk>'. The list
    index is the token id."""
    split_dir = Path(split_dir)
    level = level or level_of(split_dir)
    files = sorted((split_dir / "vocab").glob("*.vocab"))
    if not files:
        raise CorpusError(f"{split_dir / 'vocab'}: no *.vocab files; prepare the corpora first")
    tokens: dict[str, None] = {}
    for path in files:
        if level == "char" and not strip_quirk:
            entries = _exact_chars(path)
        else:
            entries = (line.strip() for line in read_lines(path))
        tokens.update(dict.fromkeys(entries))
    if level == "char":
        tokens.update(dict.fromkeys([" ", "\t", "\n"]))
    tokens.update(dict.fromkeys([UNK]))
    return list(tokens)


def tokenize(path, word2idx: Mapping[str, int], level: str, ntokens: int | None = None) -> np.ndarray:
    """The ids of the first `ntokens` tokens of `path` (all if None): char tokens are list(line), '\\n' included;
    word tokens are line.split(); anything not in the vocabulary is '<unk>'."""
    unk = word2idx[UNK]
    ids = array("i")
    for line in read_lines(path):
        ids.extend(word2idx.get(t, unk) for t in (list(line) if level == "char" else line.split()))
        if ntokens is not None and len(ids) >= ntokens:
            break
    if ntokens is not None:
        if len(ids) < ntokens:
            raise CorpusError(f"{path}: has {len(ids)} {level} tokens, fewer than the {ntokens} asked for")
        del ids[ntokens:]
    return np.frombuffer(ids, dtype=np.intc).astype(np.int32, copy=False)


def vocabulary_key(vocab: list[str]) -> str:
    """Names the cache files of a vocabulary, so a changed vocabulary never reuses stale ids."""
    return hashlib.sha256(json.dumps(vocab).encode()).hexdigest()[:12]


def load_tokens(split_dir, ntokens: int | Mapping[str, int] | None = None, level: str | None = None,
                strip_quirk: bool = True) -> tuple[dict[str, np.ndarray], list[str]]:
    """({class name: int32 token ids, memory-mapped}, vocabulary) for a split folder. `ntokens`: how many tokens
    from the start of each class file (an int for all, {class: n} for those classes only, None for whole files).
    Each array is tokenised once and cached as .npy next to its vocabulary's JSON."""
    split_dir = Path(split_dir)
    level = level or level_of(split_dir)
    vocab = read_vocabulary(split_dir, level, strip_quirk)
    word2idx = {t: i for i, t in enumerate(vocab)}
    key = vocabulary_key(vocab)
    files = class_files(split_dir)
    if isinstance(ntokens, Mapping):
        missing = sorted(set(ntokens) - set(files))
        if missing:
            raise CorpusError(f"{split_dir}: no class file for {', '.join(missing)} (classes: {', '.join(files)})")
        wanted = {name: ntokens[name] for name in files if name in ntokens}
    else:
        wanted = dict.fromkeys(files, ntokens)
    cache = split_dir / "cache"
    synthetic = (split_dir / SYNTHETIC_MARKER).exists()
    vocab_json = cache / f"vocab_{key}.json"
    if not vocab_json.exists():
        write_text(vocab_json, json.dumps({"level": level, "strip_quirk": strip_quirk, "synthetic": synthetic,
                                           "tokens": vocab}, ensure_ascii=False) + "\n")
    if synthetic and not (cache / SYNTHETIC_MARKER).exists():
        write_text(cache / SYNTHETIC_MARKER, (split_dir / SYNTHETIC_MARKER).read_text())
    out = {}
    for name, n in wanted.items():
        path = cache / f"{name}_{'all' if n is None else n}_{key}.npy"
        if not path.exists():
            ids = tokenize(files[name], word2idx, level, n)
            with atomic_path(path) as tmp, open(tmp, "wb") as fh:
                np.save(fh, ids)
        try:
            arr = np.load(path, mmap_mode="r")
        except (OSError, ValueError) as exc:
            raise CorpusError(f"{path}: unreadable token cache ({exc}); delete it to rebuild") from None
        if arr.dtype != np.int32 or arr.ndim != 1 or (n is not None and len(arr) != n):
            raise CorpusError(f"{path}: expected {n if n is not None else 'a'} int32 token ids, found shape "
                              f"{arr.shape} {arr.dtype}; delete it to rebuild")
        out[name] = arr
    return out, vocab
