"""Short GRPO runs per preset on the tiny LM, cached as package data (notebook 07, part c).

:func:`run_presets` trains every preset × seed with :func:`grpo_lab.lm.trainer.train`;
``scripts/make_family_runs.py`` writes the result to ``grpo_lab/data/family_runs.csv`` and
notebook 07 reads it with :func:`load_family_runs` (a live run costs minutes on a laptop
CPU). :func:`summarize_runs` reduces a frame of runs to one row per preset.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from grpo_lab import _checks, methods

RUN_PRESETS = tuple(p for p in methods.PRESETS if p in methods.LECTURE)   # grpo, dr_grpo, dapo, gspo
RUNS_FILE = "family_runs.csv"
# the metric columns kept in the cached file (see grpo_lab.lm.trainer.METRICS for their meaning)
RUN_COLUMNS = ("step", "reward_mean", "acc", "acc_L1", "acc_L2", "frac_all_correct", "frac_all_wrong",
               "frac_informative", "n_groups", "sampling_rounds", "n_groups_used", "len_mean", "len_correct",
               "len_incorrect", "n_incorrect", "frac_truncated", "kl", "loss", "clip_frac_low",
               "clip_frac_high", "ratio_max", "entropy", "adv_abs_mean", "grad_norm")
RUN_DEFAULTS = dict(steps=150, mu=2)
# column -> GRPOConfig field, stored with every run so a reader knows what was run
RUN_SETTINGS = {"P": "prompts_per_step", "G": "G", "max_new": "max_new", "mu": "mu", "lr": "lr",
                "warmstart_steps": "warmstart_steps"}


def _one_run(args):
    preset, seed, overrides = args
    from grpo_lab.lm.config import GRPOConfig
    from grpo_lab.lm.trainer import train

    cfg = GRPOConfig.preset(preset, seed=seed, **overrides)
    df = train(cfg)
    df = df[[c for c in RUN_COLUMNS if c in df.columns]].copy()
    df.insert(0, "seed", seed)
    df.insert(0, "preset", preset)
    for col, field_name in RUN_SETTINGS.items():      # the settings that shaped the run, constant per run
        df[col] = getattr(cfg, field_name)
    ev = {f"eval_{when}_{k}": v for when in ("before", "after")
          for k, v in df.attrs.get(f"eval_{when}", {}).get("greedy", {}).items() if k != "n"}
    for k, v in ev.items():
        df[k] = v
    df.attrs = {}
    return df


def run_presets(presets=RUN_PRESETS, seeds=(0,), *, jobs: int = 1, **overrides) -> pd.DataFrame:
    """Short GRPO runs of every preset × seed with :func:`grpo_lab.lm.train`; one row per step.

    ``overrides`` go to every ``GRPOConfig.preset(name, seed=seed, **overrides)`` (defaults
    :data:`RUN_DEFAULTS`: 150 steps, μ = 2 inner updates so that the ratio can leave 1 and
    clipping can fire — with μ = 1 every clip fraction is 0 by construction). Columns:
    preset, seed, :data:`RUN_COLUMNS`, the settings of :data:`RUN_SETTINGS` (P, G, max_new,
    μ, lr, warm-start steps; constant per run), and the held-out greedy accuracy before/after
    (``eval_before_acc`` …, constant per run). ``jobs`` > 1 runs that many processes, each
    on one thread. Costs minutes on a laptop CPU: the notebook loads the cached result
    (:func:`load_family_runs`) made by ``scripts/make_family_runs.py``.
    """
    presets = [presets] if isinstance(presets, str) else list(presets)
    for p in presets:
        _checks.choice("presets", p, methods.PRESETS)
    seeds = [_checks.integer("seeds", s, low=0) for s in np.atleast_1d(seeds).tolist()]
    jobs = _checks.integer("jobs", jobs, low=1)
    kw = {**RUN_DEFAULTS, "progress": False, **overrides}
    if jobs > 1:
        kw.setdefault("threads", 1)
    tasks = [(p, s, kw) for s in seeds for p in presets]
    if jobs == 1:
        frames = [_one_run(t) for t in tasks]
    else:
        import multiprocessing as mp

        with mp.get_context("spawn").Pool(min(jobs, len(tasks))) as pool:
            frames = pool.map(_one_run, tasks)
    return pd.concat(frames, ignore_index=True)


def runs_path():
    """Path of the cached per-preset runs shipped with the package (grpo_lab/data/)."""
    from importlib import resources

    return resources.files("grpo_lab") / "data" / RUNS_FILE


def load_family_runs(path=None) -> pd.DataFrame:
    """The cached runs (default: the package's ``data/family_runs.csv``), as :func:`run_presets` returns them."""
    df = pd.read_csv(runs_path() if path is None else path)
    missing = {"preset", "seed", "step"} - set(df.columns)
    if missing:
        raise ValueError(f"path: {path or runs_path()} is not a family-runs file (missing columns {sorted(missing)})")
    return df


SUMMARY_METRICS = ("reward_mean", "acc", "len_incorrect", "len_correct", "frac_informative",
                   "frac_all_wrong", "frac_all_correct", "n_groups", "clip_frac_low", "clip_frac_high", "kl")


def summarize_runs(df: pd.DataFrame, *, last: int = 50, first: int | None = None) -> pd.DataFrame:
    """Per preset: each metric averaged over the ``last`` steps of every run, then mean and
    standard error over seeds. Rows: presets (in :data:`RUN_PRESETS` order); columns
    (metric, "mean"/"sem"). With ``first``, also the mean over the first ``first`` steps
    (column (metric, "start")) so that a change during training can be read off.
    """
    last = _checks.integer("last", last, low=1)
    need = {"preset", "seed", "step"}
    if not need <= set(df.columns):
        raise ValueError(f"df must have columns {sorted(need)}")
    metrics = [m for m in SUMMARY_METRICS if m in df.columns]
    max_step = df.groupby(["preset", "seed"])["step"].transform("max")
    tail = df[df["step"] > max_step - last]
    per_run = tail.groupby(["preset", "seed"])[metrics].mean()
    g = per_run.groupby(level="preset")
    n = g.size()
    out = {}
    for m in metrics:
        out[(m, "mean")] = g[m].mean()
        out[(m, "sem")] = g[m].std(ddof=1) / np.sqrt(n) if n.min() > 1 else g[m].mean() * np.nan
        if first is not None:
            head = df[df["step"] <= _checks.integer("first", first, low=1)]
            out[(m, "start")] = head.groupby(["preset", "seed"])[m].mean().groupby(level="preset").mean()
    table = pd.DataFrame(out)
    table.columns = pd.MultiIndex.from_tuples(table.columns)
    order = [p for p in RUN_PRESETS if p in table.index] + [p for p in table.index if p not in RUN_PRESETS]
    return table.loc[order]


__all__ = ["RUN_PRESETS", "RUNS_FILE", "RUN_COLUMNS", "RUN_DEFAULTS", "RUN_SETTINGS", "run_presets", "runs_path",
           "load_family_runs", "SUMMARY_METRICS", "summarize_runs"]
