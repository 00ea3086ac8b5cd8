"""grpo_lab.inner_steps: μ = 1 means ρ ≡ 1 and no clipping; clipping only after the policy moved."""
import numpy as np
import pytest

from grpo_lab import advantages, inner_steps


@pytest.mark.parametrize("seed", range(4))
def test_first_step_ratio_one_loss_zero_gradient_nonzero(seed):
    r = inner_steps.run(inner_steps.InnerConfig(mu=1, seed=seed))
    assert r.ratio.shape == (1, 8, 8)
    assert (r.ratio[0] == 1.0).all()                                   # exactly, not approximately
    assert r.clip_frac[0] == 0.0 and not r.clipped.any()
    assert abs(r.loss[0]) < 1e-15                                       # −mean Â = 0 (eq. 6, equal lengths)
    assert r.grad_norm[0] > 1e-2
    # the per-token weight is −Â_i/(G·T) on every token: Â broadcast, ρ = 1
    np.testing.assert_allclose(r.weights[0], -r.adv[:, None] / 64 * np.ones((8, 8)), atol=1e-15)
    np.testing.assert_allclose(r.adv, advantages.group_advantages(r.rewards))
    assert r.rewards.min() != r.rewards.max()                           # never a degenerate group


@pytest.mark.parametrize("seed", range(4))
def test_clipping_starts_after_step_one(seed):
    r = inner_steps.run(inner_steps.InnerConfig(mu=8, lr=0.1, seed=seed))
    assert r.first_clip_step is not None and r.first_clip_step >= 2
    assert (r.clip_frac[: r.first_clip_step - 1] == 0).all()
    assert r.ratio_max[-1] > 1.2 and r.ratio_min[-1] < 0.8
    # clipped tokens get exactly zero gradient; unclipped ones −Â·ρ/(G·T)
    for k in range(8):
        w, rho, clip = r.weights[k], r.ratio[k], r.clipped[k]
        assert (w[clip] == 0).all()
        np.testing.assert_allclose(w[~clip], (-r.adv[:, None] * rho / 64)[~clip], rtol=1e-12)
        assert r.clip_frac[k] == pytest.approx(clip.mean())


def test_head_equals_a_shorter_run():
    long = inner_steps.run(inner_steps.InnerConfig(mu=10, seed=2))
    short = inner_steps.run(inner_steps.InnerConfig(mu=4, seed=2))
    head = long.head(4)
    for name in ("loss", "grad_norm", "clip_frac", "ratio_min", "ratio_max", "ratio", "weights", "clipped"):
        np.testing.assert_array_equal(getattr(head, name), getattr(short, name))
    assert inner_steps.run_cached(inner_steps.InnerConfig(mu=10, seed=2)) is \
        inner_steps.run_cached(inner_steps.InnerConfig(mu=10, seed=2))


def test_small_learning_rate_delays_clipping():
    fast = inner_steps.run(inner_steps.InnerConfig(mu=12, lr=0.2, seed=0)).first_clip_step
    slow = inner_steps.run(inner_steps.InnerConfig(mu=12, lr=0.03, seed=0)).first_clip_step
    assert fast is not None and (slow is None or slow > fast)


def test_bad_config():
    with pytest.raises(ValueError, match="mu"):
        inner_steps.run(inner_steps.InnerConfig(mu=0))
    with pytest.raises(ValueError, match="lr"):
        inner_steps.run(inner_steps.InnerConfig(lr=0.0))
    with pytest.raises(ValueError, match="need"):
        inner_steps.run(inner_steps.InnerConfig(need=99))
