"""Exercises that check a student's answer and name the typical mistake.

    from grpo_lab import exercises as ex
    ex.catalog()                      # DataFrame: id, notebook, kind, title, signature
    fb = ex.check("advantages.group", my_function)
    fb.passed, fb.message, fb.mistakes
    ex.hint("advantages.group")       # first hint; ex.hint(id, 2) the second
    ex.solution("advantages.group")   # the reference: a value, an option, or a function's source
    ex.reveal("guess.sign_a9")        # predict exercises: the answer, once you committed
    ex.reveal_after("guess.sign_a9", sign_of_a9)   # the reveal cell: shown once answered, else behind a button
    ex.case("advantages.group", 0)    # implement exercises: the arguments of input 0, to try by hand

Three kinds (see :mod:`grpo_lab.exercises._kinds`): ``predict`` (commit to an option, then
the notebook reveals it), ``compute`` (by hand) and ``implement`` (write a function). The
exercises of notebook NN live in ``nbNN.py``; the model answers of the implement exercises
in :mod:`grpo_lab.exercises.solutions`; the notebook cells, the solution build and the
nbgrader export in :mod:`grpo_lab.exercises.notebooks`. Every reference value is computed
by the package's own functions. Messages and hints follow :func:`grpo_lab.set_language`.

Adding an exercise: append a record to ``nbNN.py`` whose ``value``/``correct``/``expected``
calls a package function; for ``implement``, a readable model answer in ``solutions.py``
(its docstring becomes the student's stub) and the typical mistakes as :class:`Mistake`
records built from package functions. Then run ``python -m grpo_lab exercises
write-notebooks``; the tests pick the new record up (reference passes, stub "not attempted",
every listed mistake named, hints bilingual, README list in sync).
"""
from __future__ import annotations

import copy
import importlib
from collections.abc import Mapping

import pandas as pd

from grpo_lab.exercises._feedback import Feedback, Hint, Reveal
from grpo_lab.exercises._gate import reveal_after
from grpo_lab.exercises._kinds import Compute, Exercise, Implement, Mistake, Predict
from grpo_lab.i18n import tr

__all__ = ["catalog", "check", "hint", "solution", "reveal", "reveal_after", "case", "get", "by_notebook", "Feedback", "Hint", "Reveal", "Compute", "Exercise", "Implement", "Mistake", "Predict"]

KIND = {"predict": "预测", "compute": "手算", "implement": "编程实现"}     # e.kind in the Chinese errors
MODULES = ("nb00", "nb01", "nb02", "nb03", "nb04", "nb05", "nb06", "nb07", "nb08", "nb09")   # course order


class _Registry(Mapping):
    """Exercise id -> :class:`Exercise`, loading the ``nbNN`` modules only when asked.

    Notebook 01's ``ex.check("bandit.…")`` imports nb00 and nb01, not nb06's language-model code
    (transformers): a lookup loads the modules in course order until it finds the id, so what is
    loaded is always a prefix of :data:`MODULES` and the order of the ids is the course order.
    Iterating (``catalog()``, the tests) loads every module."""

    def __init__(self):
        self._by_id: dict[str, Exercise] = {}
        self._loaded = 0

    def _load_next(self) -> bool:
        if self._loaded == len(MODULES):
            return False
        module = importlib.import_module(f"grpo_lab.exercises.{MODULES[self._loaded]}")
        for e in module.EXERCISES:
            if e.id in self._by_id:
                raise RuntimeError(f"duplicate exercise id {e.id!r}")
            self._by_id[e.id] = e
        self._loaded += 1
        return True

    def load_until(self, notebook: str) -> None:
        """Load the modules up to and including notebook ``NN``'s."""
        want = MODULES.index(f"nb{notebook}") + 1 if f"nb{notebook}" in MODULES else len(MODULES)
        while self._loaded < want and self._load_next():
            pass

    def __getitem__(self, exercise_id):
        while exercise_id not in self._by_id:
            if not isinstance(exercise_id, str) or not self._load_next():
                raise KeyError(exercise_id)
        return self._by_id[exercise_id]

    def __iter__(self):
        while self._load_next():
            pass
        return iter(self._by_id)

    def __len__(self):
        return sum(1 for _ in self)


EXERCISES = _Registry()


def get(exercise_id: str) -> Exercise:
    """The exercise with this id; a KeyError that lists the ids otherwise."""
    try:
        return EXERCISES[exercise_id]
    except (KeyError, TypeError):
        some = tr(", ", "、").join(list(EXERCISES)[:4])
        raise KeyError(tr(f"exercise_id must be one of the ids in ex.catalog(), e.g. {some} …; got {exercise_id!r}",
                          f"exercise_id 必须是 ex.catalog() 里的某个 id，例如 {some} ……；得到的是 {exercise_id!r}")) from None


def by_notebook(notebook: str) -> list[Exercise]:
    """The exercises of notebook ``"NN"`` in registry order (``nbNN.EXERCISES``)."""
    EXERCISES.load_until(notebook)
    return [e for e in EXERCISES._by_id.values() if e.notebook == notebook]


def catalog() -> pd.DataFrame:
    """One row per exercise: id, notebook, kind ("predict" | "compute" | "implement"), title, signature."""
    return pd.DataFrame([{"id": e.id, "notebook": e.notebook, "kind": e.kind, "title": str(e.title),
                          "signature": getattr(e, "signature", "")} for e in EXERCISES.values()])


def check(exercise_id: str, answer) -> Feedback:
    """Check ``answer`` (a value, an option string or a function) against exercise ``exercise_id``.

    Never raises on a student's answer: a stub (None, or a function raising
    NotImplementedError) gives status "not attempted", a function that raises gives status
    "error" with the exception and the input named, and a function still running after
    ``grpo_lab.exercises._safety.TIMEOUT_S`` seconds (3) is stopped and reported ("error",
    mistake ``timeout``). A function that returns None, or changes its input in place, is
    named; for the loss exercises the gradient is compared too (``no_gradient``,
    ``gradient_wrong``, ``rho_detached``), so the answer must be a differentiable torch.Tensor.
    """
    return get(exercise_id).check(answer)


def solution(exercise_id: str):
    """The reference answer: a number or list, an option key, or (implement) the reference function's source."""
    return get(exercise_id).solution()


def hint(exercise_id: str, n: int = 1) -> Hint:
    """Hint ``n`` (1-based) of the exercise, written for a student who is stuck."""
    e = get(exercise_id)
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= len(e.hints):
        raise ValueError(tr(f"n must be 1 … {len(e.hints)} for {exercise_id}, got {n!r}",
                            f"{exercise_id} 的 n 必须在 1 … {len(e.hints)} 之间，得到 {n!r}"))
    return Hint(exercise_id, n, len(e.hints), str(e.hints[n - 1]))


def reveal(exercise_id: str) -> Reveal:
    """What a predict exercise reveals: the answer, computed by the package, and why."""
    e = get(exercise_id)
    if not isinstance(e, Predict):
        kind = tr(e.kind, KIND[e.kind])
        raise ValueError(tr(f"exercise_id {exercise_id!r} is a {kind} exercise; only predict exercises have a reveal",
                            f"exercise_id {exercise_id!r} 是{kind}题；只有预测题才有揭晓"))
    return e.reveal()


def case(exercise_id: str, k: int) -> tuple:
    """The arguments of input ``k`` of an implement exercise (fresh copies), to try a function by hand."""
    e = get(exercise_id)
    if not isinstance(e, Implement):
        kind = tr(e.kind, KIND[e.kind])
        raise ValueError(tr(f"exercise_id {exercise_id!r} is a {kind} exercise; only implement exercises have inputs",
                            f"exercise_id {exercise_id!r} 是{kind}题；只有编程实现题才有输入"))
    cases = e.cases()
    if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k < len(cases):
        raise ValueError(tr(f"k must be 0 … {len(cases) - 1} for {exercise_id}, got {k!r}",
                            f"{exercise_id} 的 k 必须在 0 … {len(cases) - 1} 之间，得到 {k!r}"))
    return copy.deepcopy(cases[k].args)
