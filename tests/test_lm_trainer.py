"""grpo_lab.lm.trainer: the six-step loop, its metrics, resumption and bad input (tiny CPU sizes)."""
import math

import numpy as np
import pandas as pd
import pytest
import torch

from grpo_lab.lm.config import GRPOConfig
from grpo_lab.lm.model import make_model, save_model
from grpo_lab.lm.rollout import Rollout, token_logp
from grpo_lab.lm.tokenizer import char_tokenizer
from grpo_lab.lm.trainer import CONDITIONAL_COLUMNS, METRICS, TIMING_COLUMNS, Trainer, metric_definitions, train

from tiny_run import TINY, cache, cfg  # noqa: E402,F401  (shared settings and fixtures)


def _constructed_batch(tok, G=4):
    """One prompt, 3+4=, answered 7 (right), 8, 12, 6 (wrong)."""
    enc = tok(["3+4="], return_tensors="pt")
    rows = [tok(t, add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for t in ("7", "8", "12", "6")[:G]]
    T = max(map(len, rows))
    ids = torch.full((G, T), tok.pad_token_id)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
    L = torch.tensor([len(r) for r in rows])
    return Rollout(enc["input_ids"], enc["attention_mask"], G, ids, (torch.arange(T)[None] < L[:, None]).float(),
                   L, torch.zeros(G, dtype=torch.bool))


def _seq_logp(tr, batch):
    with torch.no_grad():
        return (token_logp(tr.policy, batch).logp * batch.mask).sum(-1)


def test_one_step_moves_weights_in_the_expected_direction(cfg):
    # a small step, so that first order holds: Adam's first step is −lr·sign(∇loss) (a descent step)
    tr = Trainer(cfg.replace(lr=1e-4, lr_warmup=0, prompts_per_step=2, levels=(1,)))
    batch = _constructed_batch(tr.tok)
    before = _seq_logp(tr, batch)
    w0 = {n: p.detach().clone() for n, p in tr.policy.named_parameters()}
    m = tr.learn(batch, [1.0, 0.0, 0.0, 0.0])
    after = _seq_logp(tr, batch)
    assert any(not torch.equal(w0[n], p) for n, p in tr.policy.named_parameters())
    adv = torch.tensor([1.5, -0.5, -0.5, -0.5]) * (3 ** 0.5 / 1.5)          # eq. (1): +1.73, −0.58 ×3
    L = batch.lengths.float()
    # the objective of eq. (6), Σ Â_i · mean_t log π(o_{i,t}), went up …
    assert (adv * (after - before) / L).sum() > 0
    # … mostly by raising the right answer: every one of its tokens was pushed up (Â > 0)
    assert after[0] > before[0]
    assert m["adv_abs_mean"] == pytest.approx((1.73205 + 3 * 0.57735) / 4, rel=1e-3)   # seed: 1,0,0,0
    assert m["grad_norm"] > 0 and m["clip_frac_low"] == 0 and m["clip_frac_high"] == 0   # μ = 1: ρ ≡ 1


def test_a_degenerate_group_leaves_the_weights_unchanged(cfg):
    # all-equal rewards: Â = 0 exactly; KL to the (identical) reference has zero gradient too
    tr = Trainer(cfg.replace(levels=(1,), prompts_per_step=1))
    batch = _constructed_batch(tr.tok)
    w0 = {n: p.detach().clone() for n, p in tr.policy.named_parameters()}
    m = tr.learn(batch, [1.0, 1.0, 1.0, 1.0])
    assert m["adv_abs_mean"] == 0.0 and m["grad_norm"] == 0.0
    assert all(torch.equal(w0[n], p) for n, p in tr.policy.named_parameters())


def test_learn_checks_rewards_shape(cfg):
    tr = Trainer(cfg.replace(levels=(1,), prompts_per_step=1))
    with pytest.raises(ValueError, match="rewards"):
        tr.learn(_constructed_batch(tr.tok), [1.0, 0.0])


def test_metric_columns_present_and_finite(cfg):
    df = train(cfg.replace(steps=3))
    assert len(df) == 3 and df["step"].tolist() == [1, 2, 3]
    expected = set(metric_definitions(cfg.levels))
    assert set(df.columns) == expected
    for col in df.columns:
        vals = df[col].to_numpy(dtype=float)
        if col in CONDITIONAL_COLUMNS:   # NaN exactly when there is nothing to average
            assert np.array_equal(np.isnan(vals), df[CONDITIONAL_COLUMNS[col]].to_numpy() == 0), col
        else:
            assert np.isfinite(vals).all(), col
    assert (df.n_correct + df.n_incorrect + df.n_truncated == df.n_groups * cfg.G).all()
    assert (df.kl >= 0).all() and df.kl.iloc[0] == pytest.approx(0.0, abs=1e-6)   # π_θ = π_ref at step 1
    assert (df.seconds > 0).all()
    for key in ("eval_before", "eval_after"):
        assert 0 <= df.attrs[key]["greedy"]["acc"] <= 1 and df.attrs[key]["sampled"]["n"] > 0


def test_every_metric_has_a_one_line_definition_in_both_languages():
    from grpo_lab.i18n import set_language

    for name, text in METRICS.items():
        for s in (text.en, text.zh):
            assert s and "\n" not in s, name
        assert text.en != text.zh, name
    for col in TIMING_COLUMNS:
        assert col in METRICS
    try:
        set_language("zh")
        zh = metric_definitions((1,))
    finally:
        set_language("en")
    assert zh["acc_L1"] == "同一准确率，只统计难度等级 1 的提示"
    assert metric_definitions((1,))["acc_L1"] == "the same accuracy restricted to prompts of difficulty level 1"


def test_group_reward_std_worked_numbers():
    from grpo_lab.lm.metrics import group_reward_std

    # seed 000: rewards 1,0,0,0 have population std √3/4 = 0.4330; an all-equal group has 0
    assert group_reward_std([1, 0, 0, 0, 1, 1, 1, 1], 4) == pytest.approx((3 ** 0.5 / 4) / 2)
    assert group_reward_std([0, 0, 0, 0], 4) == 0.0


def test_last_samples_describe_the_step(cfg):
    tr = Trainer(cfg.replace(steps=1))
    assert tr.last_samples is None
    row = tr.step()
    df = tr.last_samples
    P, G = cfg.prompts_per_step, cfg.G
    assert list(df.columns) == ["group", "prompt", "response", "reward", "adv", "length", "truncated"]
    assert len(df) == P * G and df["group"].tolist() == [i // G for i in range(P * G)]
    assert df["reward"].mean() == pytest.approx(row["reward_mean"])
    assert df.groupby("group")["reward"].std(ddof=0).mean() == pytest.approx(row["group_reward_std"])
    assert df["length"].mean() == pytest.approx(row["len_mean"]) and df["truncated"].sum() == row["n_truncated"]
    assert df["adv"].abs().mean() == pytest.approx(row["adv_abs_mean"], rel=1e-5)
    # eq. (1) on each group's rewards: Â sums to 0 within a group
    assert np.allclose(df.groupby("group")["adv"].sum(), 0, atol=1e-4)
    assert all(p.endswith("=") for p in df["prompt"])


def test_first_round_problems_are_the_prompts_the_trainer_asks(cfg):
    # bench_trl.py gives TRL these rows in order, so both sides answer the same questions step for step
    from grpo_lab.lm.sampling import first_round_problems

    tr = Trainer(cfg.replace(steps=3))
    asked = []
    for _ in range(3):
        tr.step()
        asked += tr.last_samples["prompt"].tolist()[::cfg.G]
    expected = [p.prompt for p in first_round_problems(tr.task, tr.cfg, 3)]
    assert asked == expected and len(set(expected)) > cfg.prompts_per_step     # the steps differ, too
    other = [p.prompt for p in first_round_problems(tr.task, tr.cfg.replace(seed=tr.cfg.seed + 1), 3)]
    assert other != expected


def test_last_samples_mark_dropped_groups_with_nan_adv(cfg):
    tr = Trainer(GRPOConfig.preset("dapo", cache_dir=cfg.cache_dir, steps=1, max_sampling_rounds=3, **TINY))
    row = tr.step()
    df = tr.last_samples
    assert len(df) == row["n_groups"] * cfg.G
    assert df["adv"].notna().sum() == row["n_groups_used"] * cfg.G


def test_files_written_every_step(cfg, tmp_path):
    out = tmp_path / "run"
    train(cfg.replace(steps=2, out=str(out)))
    csv = pd.read_csv(out / "metrics.csv")
    assert csv["step"].tolist() == [1, 2]
    assert len((out / "metrics.jsonl").read_text().splitlines()) == 2
    for name in ("config.json", "eval_before.json", "eval_after.json", "ref/model.safetensors"):
        assert (out / name).exists(), name
    assert (out / "checkpoints" / "step_000002" / "model.safetensors").exists()
    with pytest.raises(ValueError, match="already holds a run"):
        Trainer(cfg.replace(steps=2, out=str(out)))


def _weights(tr):
    return {n: p.detach().clone() for n, p in tr.policy.named_parameters()}


def test_resume_equals_uninterrupted_run(cfg, tmp_path):
    full_cfg = cfg.replace(steps=4, out=str(tmp_path / "full"), checkpoint_every=2)
    tr_full = Trainer(full_cfg)
    df_full = tr_full.run()

    part = cfg.replace(steps=4, out=str(tmp_path / "part"), checkpoint_every=2)
    tr = Trainer(part)
    for _ in range(3):                        # "killed" after step 3; last checkpoint at step 2
        tr._append_metrics(tr.step())
        if tr.step_count % 2 == 0:
            tr.save_checkpoint()
    del tr
    tr_res = Trainer(part.replace(resume=True))
    assert tr_res.step_count == 2 and len(tr_res.rows) == 2       # the row of step 3 was dropped
    df_res = tr_res.run()

    w_full, w_res = _weights(tr_full), _weights(tr_res)
    assert all(torch.equal(w_full[n], w_res[n]) for n in w_full)
    cols = [c for c in df_full.columns if c not in TIMING_COLUMNS]
    pd.testing.assert_frame_equal(df_full[cols].reset_index(drop=True), df_res[cols].reset_index(drop=True),
                                  check_dtype=False)
    assert pd.read_csv(tmp_path / "part" / "metrics.csv")["step"].tolist() == [1, 2, 3, 4]
    assert df_res.attrs["eval_after"] == df_full.attrs["eval_after"]


def test_resume_refuses_a_changed_recipe(cfg, tmp_path):
    train(cfg.replace(steps=1, out=str(tmp_path / "r")))
    with pytest.raises(ValueError, match="beta"):
        Trainer(cfg.replace(steps=2, out=str(tmp_path / "r"), resume=True, beta=0.1))


@pytest.mark.parametrize("preset", ["dr_grpo", "dapo", "gspo"])
def test_presets_run(cfg, preset):
    c = GRPOConfig.preset(preset, cache_dir=cfg.cache_dir, steps=2, **TINY)
    df = train(c)
    assert len(df) == 2 and np.isfinite(df["reward_mean"]).all()
    if preset == "dapo":
        assert (df.n_groups_used <= c.prompts_per_step).all()
        assert (df.sampling_rounds >= 1).all()


def test_mu_two_updates_use_the_first_logp_as_old_logp(cfg):
    tr = Trainer(cfg.replace(mu=2, lr=3e-3, lr_warmup=0, levels=(1,), prompts_per_step=1))
    m = tr.learn(_constructed_batch(tr.tok), [1.0, 0.0, 0.0, 0.0])
    assert m["ratio_max"] > 1.0                # the second iteration sees ρ ≠ 1


def test_frac_informative_counts_groups_whose_rewards_differ(cfg):
    # partial credit: wrong answers get different rewards, so a group can be all wrong (by the
    # verifier) and still informative (by its rewards) — the two definitions disagree here
    rows = []
    trainer = Trainer(cfg.replace(steps=3, partial_credit=True, warmstart_steps=0),
                      callback=lambda t, row: rows.append((row, t.last_samples)))
    trainer.run()
    for row, samples in rows:
        spread = samples.groupby("group")["reward"].agg(lambda r: r.nunique() > 1)
        assert row["frac_informative"] == pytest.approx(spread.mean())
    df = pd.DataFrame([r for r, _ in rows])
    assert ((df.frac_all_correct + df.frac_all_wrong + df.frac_informative) > 1).any()


def test_kl_in_reward_form(cfg):
    # form 2 (seed 000 §3): the KL goes into the rewards before eq. (1), not into the loss. The
    # task rewards are all equal (a degenerate group), so every Â comes from the KL shaping.
    from grpo_lab.advantages import advantages_from_flat
    from grpo_lab.losses import kl_shaped_rewards

    c = cfg.replace(levels=(1,), prompts_per_step=1, kl_form="reward", beta=0.5)
    tr = Trainer(c)
    tr.ref = make_model(tr.tok, seed=7, hidden=32, intermediate=64, layers=1, heads=2)   # π_ref ≠ π_θ
    batch = _constructed_batch(tr.tok)
    with torch.no_grad():
        logp, ref_logp = token_logp(tr.policy, batch).logp, token_logp(tr.ref, batch).logp
    shaped = kl_shaped_rewards(torch.ones(4), logp, ref_logp, batch.mask, beta=0.5, kind=c.kl_kind)
    expected = advantages_from_flat(shaped, 4, **c.adv_kwargs())
    m = tr.learn(batch, [1.0, 1.0, 1.0, 1.0])
    assert np.abs(expected.numpy()).max() > 0.1                           # the shaping made the group informative
    np.testing.assert_allclose(tr.last_adv, expected.numpy(), rtol=1e-4, atol=1e-5)
    assert m["loss"] == pytest.approx(m["pg_loss"])                          # no β·KL term in the loss
    assert m["kl"] > 0 and m["grad_norm"] > 0


def test_local_model_path(cfg, tmp_path):
    tok = char_tokenizer()
    save_model(make_model(tok, seed=0, hidden=32, intermediate=64, layers=1, heads=2), tok, tmp_path / "m")
    df = train(cfg.replace(steps=1, model=str(tmp_path / "m"), warmstart_steps=0))
    assert len(df) == 1


# -- bad input ------------------------------------------------------------------------------
def test_unknown_preset():
    with pytest.raises(ValueError, match="preset must be one of 'grpo', 'dr_grpo', 'dapo', 'gspo'"):
        GRPOConfig.preset("ppo")


def test_group_size_below_two():
    with pytest.raises(ValueError, match="G must be >= 2"):
        GRPOConfig.preset("grpo", G=1)
    with pytest.raises(TypeError, match="G must be an integer"):
        GRPOConfig.preset("grpo", G=2.5)


def test_unknown_override_and_bad_values():
    with pytest.raises(ValueError, match="unknown GRPOConfig field"):
        GRPOConfig.preset("grpo", gamma=0.9)
    with pytest.raises(ValueError, match="agg"):
        GRPOConfig.preset("grpo", agg="mean")
    with pytest.raises(ValueError, match="beta"):
        GRPOConfig.preset("grpo", beta=-1)
    with pytest.raises(ValueError, match="prompts_per_step"):
        GRPOConfig.preset("grpo", levels=(1, 2, 3), prompts_per_step=2)


def test_missing_model_path(cfg, tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        Trainer(cfg.replace(model=str(tmp_path / "nowhere")))


def test_tokenizer_without_eos(cfg, tmp_path):
    import json

    tok = char_tokenizer()
    save_model(make_model(tok, hidden=32, intermediate=64, layers=1, heads=2), tok, tmp_path / "m")
    p = tmp_path / "m" / "tokenizer_config.json"
    d = json.loads(p.read_text())
    d["eos_token"] = None
    p.write_text(json.dumps(d))
    with pytest.raises(ValueError, match="EOS"):
        Trainer(cfg.replace(model=str(tmp_path / "m")))


def test_presets_differ_where_documented():
    g, d, a, s = (GRPOConfig.preset(n) for n in ("grpo", "dr_grpo", "dapo", "gspo"))
    assert (g.adv_scale, g.agg, g.beta, g.kl_kind, g.eps_low) == ("group", "seq-mean-token-mean", 0.04, "k3", 0.2)
    assert (d.adv_scale, d.agg) == ("none", "seq-mean-token-sum-norm")
    assert a.eps_high == 0.28 and a.dynamic_sampling and a.agg == "token-mean" and a.overlong_buffer > 0
    assert s.ratio_level == "sequence" and s.eps_low < 1e-3
    assert GRPOConfig.from_dict(a.to_dict()) == a
    from grpo_lab.lm.handoff import to_trl_kwargs

    assert math.isclose(to_trl_kwargs(g)["beta"], 0.04) and to_trl_kwargs(d)["loss_type"] == "dr_grpo"


def test_device_cuda_without_cuda_is_a_clear_error(cfg):
    from grpo_lab.lm.trainer import resolve_device

    assert resolve_device("cpu").type == "cpu"
    if not torch.cuda.is_available():
        with pytest.raises(ValueError, match="no CUDA device"):
            resolve_device("cuda")
        assert resolve_device("auto").type == "cpu"


def test_docs_list_every_metric():
    from pathlib import Path

    from grpo_lab.lm.trainer import metrics_markdown

    doc = (Path(__file__).resolve().parents[1] / "docs" / "lm.md").read_text()
    assert metrics_markdown((1, 2)) in doc, "regenerate the table in docs/lm.md with metrics_markdown()"
