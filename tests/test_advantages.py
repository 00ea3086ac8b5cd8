"""grpo_lab.advantages: seed numbers, conventions, properties, bad input."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from grpo_lab import advantages as A

# Rewards on a 1/8 grid are exact in floating point, so adding a constant or comparing
# for equality behaves as on paper.
grid = st.integers(-40, 40).map(lambda k: k / 8)


def groups(min_g=2, max_g=8, max_n=5):
    return st.tuples(st.integers(1, max_n), st.integers(min_g, max_g)).flatmap(
        lambda s: arrays(float, s, elements=grid))


# --------------------------------------------------------------------------- seeds
def test_seed_1100_gives_plus_minus_one():
    adv = A.group_advantages([1, 1, 0, 0])
    np.testing.assert_allclose(adv, [1, 1, -1, -1], atol=1e-3)
    np.testing.assert_allclose(A.group_advantages([1, 1, 0, 0], eps=0), [1, 1, -1, -1], rtol=0, atol=1e-15)


def test_seed_1000_hard_prompt_lucky_success():
    adv = A.group_advantages([1, 0, 0, 0])
    assert np.round(adv, 2).tolist() == [1.73, -0.58, -0.58, -0.58]
    np.testing.assert_allclose(A.group_advantages([1, 0, 0, 0], eps=0), [3**0.5, -(3**-0.5)] + [-(3**-0.5)] * 2)


def test_seed_1110_easy_prompt_slip():
    adv = A.group_advantages([1, 1, 1, 0])
    assert round(adv[3], 2) == -1.73
    assert np.round(adv[:3], 2).tolist() == [0.58] * 3


def test_seed_group_mean_and_std_of_1100():
    assert A.group_std([1, 1, 0, 0]) == 0.5  # σ_R = 0.5 in seed 004 §三
    assert np.allclose(A.group_advantages([1, 1, 0, 0], scale="none"), [0.5, 0.5, -0.5, -0.5])  # ±0.5


@pytest.mark.parametrize("scale", A.SCALES)
@pytest.mark.parametrize("std", A.STDS)
@pytest.mark.parametrize("eps", [0.0, 1e-6, 1e-4, 0.3])
@pytest.mark.parametrize("value", [0.0, 1.0, 0.1, -3.7, 1e9, 1e308, -1e308, 5e-324])
def test_all_equal_group_is_exactly_zero(scale, std, eps, value):
    adv = A.group_advantages(np.full((3, 5), value), scale=scale, std=std, eps=eps)
    assert adv.dtype == np.float64 and np.all(adv == 0.0)
    assert np.all(A.rloo_advantages(np.full((2, 7), value)) == 0.0)


def test_degenerate_rows_zero_in_a_mixed_batch():
    r = np.array([[1, 1, 1, 1], [0, 0, 0, 0], [1, 0, 0, 0], [0.1, 0.1, 0.1, 0.1]])
    for scale in A.SCALES:
        adv = A.group_advantages(r, scale=scale)
        assert np.all(adv[[0, 1, 3]] == 0.0)
        assert np.all(adv[2] != 0.0)
    assert A.degenerate_mask(r).tolist() == [True, True, False, True]


def test_sample_std_variant_0866():
    adv = A.group_advantages([1, 1, 0, 0], std="sample")
    assert np.round(adv, 3).tolist() == [0.866, 0.866, -0.866, -0.866]
    np.testing.assert_allclose(A.group_advantages([1, 1, 0, 0], std="sample", eps=0), np.sqrt(3) / 2 * np.array([1, 1, -1, -1]))
    assert A.group_std([1, 1, 0, 0], std="sample") == pytest.approx(1 / np.sqrt(3))
    assert round(A.group_advantages([1, 0, 0, 0], std="sample")[0], 2) == 1.5


def test_dr_grpo_scale_none_is_centred_rewards():
    r = np.array([[1, 0, 0, 0], [1, 1, 1, 0]])
    np.testing.assert_array_equal(A.group_advantages(r, scale="none"), r - r.mean(1, keepdims=True))


def test_batch_scale_uses_batch_std_and_group_mean():
    r = np.array([[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 1]], float)
    adv = A.group_advantages(r, scale="batch", eps=0)
    np.testing.assert_allclose(adv, (r - r.mean(1, keepdims=True)) / r.std())
    adv_s = A.group_advantages(r, scale="batch", std="sample", eps=0)
    np.testing.assert_allclose(adv_s, (r - r.mean(1, keepdims=True)) / r.std(ddof=1))
    # a single group: batch std == group std
    np.testing.assert_allclose(A.group_advantages(r[:1], scale="batch"), A.group_advantages(r[:1]))


def test_eps_sits_in_the_denominator():
    assert A.group_advantages([1, 1, 0, 0], eps=0.5)[0] == pytest.approx(0.5 / (0.5 + 0.5))


def test_one_d_in_one_d_out_and_group_of_one_without_std():
    assert A.group_advantages([1.0, 0.0]).shape == (2,)
    assert A.group_advantages([[1.0, 0.0]]).shape == (1, 2)
    assert A.group_advantages([3.0], scale="none").tolist() == [0.0]


def test_rloo_numbers():
    np.testing.assert_allclose(A.rloo_advantages([1, 0, 0, 0]), [1, -1 / 3, -1 / 3, -1 / 3])
    np.testing.assert_allclose(A.rloo_advantages([[1, 1, 0, 0]]), [[2 / 3, 2 / 3, -2 / 3, -2 / 3]])


# --------------------------------------------------------------------------- flat helper
def test_flat_helper_matches_2d():
    r = np.array([1, 0, 0, 0, 1, 1, 0, 0, 1, 1, 1, 1.0])
    out = A.advantages_from_flat(r, 4)
    np.testing.assert_array_equal(out, A.group_advantages(r.reshape(3, 4)).ravel())
    np.testing.assert_array_equal(A.advantages_from_flat(r, 4, estimator="rloo"), A.rloo_advantages(r.reshape(3, 4)).ravel())
    np.testing.assert_array_equal(A.advantages_from_flat(r, 4, scale="none", std="sample"),
                                  A.group_advantages(r.reshape(3, 4), scale="none").ravel())


def test_flat_helper_torch_in_torch_out():
    torch = pytest.importorskip("torch")
    r = torch.tensor([1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 1.0, 1.0])
    out = A.advantages_from_flat(r, 4)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.float32 and out.shape == (8,)
    assert torch.all(out[4:] == 0)
    assert round(float(out[0]), 2) == 1.73
    out_i = A.advantages_from_flat(torch.tensor([1, 0, 1, 1]), 2)
    assert out_i.dtype == torch.float32
    np.testing.assert_allclose(A.group_advantages(torch.tensor([[1.0, 0.0]])), [[1.0, -1.0]], atol=1e-3)


def test_flat_helper_bad_input():
    with pytest.raises(ValueError, match="group_size"):
        A.advantages_from_flat([1, 0, 1], 2)
    with pytest.raises(ValueError, match="group_size"):
        A.advantages_from_flat([1, 0], 0)
    with pytest.raises(TypeError, match="group_size"):
        A.advantages_from_flat([1, 0], 1.5)
    with pytest.raises(ValueError, match="estimator"):
        A.advantages_from_flat([1, 0], 2, estimator="ppo")
    with pytest.raises(ValueError, match="rewards"):
        A.advantages_from_flat(np.ones((2, 2)), 2)


# --------------------------------------------------------------------------- degenerate stats
def test_degenerate_stats_fractions():
    r = np.array([[1, 1, 1], [1, 1, 1], [0, 0, 0], [1, 0, 0], [0.5, 0.5, 0.5], [0, 1, 1], [0, 0, 0], [1, 1, 0]])
    s = A.degenerate_stats(r)
    assert (s.n_groups, s.all_correct, s.all_wrong, s.other_constant, s.informative) == (8, 0.25, 0.25, 0.125, 0.375)
    assert s.degenerate == 0.625 and isinstance(s.informative, float)
    with pytest.raises(ValueError, match="correct and wrong"):
        A.degenerate_stats(r, correct=1, wrong=1)


def test_p_degenerate_formula_and_expected_informative():
    assert A.p_degenerate(0.5, 4) == pytest.approx(2 / 16)
    assert A.p_degenerate(0.0, 8) == 1.0 and A.p_degenerate(1.0, 8) == 1.0
    assert A.p_all_correct(0.9, 4) == pytest.approx(0.9**4)
    assert A.p_all_wrong(0.1, 4) == pytest.approx(0.9**4)
    p = np.linspace(0, 1, 11)
    np.testing.assert_allclose(A.p_degenerate(p, 3), p**3 + (1 - p) ** 3)
    assert A.expected_informative(0.25, 4, 100) == pytest.approx(100 * (1 - 0.25**4 - 0.75**4))
    assert A.expected_informative([0.25, 0.5, 1.0], 4) == pytest.approx(2 - 0.25**4 - 0.75**4 - 2 / 16)
    with pytest.raises(ValueError, match="n_prompts"):
        A.expected_informative([0.2, 0.3], 4, 3)
    with pytest.raises(ValueError, match="p must lie"):
        A.p_degenerate(1.2, 4)
    with pytest.raises(ValueError, match="G must be"):
        A.p_degenerate(0.5, 0)


def test_p_degenerate_matches_sampling():
    rng = np.random.default_rng(0)
    p, G, n = 0.2, 4, 40_000
    r = (rng.random((n, G)) < p).astype(float)
    s = A.degenerate_stats(r)
    se = np.sqrt(A.p_degenerate(p, G) * (1 - A.p_degenerate(p, G)) / n)
    assert abs(s.degenerate - A.p_degenerate(p, G)) < 5 * se
    assert abs(s.all_wrong - A.p_all_wrong(p, G)) < 5 * se


# --------------------------------------------------------------------------- properties
@settings(max_examples=150, deadline=None)
@given(groups(), st.sampled_from(A.SCALES), st.sampled_from(A.STDS), st.sampled_from([0.0, 1e-4, 0.5]))
def test_rows_sum_to_zero(r, scale, std, eps):
    adv = A.group_advantages(r, scale=scale, std=std, eps=eps)
    assert adv.shape == r.shape and np.all(np.isfinite(adv))
    np.testing.assert_allclose(adv.sum(axis=1), 0.0, atol=1e-9 * max(1.0, np.abs(adv).max()))


@settings(max_examples=150, deadline=None)
@given(groups(), grid, st.sampled_from(A.SCALES), st.sampled_from(A.STDS), st.sampled_from([0.0, 1e-4, 0.5]))
def test_invariant_to_adding_a_constant(r, c, scale, std, eps):
    np.testing.assert_allclose(A.group_advantages(r + c, scale=scale, std=std, eps=eps),
                               A.group_advantages(r, scale=scale, std=std, eps=eps), atol=1e-9)
    np.testing.assert_allclose(A.rloo_advantages(r + c), A.rloo_advantages(r), atol=1e-9)


@settings(max_examples=150, deadline=None)
@given(groups(), st.floats(0.01, 100.0), st.sampled_from(["group", "batch"]), st.sampled_from(A.STDS))
def test_std_scaling_removes_the_reward_scale(r, a, scale, std):
    np.testing.assert_allclose(A.group_advantages(a * r, scale=scale, std=std, eps=0),
                               A.group_advantages(r, scale=scale, std=std, eps=0), rtol=1e-9, atol=1e-9)
    # negative scale flips the ranking, hence the sign
    np.testing.assert_allclose(A.group_advantages(-a * r, scale=scale, std=std, eps=0),
                               -A.group_advantages(r, scale=scale, std=std, eps=0), rtol=1e-9, atol=1e-9)


@settings(max_examples=100, deadline=None)
@given(groups(), st.floats(0.01, 100.0))
def test_without_std_advantages_scale_with_the_rewards(r, a):
    np.testing.assert_allclose(A.group_advantages(a * r, scale="none"), a * A.group_advantages(r, scale="none"),
                               rtol=1e-9, atol=1e-9)


@settings(max_examples=150, deadline=None)
@given(groups())
def test_rloo_identity(r):
    G = r.shape[1]
    loo = A.rloo_advantages(r)
    direct = np.array([[r[n, i] - np.delete(r[n], i).mean() for i in range(G)] for n in range(r.shape[0])])
    np.testing.assert_allclose(loo, direct, atol=1e-12)
    np.testing.assert_allclose(loo, G / (G - 1) * A.group_advantages(r, scale="none"), atol=1e-12)


@settings(max_examples=150, deadline=None)
@given(groups())
def test_population_std_gives_unit_mean_square_and_sample_is_a_fixed_factor(r):
    G = r.shape[1]
    pop = A.group_advantages(r, eps=0)
    samp = A.group_advantages(r, std="sample", eps=0)
    live = ~A.degenerate_mask(r)
    np.testing.assert_allclose((pop[live] ** 2).sum(axis=1), G)  # Σ Â² = G for every informative group
    np.testing.assert_allclose(samp, pop * np.sqrt((G - 1) / G), atol=1e-12)
    assert np.all(np.sign(pop) == np.sign(r - r.mean(1, keepdims=True)) * live[:, None])


@settings(max_examples=100, deadline=None)
@given(groups(max_n=1), st.permutations(range(8)))
def test_permutation_equivariant(r, perm):
    perm = [i for i in perm if i < r.shape[1]]
    np.testing.assert_allclose(A.group_advantages(r[:, perm]), A.group_advantages(r)[:, perm])


# --------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("fn", [A.group_advantages, A.rloo_advantages, A.degenerate_mask, A.group_std])
@pytest.mark.parametrize("bad", [[1.0, np.nan], [[1.0, np.inf], [0.0, 0.0]], [-np.inf, 0.0]])
def test_non_finite_rewards_rejected(fn, bad):
    with pytest.raises(ValueError, match="rewards must be finite"):
        fn(bad)


@pytest.mark.parametrize("bad", [[], np.zeros((0, 4)), np.zeros((3, 0))])
def test_empty_rejected(bad):
    with pytest.raises(ValueError, match="rewards"):
        A.group_advantages(bad)


@pytest.mark.parametrize("bad", [np.zeros((2, 2, 2)), 1.0])
def test_wrong_ndim_rejected(bad):
    with pytest.raises(ValueError, match="rewards must be 1-d or 2-d"):
        A.group_advantages(bad)


def test_non_numeric_rejected():
    with pytest.raises(TypeError, match="rewards"):
        A.group_advantages("1,0,0,0")
    with pytest.raises(TypeError, match="rewards"):
        A.group_advantages([["a", "b"]])


@pytest.mark.parametrize("scale", ["group", "batch"])
def test_group_of_one_needs_no_std(scale):
    with pytest.raises(ValueError, match="G must be >= 2"):
        A.group_advantages([[1.0], [0.0]], scale=scale)
    with pytest.raises(ValueError, match="G >= 2"):
        A.rloo_advantages([[1.0], [0.0]])
    with pytest.raises(ValueError, match="G >= 2"):
        A.group_std([1.0], std="sample")


def test_unknown_modes_and_negative_eps():
    with pytest.raises(ValueError, match="scale must be one of"):
        A.group_advantages([1, 0], scale="Group")
    with pytest.raises(ValueError, match="std must be one of"):
        A.group_advantages([1, 0], std="bessel")
    with pytest.raises(ValueError, match="eps must be >= 0"):
        A.group_advantages([1, 0], eps=-1e-4)
    with pytest.raises(ValueError, match="eps must be finite"):
        A.group_advantages([1, 0], eps=np.nan)
    with pytest.raises(TypeError, match="eps"):
        A.group_advantages([1, 0], eps="small")


def test_extreme_magnitudes_raise_instead_of_nan():
    with pytest.raises(ValueError, match="rewards: advantages overflowed"):
        A.group_advantages([1e308, -1e308, 1e308])
    with pytest.raises(ValueError, match="rewards: advantages overflowed"):
        A.group_advantages([[1e200, 0.0], [0.0, 1.0]], scale="batch")
    with pytest.raises(ValueError, match="rewards: leave-one-out"):
        A.rloo_advantages([1e308, 1e308, -1e308])
    np.testing.assert_allclose(A.group_advantages([1e100, -1e100]), [1, -1])


# -- issue 16: inputs that used to give a wrong or a confusing answer --------------------------
def test_masked_arrays_are_refused_not_silently_unmasked():
    r = np.ma.masked_array([1.0, 0.0, 0.0, 5.0], mask=[0, 0, 0, 1])
    for f in (A.group_advantages, A.rloo_advantages, A.group_std):
        with pytest.raises(ValueError, match="rewards is a masked array"):
            f(r)
    with pytest.raises(ValueError, match="masked"):
        A.advantages_from_flat(r, 4)


@pytest.mark.parametrize("bad", [["1", "0", "0", "0"], np.array(["1", "0"]), [b"1", b"0"], [None, 1.0]])
def test_strings_and_objects_are_refused(bad):
    with pytest.raises(TypeError, match="rewards must be an array of numbers"):
        A.group_advantages(bad)


def test_none_rewards_say_so():
    with pytest.raises(TypeError, match="rewards must be an array of numbers, got None"):
        A.group_advantages(None)
    with pytest.raises(TypeError, match="got None"):
        A.advantages_from_flat(None, 4)


@pytest.mark.parametrize("kw", [{"eps": True}, {"eps": "1e-4"}, {"eps": None}])
def test_eps_must_be_a_real_number(kw):
    with pytest.raises(TypeError, match="eps"):
        A.group_advantages([1.0, 0.0], **kw)


@pytest.mark.parametrize("estimator, scale", [("rloo", "group"), ("grpo", "none")])
def test_float16_overflow_is_an_error_not_inf(estimator, scale):
    import torch

    r = torch.tensor([65000.0, -65000.0, -65000.0, -65000.0], dtype=torch.float16)
    with pytest.raises(ValueError, match="float16"):
        A.advantages_from_flat(r, 4, estimator=estimator, scale=scale)
    ok = A.advantages_from_flat(r.float(), 4, estimator=estimator, scale=scale)
    assert torch.isfinite(ok).all()


def test_bool_group_size_refused():
    with pytest.raises(TypeError, match="group_size"):
        A.advantages_from_flat([1.0, 0.0], True)
