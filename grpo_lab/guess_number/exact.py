"""Exact V, Q and A = Q − V by dynamic programming over (candidates, tries left) (lecture notes 004 §一).

The DP runs over set sizes, not number sets (see "Why sizes suffice" in
:mod:`grpo_lab.guess_number`); :func:`one_step_tree` lists what each guess leads to.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from grpo_lab import _checks
from grpo_lab.guess_number.game import MAX_N, MAX_TRIES, ActionValue, Policy, check_candidates, make_policy

# ---------------------------------------------------------------------------------
# Exact values by dynamic programming over (m, k)
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Solution:
    """Exact tables for one policy, for sets up to M candidates and up to K tries.

    ``V[k, m]``: V(h) for m candidates and k tries left (V[0, ·] = V[·, 0] = 0); shape (K + 1, M + 1).
    ``Q[k, m, r]``: Q(h, guess of rank r); shape (K + 1, M + 1, M), zero where r ≥ m.
    ``P[m, r]``: π(r | m); shape (M + 1, M). ``dV``, ``dQ``: derivatives in θ (softmax only).
    """

    policy: Policy
    M: int
    K: int
    cost: float
    V: np.ndarray
    Q: np.ndarray
    P: np.ndarray
    valid: np.ndarray
    dV: np.ndarray | None = field(default=None, repr=False)
    dQ: np.ndarray | None = field(default=None, repr=False)

    @property
    def A(self) -> np.ndarray:
        """A[k, m, r] = Q − V, zero where r ≥ m. Shape (K + 1, M + 1, M)."""
        return np.where(self.valid[None], self.Q - self.V[:, :, None], 0.0)


def _transition(M: int):
    """Index and weight arrays of the two wrong-guess branches. Shapes (M + 1, M)."""
    m = np.arange(M + 1)[:, None]
    r = np.arange(M)[None, :]
    valid = r < m
    lower = np.where(valid, r, 0)                     # secret below the guess: r candidates left
    higher = np.where(valid, m - 1 - r, 0)            # secret above: m − 1 − r left
    msafe = np.maximum(m, 1).astype(float)
    w_lower = np.where(valid, r / msafe, 0.0)
    w_higher = np.where(valid, (m - 1 - r) / msafe, 0.0)
    w_hit = np.where(valid, 1.0 / msafe, 0.0)
    return valid, lower, higher, w_lower, w_higher, w_hit


@lru_cache(maxsize=32)
def solve(policy: Policy = Policy(), M: int = 100, K: int = 7, cost: float = 0.0) -> Solution:
    """Exact V, Q (and dV/dθ for softmax) by backward induction over tries left k.

    Q[k, m, r] = −cost + 1/m · 1 + r/m · V[k−1, r] + (m−1−r)/m · V[k−1, m−1−r]
    V[k, m]    = Σ_r π(r|m) Q[k, m, r]
    """
    if not isinstance(policy, Policy):
        raise TypeError(f"policy must be a Policy, got {type(policy).__name__}")
    M = _checks.integer("M", M, low=1, high=MAX_N)
    K = _checks.integer("K", K, low=1, high=MAX_TRIES)
    cost = _checks.in_range("cost", cost, 0.0)
    valid, lower, higher, w_lower, w_higher, w_hit = _transition(M)
    P = policy.table(M)
    V = np.zeros((K + 1, M + 1))
    Q = np.zeros((K + 1, M + 1, M))
    grad = policy.differentiable
    dV = np.zeros((K + 1, M + 1)) if grad else None
    dQ = np.zeros((K + 1, M + 1, M)) if grad else None
    S = policy.score_table(M) if grad else None
    for k in range(1, K + 1):
        prev = V[k - 1]
        Q[k] = np.where(valid, w_hit - cost + w_lower * prev[lower] + w_higher * prev[higher], 0.0)
        V[k] = (P * Q[k]).sum(axis=1)
        if grad:
            dprev = dV[k - 1]
            dQ[k] = np.where(valid, w_lower * dprev[lower] + w_higher * dprev[higher], 0.0)
            dV[k] = (P * S * Q[k] + P * dQ[k]).sum(axis=1)   # ∂π = π·score
    for arr in (V, Q) + ((dV, dQ) if grad else ()):
        arr.setflags(write=False)
    return Solution(policy, M, K, cost, V, Q, P, valid, dV, dQ)


def action_values(candidates, tries_left, policy="uniform", *, theta=None, cost=0.0) -> dict[int, ActionValue]:
    """Exact Q(h, a), V(h) and A(h, a) = Q − V for every guess a among the candidates.

    ``candidates``: the consistent numbers (any set of distinct ints); ``tries_left`` ≥ 1;
    ``policy``: ``"uniform"`` (default), ``"bisection"``, ``"softmax"`` (with ``theta``) or a
    :class:`Policy`. Success pays 1; each guess costs ``cost`` (default 0).
    Seed example: ``action_values({9, 10, 11}, 2)`` gives Q(10) = 1, Q(9) = Q(11) = 2/3, V = 7/9.
    """
    cands = check_candidates(candidates)
    k = _checks.integer("tries_left", tries_left, low=1, high=MAX_TRIES)
    pol = make_policy(policy, theta)
    m = len(cands)
    sol = solve(pol, m, k, _checks.in_range("cost", cost, 0.0))
    v = float(sol.V[k, m])
    return {c: ActionValue(float(sol.Q[k, m, i]), v, float(sol.Q[k, m, i]) - v) for i, c in enumerate(cands)}


def value(candidates, tries_left, policy="uniform", *, theta=None, cost=0.0) -> float:
    """V^π(h): the expected return from this state (success probability when cost = 0)."""
    cands = check_candidates(candidates)
    k = _checks.integer("tries_left", tries_left, low=1, high=MAX_TRIES)
    return float(solve(make_policy(policy, theta), len(cands), k, _checks.in_range("cost", cost, 0.0)).V[k, len(cands)])


def success_probability(N: int, tries: int, policy="uniform", *, theta=None) -> float:
    """Probability of finding a secret uniform on 1..N within ``tries`` guesses."""
    N = _checks.integer("N", N, low=1, high=MAX_N)
    return value(range(1, N + 1), tries, policy, theta=theta)


def policy_gradient(m: int, tries: int, theta, *, cost=0.0) -> float:
    """Exact dJ/dθ of the softmax policy from a state with m candidates (J = V(m, tries))."""
    m = _checks.integer("m", m, low=1, high=MAX_N)
    k = _checks.integer("tries", tries, low=1, high=MAX_TRIES)
    return float(solve(Policy("softmax", theta), m, k, _checks.in_range("cost", cost, 0.0)).dV[k, m])


def state_visits(policy: Policy, m: int, tries: int) -> np.ndarray:
    """D[k', m'] = probability that an episode from (m, tries) reaches m' candidates with k' tries left.

    Shape (tries + 1, m + 1). Each tries-level is visited at most once, so D sums over m' to
    the probability of still playing. The policy-gradient theorem then reads
    dJ/dθ = Σ_{k', m'} D[k', m'] Σ_r π(r|m') ∂log π(r|m') A(k', m', r).
    """
    m = _checks.integer("m", m, low=1, high=MAX_N)
    K = _checks.integer("tries", tries, low=1, high=MAX_TRIES)
    valid, lower, higher, w_lower, w_higher, _ = _transition(m)
    P = policy.table(m)
    D = np.zeros((K + 1, m + 1))
    D[K, m] = 1.0
    for k in range(K, 1, -1):
        flow = D[k][:, None] * P                       # (m + 1, m): reach (k, m') and guess r
        np.add.at(D[k - 1], lower[valid], (flow * w_lower)[valid])
        np.add.at(D[k - 1], higher[valid], (flow * w_higher)[valid])
    D[:, 0] = 0.0
    return D


def advantage_map(policy="uniform", M: int = 20, tries_left: int = 3, *, theta=None, cost=0.0) -> np.ma.MaskedArray:
    """A(m, r) for every set size m = 1..M (rows) and guess rank r (columns); masked where r ≥ m.

    Shape (M, M). Row m − 1 is the state with m candidates and ``tries_left`` tries.
    """
    pol = make_policy(policy, theta)
    M = _checks.integer("M", M, low=1, high=MAX_N)
    k = _checks.integer("tries_left", tries_left, low=1, high=MAX_TRIES)
    sol = solve(pol, M, k, _checks.in_range("cost", cost, 0.0))
    A = sol.A[k, 1:]                                   # (M, M)
    return np.ma.masked_array(A, mask=~sol.valid[1:])


# ---------------------------------------------------------------------------------
# One-step tree: what each guess leads to
# ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Branch:
    """One guess from a state: probability and consequences of each answer."""

    guess: int
    pi: float                 # π(guess | h)
    q: float
    a: float
    p_correct: float          # 1/m
    lower: tuple[int, ...]    # candidates left if the answer is "lower"
    higher: tuple[int, ...]   # candidates left if the answer is "higher"
    v_lower: float            # V of that state with one try fewer (0 if empty or no tries)
    v_higher: float


def one_step_tree(candidates, tries_left, policy="uniform", *, theta=None, cost=0.0) -> list[Branch]:
    """For each guess: the three answers, the state each leads to and its value."""
    cands = check_candidates(candidates)
    k = _checks.integer("tries_left", tries_left, low=1, high=MAX_TRIES)
    pol = make_policy(policy, theta)
    m = len(cands)
    sol = solve(pol, m, k, _checks.in_range("cost", cost, 0.0))
    P = sol.P[m]
    out = []
    for r, g in enumerate(cands):
        q = float(sol.Q[k, m, r])
        out.append(Branch(g, float(P[r]), q, q - float(sol.V[k, m]), 1.0 / m,
                          cands[:r], cands[r + 1:], float(sol.V[k - 1, r]), float(sol.V[k - 1, m - 1 - r])))
    return out
