"""The metric guide of notebook 06: red flags and the seed's three questions, on the cached broken runs."""
import numpy as np
import pandas as pd
import pytest

from grpo_lab.lm import broken_runs, metric_guide
from grpo_lab.i18n import set_language
from grpo_lab.viz.lm import SampleLog

EXPECTED = {"healthy": [], "no_warm_start": ["no_signal", "runs_to_budget"], "noisy_std": ["noise_amplified"],
            "lr_high": ["ran_away", "collapsed"]}


@pytest.fixture(scope="module")
def runs():
    return broken_runs.load()


def test_the_cache_has_every_run_and_step(runs):
    assert set(runs["run"]) == set(broken_runs.BY_NAME)
    assert (runs.groupby("run")["step"].max() == broken_runs.BASE["steps"]).all()


# after its collapse the lr_high run is all-wrong in about 9 groups of 10 (0.92 over its last 20 steps in the
# cached file; the no_signal threshold is 0.9), so no_signal may come with its own two flags
MAY_ALSO = {"lr_high": ["no_signal"]}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_broken_run_raises_its_red_flags_and_only_those(runs, name):
    flags = metric_guide.red_flags(runs[runs["run"] == name])
    assert set(EXPECTED[name]) <= set(flags) <= set(EXPECTED[name]) | set(MAY_ALSO.get(name, []))


def test_noise_is_judged_by_the_verifier_not_by_the_noisy_rewards(runs):
    noisy = runs[runs["run"] == "noisy_std"]
    assert noisy["frac_informative"].tail(20).mean() > 0.95        # noise makes every group's rewards differ
    share = metric_guide.informative_by_correctness(noisy).tail(20).mean()
    assert 0.2 < share < 0.5                                        # the verifier: about a third have signal
    assert metric_guide.noise_amplification(noisy) > 2.0 > 1.0 > metric_guide.noise_amplification(
        runs[runs["run"] == "healthy"])


def test_the_noisy_run_looks_healthy_on_the_reward(runs):
    s = broken_runs.summary(runs)
    assert abs(s.loc["noisy_std", "reward_mean"] - s.loc["healthy", "reward_mean"]) < 0.02
    assert s.loc["noisy_std", "adv_abs_mean"] > 2.5 * s.loc["healthy", "adv_abs_mean"]


def test_diagnose_answers_the_three_questions(runs):
    healthy = metric_guide.diagnose(runs[runs["run"] == "healthy"])
    noisy = metric_guide.diagnose(runs[runs["run"] == "noisy_std"])
    assert len(healthy) == 3 and list(noisy["answer"]) == ["yes", "yes", "no"]
    assert healthy["answer"].iloc[1] == "no" and healthy["answer"].iloc[0] == "yes"   # 65 % of groups all-correct
    drift = pd.DataFrame({"step": np.arange(40), "frac_informative": 0.5, "adv_abs_mean": 0.4,
                          "len_incorrect": np.linspace(3, 8, 40)})
    assert metric_guide.diagnose(drift)["answer"].tolist() == ["no", "no", "yes"]


def test_guide_table_is_bilingual():
    try:
        en = metric_guide.guide_table()
        set_language("zh")
        zh = metric_guide.guide_table()
    finally:
        set_language("en")
    assert list(en.index) == [g.metric for g in metric_guide.GUIDE]
    assert en.loc["kl", "red flags"] != zh.loc["kl", "red flags"] and "学习率" in zh.loc["kl", "red flags"]


def test_red_flags_needs_steps():
    with pytest.raises(ValueError, match="df"):
        metric_guide.red_flags(pd.DataFrame({"step": [1]}))


def test_noisy_task_adds_noise_to_the_reward_only():
    class Task:
        levels = (1,)

        def reward(self, *a):
            return 1.0

        def correct(self, *a):
            return True

    t = broken_runs.NoisyRewardTask(Task(), 0.1, seed=0)
    r = np.array([t.reward("7", None, False) for _ in range(2000)])
    assert abs(r.mean() - 1) < 0.01 and abs(r.std() - 0.1) < 0.01 and t.correct() and t.levels == (1,)


def test_sample_log_shows_informative_groups_with_their_push():
    samples = pd.DataFrame({"group": [0, 0, 1, 1], "prompt": ["1+1="] * 2 + ["2+2="] * 2,
                            "response": ["2", "3", "4", "4"], "reward": [1.0, 0.0, 1.0, 1.0],
                            "adv": [1.0, -1.0, 0.0, 0.0], "length": [2, 4, 2, 2], "truncated": [False] * 4})
    log = SampleLog(every=5, n=2, show=False)
    table = log.table(samples, "seq-mean-token-mean")
    assert table["group"].tolist() == [0, 0]                                # the degenerate group is skipped
    assert np.allclose(table["push_per_token"], [1 / (4 * 2), -1 / (4 * 4)])   # Â_i/(B·|y_i|), eq. (6)

    class FakeTrainer:
        last_samples = samples
        cfg = type("C", (), {"agg": "seq-mean-token-mean", "max_new": 8})()

    seen = []
    log = SampleLog(every=5, n=2, show=False, then=lambda tr, row: seen.append(row["step"]))
    for step in range(1, 11):
        log(FakeTrainer, {"step": step})
    assert seen == list(range(1, 11)) and sorted(log.frames) == [5, 10]


def test_broken_runs_figure_fits(runs):
    from grpo_lab.viz.broken_runs import broken_runs_figure
    from grpo_lab.viz.panel import MAX_FIG_WIDTH_PX, fig_width_px

    fig = broken_runs_figure(runs)
    assert fig_width_px(fig) <= MAX_FIG_WIDTH_PX and len(fig.axes[0].lines) == len(broken_runs.RUNS)


def test_docs_carry_the_same_guide():
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "lm.md").read_text()
    assert metric_guide.markdown_table() in doc      # the table docs/lm.md carries is the package's, ranges included


# --- the guide's ranges come from the cached runs, not from typed bands --------------------------------
def test_end_ranges_are_the_cached_healthy_runs_last_20_steps():
    from grpo_lab.lm import preset_runs

    ends = metric_guide.healthy_cached_runs()
    assert set(ends.index.get_level_values("source")) == {"broken_runs", "presets", "aggregation"}
    fam = preset_runs.load_run_set("presets")
    d = fam[(fam["preset"] == "dr_grpo") & (fam["seed"] == 1)].sort_values("step").tail(20)
    assert ends.loc[("presets", "dr_grpo", 1), "kl"] == pytest.approx(d["kl"].mean())
    r = metric_guide.end_ranges()
    assert (r["lo"] <= r["hi"]).all() and list(r.index) == [g.metric for g in metric_guide.GUIDE]
    assert r.loc["frac_all_correct", "lo"] == pytest.approx(ends["frac_all_correct"].min())


def test_the_guide_holds_directions_not_bands_and_no_typed_kl_level():
    text = " ".join(str(g.watch) for g in metric_guide.GUIDE)
    assert "0.3–0.7" not in text and "≈ 0.1" not in text and "below 0.05" not in text
    table = metric_guide.guide_table()
    assert "cached healthy runs, end" in table.columns


def test_the_cached_kl_of_the_beta0_presets():
    """Notebook 07's presets at μ = 2, steps 101–150: β = 0 does not mean KL ≈ 0.1 (only DAPO comes near)."""
    from grpo_lab.lm import preset_runs

    fam = preset_runs.load_run_set("presets")
    kl = fam[fam["step"] > 100].groupby("preset")["kl"].mean()
    assert round(kl["dr_grpo"], 3) == 0.011 and round(kl["gspo"], 3) == 0.022
    assert kl["dr_grpo"] < kl["grpo"]                           # the β = 0 preset ends below β = 0.04's


def test_the_old_bands_broken_by_a_healthy_run_lie_inside_the_cached_ranges():
    r = metric_guide.end_ranges()
    for metric, value in (("frac_all_correct", 0.75), ("frac_informative", 0.25), ("group_reward_std", 0.086)):
        assert r.loc[metric, "lo"] <= value <= r.loc[metric, "hi"], (metric, r.loc[metric].to_dict())


def test_every_healthy_cached_run_is_inside_the_ranges_and_a_broken_one_is_not(runs):
    assert metric_guide.outside_ranges(runs[runs["run"] == "healthy"]) == []
    assert "kl" in metric_guide.outside_ranges(runs[runs["run"] == "lr_high"])
    assert "frac_all_wrong" in metric_guide.outside_ranges(runs[runs["run"] == "no_warm_start"])


def test_docs_generated_tables_are_up_to_date():
    """docs/lm.md's generated tables (metrics, metric guide, broken runs) match the package and the data."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, "scripts/regen_lm_tables.py", "--check"], cwd=root,
                          capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "up to date", done.stdout + done.stderr
