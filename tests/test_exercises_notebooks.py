"""The Exercises/Next tail of notebooks 00–07: written by one script, idempotent, and executable.

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

from grpo_lab.exercises import EXERCISES, by_notebook
from grpo_lab.exercises._kinds import Implement
from grpo_lab.exercises.notebooks import (build, course_notebooks, exercise_cells, is_tagged, next_notebook,
                                          notebook_number, tails, write_notebook)

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = course_notebooks(ROOT / "notebooks")


def _key(cell):
    return cell.cell_type, cell.source, cell.get("id"), cell.metadata.get("tags")


def test_there_are_eight_course_notebooks():
    assert [notebook_number(p) for p in NOTEBOOKS] == [f"{k:02d}" for k in range(8)] + ["09"]   # 09: beyond the lecture


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_committed_notebook_ends_with_the_current_exercises_and_next_link(path):
    nb = nbformat.read(path, as_version=4)
    want = exercise_cells(notebook_number(path))
    got = nb.cells[-len(want):]
    assert [_key(c) for c in got] == [_key(c) for c in want], \
        f"{path.name}: run `python -m grpo_lab exercises write-notebooks` (the Exercises tail is out of date)"
    assert sum(is_tagged(c) for c in nb.cells) == len(want), f"{path.name}: tagged cells outside the tail"
    checks = [c for c in got if "check" in c.metadata["tags"]]
    assert len(checks) == len(by_notebook(notebook_number(path)))


def test_next_links_follow_the_course_and_07_links_to_08():
    names = [p.stem for p in NOTEBOOKS if not p.stem.startswith("09")]      # 09 follows 08, which has no exercises
    for a, b in zip(names, names[1:]):
        assert next_notebook(notebook_number(a + ".ipynb"))[0] == b
    assert next_notebook("08")[0] == "09_after_the_lecture"
    assert next_notebook("07")[0] == "08_grpo_real_lm"
    last = exercise_cells("07")[-1]
    assert last.metadata["tags"] == ["nav"] and "(08_grpo_real_lm.ipynb)" in last.source


def test_writer_is_idempotent_and_keeps_the_tail_last_on_any_notebook(tmp_path):
    p = tmp_path / "03_group_advantage.ipynb"
    shutil.copy(ROOT / "notebooks" / p.name, p)
    nb = nbformat.read(p, as_version=4)
    n_prose = sum(not is_tagged(c) for c in nb.cells)
    nb.cells.append(nbformat.v4.new_markdown_cell("a paragraph another author appended"))   # after the old tail
    nb.cells[-3].source = "edited by hand"                                                   # a stale tagged cell
    nbformat.write(nb, p)
    assert write_notebook(p) is True
    assert write_notebook(p) is False                       # second run: nothing to do
    new = nbformat.read(p, as_version=4)
    assert sum(not is_tagged(c) for c in new.cells) == n_prose + 1
    assert new.cells[n_prose].source == "a paragraph another author appended"
    assert [_key(c) for c in new.cells[n_prose + 1:]] == [_key(c) for c in exercise_cells("03")]
    bare = tmp_path / "01_bandit_baselines.ipynb"           # a notebook without any tail yet
    nb = nbformat.read(ROOT / "notebooks" / bare.name, as_version=4)
    nb.cells = [c for c in nb.cells if not is_tagged(c)]
    nbformat.write(nb, bare)
    assert write_notebook(bare) is True and write_notebook(bare) is False


def test_prompts_can_be_written_in_chinese():
    cells = exercise_cells("03", lang="zh")
    assert cells[0].source.startswith("## 练习")
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


def test_student_notebooks_exercise_cells_say_not_attempted():
    checks, errors = _checks_and_errors(_run(tails("student")))
    assert not errors, errors
    assert sorted(checks) == sorted(EXERCISES)
    bad = {i: out for i, out in checks.items() if "not attempted yet" not in out}
    assert not bad, bad


def test_solution_notebooks_exercise_cells_pass():
    nb = _run(tails("solution"))
    checks, errors = _checks_and_errors(nb)
    assert not errors, errors
    assert sorted(checks) == sorted(EXERCISES)
    bad = {i: out for i, out in checks.items() if "passed" not in out}
    assert not bad, bad
    reveals = [c for c in nb.cells if "reveal" in c.metadata.get("tags", ())]
    assert reveals and all(c.outputs for c in reveals)


def test_make_solutions_build(tmp_path):
    paths = build("solution", tmp_path, ROOT / "notebooks")
    assert [p.name for p in paths] == [p.name for p in NOTEBOOKS]
    for src, out in zip(NOTEBOOKS, paths):
        a, b = nbformat.read(src, as_version=4), nbformat.read(out, as_version=4)
        assert [c.source for c in a.cells if not is_tagged(c)] == [c.source for c in b.cells if not is_tagged(c)]
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
                assert c.source == f"display({e.check_code()}.assert_passed())"
    assert len(ids) == len(set(ids)) == 2 * len(EXERCISES)


@pytest.mark.slow
@pytest.mark.parametrize("name", [p.name for p in NOTEBOOKS if not p.name.startswith("06")])
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
    assert len(list((tmp_path / "s").glob("0*.ipynb"))) == 9          # 00–07 and 09
    p = tmp_path / "05_length_bias.ipynb"
    shutil.copy(ROOT / "notebooks" / p.name, p)
    assert main(["exercises", "write-notebooks", str(p), "--lang", "zh"]) == 0
    assert "updated" in capsys.readouterr().out
    assert "## 练习" in p.read_text(encoding="utf-8")
