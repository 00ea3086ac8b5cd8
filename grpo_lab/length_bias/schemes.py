"""The aggregation schemes compared in notebook 05, derived from :mod:`grpo_lab.methods`.

A scheme is a method's aggregation mode and ratio level (the keyword arguments of
:func:`grpo_lab.losses.grpo_loss` that change how a token's gradient depends on its
response's length); ``seq_sum`` (Σ_t, no normaliser) is the one extra, not a method.
Every scheme gets the *same* advantages, so only the aggregation differs.
"""
from __future__ import annotations

import numpy as np
import torch

from grpo_lab import _checks, methods

SHOWN = ("grpo", "dapo", "dr_grpo", "gspo")          # the four the panels and notebook show
# scheme -> keyword arguments of grpo_loss (aggregation mode and ratio level)
SCHEMES: dict[str, dict] = {
    **{n: {"mode": methods.get(n).agg, "level": methods.get(n).ratio_level} for n in SHOWN},
    "seq_sum": {"mode": "seq-mean-token-sum", "level": "token"},        # Σ_t, no normaliser
}
_EQ = {"seq-mean-token-mean": "seq-mean-token-mean, eq. (6)", "token-mean": "token-mean, eq. (7)",
       "seq-mean-token-sum-norm": "token-sum / C"}
LABELS = {**{n: f"{methods.label(n)}: " + ("sequence ratio, seq-mean" if SCHEMES[n]["level"] == "sequence"
                                           else _EQ[SCHEMES[n]["mode"]]) for n in SHOWN},
          "seq_sum": "seq-mean-token-sum"}
SHORT = {**{n: methods.get(n).short for n in SHOWN}, "seq_sum": "token-sum"}
SEQ_SUM_COLOUR = "0.5"      # not a method: grey
LENGTH_POLICIES = ("by-correctness", "shared")


def colour(scheme: str) -> str:
    """The scheme's colour: its method's (:func:`grpo_lab.methods.colour`), grey for ``seq_sum``."""
    scheme = _scheme(scheme)
    return SEQ_SUM_COLOUR if scheme == "seq_sum" else methods.colour(scheme)


def _scheme(name: str) -> str:
    return _checks.choice("scheme", name, SCHEMES)


def _lengths(lengths) -> np.ndarray:
    arr = _checks.finite_array("lengths", lengths, ndim=1)
    if np.any(arr != np.round(arr)) or np.any(arr < 1):
        raise ValueError(f"lengths must be whole numbers >= 1 (tokens per response), got {arr.tolist()}")
    return arr.astype(int)


def response_mask(lengths, T: int | None = None) -> torch.Tensor:
    """0/1 mask of shape (G, T), row i with |y_i| leading ones; T defaults to max |y_i|."""
    L = _lengths(lengths)
    T = int(L.max()) if T is None else _checks.integer("T", T, low=int(L.max()))
    return (torch.arange(T)[None, :] < torch.as_tensor(L)[:, None]).to(torch.float64)  # (G, T)
