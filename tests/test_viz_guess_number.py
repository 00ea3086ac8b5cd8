"""Notebook 02's panels, driven headlessly as a student's control moves would."""
import matplotlib.colors as mcolors
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_lab import guess_number as gn
from grpo_lab import methods
from grpo_lab.viz.guess_number import FIGURES, MonteCarloPanel, TreePanel, ValuesPanel, bar_heights, fmt_set, tree_columns
from grpo_lab.viz.guess_number_training import FIGURES as TRAINING_FIGURES
from grpo_lab.viz.guess_number_training import TrainPanel, VariancePanel

UP, DOWN = mcolors.to_rgba(methods.PUSH_UP), mcolors.to_rgba(methods.PUSH_DOWN)   # pushed up / down


def face(coll):
    return [tuple(np.round(c[:3], 3)) for c in coll.get_facecolors()]


def rgb(c):
    return tuple(np.round(c[:3], 3))


def test_values_panel_shows_the_seed_state_by_default():
    panel = ValuesPanel()
    r = panel.result
    assert r.error is None and r.state == gn.State((9, 10, 11), 2)
    np.testing.assert_allclose(bar_heights(panel.q_bars), [2 / 3, 1, 2 / 3])
    np.testing.assert_allclose(bar_heights(panel.a_bars), [-1 / 9, 2 / 9, -1 / 9])
    assert face(panel.a_bars) == [rgb(DOWN), rgb(UP), rgb(DOWN)]          # colour by sign
    assert panel.v_line.get_ydata()[0] == pytest.approx(7 / 9)
    np.testing.assert_allclose(panel.pi_dots.get_ydata(), [1 / 3] * 3)
    assert [t.get_text() for t in panel.a_text[:3]] == ["-0.111", "+0.222", "-0.111"]


def test_values_panel_updates_in_place_and_blits():
    panel = ValuesPanel()
    panel.fig.canvas.draw()
    q_bars, a_bars, full = panel.q_bars, panel.a_bars, panel.n_full_draws
    panel.set(policy="bisection")
    np.testing.assert_allclose(panel.pi_dots.get_ydata(), [0, 1, 0])
    assert panel.v_line.get_ydata()[0] == 1.0
    panel.set(hints="8 higher")                          # 12 candidates, 3 tries left
    assert len(bar_heights(panel.q_bars)) == 12 and panel.result.state.tries_left == 3
    panel.set(policy="softmax", theta=2.0)
    assert panel.q_bars is q_bars and panel.a_bars is a_bars
    assert panel.n_full_draws == full                    # fixed limits: every update was a blit
    panel.set(N=40)                                      # the x range changes: one full redraw
    assert panel.n_full_draws == full + 1 and panel.ax_a.get_xlim() == (0.5, 40.5)


def test_values_panel_reports_an_inconsistent_history_without_raising():
    panel = ValuesPanel()
    panel.set(hints="8 higher, 6 lower")
    assert "inconsistent" in panel.result.error
    assert panel.info.get_text().startswith("✗") and len(bar_heights(panel.q_bars)) == 0
    panel.set(hints="8 higher, 12 lower, 10 lower, 9 higher")   # uses all 4 tries
    assert "no try is left" in panel.result.error
    panel.set(hints="8 higher, 12 lower")
    assert panel.result.error is None and len(bar_heights(panel.q_bars)) == 3
    panel.set(hints="30 lower")
    assert "outside 1..20" in panel.result.error


def test_hint_editor_rewrites_the_history():
    panel = ValuesPanel(hints="")
    assert panel.result.state.m == 20
    panel.add_hint(8, "higher")
    panel.add_hint(12, "too big")
    assert panel.controls["hints"].value == "8 higher, 12 lower"
    assert panel.result.state == gn.State((9, 10, 11), 2)
    panel.undo_hint()
    assert panel.controls["hints"].value == "8 higher" and panel.result.state.m == 12
    panel.clear_hints()
    assert panel.result.state.m == 20
    with pytest.raises(ValueError, match="feedback"):
        panel.add_hint(5, "warm")
    box = panel.widget
    assert len(box.children) == 2                         # editor row + controls/canvas


def test_tree_panel_explains_the_seed_signs():
    panel = TreePanel()
    nodes = [t.get_text() for t in panel.nodes if t.get_visible()]
    assert nodes == ["9: Q 0.67", "10: Q 1.00", "11: Q 0.67"]
    colors = [rgb(t.get_bbox_patch().get_facecolor()) for t in panel.nodes[:3]]
    assert colors[0] == colors[2] != colors[1]
    assert panel.leaves[2].get_text() == "↓{9..10}: 0.50\n↑∅"             # 11 wrong: two left, one try
    assert panel.leaves[1].get_text() == "↓{9}: 1.00\n↑{11}: 1.00"        # 10 wrong: one left, one try
    assert "V = 0.778" in panel.root.get_text()
    edges = panel.edges
    panel.set(policy="bisection")
    assert panel.edges is edges
    widths = panel.edges.get_linewidths()
    assert widths[2] > widths[0] == widths[4]                            # π concentrates on 10


def test_tree_panel_large_state_and_error():
    panel = TreePanel(hints="")
    shown = [t.get_text().split(":")[0] for t in panel.nodes if t.get_visible()]
    assert shown[0] == "1" and shown[-1] == "20" and "10" in shown and len(shown) == 5
    assert "5 of 20" in panel.root.get_text()
    panel.set(hints="4 lower, 2 higher, 3 higher")
    assert panel.root.get_text().startswith("✗") and not any(t.get_visible() for t in panel.nodes)


@given(st.integers(1, 200))
def test_tree_columns_keep_ends_and_middle(m):
    cols = tree_columns(m)
    assert len(cols) == min(m, 5) and np.all(np.diff(cols) > 0)
    assert cols[0] == 0 and cols[-1] == m - 1 and (m - 1) // 2 in cols


def test_fmt_set():
    assert fmt_set((9, 10, 11)) == "{9..11}" and fmt_set((9,)) == "{9}" and fmt_set(()) == "∅"
    assert fmt_set((1, 5)) == "{1,5}"


def test_monte_carlo_panel_matches_library_and_slider():
    panel = MonteCarloPanel(n=300, seed=1)
    mc = panel.result["mc"]
    ref = gn.mc_action_values({9, 10, 11}, 2, n=300, seed=1)
    np.testing.assert_allclose(mc.a_hat, ref.a_hat)
    np.testing.assert_allclose(panel.a_dots.get_ydata(), mc.a_hat)
    np.testing.assert_allclose(bar_heights(panel.a_bars), [-1 / 9, 2 / 9, -1 / 9])
    assert len(panel.err_line.get_xdata()) == 300
    line = panel.err_line
    panel.set(n=1500)
    assert panel.err_line is line and len(line.get_xdata()) == 1500
    assert np.all(np.abs(panel.result["mc"].q_hat - panel.result["mc"].q) <= 4 * panel.result["mc"].se_q + 1e-12)
    assert panel.n_marker.get_xdata()[0] == 1500


def test_variance_panel_shows_unbiased_means_and_variance_ratios():
    panel = VariancePanel(n=3000, seed=2)
    r = panel.result
    assert panel.exact.get_ydata()[0] == pytest.approx(gn.policy_gradient(20, 5, 0.5, cost=0.1))
    np.testing.assert_allclose(panel.dots.get_offsets()[:, 1], r.mean)
    heights = bar_heights(panel.v_bars)
    assert heights[0] == pytest.approx(1.0)
    assert np.all(np.abs(r.bias) <= 4 * r.se)
    assert [t.get_text() for t in panel.v_text][0] == "1.00"
    panel.fig.canvas.draw()
    full = panel.n_full_draws
    panel.set(theta=1.0, cost=0.2)                      # limits depend on N and tries only
    assert panel.n_full_draws == full
    lo, hi = panel.ax_mean.get_ylim()
    assert lo < 0 < panel.result.exact < hi


def test_train_panel_curves_and_map():
    panel = TrainPanel(steps=20, N=12, tries=4)
    runs = panel.result["runs"]
    line = panel.mean["value"]
    assert len(line.get_xdata()) == 21
    assert line.get_ydata()[0] == pytest.approx(gn.success_probability(12, 4))
    assert panel.best.get_ydata()[0] == pytest.approx(gn.success_probability(12, 4, "bisection"))
    np.testing.assert_allclose(panel.sd["none"].get_ydata(), runs["none"].J.std(0))
    assert panel.image.get_array().shape == (12, 12)
    assert panel.result["theta"] == pytest.approx(runs["value"].theta[:, -1].mean())
    np.testing.assert_allclose(panel.image.get_array(), gn.advantage_map("softmax", 12, 3, theta=panel.result["theta"]))
    panel.set(lr=0.5)
    assert panel.mean["value"] is line
    assert not np.allclose(line.get_ydata(), runs["value"].J.mean(0))


def test_figures_registry():
    assert set(FIGURES) | set(TRAINING_FIGURES) == {"02_guess_values", "02_guess_tree", "02_guess_mc", "02_guess_rtg",
                                                    "02_guess_train"}


def test_every_hint_editor_control_changes_the_state_at_once():
    """Issue 24: the higher/lower choice used to be a toggle that changed nothing until 'add' was pressed."""
    import ipywidgets as widgets

    from grpo_lab.viz.guess_number import ValuesPanel

    panel = ValuesPanel(N=20, tries=4, hints="8 higher", policy="uniform")
    row = panel.hint_editor()
    assert not any(isinstance(w, (widgets.ToggleButtons, widgets.ToggleButton)) for w in row.children)
    guess, higher, lower = row.children[:3]
    guess.value = 12
    n = panel.n_updates
    lower.click()
    assert panel.controls["hints"].value == "8 higher, 12 lower" and panel.n_updates == n + 1
    assert panel.result.state.candidates == (9, 10, 11)
    guess.value = 9
    higher.click()
    assert panel.result.state.candidates == (10, 11)
