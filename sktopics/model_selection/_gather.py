"""The result of every rank's documents, from each rank's own: evaluators inside
:func:`sktopics.distributed.data_parallel`.

Each rank evaluates its own documents, after the preamble had the ranks agree on their
inputs, their models and the run's root key; :func:`gather_result` then gives every
rank the result of all the ranks' documents. A document's random numbers are keyed by
its counts, so its estimate does not depend on the rank that computes it, and the
gathered result is the one a single process gives on the ranks' documents concatenated
in rank order: per-document arrays concatenated, costs summed, the smallest effective
sample size, the settings that count work or describe a rank combined
(:data:`SETTINGS`). Every other field and setting must be the same on every rank;
where one is not (ranks that passed other arguments), every rank raises the same
``ValueError``, since every rank sees every rank's result.
"""

import dataclasses

import numpy as np

from ..utils._distributed import current_collective

__all__ = ["SETTINGS", "gather_result"]


def gather_result(result):
    """The result of every rank's documents, on every rank.

    Parameters
    ----------
    result : HeldOutLikelihood, ModelComparison or list of them
        This rank's result (a list: one per snapshot, as
        :func:`~sktopics.model_selection.iteration_ais` returns).

    Returns
    -------
    result : of the same type
        Outside ``data_parallel``, ``result`` itself; inside it, the result of the
        ranks' documents in rank order, the same on every rank.
    """
    collective = current_collective()
    if collective is None:
        return result
    parts = collective.gather_objects(result)
    if not isinstance(result, list):
        return _combined(parts)
    _require_equal("the number of results", [len(part) for part in parts])
    return [_combined([part[i] for part in parts]) for i in range(len(result))]


def _combined(parts):
    """One result from the ranks' results, in rank order."""
    first = parts[0]
    _require_equal("the kind of result", [type(part).__name__ for part in parts])
    fields = {}
    for field in dataclasses.fields(first):
        name = field.name
        values = [getattr(part, name) for part in parts]
        if name in first._PER_DOCUMENT:
            fields[name] = _concatenated(name, values)
        elif name == "n_token_updates":
            fields[name] = int(sum(values))
        elif name == "min_ess":  # NaN on a rank without documents to measure
            fields[name] = float(np.fmin.reduce(np.asarray(values, dtype=np.float64)))
        elif name == "settings":
            fields[name] = _combined_settings(values, parts)
        else:  # method, topic_permutation: decided by the models and the arguments
            fields[name] = _require_equal(f"the result's {name}", values)
    return type(first)(**fields)


def _concatenated(name, values):
    if all(value is None for value in values):
        return None
    _require_equal(f"whether the result has {name}", [value is None for value in values])
    return np.concatenate([np.asarray(value) for value in values])


def _combined_settings(values, parts):
    _require_equal("the settings' entries", [list(settings) for settings in values])
    combined = {}
    for key in values[0]:
        entries = [settings[key] for settings in values]
        rule = SETTINGS.get(key)
        combined[key] = (rule(entries, parts) if rule is not None
                         else _require_equal(f"settings[{key!r}]", entries))
    return combined


def _summed(values, parts):
    return sum(values)


def _document_weighted_mean(values, parts):
    """A rate over every rank's documents from each rank's rate over its own (HMC's
    acceptance: each rank makes as many proposals per document with tokens)."""
    weights = [int(np.count_nonzero(np.asarray(part.n_tokens) > 0)) for part in parts]
    total = sum(weights)
    if not total:
        return values[0]
    return float(sum(w * v for w, v in zip(weights, values) if w) / total)


def _extremes(values, parts):
    """``(min, median, max)`` over every rank's documents from each rank's. A median is
    not made of the ranks' medians: it is NaN unless one rank has all the documents."""
    found = [value for value in values if value is not None]
    if len(found) <= 1:
        return found[0] if found else None
    return (min(v[0] for v in found), float("nan"), max(v[2] for v in found))


def _per_rank_if_different(values, parts):
    """The value of every rank, or each rank's (a tuple in rank order) when they differ:
    ``device="auto"`` is each rank's own GPU."""
    return values[0] if all(_equal(v, values[0]) for v in values) else tuple(values)


#: How the settings that count work or describe a rank are combined; every other
#: setting must be equal on every rank.
SETTINGS = {
    "n_resampling_events": _summed,
    "acceptance_rate": _document_weighted_mean,
    "step_multipliers": _extremes,
    "device": _per_rank_if_different,
    "kernel": _per_rank_if_different,  # "auto" resolves by device
}


def _equal(a, b):
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return a is not None and b is not None and np.array_equal(a, b)
    return repr(a) == repr(b)


def _require_equal(what, values):
    """``values[0]`` when every rank's value equals it; the same error on every rank
    otherwise."""
    differ = [str(rank) for rank, value in enumerate(values) if not _equal(value, values[0])]
    if differ:
        ranks = ("rank " if len(differ) == 1 else "ranks ") + ", ".join(differ)
        raise ValueError(f"Data-parallel evaluation refused: {what} differs on {ranks} from "
                         "rank 0's; every rank must pass the same models and arguments.")
    return values[0]
