"""What :func:`grpo_lab.exercises.check` and :func:`~grpo_lab.exercises.hint` hand back.

A :class:`Feedback` is a small value object: ``passed``, ``status``, ``message`` and the
names of the recognised mistakes. In JupyterLab it renders as a short coloured box
(``_repr_html_``); as text (nbval, a terminal) it prints one line starting with its status.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

from grpo_lab.i18n import Text, tr

PASSED, FAILED, NOT_ATTEMPTED, ERROR = "passed", "failed", "not attempted", "error"
STATUSES = (PASSED, FAILED, NOT_ATTEMPTED, ERROR)

# status -> (border colour, background colour, symbol, label)
_STYLE = {
    PASSED: ("#1b7f3b", "#e8f5ec", "✓", Text("passed", "通过")),
    FAILED: ("#b3261e", "#fdecea", "✗", Text("not yet", "还不对")),
    NOT_ATTEMPTED: ("#6b6b6b", "#f2f2f2", "…", Text("not attempted yet", "尚未作答")),
    ERROR: ("#b35c00", "#fff4e5", "!", Text("your code raised an error", "你的代码抛出了异常")),
}


def _box(border: str, background: str, head: str, body: str) -> str:
    body_html = html.escape(body).replace("\n", "<br>")
    return (f'<div style="border-left:4px solid {border};background:{background};padding:6px 10px;'
            f'margin:4px 0;font-family:sans-serif;font-size:0.92em;line-height:1.4">'
            f'<b style="color:{border}">{html.escape(head)}</b><br>{body_html}</div>')


@dataclass(frozen=True)
class Feedback:
    """The result of checking one answer.

    ``status`` is one of ``"passed"``, ``"failed"``, ``"not attempted"`` (the answer cell
    still holds its stub) or ``"error"`` (the student's function raised). ``mistakes``
    names the recognised typical mistakes (keys such as ``"bessel_std"``), empty when the
    answer is right or the mistake is not one the checker knows.
    """

    exercise_id: str
    status: str
    message: str
    mistakes: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.status == PASSED

    @property
    def attempted(self) -> bool:
        return self.status != NOT_ATTEMPTED

    def head(self) -> str:
        border, _, symbol, label = _STYLE[self.status]
        return f"{symbol} {self.exercise_id}{tr(': ', '：')}{label}"

    def __str__(self) -> str:
        return f"{self.head()} — {self.message}"

    def __repr__(self) -> str:
        return str(self)

    def _repr_html_(self) -> str:
        border, background, _, _ = _STYLE[self.status]
        return _box(border, background, self.head(), self.message)

    def assert_passed(self) -> "Feedback":
        """Raise ``AssertionError(message)`` unless passed (what an nbgrader grade cell needs)."""
        if not self.passed:
            raise AssertionError(str(self))
        return self


@dataclass(frozen=True)
class Hint:
    """One hint for one exercise, shown on request with :func:`grpo_lab.exercises.hint`."""

    exercise_id: str
    number: int
    of: int
    text: str

    def __str__(self) -> str:
        return tr(f"Hint {self.number}/{self.of} for {self.exercise_id}: ",
                  f"{self.exercise_id} 的提示 {self.number}/{self.of}：") + self.text

    __repr__ = __str__

    def _repr_html_(self) -> str:
        head = tr(f"Hint {self.number}/{self.of} — {self.exercise_id}",
                  f"提示 {self.number}/{self.of} — {self.exercise_id}")
        return _box("#1f5fa8", "#eaf1fb", head, self.text)


@dataclass(frozen=True)
class Reveal:
    """What a predict exercise reveals once the student has committed to an answer."""

    exercise_id: str
    text: str

    def __str__(self) -> str:
        return f"{self.exercise_id}{tr(': ', '：')}{self.text}"

    __repr__ = __str__

    def _repr_html_(self) -> str:
        return _box("#5b3fa0", "#f1edf9", tr(f"Reveal — {self.exercise_id}", f"揭晓 — {self.exercise_id}"), self.text)
