"""Guess-the-number: the advantage function A = Q − V, exactly and by sampling (seed 004 §一).

The game (seed 004, L9 p.27). A secret is uniform over the consistent candidates (at the
start 1..N). Each guess costs one of K tries; the host answers ``"higher"`` (the secret is
higher than the guess: the guess was too small), ``"lower"`` (too big) or ``"correct"``.
Success pays reward 1, otherwise 0. The *cost variant* also charges ``cost`` for every
guess, so rewards arrive along the way and the reward-to-go (后续回报) differs from the
total return.

The seed's example: after "8: too small" and "12: too big" the candidates are {9, 10, 11}
with two tries left. (The seed writes these hints as "8 / 偏大、12 / 偏小", describing where
the secret lies; :func:`parse_hints` reads 偏大/偏小 the natural way, as a verdict on the
*guess* — 偏大 "too big", 偏小 "too small" — so the seed's state is typed "8 偏小, 12 偏大".) Guessing 11 and failing leaves two candidates and one try; guessing 10 and
failing leaves one candidate and one try. Under the uniform policy

    Q(10) = 1/3 + 2/3 · 1   = 1,       Q(9) = Q(11) = 1/3 + 2/3 · 1/2 = 2/3,
    V     = (1 + 2/3 + 2/3)/3 = 7/9,   A(10) = +2/9 > 0,   A(9) = A(11) = −1/9 < 0:

the same 0 reward for a wrong guess, opposite signs of the advantage (优势).

Definitions (L9 p.27): for a history h (here summarised by the candidate set and the tries
left) and a guess a,

    Q^π(h, a) = E[reward-to-go from h | first guess a, then π],
    V^π(h)    = Σ_a π(a|h) Q^π(h, a),          A^π(h, a) = Q^π(h, a) − V^π(h),

so Σ_a π(a|h) A^π(h, a) = 0 for every h.

**Why sizes suffice.** The feedback only compares numbers, and every policy here looks only
at the *rank* of a guess among the consistent candidates, so after guessing the candidate of
rank r (0-based) in a set of m the next state is a set of size m − 1 − r ("higher") or r
("lower"), whatever the numbers are. The dynamic programme therefore runs over (m, k)
= (number of candidates, tries left), vectorised over m: O(K·M²) numbers for sets up to M.
The tests check it against brute-force enumeration over actual number sets and secrets.

Policies (rank-based; see :class:`Policy`):

=============  ===============================================================
``uniform``    every consistent candidate with probability 1/m (the default)
``bisection``  the lower median, rank (m − 1)//2 (an optimal policy)
``softmax``    π_θ(r|m) ∝ exp(θ·φ(r, m)), φ = −|r − (m − 1)/2|: θ = 0 is uniform,
               θ → ∞ bisection (both middles for even m), θ < 0 prefers the ends
=============  ===============================================================

Monte-Carlo (L9 p.27): per-step estimates Â_t = R(τ) − b(h_t) with the baselines (基线)
``none`` (b = 0), ``constant`` (a fixed b) and ``value`` (the exact V^π(h_t)); the return is
either the total return R(τ) or the reward-to-go G_t = Σ_{t' ≥ t} r_{t'} (L9 p.35; the seed
writes t' > t because it indexes the reward of action a_t as r_{t+1}). Every combination
gives an unbiased policy gradient Σ_t Â_t ∇_θ log π_θ(a_t|h_t), since
E_a[b(h)∇log π] = 0 (L9 p.29); they differ in variance. :func:`train` runs REINFORCE on θ.

TRL and verl do not model multi-step games: an LLM response is one action sequence with one
terminal reward, so there every token's reward-to-go equals the total return and GRPO
broadcasts one sequence-level advantage to all tokens (seed 000, eq. (1)). This module is
the multi-step picture that explains what that broadcast gives up.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, NamedTuple

import numpy as np

from grpo_lab import _checks

POLICIES = ("uniform", "bisection", "softmax")
FEEDBACK = ("higher", "lower", "correct")
BASELINES = ("none", "constant", "value")
RETURNS = ("total", "to-go")
ESTIMATORS = tuple((ret, b) for ret in RETURNS for b in BASELINES)

#: the seed's state: 8 was too small, 12 too big -> {9, 10, 11}, two tries left
SEED_HINTS = ((8, "higher"), (12, "lower"))
SEED_CANDIDATES = (9, 10, 11)
SEED_TRIES = 2
MAX_N = 200          # largest candidate set the DP accepts (O(K·M²) memory)
MAX_TRIES = 20

_FEEDBACK_ALIASES = {
    "higher": "higher", "too small": "higher", "small": "higher", "偏小": "higher", "<": "higher",
    "lower": "lower", "too big": "lower", "big": "lower", "too large": "lower", "偏大": "lower", ">": "lower",
}


class ActionValue(NamedTuple):
    """Exact values of one guess a in a state h: q = Q(h, a), v = V(h), a = Q − V."""

    q: float
    v: float
    a: float


# ---------------------------------------------------------------------------------
# Policies
# ---------------------------------------------------------------------------------
def _features(M: int) -> tuple[np.ndarray, np.ndarray]:
    """φ[m, r] = −|r − (m − 1)/2| and the validity mask r < m. Shapes (M + 1, M)."""
    m = np.arange(M + 1)[:, None]
    r = np.arange(M)[None, :]
    valid = r < m
    phi = np.where(valid, -np.abs(r - (m - 1) / 2.0), 0.0)
    return phi, valid


@dataclass(frozen=True)
class Policy:
    """A rank-based guessing policy. ``theta`` matters only for ``softmax``."""

    name: str = "uniform"
    theta: float = 0.0

    def __post_init__(self):
        _checks.choice("policy", self.name, POLICIES)
        object.__setattr__(self, "theta", _checks.finite_float("theta", self.theta))

    @property
    def differentiable(self) -> bool:
        return self.name == "softmax"

    def table(self, M: int) -> np.ndarray:
        """π(r | m) for m = 0..M (row 0 is all zero). Shape (M + 1, M); rows sum to 1."""
        return _prob_table(self, M)

    def score_table(self, M: int) -> np.ndarray:
        """∂/∂θ log π_θ(r | m) = φ(r, m) − Σ_r' π(r'|m) φ(r', m). Shape (M + 1, M); softmax only."""
        if not self.differentiable:
            raise ValueError(f"policy {self.name!r} has no parameter; the score needs policy='softmax'")
        return _score_table(self, M)

    def __str__(self):
        return f"softmax(θ={self.theta:g})" if self.name == "softmax" else self.name


@lru_cache(maxsize=256)
def _prob_table(policy: Policy, M: int) -> np.ndarray:
    phi, valid = _features(M)
    if policy.name == "uniform":
        P = valid / np.maximum(np.arange(M + 1), 1)[:, None]
    elif policy.name == "bisection":
        P = np.zeros((M + 1, M))
        m = np.arange(1, M + 1)
        P[m, (m - 1) // 2] = 1.0
    else:
        logits = np.where(valid, policy.theta * phi, -np.inf)
        logits[0, :] = 0.0
        logits -= logits.max(axis=1, keepdims=True)
        P = np.exp(logits)
        P /= P.sum(axis=1, keepdims=True)
        P[0] = 0.0
    P = np.asarray(P, dtype=float)
    P.setflags(write=False)
    return P


@lru_cache(maxsize=256)
def _score_table(policy: Policy, M: int) -> np.ndarray:
    phi, valid = _features(M)
    P = _prob_table(policy, M)
    S = np.where(valid, phi - (P * phi).sum(axis=1, keepdims=True), 0.0)
    S.setflags(write=False)
    return S


def make_policy(policy="uniform", theta=None) -> Policy:
    """A :class:`Policy` from a name (``theta`` defaults to 1.0 for softmax) or a Policy."""
    if isinstance(policy, Policy):
        if theta is not None:
            raise ValueError("theta must not be given together with a Policy object")
        return policy
    if not isinstance(policy, str):
        raise TypeError(f"policy must be one of {POLICIES} or a Policy, got {type(policy).__name__}")
    _checks.choice("policy", policy, POLICIES)
    if theta is None:
        theta = 1.0 if policy == "softmax" else 0.0
    elif policy != "softmax":
        raise ValueError(f"theta only applies to policy='softmax', not {policy!r}")
    return Policy(policy, theta)


def policy_probs(candidates, policy="uniform", *, theta=None) -> dict[int, float]:
    """π(a | h) for every candidate a (the candidates' ranks decide)."""
    cands = check_candidates(candidates)
    P = make_policy(policy, theta).table(len(cands))[len(cands)]
    return {c: float(P[i]) for i, c in enumerate(cands)}


# ---------------------------------------------------------------------------------
# Validation and the game itself
# ---------------------------------------------------------------------------------
def check_candidates(candidates) -> tuple[int, ...]:
    """The candidates as a sorted tuple of distinct ints; raises on empty/duplicate/non-int."""
    if isinstance(candidates, (str, bytes)) or not isinstance(candidates, Iterable):
        raise TypeError(f"candidates must be a set or sequence of integers, got {type(candidates).__name__}")
    items = list(candidates)
    if not items:
        raise ValueError("candidates must not be empty: no secret is consistent with an empty set")
    out = []
    for x in items:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise TypeError(f"candidates must hold integers, got {x!r}")
        out.append(int(x))
    if len(set(out)) != len(out):
        raise ValueError(f"candidates must be distinct, got {sorted(out)}")
    if len(out) > MAX_N:
        raise ValueError(f"candidates may hold at most {MAX_N} numbers, got {len(out)}")
    return tuple(sorted(out))


def feedback(secret: int, guess: int) -> str:
    """The host's answer: ``"higher"`` if the secret is higher than the guess, etc."""
    secret = _checks.integer("secret", secret)
    guess = _checks.integer("guess", guess)
    return "correct" if guess == secret else ("higher" if secret > guess else "lower")


def parse_hints(hints) -> list[tuple[int, str]]:
    """Hints as ``[(guess, "higher" | "lower"), ...]``.

    Accepts that list, or a string such as ``"8 higher, 12 lower"``, ``"8: too small;
    12: too big"`` or ``"8 偏小, 12 偏大"``. ``"higher"`` means the secret is
    higher than the guess (the guess was too small, 偏小); 偏大 means the guess was too big.
    """
    if hints is None:
        return []
    if isinstance(hints, str):
        items = [h for h in re.split(r"[,;，、\n]+", hints) if h.strip()]
        out = []
        for item in items:
            match = re.fullmatch(r"\s*(-?\d+)\s*[:/=]?\s*(.*?)\s*", item)
            if not match:
                raise ValueError(f"hints: cannot read {item.strip()!r}; write e.g. '8 higher, 12 lower'")
            out.append((int(match.group(1)), match.group(2)))
        hints = out
    result = []
    for h in hints:
        try:
            guess, word = h
        except (TypeError, ValueError):
            raise TypeError(f"hints must be (guess, feedback) pairs, got {h!r}") from None
        if isinstance(guess, bool) or not isinstance(guess, (int, np.integer)):
            raise TypeError(f"hints: guess must be an integer, got {guess!r}")
        key = str(word).strip().lower()
        if key == "correct":
            raise ValueError(f"hints: guess {guess} was 'correct', so the game is over; no state follows")
        if key not in _FEEDBACK_ALIASES:
            raise ValueError(f"hints: feedback for guess {guess} must be 'higher' (too small) or "
                             f"'lower' (too big), got {word!r}")
        result.append((int(guess), _FEEDBACK_ALIASES[key]))
    return result


def candidates_from_hints(N: int, hints=()) -> tuple[int, ...]:
    """The numbers in 1..N consistent with every hint; ValueError if none is."""
    N = _checks.integer("N", N, low=1, high=MAX_N)
    cands = list(range(1, N + 1))
    for guess, word in parse_hints(hints):
        if not 1 <= guess <= N:
            raise ValueError(f"hints: guess {guess} is outside 1..{N}")
        cands = [c for c in cands if feedback(c, guess) == word]
        if not cands:
            raise ValueError(f"hints are inconsistent: no number in 1..{N} fits them all "
                             f"(it fails at '{guess} {word}')")
    return tuple(cands)


@dataclass(frozen=True)
class State:
    """A history h summarised: the consistent candidates and the tries left."""

    candidates: tuple[int, ...]
    tries_left: int

    @property
    def m(self) -> int:
        return len(self.candidates)


def state_from_hints(N: int, tries: int, hints=()) -> State:
    """The state after the given hints in a game on 1..N with ``tries`` tries in all."""
    tries = _checks.integer("tries", tries, low=1, high=MAX_TRIES)
    parsed = parse_hints(hints)
    if len(parsed) >= tries:
        raise ValueError(f"hints use {len(parsed)} of {tries} tries; no try is left to evaluate")
    return State(candidates_from_hints(N, parsed), tries - len(parsed))


def next_state(state: State, guess: int, answer: str) -> State | None:
    """The state after a wrong guess and its answer (``None`` when the game ends)."""
    if answer == "correct":
        return None
    _checks.choice("answer", answer, FEEDBACK)
    cands = tuple(c for c in state.candidates if feedback(c, guess) == answer)
    if state.tries_left <= 1 or not cands:
        return None
    return State(cands, state.tries_left - 1)


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
                    seed: int = 0, estimators=ESTIMATORS) -> EstimatorStats:
    """Sample n episodes of softmax(θ) once; evaluate every estimator on them (common samples)."""
    pol = Policy("softmax", theta)
    cost = _checks.in_range("cost", cost, 0.0)
    ep = sample_episodes(m, tries, pol, n, cost=cost, seed=seed)
    sol = solve(pol, ep.m, ep.K, cost)
    names = tuple(tuple(e) for e in estimators)
    g = np.stack([gradient_samples(ep, sol, ret, b, constant) for ret, b in names])   # (E, n)
    var = g.var(axis=1, ddof=1) if n > 1 else np.zeros(len(names))
    return EstimatorStats(names, g.mean(axis=1), var, np.sqrt(var / n), float(sol.dV[ep.K, ep.m]), n)


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


def train_estimators(config: TrainConfig = TrainConfig(), estimators=ESTIMATORS) -> dict[tuple[str, str], TrainRun]:
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
