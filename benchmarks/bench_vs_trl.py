"""grpo_lab's loop vs TRL's GRPOTrainer on the issue-6 comparison configuration, interleaved.

Runs ``bench_loop.py`` and ``bench_trl.py`` alternately (``--rounds`` times each, each in a
fresh process, the same flags) so that a drifting machine load hits both alike, then prints
one JSON line: every run's median s/step (wall and CPU), the median over rounds, and the
ratio grpo_lab / TRL (issue 6's goal: ≤ 0.8 on the same machine in the same run). Both sides
answer the same prompts step for step (``same_prompts``: TRL's dataset is the trainer's draws in
order, unshuffled; before 2026-12-03 the two sides drew different problems).

    python benchmarks/bench_vs_trl.py                       # comparison config, 3 rounds
    python benchmarks/bench_vs_trl.py --rounds 5 --steps 30 -- --G 16   # extra flags after --
    python benchmarks/bench_vs_trl.py --real --rounds 2 --steps 2 --warmup 1   # SmolLM2-135M, chat task
    python benchmarks/bench_vs_trl.py --real --rounds 2 --steps 2 --warmup 1 -- --lora-rank 8 --lr 2e-4   # LoRA both

``--real`` is notebook 08's configuration on SmolLM2-135M-Instruct (``REAL_FLAGS``: the chat
task, levels 1 and 3, 4 prompts × G = 4, at most 40 new tokens, τ = 0.7, β = 0.04, bf16 autocast
on a CPU with bf16 units for both). A real-model step costs seconds of CPU, so keep the
rounds and steps small on a shared machine; ``ratio_cpu`` (process CPU time) is the figure to
read there.

Needs the optional extra (``pip install -e '.[trl]'``). The warm start is cached by the
first run, so the first round also pays for it outside the timed steps.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
REAL_FLAGS = ["--model", "smollm2-135m", "--chat-levels", "1,3", "--prompts", "4", "--G", "4", "--max-new", "40",
              "--temperature", "0.7", "--beta", "0.04"]


def run(script: str, flags: list[str]) -> dict:
    res = subprocess.run([sys.executable, str(HERE / script), *flags], capture_output=True, text=True, check=False)
    lines = [ln for ln in res.stdout.splitlines() if ln.startswith("{")]
    if res.returncode != 0 or not lines:
        raise SystemExit(f"{script} failed (exit {res.returncode}):\n{res.stderr[-3000:]}")
    return json.loads(lines[-1])


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3, help="runs of each benchmark, interleaved")
    ap.add_argument("--steps", type=int, default=20, help="timed steps per run")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps per run")
    ap.add_argument("--real", action="store_true", help="SmolLM2-135M-Instruct on the chat task (REAL_FLAGS)")
    ap.add_argument("extra", nargs="*", help="flags passed to both benchmarks (after --)")
    args = ap.parse_args(argv)
    flags = ["--steps", str(args.steps), "--warmup", str(args.warmup), *(REAL_FLAGS if args.real else []), *args.extra]
    ours, trl = [], []
    for _ in range(args.rounds):
        ours.append(run("bench_loop.py", flags))
        trl.append(run("bench_trl.py", flags))
    med = statistics.median

    def summary(runs):
        return {"wall_s": [r["median_s_per_step"] for r in runs], "cpu_s": [r["median_cpu_s_per_step"] for r in runs],
                "median_wall_s": med(r["median_s_per_step"] for r in runs),
                "median_cpu_s": med(r["median_cpu_s_per_step"] for r in runs),
                "phases_s": {k: med(r["phases_s"].get(k, 0.0) for r in runs) for k in runs[0]["phases_s"]},
                "tokens_per_s": med(r["tokens_per_s"] for r in runs),
                "peak_rss_mb": med(r["peak_rss_mb"] for r in runs),
                "reward_mean": med(r["reward_mean"] for r in runs),
                "mean_response_len": med(r["mean_response_len"] for r in runs)}

    a, b = summary(ours), summary(trl)
    same = all(r.get("same_prompts_as_grpo_lab") for r in trl)
    if not same:
        print("warning: TRL did not answer the prompts grpo_lab's trainer asked (see bench_trl.py)", file=sys.stderr)
    out = {"config": ours[0]["config"], "trl": trl[0].get("framework"), "rounds": args.rounds,
           "same_prompts": same, "grpo_lab": a, "TRL": b,
           "ratio_wall": round(a["median_wall_s"] / b["median_wall_s"], 3),
           "ratio_cpu": round(a["median_cpu_s"] / b["median_cpu_s"], 3)}
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
