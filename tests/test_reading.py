"""The reading budget of every notebook (issue 31): the words a student reads, the three opening lines, no
text about the project's own history, one lecture-notes box, and checks out of sight; then the counting
rules themselves. The numbers and word lists live in grpo_lab.reading (one source, also for the README's
study times)."""
import re
from pathlib import Path

import nbformat
import pytest

from grpo_lab import reading as R

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))
IDS = [str(p.relative_to(ROOT / "notebooks")) for p in NOTEBOOKS]
ASSERT = re.compile(r"^\s*assert\b", re.M)


def _hidden(cell) -> bool:
    return bool(cell.metadata.get("jupyter", {}).get("source_hidden"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_reading_budget(path):
    words, budget = R.reading_words(path), R.budget(path)
    limit = budget * (R.ZH_SLACK if R.is_chinese(path) else 1)
    assert words <= limit, f"{path.name}: {words} reading words, budget {budget}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_no_project_history_in_any_cell(path):
    nb = nbformat.read(path, as_version=4)
    found = [(c.get("id"), R.project_history(c.source)) for c in nb.cells if R.project_history(c.source)]
    assert found == [], f"{path.name}: words about the project itself (grpo_lab.reading.PROJECT_HISTORY): {found}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_opening_lines(path):
    assert R.opening_problems(path) == [], path.name


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_at_most_one_lecture_notes_box(path):
    nb = nbformat.read(path, as_version=4)
    boxes = [c.get("id") for c in nb.cells if c.cell_type == "markdown"
             and any(b in c.source for b in R.NOTES_BOX.values())]
    assert len(boxes) <= 1, f"{path.name}: {len(boxes)} cells headed 'Where the lecture notes are incomplete': {boxes}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_checks_sit_in_collapsed_cells(path):
    nb = nbformat.read(path, as_version=4)
    visible = [c.get("id") for c in nb.cells if c.cell_type == "code" and not R.is_exercise_cell(c)
               and not _hidden(c) and ASSERT.search(c.source)]
    assert visible == [], f"{path.name}: asserts in visible code cells {visible}: move them to a collapsed check cell"


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
