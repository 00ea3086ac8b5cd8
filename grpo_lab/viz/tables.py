"""Tables of prose for the notebooks: captioned, left-aligned, wrapped, never truncated.

``DataFrame`` display in JupyterLab right-aligns every cell, truncates long strings with "…"
(``display.max_colwidth``) and lets a wide table run off the right edge, where its last
columns are hidden behind a scroll bar. :func:`prose_table` returns a pandas ``Styler`` that
shows every character, wraps cells at a fixed width, keeps row headers on one line and puts a
caption on top — for tables whose cells are words (notebook 07's hand-off tables).
"""
from __future__ import annotations

import re

import pandas as pd


def prose_table(df: pd.DataFrame, caption: str, *, cell_width: str = "15em", header_width: str = "11em"):
    """``df`` as a Styler: ``caption`` on top, cells left-aligned and wrapped at ``cell_width``,
    row headers left-aligned and wrapped at ``header_width`` (CSS lengths), nothing truncated."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"df must be a pandas DataFrame, got {type(df).__name__}")
    if not isinstance(caption, str) or not caption.strip():
        raise ValueError("caption must be a non-empty string (say what the table shows)")
    for name, value in (("cell_width", cell_width), ("header_width", header_width)):
        if not (isinstance(value, str) and re.fullmatch(r"\d+(\.\d+)?(em|px)", value)):
            raise ValueError(f"{name} must be a CSS length such as '15em' or '200px', got {value!r}")
    cell = f"text-align: left; vertical-align: top; white-space: normal; overflow-wrap: anywhere; " \
           f"min-width: 6em; max-width: {cell_width}; padding: 2px 6px"
    head = f"text-align: left; vertical-align: top; white-space: normal; min-width: {header_width}; " \
           f"max-width: {header_width}; padding: 2px 6px"
    return (df.style.set_caption(caption)
            .format(lambda v: "" if v is None or (isinstance(v, float) and pd.isna(v)) else str(v), escape="html")
            .set_table_styles([{"selector": "caption",
                                "props": "caption-side: top; text-align: left; font-weight: bold; padding: 4px 0"},
                               {"selector": "td", "props": cell},
                               {"selector": "th.row_heading", "props": head},
                               {"selector": "th.col_heading", "props": "text-align: left; padding: 2px 6px"},
                               {"selector": "", "props": "table-layout: auto; width: auto; max-width: 100%"}]))


__all__ = ["prose_table"]
