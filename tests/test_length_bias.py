"""grpo_lab.length_bias: per-token weights (eqs. 6/7, 1/C, GSPO), the length-drift toy, §4.4's table."""
import math
from dataclasses import replace

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grpo_lab import length_bias as lb
from grpo_lab.advantages import group_advantages
from grpo_lab.losses import aggregate, policy_loss_per_token

EPS = 1e-4  # group_advantages' default ε


# ---------------------------------------------------------------------------------
# independent reference: plain python loops, float64
# ---------------------------------------------------------------------------------
def loop_adv(rewards):
    G = len(rewards)
    mean = sum(rewards) / G
    if all(r == rewards[0] for r in rewards):
        return [0.0] * G
    std = math.sqrt(sum((r - mean) ** 2 for r in rewards) / G)
    return [(r - mean) / (std + EPS) for r in rewards]


def loop_weight(scheme, lengths, rewards, C):
    """∂loss/∂log π per token at ρ = 1, response by response."""
    adv = loop_adv(rewards)
    G, total = len(lengths), sum(lengths)
    out = []
    for a, L in zip(adv, lengths):
        if scheme in ("grpo", "gspo"):
            out.append(-a / (G * L))
        elif scheme == "dapo":
            out.append(-a / total)
        elif scheme == "dr_grpo":
            out.append(-a / (G * C))
        else:  # seq_sum
            out.append(-a / G)
    return out


groups = st.integers(2, 6).flatmap(lambda G: st.tuples(
    st.lists(st.integers(1, 30), min_size=G, max_size=G),
    st.lists(st.sampled_from([0.0, 0.25, 0.5, 1.0]), min_size=G, max_size=G)))


@given(groups, st.integers(0, 20))
def test_weights_match_loop_reference(group, extra):
    lengths, rewards = group
    C = max(lengths) + extra
    gw = lb.group_weights(lengths, rewards, schemes=tuple(lb.SCHEMES), C=C)
    for k, s in enumerate(gw.schemes):
        ref = loop_weight(s, lengths, rewards, C)
        np.testing.assert_allclose(gw.per_token[k], ref, rtol=1e-10, atol=1e-15)
        # on policy every token of a response carries the same weight (Â has no index t)
        np.testing.assert_allclose(gw.per_token_min[k], gw.per_token_max[k], rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(gw.total[k], np.array(ref) * np.array(lengths), rtol=1e-10, atol=1e-15)
        # padding carries nothing
        for i, L in enumerate(lengths):
            assert np.all(gw.weights[k, i, L:] == 0)


@given(st.integers(2, 6), st.integers(1, 30), st.integers(0, 30),
       st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=6, max_size=6))
def test_equal_lengths_make_the_modes_coincide_up_to_constants(G, length, extra, rewards):
    rewards = rewards[:G]
    C = length + extra
    gw = lb.group_weights([length] * G, rewards, schemes=tuple(lb.SCHEMES), C=C)
    w = dict(zip(gw.schemes, gw.per_token))
    np.testing.assert_allclose(w["dapo"], w["grpo"], rtol=1e-12, atol=1e-15)       # 1/(G·ℓ) both
    np.testing.assert_allclose(w["gspo"], w["grpo"], rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(w["dr_grpo"], w["grpo"] * length / C, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(w["seq_sum"], w["grpo"] * length, rtol=1e-12, atol=1e-15)


@given(groups)
def test_seq_mean_weight_is_inverse_to_length_and_token_mean_is_not(group):
    lengths, rewards = group
    gw = lb.group_weights(lengths, rewards, schemes=("grpo", "dapo", "dr_grpo"), C=40)
    adv, L = gw.adv, gw.lengths
    nz = adv != 0
    if not nz.any():
        assert np.all(gw.weights == 0)          # degenerate group: exactly no gradient, no NaN
        return
    grpo, dapo, dr = gw.per_token
    # eq. (6): per-token weight × |y_i| / Â_i is the same for every response (= −1/G) ...
    np.testing.assert_allclose(grpo[nz] * L[nz] / adv[nz], -1 / L.size, rtol=1e-10)
    # ... so every response receives the same total push |Â_i|/G whatever its length
    np.testing.assert_allclose(np.abs(gw.total[0])[nz], np.abs(adv[nz]) / L.size, rtol=1e-10)
    # eq. (7) and 1/C: the per-token weight / Â_i does not depend on the response's own length
    np.testing.assert_allclose(dapo[nz] / adv[nz], -1 / L.sum(), rtol=1e-10)
    np.testing.assert_allclose(dr[nz] / adv[nz], -1 / (L.size * 40), rtol=1e-10)
    # the pushes of a group cancel under eq. (6) (Σ Â_i = 0), not under eq. (7)
    assert abs(gw.total[0].sum()) < 1e-12


def test_seed_group_short_vs_long_wrong_answer():
    # rewards 1,1,0,0 -> Â = ±1 (seed 004 §三); wrong answers of 6 and 24 tokens
    gw = lb.group_weights([12, 12, 6, 24], [1, 1, 0, 0], schemes=lb.SHOWN, C=32)
    np.testing.assert_allclose(gw.adv, [1, 1, -1, -1], atol=1e-3)
    w = dict(zip(gw.schemes, gw.per_token))
    assert w["grpo"][3] / w["grpo"][2] == pytest.approx(6 / 24)            # diluted 1/|y_i|
    assert w["gspo"][3] / w["gspo"][2] == pytest.approx(6 / 24)
    assert w["dapo"][3] / w["dapo"][2] == pytest.approx(1.0)
    assert w["dr_grpo"][3] / w["dr_grpo"][2] == pytest.approx(1.0)
    assert w["grpo"][2] == pytest.approx(gw.adv[2] * -1 / (4 * 6))
    assert w["dapo"][2] == pytest.approx(-gw.adv[2] / 54)
    assert w["dr_grpo"][2] == pytest.approx(-gw.adv[2] / (4 * 32))
    assert np.all(w["grpo"][2:] > 0) and np.all(w["grpo"][:2] < 0)         # loss sign convention
    df = gw.frame()
    assert len(df) == 16 and set(df.scheme) == set(lb.SHOWN)


def test_off_policy_drift_varies_token_weights_except_under_gspo():
    gw = lb.group_weights([8, 8, 4, 16], [1, 0, 1, 0], schemes=("grpo", "gspo"), off_policy=0.3, seed=1)
    grpo, gspo = 0, 1
    assert np.any(gw.per_token_max[grpo] - gw.per_token_min[grpo] > 1e-6)   # ρ_{i,t} varies along t
    np.testing.assert_allclose(gw.per_token_min[gspo], gw.per_token_max[gspo], rtol=1e-12)  # s_i per response
    # off_policy = 0 recovers the on-policy weights
    a = lb.group_weights([8, 8, 4, 16], [1, 0, 1, 0], off_policy=0.0, seed=5).weights
    b = lb.group_weights([8, 8, 4, 16], [1, 0, 1, 0], off_policy=0.0, seed=9).weights
    np.testing.assert_array_equal(a, b)


def test_all_equal_rewards_give_exactly_zero_weights():
    gw = lb.group_weights([3, 9, 27], [1, 1, 1], schemes=tuple(lb.SCHEMES))
    assert np.all(gw.weights == 0) and np.all(np.isfinite(gw.per_token))


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(lengths=[2.5, 3], rewards=[0, 1]), ValueError, "lengths"),
    (dict(lengths=[0, 3], rewards=[0, 1]), ValueError, "lengths"),
    (dict(lengths=[[2, 3]], rewards=[0, 1]), ValueError, "lengths"),
    (dict(lengths=[2, 3, 4], rewards=[0, 1]), ValueError, "rewards"),
    (dict(lengths=[2], rewards=[1]), ValueError, "G >= 2"),
    (dict(lengths=[2, 3], rewards=[0, float("nan")]), ValueError, "rewards"),
    (dict(lengths=[2, 3], rewards=[0, 1], C=2), ValueError, "C"),
    (dict(lengths=[2, 3], rewards=[0, 1], schemes=("ppo",)), ValueError, "scheme"),
    (dict(lengths=[2, 3], rewards=[0, 1], schemes=()), ValueError, "schemes"),
    (dict(lengths=[2, 3], rewards=[0, 1], off_policy=-0.1), ValueError, "off_policy"),
    (dict(lengths=[2, 3], rewards=[0, 1], std="bessel"), ValueError, "std"),
    (dict(lengths="abc", rewards=[0, 1]), TypeError, "lengths"),
])
def test_group_weights_bad_input(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        lb.group_weights(**kwargs)


# ---------------------------------------------------------------------------------
# the toy length distribution
# ---------------------------------------------------------------------------------
@given(st.floats(0.01, 0.99), st.integers(3, 64))
def test_length_pmf_and_expected_length(p, max_len):
    pmf = lb.length_pmf(p, max_len)
    assert pmf.shape == (max_len + 1,) and pmf[:2].sum() == 0
    assert pmf.sum() == pytest.approx(1.0, abs=1e-12)
    assert (pmf * np.arange(max_len + 1)).sum() == pytest.approx(lb.expected_length(p, max_len), rel=1e-12)


@given(st.floats(0.01, 0.99), st.integers(3, 64))
def test_score_has_mean_zero_but_not_after_dividing_by_length(p, max_len):
    m = lb.length_score_moments(p, max_len)
    assert abs(m["mean_score"]) < 1e-12                  # 1/C: no push on the length in expectation
    assert m["mean_score_over_length"] > 0               # 1/|y|: short answers count more
    assert m["mean_inverse_length"] > m["inverse_mean_length"]   # Jensen: E[1/L] > 1/E[L]


def test_toy_logp_is_the_log_probability_of_the_sequence():
    q, T, p = 0.3, 6, 0.25
    s = torch.full((4,), math.log(p / (1 - p)), dtype=torch.float64)
    right = np.array([True, False, False, True])
    L = np.array([2, 4, 6, 6])
    stopped = np.array([True, True, True, False])
    logp, mask = lb.toy_logp(s, right, L, stopped, q=q, max_len=T)
    seq = (logp * mask).sum(-1).exp().numpy()
    pmf = lb.length_pmf(p, T)
    expect = [q * pmf[2], (1 - q) * pmf[4], (1 - q) * (1 - p) ** 4 * p, q * (1 - p) ** 5]
    np.testing.assert_allclose(seq, expect, rtol=1e-12)
    assert mask.sum(-1).tolist() == L.tolist() and np.all(logp.numpy()[mask.numpy() == 0] == 0)
    with pytest.raises(ValueError, match="lengths"):
        lb.toy_logp(s, right, np.array([2, 4, 7, 6]), stopped, q=q, max_len=T)


@pytest.mark.parametrize("scheme", ["grpo", "dapo", "dr_grpo", "gspo"])
def test_toy_gradient_matches_finite_differences(scheme):
    """The gradient the simulation follows: autograd through losses vs a central difference."""
    rng = np.random.default_rng(0)
    B, T = 8, 10
    right = rng.random(B) < 0.5
    right[:2] = [True, False]
    L = rng.integers(2, T + 1, B)
    stopped = L < T
    adv = torch.as_tensor(group_advantages(right.astype(float)))
    mode, level = lb.SCHEMES[scheme]["mode"], lb.SCHEMES[scheme]["level"]

    def loss_at(s_right, s_wrong, old=None):
        s = torch.where(torch.as_tensor(right), s_right, s_wrong)
        logp, mask = lb.toy_logp(s, right, L, stopped, q=0.5, max_len=T)
        old = logp.detach() if old is None else old
        return aggregate(policy_loss_per_token(logp, old, adv, mask, level=level), mask, mode, max_len=T), logp.detach()

    s0 = torch.tensor([-1.0, -2.0], dtype=torch.float64, requires_grad=True)
    loss, old = loss_at(s0[0], s0[1])
    (g,) = torch.autograd.grad(loss, s0)
    h = 1e-6
    for j in range(2):
        e = torch.zeros(2, dtype=torch.float64)
        e[j] = h
        lp = loss_at(*(s0.detach() + e), old=old)[0].item()
        lm = loss_at(*(s0.detach() - e), old=old)[0].item()
        assert g[j].item() == pytest.approx((lp - lm) / (2 * h), rel=1e-6, abs=1e-10)


# ---------------------------------------------------------------------------------
# the drift simulation
# ---------------------------------------------------------------------------------
SMALL = lb.DriftConfig(steps=60, seeds=3, n_groups=8)


@pytest.fixture(scope="module")
def small_runs():
    return lb.simulate_all(SMALL)


def test_wrong_answers_grow_under_seq_mean_only(small_runs):
    r = small_runs
    assert np.all(r["grpo"].wrong_change > 8)            # every seed: +8 tokens or more
    assert np.all(r["grpo"].right_change < -5)           # right answers get shorter
    assert np.all(np.abs(r["dr_grpo"].wrong_change) < 1.0)
    assert np.all(np.abs(r["dapo"].wrong_change) < 3.0)
    assert r["grpo"].wrong_change.min() > 5 * np.abs(r["dapo"].wrong_change).max()
    # GSPO's sequence ratio carries the same 1/|y_i| on policy: identical trajectory
    np.testing.assert_allclose(r["gspo"].len_wrong, r["grpo"].len_wrong, rtol=1e-9)


@pytest.mark.parametrize("change", [dict(q=0.2), dict(q=0.8), dict(G=4), dict(p_stop0=0.3, seed=7)])
def test_drift_direction_is_robust(change):
    res = lb.simulate_all(replace(SMALL, **change), schemes=("grpo", "dr_grpo"))
    assert np.all(res["grpo"].wrong_change > 5) and np.all(res["grpo"].right_change < 0)
    assert np.all(np.abs(res["dr_grpo"].wrong_change) < 1.0)


def test_shared_stop_probability_removes_the_drift():
    res = lb.simulate_all(replace(SMALL, length_policy="shared"), schemes=("grpo", "dr_grpo"))
    for r in res.values():
        np.testing.assert_array_equal(r.len_wrong, r.len_right)
        assert np.all(np.abs(r.wrong_change) < 2.0)


def test_token_mean_within_each_group_leaves_a_drift(small_runs):
    cfg = replace(SMALL, token_mean_over="group")
    per_group = lb.simulate_drift("dapo", cfg)            # eq. (7) over one group of G: own length matters
    assert np.all(per_group.wrong_change > 1.0) and np.all(per_group.right_change < 0)
    assert per_group.wrong_change.min() > np.abs(small_runs["dapo"].wrong_change).max()
    np.testing.assert_allclose(lb.simulate_drift("grpo", cfg).len_wrong, small_runs["grpo"].len_wrong, rtol=1e-12)
    n = lb.summary_numbers(drift=small_runs, dapo_group=per_group)
    assert n["dapo_group_wrong_drift"] == pytest.approx(per_group.wrong_change.mean())
    assert "over one group of 8" in lb.summary_table(drift=small_runs, dapo_group=per_group).iloc[4, 1]
    with pytest.raises(ValueError, match="dapo_group"):
        lb.summary_numbers(drift=small_runs, dapo_group=small_runs["dapo"])


def test_common_random_numbers_and_determinism(small_runs):
    a, b = small_runs["grpo"], small_runs["dr_grpo"]
    np.testing.assert_array_equal(a.sampled_wrong[:, 0], b.sampled_wrong[:, 0])   # same first batch
    np.testing.assert_array_equal(a.len_wrong[:, 0], b.len_wrong[:, 0])
    assert a.len_wrong[0, 0] == pytest.approx(lb.expected_length(SMALL.p_stop0, SMALL.max_len))
    again = lb._simulate("grpo", SMALL)                   # bypass the cache: same numbers
    np.testing.assert_array_equal(again.len_wrong, a.len_wrong)
    assert lb.simulate_drift("grpo", SMALL) is a          # cached
    with pytest.raises(ValueError):
        a.len_wrong[0, 0] = 1.0                           # read-only


def test_sampled_lengths_agree_with_the_exact_expectation(small_runs):
    r = small_runs["dr_grpo"]                              # nearly static policy
    err = np.nanmean(r.sampled_wrong - r.len_wrong[:, :-1])
    assert abs(err) < 0.5


@pytest.mark.parametrize("field, value, match", [
    ("q", 1.0, "q"), ("q", 0.0, "q"), ("G", 1, "G"), ("n_groups", 0, "n_groups"), ("steps", 0, "steps"),
    ("lr", 0.0, "lr"), ("max_len", 2, "max_len"), ("p_stop0", 1.0, "p_stop0"),
    ("length_policy", "free", "length_policy"), ("seeds", 0, "seeds"), ("seed", -1, "seed"),
    ("token_mean_over", "prompt", "token_mean_over"),
])
def test_drift_config_bad_input(field, value, match):
    with pytest.raises(ValueError, match=match):
        lb.simulate_drift("grpo", replace(SMALL, **{field: value}))


def test_simulate_drift_refuses_unknown_scheme_and_config():
    with pytest.raises(ValueError, match="scheme"):
        lb.simulate_drift("ppo", SMALL)
    with pytest.raises(TypeError, match="config"):
        lb.simulate_drift("grpo", {"steps": 3})


def test_single_thread_restores_the_thread_count():
    n = torch.get_num_threads()
    with lb.single_thread():
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == n


# ---------------------------------------------------------------------------------
# seed 000 §4.4 table, from computed numbers
# ---------------------------------------------------------------------------------
def test_summary_numbers_and_table(small_runs):
    n = lb.summary_numbers(drift=small_runs)
    L = np.array(lb.TABLE_EXAMPLE["lengths"])
    np.testing.assert_allclose(n["seq"]["normaliser"] / L.size, L, rtol=1e-9)     # own |y_i|
    np.testing.assert_allclose(n["batch"]["normaliser"], L.sum(), rtol=1e-9)      # Σ|y| = 54
    assert np.ptp(n["seq"]["total_push"]) < 1e-12                                 # each response equal
    assert n["seq"]["per_token_long_over_short"] == pytest.approx(6 / 24)
    assert n["batch"]["per_token_long_over_short"] == pytest.approx(1.0)
    assert n["batch"]["total_long_over_short"] == pytest.approx(24 / 6)
    assert n["batch"]["longest_share"] == pytest.approx(24 / 54, rel=1e-6)
    assert n["seq"]["longest_share"] == pytest.approx(0.25, rel=1e-6)
    assert n["seq"]["wrong_drift"] > 8 and abs(n["dr_grpo_wrong_drift"]) < 1
    table = lb.summary_table(drift=small_runs)
    assert table.shape == (5, 2)
    assert [i.split()[0] for i in table.index] == ["分母", "等权对象", "长回答的梯度", "副作用", "修复倾向"]
    seq, batch = table.iloc[:, 0], table.iloc[:, 1]
    assert "12, 12, 6, 24" in seq.iloc[0] and "54" in batch.iloc[0]
    assert "×0.25" in seq.iloc[2] and "6/24" in seq.iloc[2] and "×4.00" in batch.iloc[2]
    assert "44%" in batch.iloc[3] and f"{n['seq']['wrong_drift']:+.1f}" in seq.iloc[3]
    assert n["seq"]["right_drift"] < 0 and f"right answers {n['seq']['right_drift']:+.1f}" in seq.iloc[3]   # both drifts


def test_summary_needs_two_wrong_answers_of_different_length(small_runs):
    with pytest.raises(ValueError, match="two wrong answers"):
        lb.summary_numbers([5, 5, 5, 5], [1, 1, 0, 0], drift=small_runs)
    with pytest.raises(ValueError, match="drift"):
        lb.summary_numbers(drift={"grpo": small_runs["grpo"]})
