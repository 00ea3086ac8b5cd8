"""The Exercises section and the "Next" link at the end of every notebook, from one source.

Three variants of the same cells:

* ``student`` — what is committed: answer cells hold a stub (``None`` or a function that
  raises ``NotImplementedError``), so every check cell says "not attempted yet" and nbval passes.
* ``solution`` — the instructor's build (``make solutions``): stubs replaced by the
  reference answers (:func:`grpo_lab.exercises.solution`).
* ``nbgrader`` — nbgrader's source format: answers between ``### BEGIN SOLUTION`` /
  ``### END SOLUTION`` in solution cells, and check cells as autograded tests
  (``display(ex.check(...).assert_passed())``), with nbgrader's cell metadata (schema version 3).

Every cell written here carries the tag ``exercise`` (or ``nav`` for the final link) in its
metadata, so :func:`write_notebook` first removes the tagged cells and then appends fresh
ones: it is idempotent and works on any version of the notebook's other cells. Cell ids
are derived from the exercise ids, so a re-run changes nothing.

Command line: ``python -m grpo_lab exercises {write-notebooks,solutions,nbgrader,list}``.
"""
from __future__ import annotations

import argparse
import re
from contextlib import contextmanager
from pathlib import Path

import nbformat

from grpo_lab import i18n, roadmap
from grpo_lab.exercises import by_notebook
from grpo_lab.exercises._kinds import Exercise, Predict
from grpo_lab.i18n import Text, tr

TAGS = ("exercise", "nav")
VARIANTS = ("student", "solution", "nbgrader")
LAST = "08_grpo_real_lm"          # notebook 07 links on to the real-model notebook (issue 12)
SETUP = ("from IPython.display import display\nimport math\nimport numpy as np\nimport torch\n"
         "from grpo_lab import exercises as ex")
KIND_LABEL = {"predict": Text("predict, then reveal", "先预测，再揭晓"), "compute": Text("by hand", "手算"),
              "implement": Text("implement", "编程实现")}
INTRO = Text(
    "## Exercises\n\n"
    "Each exercise has a prompt, an answer cell and a check cell. Put your answer into the answer cell and run "
    "the check: it says what is right, or names the mistake when it is a typical one. Stuck? "
    "`ex.hint(\"id\")` gives a hint (`ex.hint(\"id\", 2)` a second one, where there is one). "
    "**Predict** exercises: commit to your answer and run the check *before* you run the reveal cell below it. "
    "`ex.catalog()` lists every exercise of the course.",
    "## 练习\n\n"
    "每道练习有题目、作答单元和检查单元。把答案写进作答单元，再运行检查：它会告诉你哪里对，如果是典型错误还会"
    "指出错误的名字。卡住了？`ex.hint(\"id\")` 给一个提示（有第二个提示时用 `ex.hint(\"id\", 2)`）。"
    "**预测**题：先写下你的答案并运行检查，*然后*再运行下面的揭晓单元。`ex.catalog()` 列出全课程的练习。")


@contextmanager
def language(lang: str | None):
    """Temporarily switch :mod:`grpo_lab.i18n` (None keeps the current language)."""
    old = i18n.get_language()
    if lang is not None:
        i18n.set_language(lang)
    try:
        yield
    finally:
        i18n.set_language(old)


def notebook_number(path) -> str:
    """"03" for ``…/03_group_advantage.ipynb``; a ValueError for a name without the NN_ prefix."""
    m = re.match(r"(\d\d)_", Path(path).name)
    if not m:
        raise ValueError(f"path must name a course notebook NN_name.ipynb, got {Path(path).name!r}")
    return m.group(1)


def _course_order() -> list[tuple[str, str]]:
    order = [(name, title) for name, title, _ in roadmap.NOTEBOOKS]
    if LAST not in {n for n, _ in order}:
        order.append((LAST, "GRPO on a real pretrained model"))
    return order


def next_notebook(nn: str) -> tuple[str, str] | None:
    """(name, title) of the notebook after ``NN`` in the course, or None after the last one."""
    order = _course_order()
    for k, (name, _) in enumerate(order):
        if name.startswith(f"{nn}_"):
            return order[k + 1] if k + 1 < len(order) else None
    return None


def _cell(kind: str, source: str, cell_id: str, tags, **meta):
    make = nbformat.v4.new_code_cell if kind == "code" else nbformat.v4.new_markdown_cell
    cell = make(source)
    cell.id = re.sub(r"[^A-Za-z0-9_-]", "-", cell_id)[:64]
    cell.metadata["tags"] = list(tags)
    cell.metadata.update(meta)
    return cell


def _slug(e: Exercise) -> str:
    return e.id.replace(".", "-").replace("_", "-")


def _nbgrader(grade_id: str, *, solution=False, grade=False, points=None, locked=False) -> dict:
    meta = {"grade": grade, "grade_id": grade_id, "locked": locked, "schema_version": 3, "solution": solution}
    if grade:
        meta["points"] = points
    return {"nbgrader": meta}


def exercise_cells(nn: str, variant: str = "student", lang: str | None = None) -> list:
    """The tagged cells of notebook ``NN``: intro, setup, then prompt / answer / check (/ reveal) per exercise, then "Next"."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    cells = []
    with language(lang):
        exercises = by_notebook(nn)
        if exercises:
            cells.append(_cell("markdown", str(INTRO), f"ex-{nn}-intro", ("exercise",)))
            cells.append(_cell("code", SETUP, f"ex-{nn}-setup", ("exercise", "setup")))
        for k, e in enumerate(exercises, 1):
            slug = _slug(e)
            gid = lambda role: f"{role}-{slug}"                     # noqa: E731  nbgrader grade_id
            meta = lambda role: {"grpo_lab": {"exercise": e.id, "role": role}}   # noqa: E731
            head = f"**{tr('Exercise', '练习')} {int(nn)}.{k} · {KIND_LABEL[e.kind]} — {e.title}** (`{e.id}`)"
            cells.append(_cell("markdown", f"{head}\n\n{e.prompt}", f"ex-{slug}-prompt", ("exercise", "prompt"),
                               **meta("prompt")))
            answer = {"student": e.stub_code, "solution": e.solution_code, "nbgrader": e.nbgrader_code}[variant]()
            extra = _nbgrader(gid("answer"), solution=True) if variant == "nbgrader" else {}
            cells.append(_cell("code", answer, f"ex-{slug}-answer", ("exercise", "answer"), **meta("answer"), **extra))
            # nbgrader: a grade cell passes when it does not raise; display() keeps its output a
            # display_data (an execute_result would be read as partial credit)
            check = f"display({e.check_code()}.assert_passed())" if variant == "nbgrader" else e.check_code()
            extra = _nbgrader(gid("check"), grade=True, points=1, locked=True) if variant == "nbgrader" else {}
            cells.append(_cell("code", check, f"ex-{slug}-check", ("exercise", "check"), **meta("check"), **extra))
            if isinstance(e, Predict):
                cells.append(_cell("code", e.reveal_code(), f"ex-{slug}-reveal", ("exercise", "reveal"), **meta("reveal")))
        nxt = next_notebook(nn)
        if nxt is not None:
            name, title = nxt
            cells.append(_cell("markdown", f"**{tr('Next', '下一篇')}:** [{name}]({name}.ipynb) — {title}",
                               f"nav-{nn}-next", ("nav",)))
    return cells


def is_tagged(cell) -> bool:
    """True for the cells this module writes (tag ``exercise`` or ``nav``)."""
    return bool(set(cell.get("metadata", {}).get("tags", ())) & set(TAGS))


def with_exercises(nb, nn: str, variant: str = "student", lang: str | None = None):
    """``nb`` with its tagged cells replaced by fresh ones at the end (a new notebook object)."""
    out = nbformat.from_dict(nbformat.from_dict(nb))
    out.cells = [c for c in out.cells if not is_tagged(c)] + exercise_cells(nn, variant, lang)
    return out


def write_notebook(path, variant: str = "student", lang: str | None = None, out=None) -> bool:
    """Rewrite the Exercises/Next tail of one notebook (to ``out``, default in place). True if the file changed."""
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    new = with_exercises(nb, notebook_number(path), variant, lang)
    if variant != "student":
        for c in new.cells:
            if c.cell_type == "code":
                c.outputs, c.execution_count = [], None
    target = Path(out) if out is not None else path
    text = nbformat.writes(new) + "\n"
    if target.exists() and target.read_text(encoding="utf-8") == text:
        return False
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return True


def course_notebooks(folder="notebooks") -> list[Path]:
    """The notebooks 00–07 and 09 in ``folder`` (those that have exercises or a Next link)."""
    return sorted(p for p in Path(folder).glob("0[0-79]_*.ipynb"))


def build(variant: str, out, folder="notebooks", lang: str | None = None) -> list[Path]:
    """Write every course notebook of ``folder`` in ``variant`` form under ``out``; returns the written paths.

    ``solution``: ``out/NN_name.ipynb``. ``nbgrader``: ``out/source/NN_name/NN_name.ipynb``,
    the layout of an nbgrader course directory (one assignment per notebook).
    """
    paths = []
    for p in course_notebooks(folder):
        target = Path(out) / ("source/" + p.stem if variant == "nbgrader" else "") / p.name
        write_notebook(p, variant, lang, out=target)
        paths.append(target)
    return paths


def tails(variant: str = "student", numbers=None, lang: str | None = None):
    """One notebook holding only the Exercises sections of notebooks 00–07 and 09 (what the tests execute).

    The Exercises section is self-contained (its setup cell imports what it uses), so running
    it after the rest of a notebook gives the same results as running it alone.
    """
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    for nn in numbers or [f"{k:02d}" for k in range(8)] + ["09"]:
        nb.cells += [c for c in exercise_cells(nn, variant, lang) if "nav" not in c.metadata["tags"]]
    return nb


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grpo_lab exercises",
                                 description="Write the Exercises sections of the notebooks, or build solution/nbgrader copies.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write-notebooks", help="(re)write the tagged Exercises + Next cells at the end of notebooks 00-07, in place")
    w.add_argument("paths", nargs="*", help="notebooks (default: notebooks/0[0-7]_*.ipynb)")
    w.add_argument("--lang", choices=i18n.LANGUAGES, default=None, help="language of the prompts (default: en)")
    for name, default, what in (("solutions", "build/solutions", "solution notebooks (stubs replaced by the reference answers)"),
                                ("nbgrader", "build/nbgrader", "an nbgrader source folder (BEGIN/END SOLUTION, grade cells)")):
        s = sub.add_parser(name, help=f"write {what}")
        s.add_argument("--out", default=default, help=f"output folder (default: {default})")
        s.add_argument("--notebooks", default="notebooks", help="folder of the student notebooks (default: notebooks)")
        s.add_argument("--lang", choices=i18n.LANGUAGES, default=None)
    sub.add_parser("list", help="print the catalog of exercises")
    args = ap.parse_args(argv)
    if args.cmd == "write-notebooks":
        paths = [Path(p) for p in args.paths] or course_notebooks()
        for p in paths:
            print(("updated " if write_notebook(p, "student", args.lang) else "unchanged ") + str(p))
    elif args.cmd in ("solutions", "nbgrader"):
        for p in build("solution" if args.cmd == "solutions" else "nbgrader", args.out, args.notebooks, args.lang):
            print(p)
    else:
        from grpo_lab.exercises import catalog

        print(catalog().to_string(index=False))
    return 0
