"""Words and printouts the exercise kinds share: answer forms, the random-input label, the
float32 hint, and how an input, an output or a typed option is shown/read."""
from __future__ import annotations

import numpy as np

from grpo_lab.exercises import _safety
from grpo_lab.i18n import Text

NUMBER = Text("a number", "一个数")            # the answer forms of the compute exercises
INTEGER = Text("an integer", "一个整数")


def random_label(k: int, shape: str = "") -> Text:
    """The label of the ``k``-th seeded random input (``shape`` e.g. "3×4"), in both languages."""
    return Text(f"random #{k}" + (f" ({shape})" if shape else ""), f"随机 #{k}" + (f"（{shape}）" if shape else ""))


PRECISION = Text("Your numbers are right to about 4 digits but not to float64 precision — did you compute in float32 "
                 "(torch's default dtype, .float(), np.float32)? Keep the inputs' dtype (float64): the checker needs "
                 "the precision to tell ε = 1e-4 apart.",
                 "你的结果前 4 位左右是对的，但达不到 float64 的精度——是不是用 float32 算的（torch 的默认 dtype、"
                 ".float()、np.float32）？请保持输入的 dtype（float64）：检查器需要这个精度才能分辨 ε = 1e-4。")


def _fmt(x) -> str:
    """Short printout of an input or output (arrays to 4 decimals)."""
    if type(x).__module__.split(".")[0] == "torch":
        x = _safety.to_float_array(x)
    if isinstance(x, np.ndarray):
        return np.array2string(x, precision=4, suppress_small=True, threshold=40, max_line_width=100)
    if isinstance(x, float):
        return f"{x:.6g}"
    return repr(x)



def _norm(text: str) -> str:
    """An option as typed: case, surrounding spaces and quotes, repeated spaces and a leading "the " do not matter."""
    t = " ".join(text.strip().strip("\"'`").strip().lower().split())
    return t[4:] if t.startswith("the ") else t
