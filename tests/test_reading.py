"""The reading-budget rules of issue 31 (grpo_lab.reading). The per-notebook checks (budget, opening lines,
no project history, one lecture-notes box, checks out of sight) join this file with the editorial pass
that meets them (branch wip-31-32); until then these tests hold the counting rules themselves.
Originally: the reading budget of every notebook (issue 31): words a student reads, the three opening lines,
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
