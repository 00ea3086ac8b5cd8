"""Beyond the lecture notes: CISPO, SAPO, GMPO and the sampler/trainer correction (grpo_lab.losses.beyond).

TRL 1.16's own loss (its GRPOTrainer._compute_loss) is compared with ours for CISPO and SAPO, in
value and gradient, in tests/test_trl_handoff.py; GMPO (verl only; verl cannot be imported without
ray) is compared here with the formula of its paper written out independently.
"""
import math
import warnings

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_lab.losses import (cispo_weight, grpo_loss, mismatch_stats, rollout_is_weights, sapo_gate,
                             token_grad_weights)
from grpo_lab.lm.config import GRPOConfig


def _batch(seed=0, B=6, T=5, spread=0.3):
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(B, T, generator=g, dtype=torch.float64) * 2 - 0.1
    old = logp + spread * torch.randn(B, T, generator=g, dtype=torch.float64)
    adv = torch.randn(B, generator=g, dtype=torch.float64)
    mask = torch.ones(B, T, dtype=torch.float64)
    mask[0, 3:] = 0
    mask[2, 1:] = 0
    return logp, old, adv, mask


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), mode=st.sampled_from(["seq-mean-token-mean", "token-mean"]))
def test_on_policy_every_policy_loss_pushes_like_the_clip(seed, mode):
    """At ρ = 1 (μ = 1, no mismatch) CISPO (cap ≥ 1), SAPO and GMPO give eq. (3)'s gradient exactly."""
    logp, _, adv, mask = _batch(seed)
    ref = token_grad_weights(logp, logp, adv, mask, mode=mode)
    for pl in ("cispo", "sapo", "gmpo"):
        got = token_grad_weights(logp, logp, adv, mask, mode=mode, policy_loss=pl)
        torch.testing.assert_close(got, ref, rtol=1e-10, atol=1e-12, msg=pl)
    assert ref.abs().sum() > 0


def test_cispo_keeps_the_gradient_the_clip_cuts():
    # one token, Â = +1, ρ = 10: the clip (ε 0.2) gives 0; CISPO gives −cap·Â (weight capped, not zeroed)
    lp = torch.tensor([[math.log(10.0)]], dtype=torch.float64)
    old, adv, m = torch.zeros_like(lp), torch.tensor([1.0], dtype=torch.float64), torch.ones_like(lp)
    assert float(token_grad_weights(lp, old, adv, m)) == 0.0
    assert float(token_grad_weights(lp, old, adv, m, policy_loss="cispo", cispo_cap=5.0)) == pytest.approx(-5.0)
    assert float(token_grad_weights(lp, old, adv, m, policy_loss="cispo", cispo_cap=20.0)) == pytest.approx(-10.0)
    out = grpo_loss(lp, old, adv, m, policy_loss="cispo", cispo_cap=5.0)
    assert float(out.clip_frac_high) == 1.0 and not out.clipped.any()       # capped, yet not zero-gradient
    assert cispo_weight(torch.tensor([0.5, 1.0, 7.0]), 5.0).tolist() == [0.5, 1.0, 5.0]


def test_sapo_gate_numbers_and_its_soft_tail():
    assert float(sapo_gate(1.0, 1.0)) == pytest.approx(2.0)                 # f_τ(1) = 2/τ
    assert float(sapo_gate(1.0, 1.05)) == pytest.approx(2 / 1.05)
    # gradient weight ∂(−loss)/∂log π = Â·4ρσ(1−σ): 1 at ρ = 1; at ρ = 1.5 (where the clip gives 0) 1.41, a bit
    # under the unclipped ρ·Â = 1.5; at ρ = 5 it has decayed to 0.35 — soft, never exactly 0
    def sig(x):
        return 1 / (1 + math.exp(-x))
    for rho in (1.0, 1.5, 5.0):
        want = 4 * rho * sig(rho - 1) * (1 - sig(rho - 1))
        lp = torch.tensor([[math.log(rho)]], dtype=torch.float64)
        w = token_grad_weights(lp, torch.zeros_like(lp), torch.tensor([1.0], dtype=torch.float64),
                               torch.ones_like(lp), policy_loss="sapo", sapo_tau_pos=1.0)
        assert -float(w) == pytest.approx(want)
        assert 0 < want <= rho
    assert 4 * 1.5 * sig(0.5) * (1 - sig(0.5)) == pytest.approx(1.41, abs=0.005)
    assert 4 * 5 * sig(4) * (1 - sig(4)) == pytest.approx(0.353, abs=0.001)
    # the gate is flat far out: no NaN even at an absurd ratio
    lp = torch.tensor([[80.0]], dtype=torch.float64, requires_grad=True)
    out = grpo_loss(lp, torch.zeros_like(lp.detach()), torch.tensor([1.0]), torch.ones(1, 1), policy_loss="sapo")
    out.loss.backward()
    assert torch.isfinite(lp.grad).all() and float(lp.grad) == 0.0


def _gmpo_reference(logp, old, adv, mask, eps_low, eps_high):
    """GMPO's objective from the paper, written out independently: −mean_i Â_i·exp(mean_t clipped log ρ)."""
    losses = []
    for i in range(logp.shape[0]):
        n = int(mask[i].sum())
        lr = logp[i, :n] - old[i, :n]
        a = float(adv[i])
        if a > 0:
            lr = torch.minimum(lr, torch.clamp(lr, -eps_low, eps_high))
        elif a < 0:
            lr = torch.maximum(lr, torch.clamp(lr, -eps_low, eps_high))
        else:
            lr = torch.zeros_like(lr)
        losses.append(-a * torch.exp(lr.mean()))
    return torch.stack(losses).mean()


@pytest.mark.parametrize("seed", range(5))
def test_gmpo_matches_the_paper_formula_in_value_and_gradient(seed):
    logp, old, adv, mask = _batch(seed, spread=0.5)
    adv[1] = 0.0
    lp1 = logp.clone().requires_grad_(True)
    lp2 = logp.clone().requires_grad_(True)
    ours = grpo_loss(lp1, old, adv, mask, policy_loss="gmpo", eps_low=0.4, eps_high=0.4).loss
    ref = _gmpo_reference(lp2, old, adv, mask, 0.4, 0.4)
    torch.testing.assert_close(ours, ref)
    ours.backward()
    ref.backward()
    torch.testing.assert_close(lp1.grad * mask, lp2.grad * mask)
    r = torch.exp(logp - old)[mask > 0]
    assert ((r > math.exp(0.4)) | (r < math.exp(-0.4))).any()             # the log-space clip is exercised


def test_bad_parameters_name_themselves():
    lp, old, adv, m = _batch()
    with pytest.raises(ValueError, match="sapo_tau_pos must be > 0"):
        grpo_loss(lp, old, adv, m, policy_loss="sapo", sapo_tau_pos=0.0)
    with pytest.raises(ValueError, match="sapo_tau_neg must be > 0"):
        grpo_loss(lp, old, adv, m, policy_loss="sapo", sapo_tau_neg=-1.0)
    with pytest.raises(ValueError, match="cispo_cap must be > 0"):
        grpo_loss(lp, old, adv, m, policy_loss="cispo", cispo_cap=0.0)
    with pytest.raises(ValueError, match="policy_loss must be one of"):
        grpo_loss(lp, old, adv, m, policy_loss="ppo")
    with pytest.raises(ValueError, match="level must be 'token'"):
        grpo_loss(lp, old, adv, m, policy_loss="cispo", level="sequence")
    with pytest.raises(ValueError, match="dual_clip must be None"):
        grpo_loss(lp, old, adv, m, policy_loss="gmpo", dual_clip=3.0)
    with pytest.warns(UserWarning, match=r"cispo_cap = 0.28 < 1 .*did you mean 1 \+ 0.28"):
        grpo_loss(lp, old, adv, m, policy_loss="cispo", cispo_cap=0.28)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        grpo_loss(lp, old, adv, m, policy_loss="cispo", cispo_cap=1.0)      # a cap of 1 is legal and silent
    with pytest.raises(ValueError, match="sapo_tau_neg"):
        GRPOConfig.preset("sapo", sapo_tau_neg=0.0)
    with pytest.raises(ValueError, match="rollout_is_min"):
        GRPOConfig.preset("grpo", rollout_is="token_mask", rollout_is_min=3.0, rollout_is_max=2.0)
    with pytest.raises(ValueError, match="sampler_temperature"):
        GRPOConfig.preset("grpo", sampler_temperature=0.0)


# -- the sampler / trainer correction ----------------------------------------------------------
def _trl_is(old, sampler, mask, mode, cmax, cmin):
    """TRL 1.16's vllm importance-sampling ratio, written out from its documented rule."""
    d = (old - sampler) * mask
    if mode.startswith("sequence"):
        d = d.sum(-1, keepdim=True)
    r = torch.exp(d)
    if mode.endswith("truncate"):
        return torch.clamp(r, min=cmin, max=cmax).expand_as(old)
    lo = -math.inf if cmin is None else cmin
    hi = math.inf if cmax is None else cmax
    return r.masked_fill((r < lo) | (r > hi), 0.0).expand_as(old)


@pytest.mark.parametrize("mode", ["token_truncate", "token_mask", "sequence_truncate", "sequence_mask"])
@pytest.mark.parametrize("bounds", [(3.0, None), (1.2, 0.8), (None, 0.9)])
def test_rollout_is_weights_are_trls(mode, bounds):
    cmax, cmin = bounds
    if cmax is None and mode.endswith("truncate") and cmin is None:
        pytest.skip("no bound")
    old, sampler, _, mask = _batch(3, spread=0.2)
    got = rollout_is_weights(old, sampler, mask, mode, clip_max=cmax, clip_min=cmin)
    want = _trl_is(old, sampler, mask, mode, cmax, cmin) * mask
    torch.testing.assert_close(got, want)
    if mode.endswith("mask") and cmin is not None:
        assert (got[mask > 0] == 0).any() and (got[mask > 0] > 0).any()     # some tokens masked, some kept


def test_is_weight_multiplies_the_policy_term_before_the_kl():
    lp, old, adv, m = _batch(1)
    ref = lp.detach() + 0.1
    w = torch.full_like(lp, 0.5)
    a = grpo_loss(lp, old, adv, m, ref_logp=ref, beta=0.1, is_weight=w)
    b = grpo_loss(lp, old, adv, m, ref_logp=ref, beta=0.1)
    assert float(a.pg_loss) == pytest.approx(0.5 * float(b.pg_loss))
    assert float(a.loss) == pytest.approx(0.5 * float(b.pg_loss) + 0.1 * float(b.kl))


def test_mismatch_stats_numbers():
    lp = torch.log(torch.tensor([[0.5, 0.25, 0.9]]))
    s = mismatch_stats(lp, lp, torch.ones(1, 3))
    assert s == {"abs_logp": 0.0, "kl": 0.0, "ratio_max": 1.0, "ratio_min": 1.0, "clip_frac": 0.0}
    sampler = torch.log(torch.tensor([[0.25, 0.25, 0.9]]))                    # token 0: π_train/π_sampler = 2
    s = mismatch_stats(lp, sampler, torch.ones(1, 3))
    assert s["ratio_max"] == pytest.approx(2.0) and s["clip_frac"] == pytest.approx(1 / 3)
    assert s["abs_logp"] == pytest.approx(math.log(2) / 3)
    assert s["kl"] == pytest.approx((2 - math.log(2) - 1) / 3)                # k3 with u = 2 on one token of 3
    assert np.isnan(mismatch_stats(lp, lp, torch.zeros(1, 3))["kl"])
