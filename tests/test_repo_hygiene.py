"""Repository-wide checks: clean notebooks, every panel benchmarkable, figures command."""
from pathlib import Path

import pytest

from grpo_lab.notebook_tools import complete_metadata, dirty_cells, missing_metadata
from grpo_lab.viz import all_panels

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))
ALL_NOTEBOOKS = NOTEBOOKS + sorted((ROOT / "notebooks" / "zh").glob("*.ipynb"))


def test_there_are_notebooks():
    assert NOTEBOOKS, "no notebooks found"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_committed_without_outputs(path):
    assert dirty_cells(path) == [], f"{path.name}: clear outputs with `make clean-notebooks`"


@pytest.mark.parametrize("path", ALL_NOTEBOOKS, ids=lambda p: str(p.relative_to(ROOT / "notebooks")))
def test_notebook_metadata_is_what_a_kernel_writes(path):
    """Otherwise JupyterLab rewrites it on open and the notebook shows unsaved changes at once (issue 24)."""
    assert missing_metadata(path) == [], f"{path.name}: run `make clean-notebooks` (it completes the metadata)"


def test_metadata_check_can_fail_and_the_fix_fixes_it(tmp_path):
    import nbformat

    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("1 + 1")])
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    path = tmp_path / "minimal.ipynb"
    nbformat.write(nb, path)
    assert "kernelspec.display_name" in missing_metadata(path) and "language_info.version" in missing_metadata(path)
    assert complete_metadata(path) is True and missing_metadata(path) == []
    assert complete_metadata(path) is False                          # idempotent
    assert dirty_cells(path) == []                                   # outputs stay cleared


@pytest.mark.parametrize("name", sorted(all_panels()))
def test_every_panel_has_benchmark_moves_that_apply(name):
    cls = all_panels()[name]
    assert cls.bench_moves, f"{name} has no bench_moves"
    panel = cls()
    states = []
    for move in cls.bench_moves[:3]:
        n = panel.n_updates
        panel.set(**move)
        assert panel.n_updates == n + 1                                    # one refresh per move
        now = panel.values()
        for k, v in move.items():                                          # the control took the value
            assert now[k] == (pytest.approx(v) if isinstance(v, float) else v), (name, k, v, now[k])
        states.append(repr(sorted(now.items())))
    assert len(set(states)) > 1, f"{name}: the bench moves never change the panel's state"


def test_figures_command_writes_files(tmp_path):
    from grpo_lab.__main__ import main

    assert main(["figures", "--out", str(tmp_path), "--only", "01_bandit_gradient"]) == 0
    assert (tmp_path / "01_bandit_gradient.png").stat().st_size > 10_000


def test_figures_unknown_pattern(tmp_path):
    from grpo_lab.figures import render

    with pytest.raises(ValueError, match="only"):
        render(tmp_path, only="no_such_*")
