"""The two-armed bandit of lecture notes 004 §二 (L9 p.30-33): REINFORCE and a ladder of baselines.

One parameter θ; the policy picks arm A with probability p = σ(θ) and arm B otherwise.
Arm A pays R = 1, arm B pays R = 0. The score function is

    ∂/∂θ log π(A) = 1 − p,        ∂/∂θ log π(B) = −p,

so the one-sample REINFORCE estimate with baseline b is ĝ = (R − b)·∂/∂θ log π(a).
Its expectation is p(1 − p) for *every* b (seed 004, L9 p.29: E[b ∇log π] = 0); its
variance is p(1 − p)(1 − p − b)², zero at the optimal constant b* = 1 − p. Exactly zero needs
one parameter, deterministic rewards *and two arms*: :func:`softmax_bandit_stats` has K arms
(π(a) ∝ exp(θ·φ_a)), where with three distinct arms no constant b reaches zero variance.

Seed numbers at θ₀ = −1.1 (p ≈ 0.25): no baseline gives +0.75 for A and 0 for B;
b = 0.5 gives +0.375 for A and +0.125 for B; running means converge to p(1 − p) ≈ 0.188.
(The seed rounds p to 0.25: exactly, σ(−1.1) = 0.2497 and p(1 − p) = 0.1874; at p = 0.25
it is 0.1875.)

The baseline ladder (lecture notes 004 name "L9 p.28's four rungs" but list none; this is the
course's reconstruction, extended as GRPO does):

=============  ===============================================================
``none``       b = 0 (plain REINFORCE)
``constant``   a fixed b (default 0.5, the seed's example)
``running``    exponential moving average of past rewards
``value``      a scalar v fit by SGD regression to observed rewards
``group``      mean reward of the G samples of this step (GRPO; biased by 1/G)
``loo``        leave-one-out mean of the other G − 1 samples (RLOO; unbiased)
``optimal``    b* = E[g²R]/E[g²] = 1 − p (variance exactly zero here)
=============  ===============================================================
"""
from __future__ import annotations

from dataclasses import dataclass
from math import comb

import numpy as np

from grpo_lab import _checks

THETA0 = -1.1
ACTIONS = ("A", "B")
LADDER = ("none", "constant", "running", "value", "group", "loo", "optimal")


def prob_a(theta) -> float:
    """p = π(A) = σ(θ)."""
    return float(_sigmoid(_checks.finite_float("theta", theta)))


def _sigmoid(theta):
    """σ(θ) = 1/(1 + e^−θ); at θ → −∞ e^−θ overflows to inf and σ = 1/inf = 0 exactly (no warning)."""
    with np.errstate(over="ignore"):
        return 1.0 / (1.0 + np.exp(-theta))


def reward(action: str) -> float:
    """R = 1 for arm A, 0 for arm B."""
    return 1.0 if _checks.choice("action", action, ACTIONS) == "A" else 0.0


def grad_log_prob(theta, action: str) -> float:
    """∂/∂θ log π(action): 1 − p for A, −p for B."""
    p = prob_a(theta)
    return 1.0 - p if _checks.choice("action", action, ACTIONS) == "A" else -p


def grad_estimate(theta, action: str, reward, baseline=0.0) -> float:
    """One-sample REINFORCE estimate (R − b)·∂/∂θ log π(action) (seed 004, Â = R − b)."""
    r = _checks.finite_float("reward", reward)
    b = _checks.finite_float("baseline", baseline)
    return (r - b) * grad_log_prob(theta, action)


def estimator_stats(theta, baseline=0.0) -> tuple[float, float]:
    """Exact (mean, variance) of the one-sample estimate with a constant baseline b.

    Enumerates both arms: mean = p(1 − p) whatever b is; variance = p(1 − p)(1 − p − b)².
    """
    p = prob_a(theta)
    b = _checks.finite_float("baseline", baseline)
    g = np.array([grad_estimate(theta, "A", 1.0, b), grad_estimate(theta, "B", 0.0, b)])
    w = np.array([p, 1.0 - p])
    mean = float(w @ g)
    return mean, float(w @ (g - mean) ** 2)


def baseline_term_mean(theta, baseline) -> float:
    """E_a[b·∂/∂θ log π(a)], exactly: Σ_a π(a)·b·∂log π(a) = b·∂/∂θ Σ_a π(a) = 0 (L9 p.29)."""
    p = prob_a(theta)
    b = _checks.finite_float("baseline", baseline)
    return p * b * grad_log_prob(theta, "A") + (1 - p) * b * grad_log_prob(theta, "B")


def optimal_baseline(theta) -> float:
    """Variance-minimising constant b* = E[g²R]/E[g²], g = ∂/∂θ log π(a). Here b* = 1 − p."""
    p = prob_a(theta)
    g = np.array([1.0 - p, -p])
    w = np.array([p, 1.0 - p])
    r = np.array([1.0, 0.0])
    return float((w * g**2 * r).sum() / (w * g**2).sum())


def _softmax_arms(theta, features, rewards):
    """π (K,), the score ∂/∂θ log π(a) = φ_a − E_π[φ] (K,) and the rewards (K,) of a softmax bandit."""
    th = _checks.finite_float("theta", theta)
    phi = _checks.finite_array("features", features, ndim=1, min_size=2)
    r = _checks.finite_array("rewards", rewards, ndim=1, min_size=2)
    if r.shape != phi.shape:
        raise ValueError(f"rewards: expected one reward per arm ({phi.size}), got {r.size}")
    z = th * phi
    pi = np.exp(z - z.max())
    pi /= pi.sum()
    return pi, phi - pi @ phi, r


def softmax_bandit_stats(theta, features, rewards, baseline=0.0) -> tuple[float, float]:
    """Exact (mean, variance) of ĝ = (R − b)·∂/∂θ log π(a) on a one-parameter K-armed softmax bandit.

    π(a) ∝ exp(θ·φ_a), deterministic reward R_a per arm; the score is φ_a − Σ_a' π(a')φ_a'.
    With φ = (1, 0) and R = (1, 0) this is the two-armed bandit of :func:`estimator_stats`.
    """
    pi, score, r = _softmax_arms(theta, features, rewards)
    b = _checks.finite_float("baseline", baseline)
    g = (r - b) * score                               # (K,) the estimate for each arm
    mean = float(pi @ g)
    return mean, float(pi @ (g - mean) ** 2)


def softmax_optimal_baseline(theta, features, rewards) -> float:
    """The variance-minimising constant b* = E[s²R]/E[s²] of :func:`softmax_bandit_stats` (s the score)."""
    pi, score, r = _softmax_arms(theta, features, rewards)
    s2 = score**2
    return float((pi * s2 * r).sum() / (pi * s2).sum())


def group_baseline_stats(theta, G: int, *, leave_one_out: bool = False) -> tuple[float, float]:
    """Exact (mean, variance) of one sample's estimate when b is the group mean of G samples.

    With b = mean of all G rewards (sample i included) the mean is (G − 1)/G · p(1 − p):
    GRPO's group baseline is biased by the sample's own reward. The leave-one-out mean of
    the other G − 1 rewards (RLOO) is independent of a_i, hence unbiased.
    """
    p = prob_a(theta)
    G = _checks.integer("G", G, low=2)
    gA, gB = 1.0 - p, -p
    mean = second = 0.0
    for k in range(G):  # k = number of A among the other G − 1 samples
        pk = comb(G - 1, k) * p**k * (1 - p) ** (G - 1 - k)
        for r_i, g, pa in ((1.0, gA, p), (0.0, gB, 1 - p)):
            b = k / (G - 1) if leave_one_out else (r_i + k) / G
            est = (r_i - b) * g
            mean += pk * pa * est
            second += pk * pa * est**2
    return mean, second - mean**2



UPDATE_RUNGS = ("none", "constant", "group", "loo", "optimal")


def update_stats(theta, G: int, rung: str = "none", *, constant: float = 0.5) -> tuple[float, float]:
    """Exact (mean, variance) of one step's update u = (1/G) Σ_i (R_i − b_i)·∂log π(a_i) over G samples.

    This is the quantity :func:`train` adds to θ (times lr); the G estimates of one step share their
    baseline's inputs, so they are correlated and Var[u] is not Var[one sample]/G. Rungs as in
    :data:`LADDER` that need no history: ``none``, ``constant`` (b = ``constant``), ``group`` (mean of
    all G rewards), ``loo`` (mean of the other G − 1) and ``optimal`` (b* = 1 − p). Enumerates the
    number k of A-samples, k ~ Binomial(G, p). At θ₀ and G = 2, ``loo`` gives Var 0.059 against 0.053
    for ``none``; from G = 3 on it is lower (0.027 against 0.035).
    """
    p = prob_a(theta)
    rung = _checks.choice("rung", rung, UPDATE_RUNGS)
    G = _checks.integer("G", G, low=2 if rung in ("group", "loo") else 1)
    c = _checks.finite_float("constant", constant)
    sA, sB = 1.0 - p, -p
    mean = second = 0.0
    for k in range(G + 1):
        pk = comb(G, k) * p**k * (1 - p) ** (G - k)
        if rung == "none":
            bA = bB = 0.0
        elif rung == "constant":
            bA = bB = c
        elif rung == "group":
            bA = bB = k / G
        elif rung == "loo":
            bA, bB = (k - 1) / (G - 1), k / (G - 1)      # an A-sample sees k − 1 other A's, a B-sample k
        else:
            bA = bB = 1.0 - p
        u = (k * (1.0 - bA) * sA + (G - k) * (0.0 - bB) * sB) / G
        mean += pk * u
        second += pk * u * u
    return mean, max(second - mean**2, 0.0)

# ---------------------------------------------------------------------------------
# Sampling and training
# ---------------------------------------------------------------------------------
def sample_actions(theta, n: int, rng: np.random.Generator) -> np.ndarray:
    """n arms as a boolean array (True = A)."""
    return rng.random(_checks.integer("n", n, low=1)) < prob_a(theta)


def sample_estimates(theta, n: int, baseline=0.0, *, seed: int = 0) -> np.ndarray:
    """n independent one-sample estimates (R − b)·∂log π with a constant baseline b. Shape (n,)."""
    b = _checks.finite_float("baseline", baseline)
    p = prob_a(theta)
    is_a = sample_actions(theta, n, np.random.default_rng(seed))
    r = is_a.astype(float)
    score = np.where(is_a, 1.0 - p, -p)
    return (r - b) * score


def running_mean(x) -> np.ndarray:
    """Cumulative mean x̄_n = (x_1 + … + x_n)/n. Shape like x (1-d)."""
    x = _checks.finite_array("x", x, ndim=1)
    return np.cumsum(x) / np.arange(1, x.size + 1)


@dataclass(frozen=True)
class TrainConfig:
    """SGD on θ with G samples per step; every rung of the ladder sees the same samples."""

    theta0: float = THETA0   # initial parameter (p ≈ 0.25)
    steps: int = 100         # SGD steps
    G: int = 4               # samples per step (the "group")
    lr: float = 0.5          # learning rate on θ
    seeds: int = 8           # independent runs (spread across seeds is plotted)
    constant: float = 0.5    # b of the "constant" rung
    ema: float = 0.9         # decay of the "running" rung's moving average
    value_lr: float = 0.2    # step size of the "value" rung's regression
    seed: int = 0            # base seed


def train(rung: str, config: TrainConfig = TrainConfig()) -> np.ndarray:
    """REINFORCE training of θ with one rung of the ladder. Returns p per step, shape (seeds, steps + 1).

    All rungs draw their actions from the same random stream (common random numbers), so
    curves differ only through the baseline. The update averages the G per-sample
    estimates: θ ← θ + lr · mean_i (R_i − b_i) ∂log π(a_i).
    """
    rung = _checks.choice("rung", rung, LADDER)
    if not isinstance(config, TrainConfig):
        raise TypeError(f"config must be a bandit.TrainConfig, got {type(config).__name__}")
    c = config
    _checks.integer("steps", c.steps, low=1)
    _checks.integer("seed", c.seed, low=0)
    _checks.finite_float("constant", c.constant)
    _checks.in_range("ema", c.ema, 0.0, 1.0)
    _checks.in_range("value_lr", c.value_lr, 0.0)
    G = _checks.integer("G", c.G, low=2 if rung in ("group", "loo") else 1)
    S = _checks.integer("seeds", c.seeds, low=1)
    lr = _checks.in_range("lr", c.lr, 0.0, low_open=True)
    rng = np.random.default_rng(c.seed)
    u = rng.random((c.steps, S, G))                     # (steps, S, G) common random numbers
    theta = np.full(S, _checks.finite_float("theta0", c.theta0))  # (S,)
    b_run = np.zeros(S)                                 # running average of rewards
    v = np.zeros(S)                                     # learned scalar value
    out = np.empty((S, c.steps + 1))
    out[:, 0] = _sigmoid(theta)
    for t in range(c.steps):
        p = _sigmoid(theta)                             # (S,)
        is_a = u[t] < p[:, None]                        # (S, G)
        r = is_a.astype(float)
        score = np.where(is_a, 1.0 - p[:, None], -p[:, None])  # (S, G)
        if rung == "none":
            b = np.zeros_like(r)
        elif rung == "constant":
            b = np.full_like(r, c.constant)
        elif rung == "running":
            b = np.broadcast_to(b_run[:, None], r.shape)
        elif rung == "value":
            b = np.broadcast_to(v[:, None], r.shape)
        elif rung == "group":
            b = np.broadcast_to(r.mean(1, keepdims=True), r.shape)
        elif rung == "loo":
            b = (r.sum(1, keepdims=True) - r) / (G - 1)
        else:  # optimal
            b = np.broadcast_to(1.0 - p[:, None], r.shape)
        theta = theta + lr * ((r - b) * score).mean(1)
        b_run = c.ema * b_run + (1 - c.ema) * r.mean(1)
        v = v + c.value_lr * (r - v[:, None]).mean(1)   # SGD on ½(R − v)²
        out[:, t + 1] = _sigmoid(theta)
    return out


def train_ladder(config: TrainConfig = TrainConfig(), rungs=LADDER) -> dict[str, np.ndarray]:
    """:func:`train` for each rung; dict rung -> p of shape (seeds, steps + 1)."""
    return {rung: train(rung, config) for rung in rungs}
