"""Every widget fits the notebook column and tells the student what to look for (issue 15)."""
import re

import ipywidgets as widgets
import pytest

from grpo_lab.i18n import set_language
from grpo_lab.viz import all_panels
from grpo_lab.viz.family import family_tree
from grpo_lab.viz.family_panels import RUNS_WHAT_TO_SEE, runs_figure
from grpo_lab.viz.guide import WhatToSee
from grpo_lab.viz.lm import COMPARE_WHAT_TO_SEE, MONITOR_WHAT_TO_SEE, TrainingMonitor, compare_runs
from grpo_lab.viz.panel import MAX_FIG_WIDTH_PX, fig_width_px

PANELS = all_panels()
CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture
def english():
    set_language("en")
    yield
    set_language("en")


@pytest.mark.parametrize("name", sorted(PANELS))
def test_panel_figure_fits_the_column(name):
    panel = PANELS[name]()
    assert fig_width_px(panel.fig) <= MAX_FIG_WIDTH_PX, f"{name}: {fig_width_px(panel.fig):.0f} px"


def test_notebook_figures_fit_the_column():
    import pandas as pd

    rows = pd.DataFrame({"step": [1, 2], "reward_mean": [0.1, 0.2], "len_correct": [3, 3], "len_incorrect": [4, 4],
                         "frac_all_correct": [0.1, 0.2], "frac_all_wrong": [0.3, 0.2]})
    for fig in (family_tree(), TrainingMonitor(10).fig, compare_runs({"a": rows}), runs_figure()):
        assert fig_width_px(fig) <= MAX_FIG_WIDTH_PX


def test_the_width_check_can_fail():
    import matplotlib.pyplot as plt

    assert fig_width_px(plt.figure(figsize=(10.5, 3))) > MAX_FIG_WIDTH_PX    # the old 1050-px panels


@pytest.mark.parametrize("name", sorted(PANELS))
def test_every_panel_says_what_to_see_in_both_languages(name, english):
    guide = PANELS[name].what_to_see
    assert isinstance(guide, WhatToSee), name
    for part in (guide.first, guide.changes, guide.notice):
        assert len(part.en) > 15 and part.en != part.zh
        assert CJK.search(part.zh), f"{name}: Chinese text missing"


def test_the_box_is_shown_under_the_panel_and_switches_language(english):
    panel = PANELS["advantages.group"]()
    view = panel.view()
    assert isinstance(view, widgets.VBox) and isinstance(view.children[-1], widgets.HTML)
    assert "What you should see" in view.children[-1].value and "Move first" in view.children[-1].value
    set_language("zh")
    box = panel.view().children[-1].value
    assert "你应该看到什么" in box and "退化组" in box
    assert "Move first" not in box


@pytest.mark.parametrize("guide", [MONITOR_WHAT_TO_SEE, COMPARE_WHAT_TO_SEE, RUNS_WHAT_TO_SEE])
def test_figure_guides_are_bilingual(guide, english):
    assert "What you should see" in guide._repr_html_()
    assert all(CJK.search(p.zh) for p in (guide.first, guide.changes, guide.notice))


def test_html_is_escaped(english):
    from grpo_lab.i18n import Text

    g = WhatToSee(Text("a < b", "甲 < 乙"), Text("x", "x"), Text("y", "y"))
    assert "a &lt; b" in g.html() and "<li><b>Move first:</b>" in g.html()


def test_controls_that_cannot_matter_are_disabled():
    values = PANELS["guess.values"](hints="8 higher, 12 lower", policy="uniform")
    assert values.controls["theta"].disabled and values.controls["N"].disabled     # uniform policy; 12 bounds it
    values.set(policy="softmax", hints="8 higher")
    assert not values.controls["theta"].disabled and not values.controls["N"].disabled
    train = PANELS["guess.train"](steps=10)
    assert train.controls["returns"].disabled                                      # cost 0: total = to-go
    train.set(cost=0.1)
    assert not train.controls["returns"].disabled
    tokens = PANELS["loss.token_weights"](step=1)
    assert tokens.controls["eps"].disabled
    tokens.set(step=3)
    assert not tokens.controls["eps"].disabled


def test_disabled_controls_really_change_nothing():
    import numpy as np

    tokens = PANELS["loss.token_weights"](step=1, eps=0.2)
    before = tokens.result["push"].copy()
    tokens.set(eps=0.1)
    assert np.array_equal(before, tokens.result["push"])                           # why ε is disabled at k = 1
    train = PANELS["guess.train"](steps=10)
    a = train.result["runs"]["none"].J.copy()
    train.set(returns="total")
    assert np.array_equal(a, train.result["runs"]["none"].J)                      # why returns is disabled at cost 0


# --- beyond width: no legend over plotted data, no label outside the figure (issue 24) -------------
# Each panel is checked on its own, in its default state, after a full Agg draw (the layout a
# student sees first). "Plotted data": lines drawn in data coordinates (densified, so a segment
# that crosses the legend counts), bars (Rectangle patches with a non-zero size) and scatter
# points. Reference lines and spans drawn in axes coordinates (axhline, axvline, axvspan),
# images and filled regions are not checked.

def _drawn(fig):
    import matplotlib
    if fig.canvas.get_renderer is None:                        # pragma: no cover
        matplotlib.use("Agg")
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _data_points_px(ax):
    """Display coordinates of every plotted data point of ``ax`` (an (N, 2) array)."""
    import numpy as np
    from matplotlib.collections import PathCollection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Rectangle

    pts = []
    for line in ax.get_lines():
        if not isinstance(line, Line2D) or line.get_transform() != ax.transData or not line.get_visible():
            continue
        xy = np.column_stack([np.asarray(line.get_xdata(), float), np.asarray(line.get_ydata(), float)])
        xy = xy[np.isfinite(xy).all(1)]
        if len(xy) == 0:
            continue
        if len(xy) > 1 and line.get_linestyle() not in ("None", "", " "):      # densify the segments
            t = np.linspace(0, 1, 12)[:, None, None]
            xy = (xy[:-1][None] * (1 - t) + xy[1:][None] * t).reshape(-1, 2)
        pts.append(ax.transData.transform(xy))
    for c in ax.collections:
        if isinstance(c, PathCollection) and c.get_offset_transform() == ax.transData and len(c.get_offsets()):
            pts.append(ax.transData.transform(np.asarray(c.get_offsets(), float)))
    return np.concatenate(pts) if pts else np.zeros((0, 2))


def _bars_px(ax):
    """Display boxes (x0, y0, x1, y1) of the bars of ``ax``, cut to the axes' own box."""
    from matplotlib.patches import Rectangle

    box, out = ax.get_window_extent(), []
    for p in ax.patches:
        if isinstance(p, Rectangle) and p.get_data_transform() == ax.transData and p.get_visible() \
                and abs(p.get_width()) > 0 and abs(p.get_height()) > 0:
            (x0, y0), (x1, y1) = sorted(ax.transData.transform([(p.get_x(), p.get_y()),
                                                                (p.get_x() + p.get_width(), p.get_y() + p.get_height())]).tolist())
            y0, y1 = sorted((y0, y1))
            out.append((max(x0, box.x0), max(y0, box.y0), min(x1, box.x1), min(y1, box.y1)))
    return out


def legends_over_data(fig) -> list[str]:
    """One line per legend of ``fig`` that covers a plotted data point of its axes."""
    renderer = _drawn(fig)
    bad = []
    for k, ax in enumerate(fig.axes):
        leg = ax.get_legend()
        if leg is None or not leg.get_visible():
            continue
        box = leg.get_window_extent(renderer)
        pts = _data_points_px(ax)
        inside = (pts[:, 0] > box.x0) & (pts[:, 0] < box.x1) & (pts[:, 1] > box.y0) & (pts[:, 1] < box.y1)
        bars = sum(min(x1, box.x1) - max(x0, box.x0) > 0.5 and min(y1, box.y1) - max(y0, box.y0) > 0.5
                   for x0, y0, x1, y1 in _bars_px(ax))
        if inside.any() or bars:
            bad.append(f"axes {k} ({ax.get_title() or ax.get_ylabel()!r}): legend covers {int(inside.sum())} "
                       f"data points and {bars} bars")
    return bad


def labels_outside(fig, tol_px: float = 1.0) -> list[str]:
    """One line per axis label, tick label or title of ``fig`` that reaches outside the figure."""
    import numpy as np

    renderer = _drawn(fig)
    W, H = fig.bbox.width, fig.bbox.height
    texts = [("suptitle", fig._suptitle)] if fig._suptitle is not None else []
    for k, ax in enumerate(fig.axes):
        texts += [(f"axes {k} title", ax.title)]
        if not ax.axison:                                          # ax.axis("off"): no labels, no ticks drawn
            continue
        texts += [(f"axes {k} x-label", ax.xaxis.label), (f"axes {k} y-label", ax.yaxis.label)]
        for axis, lim in ((ax.xaxis, ax.get_xlim()), (ax.yaxis, ax.get_ylim())):    # only the ticks drawn
            # compared in the axis's own scale (a log axis's 1e-10 tick lies outside a 1e-9..5 view,
            # though a linear tolerance would admit it; such a label is not drawn and its place is stale)
            tr = axis.get_transform()
            lo, hi = sorted(tr.transform(np.asarray(lim, float)))
            locs = tr.transform(np.asarray(axis.get_ticklocs(), float))
            texts += [(f"axes {k} tick label", t) for loc, t in zip(locs, axis.get_ticklabels())
                      if lo - 1e-9 * (hi - lo) <= loc <= hi + 1e-9 * (hi - lo)]
    bad = []
    for what, t in texts:
        if not t.get_visible() or not t.get_text().strip():
            continue
        b = t.get_window_extent(renderer)
        if not np.isfinite([b.x0, b.x1, b.y0, b.y1]).all():        # a label the renderer did not place
            continue
        if b.x0 < -tol_px or b.y0 < -tol_px or b.x1 > W + tol_px or b.y1 > H + tol_px:
            bad.append(f"{what} {t.get_text()[:30]!r} at x {b.x0:.0f}…{b.x1:.0f}, y {b.y0:.0f}…{b.y1:.0f} "
                       f"(figure {W:.0f}×{H:.0f})")
    return bad


@pytest.mark.parametrize("name", sorted(PANELS))
def test_panel_legend_is_not_over_the_data(name):
    import matplotlib.pyplot as plt

    panel = PANELS[name]()
    try:
        assert legends_over_data(panel.fig) == [], name
    finally:
        plt.close(panel.fig)


@pytest.mark.parametrize("name", sorted(PANELS))
def test_panel_labels_lie_inside_the_figure(name):
    import matplotlib.pyplot as plt

    panel = PANELS[name]()
    try:
        assert labels_outside(panel.fig) == [], name
    finally:
        plt.close(panel.fig)


def test_the_overlap_checks_can_fail():
    import matplotlib.pyplot as plt
    import numpy as np

    fig, ax = plt.subplots(figsize=(4, 3))
    x = np.linspace(0, 1, 50)
    ax.plot(x, x, label="a long legend entry right over the line")
    ax.legend(loc="center")                                      # the diagonal runs through the centre
    ax.set_ylabel("y")
    ax.yaxis.set_label_coords(-0.5, 0.5)                         # pushed off the figure's left edge
    assert len(legends_over_data(fig)) == 1 and any("y-label" in b for b in labels_outside(fig))
    fig2, ax2 = plt.subplots(figsize=(4, 3))
    ax2.bar([0, 1, 2], [1, 9, 1], label="bars")                    # a tall bar under the legend, clipped at 3
    ax2.set_ylim(0, 3)
    ax2.legend(loc="upper center")
    assert "1 bars" in legends_over_data(fig2)[0]
    plt.close(fig2)
    ax.get_legend().set_loc("lower right")
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, 1.0), fontsize=6)   # the upper left is empty above y = x
    assert legends_over_data(fig) == []
    plt.close(fig)
