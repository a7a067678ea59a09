"""The two CALM jobs: prepare the corpora once (tokenised as memory-mapped arrays), then one online run per
(dataset, lambda, model, variant, seed), written as a curve file.

corpora.json (the prepare stage's output) names, per split (test: Table 1; dev: Appendix C's Transformer) and
dataset, the prepared split folder, its vocabulary size, the classes, and how many tokens of each class the planned
streams need at most; the prepare stage tokenises exactly that many once (reprobench.calm.corpora caches them as
.npy), so every training job only maps them.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from reprobench.calm import PAPER, corpora, synthetic, zoo
from reprobench.calm.grid import SPLITS
from reprobench.calm.stream import CorpusTooShortError, Stream
from reprobench.core import checkpoint as checkpoints
from reprobench.core import curves
from reprobench.core.atomic import write_text
from reprobench.core.errors import ReprobenchError
from reprobench.core.plugins import load_class
from reprobench.core.progress import log
from reprobench.core.provenance import Timer

SPLIT = "test"  # Table 1 is on the test halves (the dev halves were for model selection)


def prepare(source: str, resources: str, datasets: list[str], plan: dict[str, list[int]], seeds: int,
            n_fragments: int, window: int, out: str, synthetic_chars: int, synthetic_words: int,
            top_words: int, splits: tuple[str, ...] = (SPLIT,)) -> dict:
    """Make or download the corpora, tokenise what the planned streams need (on each of `splits`), write
    corpora.json."""
    if source == "synthetic":
        root = synthetic.make_synthetic(resources, chars_per_language=synthetic_chars,
                                        words_per_domain=synthetic_words, top_words=top_words)
    else:
        from reprobench.calm import download

        root = download.prepare(resources, top_words)
    info = {split: {} for split in splits}
    for split, dataset in ((s, d) for s in splits for d in datasets):
        split_dir = Path(root) / f"{SPLITS[dataset]}_{split}"
        names = sorted(corpora.class_files(split_dir))
        need = dict.fromkeys(names, 0)
        for lam in plan[dataset]:
            for seed in range(seeds):
                for name, n in Stream(names, lam, seed, n_fragments, window=window).tokens_needed().items():
                    need[name] = max(need[name], n)
        try:
            tokens, vocab = corpora.load_tokens(split_dir, need)
        except corpora.CorpusError as exc:
            raise ReprobenchError(f"{exc}: the corpus is too short for calm.lambdas.{dataset} = {plan[dataset]} "
                                  f"with {n_fragments} fragments") from None
        info[split][dataset] = {"split_dir": str(split_dir), "vocabulary": len(vocab), "classes": names,
                                "ntokens": need, "synthetic": synthetic.is_synthetic(split_dir),
                                "level": corpora.level_of(split_dir)}
        stand_in = " (SYNTHETIC STAND-IN)" if info[split][dataset]["synthetic"] else ""
        log(f"{dataset} ({split}): {len(names)} classes, vocabulary {len(vocab)}, "
            f"{sum(len(t) for t in tokens.values())} tokens tokenised{stand_in}")
    write_text(out, json.dumps({"paper": PAPER.id, "source": source, "splits": info}, indent=1) + "\n")
    return info


def read_corpora(path: str, split: str = SPLIT) -> dict:
    """{dataset: info} of one split; a clear error names a file that is not a corpora.json of prepare (another
    paper's, or one whose entries lack a field or have the wrong type)."""
    from reprobench.core.errors import ResultsFileError

    # what prepare writes per dataset, with its type: the training jobs and Appendix A read every one of them
    fields = {"split_dir": str, "vocabulary": int, "classes": list, "ntokens": dict, "synthetic": bool, "level": str}
    hint = "; run `reprobench calm prepare`"
    try:
        blob = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ResultsFileError(path, f"is not a CALM corpora.json ({exc}){hint}") from None
    if not isinstance(blob, dict) or blob.get("paper") != PAPER.id or not isinstance(blob.get("splits"), dict):
        what = f"paper {blob.get('paper')!r}" if isinstance(blob, dict) else type(blob).__name__
        raise ResultsFileError(path, f"is not a CALM corpora.json (it has {what}; expected paper '{PAPER.id}' and "
                               f"'splits'){hint}")
    if not isinstance(blob["splits"].get(split), dict):
        raise ResultsFileError(path, f"has no '{split}' split (it has {sorted(blob['splits'])}){hint}")
    info = blob["splits"][split]
    for dataset, entry in info.items():
        if not isinstance(entry, dict):
            raise ResultsFileError(path, f"splits.{split}.{dataset} is not an object{hint}")
        bad = [f"{k} ({t.__name__})" for k, t in fields.items()
               if not isinstance(entry.get(k), t) or (t is int and isinstance(entry.get(k), bool))]
        if bad:
            raise ResultsFileError(path, f"splits.{split}.{dataset} lacks or mistypes {', '.join(bad)}{hint}")
    return info


def build_learner(model: str, dataset: str, lam: int, vocab: int, variant: str, size_factor: float,
                  max_gate_steps: int = 0):
    """A paper model from the zoo, or a user's class: built as cls(vocab); used as it is when it has `learn` (a
    learner with the interface of reprobench.calm.learners), else wrapped as a language model
    `forward(x, hidden) -> (logits, hidden)` in the single-model learner (Adam 1e-3, clip 1.0, li 1; corrected
    scores in eval mode)."""
    if model in zoo.ALL_MODELS:
        return zoo.build(model, dataset, lam, vocab, variant, size_factor, max_gate_steps)
    from reprobench.calm.learners import SingleLearner

    obj = load_class(model, "calm.models")(vocab)
    return obj if hasattr(obj, "learn") else SingleLearner(obj, 1e-3, 1, score_eval=variant == "corrected")


def train_run(corpora_json: str, dataset: str, lam: int, model: str, variant: str, seed: int, n_fragments: int,
              window: int, size_factor: float, max_gate_steps: int, out: str, scale: str, device: str,
              checkpoint: str | None = None, checkpoint_every_s: float = 600.0) -> None:
    import torch

    from reprobench.calm.online import run_online

    split = zoo.config(model, dataset, lam).split if model in zoo.ALL_MODELS else SPLIT
    info = read_corpora(corpora_json, split).get(dataset)
    if info is None:
        raise ReprobenchError(f"file {corpora_json}: has no dataset '{dataset}' on the {split} split; prepare it "
                              "first")
    tokens, vocab = corpora.load_tokens(info["split_dir"], info["ntokens"])
    if len(vocab) != info["vocabulary"]:
        raise ReprobenchError(f"{info['split_dir']}: vocabulary changed since {corpora_json} was written")
    torch.manual_seed(seed)  # the reference seeds torch, then builds the model, then the stream
    learner = build_learner(model, dataset, lam, len(vocab), variant, size_factor, max_gate_steps)
    if hasattr(learner, "to"):  # built on the CPU, so that parameters do not depend on the device
        learner.to(device)
    try:
        stream = Stream(info["classes"], lam, seed, n_fragments, window=window,
                        bptt=zoo.bptt(model, window)).attach(tokens)
    except CorpusTooShortError as exc:
        raise ReprobenchError(f"calm.lambdas.{dataset} = {lam}: {exc}") from None
    sampler = None
    if seed == 0:  # Appendix D: the first seed of every setting samples text at a few stages
        from reprobench.calm.samples import Sampler, stages

        sampler = Sampler(stages(stream), vocab, info["level"], seed)
    identity = {"dataset": dataset, "lam": lam, "model": model, "variant": variant, "seed": seed,
                "n_fragments": n_fragments, "window": window, "size_factor": size_factor,
                "max_gate_steps": max_gate_steps}
    with Timer() as timer:
        result = run_online(learner, stream, device, checkpoint, identity, checkpoint_every_s,
                            desc=f"calm {dataset} {lam} {model} {variant} seed {seed}", sampler=sampler)
    fragment, class_id = stream.batch_labels()
    first = np.zeros(len(stream), dtype=bool)
    first[[f.first_batch for f in stream.fragments]] = True
    series = [("stream", "loss", result.loss), ("stream", "fragment", fragment), ("stream", "class_id", class_id),
              ("stream", "switch", first)]
    if result.weights is not None:
        series += [("stream", f"weight_{i:02d}", result.weights[:, i]) for i in range(result.weights.shape[1])]
    cfg = zoo.config(model, dataset, lam, size_factor, max_gate_steps).__dict__ if model in zoo.ALL_MODELS \
        else {"user_class": model}
    record = curves.provenance(
        paper=PAPER.id, experiment=dataset, model=model, seed=seed, scale=scale, variant=variant,
        setting={"dataset": dataset, "lambda": lam, "classes": list(stream.class_names),
                 "synthetic": bool(info["synthetic"]), "vocabulary": len(vocab), "split": split},
        config={**cfg, "n_fragments": n_fragments, "window": window, "bptt": stream.bptt, "b": stream.b,
                "size_factor": size_factor, "parameters": n_parameters(learner)},
        samples=[[label, text] for label, text in result.samples.items()],  # a list: the record's keys get sorted
        device=device, **timer.fields())
    curves.write_curve(curves.series_rows(seed, series), out, record)
    checkpoints.remove(checkpoint)


def n_parameters(learner) -> int:
    """Trainable parameters of a learner's model(s) (the experts, not the gate, as the reference's count)."""
    import torch

    modules = [getattr(learner, a) for a in ("experts", "model") if isinstance(getattr(learner, a, None),
                                                                                torch.nn.Module)]
    modules += [lrn.model for lrn in getattr(learner, "learners", {}).values()]
    return sum(p.numel() for m in modules for p in m.parameters() if p.requires_grad)
