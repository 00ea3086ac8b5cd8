"""The LM loop beyond the lecture notes: the 2025 presets train; the sampler/trainer mismatch is logged and corrected."""
import numpy as np
import pytest
import torch
from tiny_run import TINY, cache  # noqa: F401  (cache is a fixture)

from grpo_lab.lm.config import GRPOConfig
from grpo_lab.lm.trainer import Trainer

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


@pytest.mark.parametrize("preset", ["cispo", "sapo", "gmpo"])
def test_the_2025_presets_train(preset, cache):  # noqa: F811
    tr = Trainer(GRPOConfig.preset(preset, cache_dir=cache, mu=2, **TINY))
    w0 = {n: p.detach().clone() for n, p in tr.policy.named_parameters()}
    rows = [tr.step() for _ in range(2)]
    assert all(np.isfinite(r["loss"]) and np.isfinite(r["grad_norm"]) for r in rows)
    moved = max(float((p - w0[n]).abs().max()) for n, p in tr.policy.named_parameters())
    assert moved > 0 or all(r["adv_abs_mean"] == 0 for r in rows)


def test_fp32_sampler_has_no_mismatch_and_a_hot_sampler_has_one(cache):  # noqa: F811
    base = GRPOConfig.preset("dapo", cache_dir=cache, dynamic_sampling=False, overlong_buffer=0, **TINY)
    same = Trainer(base).step()
    assert same["mismatch_abs_logp"] < 1e-4 and same["mismatch_ratio_max"] == pytest.approx(1.0, abs=1e-3)
    assert same["mismatch_clip_frac"] == 0.0 and same["is_weight_mean"] == 1.0
    hot = Trainer(base.replace(sampler_temperature=2.0)).step()
    assert hot["mismatch_abs_logp"] > 100 * max(same["mismatch_abs_logp"], 1e-6)
    assert hot["mismatch_kl"] > 0 and hot["mismatch_clip_frac"] > 0
    masked = Trainer(base.replace(sampler_temperature=2.0, rollout_is="token_mask", rollout_is_min=0.9,
                                  rollout_is_max=1.1)).step()
    assert 0 < masked["is_masked_frac"] <= 1 and masked["is_weight_mean"] < 1.1


def test_bf16_sampler_mismatch_is_small_but_not_zero(cache):  # noqa: F811
    cfg = GRPOConfig.preset("dapo", cache_dir=cache, dynamic_sampling=False, overlong_buffer=0, device="cpu",
                            sampler_bf16=True, **TINY)
    row = Trainer(cfg).step()
    assert 1e-5 < row["mismatch_abs_logp"] < 0.1


def test_tis_on_a_matching_sampler_changes_nothing(cache):  # noqa: F811
    cfg = GRPOConfig.preset("dapo", cache_dir=cache, dynamic_sampling=False, overlong_buffer=0, **TINY)
    a = Trainer(cfg).step()
    b = Trainer(cfg.replace(rollout_is="token_truncate", rollout_is_max=2.0)).step()
    assert b["is_weight_mean"] == pytest.approx(1.0, abs=1e-4)
    assert b["loss"] == pytest.approx(a["loss"], rel=1e-3, abs=1e-6)


def test_micro_batched_correction_equals_the_whole_batch(cache):  # noqa: F811
    cfg = GRPOConfig.preset("dapo", cache_dir=cache, dynamic_sampling=False, overlong_buffer=0, device="cpu",
                            sampler_temperature=1.5, rollout_is="token_truncate", rollout_is_max=1.5, **TINY)
    torch.manual_seed(0)
    whole = Trainer(cfg).step()
    chunked = Trainer(cfg.replace(tokens_per_microbatch=1)).step()
    for k in ("loss", "mismatch_abs_logp", "is_weight_mean"):
        assert chunked[k] == pytest.approx(whole[k], rel=1e-4, abs=1e-6), k
