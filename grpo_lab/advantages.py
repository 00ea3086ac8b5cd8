"""Group advantages (组内标准化 group normalization) and degenerate groups (退化组).

Seed 000 §1.1, eq. (1): for G responses to one prompt with rewards r_1 … r_G,

    Â_i = (r_i − mean(r_1 … r_G)) / std(r_1 … r_G)                               (1)

Subtracting the mean is the baseline (基线, seed 004 §一: unbiased, lowers variance);
dividing by the std only rescales. Â_i is a *sequence-level* scalar: one number per
response, shape (G,) per group; the loss broadcasts it onto every token (seed 000 §1.2).

Worked groups (seed 004 §三, population std):

    rewards 1,1,0,0  ->  +1, +1, −1, −1
    rewards 1,0,0,0  ->  +1.73, −0.58, −0.58, −0.58     (a lucky success on a hard prompt)
    rewards 1,1,1,0  ->  the wrong one −1.73             (a slip on an easy prompt)
    all equal        ->  exactly 0: the group gives no gradient (seed 000 §1.3)

Conventions, named where they differ (the seeds are the default):

==============  ===================================================================
``std``         ``"population"`` divides by N (the seeds' numbers above);
                ``"sample"`` divides by N − 1 (Bessel). TRL's ``GRPOTrainer`` and verl's
                GRPO advantage use ``torch.std``, which is the sample std, so 1,1,0,0
                gives ±0.866 there.
``scale``       ``"group"``: ÷ the group's std (DeepSeekMath GRPO, eq. (1));
                ``"batch"``: mean still per group, ÷ the std of *all* rewards in the
                batch (TRL's ``scale_rewards="batch"``, as in "Tricks or Traps" / LitePPO);
                ``"none"``: no division, Â_i = r_i − mean (Dr. GRPO, Liu et al. 2025,
                seed 004 §四 first fix; TRL ``scale_rewards="none"``).
``eps``         added to the std in the denominator, (r − mean)/(std + ε): TRL uses
                1e-4, verl 1e-6. It prevents 0/0 but not noise amplification (§1.3).
==============  ===================================================================

All-equal groups are detected explicitly and get Â = 0 *exactly* (not "≈ 1e-17 because
of rounding"), for every scale and ε, so "no gradient" holds bit for bit.

RLOO (leave-one-out, Kool et al. 2019; Ahmadian et al. 2024) uses the mean of the *other*
G − 1 rewards as baseline: r_i − mean_{j≠i} r_j = G/(G − 1)·(r_i − mean). It is unbiased
because the baseline does not depend on response i (see :mod:`grpo_lab.bandit`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grpo_lab import _checks

SCALES = ("group", "batch", "none")
STDS = ("population", "sample")
ESTIMATORS = ("grpo", "rloo", "rft")
DEFAULT_EPS = 1e-4


# ---------------------------------------------------------------------------------
# Input handling
# ---------------------------------------------------------------------------------
def _is_torch(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


def _to_numpy(name: str, value):
    """numpy view of ``value``; torch tensors are detached and moved to the CPU."""
    if _is_torch(value):
        value = value.detach().cpu().double().numpy()
    if isinstance(value, (str, bytes)):
        raise TypeError(f"{name} must be an array of numbers, got {type(value).__name__}")
    return value


def as_groups(rewards, name: str = "rewards") -> tuple[np.ndarray, bool]:
    """``rewards`` as a finite float array of shape (N, G), and whether it was 1-d.

    A 1-d array of shape (G,) is one group. Empty, 0-d, 3-d or non-finite input raises a
    ValueError naming ``name``; non-numeric input a TypeError.
    """
    arr = _checks.finite_array(name, _to_numpy(name, rewards), ndim=(1, 2))
    if arr.ndim == 1:
        return arr[None, :], True
    if arr.shape[1] == 0:
        raise ValueError(f"{name} must hold at least 1 value per group, got shape {arr.shape}")
    return arr, False


def _eps(eps) -> float:
    return _checks.in_range("eps", eps, 0.0)


def _degenerate(r: np.ndarray) -> np.ndarray:
    """(N,) True where the validated groups r (N, G) have all rewards equal: the one definition."""
    return np.all(r == r[:, :1], axis=1)


def degenerate_mask(rewards) -> np.ndarray:
    """True for each group whose rewards are all equal (退化组). Shape (N,), or a 0-d bool for 1-d input.

    The one test for a degenerate group: the advantages, the statistics, dynamic sampling
    (the LM trainer) and the bias simulations all use it.
    """
    r, one = as_groups(rewards)
    mask = _degenerate(r)                 # (N,)
    return mask[0] if one else mask


# ---------------------------------------------------------------------------------
# Group statistics and advantages
# ---------------------------------------------------------------------------------
def group_std(rewards, std: str = "population") -> np.ndarray:
    """Per-group standard deviation, shape (N,) (a float for a 1-d group).

    ``std="population"`` divides by G (the seeds), ``"sample"`` by G − 1 (TRL, verl);
    the sample std needs G ≥ 2.
    """
    std = _checks.choice("std", std, STDS)
    r, one = as_groups(rewards)
    G = r.shape[1]
    if std == "sample" and G < 2:
        raise ValueError(f"rewards: a sample std needs a group size G >= 2, got G = {G}")
    s = r.std(axis=1, ddof=1 if std == "sample" else 0)  # (N,)
    s[_degenerate(r)] = 0.0
    return s[0] if one else s


def _denominator(r: np.ndarray, scale: str, ddof: int, eps: float) -> np.ndarray:
    """The denominator of eq. (1) for validated groups r (N, G). Shape (N, 1)."""
    if scale == "group":
        return r.std(axis=1, ddof=ddof)[:, None] + eps                   # (N, 1) group std + ε
    if scale == "batch":
        return np.full((r.shape[0], 1), r.std(ddof=ddof) + eps)         # (N, 1) batch std + ε
    return np.ones((r.shape[0], 1))                                      # (N, 1) Dr. GRPO: none


def advantage_denominator(rewards, *, scale: str = "group", std: str = "population", eps: float = DEFAULT_EPS):
    """What eq. (1) divides r_i − mean by: std + ε (group or batch std), or 1 for ``scale="none"``.

    Shape (N,), a float for a 1-d group. The same function :func:`group_advantages` uses, so a
    panel that prints the denominator shows the number the advantages were divided by.
    """
    scale = _checks.choice("scale", scale, SCALES)
    std = _checks.choice("std", std, STDS)
    r, one = as_groups(rewards)
    with np.errstate(over="ignore", invalid="ignore"):
        d = _denominator(r, scale, 1 if std == "sample" else 0, _eps(eps))[:, 0]     # (N,)
    return float(d[0]) if one else d


def group_advantages(rewards, *, scale: str = "group", std: str = "population",
                     eps: float = DEFAULT_EPS) -> np.ndarray:
    """GRPO group-relative advantages Â_i = (r_i − mean)/(std + ε), eq. (1) of seed 000.

    Parameters
    ----------
    rewards : array (N, G) or (G,)
        N groups of G scalar rewards (numpy or torch; torch is read on the CPU).
    scale : "group" | "batch" | "none"
        Denominator: the group's own std (GRPO, eq. (1)); the std of all N·G rewards with
        the mean still per group (TRL ``scale_rewards="batch"``); or none at all, Â_i =
        r_i − mean (Dr. GRPO).
    std : "population" | "sample"
        Divide the squared deviations by G (the seeds; 1,1,0,0 -> ±1) or G − 1 (Bessel,
        what TRL and verl compute; 1,1,0,0 -> ±0.866).
    eps : float ≥ 0
        Added to the std in the denominator (TRL 1e-4, verl 1e-6).

    Returns
    -------
    ndarray of the same shape as ``rewards`` (float64). Every group's advantages sum to 0
    and all-equal groups are exactly 0. A group of one (G = 1) has no spread to measure:
    scale "group"/"batch" raise; scale "none" returns 0.
    """
    scale = _checks.choice("scale", scale, SCALES)
    std = _checks.choice("std", std, STDS)
    eps = _eps(eps)
    r, one = as_groups(rewards)                     # (N, G)
    N, G = r.shape
    if scale != "none" and G < 2:
        raise ValueError(f"rewards: scale={scale!r} needs a std, so the group size G must be >= 2, got G = {G}")
    degenerate = _degenerate(r)     # (N,)
    ddof = 1 if std == "sample" else 0
    with np.errstate(over="ignore", divide="ignore", invalid="ignore"):
        centred = r - r.mean(axis=1, keepdims=True)     # (N, G)  r_i − mean, the baseline step
        denom = _denominator(r, scale, ddof, eps)        # (N, 1)
        adv = centred / denom                            # (N, G)
    live = ~degenerate
    ok = np.isfinite(adv[live]).all() and np.isfinite(centred[live]).all() and np.isfinite(denom[live]).all()
    adv[degenerate] = 0.0
    if not ok:
        # extreme magnitudes only: overflow, or eps = 0 with an underflowing std
        raise ValueError("rewards: advantages overflowed or the std underflowed to 0; "
                         "rescale the rewards (|r| well below 1e150) or use eps > 0")
    return adv[0] if one else adv


def rft_advantages(rewards) -> np.ndarray:
    """Rejection-sampling fine-tuning (RFT / ReST, lecture notes 004 §一 采样-过滤-微调) as an
    advantage: Â_i = r_i, no baseline and no scaling. With 0/1 rewards a correct reply gets 1
    and a wrong one 0, so the clipped loss at ρ = 1 is supervised fine-tuning on the model's
    own correct samples, and no reply is ever pushed down (no negative samples). Shape like
    ``rewards``.
    """
    r, one = as_groups(rewards)
    adv = r.astype(float).copy()
    return adv[0] if one else adv


def rloo_advantages(rewards) -> np.ndarray:
    """Leave-one-out advantages r_i − mean_{j≠i} r_j = G/(G − 1)·(r_i − mean). Shape like ``rewards``.

    Needs G ≥ 2 (the mean of the *other* responses). All-equal groups are exactly 0.
    """
    r, one = as_groups(rewards)
    G = r.shape[1]
    if G < 2:
        raise ValueError(f"rewards: leave-one-out needs a group size G >= 2, got G = {G}")
    with np.errstate(over="ignore", invalid="ignore"):
        loo_mean = (r.sum(axis=1, keepdims=True) - r) / (G - 1)   # (N, G) mean of the others
        adv = r - loo_mean
    degenerate = _degenerate(r)
    if not np.all(np.isfinite(adv[~degenerate])):
        raise ValueError("rewards: leave-one-out advantages overflowed; rescale the rewards")
    adv[degenerate] = 0.0
    return adv[0] if one else adv


def advantages_from_flat(rewards, group_size: int, *, estimator: str = "grpo", scale: str = "group",
                         std: str = "population", eps: float = DEFAULT_EPS):
    """Per-response advantages for a flat reward vector laid out group after group.

    ``rewards`` has shape (N·G,) with responses ``k·G … k·G + G − 1`` answering prompt k
    (the layout of TRL and of :mod:`grpo_lab.lm`). Returns shape (N·G,): a numpy array,
    or a torch tensor on the same device and dtype when ``rewards`` is a tensor. This is
    the one entry point the trainer and the loss notebooks use, so every part of the
    course normalises with the same code. ``estimator="rloo"`` and ``"rft"`` ignore scale/std/eps.
    """
    estimator = _checks.choice("estimator", estimator, ESTIMATORS)
    G = _checks.integer("group_size", group_size, low=1)
    torch_in = _is_torch(rewards)
    r = _checks.finite_array("rewards", _to_numpy("rewards", rewards), ndim=1)
    if r.size % G:
        raise ValueError(f"rewards: length {r.size} is not a multiple of group_size = {G}")
    groups = r.reshape(-1, G)                                 # (N, G)
    if estimator == "rloo":
        adv = rloo_advantages(groups)
    elif estimator == "rft":
        adv = rft_advantages(groups)
    else:
        adv = group_advantages(groups, scale=scale, std=std, eps=eps)
    adv = adv.reshape(-1)                                     # (N·G,)
    if torch_in:
        import torch

        dtype = rewards.dtype if rewards.is_floating_point() else torch.float32
        out = torch.as_tensor(adv, dtype=dtype, device=rewards.device)
        if not bool(torch.isfinite(out).all()):
            # computed in float64; only the cast back to a narrow dtype can overflow
            raise ValueError(f"rewards: the advantages overflow {str(dtype).replace('torch.', '')} "
                             f"(largest |Â| = {abs(adv).max():.4g}); pass the rewards as float32")
        return out
    return adv


# ---------------------------------------------------------------------------------
# Degenerate groups (seed 004 §三, L9 p.41; seed 000 §1.3)
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class DegenerateStats:
    """Fractions of the N groups of a batch (they add up to 1 with ``other_constant``)."""

    n_groups: int
    all_correct: float     # every reward == ``correct`` (prompt probably too easy)
    all_wrong: float       # every reward == ``wrong`` (prompt probably too hard)
    other_constant: float  # all equal to some other value (e.g. identical partial credit)
    informative: float     # rewards differ: the only groups that carry a gradient

    @property
    def degenerate(self) -> float:
        return self.all_correct + self.all_wrong + self.other_constant


def degenerate_stats(rewards, *, correct: float = 1.0, wrong: float = 0.0) -> DegenerateStats:
    """Fraction of all-correct, all-wrong and informative groups among the rows of ``rewards`` (N, G)."""
    r, _ = as_groups(rewards)
    correct = _checks.finite_float("correct", correct)
    wrong = _checks.finite_float("wrong", wrong)
    if correct == wrong:
        raise ValueError(f"correct and wrong must differ, both are {correct}")
    deg = _degenerate(r)
    all_c = deg & (r[:, 0] == correct)
    all_w = deg & (r[:, 0] == wrong)
    N = r.shape[0]
    return DegenerateStats(N, float(all_c.sum() / N), float(all_w.sum() / N),
                           float((deg & ~all_c & ~all_w).sum() / N), float((~deg).sum() / N))


def _probs(p, name: str = "p") -> np.ndarray:
    p_arr = _checks.finite_array(name, _to_numpy(name, p), ndim=None)
    if np.any((p_arr < 0) | (p_arr > 1)):
        raise ValueError(f"{name} must lie in [0, 1]")
    return p_arr


def p_degenerate(p, G: int):
    """P(a group of G Bernoulli(p) rewards is degenerate) = p^G + (1 − p)^G. Same shape as ``p``."""
    p_arr = _probs(p)
    G = _checks.integer("G", G, low=1)
    out = p_arr**G + (1 - p_arr) ** G
    return float(out) if out.ndim == 0 else out


def p_all_correct(p, G: int):
    """P(all G responses correct) = p^G."""
    p_arr = _probs(p)
    out = p_arr ** _checks.integer("G", G, low=1)
    return float(out) if out.ndim == 0 else out


def p_all_wrong(p, G: int):
    """P(all G responses wrong) = (1 − p)^G."""
    p_arr = _probs(p)
    out = (1 - p_arr) ** _checks.integer("G", G, low=1)
    return float(out) if out.ndim == 0 else out


def expected_informative(p, G: int, n_prompts: int | None = None) -> float:
    """Expected number of informative groups in a batch.

    ``p`` is either one pass rate shared by ``n_prompts`` prompts, or an array of per-prompt
    pass rates (then ``n_prompts`` must be None or its length): Σ_k 1 − p_k^G − (1 − p_k)^G.
    """
    p_arr = np.atleast_1d(_probs(p))
    if p_arr.ndim != 1:
        raise ValueError(f"p must be a number or a 1-d array of pass rates, got shape {p_arr.shape}")
    info = 1.0 - p_degenerate(p_arr, G)  # (K,)
    if n_prompts is None:
        return float(info.sum())
    n = _checks.integer("n_prompts", n_prompts, low=0)
    if p_arr.size == 1:
        return float(n * info[0])
    if n != p_arr.size:
        raise ValueError(f"n_prompts = {n} does not match the {p_arr.size} pass rates in p")
    return float(info.sum())
