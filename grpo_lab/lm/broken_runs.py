"""Deliberately broken GRPO runs for notebook 06's metric guide (cached, made by a script).

Four short runs of the tiny LM of notebook 06 with the same seed and size, each changing one
thing (``RUNS``): a healthy reference, no warm start (every group all-wrong), ÷σ on noisy
rewards (Gaussian noise added to every 0/1 reward, group normalisation on), and a learning
rate 30× too high. They take minutes, so ``scripts/make_broken_runs.py`` ran them once and
ships the metrics as ``grpo_lab/data/broken_runs.csv`` (one row per run and step); the JSON
next to it records the settings. :func:`load` reads the file; :func:`run_all` recomputes.

The noisy-reward run wraps the task so that :meth:`reward` adds noise; the accuracy columns
still use the exact verifier (:meth:`correct`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from grpo_lab.i18n import Text

DATA = Path(__file__).resolve().parents[1] / "data"
RUNS_FILE = "broken_runs.csv"
# the columns the guide plots; the CSV keeps only these (plus run, step)
COLUMNS = ("reward_mean", "acc", "frac_all_correct", "frac_all_wrong", "frac_informative", "entropy", "kl",
           "grad_norm", "adv_abs_mean", "group_reward_std", "clip_frac_low", "clip_frac_high", "len_mean",
           "len_correct", "len_incorrect")
BASE = dict(steps=100, prompts_per_step=32, levels=(1, 2), max_new=8, seed=0, threads=1, progress=False)


@dataclass(frozen=True)
class BrokenRun:
    name: str
    label: Text
    overrides: dict = field(default_factory=dict)
    reward_noise: float = 0.0        # std of Gaussian noise added to every reward


RUNS = (
    BrokenRun("healthy", Text("healthy (GRPO preset)", "正常（GRPO 预设）")),
    BrokenRun("no_warm_start", Text("no warm start", "没有热启动"), {"warmstart_steps": 0}),
    BrokenRun("noisy_std", Text("÷σ on noisy rewards (noise sd 0.1)", "噪声奖励上 ÷σ（噪声标准差 0.1）"),
              {}, reward_noise=0.1),
    BrokenRun("lr_high", Text("learning rate 30× too high (3e-3)", "学习率高 30 倍（3e-3）"), {"lr": 3e-3}),
)
BY_NAME = {r.name: r for r in RUNS}


class NoisyRewardTask:
    """Wraps a task: ``reward`` adds N(0, sigma²) noise; everything else (``correct`` too) is the task's."""

    def __init__(self, task, sigma: float, seed: int = 0):
        self._task, self.sigma = task, float(sigma)
        self._rng = np.random.default_rng(seed)

    def reward(self, response, problem, truncated) -> float:
        return float(self._task.reward(response, problem, truncated) + self.sigma * self._rng.normal())

    def __getattr__(self, name):
        return getattr(self._task, name)


def run_one(run: BrokenRun, **base_overrides) -> pd.DataFrame:
    """Train one run of :data:`RUNS` and return its metrics (the :data:`COLUMNS`, plus run and step)."""
    from grpo_lab.lm.config import GRPOConfig
    from grpo_lab.lm.trainer import Trainer

    cfg = GRPOConfig.preset("grpo", **{**BASE, **base_overrides, **run.overrides})
    trainer = Trainer(cfg)
    if run.reward_noise:
        trainer.task = NoisyRewardTask(trainer.task, run.reward_noise, seed=cfg.seed)
    df = trainer.run()
    out = df[["step", *[c for c in COLUMNS if c in df]]].copy()
    out.insert(0, "run", run.name)
    out.attrs["eval_after"] = df.attrs.get("eval_after")
    return out


def run_all(names=None, **base_overrides) -> pd.DataFrame:
    names = [r.name for r in RUNS] if names is None else list(names)
    return pd.concat([run_one(BY_NAME[n], **base_overrides) for n in names], ignore_index=True)


def load(path=None) -> pd.DataFrame:
    """The cached runs (``grpo_lab/data/broken_runs.csv``)."""
    path = Path(path) if path else DATA / RUNS_FILE
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: run `python scripts/make_broken_runs.py` to make it")
    return pd.read_csv(path)


def summary(df: pd.DataFrame, last: int = 20) -> pd.DataFrame:
    """Mean of each metric over the last ``last`` steps, one row per run (in :data:`RUNS` order)."""
    order = [r.name for r in RUNS if r.name in set(df["run"])]
    tail = df.sort_values("step").groupby("run").tail(last)
    return tail.groupby("run")[[c for c in COLUMNS if c in df]].mean().loc[order]
