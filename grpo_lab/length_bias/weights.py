"""Per-token gradient weights of one group under each scheme, by autograd through the loss."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch

from grpo_lab import _checks
from grpo_lab._torch_threads import single_thread  # tiny tensors: one thread is faster
from grpo_lab.advantages import STDS, group_advantages
from grpo_lab.length_bias.schemes import SCHEMES, SHOWN, _lengths, _scheme, response_mask
from grpo_lab.losses import token_grad_weights

@dataclass(frozen=True)
class GroupWeights:
    """Gradient weights of one group under several schemes (ratio 1 unless ``off_policy`` > 0).

    ``weights[k]`` is ∂loss/∂log π(o_{i,t}) (G, T) for scheme ``schemes[k]``; descent raises
    log π where it is negative. ``per_token`` is its mean over each response's tokens,
    ``total`` the sum (the whole push one response receives), both (S, G).
    """

    schemes: tuple[str, ...]
    lengths: np.ndarray      # (G,) |y_i|
    rewards: np.ndarray      # (G,) r_i
    adv: np.ndarray          # (G,) Â_i, eq. (1)
    C: int                   # Dr. GRPO's constant (generation budget)
    weights: np.ndarray      # (S, G, T) ∂loss/∂log π(o_{i,t}), 0 on padding
    per_token: np.ndarray    # (S, G) mean over the |y_i| tokens
    per_token_min: np.ndarray  # (S, G)
    per_token_max: np.ndarray  # (S, G)
    total: np.ndarray        # (S, G) Σ_t

    def frame(self) -> pd.DataFrame:
        """One row per (scheme, response): |y_i|, r_i, Â_i, per-token and total weight."""
        rows = []
        for k, s in enumerate(self.schemes):
            for i in range(self.lengths.size):
                rows.append({"scheme": s, "response": i + 1, "length": int(self.lengths[i]),
                             "reward": self.rewards[i], "adv": self.adv[i],
                             "per_token_weight": self.per_token[k, i], "total_weight": self.total[k, i]})
        return pd.DataFrame(rows)


def group_weights(lengths, rewards, *, schemes=SHOWN, C: int | None = None, off_policy: float = 0.0,
                  seed: int = 0, std: str = "population", eps_low: float = 0.2) -> GroupWeights:
    """Per-token gradient weights of one group of G responses under each scheme.

    Args:
        lengths: (G,) token counts |y_i| ≥ 1.
        rewards: (G,) rewards r_i; advantages by eq. (1) (``std`` as in
            :func:`grpo_lab.advantages.group_advantages`), the same for every scheme.
        schemes: names from :data:`SCHEMES`.
        C: Dr. GRPO's constant (``max_len`` of ``seq-mean-token-sum-norm``), ≥ max |y_i|;
            default max |y_i|.
        off_policy: 0 gives the first step of a batch (μ = 1, ρ ≡ 1). off_policy > 0 moves the
            policy off the sampling policy, log ρ_{i,t} = off_policy·z_{i,t}, z ~ N(0, 1) fixed by
            ``seed``: then the token ratio (and clipping, ``eps_low``) makes weights vary
            along a response under token-level schemes, while GSPO's s_i keeps them equal.
    """
    L = _lengths(lengths)
    r = _checks.finite_array("rewards", rewards, ndim=1)
    if r.shape != L.shape:
        raise ValueError(f"rewards must have one value per response, shape {L.shape}; got {r.shape}")
    if L.size < 2:
        raise ValueError(f"lengths: a group needs G >= 2 responses, got G = {L.size}")
    schemes = tuple(_scheme(s) for s in schemes)
    if not schemes:
        raise ValueError("schemes must name at least one scheme")
    T = int(L.max())
    C = T if C is None else _checks.integer("C", C, low=1)
    if C < T:
        raise ValueError(f"C must be >= the longest response ({T} tokens), got {C}")
    off_policy = _checks.in_range("off_policy", off_policy, 0.0)
    std = _checks.choice("std", std, STDS)
    adv = group_advantages(r, std=std)                                   # (G,) eq. (1)
    mask = response_mask(L)                                              # (G, T)
    old_logp = torch.full(mask.shape, -1.0, dtype=torch.float64)         # any value: only ρ matters
    z = torch.as_tensor(np.random.default_rng(seed).standard_normal(mask.shape))
    logp = old_logp + off_policy * z                                     # (G, T) log ρ = off_policy·z
    adv_t = torch.as_tensor(adv)
    with single_thread():
        W = np.stack([token_grad_weights(logp, old_logp, adv_t, mask, max_len=C, eps_low=eps_low,
                                         **SCHEMES[s]).numpy() for s in schemes])   # (S, G, T)
    m = mask.numpy().astype(bool)[None]                                  # (1, G, T)
    total = W.sum(-1)                                                    # (S, G)
    per_token = total / L[None, :]
    wmin = np.where(m, W, np.inf).min(-1)
    wmax = np.where(m, W, -np.inf).max(-1)
    return GroupWeights(schemes, L, r, adv, C, W, per_token, wmin, wmax, total)
