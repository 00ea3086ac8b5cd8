"""The run folder: checkpoints (write, find, load) and the per-step metrics files.

Layout of ``out/``::

    config.json            the run's GRPOConfig
    ref/                   the reference model π_ref (saved once, when it is needed)
    metrics.csv / .jsonl   one row per step, appended after every step
    eval_before.json / eval_after.json
    checkpoints/step_NNNNNN/   model.safetensors + config + tokenizer, optimizer.pt, state.json

A checkpoint is written into ``.tmp_step_NNNNNN`` and renamed into place, so a reader sees
either a whole checkpoint or none.
"""
from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pandas as pd
import torch

from grpo_lab.lm.model import load_model, save_model


def checkpoint_dirs(out: Path) -> list[Path]:
    """Every complete checkpoint folder of the run in ``out``, oldest first."""
    d = out / "checkpoints"
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.name.startswith("step_") and (p / "state.json").exists())


def latest_checkpoint(out: Path | None) -> Path | None:
    if out is None:
        return None
    steps = checkpoint_dirs(out)
    return steps[-1] if steps else None


def write_checkpoint(out: Path, step: int, policy, tok, opt, state: dict, keep: int = 2) -> Path:
    """Policy (safetensors), optimiser state and ``state`` under ``out/checkpoints/step_NNNNNN``."""
    root = out / "checkpoints"
    path = root / f"step_{step:06d}"
    tmp = root / f".tmp_step_{step:06d}"
    shutil.rmtree(tmp, ignore_errors=True)
    save_model(policy, tok, tmp)
    torch.save(opt.state_dict(), tmp / "optimizer.pt")
    (tmp / "state.json").write_text(json.dumps(state))
    shutil.rmtree(path, ignore_errors=True)
    os.replace(tmp, path)
    for old in sorted(p for p in root.iterdir() if p.name.startswith("step_"))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return path


def read_checkpoint(path: Path, policy, opt, device) -> dict:
    """Load the policy weights and optimiser state of the checkpoint at ``path``; returns its state.json."""
    state = json.loads((path / "state.json").read_text())
    loaded, _ = load_model(path)
    policy.load_state_dict(loaded.state_dict())
    opt.load_state_dict(torch.load(path / "optimizer.pt", map_location=device, weights_only=True))
    return state


def append_metrics(out: Path, row: dict) -> None:
    """Append one step's row to ``metrics.csv`` and ``metrics.jsonl`` (NaN → null in JSON)."""
    csv = out / "metrics.csv"
    header = not csv.exists()
    pd.DataFrame([row]).to_csv(csv, mode="a", header=header, index=False)
    with open(out / "metrics.jsonl", "a") as f:
        f.write(json.dumps({k: (None if isinstance(v, float) and math.isnan(v) else v)
                            for k, v in row.items()}) + "\n")


def truncate_metrics(out: Path, step: int) -> list[dict]:
    """Drop the rows after ``step`` (they belong to an interrupted future); returns the rows kept."""
    csv = out / "metrics.csv"
    if not csv.exists():
        return []
    df = pd.read_csv(csv)
    df = df[df["step"] <= step]
    df.to_csv(csv, index=False)
    jl = out / "metrics.jsonl"
    if jl.exists():
        lines = [ln for ln in jl.read_text().splitlines() if ln.strip() and json.loads(ln)["step"] <= step]
        jl.write_text("".join(ln + "\n" for ln in lines))
    return df.to_dict("records")
