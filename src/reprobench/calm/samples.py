"""Appendix D's generated text and Appendix A's corpus samples.

Appendix D (Figure 5): text sampled from a model at several stages of training, "one character at a time, ... using
them as input for the next time step". The paper shows the stages around one switch (English -> French): the end of
the fragment before it, 5 and 10 batches into the new class, and the end of the new fragment. Here the switch is the
first one in the evaluated second half whose fragment is long enough for the 10-batch stage (else the longest), and
a stage that would lie beyond the fragment is left out. The reference's sampling code is not in the repository
(generated_text.txt stays empty: specs/calm.md section 4), so these are choices (DEVIATIONS C22): each sample starts
from the learner's state right after the stage's batch, fed the next token of the stream; it runs in eval mode
(dropout off) on a copy of the state, so training is unchanged; tokens are drawn with a generator of their own
(seeded by the run's seed and the stage), so the losses are the same bytes with or without samples. All b streams
are sampled in parallel; stream 0's text is kept.

Appendix A (Figures 2 and 3): the first lines of every class's text, as the streams read them.
"""

from __future__ import annotations

from itertools import islice
from pathlib import Path

import torch

from reprobench.calm.stream import Stream

STAGE_BATCHES = (5, 10)  # Figure 5: 5 and 10 batches after the switch
SAMPLE_TOKENS = {"char": 300, "word": 60}  # tokens generated per stage
CORPUS_LINES = 2  # Figures 2 and 3: about two lines per class


def stages(stream: Stream) -> dict[int, str]:
    """{index of the batch after which to sample: stage label} around one switch of the second half."""
    frags = stream.fragments
    candidates = frags[max(len(frags) // 2, 1):]
    if not candidates:
        return {}
    long_enough = [f for f in candidates if f.n_batches > max(STAGE_BATCHES)]
    new = long_enough[0] if long_enough else max(candidates, key=lambda f: f.n_batches)
    old = frags[new.index - 1]
    out = {old.first_batch + old.n_batches - 1: f"end of a {old.class_name} fragment"}
    for k in STAGE_BATCHES:
        if k < new.n_batches:
            out[new.first_batch + k - 1] = f"{k} batches into a {new.class_name} fragment"
    out[new.first_batch + new.n_batches - 1] = f"end of the {new.class_name} fragment"
    return out


def generate(learner, first: torch.Tensor, n: int, generator: torch.Generator,
             class_id: int | None = None) -> torch.Tensor:
    """n tokens (n, b) sampled one at a time from the learner's predictor, starting with input `first` (b,)."""
    out = torch.empty(n, first.shape[0], dtype=torch.long, device=first.device)
    x = first.view(1, -1)
    with learner.predictor(class_id) as step:
        for t in range(n):
            probs = step(x)[0].exp()  # (b, V)
            x = torch.multinomial(probs, 1, generator=generator).view(1, -1)
            out[t] = x[0]
    return out


def decode(ids, vocab: list[str], level: str) -> str:
    """Token ids -> text: characters joined as they are, words with single spaces."""
    tokens = [vocab[i] for i in ids]
    return "".join(tokens) if level == "char" else " ".join(tokens)


class Sampler:
    """The hook run_online calls after every batch: samples where `stages` asks, text kept in `self.texts`
    ({label: text}, in stage order), which the checkpoint carries."""

    def __init__(self, stage_at: dict[int, str], vocab: list[str], level: str, seed: int):
        self.stage_at, self.vocab, self.level, self.seed = stage_at, vocab, level, seed
        self.texts: dict[str, str] = {}

    def __call__(self, learner, batch, device) -> None:
        label = self.stage_at.get(batch.index)
        if label is None or not hasattr(learner, "predictor"):
            return
        generator = torch.Generator(device=device).manual_seed(self.seed * 1000 + batch.index)
        first = batch.y[-1].to(device)
        ids = generate(learner, first, SAMPLE_TOKENS[self.level], generator,
                       batch.class_id if learner.oracle else None)
        self.texts[label] = decode(ids[:, 0].tolist(), self.vocab, self.level)


def appendix_d(records: dict[str, list[dict]], out: str, stand_in: bool) -> None:
    """One model's file: {dataset: [curve records with 'samples']} -> text, stage by stage."""
    from reprobench.core.atomic import write_text

    lines = []
    if stand_in:
        lines += ["SYNTHETIC STAND-IN: generated corpora, not the paper's.", ""]
    for dataset, recs in records.items():
        for rec in recs:
            setting = rec["setting"]
            lines += [f"== {rec['model']} on {dataset}, lambda {setting['lambda']}, seed {rec['seed']}, "
                      f"{rec['variant']} ==", ""]
            samples = rec.get("samples") or []
            if not samples:
                lines += ["(no samples: the model has no predictor, or the stream no switch in its second half)", ""]
            for label, text in samples:
                lines += [f"-- {label} --", text, ""]
    write_text(out, "\n".join(lines) + "\n")


def appendix_a(split_dirs: dict[str, str], out: str, stand_in: bool, n_lines: int = CORPUS_LINES) -> None:
    """The first `n_lines` non-empty lines of every class file of each dataset's split folder."""
    from reprobench.calm import corpora
    from reprobench.core.atomic import write_text

    lines = ["SYNTHETIC STAND-IN: generated corpora, not the paper's.", ""] if stand_in else []
    for dataset, split_dir in split_dirs.items():
        lines += [f"== {dataset} ({Path(split_dir).name}) ==", ""]
        for name, path in corpora.class_files(split_dir).items():
            with open(path, encoding="utf-8") as f:
                head = [line.rstrip("\n") for line in islice((ln for ln in f if ln.strip()), n_lines)]
            lines += [name, *head, ""]
    write_text(out, "\n".join(lines) + "\n")
