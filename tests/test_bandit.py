"""grpo_lab.bandit against the seed's numbers (004 §二) and exact enumeration."""
import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_lab import bandit

thetas = st.floats(-4, 4, allow_nan=False)
baselines = st.floats(-3, 3, allow_nan=False)


def test_seed_probability():
    assert bandit.prob_a(-1.1) == pytest.approx(0.25, abs=1e-3)
    assert bandit.prob_a(0.0) == 0.5


def test_seed_no_baseline_numbers():
    assert bandit.grad_estimate(-1.1, "A", 1.0) == pytest.approx(0.75, abs=5e-3)
    assert bandit.grad_estimate(-1.1, "B", 0.0) == 0.0


def test_seed_constant_baseline_numbers():
    assert round(bandit.grad_estimate(-1.1, "A", 1.0, 0.5), 3) == 0.375
    assert round(bandit.grad_estimate(-1.1, "B", 0.0, 0.5), 3) == 0.125


def test_seed_running_mean_target():
    theta = math.log(0.25 / 0.75)  # p = 0.25 exactly, as the seed rounds it
    mean, _ = bandit.estimator_stats(theta, 0.0)
    assert round(mean, 3) == 0.188 and mean == pytest.approx(0.1875)
    mean, _ = bandit.estimator_stats(-1.1, 0.0)
    assert mean == pytest.approx(0.188, abs=1e-3)


@pytest.mark.parametrize("b", [0.0, 0.5])
def test_running_mean_converges_to_p_times_1_minus_p(b):
    est = bandit.sample_estimates(-1.1, 50_000, baseline=b, seed=3)
    running = bandit.running_mean(est)
    p = bandit.prob_a(-1.1)
    sem = est.std() / math.sqrt(est.size)
    assert abs(running[-1] - p * (1 - p)) < 4 * sem + 1e-12
    assert running.shape == est.shape


@given(thetas, baselines)
def test_baseline_leaves_expected_gradient_unchanged(theta, b):
    mean, _ = bandit.estimator_stats(theta, b)
    p = bandit.prob_a(theta)
    assert mean == pytest.approx(p * (1 - p), abs=1e-12)
    assert bandit.baseline_term_mean(theta, b) == pytest.approx(0.0, abs=1e-12)


@given(thetas, baselines)
def test_variance_formula_and_optimum(theta, b):
    p = bandit.prob_a(theta)
    _, var = bandit.estimator_stats(theta, b)
    assert var == pytest.approx(p * (1 - p) * (1 - p - b) ** 2, abs=1e-12)
    b_star = bandit.optimal_baseline(theta)
    assert b_star == pytest.approx(1 - p, abs=1e-12)
    assert bandit.estimator_stats(theta, b_star)[1] <= var + 1e-15
    assert bandit.estimator_stats(theta, b_star)[1] == pytest.approx(0.0, abs=1e-15)


def test_estimator_stats_match_sampling():
    est = bandit.sample_estimates(0.4, 200_000, baseline=0.3, seed=0)
    mean, var = bandit.estimator_stats(0.4, 0.3)
    assert est.mean() == pytest.approx(mean, abs=4 * math.sqrt(var / est.size))
    assert est.var() == pytest.approx(var, rel=0.02)


@given(thetas, st.integers(2, 9))
def test_group_baseline_bias_and_loo(theta, G):
    p = bandit.prob_a(theta)
    m, _ = bandit.group_baseline_stats(theta, G)
    m_loo, _ = bandit.group_baseline_stats(theta, G, leave_one_out=True)
    assert m == pytest.approx((G - 1) / G * p * (1 - p), abs=1e-12)
    assert m_loo == pytest.approx(p * (1 - p), abs=1e-12)


def test_group_baseline_stats_against_brute_force():
    theta, G = -0.7, 3
    p = bandit.prob_a(theta)
    rng = np.random.default_rng(0)
    a = rng.random((400_000, G)) < p                       # (S, G)
    r = a.astype(float)
    score = np.where(a, 1 - p, -p)
    est = ((r - r.mean(1, keepdims=True)) * score)[:, 0]
    m, v = bandit.group_baseline_stats(theta, G)
    assert est.mean() == pytest.approx(m, abs=3e-3)
    assert est.var() == pytest.approx(v, rel=0.02)


def test_training_improves_and_optimal_has_no_spread():
    runs = bandit.train_ladder(bandit.TrainConfig(G=2, steps=40, seeds=16))
    assert set(runs) == set(bandit.LADDER)
    for rung, p in runs.items():
        assert p.shape == (16, 41)
        assert p[:, -1].mean() > p[:, 0].mean() + 0.3, rung
    assert runs["optimal"].std(axis=0).max() < 1e-12
    assert runs["group"][:, -1].mean() < runs["loo"][:, -1].mean()


def test_training_is_deterministic():
    cfg = bandit.TrainConfig(steps=10, seeds=3, seed=5)
    np.testing.assert_array_equal(bandit.train("none", cfg), bandit.train("none", cfg))


@pytest.mark.parametrize("call, match", [
    (lambda: bandit.grad_estimate(0.0, "C", 1.0), "action"),
    (lambda: bandit.prob_a(float("nan")), "theta"),
    (lambda: bandit.prob_a("x"), "theta"),
    (lambda: bandit.estimator_stats(0.0, float("inf")), "baseline"),
    (lambda: bandit.grad_estimate(0.0, "A", float("nan")), "reward"),
    (lambda: bandit.group_baseline_stats(0.0, 1), "G"),
    (lambda: bandit.train("median"), "rung"),
    (lambda: bandit.train("group", bandit.TrainConfig(G=1)), "G"),
    (lambda: bandit.train("none", bandit.TrainConfig(lr=0.0)), "lr"),
    (lambda: bandit.sample_estimates(0.0, 0), "n"),
    (lambda: bandit.running_mean([1.0, float("nan")]), "x"),
])
def test_bad_input_names_the_argument(call, match):
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# -- issue 16: bad input -------------------------------------------------------------------------
@pytest.mark.parametrize("theta", ["0.5", b"0.5", True, None])
def test_theta_must_be_a_real_number(theta):
    with pytest.raises(TypeError, match="theta"):
        bandit.prob_a(theta)


def test_extreme_theta_saturates_without_a_warning():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bandit.prob_a(1e300) == 1.0 and bandit.prob_a(-1e300) == 0.0
        assert bandit.grad_log_prob(-1e300, "A") == 1.0


@pytest.mark.parametrize("kw, name", [({"ema": 2.0}, "ema"), ({"value_lr": -1.0}, "value_lr"),
                                       ({"constant": "0.5"}, "constant"), ({"lr": "0.5"}, "lr"),
                                       ({"seed": -1}, "seed"), ({"theta0": True}, "theta0")])
def test_train_config_fields_are_checked(kw, name):
    with pytest.raises((TypeError, ValueError), match=name):
        bandit.train("constant", bandit.TrainConfig(**kw))


def test_baseline_string_refused():
    with pytest.raises(TypeError, match="baseline"):
        bandit.grad_estimate(0.0, "A", 1.0, baseline="0.5")


@given(st.floats(-4, 4), st.floats(-3, 3))
def test_softmax_bandit_with_two_arms_is_the_bandit(theta, b):
    m, v = bandit.softmax_bandit_stats(theta, (1, 0), (1, 0), b)
    m2, v2 = bandit.estimator_stats(theta, b)
    assert m == pytest.approx(m2, abs=1e-12) and v == pytest.approx(v2, abs=1e-12)
    assert bandit.softmax_optimal_baseline(theta, (1, 0), (1, 0)) == pytest.approx(bandit.optimal_baseline(theta))


@given(st.floats(-3, 3), st.floats(-3, 3))
def test_softmax_bandit_mean_ignores_b_and_b_star_minimises(theta, b):
    phi, r = (1.0, 0.0, -1.0), (1.0, 0.0, 0.0)
    m0, _ = bandit.softmax_bandit_stats(theta, phi, r, 0.0)
    m, v = bandit.softmax_bandit_stats(theta, phi, r, b)
    assert m == pytest.approx(m0, abs=1e-12)                                  # E[b ∇log π] = 0
    b_star = bandit.softmax_optimal_baseline(theta, phi, r)
    assert bandit.softmax_bandit_stats(theta, phi, r, b_star)[1] <= v + 1e-12


def test_three_arms_no_constant_baseline_reaches_zero_variance():
    """Issue 24 item 6: zero variance at b* needs one parameter, deterministic rewards and two arms."""
    phi, r = (1, 0, -1), (1, 0, 0)
    b_star = bandit.softmax_optimal_baseline(bandit.THETA0, phi, r)
    assert bandit.softmax_bandit_stats(bandit.THETA0, phi, r, b_star)[1] > 0.08
    assert bandit.estimator_stats(bandit.THETA0, bandit.optimal_baseline(bandit.THETA0))[1] < 1e-20   # two arms: zero
    with pytest.raises(ValueError, match="rewards"):
        bandit.softmax_bandit_stats(0.0, (1, 0, -1), (1, 0), 0.0)


def test_a_bad_constant_baseline_raises_the_variance():
    assert bandit.estimator_stats(bandit.THETA0, 2.0)[1] > 2 * bandit.estimator_stats(bandit.THETA0, 0.0)[1]


# --- the averaged update of one step (notebook 01 §5: leave-one-out pays off from G = 3) ---------------
def _update_brute_force(theta, G, rung, constant=0.5):
    """(mean, var) of (1/G) Σ_i (R_i − b_i) s_i by enumerating all 2^G arm sequences."""
    import itertools
    p = bandit.prob_a(theta)
    mean = second = 0.0
    for arms in itertools.product((True, False), repeat=G):
        a = np.array(arms)
        r = a.astype(float)
        s = np.where(a, 1 - p, -p)
        b = {"none": np.zeros(G), "constant": np.full(G, constant), "group": np.full(G, r.mean()),
             "loo": (r.sum() - r) / max(G - 1, 1), "optimal": np.full(G, 1 - p)}[rung]
        w = np.prod(np.where(a, p, 1 - p))
        u = ((r - b) * s).mean()
        mean += w * u
        second += w * u * u
    return mean, second - mean**2


@pytest.mark.parametrize("rung", bandit.UPDATE_RUNGS)
@pytest.mark.parametrize("theta, G", [(-1.1, 2), (-1.1, 3), (0.4, 4), (-2.0, 5)])
def test_update_stats_is_exact(theta, G, rung):
    m, v = bandit.update_stats(theta, G, rung)
    bm, bv = _update_brute_force(theta, G, rung)
    assert m == pytest.approx(bm, abs=1e-12) and v == pytest.approx(bv, abs=1e-12)


def test_update_stats_lecture_notes_setting():
    th = bandit.THETA0
    v = {(G, r): bandit.update_stats(th, G, r)[1] for G in (2, 3) for r in ("none", "loo")}
    assert (round(v[2, "loo"], 3), round(v[2, "none"], 3)) == (0.059, 0.053)     # G = 2: leave-one-out is noisier
    assert (round(v[3, "loo"], 3), round(v[3, "none"], 3)) == (0.027, 0.035)     # G = 3: it pays off
    assert bandit.update_stats(th, 1, "none")[1] == pytest.approx(bandit.estimator_stats(th, 0.0)[1])
    assert bandit.update_stats(th, 2, "group")[0] == pytest.approx(bandit.group_baseline_stats(th, 2)[0])
    # G = 2, leave-one-out: each sample's baseline is the other's reward, so the update is 1/2 or 0
    p = bandit.prob_a(th)
    assert v[2, "loo"] == pytest.approx(0.25 * 2 * p * (1 - p) * (1 - 2 * p * (1 - p)))
    with pytest.raises(ValueError, match="rung"):
        bandit.update_stats(th, 2, "running")
    with pytest.raises(ValueError, match="G"):
        bandit.update_stats(th, 1, "loo")


@pytest.mark.parametrize("rung, G", [("none", 2), ("loo", 2), ("loo", 3), ("group", 3), ("constant", 2)])
def test_update_stats_matches_one_step_of_train(rung, G):
    """Monte Carlo: the first step of bandit.train, θ₁ − θ₀ = lr·u, has update_stats' mean and variance."""
    cfg = bandit.TrainConfig(G=G, steps=1, seeds=200_000, lr=1.0, seed=3)
    p1 = bandit.train(rung, cfg)[:, 1]
    u = np.log(p1 / (1 - p1)) - cfg.theta0
    m, v = bandit.update_stats(cfg.theta0, G, rung, constant=cfg.constant)
    assert u.mean() == pytest.approx(m, abs=4 * math.sqrt(v / u.size) + 1e-9)
    assert u.var() == pytest.approx(v, rel=0.02)
