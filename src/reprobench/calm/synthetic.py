"""The offline stand-in for the CALM corpora: generated text in the real layout, prepared by the real pipeline.

MultiLingual: five character-level "languages" named fr, es, en, de, cs, each a character bigram model. Like the
real ones they come in families: fr/es are small perturbations of one parent model and en/de of another, while cs
has a parent of its own; so a clustering of the languages (e.g. of their bigram statistics) recovers the two pairs.
Each language has a few letters of its own, fr an occasional NBSP (non-ASCII whitespace, which the reference's
vocabulary maps to '<unk>'), and a rare character that falls below the count threshold, so that the char filter
drops lines as it does on real text.

MultiDomain: four word-level "domains" named wiki, europarl, bnc, news, drawn from unigram models with topics: a
line picks one of its domain's topics, and each word is a common function word, a content word shared by all
domains, or a word of that topic. Topic words come from the domain's own words and from words it shares with one
other domain, so vocabularies overlap as real domains do. Each domain is written in its source's conventions
(WikiText's ' @-@ ' and '= = heading = =' lines, NLTK-split punctuation for the BNC, attached punctuation for
Europarl and news).

The raw files go where the real ones go under <resources>/calm (but the news domain gets its own file,
domain/news.raw: the real one reuses the English news of MultiLingual, which here is character gibberish), and
reprobench.calm.corpora prepares news_{dev,test} and domain_{dev,test} from them, so everything downstream is
unchanged. Every folder it writes holds a SYNTHETIC_STAND_IN file; is_synthetic() tells. Not the CALM corpora."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import numpy as np

from reprobench.calm import corpora
from reprobench.calm.corpora import SYNTHETIC_MARKER
from reprobench.core.errors import ReprobenchError

BASE_LETTERS = "abcdefghijklmnopqrstuvwxyz.,"
OWN_LETTERS = {"fr": "éèàç", "es": "ñáóí", "en": "'w", "de": "äöüß", "cs": "řčšěž"}
SPECIALS = {"fr": {"\xa0": 0.002}}  # probability after a letter
RARE = {"fr": "œ", "es": "¿", "en": "£", "de": "€", "cs": "ů"}
FAMILIES = {"romance": ("fr", "es"), "germanic": ("en", "de"), "slavic": ("cs",)}
FUNCTION_WORDS = ("the of and to a in is that for it was on with as by at be this from are an which or have "
                  "not has had but its were they been their one all we there would also more will can who other "
                  "into than only some such these").split()
DOMAIN_PAIRS = (("wiki", "news"), ("europarl", "news"), ("wiki", "bnc"))  # domains that share topic words


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _language_models(rng, parent_scale: float, child_scale: float) -> dict[str, tuple[list[str], np.ndarray]]:
    """{lang: (symbols, transition matrix)}; symbols are the letters, then ' ', '\\n', the specials, the rare char."""
    letters = list(dict.fromkeys(BASE_LETTERS + "".join(OWN_LETTERS.values())))
    models = {}
    for family in FAMILIES.values():
        # rows: after each letter, and after a space or newline (a word start); a column bias makes some letters
        # frequent everywhere in the family, as in real languages
        parent = rng.normal(0, parent_scale, (len(letters) + 1, len(letters))) + rng.normal(0, 1.0, len(letters))
        for lang in family:
            logits = parent + rng.normal(0, child_scale, parent.shape)
            own = set(BASE_LETTERS + OWN_LETTERS[lang])
            logits[:, [c not in own for c in letters]] = -np.inf
            keep = [i for i, c in enumerate(letters) if c in own]
            probs = _softmax(logits)[:, keep]
            symbols = [letters[i] for i in keep] + [" ", "\n", *SPECIALS.get(lang, {}), RARE[lang]]
            n_letters, n = len(keep), len(symbols)
            specials = list(SPECIALS.get(lang, {}).values())
            p_space, p_newline, p_rare = 0.17, 0.01, 2e-6
            matrix = np.zeros((n, n))
            after_letter = np.concatenate([(1 - p_space - p_newline - sum(specials) - p_rare) * probs[keep, :],
                                           np.tile([p_space, p_newline, *specials, p_rare], (n_letters, 1))], axis=1)
            matrix[:n_letters] = after_letter
            word_start = np.zeros(n)
            word_start[:n_letters] = (1 - p_rare) * probs[-1]
            word_start[-1] = p_rare
            matrix[n_letters:] = word_start  # after ' ', '\n', a special or the rare char
            models[lang] = (symbols, matrix)
    return models


def _sample_chars(symbols: list[str], matrix: np.ndarray, n: int, rng, chains: int = 512) -> str:
    """`n` characters of the Markov chain, run as `chains` parallel chains from a line start, concatenated."""
    chains = max(1, min(chains, n // 64))
    steps = -(-n // chains)
    cumulative = np.cumsum(matrix, axis=1)
    cumulative[:, -1] = 1.0
    state = np.full(chains, symbols.index("\n"))
    out = np.empty((chains, steps), dtype=np.int64)
    for t in range(steps):
        u = rng.random(chains)
        state = np.minimum((cumulative[state] < u[:, None]).sum(axis=1), len(symbols) - 1)
        out[:, t] = state
    text = "".join(np.asarray(symbols, dtype=object)[out.ravel()[:n]])
    return text if text.endswith("\n") else text + "\n"


def _pseudo_words(rng, n: int, taken: set[str]) -> list[str]:
    onsets, vowels, codas = "b c d f g h k l m n p r s t v z br st tr pl gr ch".split(), "a e i o u ai ea ou".split(), \
        ["", "", "n", "r", "s", "l", "t"]
    words = []
    while len(words) < n:
        word = "".join(rng.choice(onsets) + rng.choice(vowels) for _ in range(int(rng.integers(1, 4))))
        word += rng.choice(codas)
        if word not in taken:
            taken.add(word)
            words.append(word)
    return words


def _zipf(rng, size: int, n: int, exponent: float = 1.1) -> np.ndarray:
    weights = 1.0 / np.arange(1, size + 1) ** exponent
    return rng.choice(size, n, p=weights / weights.sum())


def _domain_lines(domain: str, rng, words: dict, n_words: int, n_topics: int = 8, topic_size: int = 150) -> list[str]:
    pool = words[domain] + [w for pair in DOMAIN_PAIRS if domain in pair for w in words[pair]]
    topics = np.array([rng.permutation(pool)[:topic_size] for _ in range(n_topics)])
    lengths = rng.poisson(17, size=n_words // 12 + 1) + 3
    lengths = lengths[: int(np.searchsorted(np.cumsum(lengths), n_words)) + 1]
    total = int(lengths.sum())
    topic = np.repeat(rng.integers(n_topics, size=len(lengths)), lengths)
    kind = rng.choice(3, total, p=[0.4, 0.2, 0.4])
    function = np.asarray(FUNCTION_WORDS)[_zipf(rng, len(FUNCTION_WORDS), total)]
    shared = np.asarray(words["shared"])[_zipf(rng, len(words["shared"]), total)]
    topical = topics[topic, _zipf(rng, topic_size, total)]
    tokens = np.where(kind == 0, function, np.where(kind == 1, shared, topical)).tolist()
    lines, start = [], 0
    for k, length in enumerate(lengths.tolist()):
        sentence = tokens[start:start + length]
        start += length
        if domain == "wiki":
            if k % 20 == 0:
                lines += [" \n", f" {'= ' * (1 + k % 2)}{sentence[0].capitalize()} {' =' * (1 + k % 2)} \n", " \n"]
            if length > 6:
                sentence[3:5] = [f"{sentence[3]} @-@ {sentence[4]}"]
            lines.append(" " + " ".join(sentence[:length // 2] + [","] + sentence[length // 2:] + ["."]) + " \n")
        elif domain == "bnc":  # NLTK's tokens: punctuation split off
            lines.append(" ".join([sentence[0].capitalize(), *sentence[1:length // 2], ",", *sentence[length // 2:],
                                   "."]) + "\n")
        else:  # raw text: punctuation attached
            sentence[0] = sentence[0].capitalize()
            sentence[length // 2 - 1] += ","
            lines.append(" ".join(sentence) + ".\n")
    return lines


def _raw_files(root: Path, chars_per_language: int, words_per_domain: int, seed: int):
    models = _language_models(np.random.default_rng([seed, 0]), parent_scale=1.0, child_scale=0.25)
    news = {}
    for k, lang in enumerate(corpora.LANGS):
        symbols, matrix = models[lang]
        text = _sample_chars(symbols, matrix, chars_per_language, np.random.default_rng([seed, 1, k]))
        news[lang] = root / "news" / "training-monolingual" / f"news.2009.{lang}.shuffled"
        news[lang].parent.mkdir(parents=True, exist_ok=True)
        news[lang].write_text(text, encoding="utf-8")
    rng = np.random.default_rng([seed, 2])
    taken = set(FUNCTION_WORDS)
    words = {"shared": _pseudo_words(rng, 800, taken)}
    for domain in corpora.DOMAINS:
        words[domain] = _pseudo_words(rng, 1500, taken)
    for pair in DOMAIN_PAIRS:
        words[pair] = _pseudo_words(rng, 300, taken)
    paths = {"wiki": root / "domain" / "wikitext-103-raw" / "wiki.train.raw", "europarl": root / "domain" /
             "europarl.raw", "bnc": root / "domain" / "bnc.raw", "news": root / "domain" / "news.raw"}
    for k, domain in enumerate(corpora.DOMAINS):
        paths[domain].parent.mkdir(parents=True, exist_ok=True)
        lines = _domain_lines(domain, np.random.default_rng([seed, 3, k]), words, words_per_domain)
        with open(paths[domain], "w", encoding="utf-8", newline="") as fh:
            fh.writelines(lines)
    return news, paths


def make_synthetic(root, chars_per_language: int = 500_000, words_per_domain: int = 600_000, seed: int = 0,
                   top_words: int = corpora.TOP_WORDS) -> Path:
    """Write the stand-in at `root` (raw files, news_{dev,test}, domain_{dev,test}); the same arguments give the
    same files. Half of each raw file goes to each split. The defaults give each split about 250k characters per
    language and 300k words per domain, enough for lambda = 10k streams. A stand-in already there with the same
    arguments is kept; one with others is replaced; a folder that is not a stand-in is never touched. top_words is
    the word vocabulary's cut per domain (the reference's 25K; the small scale takes fewer, so that the word-level
    output layers of 30 experts stay small)."""
    root = Path(root)
    params = {"chars_per_language": chars_per_language, "words_per_domain": words_per_domain, "seed": seed}
    if top_words != corpora.TOP_WORDS:  # the note of a default stand-in stays as before
        params["top_words"] = top_words
    note = ("Synthetic stand-in for the CALM corpora made by reprobench (reprobench.calm.synthetic); not WMT09 news, "
            "Europarl, the BNC or WikiText-103.\n" + json.dumps(params, sort_keys=True) + "\n")
    if (root / SYNTHETIC_MARKER).exists():
        if (root / SYNTHETIC_MARKER).read_text() == note:
            return root
    elif root.exists() and any(root.iterdir()):
        raise ReprobenchError(f"{root} exists and is not a synthetic stand-in; not overwriting it")
    tmp = root.with_name(f".{root.name}.synthetic-building")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    try:
        news, domains = _raw_files(tmp, chars_per_language, words_per_domain, seed)
        corpora.prepare_multilingual(news, tmp)
        corpora.prepare_multidomain(domains, tmp, top=top_words)
        for folder in [tmp, *(p for p in tmp.rglob("*") if p.is_dir())]:
            (folder / SYNTHETIC_MARKER).write_text(note)
        if root.exists():
            shutil.rmtree(root)
        os.replace(tmp, root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return root


def is_synthetic(path) -> bool:
    """Whether `path` (a folder, or a file in one) was written by make_synthetic."""
    path = Path(path)
    return ((path if path.is_dir() else path.parent) / SYNTHETIC_MARKER).exists()
