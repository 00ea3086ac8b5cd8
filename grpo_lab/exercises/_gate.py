"""A reveal that does not spoil "Run All": the answer is shown once the student has answered.

The reveal cell of a predict exercise calls :func:`reveal_after`. It always *computes* the
reveal (and builds its panel), so under nbval/CI the reveal code runs and fails loudly if it
breaks. It *shows* them only when the prediction variable holds an answer (the student
committed), when ``GRPO_LAB_REVEAL=1`` is set (instructors, screenshots), or after a click on
"Show the answer" (ipywidgets); otherwise it shows a one-line note and the button.
"""
from __future__ import annotations

import os

from grpo_lab.i18n import tr

ENV = "GRPO_LAB_REVEAL"


def revealed(answer) -> bool:
    """True when the reveal should be shown at once: an answer was given, or GRPO_LAB_REVEAL=1."""
    return answer is not None or os.environ.get(ENV, "") == "1"


def reveal_after(exercise_id: str, answer, panel=None):
    """Compute the reveal of ``exercise_id`` (and ``panel()``); show it now if answered, else behind a button.

    Returns the :class:`~grpo_lab.exercises.Reveal` (and the panel, when there is one), so a
    test can inspect what would be shown.
    """
    from IPython.display import display

    from grpo_lab.exercises import reveal

    r = reveal(exercise_id)                                   # computed in every case: CI checks it
    shown = panel() if panel is not None else None
    if revealed(answer):
        display(r)
        if shown is not None:
            display(shown)
        return (r, shown) if panel is not None else r
    import ipywidgets as widgets

    note = tr(f"Answer first: put your prediction into the cell above and run the check — or click to see the answer. "
              f"(Set {ENV}=1 to always show it.)",
              f"先作答：把你的预测写进上面的单元并运行检查——或者点击查看答案。（设置 {ENV}=1 可始终显示。）")
    button = widgets.Button(description=tr("Show the answer", "显示答案"), icon="eye")
    out = widgets.Output()

    def _show(_):
        button.disabled = True
        with out:
            display(r)
            if shown is not None:
                display(shown)

    button.on_click(_show)
    display(widgets.VBox([widgets.HTML(f"<i>{note}</i>"), button, out]))
    return (r, shown) if panel is not None else r
