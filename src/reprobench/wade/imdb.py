"""IMDB (Maas et al. 2011) for Table 2 of the WADE paper (specs/wade.md, 3.6): download, a synthetic stand-in in
the same folder layout for offline runs, reading, and the paper's WordPiece tokenizer."""

from __future__ import annotations

import os
import shutil
import tarfile
from pathlib import Path

import numpy as np

from reprobench.core.download import download
from reprobench.core.errors import ReprobenchError

URL = "https://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"
MD5 = "7c2ac02c03563afcf9b574c7e56c153a"  # the checksum torchtext, paddle and others pin for this archive
SYNTHETIC_MARKER = "SYNTHETIC_STAND_IN.txt"


def fetch(resources: str, url: str = URL, md5: str = MD5) -> Path:
    """Download (resumable, checksummed) and extract; returns the aclImdb folder."""
    archive = download(url, Path(resources) / "aclImdb_v1.tar.gz", md5)
    return extract(archive, Path(resources))


def extract(archive: str | os.PathLike, dest: str | os.PathLike) -> Path:
    dest = Path(dest)
    root = dest / "aclImdb"
    if (root / "test" / "pos").is_dir() and (root / "train" / "neg").is_dir():
        return root
    tmp = dest / ".aclImdb.extracting"
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        with tarfile.open(archive) as tar:
            members = [m for m in tar.getmembers() if m.name.startswith("aclImdb/") and
                       (m.isdir() or m.name.endswith(".txt"))]
            tar.extractall(tmp, members=members, filter="data")
    except (tarfile.TarError, OSError) as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ReprobenchError(f"cannot extract {archive}: {exc}") from None
    os.replace(tmp / "aclImdb", root)
    shutil.rmtree(tmp, ignore_errors=True)
    return root


POSITIVE = ("great", "excellent", "wonderful", "superb", "moving", "brilliant", "fun", "beautiful", "best", "loved")
NEGATIVE = ("awful", "boring", "terrible", "worst", "dull", "waste", "poor", "stupid", "bad", "hated")
NEUTRAL = ("the", "movie", "film", "plot", "actor", "scene", "story", "director", "and", "was", "it", "this", "a",
           "of", "character", "ending", "music", "script", "i", "watched", "<br />")


def make_synthetic(dest: str | os.PathLike, n_train: int = 200, n_test: int = 200, seed: int = 0) -> Path:
    """A stand-in corpus in aclImdb's layout ({train,test}/{pos,neg}/<id>_<rating>.txt): reviews of neutral
    words with a few sentiment words whose balance carries the label (about 90% separable). Not IMDB."""
    rng = np.random.default_rng(seed)
    root = Path(dest) / "aclImdb"
    tmp = Path(dest) / ".aclImdb.synthetic"
    shutil.rmtree(tmp, ignore_errors=True)
    for split, n in (("train", n_train), ("test", n_test)):
        for label, (own, other) in (("pos", (POSITIVE, NEGATIVE)), ("neg", (NEGATIVE, POSITIVE))):
            folder = tmp / split / label
            folder.mkdir(parents=True)
            for i in range(n // 2):
                length = int(rng.integers(20, 120))
                words = list(rng.choice(NEUTRAL, size=length))
                for _ in range(int(rng.integers(3, 9))):
                    words.insert(int(rng.integers(0, len(words))), str(rng.choice(own)))
                if rng.random() < 0.3:
                    words.insert(int(rng.integers(0, len(words))), str(rng.choice(other)))
                rating = int(rng.integers(7, 11)) if label == "pos" else int(rng.integers(1, 5))
                (folder / f"{i}_{rating}.txt").write_text(" ".join(words).capitalize() + ".")
    (tmp / SYNTHETIC_MARKER).write_text("Synthetic stand-in for aclImdb made by reprobench; not the IMDB corpus.\n")
    shutil.rmtree(root, ignore_errors=True)
    os.replace(tmp, root)
    return root


def is_synthetic(root: str | os.PathLike) -> bool:
    return (Path(root) / SYNTHETIC_MARKER).exists()


def read(root: str | os.PathLike) -> dict[str, tuple[list[str], np.ndarray]]:
    """{'train': (texts, labels), 'test': ...}: label 1 for pos, 0 for neg, files in sorted order."""
    root = Path(root)
    out = {}
    for split in ("train", "test"):
        texts, labels = [], []
        for label_name, label in (("neg", 0), ("pos", 1)):
            folder = root / split / label_name
            if not folder.is_dir():
                raise ReprobenchError(f"{folder} is missing: not an aclImdb folder")
            for path in sorted(folder.glob("*.txt")):
                texts.append(path.read_text(encoding="utf-8"))
                labels.append(label)
        out[split] = (texts, np.array(labels, dtype=np.int64))
    return out


def train_tokenizer(texts):
    """WordPiece as the reference: NFD + lowercase + strip accents, whitespace pre-tokenizer, trained on train
    and test text with the model's default trainer (30k vocabulary and no special tokens, so there is no [PAD]
    or [UNK] token and padding id 0 is the token '!').

    Made deterministic (docs/DEVIATIONS.md, V12). The trainer gives the continuing-subword tokens ('##e', ...) their
    ids in hash-map order, and those ids break ties between equally frequent merges, so the reference's vocabulary
    changes from run to run (huggingface/tokenizers#1794). Here those tokens are registered first, sorted, so the
    same text always gives the same vocabulary; then the ids are laid out as the trainer would (alphabet, then
    '##' tokens, then merges in order) and the tokenizer is rebuilt without any special tokens."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

    def fresh(model):
        tok = Tokenizer(model)
        tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.Lowercase(), normalizers.StripAccents()])
        tok.pre_tokenizer = pre_tokenizers.Whitespace()
        return tok

    tok = fresh(models.WordPiece(unk_token="[UNK]"))
    continuing = set()
    for text in texts:
        for word, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(text)):
            continuing.update(word[1:])
    subwords = ["##" + c for c in sorted(continuing)]
    tok.train_from_iterator(texts, trainers.WordPieceTrainer(special_tokens=subwords))
    trained = sorted(tok.get_vocab().items(), key=lambda item: item[1])
    alphabet = [t for t, i in trained[len(subwords):] if len(t) == 1]
    merges = [t for t, i in trained[len(subwords):] if len(t) > 1]
    layout = alphabet + subwords + merges
    return fresh(models.WordPiece({t: i for i, t in enumerate(layout)}, unk_token="[UNK]"))
