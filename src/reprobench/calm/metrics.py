"""CALM's metrics exactly as the reference code computes them (specs/calm.md section 2, D4, D18) from a per-batch
log in stream order: the loss of each batch (mean cross-entropy in nats, scored before training on it), its
fragment index and its class id.

- Only the second half by fragment index counts: rows with fragment >= n_fragments // 2 (D4). With nothing kept,
  or a last row whose fragment is < n_fragments - 1, the result is {} (the code assumes n_fragments fragments,
  numbered from 0; 3 classes x 33 = 99 fragments gives {}).
- loss, total_pp: the mean kept batch loss and its exp, inf when the mean is >= 20.
- ppl@sw and rec loop over the kept fragments but the last. A fragment whose class already appeared among the
  kept fragments is an event: ppl@sw records the mean loss of its first k = 10 batches (all of them when it is
  shorter, D18); rec counts its batches before the first one whose loss is strictly below the mean loss of the
  class's whole previous fragment (0 if the first batch already is; the fragment's length if none is, D18, with
  no censoring flag). After every fragment, recorded or not, that fragment's mean loss becomes its class's
  reference. So each class's first fragment in the second half and the stream's last fragment are never events.
  ppl@sw = exp(mean of recorded means), rec = mean of recorded counts (in batches), pooled over classes.
- Per class: loss_<c>, total_pp_<c>, ppl@sw_<c>, rec_<c> over that class's kept rows and events. total_pp_<c>
  keeps the code's bug: its inf guard tests the overall mean loss, not the class's. A class without events gets
  nan for ppl@sw_<c> and rec_<c> (as do the pooled values without any event).
- Extras (lifelonglm display_results.py L221-229, `extract_measures`): std = mean over classes of np.std (ddof 0)
  of the class's kept batch losses; autocorr = mean over classes of np.corrcoef(x[1:], x[:-1])[0, 1] of the class's
  kept batch losses x in stream order (the losses stitched fragment after fragment). Both means are np.mean over
  every class, so one class whose value is nan (autocorr of a constant or a two-batch series) makes the mean nan,
  as in the reference.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

INF_GUARD = 20.0  # total_pp is inf when the mean loss reaches this (exp(20) ~ 4.9e8)
K_AFTER_SWITCH = 10  # ppl@sw's k, hard-coded in the reference


def compute_metrics(loss, fragment, class_id, class_names: Sequence[str] | None = None, n_fragments: int = 100,
                    k: int = K_AFTER_SWITCH) -> dict[str, float]:
    """The reference's metrics dict (module docstring), plus n_events, std and autocorr. loss, fragment and
    class_id are per-batch arrays in stream order; class_names[class_id] names the per-class keys (default: the
    id). Returns {} under the code's conditions."""
    loss, fragment, class_id = (np.asarray(a) for a in (loss, fragment, class_id))
    if not loss.ndim == fragment.ndim == class_id.ndim == 1 or not len(loss) == len(fragment) == len(class_id):
        raise ValueError(f"loss, fragment and class_id must be 1-D and equally long, got shapes {loss.shape}, "
                         f"{fragment.shape}, {class_id.shape}")
    if np.any(np.diff(fragment) < 0):
        raise ValueError("fragment must be non-decreasing: the rows are batches in stream order")
    if isinstance(k, bool) or not isinstance(k, int | np.integer) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    if isinstance(n_fragments, bool) or not isinstance(n_fragments, int | np.integer) or n_fragments < 1:
        raise ValueError(f"n_fragments must be a positive integer, got {n_fragments!r}")
    keep = fragment >= n_fragments // 2
    if not keep.any() or fragment[-1] < n_fragments - 1:
        return {}
    loss, fragment, class_id = loss[keep].astype(float), fragment[keep], class_id[keep]
    classes = np.unique(class_id)
    if class_names is None:
        names = {c: str(c) for c in classes}
    elif classes.min() < 0 or classes.max() >= len(class_names):
        raise ValueError(f"class ids {classes.tolist()} do not all index class_names ({len(class_names)} names)")
    else:
        names = {c: class_names[c] for c in classes}

    _, starts = np.unique(fragment, return_index=True)
    bounds = [*starts.tolist(), len(loss)]
    prev_loss, events = {}, []  # events: (class, mean of first k losses, recovery in batches)
    for i in range(len(starts) - 1):  # the last fragment is never an event
        losses, cls = loss[bounds[i]:bounds[i + 1]], class_id[bounds[i]]
        if cls in prev_loss:
            below = np.flatnonzero(losses < prev_loss[cls])
            events.append((cls, losses[:k].mean(), below[0] if len(below) else len(losses)))
        prev_loss[cls] = losses.mean()

    mean = loss.mean()
    out = {"loss": float(mean), "total_pp": _guarded_exp(mean, mean),
           "ppl@sw": _exp_mean([e[1] for e in events]), "rec": _mean([e[2] for e in events])}
    for c in classes:
        class_mean = loss[class_id == c].mean()
        mine = [e for e in events if e[0] == c]
        out[f"loss_{names[c]}"] = float(class_mean)
        out[f"total_pp_{names[c]}"] = _guarded_exp(class_mean, mean)  # the code's bug: guards the overall mean
        out[f"ppl@sw_{names[c]}"] = _exp_mean([e[1] for e in mine])
        out[f"rec_{names[c]}"] = _mean([e[2] for e in mine])
    out["n_events"] = len(events)
    out["std"] = _mean([float(np.std(loss[class_id == c])) for c in classes])
    out["autocorr"] = _mean([_lag1_autocorr(loss[class_id == c]) for c in classes])
    return out


def _guarded_exp(value: float, guard: float) -> float:
    return float("inf") if guard >= INF_GUARD else float(np.exp(value))


def _mean(values) -> float:
    return float(np.mean(values)) if len(values) else float("nan")


def _exp_mean(values) -> float:
    return float(np.exp(np.mean(values))) if len(values) else float("nan")


def _lag1_autocorr(x: np.ndarray) -> float:
    """The reference's autocorr: np.corrcoef(x[1:], x[:-1])[0, 1], nan where it is undefined (a constant series,
    fewer than three values), without numpy's warnings."""
    if len(x) < 3 or np.ptp(x[1:]) == 0 or np.ptp(x[:-1]) == 0:
        return float("nan")
    return float(np.corrcoef(x[1:], x[:-1])[0, 1])
