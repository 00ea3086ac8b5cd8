"""The README's notebook table, generated: one row per notebook, from the sources the course already has.

The question each notebook answers comes from :data:`grpo_lab.roadmap.NOTEBOOKS` (notebook 00 shows
the same text), the study time from :func:`grpo_lab.reading.study_minutes` (reading at 200 words a
minute, the exercises and the widgets), the number of exercises from :mod:`grpo_lab.exercises`. Only
what no other module knows lives here: the lecture-notes sections a notebook follows and the compute
time its cells take on a laptop CPU (measured with nbval on a 2-core machine; the cached runs are
loaded, not rerun). ``python -m grpo_lab.readme_table`` rewrites the table between the markers in
README.md (English) and README.zh.md (Chinese); tests/test_readme.py fails when either is stale.
"""
from __future__ import annotations

import sys
from pathlib import Path

from grpo_lab import reading, roadmap
from grpo_lab.exercises import by_notebook
from grpo_lab.exercises.notebooks import course_notebooks, notebook_number, destination
from grpo_lab.i18n import Text

ROOT = Path(__file__).resolve().parents[1]
BEGIN, END = "<!-- notebook-table -->", "<!-- /notebook-table -->"
LIST_BEGIN, LIST_END = "<!-- exercise-list -->", "<!-- /exercise-list -->"
KIND_LETTER = {"predict": "p", "compute": "c", "implement": "i"}

# notebook -> (the lecture-notes sections it follows, compute minutes on a laptop CPU)
NOTES = {
    "00": ("004 (family tree); 000 §0, §5", "< 0.1"),
    "01": ("004 §一–二", "< 0.2"),
    "02": ("004 §一 (A = Q − V)", "≈ 0.2"),
    "03": ("000 eq. (1), §1; 004 §三", "≈ 0.2"),
    "04": ("000 eqs. (2)–(4), §2", "≈ 0.3"),
    "04b": ("000 eq. (5), §3", "< 0.2"),
    "05": ("000 §4, eqs. (6)–(7); 004 §四", "≈ 0.3"),
    "06": ("000 §5–6; 004 §三", "≈ 2.5"),
    "07": ("004 §三–四; 000 §2.3", "< 0.5"),
    "08": ("000 §2.3, §4–5; 004 §一, §四", "≈ 0.5"),
    "09": (Text("beyond the notes; builds on 000 eqs. (3)–(7)", "讲义之外；基于 000 式 (3)–(7)"), "≈ 1"),
}
HEAD = {"en": "| notebook | the question it answers | lecture notes | study (min) | compute (min, laptop CPU) | exercises |",
        "zh": "| 笔记本 | 它回答的问题 | 讲义章节 | 学习时间（分钟） | 计算时间（分钟，笔记本电脑 CPU） | 练习 |"}


def exercise_count(stem: str, folder: Path) -> int:
    """How many exercises the notebook ``stem`` shows (04b shows the KL exercises of 04)."""
    nn = notebook_number(stem + ".ipynb")
    pool = {e.id: e for k in {nn[:2], nn} for e in by_notebook(k)}
    return sum(1 for e in pool.values() if destination(e, folder)[0] == stem)


def rows(lang: str = "en", folder: Path | None = None) -> list[str]:
    folder = Path(folder) if folder is not None else ROOT / "notebooks"
    questions = {nb: q for nb, _, q in roadmap.NOTEBOOKS}
    out = [HEAD[lang], "| --- | --- | --- | --- | --- | --- |"]
    for path in course_notebooks(folder):
        stem, nn = path.stem, notebook_number(path)
        notes, compute = NOTES[nn]
        link = f"notebooks/{stem}.ipynb" if lang == "en" else f"notebooks/zh/{stem}.ipynb"
        text = (questions[stem].zh if lang == "zh" else questions[stem].en).replace("|", "\\|")   # a pipe ends a cell
        notes = notes.zh if lang == "zh" and hasattr(notes, "zh") else getattr(notes, "en", notes)
        if lang == "zh":
            notes = notes.replace("eqs. ", "式 ").replace("eq. ", "式 ").replace("family tree", "家谱")
        study = reading.study_minutes(path if lang == "en" else folder / "zh" / path.name)
        n_ex = exercise_count(stem, folder)
        out.append(f"| [{stem}]({link}) | {text} | {notes} | {study} | {compute} | {n_ex or '—'} |")
    return out


def exercise_list(folder: Path | None = None) -> list[str]:
    """``* **NN** (n): `id` (p); …`` per notebook, in the page order of the notebook that shows them."""
    from grpo_lab.exercises.notebooks import exercise_cells

    folder = Path(folder) if folder is not None else ROOT / "notebooks"
    out = []
    for path in course_notebooks(folder):
        nn = notebook_number(path)
        ids = [c.metadata["grpo_lab"]["exercise"] for c in exercise_cells(nn, folder=folder)
               if "prompt" in c.metadata.get("tags", ())]
        if ids:
            listed = "; ".join(f"`{i}` ({KIND_LETTER[by_id(i).kind]})" for i in ids)
            out.append(f"* **{nn}** ({len(ids)}): {listed}")
    return out


def by_id(exercise_id: str):
    from grpo_lab.exercises import get

    return get(exercise_id)


def _between(text: str, begin: str, end: str, lines: list[str]) -> str:
    start, stop = text.index(begin) + len(begin), text.index(end)
    return text[:start] + "\n" + "\n".join(lines) + "\n" + text[stop:]


def render(text: str, lang: str) -> str:
    """``text`` (a README) with the table and the exercise list between their markers regenerated."""
    return _between(_between(text, BEGIN, END, rows(lang)), LIST_BEGIN, LIST_END, exercise_list())


def main(argv=None) -> int:
    for name, lang in (("README.md", "en"), ("README.zh.md", "zh")):
        path = ROOT / name
        old = path.read_text(encoding="utf-8")
        new = render(old, lang)
        if new != old:
            path.write_text(new, encoding="utf-8")
            print(f"wrote {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
