"""The verl hand-off checked against verl itself: every key ``handoff.verl_command_line`` emits
must exist in the trainer config that ships in the verl wheel.

``make test`` installs verl with ``--no-deps`` (its own dependencies — ray, vLLM, … — are not
needed to read a YAML file; verl itself is never imported). The config read is
``verl/trainer/config/_generated_ppo_trainer.yaml``, the fully composed default config of
``python -m verl.trainer.main_ppo``. A key written ``+a.b.c`` is a Hydra *addition*: its parent
``a`` must exist, and the key itself must not (Hydra refuses ``+`` on an existing key).
"""
import importlib.metadata
import importlib.util
import os
from pathlib import Path

import pytest

import yaml

from grpo_lab import methods
from grpo_lab.lm import handoff
from grpo_lab.lm.config import GRPOConfig

SPEC = importlib.util.find_spec("verl")
if (SPEC is None or not SPEC.submodule_search_locations) and not os.environ.get("CI"):  # under CI: fail
    pytest.skip("verl is not installed (make test: pip install --no-deps verl==0.9.1)", allow_module_level=True)
CONFIG = Path(SPEC.submodule_search_locations[0]) / "trainer" / "config" / "_generated_ppo_trainer.yaml"
VERL = yaml.safe_load(CONFIG.read_text())

# settings that switch on rows of the mapping the presets leave off
VARIANTS = [dict(), dict(kl_form="reward", beta=0.01), dict(dual_clip=3.0), dict(kl_kind="k1", beta=0.01),
            dict(kl_kind="k2", beta=0.01), dict(lr_warmup=0), dict(steps=0), dict(mu=4)]


def _lookup(key: str):
    node = VERL
    for part in key.split("."):
        if not isinstance(node, dict) or part not in node:
            raise KeyError(part)
        node = node[part]
    return node


def _exists(key: str) -> bool:
    try:
        _lookup(key)
        return True
    except KeyError:
        return False


def test_the_checked_release_is_installed():
    assert importlib.metadata.version("verl") == handoff.VERL_VERSION_CHECKED


@pytest.mark.parametrize("over", VARIANTS, ids=lambda d: ",".join(f"{k}={v}" for k, v in d.items()) or "preset")
@pytest.mark.parametrize("name", methods.PRESETS)
def test_every_emitted_key_is_in_verls_config(name, over):
    if "dual_clip" in over and methods.get(name).policy_loss != "clip":
        pytest.skip("the 2025 policy losses have no dual clip (GRPOConfig refuses it)")
    lines = handoff.verl_command_line(GRPOConfig.preset(name, **over))
    assert lines
    for line in lines:
        key = line.split("=", 1)[0]
        if key.startswith("+"):
            parent = key[1:].split(".")[0]
            assert _exists(parent), f"{line}: verl's config has no section {parent!r}"
            assert not _exists(key[1:]), f"{line}: the key exists, so it must not be added with '+'"
        else:
            assert _exists(key), f"{line}: verl {handoff.VERL_VERSION_CHECKED}'s trainer config has no key {key!r}"


def test_the_check_catches_a_wrong_key():
    assert _exists("actor_rollout_ref.actor.clip_ratio_high")
    assert not _exists("actor_rollout_ref.actor.clip_ratio_higher")          # a typo would be reported
    assert not _exists("reward_model.overlong_buffer.len")                    # the pre-0.9 location


def test_values_are_of_a_kind_verl_accepts():
    # the enumerations the mapping relies on are verl's own names
    assert _lookup("actor_rollout_ref.actor.loss_agg_mode") in handoff.VERL_LOSS_AGG.values()
    assert _lookup("actor_rollout_ref.actor.kl_loss_type") in handoff.VERL_KL_TYPE.values()
    assert _lookup("algorithm.kl_penalty") in handoff.VERL_KL_TYPE.values()
    assert isinstance(_lookup("algorithm.norm_adv_by_std_in_grpo"), bool)
    assert isinstance(_lookup("algorithm.filter_groups.enable"), bool)
