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
