"""REINFORCE training of the softmax policy's θ on guess-the-number, per estimator."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grpo_lab import _checks
from grpo_lab.guess_number.game import BASELINES, MAX_N, MAX_TRIES, PG_ESTIMATORS, RETURNS, _features

# ---------------------------------------------------------------------------------
# REINFORCE training of θ
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class TrainConfig:
    """REINFORCE on the softmax policy's θ from θ0 = 0 (uniform) toward bisection."""

    N: int = 20            # numbers 1..N
    tries: int = 3         # K
    steps: int = 60        # SGD steps
    batch: int = 16        # episodes per step
    lr: float = 0.05       # learning rate on θ
    seeds: int = 16        # independent runs
    theta0: float = 0.0    # start (0 = uniform)
    cost: float = 0.0      # per-guess cost
    constant: float = 0.5  # b of the "constant" baseline
    seed: int = 0


def _batched_values(thetas: np.ndarray, M: int, K: int, cost: float, phi: np.ndarray,
                    valid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """V[s, k, m] and π[s, m, r] of softmax(θ_s) for a vector of θ. Shapes (S, K+1, M+1), (S, M+1, M).

    φ is symmetric under r -> m − 1 − r, so both wrong-guess branches share one transition
    matrix: V_k = 1/m − cost + T @ V_{k−1}[:M] with T[m, j] = 2 π(j|m) · j/m.
    """
    m = np.arange(M + 1)
    shift = np.minimum(thetas, 0.0)[:, None] * ((m - 1) / 2.0)          # max_r θφ = −shift ≥ 0
    P = thetas[:, None, None] * phi                                     # (S, M+1, M)
    P += shift[:, :, None]
    np.exp(P, out=P)
    P *= valid                                                           # unnormalised π
    total = P @ np.ones(M)                                               # (S, M+1)
    total[:, 0] = 1.0
    P /= total[:, :, None]
    T = P * (2.0 * np.arange(M)[None, :] / np.maximum(m, 1)[:, None])   # (S, M+1, M)
    a = np.where(m > 0, 1.0 / np.maximum(m, 1) - cost, 0.0)              # (M+1,)
    V = np.zeros((thetas.size, K + 1, M + 1))
    for k in range(1, K + 1):
        V[:, k] = a + np.matmul(T, V[:, k - 1, :M, None])[..., 0]
    return V, P


def success_curve(N: int, tries: int, thetas, *, cost=0.0) -> np.ndarray:
    """Exact J(θ) = V(N, tries) of softmax(θ) for many θ at once (vectorised DP). Shape like thetas (1-d)."""
    N = _checks.integer("N", N, low=1, high=MAX_N)
    K = _checks.integer("tries", tries, low=1, high=MAX_TRIES)
    thetas = _checks.finite_array("thetas", thetas, ndim=(0, 1))
    phi, valid = _features(N)
    V, _ = _batched_values(np.atleast_1d(thetas), N, K, _checks.in_range("cost", cost, 0.0), phi, valid)
    return V[:, K, N].reshape(thetas.shape)


@dataclass(frozen=True)
class TrainRun:
    """θ and the exact objective J(θ) = V(N, K) per step. Shapes (seeds, steps + 1)."""

    returns: str
    baseline: str
    theta: np.ndarray
    J: np.ndarray
    grad_sd: np.ndarray     # (seeds, steps) std of the per-episode gradient estimates in each batch


def train_estimators(config: TrainConfig = TrainConfig(), estimators=PG_ESTIMATORS) -> dict[tuple[str, str], TrainRun]:
    """REINFORCE with several estimators side by side: θ ← θ + lr · mean_batch Σ_t Â_t ∂θ log π(a_t|h_t).

    Returns {(returns, baseline): TrainRun}. The ``value`` baseline is the exact V of the
    *current* policy (what a perfect critic would give). Every estimator sees the same random
    numbers (common random numbers), so the curves differ only through Â.
    """
    names = []
    for e in estimators:
        try:
            ret, base = e
        except (TypeError, ValueError):
            raise TypeError(f"estimators must be (returns, baseline) pairs, got {e!r}") from None
        names.append((_checks.choice("returns", ret, RETURNS), _checks.choice("baseline", base, BASELINES)))
    if not names:
        raise ValueError("estimators must name at least one (returns, baseline) pair")
    c = config
    N = _checks.integer("N", c.N, low=1, high=MAX_N)
    K = _checks.integer("tries", c.tries, low=1, high=MAX_TRIES)
    steps = _checks.integer("steps", c.steps, low=1)
    B = _checks.integer("batch", c.batch, low=1)
    S0 = _checks.integer("seeds", c.seeds, low=1)
    lr = _checks.in_range("lr", c.lr, 0.0, low_open=True)
    cost = _checks.in_range("cost", c.cost, 0.0)
    constant = _checks.finite_float("constant", c.constant)
    E = len(names)
    S = E * S0                                           # rows: estimator-major, then seed
    rng = np.random.default_rng(_checks.integer("seed", c.seed))
    secret0 = np.tile(rng.integers(0, N, (steps, S0, B)), (1, E, 1))     # (steps, S, B)
    u = np.tile(rng.random((steps, S0, B, K)), (1, E, 1, 1))           # (steps, S, B, K)
    togo = np.repeat([ret == "to-go" for ret, _ in names], S0)[:, None, None]           # (S, 1, 1)
    kind = np.repeat([BASELINES.index(b) for _, b in names], S0)[:, None, None]        # (S, 1, 1)
    phi, valid = _features(N)
    upper = np.triu(np.ones((N, N)))                     # P @ upper = cumulative sum over r
    saturate = (np.arange(N)[None, :] >= np.arange(N + 1)[:, None] - 1).astype(float)  # r ≥ m − 1: CDF ≥ 1
    theta = np.full(S, _checks.finite_float("theta0", c.theta0))
    thetas = np.empty((S, steps + 1))
    J = np.empty((S, steps + 1))
    gs = np.empty((S, steps, B))                        # per-episode gradient estimates
    k_t = K - np.arange(K)                               # tries left at step t
    ones_N = np.ones(N)
    upper_K = np.triu(np.ones((K, K)))                   # reward @ upper_K.T = reward-to-go G_t
    sidx = np.arange(S)[:, None]
    for step in range(steps + 1):
        V, P = _batched_values(theta, N, K, cost, phi, valid)    # (S, K+1, N+1), (S, N+1, N)
        thetas[:, step] = theta
        J[:, step] = V[:, K, N]
        if step == steps:
            break
        C = P @ upper + saturate                                 # CDF; ≥ 1 from r = m − 1 on, so r < m
        phi_mean = (P * phi) @ ones_N                            # E_π[φ | m], (S, N+1)
        size = np.full((S, B), N)                                # 0 once the episode is over
        secret = secret0[step].copy()
        sizes = np.zeros((S, B, K), int)
        scores = np.zeros((S, B, K))
        reward = np.zeros((S, B, K))
        for t in range(K):
            sizes[..., t] = size
            r = (C[sidx, size] <= u[step, :, :, t, None]).sum(axis=2)      # inverse-CDF draw (0 if over)
            scores[..., t] = phi[size, r] - phi_mean[sidx, size]           # ∂θ log π(r|m); 0 if over
            live = size > 0
            hit = live & (r == secret)
            reward[..., t] = hit - cost * live
            above = secret > r
            size = np.where(live & ~hit, np.where(above, size - 1 - r, r), 0)
            secret = np.where(above, secret - 1 - r, secret)
        ret = np.where(togo, reward @ upper_K.T, reward.sum(axis=2, keepdims=True))   # (S, B, K)
        v_t = V[sidx[..., None], k_t[None, None, :], sizes]                 # V(h_t), (S, B, K)
        b = np.where(kind == 0, 0.0, np.where(kind == 1, constant, v_t))
        g = ((ret - b) * scores).sum(axis=2)                                # (S, B); scores = 0 after the end
        gs[:, step] = g
        theta = theta + lr * g.mean(axis=1)
    gsd = gs.std(axis=2)                                 # (S, steps)
    return {name: TrainRun(name[0], name[1], thetas[i * S0:(i + 1) * S0], J[i * S0:(i + 1) * S0],
                           gsd[i * S0:(i + 1) * S0]) for i, name in enumerate(names)}


def train(returns: str = "to-go", baseline: str = "value", config: TrainConfig = TrainConfig()) -> TrainRun:
    """REINFORCE of the softmax policy's θ with one estimator (see :func:`train_estimators`)."""
    return train_estimators(config, [(returns, baseline)])[(returns, baseline)]
