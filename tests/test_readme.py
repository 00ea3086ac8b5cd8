"""The README for a newcomer (issue 31): at most 1,500 words, its notebook table and exercise list generated
(grpo_lab.readme_table: study time from grpo_lab.reading, questions from grpo_lab.roadmap), and the same
table in README.zh.md."""
import re
from pathlib import Path

import pytest

from grpo_lab import readme_table

ROOT = Path(__file__).resolve().parents[1]
README_WORDS = 1500


def test_readme_is_short():
    words = len((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert words <= README_WORDS, f"README.md has {words} words (at most {README_WORDS}); move details to docs/"


@pytest.mark.parametrize("name, lang", [("README.md", "en"), ("README.zh.md", "zh")])
def test_notebook_table_and_exercise_list_are_generated(name, lang):
    text = (ROOT / name).read_text(encoding="utf-8")
    assert readme_table.render(text, lang) == text, f"{name} is stale: run python -m grpo_lab.readme_table"


def test_the_table_has_a_study_time_and_a_compute_time_for_every_notebook():
    rows = readme_table.rows("en")[2:]
    assert len(rows) == len(readme_table.NOTES) == len(list((ROOT / "notebooks").glob("*.ipynb")))
    from grpo_lab import reading

    for row, path in zip(rows, sorted((ROOT / "notebooks").glob("*.ipynb"))):
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", row.strip().strip("|"))]     # "\|" inside a cell
        assert cells[0].startswith(f"[{path.stem}]") and int(cells[3]) == reading.study_minutes(path), row
