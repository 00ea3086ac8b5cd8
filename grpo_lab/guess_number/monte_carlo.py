"""Monte-Carlo episodes and per-step policy-gradient estimators of guess-the-number (L9 p.27–35).

Baselines (基线) none / constant / value × return total / reward-to-go (后续回报); every
combination is unbiased, they differ in variance (:func:`estimator_stats`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grpo_lab import _checks
from grpo_lab.guess_number.exact import Solution, solve
from grpo_lab.guess_number.game import (BASELINES, MAX_N, MAX_TRIES, PG_ESTIMATORS, RETURNS, Policy,
                                        check_candidates, make_policy)

# ---------------------------------------------------------------------------------
# Monte-Carlo episodes
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Episodes:
    """n sampled episodes from a state with m candidates and K tries left.

    Per step t (shape (n, K)): ``size`` m_t before the guess, ``rank`` r_t of the guess,
    ``reward`` r_t (1 on success, minus the cost of the guess), ``alive`` whether a guess was
    made at step t. ``success`` (n,).
    """

    m: int
    K: int
    size: np.ndarray
    rank: np.ndarray
    reward: np.ndarray
    alive: np.ndarray
    success: np.ndarray

    @property
    def total_return(self) -> np.ndarray:
        """R(τ) = Σ_t r_t. Shape (n,)."""
        return self.reward.sum(axis=1)

    @property
    def reward_to_go(self) -> np.ndarray:
        """G_t = Σ_{t' ≥ t} r_{t'} (后续回报). Shape (n, K)."""
        return np.cumsum(self.reward[:, ::-1], axis=1)[:, ::-1]


def _sample_ranks(cdf_flat: np.ndarray, M: int, size: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse-CDF draws r ~ π(·|size) for many sizes at once."""
    idx = np.searchsorted(cdf_flat, size + u, side="right")
    return np.minimum(idx - size * M, size - 1)


def _cdf_flat(P: np.ndarray) -> np.ndarray:
    """Row-wise CDF of π(·|m), saturated at 1 from rank m − 1 on, offset by m and flattened.

    Row m then spans [m, m + 1], so one ``searchsorted`` of m + u draws from every row at once.
    """
    m = np.arange(P.shape[0])[:, None]
    r = np.arange(P.shape[1])[None, :]
    C = np.where(r >= m - 1, 1.0, np.cumsum(P, axis=1))
    return (C + m).ravel()


def sample_episodes(m: int, tries: int, policy="uniform", n: int = 1000, *, theta=None, cost=0.0,
                    seed: int = 0, first_rank=None, rng: np.random.Generator | None = None) -> Episodes:
    """Play n games from a state with m candidates and ``tries`` tries left.

    The secret is uniform over the candidates; guesses follow the policy except that
    ``first_rank`` (an int or an (n,) array) can force the first guess (for Q estimates).
    """
    m = _checks.integer("m", m, low=1, high=MAX_N)
    K = _checks.integer("tries", tries, low=1, high=MAX_TRIES)
    n = _checks.integer("n", n, low=1)
    cost = _checks.in_range("cost", cost, 0.0)
    pol = make_policy(policy, theta)
    rng = np.random.default_rng(_checks.integer("seed", seed)) if rng is None else rng
    cdf = _cdf_flat(pol.table(m))
    secret = rng.integers(0, m, n)                    # rank of the secret among the candidates
    size = np.full(n, m)
    alive = np.ones(n, bool)
    out_size = np.zeros((n, K), int)
    out_rank = np.zeros((n, K), int)
    out_alive = np.zeros((n, K), bool)
    reward = np.zeros((n, K))
    u = rng.random((n, K))
    success = np.zeros(n, bool)
    for t in range(K):
        out_alive[:, t] = alive
        out_size[:, t] = np.where(alive, size, 0)
        if t == 0 and first_rank is not None:
            r = np.broadcast_to(np.asarray(first_rank, int), (n,))
            if np.any((r < 0) | (r >= m)):
                raise ValueError(f"first_rank must lie in 0..{m - 1}")
        else:
            r = _sample_ranks(cdf, m, np.maximum(size, 1), u[:, t])
        r = np.where(alive, r, 0)
        out_rank[:, t] = r
        hit = alive & (r == secret)
        reward[:, t] = np.where(alive, hit - cost, 0.0)
        above = secret > r
        size = np.where(above, size - 1 - r, r)
        secret = np.where(above, secret - 1 - r, secret)
        alive = alive & ~hit
        success |= hit
    return Episodes(m, K, out_size, out_rank, reward, out_alive, success)


@dataclass(frozen=True)
class MCValues:
    """Monte-Carlo Q̂, V̂, Â at one state from n rollouts per guess, next to the exact values.

    Arrays are (m,) over guesses in rank order; ``running_q`` (n, m) is Q̂ after 1..n rollouts.
    """

    candidates: tuple[int, ...]
    n: int
    q_hat: np.ndarray
    v_hat: float
    a_hat: np.ndarray
    se_q: np.ndarray
    q: np.ndarray
    v: float
    a: np.ndarray
    pi: np.ndarray
    running_q: np.ndarray

    def running_error(self) -> np.ndarray:
        """max_a |Â_n(a) − A(a)| after n = 1..N rollouts per guess. Shape (n,)."""
        a_run = self.running_q - (self.running_q @ self.pi)[:, None]
        return np.abs(a_run - self.a[None]).max(axis=1)


def mc_action_values(candidates, tries_left, policy="uniform", n: int = 200, *, theta=None, cost=0.0,
                     seed: int = 0) -> MCValues:
    """Estimate Q(h, a) for every guess by n rollouts that start with a and then follow π.

    V̂ = Σ_a π(a|h) Q̂(a) and Â = Q̂ − V̂ converge to the exact values at rate 1/√n.
    """
    cands = check_candidates(candidates)
    k = _checks.integer("tries_left", tries_left, low=1, high=MAX_TRIES)
    n = _checks.integer("n", n, low=1)
    pol = make_policy(policy, theta)
    m = len(cands)
    ep = sample_episodes(m, k, pol, n * m, cost=cost, seed=seed, first_rank=np.repeat(np.arange(m), n))
    R = ep.total_return.reshape(m, n).T               # (n, m) returns after each first guess
    running = np.cumsum(R, axis=0) / np.arange(1, n + 1)[:, None]
    q_hat = running[-1]
    se = R.std(axis=0) / np.sqrt(n)
    sol = solve(pol, m, k, _checks.in_range("cost", cost, 0.0))
    pi = sol.P[m, :m].copy()
    q = sol.Q[k, m, :m].copy()
    v = float(sol.V[k, m])
    v_hat = float(pi @ q_hat)
    return MCValues(cands, n, q_hat, v_hat, q_hat - v_hat, se, q, v, q - v, pi, running)


# ---------------------------------------------------------------------------------
# Policy-gradient estimators: baselines × (total return | reward-to-go)
# ---------------------------------------------------------------------------------
def per_step_advantages(ep: Episodes, sol: Solution, returns: str = "to-go", baseline: str = "value",
                        constant: float = 0.5) -> np.ndarray:
    """Â_t = (R(τ) or G_t) − b(h_t) at every step that was played, 0 elsewhere. Shape (n, K)."""
    _checks.choice("returns", returns, RETURNS)
    _checks.choice("baseline", baseline, BASELINES)
    constant = _checks.finite_float("constant", constant)
    ret = ep.reward_to_go if returns == "to-go" else np.broadcast_to(ep.total_return[:, None], ep.reward.shape)
    if baseline == "none":
        b = 0.0
    elif baseline == "constant":
        b = constant
    else:
        k = ep.K - np.arange(ep.K)[None, :]            # tries left at step t
        b = sol.V[k, ep.size]                          # V(h_t), (n, K)
    return np.where(ep.alive, ret - b, 0.0)


def gradient_samples(ep: Episodes, sol: Solution, returns: str = "to-go", baseline: str = "value",
                     constant: float = 0.5) -> np.ndarray:
    """One policy-gradient estimate per episode: Σ_t Â_t ∂θ log π(a_t|h_t). Shape (n,)."""
    adv = per_step_advantages(ep, sol, returns, baseline, constant)     # (n, K)
    score = sol.policy.score_table(sol.M)[ep.size, ep.rank]           # (n, K)
    return (adv * score * ep.alive).sum(axis=1)


@dataclass(frozen=True)
class EstimatorStats:
    """Mean, bias and variance of each gradient estimator on the same n episodes."""

    names: tuple[tuple[str, str], ...]   # (returns, baseline) pairs
    mean: np.ndarray                     # (E,)
    var: np.ndarray                      # (E,)
    se: np.ndarray                       # (E,) standard error of the mean
    exact: float                         # dJ/dθ
    n: int

    @property
    def bias(self) -> np.ndarray:
        return self.mean - self.exact

    def as_dict(self) -> dict[tuple[str, str], dict[str, float]]:
        return {name: {"mean": float(mu), "bias": float(mu - self.exact), "var": float(v), "se": float(s)}
                for name, mu, v, s in zip(self.names, self.mean, self.var, self.se)}


def estimator_stats(m: int = 20, tries: int = 3, theta=0.0, n: int = 2000, *, cost=0.0, constant=0.5,
                    seed: int = 0, estimators=PG_ESTIMATORS) -> EstimatorStats:
    """Sample n episodes of softmax(θ) once; evaluate every estimator on them (common samples)."""
    pol = Policy("softmax", theta)
    cost = _checks.in_range("cost", cost, 0.0)
    ep = sample_episodes(m, tries, pol, n, cost=cost, seed=seed)
    sol = solve(pol, ep.m, ep.K, cost)
    names = tuple(tuple(e) for e in estimators)
    g = np.stack([gradient_samples(ep, sol, ret, b, constant) for ret, b in names])   # (E, n)
    var = g.var(axis=1, ddof=1) if n > 1 else np.zeros(len(names))
    return EstimatorStats(names, g.mean(axis=1), var, np.sqrt(var / n), float(sol.dV[ep.K, ep.m]), n)
