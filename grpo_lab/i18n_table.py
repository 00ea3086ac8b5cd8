"""A table that code reads in English and a student sees in the language of :func:`grpo_lab.set_language`.

The notebooks' code cells are the same in both editions and assert on a table's English labels
(``family.loc["GRPO", "grows from"]``, ``checklist["answer"] == "no"``). :class:`LocalizedFrame`
keeps those labels and values as its data, and shows itself (``display``, ``repr``, ``.style``)
as a second, Chinese table when the language is ``"zh"``: the Chinese view is made by the
function that made the table, from the same rows (:func:`localized`).

    >>> from grpo_lab.i18n import set_language
    >>> t = localized(pd.DataFrame({"answer": ["yes"]}), lambda: pd.DataFrame({"结论": ["是"]}))
    >>> set_language("zh"); t.shown().columns.tolist(), t["answer"].tolist()
    (['结论'], ['yes'])
    >>> set_language("en")
"""
from __future__ import annotations

from typing import Callable

import pandas as pd

from grpo_lab.i18n import get_language


class LocalizedFrame(pd.DataFrame):
    """A DataFrame with English data that displays its Chinese view under ``set_language("zh")``."""

    _metadata = ["_zh_view"]

    @property
    def _constructor(self):
        return pd.DataFrame            # a frame derived from this one (a slice, a sum) is a plain one

    def shown(self) -> pd.DataFrame:
        """The table a student sees now: the Chinese view in Chinese mode, else the data itself."""
        view = getattr(self, "_zh_view", None)
        if get_language() == "zh" and view is not None:
            return view()
        return pd.DataFrame(self)

    def _repr_html_(self):
        return self.shown()._repr_html_()

    def __repr__(self) -> str:
        return repr(self.shown())

    @property
    def style(self):
        return self.shown().style


def localized(frame: pd.DataFrame, zh_view: Callable[[], pd.DataFrame]) -> LocalizedFrame:
    """``frame`` (English labels and values) that shows ``zh_view()`` in Chinese mode."""
    if not callable(zh_view):
        raise TypeError(f"zh_view must be a function returning the Chinese DataFrame, got {type(zh_view).__name__}")
    out = LocalizedFrame(frame)
    out._zh_view = zh_view
    return out
