"""grpo_lab.bias: difficulty bias, degenerate groups, noise amplification, remedies."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from grpo_lab import advantages as A
from grpo_lab import bias as B


# --------------------------------------------------------------------------- seed numbers
def test_lone_success_gets_173_at_1_of_4_and_sqrt_g_minus_1():
    assert round(B.lone_success_advantage(4), 2) == 1.73
    assert round(B.lone_failure_advantage(4), 2) == -1.73
    for G in range(2, 33):
        assert B.lone_success_advantage(G, eps=0) == pytest.approx(np.sqrt(G - 1))
        assert B.lone_success_advantage(G, scale="none") == pytest.approx((G - 1) / G)
    assert round(B.lone_success_advantage(4, std="sample"), 2) == 1.5


def test_advantages_by_k_closed_form():
    G = 6
    a_pos, a_neg = B.advantages_by_k(G, eps=0)
    k = np.arange(1, G)
    q = k / G
    np.testing.assert_allclose(a_pos[1:G], np.sqrt((1 - q) / q))
    np.testing.assert_allclose(a_neg[1:G], -np.sqrt(q / (1 - q)))
    assert a_pos[0] == 0 and a_neg[G] == 0 and a_pos[G] == 0 and a_neg[0] == 0  # degenerate: exactly 0


def test_weight_by_k_closed_forms():
    G = 8
    q = np.arange(G + 1) / G
    np.testing.assert_allclose(B.weight_by_k(G, eps=0), 2 * G * np.sqrt(q * (1 - q)), atol=1e-12)
    np.testing.assert_allclose(B.weight_by_k(G, scale="none"), 2 * G * q * (1 - q), atol=1e-12)
    sq = B.weight_by_k(G, eps=0, weight="square")
    assert sq[0] == 0 and sq[G] == 0
    np.testing.assert_allclose(sq[1:G], G)  # Σ Â² = G for every informative group


def test_binomial_pmf_sums_to_one_and_endpoints():
    pmf = B.binomial_pmf(np.linspace(0, 1, 11), 5)
    np.testing.assert_allclose(pmf.sum(-1), 1.0)
    assert pmf[0, 0] == 1.0 and pmf[-1, -1] == 1.0
    assert pmf[5, 2] == pytest.approx(10 / 32)


# --------------------------------------------------------------------------- difficulty bias
def test_expected_weight_without_std_is_2_g_minus_1_pq():
    p = np.linspace(0, 1, 21)
    for G in (2, 4, 8, 16):
        np.testing.assert_allclose(B.expected_update_weight(p, G, scale="none"), 2 * (G - 1) * p * (1 - p), atol=1e-12)


def test_expected_weight_zero_at_p_0_and_1():
    for scale in B.GROUP_SCALES:
        assert B.expected_update_weight(0.0, 4, scale=scale) == 0.0
        assert B.expected_update_weight(1.0, 4, scale=scale) == 0.0


def test_difficulty_bias_std_moves_weight_to_the_extremes():
    for G in (4, 8, 16):
        for p in (0.02, 0.1, 0.25, 0.75, 0.9, 0.98):
            with_std, without = B.weight_ratio(p, G)
            assert with_std > without  # relative to p = 0.5, extremes keep more weight with std
    with_std, without = B.weight_ratio(0.1, 8)
    assert round(with_std, 2) == 0.45 and round(without, 2) == 0.36


def test_success_advantage_grows_as_p_goes_to_zero():
    G = 8
    p = np.linspace(0.001, 0.999, 200)
    s = B.success_advantage(p, G)
    assert np.all(np.diff(s) < 0)
    assert B.success_advantage(1e-5, G, eps=0) == pytest.approx(np.sqrt(G - 1), rel=1e-3)
    assert B.success_advantage(0.0, G) == pytest.approx(B.lone_success_advantage(G))
    assert B.success_advantage(1.0, G) == pytest.approx(B.advantages_by_k(G)[0][G - 1])
    f = B.failure_advantage(p, G)
    np.testing.assert_allclose(f, -B.success_advantage(1 - p, G))  # mirror symmetry
    # without std the lone success gets only (G − 1)/G: a small, bounded push
    assert B.success_advantage(0.001, G, scale="none") == pytest.approx((G - 1) / G, rel=1e-2)


def test_success_advantage_matches_direct_sampling():
    rng = np.random.default_rng(1)
    p, G = 0.2, 4
    r = (rng.random((20000, G)) < p).astype(float)
    adv = A.group_advantages(r)
    live = ~A.degenerate_mask(r)
    pos = adv[live][r[live] == 1]
    assert pos.mean() == pytest.approx(B.success_advantage(p, G), abs=4 * pos.std() / np.sqrt(pos.size))


@pytest.mark.parametrize("scale", B.GROUP_SCALES)
@pytest.mark.parametrize("G", [2, 4, 8])
def test_monte_carlo_agrees_with_enumeration(scale, G):
    p = np.array([0.05, 0.25, 0.5, 0.8])
    exact = B.expected_update_weight(p, G, scale=scale)
    mean, se = B.update_weight_mc(p, G, 6000, seed=3, scale=scale)
    assert np.all(np.abs(mean - exact) < 5 * se + 1e-12)


def test_difficulty_curves_bundle():
    c = B.difficulty_curves(4)
    assert c.p.shape == c.weight_std.shape == c.success_none.shape == (101,)
    np.testing.assert_allclose(c.p_informative, 1 - c.p**4 - (1 - c.p) ** 4)
    assert c.weight_std[50] == pytest.approx(B.expected_update_weight(0.5, 4))


@settings(max_examples=60, deadline=None)
@given(st.floats(0.0, 1.0), st.integers(2, 24))
def test_expected_weights_symmetric_in_p(p, G):
    for scale in B.GROUP_SCALES:
        assert B.expected_update_weight(p, G, scale=scale) == pytest.approx(
            B.expected_update_weight(1 - p, G, scale=scale), rel=1e-9, abs=1e-12)
    assert B.expected_update_weight(p, G, scale="group") >= B.expected_update_weight(p, G, scale="none") - 1e-12


# --------------------------------------------------------------------------- noise
def test_noise_amplification():
    sig = np.array([0.0, 1e-7, 1e-6, 1e-3, 1e-1])
    res = B.noise_amplification(sig, 8, eps=1e-4)
    assert res.rms_adv[0] == 0.0                  # exactly equal rewards: exactly 0
    assert res.rms_adv[1] < 0.01                  # σ ≪ ε: ε damps the noise
    assert res.rms_adv[-1] > 0.99                 # σ ≫ ε: pure noise gets O(1) advantages ...
    assert res.rms_adv[-1] == pytest.approx(res.signal_rms, rel=0.01)  # ... as large as real signal
    np.testing.assert_allclose(res.rms_adv[1:], res.rms_approx[1:], rtol=0.05)
    assert res.crossover == pytest.approx(1e-4 / B.expected_std_of_normals(8))
    # Dr. GRPO: no std, advantages stay O(σ)
    none = B.noise_amplification(sig, 8, scale="none")
    assert none.rms_adv[-1] < 0.1
    # larger ε pushes the crossover up
    assert B.noise_crossover_sigma(8, 1e-2) > B.noise_crossover_sigma(8, 1e-4)


def test_expected_std_of_normals_matches_sampling():
    z = np.random.default_rng(0).standard_normal((200_000, 5))
    assert B.expected_std_of_normals(5) == pytest.approx(z.std(1).mean(), rel=3e-3)
    assert B.expected_std_of_normals(5, "sample") == pytest.approx(z.std(1, ddof=1).mean(), rel=3e-3)


# --------------------------------------------------------------------------- remedies
def test_remedies_raise_informative_fraction_and_weight():
    res = B.simulate_remedies(K=128, G=8, seed=0)
    base = res["none"]
    assert set(res) == set(B.REMEDIES)
    assert res["dynamic"].informative == 1.0 and res["dynamic"].cost > 1.0
    for name in ("dynamic", "explore", "demos", "partial"):
        assert res[name].informative > base.informative, name
        assert res[name].weight > base.weight, name
    assert res["partial"].all_wrong == 0.0              # partial credit ranks all-wrong groups
    assert res["partial"].all_correct == base.all_correct  # but cannot help all-correct ones
    for o in res.values():
        assert o.rewards.shape == (128, 8) and o.p.shape == (128,)
        assert o.informative + o.all_correct + o.all_wrong == pytest.approx(1.0)


def test_plain_batch_matches_analytic_fraction():
    mix = B.PromptMix()
    fr = np.mean([B.simulate_remedies(K=256, G=8, mix=mix, seed=s, remedies=("none",))["none"].informative
                  for s in range(8)])
    assert fr == pytest.approx(B.informative_fraction(mix, 8), abs=0.03)
    expl = np.mean([B.simulate_remedies(K=256, G=8, mix=mix, seed=s, remedies=("explore",))["explore"].informative
                    for s in range(8)])
    assert expl == pytest.approx(B.informative_fraction(mix, 8, temperature=2.0), abs=0.03)


def test_dynamic_sampling_cost_matches_analytic():
    mix = B.PromptMix()
    costs = [B.simulate_remedies(K=128, G=8, mix=mix, seed=s, remedies=("dynamic",))["dynamic"].cost for s in range(10)]
    assert np.mean(costs) == pytest.approx(B.dynamic_sampling_cost(mix, 8), rel=0.08)


def test_remedies_deterministic_and_validated():
    a = B.simulate_remedies(K=16, G=4, seed=5)
    b = B.simulate_remedies(K=16, G=4, seed=5)
    assert all(np.array_equal(a[k].rewards, b[k].rewards) for k in a)
    with pytest.raises(ValueError, match="remedies"):
        B.simulate_remedies(remedies=("magic",))
    with pytest.raises(ValueError, match="temperature"):
        B.RemedyConfig(temperature=0)
    with pytest.raises(ValueError, match="partial"):
        B.RemedyConfig(partial=1.0)
    with pytest.raises(ValueError, match="spread"):
        B.PromptMix(spread=-1)


# --------------------------------------------------------------------------- bad input
def test_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="p must lie"):
        B.expected_update_weight(1.5, 4)
    with pytest.raises(ValueError, match="p must be finite"):
        B.expected_update_weight(np.nan, 4)
    with pytest.raises(ValueError, match="G must be >= 2"):
        B.expected_update_weight(0.5, 1)
    with pytest.raises(ValueError, match="scale"):
        B.expected_update_weight(0.5, 4, scale="batch")
    with pytest.raises(ValueError, match="weight"):
        B.weight_by_k(4, weight="l2")
    with pytest.raises(ValueError, match="eps"):
        B.expected_update_weight(0.5, 4, eps=-1)
    with pytest.raises(ValueError, match="sigma"):
        B.noise_amplification([-1.0], 4)
    with pytest.raises(ValueError, match="sigma must be finite"):
        B.noise_amplification([np.inf], 4)
    with pytest.raises(ValueError, match="n_groups"):
        B.update_weight_mc(0.5, 4, 0)
