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
               "clip_frac_high", "ratio_max", "entropy", "adv_abs_mean", "grad_norm", "group_reward_std",
               "n_tokens", "seconds")
RUN_DEFAULTS = dict(steps=150, mu=2)
# column -> GRPOConfig field, stored with every run so a reader knows what was run (the full
# config of every run is in the JSON written next to a cached file)
RUN_SETTINGS = {"P": "prompts_per_step", "G": "G", "max_new": "max_new", "mu": "mu", "lr": "lr",
                "warmstart_steps": "warmstart_steps", "beta": "beta", "kl_form": "kl_form",
                "adv_scale": "adv_scale", "temperature": "temperature"}

# The cached run sets: name -> (file, the overrides every run of the set shares, the runs as
# (label, preset, overrides of that run)). scripts/make_family_runs.py makes them, resumably.
RUN_SETS = {
    # notebook 07 §3: every preset as GRPOConfig.preset defines it (β differs: grpo 0.04, others 0)
    "presets": ("family_runs.csv", dict(steps=150, mu=2), tuple((p, p, {}) for p in RUN_PRESETS)),
    # notebook 07 §3: one change to the grpo preset each — the β control, ÷σ alone, KL form 2
    # (100 steps: compare them with the presets' first 100 steps — a run's first n steps do not
    # depend on how many follow, the learning rate being constant after its warm-up)
    "controls": ("family_controls.csv", dict(steps=100, mu=2),
                 (("grpo_beta0", "grpo", {"beta": 0.0}),
                  ("grpo_no_std", "grpo", {"adv_scale": "none"}),
                  ("grpo_kl_reward", "grpo", {"kl_form": "reward"}))),
    # notebook 06 §8: the group size G and the sampling temperature τ (lecture notes 000 §2.3)
    "sweep": ("group_sweep_runs.csv", dict(steps=40, mu=1),
              (("G=2", "grpo", {"G": 2}), ("G=4", "grpo", {"G": 4}), ("G=8", "grpo", {}),
               ("G=16", "grpo", {"G": 16}), ("τ=0.7", "grpo", {"temperature": 0.7}),
               ("τ=1.3", "grpo", {"temperature": 1.3}))),
    # notebook 06 §4 and §6: the class-size run, eq. (6) vs eq. (7) aggregation (200 steps, μ = 1)
    "aggregation": ("aggregation_runs.csv", dict(steps=200, mu=1),
                    (("eq6", "grpo", {}), ("eq7", "grpo", {"agg": "token-mean"}))),
}


def _one_run(args):
    preset, seed, overrides = args[:3]
    label = args[3] if len(args) > 3 else preset
    from grpo_lab.lm.config import GRPOConfig
    from grpo_lab.lm.trainer import train

    cfg = GRPOConfig.preset(preset, seed=seed, **overrides)
    df = train(cfg)
    df = df[[c for c in RUN_COLUMNS if c in df.columns]].copy()
    df.insert(0, "seed", seed)
    df.insert(0, "preset", preset)
    if label != preset:
        df.insert(0, "run", label)
    for col, field_name in RUN_SETTINGS.items():      # the settings that shaped the run, constant per run
        df[col] = getattr(cfg, field_name)
    ev = {f"eval_{when}_{'' if kind == 'greedy' else 'sampled_'}{k}": v for when in ("before", "after")
          for kind in ("greedy", "sampled")
          for k, v in df.attrs.get(f"eval_{when}", {}).get(kind, {}).items() if k != "n"}
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


def run_one(label: str, preset: str, seed: int, **overrides) -> pd.DataFrame:
    """One run of a :data:`RUN_SETS` entry: ``GRPOConfig.preset(preset, seed=seed, **overrides)``
    trained by :func:`grpo_lab.lm.train`, as :func:`run_presets` returns it plus a ``run``
    column (``label``) when the label is not the preset's name."""
    _checks.choice("preset", preset, methods.PRESETS)
    seed = _checks.integer("seed", seed, low=0)
    return _one_run((preset, seed, {"progress": False, **overrides}, label))


def runs_path(name: str = RUNS_FILE):
    """Path of a cached run file shipped with the package (grpo_lab/data/; default: the per-preset runs)."""
    from importlib import resources

    return resources.files("grpo_lab") / "data" / name


def load_family_runs(path=None) -> pd.DataFrame:
    """The cached runs (default: the package's ``data/family_runs.csv``), as :func:`run_presets` returns them."""
    df = pd.read_csv(runs_path() if path is None else path)
    missing = {"preset", "seed", "step"} - set(df.columns)
    if missing:
        raise ValueError(f"path: {path or runs_path()} is not a family-runs file (missing columns {sorted(missing)})")
    return df


def load_run_set(name: str) -> pd.DataFrame:
    """The cached file of run set ``name`` (a key of :data:`RUN_SETS`), with a ``run`` column
    (the preset's name where the file has none)."""
    _checks.choice("name", name, RUN_SETS)
    df = load_family_runs(runs_path(RUN_SETS[name][0]))
    if "run" not in df.columns:
        df.insert(0, "run", df["preset"])
    df["run"] = df["run"].fillna(df["preset"])
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


# two-sided 95 % quantiles of Student's t for 1…10 degrees of freedom (no scipy dependency)
T95 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228)


def run_means(df: pd.DataFrame, metric: str, *, steps=(51, 100)) -> pd.DataFrame:
    """Per run label × seed: ``metric`` averaged over the steps ``steps[0]…steps[1]`` (inclusive).
    Rows: ``run`` labels (the preset's name where ``df`` has no ``run`` column); columns: seeds."""
    if metric not in df.columns:
        raise ValueError(f"metric: {metric!r} is not a column of the runs ({', '.join(map(str, df.columns))})")
    lo, hi = (_checks.integer("steps", x, low=1) for x in steps)
    if lo > hi:
        raise ValueError(f"steps must be (first, last) with first <= last, got {steps}")
    win = df[(df["step"] >= lo) & (df["step"] <= hi)]
    label = win["run"].fillna(win["preset"]) if "run" in win.columns else win["preset"]
    win = win.assign(_run=label.to_numpy())
    return win.groupby(["_run", "seed"])[metric].mean().unstack().rename_axis(index="run")


def paired_difference(means: pd.DataFrame, a: str, b: str) -> dict:
    """Run ``a`` minus run ``b``, paired by seed (same seed = same warm start and first batch),
    from a :func:`run_means` table: ``diff`` (mean over seeds), ``lo``/``hi`` (95 % t-interval),
    ``n`` seeds, and ``per_seed``. Needs both runs for at least 2 common seeds."""
    for name, run in (("a", a), ("b", b)):
        if run not in means.index:
            raise ValueError(f"{name}: no run {run!r} in the table (runs: {', '.join(map(str, means.index))})")
    d = (means.loc[a] - means.loc[b]).dropna()
    n = len(d)
    if n < 2:
        raise ValueError(f"runs {a!r} and {b!r} share {n} seed(s); a paired interval needs at least 2")
    half = T95[min(n - 1, len(T95)) - 1] * float(d.std(ddof=1)) / np.sqrt(n)
    return {"diff": float(d.mean()), "lo": float(d.mean()) - half, "hi": float(d.mean()) + half, "n": n,
            "per_seed": d.to_dict()}


def compare_to(df: pd.DataFrame, base: str, others, metrics, *, steps=(51, 100)) -> pd.DataFrame:
    """Each run of ``others`` against run ``base``, paired by seed, for every metric: one row per
    (run, metric) with the base's and the run's mean over the seeds both have, ``diff`` = run − base with its
    95 % t-interval [``lo``, ``hi``], ``n`` seeds, and ``verdict``: "higher"/"lower" when the
    interval excludes 0, else "no detectable difference" (means over ``steps``, inclusive)."""
    others = [others] if isinstance(others, str) else list(others)
    metrics = [metrics] if isinstance(metrics, str) else list(metrics)
    rows = []
    for metric in metrics:
        means = run_means(df, metric, steps=steps)
        for run in others:
            r = paired_difference(means, run, base)
            verdict = "higher" if r["lo"] > 0 else "lower" if r["hi"] < 0 else "no detectable difference"
            seeds = list(r["per_seed"])                     # the seeds both runs have
            rows.append({"run": run, "metric": metric, base: float(means.loc[base, seeds].mean()),
                         "run mean": float(means.loc[run, seeds].mean()), "diff": r["diff"], "lo": r["lo"], "hi": r["hi"],
                         "n": r["n"], "verdict": verdict})
    return pd.DataFrame(rows).set_index(["run", "metric"])


__all__ = ["T95", "run_means", "paired_difference", "compare_to", "RUN_PRESETS", "RUNS_FILE", "RUN_COLUMNS", "RUN_DEFAULTS", "RUN_SETTINGS", "RUN_SETS", "run_presets",
           "run_one", "runs_path", "load_family_runs", "load_run_set", "SUMMARY_METRICS", "summarize_runs"]
