"""grpo_lab.family: one frozen batch scored by every variant, and GAE vs GRPO's broadcast scalar."""
import numpy as np
import pandas as pd
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from grpo_lab import family
from grpo_lab.lm import preset_runs
from grpo_lab.advantages import group_advantages
from grpo_lab.losses import token_grad_weights

SEED_GROUPS = np.array([[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 0]], dtype=float)


def _wide(name, column="adv"):
    return family.score_batch(name).wide(column)


# ---------------------------------------------------------------------------------
# Batches
# ---------------------------------------------------------------------------------
def test_named_batches_share_one_shape_and_are_deterministic():
    for name in family.BATCHES:
        a, b = family.make_batch(name), family.make_batch(name)
        assert (a.N, a.G, a.T, a.B) == (3, 4, 16, 12)
        for field in ("rewards", "lengths", "mask", "logp", "old_logp", "ref_logp"):
            np.testing.assert_array_equal(getattr(a, field), getattr(b, field))
            assert not getattr(a, field).flags.writeable
        np.testing.assert_array_equal(a.mask.sum(1), a.lengths.reshape(-1))
        assert np.all(a.logp[a.mask == 0] == 0) and np.all(a.old_logp[a.mask == 0] == 0)
        assert np.all(a.logp[a.mask > 0] < 0) and np.all(a.old_logp[a.mask > 0] < 0)


def test_on_policy_batches_have_ratio_exactly_one():
    for name in ("lecture-notes groups", "long wrong answers", "degenerate groups", "partial credit"):
        b = family.make_batch(name)
        np.testing.assert_array_equal(b.logp, b.old_logp)
    stale = family.make_batch("stale (off-policy)")
    assert np.any(stale.logp != stale.old_logp)


def test_seed_groups_batch_holds_the_seed_rewards():
    np.testing.assert_array_equal(family.make_batch("lecture-notes groups").rewards, SEED_GROUPS)


def test_synthetic_batch_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="lengths must have the shape"):
        family.synthetic_batch([[1, 0]], [[3, 4, 5]])
    with pytest.raises(ValueError, match="T must be"):
        family.synthetic_batch([[1, 0]], [[3, 9]], T=5)
    with pytest.raises(ValueError, match="lengths must be integers"):
        family.synthetic_batch([[1, 0]], [[3, 0]])
    with pytest.raises(ValueError, match="lengths must be integers"):
        family.synthetic_batch([[1, 0]], [[3, 2.5]])
    with pytest.raises(ValueError, match="drift"):
        family.synthetic_batch([[1, 0]], [[3, 2]], drift=-1)
    with pytest.raises(ValueError, match="outlier_rate"):
        family.synthetic_batch([[1, 0]], [[3, 2]], outlier_rate=2)
    with pytest.raises(ValueError, match="outlier_size"):
        family.synthetic_batch([[1, 0]], [[3, 2]], outlier_size=(0.5, 0.1))
    with pytest.raises(ValueError, match="rewards"):
        family.synthetic_batch([[1, np.nan]], [[3, 2]])
    with pytest.raises(ValueError, match="name"):
        family.make_batch("no such batch")


# ---------------------------------------------------------------------------------
# Variants and scoring
# ---------------------------------------------------------------------------------
def test_variants_are_defined_by_the_four_axes():
    v = family.VARIANTS
    assert list(v) == ["GRPO", "Dr. GRPO", "DAPO", "GSPO", "RLOO"]
    assert (v["GRPO"].mode, v["GRPO"].level, v["GRPO"].eps_low, v["GRPO"].eps_high) == \
        ("seq-mean-token-mean", "token", 0.2, 0.2)
    assert v["Dr. GRPO"].scale == "none" and v["Dr. GRPO"].mode == "seq-mean-token-sum-norm"
    assert v["DAPO"].mode == "token-mean" and v["DAPO"].eps_high > v["DAPO"].eps_low and v["DAPO"].drop_degenerate
    assert v["GSPO"].level == "sequence" and v["GSPO"].eps_high < 1e-3
    assert v["RLOO"].estimator == "rloo"
    with pytest.raises(ValueError, match="level"):
        family.Variant("x", level="word")
    with pytest.raises(ValueError, match="mode"):
        family.Variant("x", mode="mean")
    with pytest.raises(ValueError, match="eps_low"):
        family.Variant("x", eps_low=-0.1)
    assert family.Variant("x", mode="dr_grpo").mode == "seq-mean-token-sum-norm"   # TRL alias


def test_seed_numbers_in_the_frozen_batch():
    adv = _wide("lecture-notes groups")
    grpo = adv["GRPO"].to_numpy().reshape(3, 4)
    np.testing.assert_allclose(grpo[0], [1, 1, -1, -1], atol=1e-3)                # 1,1,0,0 -> ±1
    np.testing.assert_allclose(np.round(grpo[1], 2), [1.73, -0.58, -0.58, -0.58])  # 1,0,0,0
    assert round(grpo[2, 3], 2) == -1.73                                         # 1,1,1,0: the wrong one
    for v in ("DAPO", "GSPO"):                       # same estimator: only loss-side axes differ
        np.testing.assert_array_equal(adv[v], adv["GRPO"])
    np.testing.assert_allclose(adv["Dr. GRPO"].to_numpy().reshape(3, 4),
                               SEED_GROUPS - SEED_GROUPS.mean(1, keepdims=True))
    np.testing.assert_allclose(adv["RLOO"], 4 / 3 * adv["Dr. GRPO"])            # G/(G−1)·(r − mean)


def test_on_policy_gradient_weights_follow_the_aggregation_formulas():
    s = family.score_batch("lecture-notes groups")
    b = s.batch
    lens = b.lengths.reshape(-1).astype(float)
    adv = s.wide("adv")
    m = b.mask > 0
    expected = {
        "GRPO": adv["GRPO"].to_numpy() / (b.B * lens),          # eq. (6): Â/(B·|y_i|)
        "GSPO": adv["GSPO"].to_numpy() / (b.B * lens),          # s_i = 1 on-policy: same as GRPO
        "RLOO": adv["RLOO"].to_numpy() / (b.B * lens),
        "DAPO": adv["DAPO"].to_numpy() / lens.sum(),            # eq. (7): Â/Σ|y| (no degenerate group here)
        "Dr. GRPO": adv["Dr. GRPO"].to_numpy() / (b.B * b.T),   # 1/(B·C), C = T = 16
    }
    for v, per_token in expected.items():
        push = s.push(v)
        np.testing.assert_allclose(push[m], np.broadcast_to(per_token[:, None], push.shape)[m], atol=1e-15)
        assert np.all(push[~m] == 0)
        # the broadcast: every token of an answer is pushed by the same amount (seed 000 §2.3)
        for row in range(b.B):
            assert np.ptp(push[row, m[row]]) < 1e-15


def test_loss_values_on_policy():
    s = family.score_batch("lecture-notes groups")
    b = s.batch
    for v in ("GRPO", "GSPO", "RLOO"):                  # Σ_group Â = 0 and every answer weighs 1/B
        assert abs(s.summary.loc[v, "loss"]) < 1e-12
    lens = b.lengths.reshape(-1)
    adv = s.wide("adv")
    assert s.summary.loc["DAPO", "loss"] == pytest.approx(-(lens * adv["DAPO"]).sum() / lens.sum())
    assert s.summary.loc["Dr. GRPO", "loss"] == pytest.approx(-(lens * adv["Dr. GRPO"]).sum() / (b.B * b.T))
    assert (s.summary[["clip_frac_low", "clip_frac_high"]] == 0).all().all()
    assert (s.summary["ratio_mean"] == 1).all()


def test_long_wrong_answers_show_the_length_bias_of_eq6():
    ppt = _wide("long wrong answers", "push_per_token")
    # prompt 1 (index 0): answers 3 (4 tokens) and 4 (16 tokens) are both wrong, same Â = −1
    short, long_ = ppt.loc[(0, 2)], ppt.loc[(0, 3)]
    assert (short["length"], long_["length"]) == (4, 16)
    assert short["GRPO"] / long_["GRPO"] == pytest.approx(4.0)        # the long one is penalised 4× less per token
    for v in ("DAPO", "Dr. GRPO"):
        assert short[v] / long_[v] == pytest.approx(1.0)            # every token of a wrong answer weighs the same
    assert long_["GRPO"] < 0 and long_["DAPO"] < 0 and abs(long_["GRPO"]) < abs(long_["DAPO"])


def test_degenerate_groups_give_nothing_and_dapo_drops_them():
    s = family.score_batch("degenerate groups")
    r = s.responses
    deg = r["prompt"] < 2                                   # all-correct and all-wrong groups
    assert (r.loc[deg, "adv"] == 0).all() and (r.loc[deg, "push"] == 0).all()
    assert not r.loc[deg & (r["variant"] == "DAPO"), "kept"].any()
    assert r.loc[~deg | (r["variant"] != "DAPO"), "kept"].all()
    b = s.batch
    lens = b.lengths.reshape(-1).astype(float)
    mixed = np.arange(8, 12)
    adv = s.wide("adv").to_numpy()[:, 2:].astype(float)     # variant columns
    ppt = s.wide("push_per_token")
    # GRPO counts the 8 rows of degenerate groups in B' = 12; DAPO's denominator has only the mixed tokens
    np.testing.assert_allclose(ppt["GRPO"].to_numpy()[mixed], adv[mixed, 0] / (12 * lens[mixed]))
    np.testing.assert_allclose(ppt["DAPO"].to_numpy()[mixed], adv[mixed, 2] / lens[mixed].sum())


def test_stale_batch_clipping_differs_by_variant():
    s = family.score_batch("stale (off-policy)")
    S = s.summary
    assert S.loc["DAPO", "clip_frac_low"] == S.loc["GRPO", "clip_frac_low"]        # same ε_low
    assert 0 < S.loc["DAPO", "clip_frac_high"] < S.loc["GRPO", "clip_frac_high"]   # clip-higher
    b = s.batch
    m = b.mask > 0
    ratio = np.exp(b.logp - b.old_logp)
    adv = s.wide("adv")["GRPO"].to_numpy()[:, None] * np.ones_like(ratio)
    clipped = m & (((adv > 0) & (ratio > 1.2)) | ((adv < 0) & (ratio < 0.8)))
    assert clipped.any()
    assert np.all(s.weights["GRPO"][clipped] == 0) and np.all(s.weights["GRPO"][m & ~clipped] != 0)
    # GSPO clips whole answers: each row is all zero or has no zero token
    w = s.weights["GSPO"]
    zero_rows = [np.all(w[i, m[i]] == 0) for i in range(b.B)]
    assert all(np.all(w[i, m[i]] == 0) or np.all(w[i, m[i]] != 0) for i in range(b.B))
    assert 0 < sum(zero_rows) < b.B
    assert S.loc["GSPO", "clip_frac_low"] + S.loc["GSPO", "clip_frac_high"] > \
        S.loc["GRPO", "clip_frac_low"] + S.loc["GRPO", "clip_frac_high"]


def test_partial_credit_std_amplifies_noise():
    adv = _wide("partial credit")
    near_equal = adv.loc[0]                                     # rewards 0.50 ± 0.02
    assert near_equal["GRPO"].abs().max() > 1.0                 # ÷ a tiny std: noise becomes a big signal
    assert near_equal["Dr. GRPO"].abs().max() < 0.03            # r − mean keeps it small


def test_weights_are_token_grad_weights_of_the_variant():
    s = family.score_batch("stale (off-policy)", ["DAPO"])
    b = s.batch
    adv = torch.tensor(s.wide("adv")["DAPO"].to_numpy(dtype=float))
    w = token_grad_weights(torch.tensor(b.logp), torch.tensor(b.old_logp), adv, torch.tensor(b.mask),
                           mode="token-mean", eps_low=0.2, eps_high=0.28)
    np.testing.assert_allclose(s.weights["DAPO"], w.numpy())


def test_beta_adds_the_same_kl_to_every_variant():
    s = family.score_batch("lecture-notes groups", beta=0.04)
    assert (s.summary["kl"] > 0).all()
    np.testing.assert_allclose(s.summary["loss"], s.summary["pg_loss"] + 0.04 * s.summary["kl"])
    s0 = family.score_batch("lecture-notes groups")
    assert not np.allclose(s.weights["GRPO"], s0.weights["GRPO"])


def test_score_batch_tables_and_bad_input():
    s = family.score_batch("lecture-notes groups", ["GRPO", family.VARIANTS["RLOO"]])
    assert list(s.summary.index) == ["GRPO", "RLOO"]
    assert set(s.weights) == {"GRPO", "RLOO"}
    wide = s.wide("adv")
    assert list(wide.columns) == ["reward", "length", "GRPO", "RLOO"]
    assert isinstance(wide, pd.DataFrame) and len(wide) == 12
    assert {"advantage", "aggregation", "ratio", "eps_low", "eps_high"} <= set(s.summary.columns)
    with pytest.raises(ValueError, match="column"):
        s.wide("nope")
    with pytest.raises(ValueError, match="variants"):
        family.score_batch("lecture-notes groups", ["PPO"])
    with pytest.raises(TypeError, match="variants"):
        family.score_batch("lecture-notes groups", [3])
    with pytest.raises(ValueError, match="variants"):
        family.score_batch("lecture-notes groups", [])
    with pytest.raises(ValueError, match="distinct"):
        family.score_batch("lecture-notes groups", ["GRPO", "GRPO"])
    with pytest.raises(ValueError, match="beta"):
        family.score_batch("lecture-notes groups", beta=-1)
    with pytest.raises(TypeError, match="batch"):
        family.score_batch(42)
    with pytest.raises(ValueError, match="variant"):
        s.push("DAPO")


@settings(max_examples=25)
@given(rewards=arrays(float, (2, 4), elements=st.sampled_from([0.0, 0.5, 1.0])),
       lengths=arrays(int, (2, 4), elements=st.integers(1, 8)))
def test_on_policy_properties(rewards, lengths):
    b = family.synthetic_batch(rewards, lengths, T=8)
    s = family.score_batch(b)
    m = b.mask > 0
    assert abs(s.summary.loc["GRPO", "pg_loss"]) < 1e-12           # Σ_group Â = 0 under eq. (6), ρ = 1
    adv = s.wide("adv")
    for v in s.weights:
        push = s.push(v)
        assert np.all(np.isfinite(push))
        first = push[np.arange(b.B), 0]                              # every answer has >= 1 token
        # broadcast: one value per answer, on every one of its tokens, with the sign of Â
        np.testing.assert_allclose(np.where(m, push, first[:, None]), np.broadcast_to(first[:, None], push.shape),
                                   atol=1e-14)
        assert np.all(np.sign(first) == np.sign(adv[v].to_numpy()))


# ---------------------------------------------------------------------------------
# GAE vs GRPO's broadcast scalar
# ---------------------------------------------------------------------------------
def _gae_direct(r, V, gamma, lam, last=0.0):
    T = len(r)
    Vn = np.append(V, last)
    delta = [r[t] + gamma * Vn[t + 1] - Vn[t] for t in range(T)]
    return np.array([sum((gamma * lam) ** l * delta[t + l] for l in range(T - t)) for t in range(T)])


vec = arrays(float, st.integers(1, 12), elements=st.floats(-2, 2))


@given(r=vec, data=st.data(), gamma=st.floats(0, 1), lam=st.floats(0, 1), last=st.floats(-1, 1))
def test_gae_matches_the_direct_sum(r, data, gamma, lam, last):
    V = data.draw(arrays(float, r.shape, elements=st.floats(-2, 2)))
    np.testing.assert_allclose(family.gae(r, V, gamma, lam, last_value=last), _gae_direct(r, V, gamma, lam, last),
                               atol=1e-9)
    # the limits: λ = 1 -> discounted return-to-go − V (Monte-Carlo); λ = 0 -> TD error
    np.testing.assert_allclose(family.gae(r, V, gamma, 1.0, last_value=last),
                               family.discounted_returns(r, gamma, last_value=last) - V, atol=1e-9)
    np.testing.assert_allclose(family.gae(r, V, gamma, 0.0, last_value=last),
                               family.td_errors(r, V, gamma, last_value=last), atol=1e-12)


def test_gae_limits_by_hand_and_batched_rows():
    r = np.array([0.0, 0.0, 1.0])
    V = np.array([0.5, 0.6, 0.9])
    np.testing.assert_allclose(family.gae(r, V, 1.0, 1.0), [0.5, 0.4, 0.1])          # R − V_t
    np.testing.assert_allclose(family.gae(r, V, 1.0, 0.0), [0.1, 0.3, 0.1])          # δ_t
    np.testing.assert_allclose(family.discounted_returns(r, 0.5), [0.25, 0.5, 1.0])
    R = np.stack([r, r[::-1]])
    VV = np.stack([V, V[::-1]])
    out = family.gae(R, VV, 0.9, 0.7, last_value=[0.0, 0.3])
    np.testing.assert_allclose(out[0], family.gae(r, V, 0.9, 0.7))
    np.testing.assert_allclose(out[1], family.gae(r[::-1], V[::-1], 0.9, 0.7, last_value=0.3))


def test_gae_bad_input_names_the_argument():
    with pytest.raises(ValueError, match="values"):
        family.gae([0, 1], [0.5], 1.0, 0.9)
    with pytest.raises(ValueError, match="gamma"):
        family.gae([0, 1], [0, 0], 1.5, 0.9)
    with pytest.raises(ValueError, match="lam"):
        family.gae([0, 1], [0, 0], 1.0, -0.1)
    with pytest.raises(ValueError, match="rewards"):
        family.gae([0, np.inf], [0, 0])
    with pytest.raises(ValueError, match="last_value"):
        family.gae([[0, 1]], [[0, 0]], last_value=[1.0, 2.0])


def test_toy_sequence_credit_assignment():
    seq = family.toy_sequence()
    ca = family.credit_assignment(seq, gamma=1.0, lam=0.0)
    # GRPO: the seed's hard prompt 1,0,0,0 gives this answer +1.73 on every token
    assert np.all(np.round(ca.grpo, 2) == 1.73) and np.ptp(ca.grpo) == 0
    assert ca.grpo[0] == group_advantages(seq.group)[0]
    # the critic's V_0 is the group mean, so λ = 1, γ = 1 at t = 0 equals r − mean = 0.75
    assert seq.values[0] == seq.group.mean()
    assert ca.mc[0] == pytest.approx(0.75) and ca.mean_baseline[0] == pytest.approx(0.75)
    # γ = 1: the TD errors telescope to R − V_0, and λ = 0 puts the biggest share on " ÷"
    assert ca.td.sum() == pytest.approx(1.0 - seq.values[0])
    assert int(np.argmax(ca.td)) == seq.key and ca.td[seq.key] == pytest.approx(0.5)
    assert ca.td[seq.key] / ca.td.sum() > 0.6
    # every token carries the same GRPO value, whatever γ and λ
    ca2 = family.credit_assignment(seq, gamma=0.9, lam=0.5)
    np.testing.assert_array_equal(ca2.grpo, ca.grpo)
    np.testing.assert_allclose(ca2.gae, family.gae(seq.rewards, seq.values, 0.9, 0.5))
    # λ → 1 spreads credit back to the early tokens: the MC advantage decreases along the answer
    assert np.all(np.diff(ca.mc) <= 1e-12)


def test_frozen_batch_variants_match_the_lm_presets():
    config = pytest.importorskip("grpo_lab.lm.config")
    for name, preset in [("GRPO", "grpo"), ("Dr. GRPO", "dr_grpo"), ("DAPO", "dapo"), ("GSPO", "gspo")]:
        c = config.GRPOConfig.preset(preset)
        v = family.VARIANTS[name]
        assert (v.scale, v.std, v.mode, v.level) == (c.adv_scale, c.adv_std, c.agg, c.ratio_level), name
        assert (v.eps_low, v.eps_high) == (c.eps_low, c.eps_low if c.eps_high is None else c.eps_high), name
        assert v.drop_degenerate == c.dynamic_sampling, name


# ---------------------------------------------------------------------------------
# Short runs per preset: the cached file and its summary
# ---------------------------------------------------------------------------------
def _fake_runs():
    rows = []
    for p, base in zip(preset_runs.RUN_PRESETS, (0.2, 0.3, 0.4, 0.5)):
        for seed in (0, 1):
            for step in range(1, 11):
                rows.append({"preset": p, "seed": seed, "step": step, "reward_mean": base + 0.01 * step + 0.1 * seed,
                             "len_incorrect": 3.0, "frac_informative": 0.5, "clip_frac_low": 0.0,
                             "clip_frac_high": 0.0, "n_groups": 8.0})
    return pd.DataFrame(rows)


def test_summarize_runs_averages_the_last_steps_then_seeds():
    table = preset_runs.summarize_runs(_fake_runs(), last=4, first=2)
    assert list(table.index) == list(preset_runs.RUN_PRESETS)
    # grpo: steps 7..10 -> 0.2 + 0.085 (seed 0) and +0.1 (seed 1): mean 0.335, sem 0.05
    assert table.loc["grpo", ("reward_mean", "mean")] == pytest.approx(0.335)
    assert table.loc["grpo", ("reward_mean", "sem")] == pytest.approx(0.1 / np.sqrt(2) / np.sqrt(2))
    assert table.loc["grpo", ("reward_mean", "start")] == pytest.approx(0.2 + 0.015 + 0.05)
    with pytest.raises(ValueError, match="last"):
        preset_runs.summarize_runs(_fake_runs(), last=0)
    with pytest.raises(ValueError, match="df must have"):
        preset_runs.summarize_runs(pd.DataFrame({"x": [1]}))


def test_load_family_runs_reads_the_package_data(tmp_path):
    if not preset_runs.runs_path().is_file():
        pytest.skip("grpo_lab/data/family_runs.csv not generated yet")
    df = preset_runs.load_family_runs()
    assert set(preset_runs.RUN_PRESETS) <= set(df["preset"])
    assert {"seed", "step", "reward_mean", "len_incorrect", "clip_frac_low", "clip_frac_high"} <= set(df.columns)
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"x": [1]}).to_csv(bad, index=False)
    with pytest.raises(ValueError, match="not a family-runs file"):
        preset_runs.load_family_runs(bad)


def test_run_presets_bad_input():
    with pytest.raises(ValueError, match="presets"):
        preset_runs.run_presets("ppo")
    with pytest.raises(ValueError, match="jobs"):
        preset_runs.run_presets("grpo", jobs=0)
    with pytest.raises(ValueError, match="seeds"):
        preset_runs.run_presets("grpo", seeds=[-1])


@pytest.mark.slow
def test_run_presets_calls_the_lm_loop():
    df = preset_runs.run_presets(["grpo", "dapo"], [0], steps=2, warmstart_steps=0, eval_per_level=4, hidden=16,
                            intermediate=32, layers=1, heads=2, prompts_per_step=2, G=2, max_new=4, kl_metric=False)
    assert list(df["preset"].unique()) == ["grpo", "dapo"] and len(df) == 4
    assert {"reward_mean", "clip_frac_low", "eval_before_acc", "eval_after_acc"} <= set(df.columns)
    assert (df.loc[df["preset"] == "dapo", "n_groups"] >= 2).all()


def test_paired_difference_interval_and_bad_input():
    import numpy as np
    import pandas as pd

    rows = [dict(preset="grpo", run=run, seed=s, step=t, kl=base + 0.01 * s + (0.001 * t if run == "b" else 0))
            for run, base in (("a", 0.5), ("b", 0.2)) for s in range(4) for t in range(1, 11)]
    means = preset_runs.run_means(pd.DataFrame(rows), "kl", steps=(6, 10))
    assert list(means.columns) == [0, 1, 2, 3]
    assert np.isclose(means.loc["b", 0], 0.2 + 0.008)              # mean of steps 6..10
    res = preset_runs.paired_difference(means, "a", "b")
    assert res["n"] == 4 and np.isclose(res["diff"], 0.3 - 0.008)
    assert np.isclose(res["lo"], res["hi"])                        # identical per-seed differences: zero width
    noisy = means.copy()
    noisy.loc["a", 0] += 0.1
    r2 = preset_runs.paired_difference(noisy, "a", "b")
    d = np.array(list(r2["per_seed"].values()))
    assert np.isclose(r2["hi"] - r2["diff"], 3.182 * d.std(ddof=1) / 2)   # t(0.975, 3) · s/√4
    with pytest.raises(ValueError, match="no run 'c'"):
        preset_runs.paired_difference(means, "a", "c")
    with pytest.raises(ValueError, match="at least 2"):
        preset_runs.paired_difference(means[[0]], "a", "b")
    with pytest.raises(ValueError, match="metric"):
        preset_runs.run_means(pd.DataFrame(rows), "nope")


def test_compare_to_verdicts():
    import pandas as pd

    rows = [dict(preset="grpo", run=run, seed=s, step=t, kl=kl + 0.001 * ((s * 7 + t) % 3))
            for run, kl in (("grpo", 0.5), ("up", 0.6), ("same", 0.5)) for s in range(3) for t in range(1, 5)]
    rows += [dict(preset="grpo", run="noisy", seed=s, step=t, kl=0.5 + (0.2 if s == 0 else -0.1)) for s in range(3)
             for t in range(1, 5)]
    out = preset_runs.compare_to(pd.DataFrame(rows), "grpo", ["up", "same", "noisy"], "kl", steps=(1, 4))
    assert out.loc[("up", "kl"), "verdict"] == "higher"
    assert out.loc[("same", "kl"), "verdict"] == "no detectable difference"
    assert out.loc[("noisy", "kl"), "verdict"] == "no detectable difference"   # seeds disagree: interval spans 0
    assert (out["n"] == 3).all()


def test_compare_to_uses_the_shared_seeds_only():
    import pandas as pd

    rows = [dict(preset="grpo", run="grpo", seed=s, step=1, kl=[0.1, 0.2, 0.9][s]) for s in range(3)]
    rows += [dict(preset="grpo", run="x", seed=s, step=1, kl=[0.2, 0.3][s]) for s in range(2)]   # no seed 2
    out = preset_runs.compare_to(pd.DataFrame(rows), "grpo", "x", "kl", steps=(1, 1))
    assert abs(out.loc[("x", "kl"), "grpo"] - 0.15) < 1e-12 and out.loc[("x", "kl"), "n"] == 2
