"""grpo_lab.guess_number against the seed (004 §一, L9 p.27), brute-force enumeration and sampling.

Monte-Carlo tolerance: every sampled mean must lie within 4 standard errors of the exact value
(a two-sided 4σ band fails by chance with probability 6e-5; the seeds are fixed anyway).
"""
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_lab import guess_number as gn

Z = 4.0   # MC tolerance in standard errors


# ---------------------------------------------------------------------------------
# The seed's example
# ---------------------------------------------------------------------------------
def test_seed_example_exact_values():
    av = gn.action_values({9, 10, 11}, 2)
    assert set(av) == {9, 10, 11}
    assert av[10].q == pytest.approx(1.0, abs=1e-15)
    assert av[9].q == pytest.approx(2 / 3) and av[11].q == pytest.approx(2 / 3)
    assert all(v.v == pytest.approx(7 / 9) for v in av.values())
    assert av[11].a < 0 < av[10].a                     # same 0 reward when wrong, opposite signs
    assert av[10].a == pytest.approx(2 / 9) and av[11].a == pytest.approx(-1 / 9) and av[9].a == pytest.approx(-1 / 9)
    q, v, a = av[10]                                   # a NamedTuple: fields q, v, a
    assert a == pytest.approx(q - v)


def test_seed_state_from_hints_in_both_wordings():
    assert gn.candidates_from_hints(20, gn.SEED_HINTS) == gn.SEED_CANDIDATES == (9, 10, 11)
    assert gn.candidates_from_hints(20, "8 higher, 12 lower") == (9, 10, 11)
    assert gn.candidates_from_hints(20, "8: too small; 12: too big") == (9, 10, 11)
    # the lecture notes' wording (L9 p.27): 偏大 = the secret is bigger than the guess, 偏小 = smaller
    assert gn.candidates_from_hints(20, "8 / 偏大、12 / 偏小") == (9, 10, 11)
    assert gn.parse_hints("8 偏大, 12 偏小") == [(8, "higher"), (12, "lower")]
    with pytest.raises(ValueError):                     # the opposite reading fits no number
        gn.candidates_from_hints(20, "8 / 偏小、12 / 偏大")
    state = gn.state_from_hints(20, 4, "8 higher, 12 lower")
    assert state == gn.State((9, 10, 11), 2) and state.tries_left == gn.SEED_TRIES


def test_seed_one_step_tree_explains_the_signs():
    tree = {b.guess: b for b in gn.one_step_tree({9, 10, 11}, 2)}
    # guessing 11 and failing leaves two candidates and one try ...
    assert tree[11].lower == (9, 10) and tree[11].higher == () and tree[11].v_lower == pytest.approx(0.5)
    # ... guessing 10 and failing leaves one candidate and one try
    assert tree[10].lower == (9,) and tree[10].higher == (11,)
    assert tree[10].v_lower == tree[10].v_higher == 1.0
    for b in tree.values():
        assert b.p_correct == pytest.approx(1 / 3) and b.pi == pytest.approx(1 / 3)
        assert b.q == pytest.approx(b.p_correct + len(b.lower) / 3 * b.v_lower + len(b.higher) / 3 * b.v_higher)


def test_seed_signs_hold_for_every_policy_that_is_not_bisection():
    for policy, theta in (("uniform", None), ("softmax", -1.0), ("softmax", 0.5)):
        av = gn.action_values({9, 10, 11}, 2, policy, theta=theta)
        assert av[11].a < 0 < av[10].a
    av = gn.action_values({9, 10, 11}, 2, "bisection")   # bisection already guesses 10: A(10) = 0
    assert av[10].a == 0 and av[11].a == pytest.approx(-1 / 3) and av[10].v == 1.0


# ---------------------------------------------------------------------------------
# Brute force: enumerate secrets and every sequence of guesses on actual number sets
# ---------------------------------------------------------------------------------
def bf_policy(cands, policy, theta=0.0):
    cands = sorted(cands)
    m = len(cands)
    if policy == "uniform":
        return {c: Fraction(1, m) for c in cands}
    if policy == "bisection":
        return {cands[(m - 1) // 2]: Fraction(1)}
    w = [math.exp(theta * -abs(i - (m - 1) / 2)) for i in range(m)]
    return {c: wi / sum(w) for c, wi in zip(cands, w)}


def bf_return(cands, k, secret, policy, theta, cost):
    """Expected return from a set, k tries, a *known* secret, following the policy."""
    if k == 0:
        return 0
    total = 0
    for a, p in bf_policy(cands, policy, theta).items():
        if a == secret:
            total += p * (1 - cost)
        else:
            left = [c for c in cands if (c > a) == (secret > a) and c != a]
            total += p * (-cost + bf_return(left, k - 1, secret, policy, theta, cost))
    return total


def bf_q(cands, k, a, policy, theta=0.0, cost=0):
    """Q(h, a): average over the secret (uniform on the candidates) of the return after guessing a."""
    out = 0
    for secret in cands:
        if a == secret:
            out += 1 - cost
        else:
            left = [c for c in cands if (c > a) == (secret > a) and c != a]
            out += -cost + bf_return(left, k - 1, secret, policy, theta, cost)
    return Fraction(out) / len(cands) if isinstance(out, (int, Fraction)) else out / len(cands)


SETS = [(1,), (1, 2), (3, 4, 5), (1, 2, 3, 4), tuple(range(1, 8)), (1, 5, 9, 20), (-3, 0, 2, 7, 11, 40)]


@pytest.mark.parametrize("cands", SETS, ids=str)
@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("policy", ["uniform", "bisection"])
def test_exact_values_match_brute_force_exactly(cands, k, policy):
    av = gn.action_values(set(cands), k, policy)
    pi = bf_policy(cands, policy)
    q_bf = {a: bf_q(cands, k, a, policy) for a in cands}
    v_bf = sum(pi.get(a, 0) * q_bf[a] for a in cands)
    for a in cands:
        assert isinstance(q_bf[a], Fraction)
        assert av[a].q == pytest.approx(float(q_bf[a]), abs=1e-12)
        assert av[a].v == pytest.approx(float(v_bf), abs=1e-12)


@pytest.mark.parametrize("cands", SETS[2:], ids=str)
@pytest.mark.parametrize("theta,cost", [(0.7, 0.0), (-1.2, 0.1), (2.5, 0.05)])
def test_softmax_and_cost_match_brute_force(cands, theta, cost):
    k = 3
    av = gn.action_values(cands, k, "softmax", theta=theta, cost=cost)
    pi = bf_policy(cands, "softmax", theta)
    q_bf = {a: bf_q(cands, k, a, "softmax", theta, cost) for a in cands}
    v_bf = sum(pi[a] * q_bf[a] for a in cands)
    for a in cands:
        assert av[a].q == pytest.approx(q_bf[a], abs=1e-12)
        assert av[a].a == pytest.approx(q_bf[a] - v_bf, abs=1e-12)


def test_bisection_success_is_the_binary_tree_bound():
    for N in (1, 2, 3, 7, 8, 20, 100):
        for k in range(1, 8):
            assert gn.success_probability(N, k, "bisection") == pytest.approx(min(1.0, (2**k - 1) / N))


# ---------------------------------------------------------------------------------
# Properties
# ---------------------------------------------------------------------------------
policies = st.sampled_from(["uniform", "bisection", "softmax"])
thetas = st.floats(-4, 6, allow_nan=False)


@given(st.integers(1, 40), st.integers(1, 8), policies, thetas, st.floats(0, 0.3))
def test_advantages_average_to_zero_under_the_policy(m, k, policy, theta, cost):
    av = gn.action_values(range(m), k, policy, theta=theta if policy == "softmax" else None, cost=cost)
    pi = gn.policy_probs(range(m), policy, theta=theta if policy == "softmax" else None)
    assert sum(pi.values()) == pytest.approx(1.0)
    assert sum(pi[a] * av[a].a for a in av) == pytest.approx(0.0, abs=1e-12)   # Σ_a π(a|h) A(h, a) = 0
    assert all(math.isfinite(x) for v in av.values() for x in v)


@given(st.integers(1, 40), st.integers(1, 8), policies, thetas)
def test_values_are_probabilities_and_more_tries_never_hurt(m, k, policy, theta):
    theta = theta if policy == "softmax" else None
    v = gn.value(range(m), k, policy, theta=theta)
    assert 0 <= v <= 1 + 1e-12
    assert gn.value(range(m), k + 1, policy, theta=theta) >= v - 1e-12
    assert gn.value(range(m), k, "bisection") >= v - 1e-12                        # bisection is optimal
    assert v >= 1 / m - 1e-12                                                    # at least the first guess


@given(st.lists(st.integers(-1000, 1000), min_size=1, max_size=12, unique=True), st.integers(1, 4), policies)
def test_values_depend_only_on_ranks(cands, k, policy):
    a = gn.action_values(cands, k, policy)
    b = gn.action_values(range(len(cands)), k, policy)
    for c, r in zip(sorted(cands), range(len(cands))):
        assert a[c] == b[r]


@given(st.integers(1, 30), st.integers(1, 6), thetas)
def test_score_has_zero_mean_under_the_policy(m, k, theta):
    pol = gn.Policy("softmax", theta)
    P, S = pol.table(m), pol.score_table(m)
    np.testing.assert_allclose((P * S).sum(axis=1), 0.0, atol=1e-12)   # E_a[b ∇log π] = 0 (L9 p.29)
    np.testing.assert_allclose(P.sum(axis=1)[1:], 1.0)


@given(st.integers(2, 30), st.integers(1, 6), st.floats(-3, 4), st.floats(0, 0.2))
def test_exact_gradient_matches_finite_differences_and_the_pg_theorem(m, k, theta, cost):
    g = gn.policy_gradient(m, k, theta, cost=cost)
    h = 1e-5
    fd = (gn.value(range(m), k, "softmax", theta=theta + h, cost=cost)
          - gn.value(range(m), k, "softmax", theta=theta - h, cost=cost)) / (2 * h)
    assert g == pytest.approx(fd, abs=1e-6)
    pol = gn.Policy("softmax", theta)
    sol = gn.solve(pol, m, k, cost)
    D = gn.state_visits(pol, m, k)
    S = pol.score_table(m)
    pg = sum(D[kk, mm] * (sol.P[mm] * S[mm] * sol.A[kk, mm]).sum() for kk in range(1, k + 1) for mm in range(1, m + 1))
    assert g == pytest.approx(pg, abs=1e-10)


@given(st.integers(1, 30), st.integers(1, 6), policies)
def test_state_visits_are_probabilities(m, k, policy):
    pol = gn.make_policy(policy)
    D = gn.state_visits(pol, m, k)
    assert D.shape == (k + 1, m + 1) and D[k, m] == 1.0
    playing = D.sum(axis=1)[1:]                                  # P(still playing with j tries left)
    assert np.all(playing <= 1 + 1e-12) and np.all(np.diff(playing) >= -1e-12)
    # P(reach the next level) = 1 − P(correct now) = 1 − Σ_m' D[j, m']/m'
    for j in range(k, 1, -1):
        hit = sum(D[j, mm] / mm for mm in range(1, m + 1))
        assert D[j - 1].sum() == pytest.approx(D[j].sum() - hit, abs=1e-12)


@given(st.integers(2, 60), st.data())
def test_hint_history_of_a_real_game_keeps_the_secret(N, data):
    secret = data.draw(st.integers(1, N))
    guesses = data.draw(st.lists(st.integers(1, N).filter(lambda g: g != secret), max_size=5))
    hints = [(g, gn.feedback(secret, g)) for g in guesses]
    cands = gn.candidates_from_hints(N, hints)
    assert secret in cands
    text = ", ".join(f"{g} {w}" for g, w in hints)
    assert gn.candidates_from_hints(N, text) == cands


def test_softmax_interpolates_uniform_and_bisection():
    assert gn.success_probability(20, 3, "softmax", theta=0.0) == pytest.approx(gn.success_probability(20, 3))
    assert gn.success_probability(20, 3, "softmax", theta=40.0) == pytest.approx(0.35)
    J = gn.success_curve(20, 5, np.linspace(0, 4, 9))
    assert np.all(np.diff(J) > 0)                         # pushing toward the middle always helps here
    assert gn.make_policy("softmax").theta == 1.0 and gn.make_policy("uniform").theta == 0.0


def test_advantage_map_shape_and_mask():
    amap = gn.advantage_map("uniform", 6, 2)
    assert amap.shape == (6, 6)
    assert amap.mask[0, 1] and not amap.mask[5, 5]
    assert amap[2, 1] == pytest.approx(2 / 9) and amap[2, 0] == pytest.approx(-1 / 9)   # row m = 3: the seed


# ---------------------------------------------------------------------------------
# Monte-Carlo
# ---------------------------------------------------------------------------------
def test_monte_carlo_q_converges_to_exact_on_the_seed_state():
    mc = gn.mc_action_values({9, 10, 11}, 2, n=4000, seed=0)
    np.testing.assert_allclose(mc.q, [2 / 3, 1, 2 / 3])
    assert mc.v == pytest.approx(7 / 9)
    assert np.all(np.abs(mc.q_hat - mc.q) <= Z * mc.se_q + 1e-12)
    assert mc.q_hat[1] == 1.0 and mc.se_q[1] == 0.0        # guessing 10 always wins within 2 tries
    assert mc.a_hat[2] < 0 < mc.a_hat[1] and mc.a_hat[0] < 0
    err = mc.running_error()
    assert err.shape == (4000,) and err[-1] < 0.03 and err[-1] < err[:10].max()


@pytest.mark.parametrize("policy,theta", [("uniform", None), ("bisection", None), ("softmax", 1.5)])
def test_sampled_success_rate_matches_exact_value(policy, theta):
    ep = gn.sample_episodes(30, 4, policy, 20_000, theta=theta, seed=1)
    v = gn.value(range(30), 4, policy, theta=theta)
    se = math.sqrt(v * (1 - v) / 20_000)
    assert abs(ep.success.mean() - v) <= Z * se + 1e-12
    assert np.all(ep.rank < np.maximum(ep.size, 1)) and np.all(ep.alive[:, 0])
    assert np.all(ep.reward_to_go[:, 0] == ep.total_return)


def test_reward_to_go_differs_from_total_return_only_with_a_cost():
    ep0 = gn.sample_episodes(20, 4, n=500, seed=2)
    assert np.allclose(ep0.reward_to_go[ep0.alive], np.broadcast_to(ep0.total_return[:, None], ep0.alive.shape)[ep0.alive])
    ep = gn.sample_episodes(20, 4, n=500, cost=0.1, seed=2)
    past = ep.total_return[:, None] - ep.reward_to_go                     # rewards before step t
    steps = np.arange(4)[None, :]
    np.testing.assert_allclose(past[ep.alive], np.broadcast_to(-0.1 * steps, ep.alive.shape)[ep.alive], atol=1e-12)
    np.testing.assert_allclose(ep.total_return, ep.success - 0.1 * ep.alive.sum(axis=1))


@pytest.mark.parametrize("cost", [0.0, 0.1])
def test_every_estimator_is_unbiased_within_tolerance(cost):
    stats = gn.estimator_stats(20, 5, 0.5, n=20_000, cost=cost, seed=0)
    assert stats.exact == pytest.approx(gn.policy_gradient(20, 5, 0.5, cost=cost))
    assert np.all(np.abs(stats.bias) <= Z * stats.se), stats.as_dict()
    var = dict(zip(stats.names, stats.var))
    assert var[("total", "value")] < 0.7 * var[("total", "none")]          # the baseline cuts variance
    assert var[("to-go", "value")] == min(var.values())                   # reward-to-go + V: the lowest
    if cost == 0:                                                          # no rewards before the end
        assert var[("to-go", "none")] == pytest.approx(var[("total", "none")])
    else:
        assert var[("to-go", "value")] < var[("total", "value")]


def test_per_step_advantage_with_exact_v_is_unbiased_for_a():
    # Â_0 = G_0 − V(h_0) averaged over episodes that made a given first guess estimates A(h_0, a)
    ep = gn.sample_episodes(5, 3, "uniform", 40_000, cost=0.1, seed=3)
    sol = gn.solve(gn.Policy(), 5, 3, 0.1)
    adv = gn.per_step_advantages(ep, sol, "to-go", "value")
    for r in range(5):
        sel = ep.rank[:, 0] == r
        x = adv[sel, 0]
        assert abs(x.mean() - sol.A[3, 5, r]) <= Z * x.std() / math.sqrt(x.size)


# ---------------------------------------------------------------------------------
# Training
# ---------------------------------------------------------------------------------
def test_reinforce_learns_toward_bisection_faster_with_a_baseline():
    cfg = gn.TrainConfig(N=20, tries=5, lr=1.0, batch=4, steps=40, seeds=16, seed=0)
    runs = gn.train_estimators(cfg, [("total", "none"), ("to-go", "value")])
    plain, value = runs[("total", "none")], runs[("to-go", "value")]
    assert plain.J.shape == (16, 41) and plain.theta.shape == (16, 41)
    assert np.allclose(plain.J[:, 0], gn.success_probability(20, 5))      # θ0 = 0: uniform
    assert value.J[:, -1].mean() > plain.J[:, -1].mean() + 0.05           # learns faster on average
    assert value.J[:, 1:].std(axis=0).mean() < 0.6 * plain.J[:, 1:].std(axis=0).mean()   # lower spread
    assert value.grad_sd.mean() < plain.grad_sd.mean()
    assert value.theta[:, -1].mean() > 1.0                                 # toward bisection
    assert np.median(value.J[:, -1]) > 0.97 and np.median(value.J[:, -1]) > np.median(plain.J[:, -1])


@pytest.mark.parametrize("estimator", gn.PG_ESTIMATORS, ids=lambda e: "-".join(e))
def test_one_training_step_is_an_unbiased_gradient_step(estimator):
    # with lr = 1 and one step, θ1 − θ0 is the batch mean of the per-episode estimates
    cfg = gn.TrainConfig(N=12, tries=4, steps=1, batch=20_000, seeds=1, lr=1.0, theta0=0.3, cost=0.1, seed=4)
    run = gn.train(*estimator, config=cfg)
    step = run.theta[0, 1] - run.theta[0, 0]
    se = run.grad_sd[0, 0] / math.sqrt(cfg.batch)
    assert abs(step - gn.policy_gradient(12, 4, 0.3, cost=0.1)) <= Z * se


def test_training_uses_common_random_numbers_and_is_deterministic():
    cfg = gn.TrainConfig(steps=5, seeds=3, batch=2)
    a = gn.train("to-go", "value", cfg)
    b = gn.train_estimators(cfg, [("total", "none"), ("to-go", "value")])[("to-go", "value")]
    np.testing.assert_array_equal(a.theta, b.theta)


def test_success_curve_matches_solve():
    th = np.array([-1.0, 0.0, 2.0])
    J = gn.success_curve(12, 3, th, cost=0.05)
    for t, j in zip(th, J):
        assert j == pytest.approx(gn.value(range(12), 3, "softmax", theta=t, cost=0.05))


# ---------------------------------------------------------------------------------
# Bad input
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("call,exc,match", [
    (lambda: gn.action_values(set(), 2), ValueError, "candidates must not be empty"),
    (lambda: gn.action_values([], 2), ValueError, "candidates"),
    (lambda: gn.action_values({9, 10, 11}, 0), ValueError, "tries_left must be >= 1"),
    (lambda: gn.action_values({9, 10, 11}, 2, "greedy"), ValueError, "policy must be one of"),
    (lambda: gn.action_values({9, 10, 11}, 2, 3), TypeError, "policy"),
    (lambda: gn.action_values({9, 10, 11}, 2, "uniform", theta=1.0), ValueError, "theta only applies"),
    (lambda: gn.action_values([9, 9, 10], 2), ValueError, "distinct"),
    (lambda: gn.action_values([9.5, 10], 2), TypeError, "candidates must hold integers"),
    (lambda: gn.action_values("9 10", 2), TypeError, "candidates"),
    (lambda: gn.action_values(7, 2), TypeError, "candidates"),
    (lambda: gn.action_values({1, 2}, 1.5), TypeError, "tries_left"),
    (lambda: gn.action_values({1, 2}, 1, cost=-0.1), ValueError, "cost"),
    (lambda: gn.action_values({1, 2}, 1, "softmax", theta=float("nan")), ValueError, "theta"),
    (lambda: gn.action_values(range(gn.MAX_N + 1), 2), ValueError, "at most 200"),
    (lambda: gn.candidates_from_hints(20, "8 higher, 6 lower"), ValueError, "hints are inconsistent"),
    (lambda: gn.candidates_from_hints(20, [(8, "higher"), (8, "lower")]), ValueError, "inconsistent"),
    (lambda: gn.candidates_from_hints(20, "25 lower"), ValueError, "outside 1..20"),
    (lambda: gn.candidates_from_hints(20, "8 sideways"), ValueError, "feedback for guess 8"),
    (lambda: gn.candidates_from_hints(20, "8 correct"), ValueError, "game is over"),
    (lambda: gn.candidates_from_hints(20, "eight higher"), ValueError, "cannot read"),
    (lambda: gn.candidates_from_hints(20, [(8,)]), TypeError, "pairs"),
    (lambda: gn.candidates_from_hints(0, ""), ValueError, "N must be >= 1"),
    (lambda: gn.state_from_hints(20, 2, "8 higher, 12 lower"), ValueError, "no try is left"),
    (lambda: gn.state_from_hints(20, 0), ValueError, "tries must be >= 1"),
    (lambda: gn.sample_episodes(5, 2, n=0), ValueError, "n must be >= 1"),
    (lambda: gn.sample_episodes(5, 2, n=3, first_rank=5), ValueError, "first_rank"),
    (lambda: gn.mc_action_values(set(), 2), ValueError, "candidates"),
    (lambda: gn.Policy("uniform").score_table(3), ValueError, "softmax"),
    (lambda: gn.train("total", "oracle"), ValueError, "baseline must be one of"),
    (lambda: gn.train("future", "none"), ValueError, "returns must be one of"),
    (lambda: gn.train_estimators(gn.TrainConfig(lr=0.0)), ValueError, "lr"),
    (lambda: gn.train_estimators(gn.TrainConfig(), []), ValueError, "estimators"),
    (lambda: gn.estimator_stats(0, 2), ValueError, "m must be >= 1"),
])
def test_bad_input_names_the_argument(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_next_state_and_feedback():
    s = gn.State((9, 10, 11), 2)
    assert gn.feedback(10, 11) == "lower" and gn.feedback(10, 9) == "higher" and gn.feedback(10, 10) == "correct"
    assert gn.next_state(s, 11, "lower") == gn.State((9, 10), 1)
    assert gn.next_state(s, 10, "correct") is None
    assert gn.next_state(gn.State((9, 10), 1), 9, "higher") is None      # no tries left
