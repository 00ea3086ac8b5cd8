"""Helpers for keeping committed notebooks clean (no outputs, no execution counts)."""
from __future__ import annotations

import nbformat


def dirty_cells(path) -> list[int]:
    """Indices of code cells that carry outputs or an execution count."""
    nb = nbformat.read(path, as_version=4)
    return [i for i, c in enumerate(nb.cells)
            if c.cell_type == "code" and (c.get("outputs") or c.get("execution_count") is not None)]


def strip_notebook(path) -> bool:
    """Clear outputs and execution counts in place; True if the file changed."""
    nb = nbformat.read(path, as_version=4)
    changed = False
    for cell in nb.cells:
        if cell.cell_type == "code" and (cell.get("outputs") or cell.get("execution_count") is not None):
            cell.outputs, cell.execution_count = [], None
            changed = True
    if changed:
        nbformat.write(nb, path)
    return changed
