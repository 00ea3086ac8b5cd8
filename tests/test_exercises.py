"""The exercises API: catalog, check, solution, hint, reveal; every reference passes its own checker."""
import inspect
import re

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from grpo_lab import exercises as ex
from grpo_lab import set_language
from grpo_lab.exercises import EXERCISES, Compute, Implement, Predict

IDS = list(EXERCISES)
ISSUE_SIGNATURES = {   # issue 13's table: id -> parameter names
    "bandit.reinforce": ("theta", "action", "reward", "baseline"),
    "advantages.group": ("rewards",),
    "loss.clipped": ("logp", "old_logp", "adv", "mask", "eps"),
    "kl.k3": ("logp", "ref_logp"),
    "agg.seq_mean": ("values", "mask"),
    "agg.token_mean": ("values", "mask"),
}


def _solution_answer(e):
    """The answer a student who copies the reference would hand in."""
    if isinstance(e, Implement):
        ns = {}
        exec("import math\nimport numpy as np\nimport torch\n" + ex.solution(e.id), ns)
        return ns[e.name]
    return ex.solution(e.id)


def test_catalog_has_exercises_of_every_kind_across_00_to_08():
    cat = ex.catalog()
    assert list(cat.columns[:4]) == ["id", "notebook", "kind", "title"]
    assert len(cat) >= 40 and cat["id"].is_unique
    assert set(cat["kind"]) == {"predict", "compute", "implement"}
    per_nb = cat.groupby("notebook").size().to_dict()
    assert sorted(per_nb) == [f"{k:02d}" for k in range(10)]
    assert 1 <= per_nb["00"] <= 2
    assert all(3 <= per_nb[f"{k:02d}"] <= 8 for k in range(1, 10)), per_nb


@pytest.mark.parametrize("exercise_id", ISSUE_SIGNATURES)
def test_issue_implement_ids_exist_with_their_signatures(exercise_id):
    e = ex.get(exercise_id)
    assert e.kind == "implement"
    assert e.params == ISSUE_SIGNATURES[exercise_id]
    assert tuple(inspect.signature(e.reference).parameters) == ISSUE_SIGNATURES[exercise_id]
    row = ex.catalog().set_index("id").loc[exercise_id]
    assert row["signature"].startswith("(") and "->" in row["signature"]


def test_issue_examples_are_exercises():
    cat = ex.catalog().set_index("id")
    for i in ("guess.sign_a9", "length.push_harder", "advantages.flip_one"):
        assert cat.loc[i, "kind"] == "predict"
    for i in ("bandit.grad_b025", "advantages.hand_population", "advantages.hand_sample",
              "length.weights_seq", "length.weights_token"):
        assert cat.loc[i, "kind"] == "compute"


@pytest.mark.parametrize("exercise_id", IDS)
def test_reference_solution_passes_its_own_checker(exercise_id):
    fb = ex.check(exercise_id, _solution_answer(ex.get(exercise_id)))
    assert fb.passed, fb.message
    assert fb.status == "passed" and fb.mistakes == ()


@pytest.mark.parametrize("exercise_id", IDS)
def test_stub_is_not_attempted_and_does_not_raise(exercise_id):
    e = ex.get(exercise_id)
    assert ex.check(exercise_id, None).status == "not attempted"
    ns = {}
    exec("import math\nimport numpy as np\nimport torch\n" + e.stub_code(), ns)
    fb = ex.check(exercise_id, ns[e.name])
    assert fb.status == "not attempted" and not fb.passed
    assert "not attempted yet" in str(fb)


def test_seed_numbers_behind_the_issue_examples():
    # values the notebooks' prose quotes; each comes from the package (one source)
    assert ex.solution("guess.sign_a9") == "negative"
    assert ex.solution("length.push_harder") == "short"
    assert ex.solution("advantages.flip_one") == "b"                       # +0.58 ×3, −1.73
    assert np.allclose(ex.solution("bandit.grad_b025"), [0.5625, 0.0625], atol=0.001)
    assert np.allclose(ex.solution("advantages.hand_population"), [0.5, 0.5, 0.5, 0.5, -2.0], atol=0.001)
    assert np.allclose(ex.solution("advantages.hand_sample"), [0.4472, 0.4472, 0.4472, 0.4472, -1.7889], atol=0.001)
    assert np.allclose(ex.solution("length.weights_seq"), [1 / 6, 1 / 18], atol=1e-4)
    assert np.allclose(ex.solution("length.weights_token"), [1 / 12, 1 / 12], atol=1e-4)


@pytest.mark.parametrize("exercise_id", [i for i in IDS if isinstance(EXERCISES[i], Compute)])
def test_every_known_wrong_value_is_named(exercise_id):
    e = ex.get(exercise_id)
    for k in e.known:
        fb = ex.check(exercise_id, k.value())
        assert not fb.passed and fb.mistakes == (k.key,), (k.key, fb.message)
        assert fb.message == str(k.message)


@pytest.mark.parametrize("exercise_id", [i for i in IDS if isinstance(EXERCISES[i], Compute)])
def test_compute_by_hand_tolerance_and_unrecognised_answers(exercise_id):
    e = ex.get(exercise_id)
    sol = np.asarray(ex.solution(exercise_id), dtype=float)
    assert ex.check(exercise_id, (sol + 0.5 * e.atol).tolist()).passed       # two decimals are enough
    off = sol.copy().reshape(-1)
    off[-1] += 0.37
    fb = ex.check(exercise_id, off.reshape(sol.shape).tolist())
    assert not fb.passed
    where = f"entry {off.size} " if off.size > 1 else "your answer is off"    # which entry; a single number is not "entry 1"
    assert where in fb.message or fb.mistakes                           # says where, not the value
    assert f"{sol.reshape(-1)[-1]:.2f}" not in fb.message or fb.mistakes   # the answer is not given away
    wrong_size = ex.check(exercise_id, [0.0] * (sol.size + 1))
    assert wrong_size.status == "failed" and "number" in wrong_size.message


@pytest.mark.parametrize("exercise_id", [i for i in IDS if isinstance(EXERCISES[i], Predict)])
def test_predict_options(exercise_id):
    e = ex.get(exercise_id)
    right = ex.solution(exercise_id)
    assert ex.check(exercise_id, right.upper() + " ").passed                 # case and spaces do not matter
    for key in e.keys():
        if key != right:
            fb = ex.check(exercise_id, key)
            assert fb.status == "failed" and fb.mistakes == (f"option:{key}",)
            assert "hint" in fb.message
    bad = ex.check(exercise_id, "maybe")
    assert bad.status == "failed" and all(repr(k) in bad.message for k in e.keys())
    assert ex.reveal(exercise_id).text == e.explain()


@pytest.mark.parametrize("exercise_id", IDS)
def test_hints_are_bilingual_and_not_the_answer(exercise_id):
    e = ex.get(exercise_id)
    assert 1 <= len(e.hints) <= 2
    for n, h in enumerate(e.hints, 1):
        assert h.en and h.zh and h.en != h.zh
        assert re.search(r"[\u4e00-\u9fff]", h.zh)
        assert ex.hint(exercise_id, n).text == h.en
    sol = ex.solution(exercise_id)
    if isinstance(e, Compute):
        for v in np.atleast_1d(np.asarray(sol, dtype=float)):
            if abs(v) > 0.05:
                assert all(f"{v:.2f}" not in h.en and f"{v:.3f}" not in h.en for h in e.hints), (v, e.hints)
    if isinstance(e, Implement):
        body = e._split()[1]
        assert all(line.strip() not in h.en for h in e.hints for line in body.splitlines() if len(line.strip()) > 20)
    with pytest.raises(ValueError, match="n must be"):
        ex.hint(exercise_id, len(e.hints) + 1)


def test_case_gives_fresh_copies_of_an_input():
    a = ex.case("advantages.group", 0)
    assert np.array_equal(a[0], [[1, 1, 0, 0]])
    a[0][:] = 9
    assert np.array_equal(ex.case("advantages.group", 0)[0], [[1, 1, 0, 0]])
    with pytest.raises(ValueError, match="k must be"):
        ex.case("advantages.group", 10_000)
    with pytest.raises(ValueError, match="only implement"):
        ex.case("guess.sign_a9", 0)


def test_unknown_id_lists_the_ids():
    with pytest.raises(KeyError, match="exercise_id must be one of"):
        ex.check("no.such", 1)
    with pytest.raises(ValueError, match="only predict"):
        ex.reveal("advantages.group")


def test_feedback_renders_as_a_coloured_box_and_escapes():
    fb = ex.check("advantages.hand_population", [1, 2, 3, 4, "<b>"])
    assert fb.status == "failed"
    html = fb._repr_html_()
    assert html.startswith("<div") and "border-left" in html and "<b>'" not in html
    ok = ex.check("roadmap.granularity", "sequence")._repr_html_()
    assert "#1b7f3b" in ok and "#1b7f3b" not in html
    assert ex.hint("kl.k3")._repr_html_().startswith("<div")
    with pytest.raises(AssertionError, match="not yet"):
        fb.assert_passed()


def test_messages_follow_the_language_switch():
    try:
        set_language("zh")
        fb = ex.check("advantages.group", lambda rewards: np.asarray(rewards) * 0 + 7)
        assert re.search(r"[\u4e00-\u9fff]", fb.message) and "期望" in fb.message
        assert re.search(r"[\u4e00-\u9fff]", ex.hint("advantages.group").text)
        assert "尚未作答" in str(ex.check("kl.k3", None))
        assert ex.catalog().set_index("id").loc["kl.k3", "title"].startswith("实现")
    finally:
        set_language("en")
    assert "expected" in ex.check("advantages.group", lambda rewards: np.asarray(rewards) * 0 + 7).message


def test_solution_of_implement_is_the_reference_source():
    src = ex.solution("advantages.group")
    assert src.startswith("def group_advantages(rewards):") and "ddof" not in src   # population std: numpy default
    assert '"""' in src


@given(st.sampled_from([i for i in IDS if isinstance(EXERCISES[i], Implement)]),
       st.one_of(st.none(), st.integers(), st.text(max_size=5), st.floats(allow_nan=True),
                 st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=6)))
def test_check_never_raises_whatever_the_function_returns(exercise_id, returned):
    fb = ex.check(exercise_id, lambda *args: returned)
    assert fb.status in ("failed", "error") and not fb.passed and fb.message


@given(st.sampled_from([i for i in IDS if isinstance(EXERCISES[i], Compute)]),
       st.one_of(st.integers(), st.text(max_size=5), st.floats(allow_nan=True),
                 st.lists(st.one_of(st.floats(allow_nan=True), st.text(max_size=2)), max_size=6)))
def test_check_never_raises_on_any_value(exercise_id, answer):
    fb = ex.check(exercise_id, answer)
    assert fb.status in ("passed", "failed")


def test_readme_lists_the_exercises_per_notebook():
    from pathlib import Path

    from grpo_lab import readme_table

    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
    cat = ex.catalog()
    listed = [line for line in readme.splitlines() if line.startswith("* **")]
    assert listed == readme_table.exercise_list()             # generated: python -m grpo_lab.readme_table
    ids = [i for line in listed for i in re.findall(r"`([a-z0-9_.]+)`", line)]
    assert sorted(ids) == sorted(cat["id"]) and len(ids) == len(set(ids))   # every exercise once
    assert f"({len(cat)} in all" in readme
