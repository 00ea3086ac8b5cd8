"""The language of grpo_lab's own messages: English (default) or Chinese.

Every user-facing string that the package writes (exercise feedback and hints, the panels'
"What you should see" text, metric definitions) is written in both languages at the place
where it is defined, with :func:`tr` (evaluated now) or :class:`Text` (evaluated when
shown, for module-level tables). ``set_language("zh")`` in the first cell of a Chinese
notebook switches all of them at once.

    >>> set_language("zh"); tr("advantage", "优势")
    '优势'
    >>> set_language("en"); str(Text("advantage", "优势"))
    'advantage'
"""
from __future__ import annotations

from dataclasses import dataclass

LANGUAGES = ("en", "zh")
_current = "en"


def set_language(lang: str) -> None:
    """Select the language of grpo_lab's messages: ``"en"`` or ``"zh"``."""
    global _current
    if lang not in LANGUAGES:
        raise ValueError(f"lang must be one of {LANGUAGES}, got {lang!r}")
    _current = lang


def get_language() -> str:
    """The language selected by :func:`set_language` (``"en"`` unless changed)."""
    return _current


def tr(en: str, zh: str) -> str:
    """``en`` or ``zh``, whichever language is selected now."""
    return zh if _current == "zh" else en


@dataclass(frozen=True)
class Text:
    """A bilingual string that picks its language when it is shown (``str()``/``format``)."""

    en: str
    zh: str

    def __str__(self) -> str:
        return tr(self.en, self.zh)

    def format(self, *args, **kwargs) -> str:
        return str(self).format(*args, **kwargs)
