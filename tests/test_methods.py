"""grpo_lab.methods: one record per method; every table that describes a method derives from it."""
import dataclasses
import subprocess
import sys

import matplotlib.colors as mcolors
import pytest

from grpo_lab import advantages, family, losses, methods
from grpo_lab import length_bias as lb
from grpo_lab.lm import handoff
from grpo_lab.lm.config import GRPOConfig


@pytest.mark.parametrize("name", methods.NAMES)
def test_every_record_names_existing_functions(name):
    m = methods.get(name)
    assert m.estimator in methods.ADV_ESTIMATORS
    assert m.adv_scale in advantages.SCALES and m.adv_std in advantages.STDS
    assert m.agg in losses.MODES and m.ratio_level in losses.LEVELS
    assert 0 <= m.eps_low <= 1 and m.clip_high >= m.eps_low
    assert m.label and m.short and m.paper and m.summary
    assert methods.get(m.label) is m                         # by key or by label


def test_colours_are_distinct_and_never_the_push_colours():
    rgb = [mcolors.to_rgb(methods.colour(n)) for n in methods.NAMES]
    assert len(set(rgb)) == len(rgb)
    reserved = {mcolors.to_rgb(methods.PUSH_UP), mcolors.to_rgb(methods.PUSH_DOWN), mcolors.to_rgb(methods.NEUTRAL)}
    assert not reserved & set(rgb)
    assert mcolors.to_rgb(methods.PUSH_UP) == mcolors.to_rgb("tab:blue")    # blue = pushed up
    assert mcolors.to_rgb(methods.PUSH_DOWN) == mcolors.to_rgb("tab:red")   # red = pushed down
    assert (methods.push_colour(0.3), methods.push_colour(-0.3), methods.push_colour(0.0)) == \
        (methods.PUSH_UP, methods.PUSH_DOWN, methods.NEUTRAL)
    with pytest.raises(ValueError, match="reserved"):
        dataclasses.replace(methods.get("grpo"), colour="tab:blue")


def test_unknown_method_names_the_argument():
    with pytest.raises(ValueError, match="method must be one of"):
        methods.get("reinforce++")


def test_eps_high_default_is_written_once():
    assert methods.resolve_eps_high(0.2, None) == 0.2 and methods.resolve_eps_high(0.2, 0.28) == 0.28
    assert GRPOConfig.preset("grpo").clip_high == 0.2 and GRPOConfig.preset("dapo").clip_high == 0.28


# -- derived tables ------------------------------------------------------------------------
@pytest.mark.parametrize("name", methods.PRESETS)
def test_presets_are_the_records(name):
    m, c = methods.get(name), GRPOConfig.preset(name)
    assert {**GRPOConfig.PRESETS, **GRPOConfig.BEYOND_PRESETS}[name] == {k: getattr(m, k) for k in methods.CONFIG_FIELDS}
    for k in methods.CONFIG_FIELDS:
        assert getattr(c, k) == getattr(m, k), k
    assert set(GRPOConfig.PRESETS) | set(GRPOConfig.BEYOND_PRESETS) == set(methods.PRESETS) == \
        {"grpo", "dr_grpo", "dapo", "gspo", "cispo", "sapo", "gmpo"}
    assert set(GRPOConfig.PRESETS) == {"grpo", "dr_grpo", "dapo", "gspo"}        # the lecture notes' (notebook 07)
    assert methods.LECTURE[:4] == ("grpo", "dr_grpo", "dapo", "gspo") and not {"cispo", "sapo", "gmpo"} & set(methods.LECTURE)


def test_seed_numbers_of_the_presets():
    # the documented recipes (seed 000 eq. 1–7, seed 004 §四): a registry typo would show here
    g, d, a, s = (methods.get(n) for n in ("grpo", "dr_grpo", "dapo", "gspo"))
    assert (g.agg, g.adv_scale, g.eps_low, g.clip_high, g.beta) == ("seq-mean-token-mean", "group", 0.2, 0.2, 0.04)
    assert (d.adv_scale, d.agg, d.beta) == ("none", "seq-mean-token-sum-norm", 0.0)
    assert (a.agg, a.eps_low, a.eps_high, a.dynamic_sampling, a.overlong_buffer) == ("token-mean", 0.2, 0.28, True, 2)
    assert (s.ratio_level, s.eps_low, s.eps_high) == ("sequence", 3e-4, 4e-4)
    assert methods.get("rloo").estimator == "rloo" and not methods.get("rloo").preset


def test_frozen_batch_variants_are_the_records():
    group_methods = [m for m in methods.METHODS.values() if m.estimator != "gae"]
    assert list(family.VARIANTS) == [m.label for m in group_methods if m.lecture]
    assert list(family.BEYOND_VARIANTS) == [m.label for m in group_methods if not m.lecture] == ["CISPO", "SAPO", "GMPO"]
    for m in group_methods:
        v = {**family.VARIANTS, **family.BEYOND_VARIANTS}[m.label]
        assert v.policy_loss == m.policy_loss
        assert (v.estimator, v.mode, v.level, v.eps_low, v.eps_high, v.drop_degenerate) == \
            (m.estimator, m.agg, m.ratio_level, m.eps_low, m.clip_high, m.dynamic_sampling)
        if m.estimator == "grpo":
            assert (v.scale, v.std) == (m.adv_scale, m.adv_std)


def test_length_bias_schemes_are_the_records():
    for n in lb.SHOWN:
        m = methods.get(n)
        assert lb.SCHEMES[n] == {"mode": m.agg, "level": m.ratio_level}
        assert lb.SHORT[n] == m.short and lb.LABELS[n].startswith(m.label + ":")
        assert lb.colour(n) == m.colour
    assert lb.SCHEMES["seq_sum"] == {"mode": "seq-mean-token-sum", "level": "token"}
    assert lb.colour("seq_sum") not in {methods.colour(n) for n in methods.NAMES}


def test_handoff_maps_are_the_inverses_of_the_loss_aliases():
    # TRL's loss_type names are method names; losses.MODE_ALIASES reads them back
    for mode, trl_name in handoff.TRL_LOSS_TYPE.items():
        assert losses.MODE_ALIASES[trl_name] == mode == methods.get(trl_name).agg
    assert {losses.KL_ALIASES[v] for v in handoff.VERL_KL_TYPE.values()} == set(losses.KL_KINDS)
    for kind, name in handoff.VERL_KL_TYPE.items():
        assert losses.resolve_kind(name) == kind
    assert set(handoff.VERL_LOSS_AGG) == set(losses.MODES)


@pytest.mark.parametrize("name", [p for p in methods.PRESETS if p in methods.LECTURE])
def test_trl_and_verl_arguments_carry_the_record(name):
    m = methods.get(name)
    trl = handoff.to_trl_kwargs(GRPOConfig.preset(name))
    assert (trl["loss_type"], trl["epsilon"], trl["epsilon_high"], trl["importance_sampling_level"],
            trl["scale_rewards"], trl["beta"]) == \
        (name if name != "gspo" else "grpo", m.eps_low, m.clip_high, m.ratio_level, m.adv_scale, m.beta)
    verl = handoff.to_verl_overrides(GRPOConfig.preset(name))
    A = handoff.ACTOR
    assert verl[A + "loss_agg_mode"] == m.agg and verl[A + "clip_ratio_high"] == m.clip_high
    assert verl["algorithm.norm_adv_by_std_in_grpo"] == (m.adv_scale == "group")
    assert verl.get("algorithm.filter_groups.enable", False) == m.dynamic_sampling


def test_trl_accepts_every_loss_type_of_the_registry():
    trl = pytest.importorskip("trl")
    import inspect

    doc = inspect.getsource(trl.GRPOConfig)
    for trl_name in handoff.TRL_LOSS_TYPE.values():
        assert f'"{trl_name}"' in doc, trl_name


def test_every_panel_uses_the_registry_colours():
    from grpo_lab.viz import advantages as viz_adv
    from grpo_lab.viz import bandit as viz_bandit
    from grpo_lab.viz import family_panels
    from grpo_lab.viz import length_bias as viz_lb

    assert family_panels.VARIANT_COLORS == {v: methods.colour(v) for v in {**family.VARIANTS, **family.BEYOND_VARIANTS}}
    assert family_panels.PRESET_COLORS == {p: methods.colour(p) for p in methods.PRESETS}
    assert all(viz_lb.COLORS[s] == lb.colour(s) for s in lb.SCHEMES)
    assert (viz_adv.STD_COLOR, viz_adv.NONE_COLOR) == (methods.colour("grpo"), methods.colour("dr_grpo"))
    assert viz_bandit.LADDER_COLORS["group"] == methods.colour("grpo")
    assert viz_bandit.LADDER_COLORS["loo"] == methods.colour("rloo")


def test_methods_imports_no_torch():
    code = "import sys, grpo_lab.methods; print('torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_the_roadmap_tree_names_the_registry_methods():
    from grpo_lab import roadmap

    on_tree = {m.name for m in roadmap.FAMILY}
    assert {methods.get(n).label for n in methods.LECTURE} <= on_tree     # the lecture notes' tree (004)


def test_the_table_shows_what_each_loss_bounds_and_what_trl_reads_as_epsilon_high():
    """CISPO's cap is 5 (TRL reads epsilon_high as the cap, not 1 + 0.2); GMPO's 0.4 bounds log ρ; SAPO has no bound."""
    import math
    t = methods.table(columns=["bound", "TRL epsilon_high", "policy loss"])
    assert t.loc["CISPO", "TRL epsilon_high"] == 5.0 and "min(ρ, 5)" in t.loc["CISPO", "bound"]
    assert t.loc["GMPO", "bound"].startswith("log ρ ∈ [−0.4, 0.4]") and "[0.67, 1.49]" in t.loc["GMPO", "bound"]
    assert round(math.exp(-0.4), 2) == 0.67 and round(math.exp(0.4), 2) == 1.49
    assert math.isnan(t.loc["SAPO", "TRL epsilon_high"]) and math.isnan(t.loc["GMPO", "TRL epsilon_high"])
    assert t.loc["DAPO", "bound"] == "ρ ∈ [0.8, 1.28]" and "eps_high" not in t.columns
    for name in methods.PRESETS:                                   # what the hand-off passes to TRL
        m = methods.get(name)
        if m.policy_loss in ("clip", "cispo"):
            assert handoff.to_trl_kwargs(GRPOConfig.preset(name))["epsilon_high"] == m.trl_epsilon_high, name
