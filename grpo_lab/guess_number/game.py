"""Guess-the-number, the game: rules, hints, states and the rank-based policies (lecture notes 004 §一).

See :mod:`grpo_lab.guess_number` for the whole story; this module holds what the other
three (:mod:`~grpo_lab.guess_number.exact`, :mod:`~grpo_lab.guess_number.monte_carlo`,
:mod:`~grpo_lab.guess_number.training`) share.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Iterable, NamedTuple

import numpy as np

from grpo_lab import _checks

POLICIES = ("uniform", "bisection", "softmax")
FEEDBACK = ("higher", "lower", "correct")
BASELINES = ("none", "constant", "value")
RETURNS = ("total", "to-go")
PG_ESTIMATORS = tuple((ret, b) for ret in RETURNS for b in BASELINES)

#: the lecture notes' state: 8 was too small, 12 too big -> {9, 10, 11}, two tries left
SEED_HINTS = ((8, "higher"), (12, "lower"))
SEED_CANDIDATES = (9, 10, 11)
SEED_TRIES = 2
MAX_N = 200          # largest candidate set the DP accepts (O(K·M²) memory)
MAX_TRIES = 20

_FEEDBACK_ALIASES = {
    "higher": "higher", "too small": "higher", "small": "higher", "<": "higher",
    "lower": "lower", "too big": "lower", "big": "lower", "too large": "lower", ">": "lower",
    # the lecture notes' wording (lecture notes 004 §一, L9 p.27: "8 / 偏大、12 / 偏小" -> {9, 10, 11}):
    # 偏大 / 偏小 say where the *secret* lies, "bigger" / "smaller" than the guess
    "偏大": "higher", "偏小": "lower",
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
    12: too big"`` or, in the lecture notes' wording, ``"8 / 偏大、12 / 偏小"``. ``"higher"``
    means the secret is higher than the guess (the guess was too small); 偏大 / 偏小 follow the
    lecture notes (004 §一, L9 p.27) and describe the secret: 偏大 = the secret is bigger
    (``"higher"``), 偏小 = the secret is smaller (``"lower"``).
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
