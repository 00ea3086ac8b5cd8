"""The course map (notebook 00) stays consistent with the repository."""
from pathlib import Path

import pytest

from grpo_lab import roadmap
from grpo_lab.viz.family import POSITIONS, family_tree

ROOT = Path(__file__).resolve().parents[1]


def test_every_parent_is_a_method_and_every_method_is_placed():
    names = {m.name for m in roadmap.FAMILY}
    assert all(m.parent in names for m in roadmap.FAMILY if m.parent)
    assert set(POSITIONS) == names
    roots = [m.name for m in roadmap.FAMILY if m.parent is None and m.on_tree]
    assert roots == ["REINFORCE"]


@pytest.mark.parametrize("nb", [n for n, _, _ in roadmap.NOTEBOOKS])
def test_listed_notebooks_exist(nb):
    assert (ROOT / "notebooks" / f"{nb}.ipynb").exists()


def test_tables_and_tree():
    assert roadmap.symbol_table().loc["Â_i", "granularity"] == "sequence"
    assert roadmap.symbol_table().loc["ρ_{i,t}", "granularity"] == "token"
    assert roadmap.glossary_table().loc["advantage", "中文"] == "优势"
    fig = family_tree()
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert sum(any(t.startswith(m.name + " ") for t in texts) for m in roadmap.FAMILY) == len(roadmap.FAMILY)
