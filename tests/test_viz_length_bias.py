"""Notebook 05's panels, driven headlessly as a student's slider moves would."""
from dataclasses import replace

import numpy as np
import pytest

from grpo_lab import length_bias as lb
from grpo_lab.viz import all_panels
from grpo_lab.viz.length_bias import FIGURES, DriftPanel, GroupWeightsPanel

SMALL = lb.DriftConfig(steps=40, seeds=2, n_groups=8)


def heights(bars):
    return np.array([b.get_height() for b in bars])


def test_group_panel_shows_the_per_token_weights_and_updates_in_place():
    panel = GroupWeightsPanel()                       # lengths 12, 12, 6, 24; rewards 1, 1, 0, 0
    r = panel.result
    bars = {s: list(b) for s, b in panel.bars.items()}
    np.testing.assert_allclose(heights(panel.bars["grpo"]), -r.per_token[0])
    grpo = heights(panel.bars["grpo"])
    assert grpo[2] == pytest.approx(r.adv[2] / (4 * 6))                # push = Â/(G|y|) ≈ −1/24
    assert grpo[3] / grpo[2] == pytest.approx(6 / 24)                   # long wrong answer diluted
    dapo = heights(panel.bars["dapo"])
    assert dapo[3] / dapo[2] == pytest.approx(1.0)
    np.testing.assert_allclose(heights(panel.bars["gspo"]), grpo)       # on policy GSPO = eq. (6)
    tot = heights(panel.tot_bars["dapo"])
    assert tot[3] / tot[2] == pytest.approx(4.0)                        # token-mean: ∝ |y_i|
    assert "×0.25" in panel.readout.value

    panel.set(len4=6)                                                   # equal wrong lengths: no bias
    assert {s: list(b) for s, b in panel.bars.items()} == bars          # same artists
    grpo = heights(panel.bars["grpo"])
    assert grpo[3] == pytest.approx(grpo[2])
    assert panel.result.lengths.tolist() == [12, 12, 6, 6]
    panel.set(r3=1.0, r4=1.0, r1=1.0, r2=1.0)                           # degenerate group
    for s in lb.SHOWN:
        assert np.all(heights(panel.bars[s]) == 0)


def test_group_panel_off_policy_spread_only_for_token_ratio():
    panel = GroupWeightsPanel(off_policy=0.3)
    segs = panel.spread.get_segments()
    S = len(lb.SHOWN)
    spans = np.array([abs(s[1][1] - s[0][1]) for s in segs]).reshape(S, 4)
    assert spans[lb.SHOWN.index("grpo")].max() > 1e-4
    assert spans[lb.SHOWN.index("gspo")].max() < 1e-12


def test_group_panel_blits_small_moves():
    panel = GroupWeightsPanel()
    panel.fig.canvas.draw()
    full = panel.n_full_draws
    for L in (20, 22, 26, 28):
        panel.set(len4=L)
    assert panel.n_full_draws == full and panel.n_updates == 5


def test_group_panel_limits_follow_large_values():
    panel = GroupWeightsPanel()
    panel.set(len3=1)                                                   # −Â/(G·1): a large push
    lo, hi = panel.ax_tok.get_ylim()
    assert hi >= np.abs(heights(panel.bars["grpo"])).max()
    assert lo == -hi


def test_drift_panel_curves_cursor_and_policy_toggle():
    panel = DriftPanel(config=SMALL)
    runs = lb.simulate_all(SMALL)
    line = panel.wrong["grpo"]
    np.testing.assert_allclose(line.get_ydata(), runs["grpo"].len_wrong.mean(0))
    np.testing.assert_allclose(panel.right["dr_grpo"].get_ydata(), runs["dr_grpo"].len_right.mean(0))
    assert panel.cursor.get_xdata()[0] == SMALL.steps
    wrong_end = panel.wrong["grpo"].get_ydata()[-1]
    assert wrong_end > panel.wrong["dr_grpo"].get_ydata()[-1] + 5
    # the pmf at the cursor is a distribution and matches the curve's expectation
    pmf = panel.pmf_wrong["grpo"].get_ydata()
    assert pmf.sum() == pytest.approx(1.0)
    assert (pmf * np.arange(pmf.size)).sum() == pytest.approx(wrong_end, rel=0.05)

    panel.set(step=0, seed=1)
    assert panel.wrong["grpo"] is line
    assert panel.cursor.get_xdata()[0] == 0
    np.testing.assert_allclose(line.get_ydata(), runs["grpo"].len_wrong[1])
    assert "step 0" in panel.readout.value

    panel.set(length_policy="shared", step=SMALL.steps)
    shared = lb.simulate_all(replace(SMALL, length_policy="shared"))
    np.testing.assert_allclose(line.get_ydata(), shared["grpo"].len_wrong[1])
    assert "one stop probability" in panel.readout.value


def test_drift_panel_title_only_when_asked():
    plain = DriftPanel(config=SMALL)
    assert plain.ax.get_title() == "" and "stop probability" not in plain.fig._suptitle.get_text()
    titled = DriftPanel(config=SMALL, titled=True, length_policy="shared")      # in the suptitle: the legend is above the axes
    assert "one stop probability" in titled.fig._suptitle.get_text() and titled.ax.get_title() == ""


def test_group_editor_puts_each_response_on_its_own_row():
    panel = GroupWeightsPanel()
    rows = panel.widget.children[:5]
    for i, row in enumerate(rows[:4], 1):
        assert [c.description for c in row.children] == [f"|y{i}|", f"r{i}"]
    assert {c.description for c in rows[4].children} == {panel.controls["C"].description, panel.controls["off_policy"].description}


def test_drift_panel_blits_cursor_moves_and_policy_toggles():
    panel = DriftPanel(config=SMALL)
    panel.fig.canvas.draw()
    full = panel.n_full_draws
    for step in (5, 10, 15):
        panel.set(step=step)
    panel.set(length_policy="shared")
    panel.set(seed=1)
    assert panel.n_full_draws == full


def test_drift_panel_refuses_bad_config():
    with pytest.raises(TypeError, match="config"):
        DriftPanel(config={"steps": 3})
    with pytest.raises(ValueError, match="unknown control"):
        DriftPanel(config=SMALL, beta=1.0)


def test_widget_has_readout():
    import ipywidgets as widgets

    panel = GroupWeightsPanel()
    w = panel.widget
    assert isinstance(w, widgets.VBox) and w.children[-1] is panel.readout


def test_registry_and_figures():
    panels = all_panels()
    assert panels["length_bias.group"] is GroupWeightsPanel and panels["length_bias.drift"] is DriftPanel
    assert set(FIGURES) == {"05_length_bias_weights", "05_length_bias_drift", "05_length_bias_drift_shared"}


def test_figure_builder_writes_png(tmp_path):
    from grpo_lab.figures import render

    paths = render(tmp_path, only="05_length_bias_weights")
    assert paths[0].stat().st_size > 10_000
