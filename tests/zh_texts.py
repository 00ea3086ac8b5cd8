"""The Chinese texts of the course, for the terms test and the Chinese-mode English test.

* the markdown cells of ``notebooks/zh/*.ipynb`` that a translator wrote (the cells that
  :mod:`grpo_lab.exercises` generates are its strings, scanned with the package);
* ``README.zh.md``;
* the Chinese half of every bilingual string of the package (``tr``/``Text``/``see``, read from
  the source like ``tests/test_i18n_strings.py`` does).

Nothing is left out now (:data:`EXCLUDED` is empty; a package folder named there would be skipped
while someone rewrites it, and ``tests/test_terms.py`` would then say so).
"""
from __future__ import annotations

import ast
from pathlib import Path

import nbformat

ROOT = Path(__file__).resolve().parents[1]
EXCLUDED: tuple[str, ...] = ()
PAIRED = {"tr": 2, "Text": 2, "see": 6}


def _text(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(v.value if isinstance(v, ast.Constant) else "{…}" for v in node.values)
    return None


def runtime_strings(excluded=EXCLUDED, only=None):
    """``(file:line, Chinese half)`` of every bilingual call in ``grpo_lab`` (``only``: a sub-folder)."""
    for path in sorted((ROOT / "grpo_lab").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if (only and not rel.startswith(only)) or (not only and any(rel.startswith(e) for e in excluded)):
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
            if PAIRED.get(name) != len(node.args):
                continue
            for k in range(1, len(node.args), 2):
                text = _text(node.args[k])
                if text is not None:
                    yield f"{rel}:{node.args[k].lineno}", text


def notebook_cells():
    """``(notebook cell N, markdown)`` of every hand-translated markdown cell of ``notebooks/zh``."""
    for path in sorted((ROOT / "notebooks" / "zh").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        for k, cell in enumerate(nb.cells):
            rec = cell.metadata.get("zh", {})
            # generated cells come from the package; untranslated ones still hold the English text
            if cell.cell_type == "markdown" and not rec.get("generated") and not rec.get("untranslated"):
                yield f"notebooks/zh/{path.name} cell {k}", cell.source


def readme():
    text = (ROOT / "README.zh.md").read_text(encoding="utf-8")
    for k, line in enumerate(text.splitlines(), 1):
        yield f"README.zh.md:{k}", line


def chinese_texts():
    yield from notebook_cells()
    yield from readme()
    yield from runtime_strings()
