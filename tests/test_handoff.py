"""The hand-off to TRL and verl (grpo_lab.lm.handoff), tested against the preset definitions.

Each preset's aggregation / advantage scale / clip range / ratio level / KL must land on the
right option names with the right values; settings a framework cannot express must raise
with the field's name; the table must show exactly what the functions return; and the
convention differences the table claims are checked numerically with the course's own
loss and advantage functions.
"""
import math
import warnings
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from grpo_lab import methods
from grpo_lab.advantages import group_advantages
from grpo_lab.lm.config import GRPOConfig
from grpo_lab.lm.handoff import (DIFFERENCES, TRL_LOSS_TYPE, differences_table, mapping_table, to_trl_kwargs,
                                 to_verl_overrides, verl_command_line)
from grpo_lab.losses import aggregate, policy_loss_per_token

A = "actor_rollout_ref.actor."
PRESETS = sorted(p for p in GRPOConfig.PRESETS if p in methods.LECTURE)   # the 2025 losses: test_handoff_beyond.py

# What each preset means (grpo_lab.lm.config docstring, seed 004 §四), in both frameworks.
EXPECTED = {
    "grpo": dict(loss_type="grpo", agg="seq-mean-token-mean", scale="group", norm_std=True, eps=(0.2, 0.2),
                 level="token", mode="vanilla", beta=0.04),
    "dr_grpo": dict(loss_type="dr_grpo", agg="seq-mean-token-sum-norm", scale="none", norm_std=False,
                    eps=(0.2, 0.2), level="token", mode="vanilla", beta=0.0),
    "dapo": dict(loss_type="dapo", agg="token-mean", scale="group", norm_std=True, eps=(0.2, 0.28),
                 level="token", mode="vanilla", beta=0.0),
    "gspo": dict(loss_type="grpo", agg="seq-mean-token-mean", scale="group", norm_std=True, eps=(3e-4, 4e-4),
                 level="sequence", mode="gspo", beta=0.0),
}


def test_expected_covers_every_preset():
    assert sorted(EXPECTED) == PRESETS


@pytest.mark.parametrize("name", PRESETS)
def test_trl_kwargs_follow_the_preset(name):
    cfg, e = GRPOConfig.preset(name), EXPECTED[name]
    assert cfg.agg == e["agg"] and cfg.adv_scale == e["scale"] and cfg.ratio_level == e["level"]
    kw = to_trl_kwargs(cfg)
    assert kw["loss_type"] == e["loss_type"] == TRL_LOSS_TYPE[cfg.agg]
    assert kw["scale_rewards"] == e["scale"]
    assert (kw["epsilon"], kw["epsilon_high"]) == pytest.approx(e["eps"])
    assert kw["importance_sampling_level"] == e["level"]
    assert kw["beta"] == e["beta"] == cfg.beta
    assert kw["num_generations"] == cfg.G
    assert kw["per_device_train_batch_size"] == cfg.prompts_per_step * cfg.G
    assert kw["gradient_accumulation_steps"] == 1
    assert kw["max_completion_length"] == cfg.max_new
    assert kw["num_iterations"] == cfg.mu
    assert kw["temperature"] == cfg.temperature
    assert kw["learning_rate"] == cfg.lr
    if cfg.lr_warmup:
        assert kw["lr_scheduler_type"] == "constant_with_warmup" and kw["warmup_steps"] == cfg.lr_warmup
    else:
        assert kw["lr_scheduler_type"] == "constant" and "warmup_steps" not in kw
    assert kw["max_steps"] == cfg.steps and kw["seed"] == cfg.seed
    assert kw["mask_truncated_completions"] is False
    assert ("use_bias_correction_kl" in kw) == (cfg.beta > 0)
    assert "delta" not in kw                      # no preset uses a dual clip


@pytest.mark.parametrize("name", PRESETS)
def test_verl_overrides_follow_the_preset(name):
    cfg, e = GRPOConfig.preset(name), EXPECTED[name]
    ov = to_verl_overrides(cfg)
    assert ov["algorithm.adv_estimator"] == "grpo"
    assert ov["algorithm.norm_adv_by_std_in_grpo"] is e["norm_std"]
    assert ov[A + "loss_agg_mode"] == e["agg"]
    assert (ov[A + "clip_ratio_low"], ov[A + "clip_ratio_high"]) == pytest.approx(e["eps"])
    assert ov[A + "policy_loss.loss_mode"] == e["mode"]
    assert ov[A + "use_kl_loss"] is (e["beta"] > 0)
    if e["beta"] > 0:
        assert ov[A + "kl_loss_coef"] == e["beta"] and ov[A + "kl_loss_type"] == "low_var_kl"
    assert ov["actor_rollout_ref.rollout.n"] == cfg.G
    assert ov["data.train_batch_size"] == ov[A + "ppo_mini_batch_size"] == cfg.prompts_per_step
    assert ov["data.max_response_length"] == cfg.max_new
    assert ov[A + "ppo_epochs"] == cfg.mu
    assert ov[A + "optim.lr"] == cfg.lr
    assert ov.get("algorithm.filter_groups.enable", False) is cfg.dynamic_sampling
    assert ("+reward.reward_kwargs.overlong_buffer_cfg.len" in ov) == (cfg.overlong_buffer > 0)


def test_dapo_extras_only_in_verl():
    cfg = GRPOConfig.preset("dapo")
    ov = to_verl_overrides(cfg)
    assert ov["algorithm.filter_groups.max_num_gen_batches"] == cfg.max_sampling_rounds
    assert ov["+reward.reward_kwargs.overlong_buffer_cfg.len"] == cfg.overlong_buffer
    assert ov["+reward.reward_kwargs.max_resp_len"] == cfg.max_new
    assert ov["reward.reward_manager.name"] == "dapo"
    kw = to_trl_kwargs(cfg)
    assert not any("filter" in k or "overlong" in k for k in kw)   # TRL: reward function / not available


def test_overrides_flow_through():
    cfg = GRPOConfig.preset("grpo", G=4, prompts_per_step=6, max_new=16, mu=2, beta=0.01, kl_kind="k3",
                            eps_high=0.3, dual_clip=3.0, temperature=0.7)
    kw, ov = to_trl_kwargs(cfg), to_verl_overrides(cfg)
    assert kw["num_generations"] == 4 and kw["per_device_train_batch_size"] == 24
    assert kw["num_iterations"] == 2 and ov[A + "ppo_epochs"] == 2
    assert kw["epsilon_high"] == 0.3 and ov[A + "clip_ratio_high"] == 0.3
    assert kw["delta"] == 3.0 and ov[A + "clip_ratio_c"] == 3.0
    assert kw["temperature"] == 0.7 and ov["actor_rollout_ref.rollout.temperature"] == 0.7
    assert kw["beta"] == 0.01 and ov[A + "kl_loss_coef"] == 0.01


@pytest.mark.parametrize("kind, verl_name", [("k1", "kl"), ("k2", "mse"), ("k3", "low_var_kl")])
def test_kl_estimators(kind, verl_name):
    cfg = GRPOConfig.preset("grpo", kl_kind=kind)
    assert to_verl_overrides(cfg)[A + "kl_loss_type"] == verl_name
    if kind == "k3":
        assert to_trl_kwargs(cfg)["use_bias_correction_kl"] is False
    else:
        with pytest.raises(ValueError, match="kl_kind"):
            to_trl_kwargs(cfg)
    # beta = 0: nothing to express, any estimator is fine
    assert to_trl_kwargs(cfg.replace(beta=0.0))["beta"] == 0.0


def test_learning_rate_schedule():
    kw = to_trl_kwargs(GRPOConfig.preset("grpo", lr_warmup=0))
    assert kw["lr_scheduler_type"] == "constant" and "warmup_steps" not in kw
    cfg = GRPOConfig.preset("grpo", lr_warmup=7)
    kw, ov = to_trl_kwargs(cfg), to_verl_overrides(cfg)
    assert kw["lr_scheduler_type"] == "constant_with_warmup" and kw["warmup_steps"] == 7
    assert ov[A + "optim.lr_warmup_steps"] == 7


def test_trl_warmup_is_one_step_behind_ours(tmp_path):
    """The difference DIFFERENCES states: HF's warm-up gives step k (from 0) k/N of the lr, ours (k+1)/N."""
    transformers = pytest.importorskip("transformers")
    from grpo_lab.lm.trainer import Trainer

    N, lr = 4, 1e-3
    opt = torch.optim.AdamW([torch.nn.Parameter(torch.zeros(1))], lr=lr)
    sched = transformers.get_constant_schedule_with_warmup(opt, num_warmup_steps=N)
    hf = []
    for _ in range(6):
        hf.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    holder = SimpleNamespace(cfg=GRPOConfig.preset("grpo", lr=lr, lr_warmup=N))    # lr_at only reads cfg
    ours = [Trainer.lr_at(holder, s) for s in range(1, 7)]
    assert hf == pytest.approx([0, lr / 4, lr / 2, 3 * lr / 4, lr, lr])
    assert ours == pytest.approx([lr / 4, lr / 2, 3 * lr / 4, lr, lr, lr])


def test_kl_in_reward():
    cfg = GRPOConfig.preset("grpo", kl_form="reward", kl_kind="k1")
    ov = to_verl_overrides(cfg)
    assert ov["algorithm.use_kl_in_reward"] is True and ov[A + "use_kl_loss"] is False
    assert ov["algorithm.kl_penalty"] == "kl" and ov["algorithm.kl_ctrl.kl_coef"] == cfg.beta
    with pytest.raises(ValueError, match="kl_form"):
        to_trl_kwargs(cfg)


def test_what_a_framework_cannot_express_raises_naming_the_field():
    with pytest.raises(ValueError, match="agg"):
        to_trl_kwargs(GRPOConfig.preset("grpo", agg="seq-mean-token-sum"))
    assert to_verl_overrides(GRPOConfig.preset("grpo", agg="seq-mean-token-sum"))[A + "loss_agg_mode"] \
        == "seq-mean-token-sum"
    with pytest.raises(ValueError, match="adv_scale"):
        to_verl_overrides(GRPOConfig.preset("grpo", adv_scale="batch"))
    assert to_trl_kwargs(GRPOConfig.preset("grpo", adv_scale="batch"))["scale_rewards"] == "batch"
    with pytest.raises(ValueError, match="dual_clip"):
        to_trl_kwargs(GRPOConfig.preset("dapo", dual_clip=1.2))          # not above 1 + eps_high


def test_num_processes():
    cfg = GRPOConfig.preset("grpo", prompts_per_step=8, G=8)            # P·G = 64
    assert to_trl_kwargs(cfg, num_processes=4)["per_device_train_batch_size"] == 16
    with pytest.raises(ValueError, match="num_processes"):
        to_trl_kwargs(cfg, num_processes=3)
    for bad in (0, -1, 1.5, True):
        with pytest.raises(ValueError, match="num_processes"):
            to_trl_kwargs(cfg, num_processes=bad)


def test_bad_config_type():
    for fn in (to_trl_kwargs, to_verl_overrides, verl_command_line):
        with pytest.raises(TypeError, match="config"):
            fn({"preset": "grpo"})


def test_device_and_precision():
    assert to_trl_kwargs(GRPOConfig.preset("grpo", device="cpu"))["use_cpu"] is True
    assert to_trl_kwargs(GRPOConfig.preset("grpo", device="cpu"))["bf16"] is False
    assert to_trl_kwargs(GRPOConfig.preset("grpo", device="cuda", bf16=True))["bf16"] is True
    assert to_trl_kwargs(GRPOConfig.preset("grpo", device="cuda", bf16=False))["bf16"] is False
    assert to_trl_kwargs(GRPOConfig.preset("grpo", device="auto"))["bf16"] is torch.cuda.is_available()


def test_verl_command_line():
    line = verl_command_line(GRPOConfig.preset("dr_grpo"))
    assert "algorithm.norm_adv_by_std_in_grpo=False" in line
    assert f"{A}loss_agg_mode=seq-mean-token-sum-norm" in line
    assert all(s.count("=") == 1 for s in line)


# ---------------------------------------------------------------------------------
# The table shows what the functions return
# ---------------------------------------------------------------------------------
def test_mapping_table_every_preset_both_frameworks():
    df = mapping_table()
    assert list(df.columns) == ["preset", "concept", "grpo_lab", "TRL", "verl"]
    assert sorted(df.preset.unique()) == sorted(GRPOConfig.PRESETS)
    assert df.groupby("preset").size().nunique() == 1                   # same knobs for every preset
    assert (df[["concept", "grpo_lab", "TRL", "verl"]].map(lambda s: isinstance(s, str) and s != "")).all().all()
    for name in PRESETS:
        sub = df[df.preset == name]
        trl_text, verl_text = " ".join(sub.TRL), " ".join(sub.verl)
        for k, v in to_trl_kwargs(GRPOConfig.preset(name)).items():
            assert f"{k}={v!r}" in trl_text, (name, k)
        for k, v in to_verl_overrides(GRPOConfig.preset(name)).items():
            short = k.removeprefix(A).removeprefix("actor_rollout_ref.")
            assert f"{short}={v!r}" in verl_text, (name, k)


def test_mapping_table_marks_the_inexpressible():
    df = mapping_table("grpo", kl_form="reward")
    assert df.TRL.str.startswith("✗").sum() == 1
    assert mapping_table(["dapo"]).preset.unique().tolist() == ["dapo"]
    with pytest.raises(ValueError, match="preset"):
        mapping_table("ppo")


def test_differences_cover_the_issue_topics():
    df = differences_table()
    assert list(df.columns) == ["topic", "grpo_lab", "TRL", "verl", "effect"]
    assert len(df) == len(DIFFERENCES) >= 10
    topics = " ".join(df.topic).lower()
    for must in ("std estimator", "ε", "dr. grpo", "kl estimator", "dual clip", "gspo", "dynamic sampling",
                 "overlong", "batch-size", "learning-rate", "warm-up"):
        assert must in topics, must
    assert (df.map(lambda s: isinstance(s, str) and len(s) > 3)).all().all()


# ---------------------------------------------------------------------------------
# The differences the table claims, checked with the course's own functions
# ---------------------------------------------------------------------------------
def test_std_estimator_scales_advantages_by_sqrt_g_minus_1_over_g():
    r = np.array([[1, 1, 0, 0], [1, 0, 0, 0], [1, 1, 1, 1.0]])
    pop = group_advantages(r, std="population", eps=0.0)
    smp = group_advantages(r, std="sample", eps=0.0)
    np.testing.assert_allclose(pop[0], [1, 1, -1, -1])                  # the seeds
    np.testing.assert_allclose(smp[0], [0.866, 0.866, -0.866, -0.866], atol=5e-4)   # TRL / verl
    np.testing.assert_allclose(smp, pop * math.sqrt(3 / 4))
    assert np.all(smp[2] == 0) and np.all(pop[2] == 0)                  # degenerate group: 0 in both


def _trl_style_aggregate(loss, mask, loss_type, max_completion_length):
    """TRL 1.16's normalisations of a (B, T) per-token loss, one process, no accumulation."""
    if loss_type == "grpo":
        return ((loss * mask).sum(-1) / mask.sum(-1).clamp(min=1)).mean()
    if loss_type == "dapo":
        return (loss * mask).sum() / mask.sum().clamp(min=1)
    if loss_type == "dr_grpo":
        return (loss * mask).sum() / (loss.shape[0] * max_completion_length)
    raise AssertionError(loss_type)


@pytest.mark.parametrize("agg", sorted(TRL_LOSS_TYPE))
def test_loss_type_normalisation_matches_our_aggregation(agg):
    g = torch.Generator().manual_seed(0)
    B, T, max_new = 6, 9, 12
    loss = torch.randn(B, T, generator=g, dtype=torch.float64)
    lengths = torch.tensor([1, 3, 9, 5, 2, 7])
    mask = (torch.arange(T)[None, :] < lengths[:, None]).double()
    cfg = GRPOConfig.preset("grpo", agg=agg, max_new=max_new)
    ours = aggregate(loss, mask, agg, max_len=cfg.max_new)
    theirs = _trl_style_aggregate(loss, mask, to_trl_kwargs(cfg)["loss_type"], to_trl_kwargs(cfg)["max_completion_length"])
    torch.testing.assert_close(ours, theirs)


def test_trl_delta_is_a_dual_clip_for_negative_advantages():
    g = torch.Generator().manual_seed(1)
    B, T, eps, c = 8, 5, 0.2, 3.0
    old = torch.randn(B, T, generator=g, dtype=torch.float64)
    logp = (old + 2.0 * torch.randn(B, T, generator=g, dtype=torch.float64)).requires_grad_(True)  # ρ from ~0 to ≫ 3
    adv = torch.tensor([1.5, -1.0, -0.5, 2.0, -2.0, 0.3, -0.7, -1.2], dtype=torch.float64)
    mask = torch.ones(B, T, dtype=torch.float64)
    ours = policy_loss_per_token(logp, old, adv, mask, eps_low=eps, eps_high=eps, dual_clip=c)
    (g_ours,) = torch.autograd.grad(ours.sum(), logp)
    # TRL's two-sided clipping: cap ρ at delta before the min (INTELLECT-2)
    rho = torch.exp(logp - old)
    A_ = adv[:, None]
    theirs = -torch.minimum(torch.clamp(rho, max=c) * A_, torch.clamp(rho, 1 - eps, 1 + eps) * A_)
    (g_theirs,) = torch.autograd.grad(theirs.sum(), logp)
    assert (torch.exp(logp - old) > c).any()                             # the cap is exercised
    torch.testing.assert_close(ours, theirs)
    torch.testing.assert_close(g_ours, g_theirs)


# ---------------------------------------------------------------------------------
# With TRL installed: the kwargs construct a real trl.GRPOConfig
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("device", ["auto", "cpu"])
@pytest.mark.parametrize("name", PRESETS)
def test_trl_grpo_config_constructs(name, device, tmp_path):
    trl = pytest.importorskip("trl")
    kw = to_trl_kwargs(GRPOConfig.preset(name, device=device))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)     # transformers 5 renames gradient_checkpointing
        args = trl.GRPOConfig(output_dir=str(tmp_path), report_to=[], **kw)
    for k, v in kw.items():
        got = getattr(args, k)
        got = getattr(got, "value", got)                                 # enums (lr_scheduler_type)
        assert got == v, (k, got, v)
    assert args.generation_batch_size == kw["per_device_train_batch_size"]



def test_trl_bias_correction_kl_default_is_the_installed_trls():
    """The default the hand-off text states (one constant) is the installed TRL's dataclass default,
    and the mapping passes the opposite of it only where eq. (2)'s unweighted KL needs it."""
    import dataclasses

    from grpo_lab.lm import handoff

    trl = pytest.importorskip("trl")
    fields = {f.name: f for f in dataclasses.fields(trl.GRPOConfig)}
    assert fields["use_bias_correction_kl"].default is handoff.TRL_BIAS_CORRECTION_KL_DEFAULT
    if trl.__version__ == handoff.TRL_VERSION_CHECKED:
        assert handoff.TRL_BIAS_CORRECTION_KL_DEFAULT is True           # TRL 1.16 ships True
    kw = to_trl_kwargs(GRPOConfig.preset("grpo"))
    assert kw["use_bias_correction_kl"] is False
    text = " ".join(differences_table()["TRL"])
    assert f"use_bias_correction_kl defaults to {handoff.TRL_BIAS_CORRECTION_KL_DEFAULT}" in text
