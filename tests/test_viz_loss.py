"""Notebook 04's panels, driven headlessly as a student's slider moves would."""
import numpy as np
import pytest

from grpo_lab import inner_steps, kl_toy, losses
from grpo_lab.viz.loss import (FIGURES, ClipPanel, InnerStepsPanel, KLEstimatorPanel, KLGradientPanel,
                               KLPlacementPanel, TokenWeightsPanel)


def _span(rect):
    return rect.get_x(), rect.get_x() + rect.get_width()


def test_clip_panel_curves_and_zero_gradient_shading():
    panel = ClipPanel(eps_low=0.2, eps_high=0.2, dual_clip=1.0)
    line = panel.lines[+1, "obj"]
    x, y = line.get_data()
    assert y.max() == pytest.approx(1.2)                       # ℓ = min(ρ, 1.2) for Â = +1
    assert _span(panel.spans[+1, "grad"][0]) == pytest.approx((1.2, 5.0))
    assert _span(panel.spans[-1, "grad"][0]) == pytest.approx((0.0, 0.8))
    assert panel.spans[-1, "grad"][1].get_width() == 0.0      # no dual clip
    panel.set(eps_high=0.28, dual_clip=3.0)
    assert panel.lines[+1, "obj"] is line                      # same artist, updated in place
    assert line.get_ydata().max() == pytest.approx(1.28)
    assert _span(panel.spans[-1, "grad"][1]) == pytest.approx((3.0, 5.0))
    # gradient is exactly zero inside every shaded interval and non-zero outside
    r = panel.result
    for sign in (+1, -1):
        inside = np.zeros_like(r.rho, dtype=bool)
        edge = np.zeros_like(r.rho, dtype=bool)                # at a kink the derivative is a convention
        for lo, hi in r.zero[sign]:
            inside |= (r.rho > lo) & (r.rho < hi)
            edge |= np.isclose(r.rho, lo) | np.isclose(r.rho, hi)
        assert (r.grad[sign][inside & ~edge] == 0).all()
        assert (r.grad[sign][~inside & ~edge] != 0).all()
    assert panel.lines[-1, "obj"].get_ydata().min() == pytest.approx(-3.0)   # dual-clip floor c·Â


def test_clip_panel_blits():
    panel = ClipPanel()
    panel.fig.canvas.draw()
    full = panel.n_full_draws
    for e in (0.1, 0.3, 0.25):
        panel.set(eps_low=e)
    assert panel.n_full_draws == full


def test_token_weights_panel_step_one_is_uniform_per_row():
    panel = TokenWeightsPanel(step=1)
    push = panel.im_w.get_array()
    adv = panel.result["adv"]
    np.testing.assert_allclose(push, adv[:, None] / 64 * np.ones((8, 8)), atol=1e-15)
    assert (panel.im_r.get_array() == 1.0).all()
    assert len(panel.clip_marks.get_xdata()) == 0
    assert [b.get_width() for b in panel.bars] == pytest.approx(list(adv))
    im = panel.im_w
    panel.set(step=6)
    assert panel.im_w is im
    r = panel.result
    assert r["clipped"].any() and len(panel.clip_marks.get_xdata()) == r["clipped"].sum()
    # push = Â·ρ/(G·T) on unclipped tokens, 0 on clipped ones: ρ is the only t-dependent factor
    want = np.where(r["clipped"], 0.0, r["adv"][:, None] * r["ratio"] / 64)
    np.testing.assert_allclose(panel.im_w.get_array(), want, rtol=1e-12, atol=1e-15)


def test_inner_steps_panel_mu_slider():
    panel = InnerStepsPanel(mu=1, lr=0.1, eps=0.2, seed=0)
    assert panel.result.first_clip_step is None
    assert panel.bars[0].get_height() == 0.0
    assert list(panel.rmax.get_ydata()) == [1.0] and list(panel.rmin.get_ydata()) == [1.0]
    assert panel.first.get_xdata()[0] == -1
    panel.set(mu=8)
    first = panel.result.first_clip_step
    assert first is not None and first > 1
    assert panel.first.get_xdata()[0] == first
    assert panel.bars[first - 1].get_height() > 0 and panel.bars[first - 2].get_height() == 0
    assert len(panel.loss.get_xdata()) == 8
    full = inner_steps.run(inner_steps.InnerConfig(mu=8, lr=0.1, eps_low=0.2, seed=0))
    np.testing.assert_array_equal(panel.loss.get_ydata(), full.loss)


def test_kl_estimator_panel_numbers():
    panel = KLEstimatorPanel(shift=1.5, n=16, seed=0)
    z, z_ref = kl_toy.toy_logits(8, 1.5, 0)
    kl = kl_toy.exact_kl(z, z_ref)
    assert panel.kl_line.get_ydata()[0] == pytest.approx(kl)
    heights = [b.get_height() for b in panel.vbars["k3"]]
    np.testing.assert_allclose(heights, kl_toy.estimator_values(z, z_ref)["k3"])
    assert min(heights) >= 0
    offsets = panel.pts["k1"].get_offsets()
    assert offsets.shape == (300, 2)
    pts = panel.pts["k1"]
    panel.set(n=128)
    assert panel.pts["k1"] is pts
    assert panel.rmse_now.get_xdata()[0] == 128
    # larger n → the MC spread shrinks like 1/√n
    sd = {k: panel.result["mc"][k].std() for k in kl_toy.KINDS}
    mo = panel.result["moments"]
    for k in kl_toy.KINDS:
        assert sd[k] == pytest.approx(np.sqrt(mo[k].var / 128), rel=0.15)


def test_kl_gradient_panel_matches_true_gradients():
    panel = KLGradientPanel(shift=1.5, seed=0)
    k3 = [b.get_height() for b in panel.bars["k3"]]
    np.testing.assert_allclose(k3, panel.rev.get_ydata(), atol=1e-13)
    np.testing.assert_allclose([b.get_height() for b in panel.bars["k2"]], panel.fwd.get_ydata(), atol=1e-13)
    assert max(abs(b.get_height()) for b in panel.bars["k1"]) < 1e-15


def test_kl_placement_panel():
    panel = KLPlacementPanel(beta=0.2, drift=2.0, pattern="all correct (degenerate)")
    d1 = panel.im[1, 1].get_array()
    # degenerate group: form 1 pushes only through the KL, strongest on the drifted token (0, 4)
    assert np.unravel_index(np.abs(d1).argmax(), d1.shape) == (0, 4)
    assert [b.get_width() for b in panel.b0] == [0.0] * 6
    assert np.std([b.get_width() for b in panel.b2]) > 0.9      # form 2: KL-only advantages, unit scale
    panel.set(beta=0.0)
    np.testing.assert_allclose(panel.im[2, 1].get_array(), 0.0, atol=1e-15)


def test_figures_registry():
    assert set(FIGURES) == {"04_loss_clip", "04_loss_token_weights", "04_loss_inner_steps",
                            "04_kl_estimators", "04_kl_gradients", "04_kl_placement"}


def test_surrogate_curve_and_intervals_validate():
    with pytest.raises(ValueError, match="ratio"):
        losses.surrogate_curve([0.0, 1.0], 1.0)
    with pytest.raises(ValueError, match="dual_clip"):
        losses.zero_grad_intervals(-1.0, dual_clip=0.9)
    assert losses.zero_grad_intervals(0.0) == [(0.0, float("inf"))]


def test_token_weights_eps_slider_recolours_the_ratio_map_from_step_two():
    panel = TokenWeightsPanel(step=5, eps=0.2, lr=0.05, seed=0)
    assert not panel.controls["eps"].disabled
    before = panel.im_r.to_rgba(panel.im_r.get_array()).copy()
    panel.set(eps=0.21)                                    # one key press
    after = panel.im_r.to_rgba(panel.im_r.get_array())
    assert np.abs(after - before).max() > 0.01             # visibly different colours
    assert (panel.im_r.norm.vmin, panel.im_r.norm.vmax) == pytest.approx((0.79, 1.21))


def test_kl_placement_each_form_shows_its_change_on_its_own_scale():
    panel = KLPlacementPanel(beta=0.1, drift=1.5)
    for f in (1, 2):
        d = panel.im[f, 1].get_array()
        assert np.isclose(panel.im[f, 1].norm.vmax, np.abs(d).max()) and panel.im[f, 1].norm.vmin == -panel.im[f, 1].norm.vmax
    assert panel.im[2, 1].norm.vmax > 2 * panel.im[1, 1].norm.vmax     # a shared scale would have hidden form 1
    assert "seed 000" not in panel.title and "lecture notes 000" in panel.title
