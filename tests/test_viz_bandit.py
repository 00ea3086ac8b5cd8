"""Notebook 01's panels, driven headlessly as a student's slider moves would."""
import numpy as np
import pytest

from grpo_lab import bandit
from grpo_lab.viz.bandit import FIGURES, GradientPanel, LadderPanel, RunningMeanPanel


def test_gradient_panel_shows_seed_numbers_and_updates_in_place():
    panel = GradientPanel(theta=-1.1, baseline=0.0)
    bars = list(panel.bars)
    assert [round(b.get_height(), 2) for b in bars] == [0.75, 0.0]
    panel.set(baseline=0.5)
    assert [round(b.get_height(), 3) for b in panel.bars] == [0.375, 0.125]
    assert list(panel.bars) == bars                       # same artists, not rebuilt
    assert panel.result.mean == pytest.approx(bandit.prob_a(-1.1) * (1 - bandit.prob_a(-1.1)))
    assert panel.mean_line.get_ydata()[0] == pytest.approx(panel.result.mean)
    panel.set(baseline=round(1 - bandit.prob_a(-1.1), 3))
    assert panel.result.var < 1e-5
    assert panel.bstar_line.get_xdata()[0] == pytest.approx(1 - bandit.prob_a(-1.1))


def test_gradient_panel_blits_when_limits_do_not_change():
    panel = GradientPanel()
    panel.fig.canvas.draw()
    full = panel.n_full_draws
    for b in (0.1, 0.2, 0.3):
        panel.set(baseline=b)
    assert panel.n_full_draws == full and panel.n_updates == 4


def test_running_mean_panel_lines_track_samples():
    panel = RunningMeanPanel(n=500, seed=2)
    x, y = panel.lines["no baseline"].get_data()
    assert len(x) == 500
    np.testing.assert_allclose(y, bandit.running_mean(bandit.sample_estimates(-1.1, 500, 0.0, seed=2)))
    panel.set(n=2000)
    assert len(panel.lines["b = 0.5"].get_xdata()) == 2000
    p = bandit.prob_a(-1.1)
    assert panel.target.get_ydata()[0] == pytest.approx(p * (1 - p))


def test_ladder_panel_updates_every_rung():
    panel = LadderPanel(steps=30, G=2)
    line = panel.mean["group"]
    before = line.get_ydata().copy()
    panel.set(G=8)
    assert panel.mean["group"] is line
    assert len(line.get_ydata()) == 31 and not np.allclose(before, line.get_ydata())
    assert panel.sd["optimal"].get_ydata().max() < 1e-12


def test_unknown_control_is_refused():
    with pytest.raises(ValueError, match="unknown control"):
        GradientPanel(beta=1.0)
    with pytest.raises(ValueError, match="unknown control"):
        GradientPanel().set(beta=1.0)


def test_figures_registry():
    assert set(FIGURES) == {"01_bandit_gradient", "01_bandit_running_mean", "01_bandit_ladder"}
