"""CALM corpora (specs/calm.md 1.2-1.6): each step on a corpus small enough to work out by hand, and the stand-in."""

import filecmp
from collections import Counter

import numpy as np
import pytest

from reprobench.calm import corpora, synthetic
from reprobench.calm.corpora import CorpusError


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_dev_is_the_first_half_of_the_lines_and_test_the_rest(tmp_path):
    assert corpora.halves(5) == {"dev": (0, 2), "test": (2, 5)}
    assert corpora.halves(1) == {"dev": (0, 0), "test": (0, 1)}
    src = write(tmp_path / "raw.txt", "l1 a\nl2 b\nl3 c\nl4 d\nl5 e")  # the last line has no '\n'
    corpora.prepare_multidomain({"wiki": src}, tmp_path / "out")
    assert (tmp_path / "out/domain_dev/wiki.dev.txt").read_text() == "l1 a\nl2 b\n"
    assert (tmp_path / "out/domain_test/wiki.test.txt").read_text() == "l3 c\nl4 d\nl5 e"


def test_char_filter_counts_before_filtering_and_keeps_first_appearance_order(tmp_path):
    # dev (lines 1-4): a 6, b 5, '\n' 4, z 1. With min_count 4, z is rare, so "abz" goes. After filtering '\n'
    # occurs only 3 times, but the counts were taken before, so '\n' stays and so do the other lines.
    # test (lines 5-8): x 4, '\n' 4, y 3: y is rare, so "xy" and "yy" go.
    src = write(tmp_path / "news.2009.xx.shuffled", "abab\nba\nabz\naab\nxx\nxy\nx\nyy\n")
    corpora.prepare_multilingual({"xx": src}, tmp_path, min_count=4)
    assert (tmp_path / "news_dev/news.dev.xx.txt").read_text() == "abab\nba\naab\n"
    assert (tmp_path / "news_dev/vocab/news.dev.xx.vocab").read_text() == "a\nb\n\n\n"
    assert (tmp_path / "news_test/news.test.xx.txt").read_text() == "xx\nx\n"
    assert (tmp_path / "news_test/vocab/news.test.xx.vocab").read_text() == "x\n\n\n"
    assert corpora.filter_char_level(src, tmp_path / "t", tmp_path / "v", 0, 4) == []  # default 100: all rare
    assert (tmp_path / "t").read_text() == ""


def test_word_level_copies_lines_and_keeps_the_top_k_with_ties_in_first_appearance_order(tmp_path):
    # dev: b 2, a 2, c 2, d 1, e 1, first seen in the order b a c d e
    src = write(tmp_path / "raw", "b a  c\nc\tb d\na e\n\nq\nq\nq\nq\n")
    assert corpora.filter_word_level(src, tmp_path / "t", tmp_path / "v", 0, 4, top=2) == ["b", "a", "<unk>"]
    assert (tmp_path / "v").read_text() == "b\na\n<unk>\n"
    assert (tmp_path / "t").read_text() == "b a  c\nc\tb d\na e\n\n"  # unchanged, whitespace and empty line too
    assert corpora.filter_word_level(src, tmp_path / "t", tmp_path / "v", 0, 4) == ["b", "a", "c", "d", "e", "<unk>"]


def test_union_vocabulary_keeps_the_strip_quirk_by_default(tmp_path):
    # Char vocab files list one char a line; strip() turns ' ', NBSP, '\n' and '\t' into ''. Files in sorted order:
    # en (b, c, '\t') then fr (a, ' ', NBSP, b, '\n').
    split = tmp_path / "news_test"
    write(split / "vocab/news.test.fr.vocab", "".join(c + "\n" for c in ["a", " ", "\xa0", "b", "\n"]))
    write(split / "vocab/news.test.en.vocab", "".join(c + "\n" for c in ["b", "c", "\t"]))
    faithful = corpora.read_vocabulary(split)
    assert faithful == ["b", "c", "", "a", " ", "\t", "\n", "<unk>"]
    exact = corpora.read_vocabulary(split, strip_quirk=False)
    assert exact == ["b", "c", "\t", "a", " ", "\xa0", "\n", "<unk>"]
    write(split / "news.test.fr.txt", "a\xa0b c\n")
    ids = corpora.tokenize(split / "news.test.fr.txt", {t: i for i, t in enumerate(faithful)}, "char")
    assert ids.tolist() == [3, 7, 0, 4, 1, 6]  # NBSP is <unk>; '' never occurs
    ids = corpora.tokenize(split / "news.test.fr.txt", {t: i for i, t in enumerate(exact)}, "char")
    assert ids.tolist() == [3, 5, 0, 4, 1, 6]
    words = tmp_path / "domain_test"
    write(words / "vocab/wiki.test.vocab", "x\ny\n<unk>\n")
    write(words / "vocab/bnc.test.vocab", "y\nz\n<unk>\n")
    assert corpora.read_vocabulary(words) == ["y", "z", "<unk>", "x"]  # bnc first; <unk> where bnc's file has it


def test_tokens_are_cached_once_as_int32_npy_and_read_memory_mapped(tmp_path, monkeypatch):
    split = tmp_path / "domain_dev"
    write(split / "vocab/wiki.dev.vocab", "the\ncat\n<unk>\n")
    write(split / "vocab/bnc.dev.vocab", "a\ndog\n<unk>\n")
    write(split / "wiki.dev.txt", "the cat sat\n\nthe  dog\n")
    write(split / "bnc.dev.txt", "a dog\n")
    # vocabulary: a dog <unk> the cat
    tokens, vocab = corpora.load_tokens(split, {"wiki.dev": 4})
    assert vocab == ["a", "dog", "<unk>", "the", "cat"] and list(tokens) == ["wiki.dev"]
    assert isinstance(tokens["wiki.dev"], np.memmap) and tokens["wiki.dev"].dtype == np.int32
    assert tokens["wiki.dev"].tolist() == [3, 4, 2, 3]  # 'sat' is <unk>; the empty line gives no token
    key = corpora.vocabulary_key(vocab)
    assert (split / f"cache/wiki.dev_4_{key}.npy").exists() and (split / f"cache/vocab_{key}.json").exists()
    monkeypatch.setattr(corpora, "tokenize", lambda *a, **k: pytest.fail("tokenised again"))
    assert corpora.load_tokens(split, {"wiki.dev": 4})[0]["wiki.dev"].tolist() == [3, 4, 2, 3]
    monkeypatch.undo()
    everything, _ = corpora.load_tokens(split)
    assert everything["wiki.dev"].tolist() == [3, 4, 2, 3, 1] and everything["bnc.dev"].tolist() == [0, 1]
    with pytest.raises(CorpusError, match=r"bnc.dev.txt: has 2 word tokens, fewer than the 3 asked for"):
        corpora.load_tokens(split, 3)
    with pytest.raises(CorpusError, match=r"no class file for news.dev"):
        corpora.load_tokens(split, {"news.dev": 1})


def test_char_tokens_include_the_newline(tmp_path):
    split = tmp_path / "news_dev"
    write(split / "vocab/news.dev.fr.vocab", "a\n\n\n")
    write(split / "news.dev.fr.txt", "ab\na")
    tokens, vocab = corpora.load_tokens(split, 4)
    assert vocab == ["a", "", " ", "\t", "\n", "<unk>"]
    assert tokens["news.dev.fr"].tolist() == [0, 5, 4, 0]


def test_missing_and_undecodable_files_are_named(tmp_path):
    with pytest.raises(CorpusError, match=r"nowhere.txt: file is missing"):
        corpora.prepare_multilingual({"fr": tmp_path / "nowhere.txt"}, tmp_path)
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\n\xff\xfe\n")
    with pytest.raises(CorpusError, match=r"bad.txt: not UTF-8"):
        corpora.prepare_multidomain({"wiki": bad}, tmp_path)
    with pytest.raises(CorpusError, match=r"domain_test: no class files"):
        corpora.class_files(tmp_path / "domain_test")
    cache = tmp_path / "domain_dev" / "cache"
    write(tmp_path / "domain_dev/vocab/wiki.dev.vocab", "x\n<unk>\n")
    write(tmp_path / "domain_dev/wiki.dev.txt", "x y\n")
    key = corpora.vocabulary_key(["x", "<unk>"])
    write(cache / f"wiki.dev_2_{key}.npy", "not an array")
    with pytest.raises(CorpusError, match=r"wiki.dev_2_.*\.npy: unreadable token cache"):
        corpora.load_tokens(tmp_path / "domain_dev", 2)


def bigrams(path):
    text = path.read_text(encoding="utf-8")
    return Counter(zip(text, text[1:]))


def js_divergence(p, q):
    keys = sorted(set(p) | set(q))
    p = np.array([p[k] for k in keys], float) + 0.5
    q = np.array([q[k] for k in keys], float) + 0.5
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2
    return 0.5 * (p * np.log(p / m)).sum() + 0.5 * (q * np.log(q / m)).sum()


@pytest.fixture(scope="module")
def stand_in(tmp_path_factory):
    return synthetic.make_synthetic(tmp_path_factory.mktemp("calm") / "calm", 40_000, 12_000, seed=5)


def test_stand_in_has_the_real_layout_is_marked_and_deterministic(stand_in, tmp_path):
    assert sorted(corpora.class_files(stand_in / "news_test")) == [f"news.test.{x}" for x in sorted(corpora.LANGS)]
    assert sorted(corpora.class_files(stand_in / "domain_dev")) == [f"{x}.dev" for x in sorted(corpora.DOMAINS)]
    for folder in [stand_in, *(p for p in stand_in.rglob("*") if p.is_dir())]:
        assert synthetic.is_synthetic(folder), folder
    assert synthetic.is_synthetic(stand_in / "news_dev" / "news.dev.fr.txt")
    tokens, vocab = corpora.load_tokens(stand_in / "news_dev", 1000)
    assert set(tokens) == {f"news.dev.{x}" for x in corpora.LANGS} and "" in vocab
    assert synthetic.is_synthetic(stand_in / "news_dev" / "cache")
    again = synthetic.make_synthetic(tmp_path / "again", 40_000, 12_000, seed=5)
    for sub in ("news_test", "domain_test", "news_dev/vocab", "domain/wikitext-103-raw"):
        names = sorted(p.name for p in (again / sub).iterdir() if p.is_file())
        assert filecmp.cmpfiles(stand_in / sub, again / sub, names, shallow=False)[0] == names
    other = synthetic.make_synthetic(tmp_path / "other", 40_000, 12_000, seed=6)
    assert (other / "news_test/news.test.fr.txt").read_text() != (again / "news_test/news.test.fr.txt").read_text()
    write(tmp_path / "real" / "x", "")
    with pytest.raises(synthetic.ReprobenchError, match="real exists and is not a synthetic stand-in"):
        synthetic.make_synthetic(tmp_path / "real")


def test_stand_in_languages_form_two_close_pairs_and_one_distant_language(stand_in):
    raw = {x: bigrams(stand_in / f"news/training-monolingual/news.2009.{x}.shuffled") for x in corpora.LANGS}
    d = {(a, b): js_divergence(raw[a], raw[b]) for a in corpora.LANGS for b in corpora.LANGS if a != b}
    nearest = {a: min((b for b in corpora.LANGS if b != a), key=lambda b: d[a, b]) for a in corpora.LANGS}
    assert nearest["fr"] == "es" and nearest["es"] == "fr" and nearest["en"] == "de" and nearest["de"] == "en"
    assert min(d["cs", b] for b in corpora.LANGS if b != "cs") > max(d["fr", "es"], d["en", "de"])


def test_stand_in_domains_share_common_words_and_keep_their_own(stand_in):
    vocabs = {x: set((stand_in / f"domain_test/vocab/{x}.test.vocab").read_text().split()) for x in corpora.DOMAINS}
    common = set.intersection(*vocabs.values())
    assert {"the", "of", "and"} <= common and len(common) > 50
    for x in corpora.DOMAINS:
        own = vocabs[x] - set.union(*(vocabs[y] for y in corpora.DOMAINS if y != x))
        assert len(own) > 100, x
    assert "@-@" in vocabs["wiki"] and "@-@" not in vocabs["europarl"]
