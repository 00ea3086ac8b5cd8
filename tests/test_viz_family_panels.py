"""Notebook 07's panels, driven headlessly as a student's dropdown and slider moves would."""
import numpy as np
import pytest

from grpo_lab import family
from grpo_lab.lm import preset_runs
from grpo_lab.viz import all_panels
from grpo_lab.viz.family_panels import (FIGURES, PUSH_UNIT, CreditPanel, FrozenBatchPanel, bar_heights,
                                        bar_widths, runs_figure)


def test_frozen_batch_panel_draws_the_scores():
    panel = FrozenBatchPanel()
    s = panel.result
    assert s.batch.name == "lecture-notes groups"
    grpo = bar_heights(panel.adv_bars["GRPO"])
    np.testing.assert_allclose(np.round(grpo[4:8], 2), [1.73, -0.58, -0.58, -0.58])   # seed group 1,0,0,0
    assert round(grpo[11], 2) == -1.73                                                # 1,1,1,0: the wrong one
    for v in family.VARIANTS:
        rows = s.responses[s.responses["variant"] == v]
        np.testing.assert_allclose(bar_heights(panel.adv_bars[v]), rows["adv"])
        np.testing.assert_allclose(bar_heights(panel.push_bars[v]), rows["push"] / PUSH_UNIT)
        img = panel.meshes[v].get_array()
        push = s.push(v)
        np.testing.assert_allclose(img.filled(0), push / np.abs(push).max())
        assert np.all(img.mask == (s.batch.mask == 0))                        # padding is masked
    np.testing.assert_array_equal(bar_widths(panel.len_bars), s.batch.lengths.reshape(-1))
    assert "GRPO" in panel.info_html.value and "1,1,0,0" in panel.desc_html.value
    assert "+0.0000" in panel.info_html.value                               # on-policy GRPO loss is 0
    assert panel.desc_html in panel.widget.children and panel.info_html in panel.widget.children


def test_frozen_batch_panel_updates_in_place_and_blits():
    panel = FrozenBatchPanel()
    panel.fig.canvas.draw()
    artists = (panel.adv_bars["DAPO"], panel.push_bars["GSPO"], panel.meshes["GRPO"], panel.len_bars)
    full = panel.n_full_draws
    before = bar_heights(panel.push_bars["GRPO"]).copy()
    panel.set(batch="long wrong answers")
    assert (panel.adv_bars["DAPO"], panel.push_bars["GSPO"], panel.meshes["GRPO"], panel.len_bars) == artists
    assert "long wrong answers" in panel.desc_html.value
    assert not np.allclose(before, bar_heights(panel.push_bars["GRPO"]))
    np.testing.assert_array_equal(bar_widths(panel.len_bars), family.make_batch("long wrong answers").lengths.reshape(-1))
    # GRPO: the short wrong answer's tokens are pushed 4× harder than the long wrong one's
    img = panel.meshes["GRPO"].get_array()
    assert img[2, 0] / img[3, 0] == pytest.approx(4.0)
    img = panel.meshes["DAPO"].get_array()
    assert img[2, 0] / img[3, 0] == pytest.approx(1.0)
    for name in family.BATCHES:
        panel.set(batch=name)
    assert panel.n_full_draws == full                                # limits fixed: every update blitted
    assert panel.n_updates == 2 + len(family.BATCHES)


def test_frozen_batch_panel_limits_hold_every_batch():
    panel = FrozenBatchPanel()
    for name in family.BATCHES:
        panel.set(batch=name)
        for v in family.VARIANTS:
            assert np.abs(bar_heights(panel.adv_bars[v])).max() <= panel.ax_adv.get_ylim()[1]
            assert np.abs(bar_heights(panel.push_bars[v])).max() <= panel.ax_push.get_ylim()[1]


def test_frozen_batch_panel_stale_batch_shows_gspo_dropping_whole_answers():
    panel = FrozenBatchPanel(batch="stale (off-policy)")
    img = panel.meshes["GSPO"].get_array()
    m = ~img.mask
    rows_zero = [np.all(img[i][m[i]] == 0) for i in range(img.shape[0])]
    assert any(rows_zero) and not all(rows_zero)
    stale = family.score_batch("stale (off-policy)").summary
    assert f"{stale.loc['GSPO', 'clip_frac_low'] + stale.loc['GSPO', 'clip_frac_high']:.1%}" in panel.info_html.value


def test_credit_panel_bars_follow_lambda_and_gamma():
    panel = CreditPanel()
    seq = panel.seq
    np.testing.assert_allclose(bar_heights_patches(panel.bars), family.gae(seq.rewards, seq.values, 1.0, 0.95))
    bars = list(panel.bars)
    panel.fig.canvas.draw()
    full = panel.n_full_draws
    panel.set(lam=0.0)
    np.testing.assert_allclose(bar_heights_patches(panel.bars), panel.result.ca.td)
    assert panel.result.key_share > 0.6                              # λ = 0: the decisive token gets most credit
    panel.set(lam=1.0, gamma=0.9)
    np.testing.assert_allclose(bar_heights_patches(panel.bars), panel.result.ca.mc)
    np.testing.assert_allclose(panel.mc_line.get_ydata(), family.gae(seq.rewards, seq.values, 0.9, 1.0))
    assert list(panel.bars) == bars and panel.n_full_draws == full
    assert np.all(np.round(panel.grpo_line.get_ydata(), 2) == 1.73)  # the broadcast scalar, every token
    assert np.allclose(panel.base_line.get_ydata(), 0.75)


def bar_heights_patches(bars):
    return np.array([b.get_height() for b in bars])


def test_panels_registered_and_figures():
    panels = all_panels()
    assert panels["family.frozen_batch"] is FrozenBatchPanel and panels["family.credit"] is CreditPanel
    assert set(FIGURES) == {"07_frozen_batch", "07_frozen_batch_long_wrong", "07_frozen_batch_stale",
                            "07_gae_vs_grpo", "07_preset_runs"}
    assert all(name.startswith("07_") for name in FIGURES)


def test_unknown_control_is_refused():
    with pytest.raises(ValueError, match="unknown control"):
        CreditPanel(beta=1.0)


def test_runs_figure_draws_one_line_per_preset():
    df = preset_runs.load_family_runs()
    fig = runs_figure(df, smooth=5)
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.get_lines()]
    assert labels == list(preset_runs.RUN_PRESETS)
    grpo = df[df["preset"] == "grpo"].pivot(index="step", columns="seed", values="reward_mean")
    expected = grpo.rolling(5, min_periods=1, center=True).mean().mean(axis=1).to_numpy()
    np.testing.assert_allclose(ax.get_lines()[0].get_ydata(), expected)
