"""The exercise cells of every notebook — predictions in the body, the rest at the end — and the "Next" link.

Predict exercises are inserted into the body immediately before the cell that reveals their
answer (its cell id is the anchor, :mod:`grpo_lab.exercises.placement`); by-hand and implement
exercises, and predictions whose anchor is missing, form the Exercises section at the end.

Three variants of the same cells:

* ``student`` — what is committed: answer cells hold a stub (``None`` or a function that
  raises ``NotImplementedError``), so every check cell says "not attempted yet" and nbval passes.
* ``solution`` — the instructor's build (``make solutions``): stubs replaced by the
  reference answers (:func:`grpo_lab.exercises.solution`).
* ``nbgrader`` — nbgrader's source format: answers between ``### BEGIN SOLUTION`` /
  ``### END SOLUTION`` in solution cells, and check cells as autograded tests
  (``display(ex.check(...).assert_passed())``), with nbgrader's cell metadata (schema version 3).

Every cell written here carries the tag ``exercise`` (or ``nav`` for the final link) in its
metadata, so :func:`write_notebook` first removes the tagged cells and then inserts fresh
ones (before their anchors, and at the end): it is idempotent and works on any version of the
notebook's other cells. Cell ids are derived from the exercise ids, so a re-run changes nothing.

Command line: ``python -m grpo_lab exercises {write-notebooks,solutions,nbgrader,list}``.
"""
from __future__ import annotations

import argparse
import re
from contextlib import contextmanager
from pathlib import Path

import nbformat

from grpo_lab import i18n, roadmap
from grpo_lab.exercises import EXERCISES, by_notebook, placement
from grpo_lab.exercises._kinds import Exercise, Predict
from grpo_lab.i18n import Text, tr

TAGS = ("exercise", "nav")
VARIANTS = ("student", "solution", "nbgrader")
LAST = "08_grpo_real_lm"          # notebook 07 links on to the real-model notebook (issue 12)
SETUP = ("from IPython.display import display\nimport math\nimport numpy as np\nimport torch\n"
         "from grpo_lab import exercises as ex")
PLACED_SETUP = "from IPython.display import display\nfrom grpo_lab import exercises as ex"   # a placed prediction's check
KIND_LABEL = {"predict": Text("predict, then reveal", "先预测，再揭晓"), "compute": Text("by hand", "手算"),
              "implement": Text("implement", "编程实现")}
INTRO = Text(
    "## Exercises\n\n"
    "Each exercise has a prompt, an answer cell and a check cell. Put your answer into the answer cell and run "
    "the check: it says what is right, or names the mistake when it is a typical one. Stuck? "
    "`ex.hint(\"id\")` gives a hint (`ex.hint(\"id\", 2)` a second one, where there is one). "
    "The **predict** exercises of this notebook sit in its body, just before the cell that reveals their answer. "
    "`ex.catalog()` lists every exercise of the course.",
    "## 练习\n\n"
    "每道练习有题目、作答单元和检查单元。把答案写进作答单元，再运行检查：它会告诉你哪里对，如果是典型错误还会"
    "点明是哪种常见错误。卡住了？`ex.hint(\"id\")` 给一个提示（有第二个提示时用 `ex.hint(\"id\", 2)`）。"
    "本笔记本的**预测**题放在正文里，紧挨在揭晓答案的单元之前。`ex.catalog()` 列出全课程的练习。")


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


NOTEBOOK_NAME = re.compile(r"(\d\d[a-z]?)_")     # 03_group_advantage, 04b_kl_penalty


def notebook_number(path) -> str:
    """"03" for ``…/03_group_advantage.ipynb``, "04b" for ``04b_kl_penalty.ipynb``; a ValueError otherwise."""
    m = NOTEBOOK_NAME.match(Path(path).name)
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


def _label(nn: str) -> str:
    """"4b" for notebook "04b", "3" for "03": how an exercise number names its notebook."""
    return nn.lstrip("0") or "0"


def _exercise_block(e: Exercise, variant: str, placed: str | None, number: str) -> list:
    """Prompt, answer, check (and reveal) cells of one exercise; ``placed``: the anchor cell id for a body placement;
    ``number``: "4b.2", its place in the page order of the notebook that shows it."""
    slug = _slug(e)
    gid = lambda role: f"{role}-{slug}"                     # noqa: E731  nbgrader grade_id
    info = {"exercise": e.id}
    if placed is not None:
        info["anchor"] = placed
    meta = lambda role: {"grpo_lab": {**info, "role": role}}   # noqa: E731
    tags = ("exercise", "placed") if placed is not None else ("exercise",)
    head = f"**{tr('Exercise', '练习')} {number} · {KIND_LABEL[e.kind]} — {e.title}**{tr(' (', '（')}`{e.id}`{tr(')', '）')}"
    cells = [_cell("markdown", f"{head}\n\n{e.prompt}", f"ex-{slug}-prompt", tags + ("prompt",), **meta("prompt"))]
    answer = {"student": e.stub_code, "solution": e.solution_code, "nbgrader": e.nbgrader_code}[variant]()
    extra = _nbgrader(gid("answer"), solution=True) if variant == "nbgrader" else {}
    cells.append(_cell("code", answer, f"ex-{slug}-answer", tags + ("answer",), **meta("answer"), **extra))
    # nbgrader: a grade cell passes when it does not raise; display() keeps its output a
    # display_data (an execute_result would be read as partial credit)
    check = f"display({e.check_code()}.assert_passed())" if variant == "nbgrader" else e.check_code()
    if placed is not None:                                   # the body has no Exercises setup cell above it
        check = PLACED_SETUP + "\n" + check
    extra = _nbgrader(gid("check"), grade=True, points=1, locked=True) if variant == "nbgrader" else {}
    cells.append(_cell("code", check, f"ex-{slug}-check", tags + ("check",), **meta("check"), **extra))
    if isinstance(e, Predict):
        cells.append(_cell("code", e.reveal_code(), f"ex-{slug}-reveal", tags + ("reveal",), **meta("reveal")))
    return cells


def destination(e: Exercise, folder=None) -> tuple[str | None, str | None]:
    """(notebook stem, anchor cell id or None) where ``e`` is written, for the notebooks in ``folder``."""
    if isinstance(e, Predict):
        where = placement.anchor(e.id, folder)
        if where is not None:
            return where
    return placement.section(e, folder), None


def exercise_cells(nn: str, variant: str = "student", lang: str | None = None, folder=None) -> list:
    """The tagged cells of notebook ``NN`` (of ``folder``, default notebooks/): the predictions placed in its body
    (tag ``placed``, metadata ``grpo_lab.anchor``), then the Exercises section (intro, setup, one block per
    exercise) and the "Next" link."""
    if variant not in VARIANTS:
        raise ValueError(f"variant must be one of {VARIANTS}, got {variant!r}")
    folder = Path(folder) if folder is not None else placement.DEFAULT_FOLDER
    stem = placement.home_stem(nn, folder)
    cells = []
    with language(lang):
        placed, section = [], []
        for e in EXERCISES.values():
            where, cell = destination(e, folder)
            if stem is not None and where == stem or stem is None and where is None and e.notebook == nn:
                (placed if cell is not None else section).append((e, cell))
        # numbered in page order: the predictions in the order of their anchors, then the Exercises section
        order = placement.cell_order(folder / f"{stem}.ipynb") if stem is not None else []
        placed.sort(key=lambda ec: order.index(ec[1]) if ec[1] in order else len(order))
        numbers = {e.id: f"{_label(nn)}.{k}" for k, (e, _) in enumerate(placed + section, 1)}
        for e, cell in placed:
            cells += _exercise_block(e, variant, cell, numbers[e.id])
        if section:
            cells.append(_cell("markdown", str(INTRO), f"ex-{nn}-intro", ("exercise",)))
            cells.append(_cell("code", SETUP, f"ex-{nn}-setup", ("exercise", "setup")))
        for e, _ in section:
            cells += _exercise_block(e, variant, None, numbers[e.id])
        nxt = next_notebook(nn)
        if nxt is not None:
            name, title = nxt
            cells.append(_cell("markdown", f"**{tr('Next:', '下一篇：')}** [{name}]({name}.ipynb) — {title}",
                               f"nav-{nn}-next", ("nav",)))
    return cells


def is_tagged(cell) -> bool:
    """True for the cells this module writes (tag ``exercise`` or ``nav``)."""
    return bool(set(cell.get("metadata", {}).get("tags", ())) & set(TAGS))


def with_exercises(nb, nn: str, variant: str = "student", lang: str | None = None, folder=None):
    """``nb`` with its tagged cells replaced by fresh ones: predictions before their anchors, the rest at the end."""
    out = nbformat.from_dict(nbformat.from_dict(nb))
    body = [c for c in out.cells if not is_tagged(c)]
    fresh = exercise_cells(nn, variant, lang, folder)
    before: dict[str, list] = {}
    tail = []
    for c in fresh:
        anchor = c.metadata.get("grpo_lab", {}).get("anchor")
        (before.setdefault(anchor, []) if anchor is not None else tail).append(c)
    cells = []
    for c in body:
        cells += before.pop(c.get("id"), [])
        cells.append(c)
    for left in before.values():           # an anchor this copy of the notebook lacks: keep them, at the end
        tail = left + tail
    out.cells = cells + tail
    return out


def write_notebook(path, variant: str = "student", lang: str | None = None, out=None) -> bool:
    """Rewrite the Exercises/Next tail of one notebook (to ``out``, default in place). True if the file changed."""
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    new = with_exercises(nb, notebook_number(path), variant, lang, folder=path.parent)
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
    """The course notebooks in ``folder`` (NN_name.ipynb or NNx_name.ipynb, e.g. 04b_kl_penalty)."""
    return sorted(p for p in Path(folder).glob("*.ipynb") if NOTEBOOK_NAME.match(p.name))


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


def tails(variant: str = "student", numbers=None, lang: str | None = None, folder=None):
    """One notebook holding only the exercise cells of the course notebooks (what the tests execute).

    The placed predictions (each with its own import) and the Exercises sections are
    self-contained, so running them alone gives the same results as inside the notebooks.
    """
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    folder = Path(folder) if folder is not None else placement.DEFAULT_FOLDER
    for nn in numbers or [notebook_number(p) for p in course_notebooks(folder)]:
        nb.cells += [c for c in exercise_cells(nn, variant, lang, folder) if "nav" not in c.metadata["tags"]]
    return nb


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grpo_lab exercises",
                                 description="Write the Exercises sections of the notebooks, or build solution/nbgrader copies.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    w = sub.add_parser("write-notebooks", help="(re)write the tagged exercise cells (body and end) and the Next link, in place")
    w.add_argument("paths", nargs="*", help="notebooks (default: notebooks/NN_*.ipynb)")
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
