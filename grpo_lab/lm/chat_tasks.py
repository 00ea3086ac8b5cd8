"""Chat tasks for a real instruct model: natural-language arithmetic, rendered with its chat template.

The character task (:class:`grpo_lab.lm.tasks.AdditionTask`, prompt ``"a+b="``) suits the
1 M-parameter model trained from scratch; an instruct model expects a conversation. A
:class:`ChatTask` asks the same kind of verifiable question in words, as one user message,
rendered by the tokenizer's own chat template with the assistant turn opened
(``add_generation_prompt=True``). The reply is free text; :func:`~grpo_lab.lm.tasks.extract_answer`
reads the answer out of it (``<answer>`` tags, ``\\boxed{}``, ``####``, else the last number).

Difficulty levels (:data:`CHAT_LEVELS`):

=====  ====================================================================  ===========
level  question                                                              operands
=====  ====================================================================  ===========
1      "What is a + b?"                                                      a, b in 0–9
2      "What is a + b?"                                                      a, b in 10–99
3      one-step word problem: "Tom has a apples and buys b more. …"          a, b in 2–20
4      two-step word problem: "… buys b more and gives c away. …"           a in 10–30, b in 2–20, c ≤ a
=====  ====================================================================  ===========

Measured on SmolLM2-135M-Instruct (greedy, before any training): level 1 ≈ 0.6, level 2
≈ 0.03, level 3 ≈ 0.6 (issue 12's numbers). Level 1 saturates within about ten GRPO steps
(every group all-correct: 退化组 degenerate groups), so the harder levels keep groups
informative.

Rewards (``reward_mode``): ``"correct"`` is 1 when the extracted answer equals the true
one, else 0 (a truncated reply gets 0, as in the character task); ``"correct_format"`` adds
``format_weight`` when the reply *finished* (EOS before the budget) and states an answer
(inside ``<answer>…</answer>`` when the prompt asks for tags). The format bonus rewards
finishing and stating an answer even when it is wrong; it is not needed for learning here
(the base model already ends most greedy replies with a number).

Held-out split: a hash of the level and the operands puts a fraction of them aside, as in the
character task (the names and objects of a word problem are not part of the hash, so a held-out
problem is new in its numbers *at its level*, not only in its wording; the level is part of the
hash, so a held-out word problem can ask for a sum that level 2 trains on as a bare sum — 26 of
notebook 08's 72 held-out word problems do; a + b and b + a hash alike, so they are one problem
and fall on the same side). The fraction is per level
(:data:`HELDOUT_FRAC`), chosen so that every level has enough *distinct* held-out problems
(distinct = a different unordered operand tuple) for an evaluation with intervals:

=====  ==========================  ================  =========================
level  distinct operand tuples     held-out fraction  distinct held-out tuples
=====  ==========================  ================  =========================
1      55                          0.4                19
2      4 095                       0.1                411
3      190                         0.4                76
4      7 265                       0.1                702
=====  ==========================  ================  =========================

(:meth:`ChatTask.n_heldout` counts them; a test checks the table.) Level 3 gives up 40 % of
its small operand space so that 72 distinct word problems can be evaluated; 114 distinct
tuples remain for training.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from grpo_lab import _checks
from grpo_lab.lm.tasks import CHAT_LEVELS, REWARD_MODES, extract_answer

_NAMES = ("Tom", "Anna", "Li Wei", "Sara", "Omar", "Mei", "Jonas", "Priya")
_ITEMS = ("apples", "pencils", "stickers", "marbles", "books", "cookies")
TAG_INSTRUCTION = " Put the final answer inside <answer></answer>."
# the fraction of each level's distinct operand tuples held out (see the module docstring)
HELDOUT_FRAC = {1: 0.4, 2: 0.1, 3: 0.4, 4: 0.1}
# the prompt-only baseline's better instruction (notebook 08): no training, only the prompt
BRIEF_INSTRUCTION = "Reply with only the final number."


@dataclass(frozen=True)
class ChatProblem:
    """One question; ``numbers`` are its operands, ``answer`` the exact integer answer as text."""

    numbers: tuple
    level: int
    variant: int = 0          # picks the name/object of a word problem (not part of the held-out hash)
    tags: bool = False        # ask for the answer inside <answer></answer>
    instruction: str = ""     # appended to the question (the capstone's prompt-only baseline)

    @property
    def answer(self) -> str:
        n = self.numbers
        return str(n[0] + n[1] - (n[2] if self.level == 4 else 0))

    @property
    def prompt(self) -> str:
        """The user message (the chat template wraps it; see :meth:`ChatTask.render`)."""
        n, lv = self.numbers, self.level
        name, item = _NAMES[self.variant % len(_NAMES)], _ITEMS[(self.variant // len(_NAMES)) % len(_ITEMS)]
        if lv in (1, 2):
            q = f"What is {n[0]} + {n[1]}?"
        elif lv == 3:
            q = f"{name} has {n[0]} {item} and gets {n[1]} more. How many {item} does {name} have now?"
        else:
            q = (f"{name} has {n[0]} {item}, gets {n[1]} more and then gives {n[2]} to a friend. "
                 f"How many {item} does {name} have now?")
        return q + (TAG_INSTRUCTION if self.tags else "") + (" " + self.instruction if self.instruction else "")

    def messages(self) -> list[dict]:
        return [{"role": "user", "content": self.prompt}]


def _draw_numbers(level: int, rng: np.random.Generator) -> tuple:
    if level == 1:
        return tuple(int(x) for x in rng.integers(0, 10, size=2))
    if level == 2:
        return tuple(int(x) for x in rng.integers(10, 100, size=2))
    if level == 3:
        return tuple(int(x) for x in rng.integers(2, 21, size=2))
    a, b = int(rng.integers(10, 31)), int(rng.integers(2, 21))
    return a, b, int(rng.integers(1, a + 1))


def _all_numbers(level: int):
    """Every operand tuple of ``level`` (the support of :func:`_draw_numbers`), in a fixed order."""
    if level == 1:
        return [(a, b) for a in range(10) for b in range(10)]
    if level == 2:
        return [(a, b) for a in range(10, 100) for b in range(10, 100)]
    if level == 3:
        return [(a, b) for a in range(2, 21) for b in range(2, 21)]
    return [(a, b, c) for a in range(10, 31) for b in range(2, 21) for c in range(1, a + 1)]


def problem_key(numbers: tuple) -> tuple:
    """The identity of a problem: a + b and b + a are the same problem."""
    return tuple(sorted(numbers[:2])) + tuple(numbers[2:])


def _heldout_hash(numbers: tuple, level: int) -> int:
    key = problem_key(numbers)
    h = level * 1_000_003
    for x in key:
        h = (h * 7919 + x * 104729 + 12345) % 1_000_000_007
    return h % 1000


class ChatTask:
    """Natural-language arithmetic at ``levels`` (subset of 1–4), scored by :func:`extract_answer`.

    Args:
        levels: difficulty levels (:data:`CHAT_LEVELS`).
        heldout_frac: fraction of operand tuples reserved for evaluation (never trained on): one
            number for every level, or None for the per-level :data:`HELDOUT_FRAC`.
        reward_mode: ``"correct"`` (0/1) or ``"correct_format"`` (+ ``format_weight``).
        format_weight: the format bonus of ``"correct_format"``.
        tags: ask for the answer inside ``<answer></answer>``.
    """

    def __init__(self, levels=(1, 3), heldout_frac=None, reward_mode="correct", format_weight=0.2, tags=False):
        levels = tuple(int(_checks.choice("levels", int(lv), CHAT_LEVELS)) for lv in levels)
        if not levels or len(set(levels)) != len(levels):
            raise ValueError(f"levels must be a non-empty set of {sorted(CHAT_LEVELS)}; got {levels}")
        self.levels = levels
        if heldout_frac is None:
            self.heldout_frac = {lv: HELDOUT_FRAC[lv] for lv in levels}
        else:
            frac = _checks.in_range("heldout_frac", heldout_frac, 0.0, 0.5, low_open=True)
            self.heldout_frac = {lv: frac for lv in levels}
        self.reward_mode = _checks.choice("reward_mode", reward_mode, REWARD_MODES)
        self.format_weight = _checks.in_range("format_weight", format_weight, 0.0, 1.0)
        self.tags = bool(tags)
        self.partial = False

    def spec(self) -> dict:
        return {"kind": "chat", "levels": list(self.levels),
                "heldout_frac": {str(k): v for k, v in self.heldout_frac.items()},
                "reward_mode": self.reward_mode, "format_weight": self.format_weight, "tags": self.tags}

    def is_heldout(self, numbers: tuple, level: int) -> bool:
        return _heldout_hash(numbers, level) < self.heldout_frac[level] * 1000

    def heldout_keys(self, level: int) -> dict[tuple, list[tuple]]:
        """The distinct held-out problems of ``level``: {unordered key: its operand orders}, sorted."""
        out: dict[tuple, list[tuple]] = {}
        for n in _all_numbers(level):
            if self.is_heldout(n, level):
                out.setdefault(problem_key(n), []).append(n)
        return dict(sorted(out.items()))

    def n_heldout(self, level: int) -> int:
        """How many distinct held-out problems ``level`` has."""
        return len(self.heldout_keys(level))

    def _draw(self, level: int, rng, want_heldout: bool) -> ChatProblem:
        while True:
            nums = _draw_numbers(level, rng)
            if self.is_heldout(nums, level) == want_heldout:
                return ChatProblem(nums, level, int(rng.integers(48)), self.tags)

    def sample(self, n: int, rng: np.random.Generator, *, stratified: bool = False) -> list[ChatProblem]:
        """``n`` training problems (held-out operands excluded); ``stratified`` balances the levels."""
        n = _checks.integer("n", n, low=0)
        if stratified:
            levels = np.resize(rng.permutation(np.array(self.levels)), n)
        else:
            levels = rng.choice(np.array(self.levels), size=n)
        return [self._draw(int(lv), rng, False) for lv in levels]

    def heldout(self, n_per_level=16, seed: int = 1234) -> list[ChatProblem]:
        """A fixed evaluation set of distinct held-out problems: ``n_per_level`` per level (an int,
        or a dict {level: n}). Distinct means a different unordered operand tuple; the order of
        the two operands and the wording are drawn from ``seed``. Asking for more problems than
        a level holds out is an error that names the count."""
        rng = np.random.default_rng(seed)
        out = []
        for lv in self.levels:
            want = n_per_level.get(lv, 0) if isinstance(n_per_level, dict) else n_per_level
            n = _checks.integer(f"n_per_level (level {lv})", want, low=0 if isinstance(n_per_level, dict) else 1)
            keys = list(self.heldout_keys(lv).values())
            if n > len(keys):
                raise ValueError(f"n_per_level: level {lv} holds out {len(keys)} distinct problems "
                                 f"(heldout_frac {self.heldout_frac[lv]}); asked for {n}")
            for i in rng.permutation(len(keys))[:n]:
                orders = keys[int(i)]
                nums = orders[int(rng.integers(len(orders)))]
                out.append(ChatProblem(nums, lv, int(rng.integers(48)), self.tags))
        return out

    # -- rendering ----------------------------------------------------------------------
    @staticmethod
    def render(tok, problems) -> list[str]:
        """Each problem as the chat-template text that ends with the assistant turn opened."""
        return [tok.apply_chat_template(p.messages(), tokenize=False, add_generation_prompt=True) for p in problems]

    # -- scoring ---------------------------------------------------------------------------
    def correct(self, response: str, problem: ChatProblem, truncated: bool) -> bool:
        """The extracted answer equals the true one (a truncated reply counts as wrong)."""
        return not truncated and extract_answer(response) == problem.answer

    def format_ok(self, response: str, truncated: bool) -> bool:
        """Finished, and states an answer (inside ``<answer>`` tags when the prompt asks for them)."""
        if truncated or extract_answer(response) is None:
            return False
        return not self.tags or ("<answer>" in response and "</answer>" in response)

    def reward(self, response: str, problem: ChatProblem, truncated: bool) -> float:
        r = float(self.correct(response, problem, truncated))
        if self.reward_mode == "correct_format":
            r += self.format_weight * self.format_ok(response, truncated)
        return r


__all__ = ["ChatTask", "ChatProblem", "CHAT_LEVELS", "HELDOUT_FRAC", "BRIEF_INSTRUCTION", "problem_key", "REWARD_MODES", "TAG_INSTRUCTION", "task_for"]


def task_for(cfg, tok):
    """(task, held-out problems) for a :class:`~grpo_lab.lm.config.GRPOConfig` and its tokenizer.

    ``cfg.task == "auto"`` picks the chat task when the tokenizer has a chat template (a real
    instruct model) and the character task otherwise (the tiny model).
    """
    from grpo_lab.lm.tasks import AdditionTask

    kind = cfg.task
    if kind == "auto":
        kind = "chat" if getattr(tok, "chat_template", None) else "addition"
    if kind == "chat":
        if not getattr(tok, "chat_template", None):
            raise ValueError("task='chat' needs a tokenizer with a chat template (an instruct model); "
                             "the tiny model's character tokenizer has none: use task='addition'")
        task = ChatTask(levels=cfg.chat_levels, reward_mode=cfg.reward_mode, format_weight=cfg.format_weight,
                        tags=cfg.answer_tags)
        return task, task.heldout(cfg.chat_eval_per_level, seed=1234)
    task = AdditionTask(levels=cfg.levels, partial=cfg.partial_credit)
    return task, task.heldout(cfg.eval_per_level, seed=1234)
