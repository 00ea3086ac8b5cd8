"""Wrong answers that any by-hand exercise can receive, named without an exercise's own list.

:class:`grpo_lab.exercises._kinds.Compute` asks :func:`generic_mistake` after its ``known``
mistakes found nothing, so that a student who wrote a percentage, flipped a sign, swapped two
entries or rounded too early is told so instead of "does not match yet".
"""
from __future__ import annotations

import numpy as np

from grpo_lab.i18n import Text

MESSAGES = {
    "percent": Text("100 times the answer: a percentage where the exercise asks for a plain number (0.25, not 25).",
                    "是答案的 100 倍：本题要的是普通的数，不是百分数（写 0.25，不是 25）。"),
    "sign_flipped": Text("right size, wrong sign: check which way round the difference goes.",
                         "大小对了，符号反了：检查一下差是谁减谁。"),
    "swapped": Text("the right numbers in the wrong order: check which entry belongs where.",
                    "数都对，顺序不对：检查每个数该放在哪个位置。"),
    "rounded_integer": Text("rounded to a whole number too early: keep the decimals (two are enough).",
                            "过早取整成了整数：请保留小数（两位即可）。"),
    "rounded_one_decimal": Text("rounded to one decimal: this exercise needs more digits (see the prompt).",
                                "只保留了一位小数：本题需要更多位数（见题目）。"),
}


def generic_mistake(got: np.ndarray, expected: np.ndarray, atol: float) -> str | None:
    """The key of :data:`MESSAGES` that explains ``got`` (same shape as ``expected``), or None."""
    def close(a, b, tol=atol):
        return bool(np.allclose(a, b, rtol=0, atol=tol))

    if close(got, expected) or close(expected, 0.0):
        return None                                  # right, or 0 (every transformation of 0 is 0): nothing to name
    if close(got, 100 * expected, 100 * atol):
        return "percent"
    if close(got, -expected):
        return "sign_flipped"
    if expected.size > 1 and close(np.sort(got.reshape(-1)), np.sort(expected.reshape(-1))):
        return "swapped"
    if not close(np.round(expected), expected) and close(got, np.round(expected), 1e-9):
        return "rounded_integer"
    if not close(np.round(expected, 1), expected) and close(got, np.round(expected, 1), 1e-9):
        return "rounded_one_decimal"
    return None
