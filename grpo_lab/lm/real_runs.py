"""The capstone experiment on SmolLM2-135M-Instruct (notebook 08): its settings, runs and data.

Everything notebook 08 shows comes from files written by ``scripts/make_real_lm_runs.py``
into ``grpo_lab/data/real_lm/`` (small JSON/CSV; the run folders with weights live outside
the repository). The experiment is a list of *jobs*, each writing one file and skipped when
its file exists, so the script can be stopped and re-run at any time:

1. **probes** — the base model before training on :data:`PROBE_PER_LEVEL` held-out problems
   per level, n = 16 samples each, at every τ in :data:`TEMPERATURES` (the issue's table), to
   choose τ: :func:`choose_temperature` takes the τ whose groups of G are most often
   *informative* (rewards not all equal), the quantity that decides whether a GRPO step has
   a gradient.
2. **before** and **prompt_only** — the base model on the full held-out set
   (:data:`EVAL_PER_LEVEL`: 200 distinct problems), greedy and n = 16 samples at the chosen τ
   with the evaluation budget :data:`EVAL_MAX_NEW` (independent of the training budget);
   prompt_only adds :data:`~grpo_lab.lm.chat_tasks.BRIEF_INSTRUCTION` and trains nothing.
3. **runs** (:data:`RUNS`, in priority order) — each trains with :data:`TRAIN` plus its own
   overrides, then is evaluated on the same 200 problems as ``before``.

Every file records the code version (git commit and a hash of the package sources) and its
settings. :func:`load` reads the folder back; :func:`summary_table` gives one row per
evaluation with 95 % bootstrap intervals over problems.
"""
from __future__ import annotations

import functools
import hashlib
import json
import subprocess
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from grpo_lab import methods
from grpo_lab.i18n import Text
from grpo_lab.lm.evaluation import PASS_KS, summarize_problems

DATA_DIR = "real_lm"
MODEL = "smollm2-135m"
LEVELS = (2, 3)                      # two-digit sums and one-step word problems: headroom (issue 20's table)
EVAL_PER_LEVEL = {2: 128, 3: 72}     # 200 distinct held-out problems (level 3 holds out 76)
PROBE_PER_LEVEL = {2: 24, 3: 24}     # the first problems of the same set
EVAL_SAMPLES = 16                    # n per problem: pass@k for k = 1 … 16
EVAL_MAX_NEW = 96                    # evaluation budget (tokens), independent of TRAIN["max_new"]
TEMPERATURES = (0.7, 1.0)
EVAL_SEED = 1234                     # the held-out set's draw

# Training settings shared by every run (sized for a 2-core CPU; a GPU runs the same list faster).
# G = 8 and P = 8: at the chosen τ = 0.7 the probes give a share of informative groups of 8 of 0.35 (plug-in,
# choice.json; 0.39 unbiased, informative_share), so a step holds ≈ 3 informative groups and a step with none
# has probability ≈ 0.61^8 ≈ 2 % (at P = 4: 14 %). 20 steps (was 40 before any run started): measured, a
# step at P·G = 64 takes about 1 min of one core and a run's 20 steps 15–27 min (docs/lm.md, "Status and cost").
TRAIN = dict(model=MODEL, chat_levels=LEVELS, prompts_per_step=8, G=8, max_new=64, steps=20, lr=2e-5,
             lr_warmup=0, threads=1, progress=False, chat_eval_per_level=2, checkpoint_every=2,
             checkpoint_seconds=300.0)


@dataclass(frozen=True)
class Run:
    """One training run: a method record (:mod:`grpo_lab.methods`) plus what else it changes."""

    name: str
    method: str                     # the registry record its loss comes from
    changes: Text                   # what it changes relative to the GRPO run, in words (both languages)
    seed: int = 0
    overrides: dict = field(default_factory=dict)

    def config(self, temperature: float, out: str | None = None):
        from grpo_lab.lm.config import GRPOConfig

        preset = self.method if self.method in methods.PRESETS else "grpo"
        return GRPOConfig.preset(preset, **{**TRAIN, "temperature": temperature, "seed": self.seed,
                                            "out": out, "resume": out is not None, **self.overrides})


def _seeds(name, method, changes, seeds, **overrides):
    return [Run(f"{name}_s{s}", method, changes, s, overrides) for s in seeds]


RFT = dict(estimator="rft", adv_scale="none", beta=0.0, kl_metric=True)
_GRPO = Text("GRPO: Â = (r − mean)/std, eq. (6), β = 0.04", "GRPO：Â = (r − 均值)/标准差，式 (6)，β = 0.04")
_RFT = Text("RFT baseline: Â = r (1 correct, 0 wrong): no group baseline, no negatives, no ÷std, β = 0 — four "
            "changes from GRPO at once; the same sampling budget",
            "RFT 基线：Â = r（答对为 1，答错为 0）：没有组内基线、没有负优势、不除以标准差、β = 0，相对 GRPO "
            "同时改了四处；采样预算相同")
_LORA = Text("GRPO with LoRA rank 8 (α = 16, adapters only) and lr 2·10⁻⁴, 10× full fine-tuning's (the ratio "
             "LoRA Without Regret found best for its set-up; not tuned here): rank and lr change together",
             "GRPO，LoRA 秩 8（α = 16，只训练适配器），学习率 2·10⁻⁴，为全量微调的 10 倍（LoRA Without Regret "
             "在其设置下找到的最佳比例；这里没有调过）：秩和学习率一起改变")
# In priority order: what a stopped experiment has finished first is what the notebook can show.
RUNS: tuple[Run, ...] = (
    *_seeds("grpo", "grpo", _GRPO, [0]),
    *_seeds("rft", "grpo", _RFT, [0], **RFT),
    *_seeds("grpo", "grpo", _GRPO, [1, 2]),
    *_seeds("lora8", "grpo", _LORA, [0], lora_rank=8, lr=2e-4),
    *_seeds("rft", "grpo", _RFT, [1, 2], **RFT),
    *_seeds("dr_grpo", "dr_grpo", Text("Dr. GRPO: no ÷std and the constant 1/C, β = 0",
                                       "Dr. GRPO：不除以标准差，并用常数 1/C 聚合，β = 0"), [0]),
    *_seeds("eq7", "grpo", Text("GRPO with eq. (7) token-mean only; β = 0.04", "GRPO，只把聚合换成式 (7) 批次平均；β = 0.04"),
            [0], agg="token-mean"),
    *_seeds("no_std", "grpo", Text("GRPO without ÷std only (adv_scale none); eq. (6), β = 0.04",
                                   "GRPO，只去掉 ÷标准差（adv_scale none）；式 (6)，β = 0.04"), [0], adv_scale="none"),
    *_seeds("lora8", "grpo", _LORA, [1, 2], lora_rank=8, lr=2e-4),
)


def run_named(name: str) -> Run:
    for r in RUNS:
        if r.name == name:
            return r
    raise ValueError(f"run must be one of {', '.join(r.name for r in RUNS)}; got {name!r}")


def choose_temperature(probes: dict[float, pd.DataFrame], G: int) -> tuple[float, dict]:
    """The τ whose groups of ``G`` samples are most often informative, from the probe tables.

    With per-problem success rate p = c/n, a group of G is degenerate (all rewards equal) with
    probability p^G + (1 − p)^G; the expected share of informative groups is the mean of
    1 − p^G − (1 − p)^G over problems (a plug-in estimate, slightly low: :func:`informative_share` is
    the unbiased one). Returns (τ, {τ: that share}).
    """
    share = {}
    for t, df in probes.items():
        p = df["c"].to_numpy() / df["n"].to_numpy()
        share[float(t)] = float(np.mean(1 - p ** G - (1 - p) ** G))
    return max(share, key=share.get), share


def informative_share(df: pd.DataFrame, G: int) -> float:
    """The unbiased estimate of the share of informative groups (rewards not all equal) when G of a
    problem's n sampled replies are drawn without replacement: the mean over problems of
    1 − [C(c, G) + C(n − c, G)] / C(n, G). :func:`choose_temperature` uses the plug-in
    1 − p^G − (1 − p)^G with p = c/n, which is slightly lower; both pick the same τ here."""
    from math import comb

    vals = [1 - (comb(int(c), G) + comb(int(n - c), G)) / comb(int(n), G) for n, c in zip(df["n"], df["c"])]
    return float(np.mean(vals))


# -- code version and files ----------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def code_version() -> dict:
    """{"commit", "dirty", "sources_sha256"}: the git commit and a hash of grpo_lab's sources, taken
    once per process (the first call: the experiment script makes it at start, so later edits of
    the working tree do not relabel a running experiment)."""
    root = Path(__file__).resolve().parents[2]
    h = hashlib.sha256()
    for f in sorted((root / "grpo_lab").rglob("*.py")):
        h.update(f.read_bytes())
    out = {"sources_sha256": h.hexdigest()[:16], "commit": None, "dirty": None}
    try:
        out["commit"] = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                                       check=True).stdout.strip()
        # the data folder is excluded: the experiment itself writes there (before this fix a restart while
        # results were uncommitted recorded dirty = True; sources_sha256 was, and is, the exact record)
        out["dirty"] = bool(subprocess.run(["git", "status", "--porcelain", "--", "grpo_lab", "scripts",
                                            ":(exclude)grpo_lab/data"], cwd=root,
                                           capture_output=True, text=True, check=True).stdout.strip())
    except (OSError, subprocess.CalledProcessError):
        pass
    return out


def data_dir(path=None) -> Path:
    """``path``, else ``$GRPO_LAB_REAL_LM_DATA`` (another copy of the results), else the package's data."""
    import os

    path = path if path is not None else os.environ.get("GRPO_LAB_REAL_LM_DATA")
    return Path(path) if path else Path(str(resources.files("grpo_lab") / "data" / DATA_DIR))


def load(path=None) -> dict:
    """{"evals": {name: per-problem DataFrame}, "eval_meta": {name: dict}, "steps": {run: DataFrame},
    "run_meta": {run: dict}, "samples": {run: list}, "reproducibility": dict or None}: whatever the
    experiment has written so far."""
    d = data_dir(path)
    out = {"evals": {}, "eval_meta": {}, "steps": {}, "run_meta": {}, "samples": {}, "reproducibility": None}
    if (d / "reproducibility.json").exists():          # scripts/make_real_lm_runs.py --only repro
        out["reproducibility"] = json.loads((d / "reproducibility.json").read_text())
    for f in sorted((d / "evals").glob("*.json")):
        csv = f.with_suffix(".csv")
        if csv.exists():
            out["evals"][f.stem] = pd.read_csv(csv)
            out["eval_meta"][f.stem] = json.loads(f.read_text())
    for f in sorted((d / "runs").glob("*.json")):
        meta = json.loads(f.read_text())
        out["run_meta"][f.stem] = meta
        if f.with_suffix(".csv").exists():
            out["steps"][f.stem] = pd.read_csv(f.with_suffix(".csv"))
        out["samples"][f.stem] = meta.get("samples_step1", [])
    return out


def summary_table(evals: dict, names=None, *, n_boot=2000) -> pd.DataFrame:
    """One row per evaluation: each metric of :func:`summarize_problems` as value, low, high."""
    rows = []
    for name in names or evals:
        s = summarize_problems(evals[name], n_boot=n_boot)
        row = {"eval": name, "n_problems": s.pop("n_problems")}
        for k, (v, lo, hi) in s.items():
            row[k], row[f"{k}_lo"], row[f"{k}_hi"] = v, lo, hi
        rows.append(row)
    return pd.DataFrame(rows).set_index("eval")


def per_problem(before: pd.DataFrame, after: pd.DataFrame) -> pd.DataFrame:
    """The before/after table on the same problems (joined on level and operands)."""
    key = ["level", "numbers", "answer"]
    cols = ["greedy_correct", "greedy_finished", "greedy_len", "c", "f", "len_mean", "greedy_reply"]
    b = before[key + [c for c in cols if c in before]]
    a = after[key + [c for c in cols if c in after]]
    m = b.merge(a, on=key, suffixes=("_before", "_after"), validate="one_to_one")
    if len(m) != len(before) or len(m) != len(after):
        raise ValueError("before and after are not evaluations of the same problems")
    return m


def coverage(before: pd.DataFrame, after: pd.DataFrame) -> dict:
    """How many problems each evaluation solved at least once in its n samples (c > 0), on the same
    problems: {"both", "only_before", "only_after", "neither", "n"}. "only_after" / "only_before":
    problems solved in the n samples only after / only before. Both have a re-sampling noise floor
    (:func:`resample_lost`; an untrained comparison such as prompt-only shows it), so a count at or
    below it is not evidence of expanding or narrowing; Yue et al. 2025's narrowing is about k far
    above n = 16. A problem with c = 0 in 16 samples is not unsolvable: more samples could find it."""
    pp = per_problem(before, after)
    b, a = pp["c_before"].to_numpy() > 0, pp["c_after"].to_numpy() > 0
    return {"both": int((b & a).sum()), "only_before": int((b & ~a).sum()), "only_after": int((~b & a).sum()),
            "neither": int((~b & ~a).sum()), "n": int(len(pp))}


def resample_lost(df: pd.DataFrame) -> float:
    """The number of problems with c > 0 that a fresh set of n samples *of the same model* would be
    expected to miss entirely: Σ over those problems of (1 − c/n)^n (sampling with replacement at the
    plug-in rate c/n). The noise floor for :func:`coverage`'s "only_before" count: losing that many
    problems needs no training at all."""
    c, n = df["c"].to_numpy(float), df["n"].to_numpy(float)
    solved = c > 0
    return float(np.sum((1 - c[solved] / n[solved]) ** n[solved]))


# -- what notebook 08 shows ------------------------------------------------------------------
def jobs_done(data: dict) -> dict:
    """{job: done?} for every job of the experiment, from :func:`load`'s result."""
    out = {"probes": any(k.startswith("probe_") for k in data["evals"]), "before": "before" in data["evals"],
           "prompt_only": "prompt_only" in data["evals"]}
    out.update({r.name: r.name in data["evals"] for r in RUNS})
    return out


def per_problem_values(df: pd.DataFrame, metric: str) -> np.ndarray:
    """One value per problem: ``greedy`` (0/1), ``pass@k`` (unbiased), ``finish`` (f/n) or ``len``."""
    from grpo_lab.lm.evaluation import pass_at_k

    if metric == "greedy":
        return df["greedy_correct"].to_numpy(float)
    if metric.startswith("pass@"):
        return pass_at_k(df["n"], df["c"], int(metric[5:]))
    if metric == "finish":
        return (df["f"] / df["n"]).to_numpy(float)
    if metric == "len":
        return df["len_mean"].to_numpy(float)
    raise ValueError(f"metric must be greedy, pass@k, finish or len; got {metric!r}")


def passk_curve(df: pd.DataFrame, ks=PASS_KS, *, n_boot=2000) -> pd.DataFrame:
    """pass@k for each k with its 95 % bootstrap interval over problems (columns k, value, lo, hi)."""
    from grpo_lab.lm.evaluation import bootstrap_ci

    return pd.DataFrame([(k, *bootstrap_ci(per_problem_values(df, f"pass@{k}"), n_boot=n_boot)) for k in ks],
                        columns=["k", "value", "lo", "hi"])


def training_summary(data: dict, *, first: int = 5, last: int = 5) -> pd.DataFrame:
    """One row per trained run (from :func:`load`'s result): the sampled training reward over its
    ``first`` and ``last`` steps (τ = TRAIN's, the 64-token training budget, on training problems),
    the mean share of informative groups, the held-out pass@1 at the evaluation budget (when the run
    has been evaluated), and what the run cost on the machine that made it (wall minutes of its
    training steps and of its evaluation). The training reward and the held-out pass@1 are both
    sampled at the same τ, but on different problems and budgets, so they are set side by side,
    not compared as equals."""
    rows = []
    for name, st in data["steps"].items():
        st = st.sort_values("step")
        ev = data["evals"].get(name)
        meta = data["eval_meta"].get(name, {})
        rows.append({"run": name, "steps": int(st["step"].max()),
                     "reward_first": float(st["reward_mean"].head(first).mean()),
                     "reward_last": float(st["reward_mean"].tail(last).mean()),
                     "informative_mean": float(st["frac_informative"].mean()),
                     "heldout_pass@1": float(per_problem_values(ev, "pass@1").mean()) if ev is not None else np.nan,
                     "train_min": float(st["seconds"].sum() / 60),
                     "eval_min": float(meta["seconds"] / 60) if "seconds" in meta else np.nan})
    cols = ["steps", "reward_first", "reward_last", "informative_mean", "heldout_pass@1", "train_min", "eval_min"]
    return pd.DataFrame(rows, columns=["run", *cols]).set_index("run")


def against_seeds(what, value: float, seed_values, unit="") -> "Claim":
    """:class:`Claim` for one run's ``value`` against a method's seeds (:func:`~grpo_lab.lm.evaluation.seed_difference`):
    its n is the number of seeds, and "detectable" means outside the seeds' own spread. For a method
    with one seed; two methods with ≥ 2 seeds each are compared by :func:`between_methods`."""
    from grpo_lab.lm.evaluation import seed_difference

    return claim(what, seed_difference(value, seed_values), len(seed_values), unit, SEEDS)


def between_methods(what, a_values, b_values, unit="") -> "Claim":
    """:class:`Claim` for method B − method A over their seeds (each ≥ 2): the pooled two-sample t
    interval of :func:`~grpo_lab.lm.evaluation.two_sample_seeds`; its n is all the seeds."""
    from grpo_lab.lm.evaluation import two_sample_seeds

    return claim(what, two_sample_seeds(a_values, b_values), len(a_values) + len(b_values), unit, SEEDS)


@dataclass(frozen=True)
class Claim:
    """A difference (value, 95 % interval) at n problems, said in words the interval allows.

    ``detectable`` is False when the interval holds 0; the sentence then says "no detectable difference
    at n = …" (Chinese: 「n = … 时检测不到差别」) and never "up" or "down". ``str()`` follows
    :func:`grpo_lab.set_language`; ``what`` and ``unit`` may be bilingual :class:`~grpo_lab.i18n.Text`.
    """

    what: object
    value: float
    lo: float
    hi: float
    n: int
    unit: object = ""
    of: object = ""                 # what n counts: PROBLEMS or SEEDS (printed after the number)

    def __post_init__(self):
        if not (np.isfinite(self.value) and np.isfinite(self.lo) and np.isfinite(self.hi)):
            raise ValueError(f"diff: value and interval must be finite numbers; got "
                             f"({self.value}, {self.lo}, {self.hi}) for {self.what}")
        if not self.lo <= self.hi:
            raise ValueError(f"diff: the interval must have low <= high; got [{self.lo}, {self.hi}] for {self.what}")

    @property
    def detectable(self) -> bool:
        return not self.lo <= 0 <= self.hi

    def __str__(self) -> str:
        from grpo_lab.i18n import tr

        w, u, of = str(self.what), str(self.unit), str(self.of)
        iv = f"[{self.lo:+.3f}, {self.hi:+.3f}]"
        if not self.detectable:
            return tr(f"{w}: no detectable difference at n = {self.n}{of} ({self.value:+.3f}{u}, 95 % interval {iv})",
                      f"{w}：n = {self.n}{of}时检测不到差别（{self.value:+.3f}{u}，95 % 区间 {iv}）")
        way = tr("up", "上升") if self.value > 0 else tr("down", "下降")
        return tr(f"{w}: {way} by {abs(self.value):.3f}{u} (95 % interval {iv}, n = {self.n}{of})",
                  f"{w}：{way} {abs(self.value):.3f}{u}（95 % 区间 {iv}，n = {self.n}{of}）")

    __repr__ = __str__


PROBLEMS = Text(" problems", " 道题")
SEEDS = Text(" seeds", " 个随机种子")


def claim(what, diff: tuple, n: int, unit="", of=PROBLEMS) -> Claim:
    """:class:`Claim` for a difference ``diff`` = (value, low, high) at ``n`` problems (``of``: what n counts)."""
    v, lo, hi = (float(x) for x in diff)
    return Claim(what, v, lo, hi, int(n), unit, of)


def push_html(tokens: list[str], adv: float, *, scale: float = 2.0) -> str:
    """One reply's tokens as HTML, each coloured by its push: the same Â on every token (lecture
    notes 000 §2.3), blue for Â > 0 (pushed up), red for Â < 0 (pushed down), grey for Â = 0."""
    import html

    from matplotlib import colormaps, colors

    cmap = colormaps[methods.PUSH_CMAP]
    rgb = colors.to_hex(cmap(0.5 + 0.5 * max(-1.0, min(1.0, adv / scale))))
    spans = "".join(f'<span style="background:{rgb};padding:1px 2px;margin:1px;border-radius:3px" '
                    f'title="Â = {adv:+.3f}">{html.escape(t.replace("Ġ", " ").replace("Ċ", "↵"))}</span>'
                    for t in tokens)
    return f'<div style="line-height:1.9;font-family:monospace">{spans}</div>'


def setups(data: dict) -> dict:
    """Which files share a computing set-up, from :func:`load`'s result (the provenance each file records).

    {"second": evaluations whose file records the processor (made in the second set-up),
    "repeat_curves": runs whose training record is a repeat of the recipe and seed, made in the second
    set-up after the evaluation (``run_meta[...]["rebuilt"]``), "base_agreement": on the first 16
    problems, how many greedy replies, greedy correctness, c and f of the base model agree between the
    two set-ups, "base_repeat": the same within the second set-up}."""
    second = sorted(n for n, m in data["eval_meta"].items() if m.get("env", {}).get("cpu"))
    repeat = sorted(n for n, m in data["run_meta"].items() if "rebuilt" in m)
    rep = data.get("reproducibility") or {}
    return {"second": second, "repeat_curves": repeat, "base_agreement": rep.get("against_committed_before"),
            "base_repeat": rep.get("same_machine_twice"), "problems": rep.get("problems")}


def claim_frame(claims: dict, metrics=None) -> pd.DataFrame:
    """{(run, metric): Claim} as a table: one row per run, one column per metric, each cell
    "+0.502 [+0.454, +0.549]" (value and 95 % interval); a cell whose interval holds 0 ends in " ·"."""
    metrics = list(metrics or dict.fromkeys(m for _, m in claims))
    rows = {}
    for (run, m), c in claims.items():
        if m in metrics:
            rows.setdefault(run, {})[m] = f"{c.value:+.3f} [{c.lo:+.3f}, {c.hi:+.3f}]" + ("" if c.detectable else " ·")
    return pd.DataFrame(rows).T.reindex(columns=metrics)


__all__ = ["DATA_DIR", "MODEL", "LEVELS", "EVAL_PER_LEVEL", "PROBE_PER_LEVEL", "EVAL_SAMPLES", "EVAL_MAX_NEW",
           "TEMPERATURES", "EVAL_SEED", "TRAIN", "Run", "RUNS", "RFT", "run_named", "choose_temperature", "informative_share",
           "code_version", "data_dir", "load", "summary_table", "per_problem", "coverage", "PASS_KS", "jobs_done",
           "per_problem_values", "passk_curve", "training_summary", "resample_lost", "Claim", "claim",
           "PROBLEMS", "SEEDS", "against_seeds", "between_methods", "push_html", "setups", "claim_frame"]
