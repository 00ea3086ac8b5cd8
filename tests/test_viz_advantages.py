"""Notebook 03's panels, driven headlessly as a student's clicks and slider moves would."""
import ipywidgets as widgets
import numpy as np
import pytest

from grpo_lab import advantages as A
from grpo_lab import bias as B
from grpo_lab.viz import all_panels
from grpo_lab.viz.advantages import (FIGURES, G_MAX, DifficultyPanel, GroupEditorPanel, NoisePanel,
                                     RemediesPanel)


def heights(panel):
    return [b.get_height() for b in panel.a_bars if b.get_visible()]


# --------------------------------------------------------------------------- group editor
def test_group_editor_default_is_the_seed_hard_prompt():
    panel = GroupEditorPanel()
    assert panel.rewards().tolist() == [1, 0, 0, 0]
    assert np.round(heights(panel), 2).tolist() == [1.73, -0.58, -0.58, -0.58]
    assert [t.get_text() for t in panel.a_labels[:4]] == ["+1.73", "-0.58", "-0.58", "-0.58"]
    assert not panel.banner.get_visible()
    assert panel.mean_line.get_ydata()[0] == 0.25


def test_group_editor_toggles_update_bars_in_place():
    panel = GroupEditorPanel()
    bars, banner = list(panel.a_bars), panel.banner
    panel.set(r1=True)                                       # 1,1,0,0
    assert np.round(heights(panel), 2).tolist() == [1.0, 1.0, -1.0, -1.0]
    panel.set_rewards([1, 1, 1, 0])
    assert round(heights(panel)[3], 2) == -1.73
    assert list(panel.a_bars) == bars and panel.banner is banner   # same artists
    np.testing.assert_array_equal(heights(panel), panel.result.adv)
    np.testing.assert_array_equal(panel.result.adv, A.group_advantages([1, 1, 1, 0]))


@pytest.mark.parametrize("rewards", [[0, 0, 0, 0], [1, 1, 1, 1], [1, 1], [0.4, 0.4, 0.4]])
def test_group_editor_degenerate_banner_and_exact_zero(rewards):
    panel = GroupEditorPanel().set_rewards(rewards)
    assert panel.banner.get_visible()
    assert heights(panel) == [0.0] * len(rewards)
    assert panel.result.degenerate and panel.result.sum_abs == 0.0
    assert "degenerate" in panel.readout.value and "no gradient" in panel.readout.value
    panel.set_rewards([1, 0] + list(rewards[2:]))
    assert not panel.banner.get_visible()


def test_group_editor_modes():
    panel = GroupEditorPanel(std="sample").set_rewards([1, 1, 0, 0])
    assert np.round(heights(panel), 3).tolist() == [0.866, 0.866, -0.866, -0.866]
    panel.set(scale="none")
    assert heights(panel) == [0.5, 0.5, -0.5, -0.5]
    panel.set(scale="group", std="population", eps=0.5)
    assert heights(panel)[0] == pytest.approx(0.5)


def test_group_editor_group_size_and_continuous_rewards():
    panel = GroupEditorPanel()
    panel.set(G=6)
    assert len(heights(panel)) == 6 and sum(b.get_visible() for b in panel.r_bars) == 6
    labels = [t.get_text() for t in panel.slot_labels[panel.ax_a] if t.get_visible()]
    assert labels == [f"Â{i}" for i in range(1, 7)]                    # blitted slot labels, no full redraw
    panel.set(mode="continuous")
    r = np.array([panel.controls[f"c{i}"].value for i in range(6)])
    np.testing.assert_allclose(heights(panel), A.group_advantages(r))
    panel.set(c0=0.50, c1=0.50, c2=0.50, c3=0.50, c4=0.50, c5=0.51)  # noise amplification: 0.01 apart
    assert heights(panel)[5] == pytest.approx(A.group_advantages([0.5] * 5 + [0.51])[5])
    assert heights(panel)[5] > 2.1       # a 0.01 difference gets almost the lone-success weight √5
    assert panel.controls["r0"].layout.display == "none" and panel.controls["c0"].layout.display == ""
    assert panel.controls["c6"].layout.display == "none"


def test_group_editor_blits_unless_group_size_changes():
    panel = GroupEditorPanel()
    panel.fig.canvas.draw()
    full = panel.n_full_draws
    panel.set(r1=True)
    panel.set(r2=True)
    panel.set(std="sample")
    assert panel.n_full_draws == full
    panel.set(G=5)
    panel.fig.canvas.draw()        # what draw_idle does in a live canvas
    assert panel.n_full_draws > full


def test_group_editor_widget_and_bad_input():
    panel = GroupEditorPanel()
    w = panel.widget
    assert isinstance(w, widgets.VBox) and panel.readout in w.children
    with pytest.raises(ValueError, match="rewards"):
        panel.set_rewards([1])
    with pytest.raises(ValueError, match="rewards"):
        panel.set_rewards([1.0] * (G_MAX + 1))
    with pytest.raises(ValueError, match="rewards"):
        panel.set_rewards([2.0, 0.5])
    with pytest.raises(ValueError, match="rewards must be finite"):
        panel.set_rewards([np.nan, 0.0])


# --------------------------------------------------------------------------- difficulty
def test_difficulty_panel_curves_and_markers():
    panel = DifficultyPanel(p=0.25, G=4)
    x, y = panel.w_std.get_data()
    np.testing.assert_allclose(y * 4, B.expected_update_weight(x, 4))
    _, yn = panel.w_none.get_data()
    np.testing.assert_allclose(yn * 4, 6 * x * (1 - x), atol=1e-12)
    assert panel.w_mark.get_ydata()[0] == pytest.approx(B.expected_update_weight(0.25, 4) / 4)
    mc, se = panel.result.mc_std
    assert abs(mc - panel.result.weight_std) < 5 * se
    assert panel.lone.get_ydata()[0] == pytest.approx(1.7316, abs=1e-3)
    line = panel.w_std
    panel.set(G=8, p=0.1)
    assert panel.w_std is line and panel.vline_w.get_xdata()[0] == 0.1
    assert panel.lone.get_ydata()[0] == pytest.approx(np.sqrt(7), abs=1e-3)
    panel.set(relative=True)
    assert panel.w_std.get_ydata()[50] == pytest.approx(1.0) and panel.w_none.get_ydata()[50] == pytest.approx(1.0)
    # the difficulty bias, as drawn: at p = 0.1 GRPO keeps a larger share of the p = 0.5 weight
    assert panel.w_mark.get_ydata()[0] > panel.w_mark.get_ydata()[1]
    assert "P(degenerate)" in panel.readout.value


def test_push_by_k_figure_shows_the_difficulty_bias():
    from grpo_lab.viz.advantages import push_by_k_figure

    fig = push_by_k_figure(10)
    grpo, dr = fig.axes[0].containers
    h_grpo, h_dr = [b.get_height() for b in grpo], [b.get_height() for b in dr]
    assert len(h_grpo) == 9 and h_grpo[4] == pytest.approx(1.0) and h_dr[4] == pytest.approx(1.0)   # k = 5: the medium group
    assert round(h_grpo[0], 2) == 0.6 and round(h_dr[0], 2) == 0.36                 # k = 1: ÷σ keeps 1.67× the share
    assert all(g >= d for g, d in zip(h_grpo, h_dr))


def test_difficulty_panel_blits():
    panel = DifficultyPanel()
    panel.fig.canvas.draw()
    full = panel.n_full_draws
    for p in (0.1, 0.3, 0.9):
        panel.set(p=p)
    panel.set(G=12)
    assert panel.n_full_draws == full


# --------------------------------------------------------------------------- noise
def test_noise_panel_matches_bias_module():
    panel = NoisePanel(eps=1e-4, G=8)
    ref = B.noise_amplification(NoisePanel.SIGMA, 8, eps=1e-4, n_groups=200, seed=0)
    np.testing.assert_allclose(panel.l_std.get_ydata(), np.maximum(ref.rms_adv, 1e-12))
    assert panel.l_std.get_ydata()[-1] > 0.99 and panel.l_none.get_ydata()[-1] < 1.0
    x0 = panel.cross.get_xdata()[0]
    panel.set(eps=1e-2)
    assert panel.cross.get_xdata()[0] == pytest.approx(100 * x0)


# --------------------------------------------------------------------------- remedies
def test_remedies_panel_bars_match_simulation():
    panel = RemediesPanel(K=64, G=8, seed=0)
    out = B.simulate_remedies(64, 8, B.PromptMix(-1.5, 2.5), B.RemedyConfig(2.0, 3.0, 0.3), seed=0)
    for i, name in enumerate(B.REMEDIES):
        widths = [panel.f_bars[s][i].get_width() for s in ("all_wrong", "informative", "all_correct")]
        assert sum(widths) == pytest.approx(1.0)
        assert widths[1] == pytest.approx(out[name].informative)
        assert panel.w_batch[i].get_width() == pytest.approx(out[name].weight_per_response)
    assert panel.f_bars["informative"][1].get_width() == 1.0          # dynamic sampling
    assert panel.w_text[1].get_text().startswith("×")
    bar = panel.f_bars["informative"][0]
    panel.set(difficulty=-3.0)
    assert panel.f_bars["informative"][0] is bar
    assert bar.get_width() < out["none"].informative                   # harder batch: fewer informative groups
    assert "<table>" in panel.readout.value


def test_every_panel_registered():
    names = set(all_panels())
    assert {"advantages.group", "advantages.difficulty", "advantages.noise", "advantages.remedies"} <= names


def test_figures_registry_and_one_render(tmp_path):
    assert set(FIGURES) == {"03_group_1000", "03_group_degenerate", "03_group_sample_std", "03_difficulty",
                            "03_difficulty_relative", "03_push_by_k", "03_noise", "03_remedies"}
    assert FIGURES["03_group_degenerate"]().banner.get_visible()
    from grpo_lab.figures import render

    paths = render(tmp_path, only="03_group_1000")
    assert paths[0].stat().st_size > 10_000


# --------------------------------------------------------------------------- issue 24: what the student sees
def test_editor_driven_from_code_matches_the_clicks():
    """What notebook 03's old verification cell checked, moved here: the banner and the numbers."""
    probe = GroupEditorPanel()
    probe.set_rewards([1, 1, 1, 1])
    assert probe.result.degenerate and probe.banner.get_visible() and probe.result.sum_abs == 0.0
    probe.set_rewards([1, 1, 1, 0])
    assert round(probe.result.adv[3], 2) == -1.73 and not probe.banner.get_visible()


def test_editor_eps_step_shows_in_the_figure_or_is_disabled():
    panel = GroupEditorPanel()                                   # binary 1,0,0,0: ε moves Â by < 1e-3
    before = panel.denom_text.get_text()
    panel.set(eps=10 ** -3.75)                                   # one slider step
    assert panel.denom_text.get_text() != before                 # the figure shows the new denominator
    panel.set(scale="none")
    assert panel.controls["eps"].disabled                        # no ÷std: ε cannot matter
    a = panel.result.adv.copy()
    panel.set(eps=0.5)
    assert np.array_equal(a, panel.result.adv)                   # ... and really changes nothing


def test_readouts_print_no_negative_zero():
    panel = GroupEditorPanel().set_rewards([0.3, 0.3, 0.3, 0.31])
    assert "-0.000" not in panel.readout.value


def test_remedies_panel_matches_the_notebook_printout_and_has_no_dead_slider():
    panel = RemediesPanel()
    assert panel.controls["K"].value == 128 and "partial" not in panel.controls      # notebook 03 prints K = 128
    out = B.simulate_remedies(K=128, G=8, seed=0)
    assert panel.f_bars["informative"][0].get_width() == pytest.approx(out["none"].informative)
    assert panel.w_text[1].get_text() == f"×{out['dynamic'].cost:.2f} cost"
    # why there is no partial-credit slider: its amount moves every bar by < 0.01
    for p in (0.1, 0.9):
        o = B.simulate_remedies(K=128, G=8, config=B.RemedyConfig(partial=p), seed=0)["partial"]
        assert abs(o.weight_per_response - out["partial"].weight_per_response) < 0.01
        assert o.informative == out["partial"].informative


@pytest.mark.parametrize("name", ["advantages.group", "advantages.difficulty", "advantages.noise", "advantages.remedies"])
def test_no_legend_over_data_and_no_label_outside(name):
    from layout_checks import labels_outside, legends_over_data

    panel = all_panels()[name]()
    for move in [{}] + panel.bench_moves:
        panel.set(**move)
        assert legends_over_data(panel.fig) == [], (name, move)
        assert labels_outside(panel.fig) == [], (name, move)


def test_the_layout_check_can_fail():
    import matplotlib.pyplot as plt
    from layout_checks import legends_over_data

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 1], label="a line through the legend")
    ax.set_ylim(0, 1.04)                                         # the line runs along the top, under the legend
    ax.legend(loc="upper center")
    assert legends_over_data(fig)
    plt.close(fig)
