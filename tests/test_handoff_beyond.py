"""Hand-off beyond the lecture notes: CISPO/SAPO/GMPO and TIS/MIS in TRL's and verl's names, and TRL's defaults."""
import dataclasses
import importlib.util
from pathlib import Path

import pytest

from grpo_lab import methods
from grpo_lab.lm.config import GRPOConfig
from grpo_lab.lm.handoff import mapping_table, to_trl_kwargs, to_verl_overrides
from grpo_lab.lm.trl_defaults import TRL_DEFAULTS, trl_default_config, trl_defaults_table

A = "actor_rollout_ref.actor."


def test_trl_defaults_are_the_installed_trls():
    trl = pytest.importorskip("trl")
    fields = {f.name: f for f in dataclasses.fields(trl.GRPOConfig)}
    for knob, value in TRL_DEFAULTS.items():
        assert fields[knob].default == value, knob
    # the five the issue names, as TRL 1.16 ships them
    assert (TRL_DEFAULTS["loss_type"], TRL_DEFAULTS["beta"], TRL_DEFAULTS["scale_rewards"],
            TRL_DEFAULTS["importance_sampling_level"], TRL_DEFAULTS["num_iterations"]) == ("dapo", 0.0, "group", "token", 1)


def test_defaults_table_sets_trl_beside_the_lecture_notes():
    t = trl_defaults_table()
    assert list(t.index) == list(TRL_DEFAULTS)
    assert t.loc["loss_type", "course's GRPO"] == "grpo" and t.loc["beta", "course's GRPO"] == 0.04
    differ = set(t.index[~t["same as the course's GRPO?"]])
    assert {"loss_type", "beta", "vllm_importance_sampling_correction"} <= differ
    assert {"scale_rewards", "importance_sampling_level", "num_iterations", "epsilon", "epsilon_high"}.isdisjoint(differ)
    assert t["notebook"].str.len().gt(0).all()
    kw = to_trl_kwargs(trl_default_config())       # the config that reproduces TRL's defaults, through the hand-off
    assert {k: kw[k] for k in ("loss_type", "beta", "scale_rewards", "importance_sampling_level", "num_iterations",
                               "vllm_importance_sampling_mode")} == \
        {k: TRL_DEFAULTS[k] for k in ("loss_type", "beta", "scale_rewards", "importance_sampling_level",
                                      "num_iterations", "vllm_importance_sampling_mode")}


def test_the_2025_presets_in_trl_and_verl():
    kw = to_trl_kwargs(GRPOConfig.preset("cispo"))
    assert kw["loss_type"] == "cispo" and kw["epsilon_high"] == 5.0 and "epsilon" not in kw
    kw = to_trl_kwargs(GRPOConfig.preset("sapo"))
    assert (kw["loss_type"], kw["sapo_temperature_pos"], kw["sapo_temperature_neg"]) == ("sapo", 1.0, 1.05)
    with pytest.raises(ValueError, match="policy_loss.*no GMPO"):
        to_trl_kwargs(GRPOConfig.preset("gmpo"))
    with pytest.raises(ValueError, match="agg='seq-mean-token-mean'"):
        to_trl_kwargs(GRPOConfig.preset("cispo", agg="seq-mean-token-mean"))
    v = to_verl_overrides(GRPOConfig.preset("cispo"))
    assert v[A + "policy_loss.loss_mode"] == "cispo" and v[A + "clip_ratio_high"] == 4.0 and v[A + "clip_ratio_low"] == 1.0
    v = to_verl_overrides(GRPOConfig.preset("gmpo"))
    assert v[A + "policy_loss.loss_mode"] == "geo_mean" and v[A + "clip_ratio_high"] == 0.4
    v = to_verl_overrides(GRPOConfig.preset("sapo"))
    assert (v[A + "policy_loss.loss_mode"], v[A + "tau_pos"], v[A + "tau_neg"]) == ("sapo", 1.0, 1.05)
    for name in ("cispo", "sapo", "gmpo"):
        m = methods.get(name)
        assert not m.lecture and m.paper and m.summary
        assert GRPOConfig.preset(name).policy_loss == name


@pytest.mark.parametrize("mode", ["token_truncate", "token_mask", "sequence_truncate", "sequence_mask"])
def test_rollout_correction_carries_trls_names(mode):
    cfg = GRPOConfig.preset("dapo", rollout_is=mode, rollout_is_max=2.0)
    kw = to_trl_kwargs(cfg)
    assert (kw["vllm_importance_sampling_correction"], kw["vllm_importance_sampling_mode"],
            kw["vllm_importance_sampling_clip_max"]) == (True, mode, 2.0)
    if mode.endswith("truncate"):
        v = to_verl_overrides(cfg)
        assert v["algorithm.rollout_correction.rollout_is"] == mode.split("_")[0]
        assert v["algorithm.rollout_correction.rollout_is_threshold"] == 2.0
    else:
        with pytest.raises(ValueError, match="rollout_is"):
            to_verl_overrides(cfg)
    assert to_trl_kwargs(GRPOConfig.preset("dapo"))["vllm_importance_sampling_correction"] is False


def test_rollout_correction_keys_exist_in_verls_config():
    yaml = pytest.importorskip("yaml")
    spec = importlib.util.find_spec("verl")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("verl is not installed")
    conf = yaml.safe_load((Path(spec.submodule_search_locations[0]) / "trainer" / "config"
                           / "_generated_ppo_trainer.yaml").read_text())
    keys = [k for k in to_verl_overrides(GRPOConfig.preset("dapo", rollout_is="token_truncate"))
            if k.startswith("algorithm.rollout_correction.")]
    assert len(keys) == 2
    for k in keys:
        node = conf
        for part in k.split("."):
            assert part in node, k
            node = node[part]


def test_mapping_table_shows_the_new_rows_for_every_preset():
    df = mapping_table(["cispo", "gmpo"])
    concepts = set(df.concept)
    assert any(c.startswith("per-token policy term") for c in concepts)
    assert any(c.startswith("sampler/trainer correction") for c in concepts)
    gmpo = df[(df.preset == "gmpo") & df.concept.str.startswith("per-token policy term")]
    assert gmpo.TRL.iloc[0].startswith("✗")
