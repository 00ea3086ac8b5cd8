"""Layout checks a student sees (issue 24): no legend over plotted data, no axis label outside the figure.

Used by the panel tests. Every line, bar and scatter of every axes is checked against every legend
(axes legends and figure legends), in display coordinates, after a full draw.
"""
from __future__ import annotations

import numpy as np
from matplotlib.collections import PathCollection, PolyCollection
from matplotlib.legend import Legend
from matplotlib.lines import Line2D
from matplotlib.patches import Rectangle


def _points(artist, n_per_segment=40) -> np.ndarray:
    """Display-coordinate points along what ``artist`` draws (lines: interpolated segments)."""
    if isinstance(artist, Line2D):
        xy = np.column_stack(artist.get_data()).astype(float) if len(artist.get_xdata()) else np.zeros((0, 2))
        if len(xy) == 0:
            return xy
        pts = artist.get_transform().transform(xy)
        if len(pts) > 1 and artist.get_linestyle() not in ("None", "", " "):
            t = np.linspace(0, 1, n_per_segment)[:, None, None]
            pts = (pts[:-1][None] * (1 - t) + pts[1:][None] * t).reshape(-1, 2)
        return pts
    if isinstance(artist, Rectangle):
        if artist.get_width() == 0 or artist.get_height() == 0:
            return np.zeros((0, 2))
        box = artist.get_window_extent()
        gx, gy = np.meshgrid(np.linspace(box.x0, box.x1, 6), np.linspace(box.y0, box.y1, 6))
        return np.column_stack([gx.ravel(), gy.ravel()])
    if isinstance(artist, (PathCollection, PolyCollection)):
        offs = artist.get_offsets()
        if len(offs) and isinstance(artist, PathCollection):
            return artist.get_offset_transform().transform(offs)
        return np.concatenate([artist.get_transform().transform(p.vertices) for p in artist.get_paths()] or
                              [np.zeros((0, 2))])
    return np.zeros((0, 2))


def legends_over_data(fig) -> list[str]:
    """'legend ∩ artist' descriptions for every visible data artist that a legend covers."""
    fig.canvas.draw()
    legends = [a.get_legend() for a in fig.axes if a.get_legend() is not None] + list(fig.legends)
    problems = []
    for leg in legends:
        box = leg.get_window_extent().padded(-1)
        for ax in fig.axes:
            for art in list(ax.lines) + list(ax.patches) + list(ax.collections):
                if not art.get_visible() or isinstance(art, Legend):
                    continue
                pts = _points(art)
                if len(pts) == 0:
                    continue
                inside = (pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1)
                # a point is drawn only inside its axes (clipping)
                ab = ax.get_window_extent()
                inside &= (pts[:, 0] >= ab.x0) & (pts[:, 0] <= ab.x1) & (pts[:, 1] >= ab.y0) & (pts[:, 1] <= ab.y1)
                if inside.any():
                    problems.append(f"legend {[t.get_text() for t in leg.get_texts()][:2]} covers "
                                    f"{art.get_label() or type(art).__name__}")
    return problems


def labels_outside(fig) -> list[str]:
    """Axis labels, titles and tick labels that extend past the figure's edge."""
    fig.canvas.draw()
    fb = fig.bbox
    bad = []
    for ax in fig.axes:
        for text in (ax.xaxis.label, ax.yaxis.label, ax.title):
            if text.get_text() and text.get_visible():
                b = text.get_window_extent()
                if b.x0 < fb.x0 - 1 or b.x1 > fb.x1 + 1 or b.y0 < fb.y0 - 1 or b.y1 > fb.y1 + 1:
                    bad.append(text.get_text())
    return bad
