"""Difficulty bias (难度偏差), degenerate groups (退化组), noise amplification, and the remedies.

Everything here is a consequence of eq. (1) of seed 000, Â_i = (r_i − mean)/(std + ε),
computed by :func:`grpo_lab.advantages.group_advantages` (one source of truth). Length bias
(长度偏差, eqs. (6)/(7)) lives in :mod:`grpo_lab.length_bias`.

Binary rewards, pass rate p, group size G. A group with k correct answers (q = k/G) has

    mean = q,  population std = √(q(1 − q)),
    Â(correct) = √((1 − q)/q),   Â(wrong) = −√(q/(1 − q)),
    Σ_i |Â_i| = 2G·√(q(1 − q))   with std scaling (GRPO),
    Σ_i |Â_i| = 2G·q(1 − q)      without (Dr. GRPO),   ε ignored.

* **Degenerate groups** (seed 004 §三, L9 p.41; seed 000 §1.3): k = 0 or k = G, probability
  p^G + (1 − p)^G; no gradient at all.
* **Difficulty bias** (seed 000 §1.3, seed 004 §四): dividing by √(q(1 − q)), which is small
  for nearly-all-correct or nearly-all-wrong groups, inflates exactly those groups. The lone
  success among G gets √(G − 1) (1.73 at 1-of-4), and the expected weight per group falls
  off much more slowly towards p → 0 or 1 than without the std: the signal moves from the
  informative middle to the extremes. Dr. GRPO removes the division.
* **Noise amplification** (seed 000 §1.3): with continuous rewards that differ only by noise
  of size σ, the std-scaled advantages are O(1) as soon as σ ≫ ε, their direction decided
  by the noise. ε prevents 0/0, not the noise.
* **Four remedies** for degenerate groups (seed 004 §三): skip the prompt / dynamic sampling
  (DAPO), more exploration, demonstrations (SFT), a more informative (partial-credit)
  reward — simulated over a batch of prompts in :func:`simulate_remedies`.

Analytic results enumerate k ~ Binomial(G, p) exactly; Monte-Carlo versions sample groups
with a fixed seed and return a standard error, and the tests check they agree.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from math import comb, exp, lgamma, sqrt

import numpy as np

from grpo_lab import _checks
from grpo_lab.advantages import DEFAULT_EPS, STDS, _probs, degenerate_mask, group_advantages, p_degenerate

GROUP_SCALES = ("group", "none")   # per-group analytic results: "batch" depends on the batch
WEIGHTS = ("abs", "square")
REMEDIES = ("none", "dynamic", "explore", "demos", "partial")
REMEDY_LABELS = {"none": "plain GRPO", "dynamic": "skip / dynamic sampling", "explore": "more exploration",
                 "demos": "demonstrations (SFT)", "partial": "partial-credit reward"}


def _modes(scale, std, eps):
    return (_checks.choice("scale", scale, GROUP_SCALES), _checks.choice("std", std, STDS),
            _checks.in_range("eps", eps, 0.0))


def _scalar_or_array(x: np.ndarray):
    return float(x) if x.ndim == 0 else x


# ---------------------------------------------------------------------------------
# Binary rewards: enumerate the number of successes k
# ---------------------------------------------------------------------------------
def binomial_pmf(p, G: int) -> np.ndarray:
    """P(k successes among G), shape p.shape + (G + 1,)."""
    p = _probs(p)
    G = _checks.integer("G", G, low=1)
    k = np.arange(G + 1)
    c = np.array([comb(G, j) for j in k], float)
    pe = p[..., None]
    with np.errstate(divide="ignore", invalid="ignore"):
        out = c * np.where(k == 0, 1.0, pe**k) * np.where(k == G, 1.0, (1 - pe) ** (G - k))
    return out


def canonical_groups(G: int) -> np.ndarray:
    """Row k holds k ones then G − k zeros: every binary group up to order. Shape (G + 1, G)."""
    G = _checks.integer("G", G, low=2)
    return (np.arange(G)[None, :] < np.arange(G + 1)[:, None]).astype(float)


def advantages_by_k(G: int, *, scale="group", std="population", eps=DEFAULT_EPS) -> tuple[np.ndarray, np.ndarray]:
    """(Â of a correct response, Â of a wrong response) in a group with k correct, k = 0 … G.

    Shapes (G + 1,); entries with no such response (k = 0 for correct, k = G for wrong) are 0.
    """
    scale, std, eps = _modes(scale, std, eps)
    adv = group_advantages(canonical_groups(G), scale=scale, std=std, eps=eps)   # (G + 1, G)
    k = np.arange(G + 1)
    a_pos = np.where(k > 0, adv[:, 0], 0.0)
    a_neg = np.where(k < G, adv[:, -1], 0.0)
    return a_pos, a_neg


def weight_by_k(G: int, *, scale="group", std="population", eps=DEFAULT_EPS, weight="abs") -> np.ndarray:
    """Per-group update weight Σ_i |Â_i| (or Σ_i Â_i² with ``weight="square"``) for k = 0 … G. Shape (G + 1,)."""
    weight = _checks.choice("weight", weight, WEIGHTS)
    scale, std, eps = _modes(scale, std, eps)
    adv = group_advantages(canonical_groups(G), scale=scale, std=std, eps=eps)   # (G + 1, G)
    return np.abs(adv).sum(1) if weight == "abs" else (adv**2).sum(1)


def lone_success_advantage(G: int, *, scale="group", std="population", eps=DEFAULT_EPS) -> float:
    """Â of the only correct response among G (seed 004: +1.73 at 1-of-4; √(G − 1) with population std)."""
    return float(advantages_by_k(G, scale=scale, std=std, eps=eps)[0][1])


def lone_failure_advantage(G: int, *, scale="group", std="population", eps=DEFAULT_EPS) -> float:
    """Â of the only wrong response among G (seed 004: −1.73 at 3-of-4)."""
    return float(advantages_by_k(G, scale=scale, std=std, eps=eps)[1][G - 1])


def expected_update_weight(p, G: int, *, scale="group", std="population", eps=DEFAULT_EPS, weight="abs"):
    """E[Σ_i |Â_i|] over groups of G Bernoulli(p) rewards, by exact enumeration of k.

    Degenerate groups contribute 0. Same shape as ``p``. With ``scale="group"`` (GRPO) and
    population std this is E[2G√(q(1 − q))]; with ``scale="none"`` (Dr. GRPO) E[2G q(1 − q)]
    = 2(G − 1)p(1 − p).
    """
    w = weight_by_k(G, scale=scale, std=std, eps=eps, weight=weight)    # (G + 1,)
    return _scalar_or_array(binomial_pmf(p, G) @ w)


def success_advantage(p, G: int, *, scale="group", std="population", eps=DEFAULT_EPS):
    """E[Â of a correct response | its group is informative], exactly.

    From one correct response's view the other G − 1 rewards are Binomial(G − 1, p); the
    group is degenerate only if all of them are correct too. Tends to the lone-success value
    √(G − 1) as p → 0 (a lucky success on a hard prompt gets a big push) and to
    1/√(G − 1) as p → 1. Same shape as ``p``.
    """
    G = _checks.integer("G", G, low=2)
    a_pos, _ = advantages_by_k(G, scale=scale, std=std, eps=eps)
    others = binomial_pmf(p, G - 1)                   # (..., G): j = k − 1 other successes
    num = others[..., : G - 1] @ a_pos[1:G]           # k = 1 … G − 1
    den = others[..., : G - 1].sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1.0), a_pos[G - 1])
    return _scalar_or_array(out)


def failure_advantage(p, G: int, *, scale="group", std="population", eps=DEFAULT_EPS):
    """E[Â of a wrong response | its group is informative] (negative); the mirror of :func:`success_advantage`."""
    G = _checks.integer("G", G, low=2)
    _, a_neg = advantages_by_k(G, scale=scale, std=std, eps=eps)
    others = binomial_pmf(p, G - 1)                   # (..., G): j other successes, k = j
    num = others[..., 1:] @ a_neg[1:G]                # k = 1 … G − 1
    den = others[..., 1:].sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        out = np.where(den > 0, num / np.where(den > 0, den, 1.0), a_neg[1])
    return _scalar_or_array(out)


def sample_binary_groups(p, G: int, n_groups: int, *, seed: int = 0) -> np.ndarray:
    """n_groups groups of G Bernoulli(p) rewards, shape (n_groups, G) (or p.shape + (n_groups, G))."""
    p = _probs(p)
    G = _checks.integer("G", G, low=1)
    n = _checks.integer("n_groups", n_groups, low=1)
    u = np.random.default_rng(seed).random((n, G))
    return (u < p[..., None, None]).astype(float)


def update_weight_mc(p, G: int, n_groups: int = 4000, *, seed: int = 0, scale="group", std="population",
                     eps=DEFAULT_EPS, weight="abs") -> tuple:
    """Monte-Carlo estimate of :func:`expected_update_weight`: (mean, standard error), shapes like ``p``.

    The same uniform draws are used for every p (common random numbers), so a curve over p
    is smooth.
    """
    weight = _checks.choice("weight", weight, WEIGHTS)
    scale, std, eps = _modes(scale, std, eps)
    G = _checks.integer("G", G, low=2)
    r = sample_binary_groups(p, G, n_groups, seed=seed)              # (..., n, G)
    shape = r.shape
    adv = group_advantages(r.reshape(-1, G), scale=scale, std=std, eps=eps).reshape(shape)
    w = np.abs(adv).sum(-1) if weight == "abs" else (adv**2).sum(-1)  # (..., n)
    mean = w.mean(-1)
    se = w.std(-1, ddof=1) / np.sqrt(w.shape[-1])
    return _scalar_or_array(mean), _scalar_or_array(se)


@dataclass(frozen=True)
class DifficultyCurves:
    """Everything the difficulty panel draws, over a grid of pass rates p (shape (P,))."""

    G: int
    p: np.ndarray                 # (P,)
    weight_std: np.ndarray        # (P,) E Σ|Â| with std scaling (GRPO)
    weight_none: np.ndarray       # (P,) E Σ|Â| without (Dr. GRPO)
    p_informative: np.ndarray     # (P,) 1 − p^G − (1 − p)^G
    success_std: np.ndarray       # (P,) E[Â(correct) | informative], GRPO
    success_none: np.ndarray      # (P,) the same without std
    failure_std: np.ndarray       # (P,) E[Â(wrong) | informative], GRPO
    failure_none: np.ndarray      # (P,)


def difficulty_curves(G: int, p=None, *, std="population", eps=DEFAULT_EPS) -> DifficultyCurves:
    """Analytic difficulty-bias curves for group size G, with and without std scaling."""
    G = _checks.integer("G", G, low=2)
    p = np.linspace(0.0, 1.0, 101) if p is None else _probs(p)
    kw = dict(std=std, eps=eps)
    return DifficultyCurves(
        G, p,
        expected_update_weight(p, G, scale="group", **kw), expected_update_weight(p, G, scale="none", **kw),
        1.0 - p_degenerate(p, G),
        success_advantage(p, G, scale="group", **kw), success_advantage(p, G, scale="none", **kw),
        failure_advantage(p, G, scale="group", **kw), failure_advantage(p, G, scale="none", **kw))


def weight_ratio(p, G: int, *, p_ref: float = 0.5, std="population", eps=DEFAULT_EPS) -> tuple:
    """Expected weight at p relative to p_ref, (with std, without std).

    The difficulty bias in one number: at p = 0.1, G = 8 a group keeps ≈ 0.45 of a
    medium group's weight under GRPO but only 0.36 (= 0.09/0.25) under Dr. GRPO; std
    scaling shifts the signal towards the extremes.
    """
    ws = expected_update_weight([p, p_ref], G, scale="group", std=std, eps=eps)
    wn = expected_update_weight([p, p_ref], G, scale="none", std=std, eps=eps)
    return float(ws[0] / ws[1]), float(wn[0] / wn[1])


# ---------------------------------------------------------------------------------
# Noise amplification (seed 000 §1.3)
# ---------------------------------------------------------------------------------
def expected_std_of_normals(G: int, std="population") -> float:
    """E[std of G iid N(0, 1)]: √(2/G)·Γ(G/2)/Γ((G − 1)/2) (population) or ×√(G/(G − 1)) (sample)."""
    G = _checks.integer("G", G, low=2)
    std = _checks.choice("std", std, STDS)
    c = sqrt(2.0 / G) * exp(lgamma(G / 2) - lgamma((G - 1) / 2))
    return c * sqrt(G / (G - 1)) if std == "sample" else c


def noise_crossover_sigma(G: int, eps=DEFAULT_EPS, std="population") -> float:
    """σ at which the typical group std equals ε: below it ε damps the noise, above it Â is O(1)."""
    eps = _checks.in_range("eps", eps, 0.0)
    return eps / expected_std_of_normals(G, std)


@dataclass(frozen=True)
class NoiseResult:
    sigma: np.ndarray        # (S,) reward noise levels
    rms_adv: np.ndarray      # (S,) mean over groups of the RMS advantage in the group
    rms_approx: np.ndarray   # (S,) σ̄/(σ̄ + ε) with σ̄ = σ·E[std of G normals] (scale "group")
    signal_rms: float        # RMS Â of a genuinely informative 1-of-G group, for comparison
    crossover: float         # noise_crossover_sigma


def noise_amplification(sigma, G: int = 8, *, eps=DEFAULT_EPS, scale="group", std="population",
                        base: float = 1.0, n_groups: int = 500, seed: int = 0) -> NoiseResult:
    """Groups whose true quality is identical (reward ``base``) plus N(0, σ²) reward noise.

    With std scaling the RMS advantage is s/(s + ε) per group (s the group std): ≈ 1 once
    σ ≫ ε, so pure noise receives as large an update as a real 1-of-G success, in a random
    direction. Without std (Dr. GRPO) it is s = O(σ). Shapes (S,) for S noise levels.
    """
    sig = _checks.finite_array("sigma", sigma, ndim=(0, 1))
    if np.any(sig < 0):
        raise ValueError("sigma must be >= 0")
    sig = np.atleast_1d(sig)
    scale, std, eps = _modes(scale, std, eps)
    G = _checks.integer("G", G, low=2)
    base = _checks.finite_float("base", base)
    z = np.random.default_rng(seed).standard_normal((_checks.integer("n_groups", n_groups, low=1), G))
    r = base + sig[:, None, None] * z[None]                             # (S, n, G)
    adv = group_advantages(r.reshape(-1, G), scale=scale, std=std, eps=eps).reshape(r.shape)
    rms = np.sqrt((adv**2).mean(-1)).mean(-1)                           # (S,)
    sbar = sig * expected_std_of_normals(G, std)
    approx = sbar / (sbar + eps) if scale == "group" else sbar
    sig_adv = group_advantages(canonical_groups(G)[1], scale=scale, std=std, eps=eps)
    return NoiseResult(sig, rms, approx, float(np.sqrt((sig_adv**2).mean())), noise_crossover_sigma(G, eps, std))


# ---------------------------------------------------------------------------------
# A batch of prompts with a difficulty mix, and the four remedies (seed 004 §三)
# ---------------------------------------------------------------------------------
def _sigmoid(z):
    return 1.0 / (1.0 + np.exp(-z))


@dataclass(frozen=True)
class PromptMix:
    """Pass rates p = σ(z) with logits z ~ N(mean_logit, spread²): a batch's difficulty mix.

    The default is a mostly-hard batch (median p ≈ 0.2) with a tail of easy prompts.
    """

    mean_logit: float = -1.5
    spread: float = 2.5

    def __post_init__(self):
        _checks.finite_float("mean_logit", self.mean_logit)
        _checks.in_range("spread", self.spread, 0.0)

    def logits(self, K: int, rng: np.random.Generator) -> np.ndarray:
        return self.mean_logit + self.spread * rng.standard_normal(K)      # (K,)


@dataclass(frozen=True)
class RemedyConfig:
    """Knobs of the toy models of the four remedies.

    temperature   more exploration: the pass-rate logit is divided by T (T > 1 pulls every
                  p towards 0.5, a caricature of sampling at a higher temperature)
    sft_shift     demonstrations: SFT on worked solutions for the prompts whose group was
                  all wrong adds this to their logit (the others are left alone)
    partial       partial credit: a wrong answer scores ``partial``·u, u ~ U(0, 1) its
                  quality (steps right, format), instead of 0
    max_rounds    dynamic sampling: at most this many batches of fresh prompts are drawn
    """

    temperature: float = 2.0
    sft_shift: float = 3.0
    partial: float = 0.3
    max_rounds: int = 50

    def __post_init__(self):
        _checks.in_range("temperature", self.temperature, 0.0, low_open=True)
        _checks.finite_float("sft_shift", self.sft_shift)
        _checks.in_range("partial", self.partial, 0.0, 1.0, high_open=True)
        _checks.integer("max_rounds", self.max_rounds, low=1)


@dataclass
class RemedyOutcome:
    name: str
    label: str
    p: np.ndarray                 # (K,) pass rates of the K prompts that form the batch
    rewards: np.ndarray           # (K, G)
    informative: float            # fraction of the K groups with a gradient
    all_correct: float
    all_wrong: float
    weight: float                 # total update weight Σ_groups Σ_i |Â_i|
    responses: int                # responses generated to build the batch
    weight_per_response: float = field(init=False)
    cost: float = field(init=False)   # responses / (K·G): 1 except for dynamic sampling

    def __post_init__(self):
        K, G = self.rewards.shape
        self.weight_per_response = self.weight / (K * G)
        self.cost = self.responses / (K * G)


@lru_cache(maxsize=8)
def _hermite_nodes(n: int):
    return np.polynomial.hermite_e.hermegauss(n)


def informative_fraction(mix: PromptMix, G: int, *, temperature: float = 1.0, shift: float = 0.0,
                         n_nodes: int = 64) -> float:
    """E_p[1 − p^G − (1 − p)^G] over the mix, by Gauss–Hermite quadrature (no sampling)."""
    G = _checks.integer("G", G, low=1)
    x, w = _hermite_nodes(_checks.integer("n_nodes", n_nodes, low=1))
    p = _sigmoid((mix.mean_logit + mix.spread * x + shift) / temperature)
    return float((w * (1 - p**G - (1 - p) ** G)).sum() / w.sum())


def _outcome(name, p, r, responses, *, scale, std, eps) -> RemedyOutcome:
    adv = group_advantages(r, scale=scale, std=std, eps=eps)
    deg = degenerate_mask(r)
    K = r.shape[0]
    return RemedyOutcome(name, REMEDY_LABELS[name], p, r, float((~deg).mean()),
                         float((deg & (r[:, 0] == 1.0)).sum() / K), float((deg & (r[:, 0] == 0.0)).sum() / K),
                         float(np.abs(adv).sum()), int(responses))


def simulate_remedies(K: int = 64, G: int = 8, mix: PromptMix = PromptMix(), config: RemedyConfig = RemedyConfig(),
                      *, scale="group", std="population", eps=DEFAULT_EPS, seed: int = 0,
                      remedies=REMEDIES) -> dict[str, RemedyOutcome]:
    """One batch of K prompts × G responses under plain GRPO and each remedy of seed 004 §三.

    All variants share the same prompts and the same uniform draws (common random numbers),
    so differences come from the remedy alone:

    * ``none``     — binary rewards, r = 1[u < p].
    * ``dynamic``  — skip the prompt (换实例) / DAPO dynamic sampling: draw fresh prompts
      from the mix and keep only informative groups until K are collected; ``responses``
      counts everything generated (expected cost 1/P(informative) per kept group).
    * ``explore``  — p = σ(z/T), T = ``config.temperature`` (扩探索).
    * ``demos``    — the prompts whose plain group was all wrong get demonstrations; after SFT
      their p = σ(z + ``config.sft_shift``) (加示范: lift the success rate off 0).
    * ``partial``  — wrong answers score ``config.partial``·u' instead of 0, u' ~ U(0, 1)
      (更有信息量的奖励); all-wrong groups now carry a ranking, all-correct ones still don't.
    """
    K = _checks.integer("K", K, low=1)
    G = _checks.integer("G", G, low=2)
    for name in remedies:
        _checks.choice("remedies", name, REMEDIES)
    rng = np.random.default_rng(seed)
    z = mix.logits(K, rng)                          # (K,)
    u = rng.random((K, G))                          # (K, G) common draws
    credit = rng.random((K, G))                     # (K, G) quality of a wrong answer
    kw = dict(scale=scale, std=std, eps=eps)
    out = {}
    for name in remedies:
        if name in ("none", "partial"):
            p = _sigmoid(z)
        elif name == "explore":
            p = _sigmoid(z / config.temperature)
        elif name == "demos":
            failed = np.all(u >= _sigmoid(z)[:, None], axis=1)     # all-wrong under plain GRPO
            p = _sigmoid(z + config.sft_shift * failed)
        if name == "dynamic":
            p_keep, r_keep, responses = [], [], 0
            drng = np.random.default_rng(seed + 1)
            p0 = _sigmoid(z)
            r0 = (u < p0[:, None]).astype(float)
            for rnd in range(config.max_rounds):
                if rnd == 0:
                    p_new, r_new = p0, r0
                else:
                    p_new = _sigmoid(mix.logits(K, drng))
                    r_new = (drng.random((K, G)) < p_new[:, None]).astype(float)
                live = ~degenerate_mask(r_new)
                need = K - sum(len(x) for x in p_keep)
                idx = np.flatnonzero(live)[:need]
                # responses are generated prompt by prompt until the batch is full
                responses += G * ((idx[-1] + 1) if len(idx) == need and need > 0 else K)
                p_keep.append(p_new[idx])
                r_keep.append(r_new[idx])
                if sum(len(x) for x in p_keep) >= K:
                    break
            p_b, r_b = np.concatenate(p_keep), np.concatenate(r_keep)
            if len(p_b) < K:  # budget exhausted: pad with the last degenerate groups (reported honestly)
                pad = K - len(p_b)
                p_b = np.concatenate([p_b, p_new[:pad]])
                r_b = np.concatenate([r_b, r_new[:pad]])
            out[name] = _outcome(name, p_b, r_b, responses, **kw)
            continue
        r = (u < p[:, None]).astype(float)          # (K, G) binary: correct = 1
        if name == "partial":
            r = np.where(r == 1.0, 1.0, config.partial * credit)
        out[name] = _outcome(name, p, r, K * G, **kw)
    return out


def dynamic_sampling_cost(mix: PromptMix, G: int) -> float:
    """Expected responses generated per response kept by dynamic sampling: 1/P(informative)."""
    f = informative_fraction(mix, G)
    if f <= 0:
        raise ValueError("no prompt in this mix can produce an informative group")
    return 1.0 / f
