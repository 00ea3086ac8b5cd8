"""Chinese mode shows Chinese in notebook 09 (issue 23 §3): what the modules used only by notebook 09 print
under ``set_language("zh")`` — TRL's defaults table, the cached runs' settings, final tables and verdicts,
and the checks, hints and reveals of its exercises — has no run of English words. The labels and values
that the notebook's code reads (``defaults["same as the course's GRPO?"]``, ``final[("eval_greedy_acc", "mean")]``)
stay English in both modes. The detector is ``tests/test_zh_mode.py``'s."""
import math
import re

import pytest

from grpo_lab import exercises as ex
from grpo_lab import reading, set_language
from grpo_lab.exercises import nb09
from grpo_lab.lm import after_runs
from grpo_lab.lm.trl_defaults import trl_defaults_table
from test_zh_mode import _cells, english_runs, zh  # noqa: F401  (zh: the Chinese-mode fixture)

_CJK = re.compile(r"[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def runs():
    return after_runs.load_runs()


def _comparisons(runs):
    """The comparisons notebook 09 prints verdicts for (cells of sections 3 and 4)."""
    mm, ent, fast = (runs[runs.experiment == e] for e in ("mismatch", "entropy_long", "entropy"))
    hot = next(c for c in mm.condition.unique() if c.startswith("sampler") and "+" not in c)
    return [after_runs.compare(mm, "eval_sampled_acc", base="no mismatch"),
            after_runs.compare(mm[mm.condition.str.startswith("sampler")], "eval_sampled_acc", base=hot),
            after_runs.compare(mm, "reward_mean", base="no mismatch", last=10),
            after_runs.compare(ent, "entropy", base="ε_high=0.2", last=10),
            after_runs.compare(ent, "eval_greedy_acc", base="ε_high=0.2"),
            after_runs.compare(fast, "eval_greedy_acc", base="ε_high=0.2")]


def test_the_english_outputs_would_fail_this_test(runs):
    """The same outputs in English mode are caught by the detector: the checks below can fail."""
    set_language("en")
    assert any(english_runs(v) for cmp in _comparisons(runs) for v in after_runs.verdicts(cmp))
    assert any(english_runs(c) for c in _cells(trl_defaults_table().shown()))
    assert english_runs(after_runs.describe_settings("mismatch").splitlines()[0] + " of the runs")


def test_trl_defaults_table_is_chinese_and_code_reads_english(zh):
    t = trl_defaults_table()
    shown = t.shown()
    bad = [c for c in _cells(shown) if english_runs(c)]
    assert not bad, f"English prose in Chinese mode: {bad}"
    assert shown.index.name == "TRL 参数" and list(shown.columns)[0] == "TRL 默认值"
    assert set(shown["与本课程的 GRPO 相同？"]) == {"是", "否"}
    assert all(_CJK.search(x) for x in shown["默认值改变了什么"])
    assert _CJK.search(t._repr_html_()) and shown.shape == t.shape
    # what notebook 09's code reads, in Chinese mode
    differ = list(t.index[~t["same as the course's GRPO?"]])
    assert differ[:3] == ["loss_type", "beta", "use_bias_correction_kl"] and len(differ) == 6
    assert t.loc["loss_type", "TRL default"] == "dapo" and t.loc["beta", "course's GRPO"] == 0.04


def test_verdicts_are_chinese_and_keep_their_numbers(zh, runs):
    for cmp in _comparisons(runs):
        zh_lines = after_runs.verdicts(cmp)
        assert len(zh_lines) == len(cmp)
        for line, (_, r) in zip(zh_lines, cmp.iterrows()):
            assert not english_runs(line), line
            assert f"{r.difference:+.4f} [{r.ci_low:+.4f}, {r.ci_high:+.4f}]" in line and "95 % t 区间" in line
            said = "n = 3 时检测不到差别" in line                    # the words notebook 09 (zh) quotes
            assert said == (not r.detectable), line
            if r.detectable:
                assert ("高" if r.difference > 0 else "低") in line
    set_language("en")
    assert after_runs.verdicts(_comparisons(runs)[0])[0].startswith("sampler τ=1.5: no detectable difference")


@pytest.mark.parametrize("experiment", ["mismatch", "entropy_long", "entropy"])
def test_settings_are_chinese(zh, experiment):
    text = after_runs.describe_settings(experiment)
    assert "基础设置" in text and ": " not in text.splitlines()[0].split("{")[0]
    assert not reading.project_history(text)                         # no code version in what a student reads
    assert not english_runs(text), english_runs(text)


def test_final_table_shows_chinese_and_code_reads_english(zh, runs):
    mm = runs[runs.experiment == "mismatch"]
    final = after_runs.final_table(mm, ["eval_greedy_acc", "is_masked_frac"])
    shown = final.shown()
    assert ("eval_greedy_acc", "均值") in shown.columns and ("随机种子数", "") in shown.columns
    assert shown.index.name == "条件" and not [c for c in map(str, shown.columns) if english_runs(c)]
    assert (final[("eval_greedy_acc", "mean")] == shown[("eval_greedy_acc", "均值")]).all()
    assert "均值" in repr(final) and "均值" in final._repr_html_()


ANSWERS = {            # per exercise: the right answer, its known mistakes, and answers of the wrong form
    "beyond.cispo_weight": [[0.5, 1.0, 5.0], [0.8, 1.0, 1.2], [0.5, 1.0, 0.0], [1, 2, 3], [1, 2], "x", None],
    "beyond.sapo_pushes": ["every", "inside", "maybe", None],
    "beyond.clip_higher_mu1": ["no", "yes", "perhaps", None],
    "beyond.tis_weight": [2.0, math.exp(-1), math.e, 0.0, 1.5, [1, 2], "a", None],
}


@pytest.mark.parametrize("exercise_id", sorted(ANSWERS))
def test_notebook_09_exercises_answer_in_chinese(zh, exercise_id):
    assert {e.id for e in nb09.EXERCISES} == set(ANSWERS)
    said = [str(ex.check(exercise_id, a)) for a in ANSWERS[exercise_id]]
    said += [str(h) for h in [ex.hint(exercise_id)]]
    if exercise_id in ("beyond.sapo_pushes", "beyond.clip_higher_mu1"):
        said.append(str(ex.reveal(exercise_id)))
    assert "通过" in said[0] and all("还不对" in s or "尚未作答" in s for s in said[1:len(ANSWERS[exercise_id])])
    for s in said:
        assert _CJK.search(s) and not english_runs(s), s
