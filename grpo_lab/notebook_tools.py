"""Helpers for keeping committed notebooks clean (no outputs, no execution counts) and their
metadata complete (the kernelspec and language_info a kernel writes), so that JupyterLab does not
rewrite the metadata on open and every notebook does not show unsaved changes at once.
"""
from __future__ import annotations

import sys

import nbformat

# What ipykernel writes (`jupyter kernelspec list`: python3, "Python 3 (ipykernel)"); the version of
# language_info is the interpreter's and is filled in from the running Python when missing.
KERNELSPEC = {"display_name": "Python 3 (ipykernel)", "language": "python", "name": "python3"}
LANGUAGE_INFO = {"codemirror_mode": {"name": "ipython", "version": 3}, "file_extension": ".py",
                 "mimetype": "text/x-python", "name": "python", "nbconvert_exporter": "python",
                 "pygments_lexer": "ipython3"}


def missing_metadata(path) -> list[str]:
    """The kernelspec / language_info keys of ``path`` that differ from what a kernel writes."""
    meta = nbformat.read(path, as_version=4).metadata
    ks, li = meta.get("kernelspec", {}), meta.get("language_info", {})
    bad = [f"kernelspec.{k}" for k, v in KERNELSPEC.items() if ks.get(k) != v]
    bad += [f"language_info.{k}" for k, v in LANGUAGE_INFO.items() if li.get(k) != v]
    if not str(li.get("version", "")).count(".") >= 1:
        bad.append("language_info.version")
    return bad


def complete_metadata(path) -> bool:
    """Write the kernelspec and language_info a kernel writes into ``path``; True if it changed."""
    if not missing_metadata(path):
        return False
    nb = nbformat.read(path, as_version=4)
    nb.metadata["kernelspec"] = dict(KERNELSPEC)
    li = dict(nb.metadata.get("language_info", {}))
    li.update(LANGUAGE_INFO)
    li.setdefault("version", "{}.{}.{}".format(*sys.version_info[:3]))
    nb.metadata["language_info"] = li
    nbformat.write(nb, path)
    return True


def dirty_cells(path) -> list[int]:
    """Indices of code cells that carry outputs or an execution count."""
    nb = nbformat.read(path, as_version=4)
    return [i for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]


def strip_notebook(path) -> bool:
    """Clear outputs and execution counts in place and complete the metadata; True if the file changed."""
    changed = complete_metadata(path)
    nb = nbformat.read(path, as_version=4)
    for cell in nb.cells:
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None):
            cell.outputs, cell.execution_count = [], None
            changed = True
    if changed:
        nbformat.write(nb, path)
    return changed
