"""Formulas that used to be written twice now live in one function: these check the callers
get the same numbers from it (degenerate groups, the eq. (1) denominator, the clip mask and
ratio of the loss, the RMSE of a KL estimator)."""
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from grpo_lab import advantages, kl_toy, losses

groups = arrays(float, st.tuples(st.integers(1, 5), st.integers(2, 6)),
                elements=st.sampled_from([0.0, 0.5, 1.0]))


@settings(max_examples=60, deadline=None)
@given(groups)
def test_degenerate_mask_is_where_advantages_vanish(r):
    deg = advantages.degenerate_mask(r)
    assert np.array_equal(deg, np.array([len(set(row)) == 1 for row in r]))
    adv = advantages.group_advantages(r)
    assert np.all(adv[deg] == 0.0)
    assert np.all(np.abs(adv[~deg]).max(axis=1) > 0)


@settings(max_examples=60, deadline=None)
@given(groups, st.sampled_from(["group", "batch", "none"]), st.sampled_from(["population", "sample"]))
def test_the_printed_denominator_is_the_one_eq1_divides_by(r, scale, std):
    d = advantages.advantage_denominator(r, scale=scale, std=std, eps=1e-4)       # (N,)
    adv = advantages.group_advantages(r, scale=scale, std=std, eps=1e-4)
    live = ~advantages.degenerate_mask(r)
    centred = r - r.mean(axis=1, keepdims=True)
    np.testing.assert_allclose(adv[live], (centred / d[:, None])[live], rtol=1e-12)


def test_denominator_seed_numbers():
    assert advantages.advantage_denominator([1, 1, 0, 0]) == pytest.approx(0.5 + 1e-4)          # population std
    assert advantages.advantage_denominator([1, 1, 0, 0], std="sample") == pytest.approx(np.sqrt(1 / 3) + 1e-4)
    assert advantages.advantage_denominator([1, 1, 0, 0], scale="none") == 1.0


def test_loss_reports_the_clip_mask_and_ratio_it_used():
    g = torch.Generator().manual_seed(0)
    old = -torch.rand(4, 6, generator=g, dtype=torch.float64) - 0.3
    logp = old + 0.4 * torch.randn(4, 6, generator=g, dtype=torch.float64)
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5], dtype=torch.float64)
    mask = torch.ones(4, 6, dtype=torch.float64)
    mask[3, 4:] = 0
    out = losses.grpo_loss(logp, old, adv, mask, eps_low=0.2, eps_high=0.28)
    rho = torch.exp(logp - old)
    A = adv[:, None]
    expected = (((A > 0) & (rho > 1.28)) | ((A < 0) & (rho < 0.8))) & (mask > 0)
    assert torch.equal(out.clipped, expected) and expected.any()
    torch.testing.assert_close(out.ratio[mask > 0], rho[mask > 0])
    assert float(out.clip_frac_low + out.clip_frac_high) == pytest.approx(float(expected.sum() / mask.sum()))
    # where the mask says clipped, the token's gradient weight is exactly 0
    w = losses.token_grad_weights(logp, old, adv, mask, eps_low=0.2, eps_high=0.28)
    assert torch.all(w[out.clipped] == 0) and torch.all(w[~out.clipped & (mask > 0)] != 0)
    # GSPO: the ratio reported on every token of a response is its s_i
    seq = losses.grpo_loss(logp, old, adv, mask, level="sequence", eps_low=3e-4, eps_high=4e-4)
    s = losses.sequence_ratio(logp, old, mask)
    torch.testing.assert_close(seq.ratio[mask > 0], s[:, None].expand_as(mask)[mask > 0])


def test_rmse_of_an_array_of_sample_counts():
    m = kl_toy.Moments(mean=0.3, var=0.08, bias=0.02)
    ns = np.array([1, 4, 16, 256])
    np.testing.assert_allclose(m.rmse(ns), [m.rmse(int(n)) for n in ns])
    assert m.rmse(4) == pytest.approx(np.sqrt(0.02**2 + 0.08 / 4))
