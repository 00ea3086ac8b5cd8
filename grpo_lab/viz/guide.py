"""The "What you should see" box under every widget: what to move first, what changes, what to notice.

Every panel class carries a :class:`WhatToSee` in its ``what_to_see`` attribute; the panel
renders it under its figure (:meth:`grpo_lab.viz.panel.Panel._ipython_display_`). Figures
that are not panels (the training monitor, comparison plots) keep theirs next to their
builder and the notebook displays the object itself. The three parts are bilingual at the
point of definition (:class:`grpo_lab.i18n.Text`), so ``grpo_lab.set_language("zh")`` switches
the box too.
"""
from __future__ import annotations

import html
from dataclasses import dataclass

from grpo_lab.i18n import Text, tr

BOX_STYLE = ("border-left: 4px solid #4a7fb5; background: #f3f7fb; padding: 6px 10px; "
             "margin: 6px 0; font-size: 13px; line-height: 1.45; max-width: 968px")


@dataclass(frozen=True)
class WhatToSee:
    """Three short bilingual lines: which control to move first, what changes, the one thing to notice."""

    first: Text
    changes: Text
    notice: Text

    def lines(self) -> list[tuple[str, str]]:
        return [(tr("Move first", "先动"), str(self.first)),
                (tr("What changes", "会变什么"), str(self.changes)),
                (tr("Notice", "留意"), str(self.notice))]

    def html(self) -> str:
        colon = tr(": ", "：")                                   # a full-width colon in Chinese text
        rows = "".join(f"<li><b>{html.escape(k)}{colon.strip()}</b>{' ' if colon == ': ' else ''}{html.escape(v)}</li>"
                       for k, v in self.lines())
        title = html.escape(tr("What you should see", "你应该看到什么"))
        return (f'<div class="grpo-lab-what-to-see" style="{BOX_STYLE}"><b>{title}</b>'
                f'<ul style="margin: 4px 0 0 0; padding-left: 18px">{rows}</ul></div>')

    def widget(self):
        import ipywidgets as widgets

        return widgets.HTML(self.html())

    def __str__(self) -> str:
        return "\n".join(f"{k}{tr(': ', '：')}{v}" for k, v in self.lines())

    def _repr_html_(self) -> str:
        return self.html()


def see(first_en: str, first_zh: str, changes_en: str, changes_zh: str, notice_en: str, notice_zh: str) -> WhatToSee:
    """Shorthand for the panel modules: six strings, English then Chinese for each part."""
    return WhatToSee(Text(first_en, first_zh), Text(changes_en, changes_zh), Text(notice_en, notice_zh))
