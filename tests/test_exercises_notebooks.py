"""The exercise cells of notebooks 00–08: written by one script, placed, idempotent, executable, not spoiling.

What runs here (CI time): the Exercises sections of all eight notebooks are executed twice in
one kernel each — once as committed (every check says "not attempted yet") and once with the
reference answers in place of the stubs (every check passes). About 25 s in all. The sections
are self-contained (their setup cell imports what they use), so together with the nbval run
of the committed notebooks this covers "each notebook, answered, runs top to bottom". The
full answered notebooks run with ``make solutions-test``; the slow test below runs those of
00–05 and 07 (06 trains a model for minutes and is covered by its tail).
"""
import re
import shutil
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from grpo_lab.exercises import EXERCISES, by_notebook, placement
from grpo_lab.exercises._kinds import Implement, Predict
from grpo_lab.exercises.notebooks import (build, course_notebooks, destination, exercise_cells, is_tagged,
                                          next_notebook, notebook_number, tails, with_exercises, write_notebook)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = course_notebooks(ROOT / "notebooks")


def _key(cell):
    return cell.cell_type, cell.source, cell.get("id"), cell.metadata.get("tags")


def test_the_course_notebooks_in_order():
    assert [notebook_number(p) for p in NOTEBOOKS][:11] == ["00", "01", "02", "03", "04", "04b", "05", "06", "07", "08", "09"]
    assert notebook_number("04b_kl_penalty.ipynb") == "04b"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_holds_the_current_exercise_cells(path):
    nb = nbformat.read(path, as_version=4)
    fresh = with_exercises(nb, notebook_number(path), folder=path.parent)
    assert [_key(c) for c in nb.cells] == [_key(c) for c in fresh.cells], \
        f"{path.name}: run `python -m grpo_lab exercises write-notebooks` (the exercise cells are out of date)"
    assert all(not c.get("outputs") for c in nb.cells if c.cell_type == "code"), f"{path.name}: outputs not cleared"


@pytest.mark.parametrize("exercise_id", [i for i, e in EXERCISES.items() if isinstance(e, Predict)])
def test_every_prediction_sits_right_before_the_cell_that_reveals_it(exercise_id):
    stem, anchor = destination(EXERCISES[exercise_id], ROOT / "notebooks")
    assert anchor is not None, f"{exercise_id}: no anchor found in notebooks/ (placement.ANCHORS)"
    cells = nbformat.read(ROOT / "notebooks" / f"{stem}.ipynb", as_version=4).cells
    roles = [c.metadata.get("grpo_lab", {}) for c in cells]
    k = max(i for i, r in enumerate(roles) if r.get("exercise") == exercise_id)
    assert roles[k]["role"] == "reveal"
    nxt = next(c for c in cells[k + 1:] if "placed" not in c.metadata.get("tags", ()))
    assert nxt.get("id") == anchor and not is_tagged(nxt)
    first = min(i for i, r in enumerate(roles) if r.get("exercise") == exercise_id)
    assert all(not is_tagged(c) or "placed" in c.metadata["tags"] for c in cells[:first])   # in the body, not the end


def test_next_links_follow_the_course_and_07_links_to_08():
    names = [p.stem for p in NOTEBOOKS if not p.stem.startswith("09")]      # 09 follows 08, which has no exercises
    for a, b in zip(names, names[1:]):
        assert next_notebook(notebook_number(a + ".ipynb"))[0] == b
    assert next_notebook("08")[0] == "09_after_the_lecture"
    assert next_notebook("07")[0] == "08_grpo_real_lm"
    last = exercise_cells("07")[-1]
    assert last.metadata["tags"] == ["nav"] and "(08_grpo_real_lm.ipynb)" in last.source


def test_writer_is_idempotent_and_keeps_body_cells_on_any_notebook(tmp_path):
    p = tmp_path / "03_group_advantage.ipynb"
    shutil.copy(ROOT / "notebooks" / p.name, p)
    nb = nbformat.read(p, as_version=4)
    body = [c.source for c in nb.cells if not is_tagged(c)]
    nb.cells.append(nbformat.v4.new_markdown_cell("a paragraph another author appended"))   # after the old tail
    nb.cells[-3].source = "edited by hand"                                                   # a stale tagged cell
    nbformat.write(nb, p)
    assert write_notebook(p) is True
    assert write_notebook(p) is False                       # second run: nothing to do
    new = nbformat.read(p, as_version=4)
    assert [c.source for c in new.cells if not is_tagged(c)] == body + ["a paragraph another author appended"]
    tail = [c for c in exercise_cells("03", folder=tmp_path) if "placed" not in c.metadata["tags"]]
    assert [_key(c) for c in new.cells[-len(tail):]] == [_key(c) for c in tail]
    bare = tmp_path / "01_bandit_baselines.ipynb"           # a notebook without any exercise cells yet
    nb = nbformat.read(ROOT / "notebooks" / bare.name, as_version=4)
    nb.cells = [c for c in nb.cells if not is_tagged(c)]
    nbformat.write(nb, bare)
    assert write_notebook(bare) is True and write_notebook(bare) is False


def test_a_missing_anchor_sends_the_prediction_to_the_exercises_section(tmp_path):
    p = tmp_path / "02_advantage_guess_number.ipynb"
    nb = nbformat.read(ROOT / "notebooks" / p.name, as_version=4)
    nb.cells = [c for c in nb.cells if c.get("id") != placement.ANCHORS["guess.sign_a9"][0][1]]   # another author removed it
    nbformat.write(nb, p)
    write_notebook(p)
    cells = nbformat.read(p, as_version=4).cells
    intro = next(i for i, c in enumerate(cells) if c.get("id") == "ex-02-intro")
    assert any(c.metadata.get("grpo_lab", {}).get("exercise") == "guess.sign_a9" for c in cells[intro:])


def test_kl_exercises_follow_the_kl_cells_into_the_split_notebook(tmp_path):
    """Notebook 04 is split: the KL cells moved, ids unchanged, into 04b_kl_penalty, and its exercises followed."""
    nb = ROOT / "notebooks"
    assert destination(EXERCISES["kl.placement"], nb) == ("04b_kl_penalty", "99d3ef23")
    assert destination(EXERCISES["kl.k3"], nb) == ("04b_kl_penalty", None)
    a = nbformat.read(nb / "04_grpo_loss.ipynb", as_version=4).cells
    b = nbformat.read(nb / "04b_kl_penalty.ipynb", as_version=4).cells
    in_a = {c.metadata["grpo_lab"]["exercise"] for c in a if "grpo_lab" in c.metadata}
    in_b = {c.metadata["grpo_lab"]["exercise"] for c in b if "grpo_lab" in c.metadata}
    assert {"kl.placement", "kl.k3", "kl.k3_value"} <= in_b and not in_a & in_b
    assert {"loss.clipped", "loss.clip_gradient", "credit.emergence"} <= in_a
    k = next(i for i, c in enumerate(b) if c.get("id") == "99d3ef23")
    assert b[k - 1].metadata["grpo_lab"] == {"exercise": "kl.placement", "anchor": "99d3ef23", "role": "reveal"}
    # before the split existed (a folder holding only 04), the KL exercises waited in 04's Exercises section
    shutil.copy(nb / "04_grpo_loss.ipynb", tmp_path / "04_grpo_loss.ipynb")
    assert destination(EXERCISES["kl.k3"], tmp_path) == ("04_grpo_loss", None)


def test_prompts_can_be_written_in_chinese():
    cells = exercise_cells("03", lang="zh")
    assert cells[0].source.startswith("**练习 3.1 ·") and any(c.source.startswith("## 练习") for c in cells)
    assert any("退化组" in c.source for c in cells if "prompt" in c.metadata["tags"])
    en = exercise_cells("03")
    assert [c.source for c in cells if c.cell_type == "code"] == [c.source for c in en if c.cell_type == "code"]


def _run(nb):
    nb.cells.insert(0, nbformat.v4.new_code_cell("import matplotlib\nmatplotlib.use('Agg')"))
    NotebookClient(nb, timeout=600, kernel_name="python3", allow_errors=True).execute()
    return nb


def _outputs(cell) -> str:
    parts = []
    for o in cell.outputs:
        if o.output_type == "error":
            parts.append(f"ERROR {o.ename}: {o.evalue}")
        elif "data" in o:
            parts.append(o.data.get("text/plain", ""))
        elif o.output_type == "stream":
            parts.append(o.text)
    return "\n".join(parts)


def _checks_and_errors(nb):
    checks = {c.metadata["grpo_lab"]["exercise"]: _outputs(c) for c in nb.cells if "check" in c.metadata.get("tags", ())}
    errors = [(c.source[:80], _outputs(c)) for c in nb.cells if c.cell_type == "code" and "ERROR" in _outputs(c)]
    return checks, errors


def _reveal_texts():
    from grpo_lab import exercises as ex

    return {i: ex.reveal(i).text[:40] for i, e in EXERCISES.items() if isinstance(e, Predict)}


def test_student_notebooks_exercise_cells_say_not_attempted_and_do_not_spoil():
    nb = _run(tails("student"))
    checks, errors = _checks_and_errors(nb)
    assert not errors, errors
    assert sorted(checks) == sorted(EXERCISES)
    bad = {i: out for i, out in checks.items() if "not attempted yet" not in out}
    assert not bad, bad
    texts = _reveal_texts()
    reveals = {c.metadata["grpo_lab"]["exercise"]: _outputs(c) for c in nb.cells if "reveal" in c.metadata.get("tags", ())}
    assert sorted(reveals) == sorted(texts)
    spoiled = {i: out[:80] for i, out in reveals.items() if texts[i] in out}
    assert not spoiled, spoiled                                    # Run All shows a button, not the answer
    assert all("Answer first" in out for out in reveals.values())


def test_solution_notebooks_exercise_cells_pass():
    nb = _run(tails("solution"))
    checks, errors = _checks_and_errors(nb)
    assert not errors, errors
    assert sorted(checks) == sorted(EXERCISES)
    bad = {i: out for i, out in checks.items() if "passed" not in out}
    assert not bad, bad
    texts = _reveal_texts()
    reveals = {c.metadata["grpo_lab"]["exercise"]: _outputs(c) for c in nb.cells if "reveal" in c.metadata.get("tags", ())}
    assert reveals and all(texts[i] in out for i, out in reveals.items())   # answered: the reveal is shown


def test_make_solutions_build(tmp_path):
    paths = build("solution", tmp_path, ROOT / "notebooks")
    assert [p.name for p in paths] == [p.name for p in NOTEBOOKS]
    for src, out in zip(NOTEBOOKS, paths):
        a, b = nbformat.read(src, as_version=4), nbformat.read(out, as_version=4)
        assert [c.source for c in a.cells if not is_tagged(c)] == [c.source for c in b.cells if not is_tagged(c)]
        assert [c.id for c in a.cells] == [c.id for c in b.cells]       # the same cells in the same places
        answers = [c for c in b.cells if "answer" in c.metadata.get("tags", ())]
        for c in answers:
            e = EXERCISES[c.metadata["grpo_lab"]["exercise"]]
            assert c.source == e.solution_code() and "NotImplementedError" not in c.source
        assert all(not c.get("outputs") for c in b.cells if c.cell_type == "code")


def test_nbgrader_export_format(tmp_path):
    paths = build("nbgrader", tmp_path, ROOT / "notebooks")
    assert paths[3] == tmp_path / "source" / "03_group_advantage" / "03_group_advantage.ipynb"
    ids = []
    for p in paths:
        nb = nbformat.read(p, as_version=4)
        for c in nb.cells:
            meta = c.metadata.get("nbgrader")
            if meta is None:
                continue
            assert meta["schema_version"] == 3 and re.fullmatch(r"[A-Za-z0-9_-]+", meta["grade_id"])
            ids.append(meta["grade_id"])
            e = EXERCISES[c.metadata["grpo_lab"]["exercise"]]
            if meta["solution"]:
                assert not meta["grade"] and not meta["locked"] and c.cell_type == "code"
                assert "### BEGIN SOLUTION" in c.source and "### END SOLUTION" in c.source
                body = "\n".join(l for l in c.source.splitlines() if "### " not in l)
                assert body == e.solution_code()              # markers only wrap the reference answer
                if isinstance(e, Implement):
                    assert c.source.startswith(e.stub_code().splitlines()[0])   # the def line stays for the student
            else:
                assert meta["grade"] and meta["locked"] and meta["points"] == 1
                assert c.source.endswith(f"display({e.check_code()}.assert_passed())")
    assert len(ids) == len(set(ids)) == 2 * len(EXERCISES)


@pytest.mark.slow
@pytest.mark.parametrize("name", [p.name for p in NOTEBOOKS if not p.name.startswith(("06", "08"))])
def test_answered_notebook_runs_top_to_bottom(tmp_path, name):
    out = tmp_path / name
    write_notebook(ROOT / "notebooks" / name, "solution", out=out)
    nb = nbformat.read(out, as_version=4)
    NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(ROOT / "notebooks")}}).execute()
    checks, errors = _checks_and_errors(nb)
    assert not errors and checks and all("passed" in v for v in checks.values()), checks


def test_command_line(tmp_path, capsys):
    from grpo_lab.__main__ import main

    assert main(["exercises", "list"]) == 0
    assert "advantages.group" in capsys.readouterr().out
    assert main(["exercises", "solutions", "--out", str(tmp_path / "s"), "--notebooks", str(ROOT / "notebooks")]) == 0
    assert len(list((tmp_path / "s").glob("0*.ipynb"))) == len(NOTEBOOKS)
    p = tmp_path / "05_length_bias.ipynb"
    shutil.copy(ROOT / "notebooks" / p.name, p)
    assert main(["exercises", "write-notebooks", str(p), "--lang", "zh"]) == 0
    assert "updated" in capsys.readouterr().out
    assert "## 练习" in p.read_text(encoding="utf-8")
