"""Notebook 08's figures (grpo_lab.viz.capstone): every run told apart, no legend over the data."""
import matplotlib
import pandas as pd
import pytest

from grpo_lab.lm import real_runs as R
from grpo_lab.viz import capstone as C
from layout_checks import labels_outside, legends_over_data

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def data():
    return R.load()


def _runs(data):
    return [r.name for r in R.RUNS if r.name in data["evals"]]


def _keys(ax):
    return [(str(l.get_color()), l.get_marker(), l.get_linestyle()) for l in ax.lines if l.get_label()[:1] != "_"]


def test_method_and_seed_are_read_from_the_run_name():
    assert C.method_of("dr_grpo_s0") == "dr_grpo" and C.seed_of("rft_s2") == 2
    assert C.method_of("before") == "before" and C.method_of("no_std_s0") == "no_std"
    assert C.style("grpo_s0")["color"] != C.style("before")["color"]
    assert C.style("grpo_s0") != C.style("grpo_s1") and C.style("grpo_s1")["color"] == C.style("grpo_s0")["color"]


def test_passk_figure_tells_every_run_apart_and_keeps_legends_off_the_data(data):
    ev = data["evals"]
    names = ["before", "prompt_only", *_runs(data)]
    curves = {n: R.passk_curve(ev[n], n_boot=50) for n in names}
    fig = C.passk_figure(curves)
    drawn = set()
    for ax in fig.axes:
        keys = _keys(ax)
        assert len(keys) == len(set(keys)) and len(keys) <= 8          # no two runs look alike in one panel
        drawn |= {l.get_label() for l in ax.lines}
    assert set(names) <= drawn | {c.get_label() for ax in fig.axes for c in ax.containers}
    assert legends_over_data(fig) == [] and labels_outside(fig) == []


def test_training_figure_splits_the_runs_into_readable_panels(data):
    fig = C.training_figure(data["steps"])
    labels = set()
    for ax in fig.axes:
        keys = _keys(ax)
        assert len(keys) == len(set(keys)) and len(keys) <= 4
        labels |= {l.get_label() for l in ax.lines}
    assert set(data["steps"]) <= labels
    assert legends_over_data(fig) == [] and labels_outside(fig) == []


def test_figures_accept_a_partial_experiment():
    k = pd.DataFrame({"k": [1, 2], "value": [0.1, 0.2], "lo": [0.05, 0.1], "hi": [0.15, 0.3]})
    fig = C.passk_figure({"before": k, "grpo_s0": k})
    assert len(fig.axes) == 1
    st = pd.DataFrame({"step": [1, 2, 3], "reward_mean": [0.1, 0.2, 0.3], "len_mean": [40, 30, 20]})
    assert len(C.training_figure({"grpo_s0": st}).axes) == 2
