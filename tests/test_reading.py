"""The reading budget of every notebook (issue 31): words a student reads, the three opening lines,
no text about the project's own history, one lecture-notes box, and checks out of sight.
The numbers and word lists live in grpo_lab.reading (one source, also for the README's study times)."""
import re
from pathlib import Path

import nbformat
import pytest

from grpo_lab import reading as R

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))
IDS = [str(p.relative_to(ROOT / "notebooks")) for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_reading_words_within_budget(path):
    words, most = R.reading_words(path), R.budget(path)
    assert words <= most, f"{path.name}: {words} reading words, the budget is {most} (grpo_lab.reading.BUDGET)"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_project_history_in_student_text(path):
    nb = nbformat.read(path, as_version=4)
    found = [(k, c.cell_type, R.project_history(c.source)) for k, c in enumerate(nb.cells)]
    found = [f for f in found if f[2]]
    assert not found, f"{path.name}: text about the project itself (cell, type, words): {found}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_opening_lines(path):
    assert not R.opening_problems(path), f"{path.name}: {R.opening_problems(path)}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_one_lecture_notes_box_at_most(path):
    boxes = [k for k, src in R.student_markdown(path) if any(head in src for head in R.NOTES_BOX.values())]
    assert len(boxes) <= 1, f"{path.name}: the box {R.NOTES_BOX['en']!r} appears in cells {boxes}; say it once"


_ASSERT = re.compile(r"^\s*assert\b", re.M)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_checks_of_claims_are_out_of_sight(path):
    """A visible code cell holds the lines the prose discusses; the asserts that check a claim sit in a
    collapsed cell (metadata jupyter.source_hidden) or in the package (grpo_lab.claims)."""
    nb = nbformat.read(path, as_version=4)
    visible = [k for k, c in enumerate(nb.cells) if c.cell_type == "code" and not R.is_exercise_cell(c)
               and not c.metadata.get("jupyter", {}).get("source_hidden") and _ASSERT.search(c.source)]
    assert not visible, f"{path.name}: visible code cells with asserts: {visible} (move them to a hidden check cell)"


def test_history_words_are_caught_and_ordinary_words_are_not():
    assert R.project_history("the runs were rebuilt on the second machine (Xeon, AVX512)") == [
        "rebuilt", "second machine", "Xeon", "AVX"]
    assert R.project_history("see .gitignore; commit 51dd866; this session") == ["gitignore", "commit 51dd866", "session"]
    assert R.project_history("Commit to an answer, then run the cell. Machine learning; 机器学习。") == []
    assert R.project_history("在第二台机器上重建") == ["第二台机器", "重建"]


def test_words_count_chinese_as_half_a_word_per_character():
    assert R.words("the group mean") == 3
    assert R.words("组内均值 eq. (1)") == 2 + 2
    assert R.words("") == 0


def test_study_minutes_add_reading_exercises_and_widgets(tmp_path):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell(" ".join(["word"] * 2000)),
                nbformat.v4.new_code_cell("p = GroupEditorPanel()\nq = GroupEditorPanel()\nr = ClipPanel(x)")]
    path = tmp_path / "03_x.ipynb"
    nbformat.write(nb, path)
    assert R.widgets(path) == ["GroupEditorPanel", "ClipPanel"]
    assert R.study_minutes(path) == 5 * round((2000 / 200 + 2 * R.WIDGET_MINUTES) / 5)
