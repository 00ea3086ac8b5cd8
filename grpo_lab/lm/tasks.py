"""Synthetic verifiable tasks: addition ``a+b=`` with difficulty levels, and their verifier.

A problem of level d adds two d-digit numbers (level 1: 0–9, level 2: 10–99, level 3:
100–999). The prompt is ``"a+b="``; a correct response is the digits of a + b followed by
EOS. The model decides when to stop, so the response length is its own choice; a response
that reaches the token budget without EOS is *truncated* and gets reward 0.

Rewards (seed 000 §5 step 2, "打分"): the 0/1 verifier (:func:`verify`) or, optionally,
partial credit (:func:`partial_credit`, seed 004 §三's fourth remedy for 退化组 degenerate
groups: "a more informative reward"). DAPO's soft overlong shaping is
:func:`overlong_penalty`.

Held-out split: a fixed, commutation-symmetric hash puts ≈ ``heldout_frac`` of all pairs
{a, b} aside; :meth:`AdditionTask.sample` never draws them and
:meth:`AdditionTask.heldout` evaluates on them only, so held-out accuracy measures
generalisation, not memory.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from grpo_lab import _checks

LEVEL_RANGES = {1: (0, 9), 2: (10, 99), 3: (100, 999)}
# The chat tasks' levels and reward modes (grpo_lab.lm.chat_tasks; here so that lm.config can
# validate them without importing the chat module)
CHAT_LEVELS = {1: "one-digit sum", 2: "two-digit sum", 3: "one-step word problem", 4: "two-step word problem"}
REWARD_MODES = ("correct", "correct_format")


@dataclass(frozen=True)
class Problem:
    a: int
    b: int
    level: int

    @property
    def prompt(self) -> str:
        return f"{self.a}+{self.b}="

    @property
    def answer(self) -> str:
        return str(self.a + self.b)


def verify(response: str, answer: str, truncated: bool = False) -> float:
    """1.0 if the response (text before EOS) is exactly the answer, else 0.0. Truncated → 0."""
    return float(not truncated and response == answer)


def partial_credit(response: str, answer: str, truncated: bool = False) -> float:
    """Credit in [0, 1]: right-aligned digits that match, divided by max(len(response), len(answer)).

    Exact answer → 1; a wrong units digit but right tens digit → partial; extra or missing
    digits lower the score; truncated → 0. Gives a group more distinct rewards than 0/1,
    so fewer groups are degenerate.
    """
    if truncated or not response:
        return 0.0
    n = max(len(response), len(answer))
    hits = sum(r == a for r, a in zip(reversed(response), reversed(answer)))
    return hits / n


def overlong_penalty(lengths, max_new: int, buffer: int) -> np.ndarray:
    """DAPO's soft overlong punishment, ≤ 0, added to the reward. Shape like ``lengths``.

    0 while |y| ≤ max_new − buffer; then a linear ramp (max_new − buffer − |y|)/buffer that
    reaches −1 at |y| = max_new (a truncated response).
    """
    L = _checks.finite_array("lengths", lengths, ndim=1, min_size=0)
    max_new = _checks.integer("max_new", max_new, low=1)
    buffer = _checks.integer("buffer", buffer, low=1, high=max_new)
    return np.clip((max_new - buffer - L) / buffer, -1.0, 0.0)


def _heldout_hash(a: int, b: int) -> int:
    lo, hi = min(a, b), max(a, b)            # a+b and b+a are the same held-out problem
    return (lo * 7919 + hi * 104729 + 12345) % 1000


class AdditionTask:
    """Addition problems at ``levels`` (subset of 1, 2, 3), sampled with ``weights``.

    Args:
        levels: difficulty levels to draw from.
        weights: sampling probability of each level (default uniform).
        heldout_frac: fraction of pairs reserved for evaluation (never trained on).
        partial: use :func:`partial_credit` instead of the 0/1 verifier as reward.
    """

    def __init__(self, levels=(1, 2, 3), weights=None, heldout_frac=0.1, partial=False):
        levels = tuple(int(_checks.choice("levels", int(lv), LEVEL_RANGES)) for lv in levels)
        if not levels or len(set(levels)) != len(levels):
            raise ValueError(f"levels must be a non-empty set of 1, 2, 3; got {levels}")
        self.levels = levels
        if weights is None:
            w = np.full(len(levels), 1.0 / len(levels))
        else:
            w = _checks.finite_array("weights", weights, ndim=1)
            if w.shape[0] != len(levels) or np.any(w < 0) or w.sum() <= 0:
                raise ValueError(f"weights must be {len(levels)} non-negative numbers, not all 0; got {weights}")
            w = w / w.sum()
        self.weights = w
        self.heldout_frac = _checks.in_range("heldout_frac", heldout_frac, 0.0, 0.5, low_open=True)
        self.partial = bool(partial)

    def spec(self) -> dict:
        """A JSON-able description (used in cache keys and checkpoints)."""
        return {"levels": list(self.levels), "weights": [round(float(x), 12) for x in self.weights],
                "heldout_frac": self.heldout_frac, "partial": self.partial}

    def is_heldout(self, a: int, b: int) -> bool:
        return _heldout_hash(a, b) < self.heldout_frac * 1000

    def sample(self, n: int, rng: np.random.Generator, *, stratified: bool = False) -> list[Problem]:
        """``n`` training problems (held-out pairs excluded), drawn with ``rng``.

        ``stratified=True`` gives every level ⌊n/L⌋ or ⌈n/L⌉ problems (ignoring
        ``weights``), so per-level metrics exist at every step when n ≥ L.
        """
        n = _checks.integer("n", n, low=0)
        out = []
        if stratified:
            levels = np.resize(rng.permutation(np.array(self.levels)), n)
        else:
            levels = rng.choice(np.array(self.levels), size=n, p=self.weights)
        for lv in levels:
            lo, hi = LEVEL_RANGES[int(lv)]
            while True:
                a, b = (int(x) for x in rng.integers(lo, hi + 1, size=2))
                if not self.is_heldout(a, b):
                    break
            out.append(Problem(a, b, int(lv)))
        return out

    def heldout(self, n_per_level: int = 100, seed: int = 1234) -> list[Problem]:
        """A fixed evaluation set: up to ``n_per_level`` held-out problems for each level."""
        n = _checks.integer("n_per_level", n_per_level, low=1)
        rng = np.random.default_rng(seed)
        out = []
        for lv in self.levels:
            lo, hi = LEVEL_RANGES[lv]
            pairs = [(a, b) for a in range(lo, hi + 1) for b in range(lo, hi + 1) if self.is_heldout(a, b)] \
                if hi < 100 else None
            if pairs is None:   # level 3: rejection-sample instead of enumerating 810 000 pairs
                seen, pairs = set(), []
                while len(pairs) < n:
                    a, b = (int(x) for x in rng.integers(lo, hi + 1, size=2))
                    if self.is_heldout(a, b) and (a, b) not in seen:
                        seen.add((a, b))
                        pairs.append((a, b))
            elif len(pairs) > n:
                idx = rng.choice(len(pairs), size=n, replace=False)
                pairs = [pairs[i] for i in sorted(idx)]
            out.extend(Problem(a, b, lv) for a, b in pairs)
        return out

    def reward(self, response: str, problem: Problem, truncated: bool) -> float:
        """The reward of one response: 0/1 verifier, or partial credit if ``partial``."""
        fn = partial_credit if self.partial else verify
        return fn(response, problem.answer, truncated)

    def correct(self, response: str, problem: Problem, truncated: bool) -> bool:
        """Exact correctness (the accuracy metric), whatever the reward is."""
        return bool(verify(response, problem.answer, truncated))


# ---------------------------------------------------------------------------------
# Answer extraction for free-text replies (the chat tasks, :mod:`grpo_lab.lm.chat_tasks`)
# ---------------------------------------------------------------------------------
_NUMBER = re.compile(r"(?<![\d.])[+-]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")
_MARKERS = re.compile(r"<answer>(.*?)</answer>|^[ \t]*####[ \t]*(.*?)[ \t]*$|\\boxed\{", re.S | re.M)


def _boxed_body(text: str, start: int) -> str | None:
    """The contents of ``\\boxed{…}`` whose body starts at ``start`` (nested braces allowed)."""
    depth = 1
    for i in range(start, len(text)):
        depth += {"{": 1, "}": -1}.get(text[i], 0)
        if depth == 0:
            return text[start:i]
    return None


def normalise_number(s: str) -> str:
    """``'1,234'`` → ``'1234'``, ``'13.0'`` → ``'13'``, ``'+7'`` → ``'7'``, ``'-0'`` → ``'0'``, ``'007'`` → ``'7'``."""
    s = s.replace(",", "").lstrip("+")
    neg = s.startswith("-")
    whole, _, frac = s.lstrip("-").partition(".")
    frac = frac.rstrip("0")
    out = str(int(whole)) + (f".{frac}" if frac else "")
    return "-" + out if neg and out.strip("0.") else out


def extract_answer(text: str) -> str | None:
    """The answer a free-text reply gives, or None.

    1. If the reply contains ``<answer>…</answer>``, ``\\boxed{…}`` or a line ``#### …``,
       the last of those (by position) is the answer: its last number, normalised, or its
       stripped text when it holds no number (None if empty).
    2. Otherwise the last number in the reply: an optional sign, digits, optional thousands
       commas, an optional decimal part, normalised by :func:`normalise_number`
       (``1,234`` → ``1234``, ``13.0`` → ``13``, ``+7`` → ``7``). A sign directly after a
       digit is an operator, not a sign (``5-3`` gives ``3``).
    3. No number: None.

    TRL's and verl's math verifiers differ in details (verl's GSM8K scorer reads only
    ``####``; ``math_verify`` parses LaTeX); this rule is the one the chat tasks use.
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a string, got {type(text).__name__}")
    last = None
    for m in _MARKERS.finditer(text):
        if m.group(1) is not None:
            last = m.group(1)
        elif m.group(2) is not None:
            last = m.group(2)
        else:
            body = _boxed_body(text, m.end())
            if body is not None:
                last = body
    region = text if last is None else last
    nums = _NUMBER.findall(region)
    if nums:
        return normalise_number(nums[-1])
    if last is not None and last.strip():
        return last.strip()
    return None
