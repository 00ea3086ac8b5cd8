"""Notebook 09's run comparison: a direction is claimed only when the paired 95 % t-interval excludes 0."""
import numpy as np
import pandas as pd
import pytest

from grpo_lab.lm import after_runs


def _runs(diffs):
    rows = []
    for seed, d in enumerate(diffs):
        for cond, base in (("base", 0.5 + 0.1 * seed), ("other", 0.5 + 0.1 * seed + d)):
            for step in (1, 2):
                rows.append({"experiment": "x", "condition": cond, "seed": seed, "step": step, "entropy": base,
                             "eval_acc": base})
    return pd.DataFrame(rows)


def test_a_consistent_difference_is_detected_and_a_noisy_one_is_not():
    sure = after_runs.compare(_runs([0.10, 0.11, 0.09]), "eval_acc", base="base")
    assert sure.loc["other", "detectable"] and sure.loc["other", "difference"] == pytest.approx(0.10)
    half = 4.303 * np.std([0.10, 0.11, 0.09], ddof=1) / np.sqrt(3)                 # t(0.975, 2 df)
    assert sure.loc["other", "ci_high"] - sure.loc["other", "difference"] == pytest.approx(half)
    assert "higher than base" in after_runs.verdicts(sure)[0]
    noisy = after_runs.compare(_runs([0.10, -0.08, 0.02]), "entropy", base="base", last=2)
    assert not noisy.loc["other", "detectable"]
    assert after_runs.verdicts(noisy)[0].startswith("other: no detectable difference in entropy from base at n = 3")


def test_bad_names_are_named():
    with pytest.raises(ValueError, match="base must be one of"):
        after_runs.compare(_runs([0.1, 0.1]), "eval_acc", base="nope")
    with pytest.raises(ValueError, match="column must be one of"):
        after_runs.compare(_runs([0.1, 0.1]), "nope", base="base")


def test_the_cached_files_describe_their_runs():
    runs = after_runs.load_runs()
    meta = after_runs.settings()
    for exp, conds in meta["conditions"].items():
        sub = runs[runs.experiment == exp]
        assert set(sub.condition) <= set(conds)
        assert (sub.groupby("condition").seed.nunique() >= 3).all()
        for cond, d in sub.groupby(["condition", "seed"]):
            assert d.step.tolist() == list(range(1, conds[cond[0]]["steps"] + 1))
    m = after_runs.load_measurements()
    assert m.seed.nunique() >= 3 and set(m.sampler.str[:4]) == {"fp32", "bf16"}
