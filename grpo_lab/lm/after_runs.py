"""Notebook 09's cached runs (beyond the lecture notes): loading them and comparing conditions with their spread.

``scripts/make_after_runs.py`` writes ``grpo_lab/data/after_runs.csv`` (one row per step, keyed by
experiment, condition and seed), ``after_runs.json`` (settings, code version), ``after_mismatch.csv``
(the mismatch of three samplers on the tiny LM, no training) and, when measured,
``after_mismatch_real.csv`` (SmolLM2-135M). :func:`compare` pairs every condition with a base
condition seed by seed and gives the mean difference with a 95 % t-interval; :func:`verdicts` turns
that into sentences that claim a difference only where the interval excludes 0. What a student reads
(the verdicts, the settings, the final table's view) follows :func:`grpo_lab.set_language`; the frames'
labels that code reads stay English.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from grpo_lab.i18n import tr
from grpo_lab.i18n_table import localized

DATA = Path(__file__).resolve().parents[1] / "data"
# 97.5 % quantiles of Student's t by degrees of freedom (a 95 % two-sided interval); scipy is not required
_T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228}


def load_runs() -> pd.DataFrame:
    """The cached runs (one row per step)."""
    return pd.read_csv(DATA / "after_runs.csv")


def load_measurements(real: bool = False) -> pd.DataFrame | None:
    """The mismatch measurements: the tiny LM's three samplers, or (``real``) SmolLM2-135M's; None if not measured."""
    path = DATA / ("after_mismatch_real.csv" if real else "after_mismatch.csv")
    return pd.read_csv(path) if path.exists() else None


def settings() -> dict:
    return json.loads((DATA / "after_runs.json").read_text())


def describe_settings(experiment: str) -> str:
    """One line per condition of ``experiment``: its preset and the overrides it ran with."""
    meta = settings()                     # (its provenance stays in the JSON, not in what a student reads)
    lines = [tr(f"{experiment}: base {meta['base']}", f"{experiment}：基础设置 {meta['base']}")]
    for cond, kw in meta["conditions"][experiment].items():
        lines.append(f"  {cond}{tr(': ', '：')}" + ", ".join(f"{k}={v}" for k, v in kw.items()))
    return "\n".join(lines)


def per_seed(df: pd.DataFrame, column: str, last: int | None = None) -> pd.DataFrame:
    """condition × seed: ``column`` at the end of each run (its mean over the last ``last`` steps; for a
    column constant per run, such as the held-out accuracy, ``last=None`` takes that constant)."""
    if column not in df.columns:
        raise ValueError(f"column must be one of {list(df.columns)}, got {column!r}")
    if last is None:
        return df.groupby(["condition", "seed"])[column].last().unstack()
    tail = df.sort_values("step").groupby(["condition", "seed"]).tail(last)
    return tail.groupby(["condition", "seed"])[column].mean().unstack()


_STATS_ZH = {"mean": "均值", "min": "最小", "max": "最大", "n seeds": "随机种子数"}


def final_table(df: pd.DataFrame, columns, last: int = 10) -> pd.DataFrame:
    """Per condition: mean, min and max over seeds of each column (eval_* as recorded; others over the last steps).
    Code reads the English labels (``("eval_greedy_acc", "mean")``); in Chinese mode it shows 均值 / 最小 / 最大."""
    out = {}
    for c in columns:
        t = per_seed(df, c, None if c.startswith("eval_") else last)
        out[(c, "mean")], out[(c, "min")], out[(c, "max")] = t.mean(axis=1), t.min(axis=1), t.max(axis=1)
    res = pd.DataFrame(out)
    res[("n seeds", "")] = df.groupby("condition").seed.nunique()

    def zh_view():
        view = res.copy()
        view.columns = pd.MultiIndex.from_tuples([(_STATS_ZH.get(a, a), _STATS_ZH.get(b, b)) for a, b in view.columns])
        view.index.name = "条件"
        return view

    return localized(res, zh_view)


def compare(df: pd.DataFrame, column: str, base: str, last: int | None = None) -> pd.DataFrame:
    """Each condition minus ``base``, paired by seed: n, the two means, the mean difference and its 95 % t-interval."""
    t = per_seed(df, column, last)
    if base not in t.index:
        raise ValueError(f"base must be one of {list(t.index)}, got {base!r}")
    rows = []
    for cond in t.index:
        if cond == base:
            continue
        d = (t.loc[cond] - t.loc[base]).dropna()
        n = len(d)
        half = _T975.get(n - 1, 1.96) * d.std(ddof=1) / np.sqrt(n) if n > 1 else float("nan")
        rows.append({"condition": cond, "vs": base, "column": column, "n": n, "base mean": t.loc[base, d.index].mean(),
                     "mean": t.loc[cond, d.index].mean(), "difference": d.mean(), "ci_low": d.mean() - half,
                     "ci_high": d.mean() + half})
    out = pd.DataFrame(rows).set_index("condition")
    out["detectable"] = (out.ci_low > 0) | (out.ci_high < 0)
    return out


def verdicts(cmp: pd.DataFrame) -> list[str]:
    """One sentence per row of :func:`compare`: a direction only where the interval excludes 0."""
    out = []
    for cond, r in cmp.iterrows():
        interval = f"{r.difference:+.4f} [{r.ci_low:+.4f}, {r.ci_high:+.4f}]"
        ci = tr(f"{interval} (95 % t-interval, n = {r.n})", f"{interval}（95 % t 区间，n = {r.n}）")
        if r.detectable:
            word = tr("higher", "高") if r.difference > 0 else tr("lower", "低")
            out.append(tr(f"{cond}: {r.column} {word} than {r['vs']}, difference {ci}",
                          f"{cond}：{r.column} 比 {r['vs']} {word}，差值 {ci}"))
        else:
            out.append(tr(f"{cond}: no detectable difference in {r.column} from {r['vs']} at n = {r.n}: {ci}",
                          f"{cond}：{r.column} 与 {r['vs']} 相比，n = {r.n} 时检测不到差别：{ci}"))
    return out


__all__ = ["load_runs", "load_measurements", "settings", "describe_settings", "per_seed", "final_table", "compare",
           "verdicts"]
