"""grpo_lab.kl_toy: exact KL facts on a categorical toy (seed 000 §3, eq. 5) and the two KL placements."""
import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grpo_lab import advantages, kl_toy, losses


def _probs(z):
    p = np.exp(z - z.max())
    return p / p.sum()


@given(st.integers(2, 12), st.floats(0, 3), st.integers(0, 50))
def test_k1_k3_unbiased_k3_nonnegative(K, shift, seed):
    z, z_ref = kl_toy.toy_logits(K, shift, seed)
    kl = kl_toy.exact_kl(z, z_ref)
    mo = kl_toy.estimator_moments(z, z_ref)
    assert mo["k1"].mean == pytest.approx(kl, abs=1e-12)
    assert mo["k3"].mean == pytest.approx(kl, abs=1e-12)
    assert abs(mo["k3"].bias) < 1e-12
    assert (kl_toy.estimator_values(z, z_ref)["k3"] >= 0).all()
    assert (kl_toy.estimator_values(z, z_ref)["k2"] >= 0).all()


def test_exact_kl_by_hand():
    z, z_ref = np.log([0.5, 0.5]), np.log([0.9, 0.1])
    assert kl_toy.exact_kl(z, z_ref) == pytest.approx(0.5 * np.log(0.5 / 0.9) + 0.5 * np.log(0.5 / 0.1))
    assert kl_toy.exact_kl(z, z_ref, "reverse") == pytest.approx(0.9 * np.log(0.9 / 0.5) + 0.1 * np.log(0.1 / 0.5))
    # u = π_ref/π_θ per token; k3 = u − log u − 1
    k3 = kl_toy.estimator_values(z, z_ref)["k3"]
    np.testing.assert_allclose(k3, [1.8 - np.log(1.8) - 1, 0.2 - np.log(0.2) - 1])


def test_equal_policies_everything_zero():
    z, z_ref = kl_toy.toy_logits(8, 0.0, 3)
    assert kl_toy.exact_kl(z, z_ref) == 0.0
    for v in kl_toy.estimator_values(z, z_ref).values():
        assert np.abs(v).max() == 0.0
    for v in kl_toy.expected_grads(z, z_ref).values():
        assert np.abs(v).max() < 1e-15


def test_k2_is_biased_and_k1_has_the_largest_variance():
    z, z_ref = kl_toy.toy_logits(8, 2.0, 0)
    mo = kl_toy.estimator_moments(z, z_ref)
    assert abs(mo["k2"].bias) > 1e-3
    near = kl_toy.estimator_moments(*kl_toy.toy_logits(8, 1.0, 0))
    assert near["k1"].var > 4 * near["k3"].var             # close policies: k3 far less noisy than k1
    assert mo["k3"].var > mo["k1"].var                     # far apart, k3's advantage can vanish
    assert mo["k1"].rmse(10) == pytest.approx(np.sqrt(mo["k1"].var / 10))
    assert mo["k2"].rmse(10**9) == pytest.approx(abs(mo["k2"].bias), rel=1e-3)   # the bias floor


def test_monte_carlo_matches_exact_moments():
    z, z_ref = kl_toy.toy_logits(8, 1.5, 1)
    mo = kl_toy.estimator_moments(z, z_ref)
    mc = kl_toy.mc_means(z, z_ref, n=20, reps=4000, seed=0)
    for k in kl_toy.KINDS:
        sd = np.sqrt(mo[k].var / 20)
        assert mc[k].shape == (4000,)
        assert mc[k].mean() == pytest.approx(mo[k].mean, abs=5 * sd / np.sqrt(4000))
        assert mc[k].std() == pytest.approx(sd, rel=0.08)


@pytest.mark.parametrize("seed", range(5))
def test_expected_gradients_identify_the_kl_direction(seed):
    z, z_ref = kl_toy.toy_logits(6, 1.2, seed)
    g = kl_toy.expected_grads(z, z_ref)
    np.testing.assert_allclose(g["k1"], 0.0, atol=1e-14)
    np.testing.assert_allclose(g["k2"], g["∇KL(π‖ref)"], atol=1e-13)
    np.testing.assert_allclose(g["k3"], g["∇KL(ref‖π)"], atol=1e-13)
    assert np.abs(g["∇KL(π‖ref)"] - g["∇KL(ref‖π)"]).max() > 1e-3       # really different directions
    # analytic forward-KL gradient w.r.t. logits: p ⊙ (log p/q − KL)
    p, q = _probs(z), _probs(z_ref)
    kl = kl_toy.exact_kl(z, z_ref)
    np.testing.assert_allclose(g["∇KL(π‖ref)"], p * (np.log(p / q) - kl), atol=1e-13)
    np.testing.assert_allclose(g["∇KL(ref‖π)"], p - q, atol=1e-13)


def test_kl_placement_form1_local_form2_whole_sequence():
    log_ratio, mask = kl_toy.toy_log_ratio(6, 12, drift=2.0, seed=0)
    rewards = np.array([1, 0, 0, 1, 0, 1.0])
    p = kl_toy.kl_placement(rewards, log_ratio, mask, beta=0.2)
    d1 = p.w_loss - p.w_no_kl
    d2 = p.w_reward - p.w_no_kl
    # form 1: the drifted token (0, 4) gets by far the largest extra push; KL-in-loss adds β·(1 − u)·c
    assert np.unravel_index(np.abs(d1).argmax(), d1.shape) == (0, 4)
    c = losses.token_weights(torch.as_tensor(mask), "seq-mean-token-mean").numpy()
    np.testing.assert_allclose(d1, 0.2 * (1 - np.exp(-log_ratio)) * c * mask, atol=1e-15)
    # form 2: the change is the same on every token of a response (a sequence-level scalar)
    for i in range(6):
        row = d2[i][mask[i] > 0]
        assert np.ptp(row) < 1e-15
    assert np.abs(d2[1:]).max() > 0                                      # group normalisation couples rows
    shaped = rewards - 0.2 * log_ratio.sum(1)
    np.testing.assert_allclose(p.shaped_rewards, shaped, atol=1e-14)
    np.testing.assert_allclose(p.adv_reward, advantages.group_advantages(shaped), atol=1e-14)


def test_kl_in_reward_revives_a_degenerate_group_at_unit_scale():
    log_ratio, mask = kl_toy.toy_log_ratio(6, 12, drift=1.0, seed=0)
    for beta in (0.01, 0.1, 1.0):
        p = kl_toy.kl_placement(np.ones(6), log_ratio, mask, beta)
        assert np.abs(p.adv_loss).max() == 0.0                          # 退化组: Â = 0 (form 1)
        assert 0.95 < p.adv_reward.std() <= 1.0                          # form 2: KL alone, ~unit scale (ε = 1e-4)
        assert p.adv_reward[0] < 0                                      # the drifted response is pushed down


def test_bad_input():
    with pytest.raises(ValueError, match="z_ref"):
        kl_toy.exact_kl([0.0, 1.0], [0.0, 1.0, 2.0])
    with pytest.raises(ValueError, match="direction"):
        kl_toy.exact_kl([0.0, 1.0], [0.0, 1.0], "sideways")
    with pytest.raises(ValueError, match="n"):
        kl_toy.mc_means([0.0, 1.0], [0.0, 1.0], 0)
    with pytest.raises(ValueError, match="rewards"):
        kl_toy.kl_placement(np.ones(3), *kl_toy.toy_log_ratio(6, 12), beta=0.1)
    with pytest.raises(ValueError, match="beta"):
        kl_toy.kl_placement(np.ones(6), *kl_toy.toy_log_ratio(6, 12), beta=-1)
