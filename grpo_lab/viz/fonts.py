"""A CJK fallback for matplotlib, so that Chinese text in a figure renders on any machine.

The course's figure text stays English (axis labels, titles, legends are symbols and short
English words); Chinese appears in prose and in the package's messages. Should a figure show
a Chinese string (a student's own label, a 中文 term in a title), :func:`use_cjk_fallback`
makes matplotlib draw its glyphs from the first installed font of :data:`CJK_FONTS` instead of
empty boxes and a "Glyph … missing from font(s)" warning. It runs when :mod:`grpo_lab.viz` is
imported.

Latin text is unchanged: the fallback fonts are *appended* to ``rcParams["font.family"]``
(default ``["sans-serif"]``, i.e. DejaVu Sans), and matplotlib falls back glyph by glyph, so
English figures are the same pixels with or without a CJK font installed.
"""
from __future__ import annotations

from pathlib import Path

import matplotlib as mpl
from matplotlib import font_manager

# students' machines: Linux (Noto / Source Han), Windows (YaHei), macOS (PingFang)
CJK_FONTS = ("Noto Sans CJK SC", "Source Han Sans SC", "Microsoft YaHei", "PingFang SC",
             "Noto Sans CJK JP", "WenQuanYi Zen Hei")
# file names of those fonts, for a font installed after matplotlib built its font cache
_FILE_HINTS = ("notosanscjk", "sourcehansans", "msyh", "pingfang", "wqy-zenhei")


def installed_cjk_fonts() -> list[str]:
    """The names of :data:`CJK_FONTS` that matplotlib can use, in order of preference."""
    names = {f.name for f in font_manager.fontManager.ttflist}
    if not names.intersection(CJK_FONTS):
        _add_uncached_fonts()
        names = {f.name for f in font_manager.fontManager.ttflist}
    return [n for n in CJK_FONTS if n in names]


def _add_uncached_fonts() -> None:
    """Register CJK font files that exist on disk but are not in matplotlib's cache yet."""
    for path in font_manager.findSystemFonts():
        if any(h in Path(path).name.lower() for h in _FILE_HINTS):
            try:
                font_manager.fontManager.addfont(path)
            except (OSError, RuntimeError, ValueError):      # an unreadable font file: skip it
                pass


def use_cjk_fallback() -> list[str]:
    """Append the installed CJK fonts to ``rcParams["font.family"]``; returns the new list."""
    family = list(mpl.rcParams["font.family"])
    family += [n for n in installed_cjk_fonts() if n not in family]
    mpl.rcParams["font.family"] = family
    return family
