"""grpo_lab.viz.lm: the live training monitor updates in place; comparison and slide figures."""
import numpy as np
import pandas as pd
import pytest

from grpo_lab.viz.lm import TrainingMonitor, compare_runs, smooth, step_anatomy_figure


def _rows(n, levels=(1, 2)):
    rng = np.random.default_rng(0)
    rows = []
    for s in range(1, n + 1):
        r = {"step": s, "reward_mean": rng.random(), "frac_all_correct": 0.5, "frac_all_wrong": 0.1,
             "len_correct": 3.0, "len_incorrect": np.nan if s % 3 == 0 else 3.5, "len_mean": 3.2,
             "kl": 0.01 * s, "entropy": 0.3}
        r.update({f"acc_L{lv}": rng.random() for lv in levels})
        rows.append(r)
    return rows


def test_monitor_updates_the_same_artists_in_place():
    mon = TrainingMonitor(steps=20, levels=(1, 2), max_new=8, every=5)
    lines_before = dict(mon.lines)
    xlim = mon.axes[0].get_xlim()
    for row in _rows(20):
        mon(None, row)
    assert mon.n_draws == 4
    assert all(mon.lines[k] is lines_before[k] for k in lines_before)     # nothing rebuilt
    x, y = mon.lines["reward_mean"].get_data()
    assert list(x) == list(range(1, 21))
    np.testing.assert_allclose(y, smooth([r["reward_mean"] for r in _rows(20)], 5))
    assert mon.axes[0].get_xlim() == xlim                                  # fixed limits
    assert mon.axes[3].get_ylim()[1] >= 0.2                                # grew to fit KL = 0.2


def test_smooth_skips_missing_values():
    out = smooth([1.0, np.nan, 3.0], window=2)
    np.testing.assert_allclose(out, [1.0, 1.0, 3.0])


def test_compare_runs_draws_each_run():
    runs = {"a": pd.DataFrame(_rows(10)), "b": pd.DataFrame(_rows(10))}
    fig = compare_runs(runs, max_new=8)
    assert len(fig.axes[0].lines) == 2 and len(fig.axes[1].lines) == 4


def test_step_anatomy_figure_shows_the_seed_advantages():
    fig = step_anatomy_figure()
    widths = [bar.get_width() for bar in fig.axes[0].patches]
    assert widths == pytest.approx([1.7320, -0.5773, -0.5773, -0.5773], abs=1e-3)   # 1,0,0,0 -> +1.73, −0.58
    texts = [t.get_text() for t in fig.axes[1].texts]
    assert "7\n-0.216" in texts          # eq. (6): −Â/(B·|y|) = −1.732/(4·2)
    texts7 = [t.get_text() for t in fig.axes[2].texts]
    assert "7\n-0.192" in texts7         # eq. (7): −Â/Σ|y| = −1.732/9
