"""Warm start: supervised fine-tuning on generated demonstrations, cached on disk.

Seed 004 §三 lists four remedies for 退化组 degenerate groups; the third is "加示范: 用 SFT
把成功率从 0 拉起来" — add demonstrations, i.e. lift the pass rate off zero with SFT.
A randomly initialised model answers nothing correctly, so every GRPO group would be
all-wrong and carry no gradient (Â = 0 exactly, seed 000 §1.3). A short SFT run on
``a+b=<digits><eos>`` demonstrations fixes that; GRPO then improves on it.

The result is cached under ``cache_dir`` in a folder named by a hash of everything that
determines it (model config and initial weights, tokenizer, task, SFT settings, library
versions), so a notebook re-run loads it in a fraction of a second instead of
re-training. The default cache is ``$GRPO_LAB_CACHE`` or ``~/.cache/grpo_lab``.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import transformers

from grpo_lab import __version__, _checks
from grpo_lab.losses import aggregate
from grpo_lab.lm.evaluation import encode_answers, encode_prompts
from grpo_lab.lm.model import load_model, save_model
from grpo_lab.lm.rollout import Rollout, token_logp
from grpo_lab.lm.tasks import AdditionTask

WARMSTART_VERSION = 1


@dataclass(frozen=True)
class SFTConfig:
    """Supervised warm start: ``steps`` AdamW steps of ``batch`` demonstrations at ``lr``."""

    steps: int = 200
    batch: int = 64
    lr: float = 3e-3
    seed: int = 0

    def __post_init__(self):
        _checks.integer("warmstart_steps", self.steps, low=0)
        _checks.integer("warmstart_batch", self.batch, low=1)
        _checks.in_range("warmstart_lr", self.lr, 0.0, low_open=True)
        _checks.integer("seed", self.seed, low=0)


def default_cache_dir() -> Path:
    return Path(os.environ.get("GRPO_LAB_CACHE", Path.home() / ".cache" / "grpo_lab"))


def demonstrations(tok, problems, device="cpu") -> Rollout:
    """A teacher-forcing batch (G = 1): prompts and their correct responses (answer + EOS)."""
    ids, mask = encode_prompts(tok, problems, device)
    answers = encode_answers(tok, problems)
    T = max(len(a) for a in answers)
    resp = torch.full((len(answers), T), tok.pad_token_id, dtype=torch.long)
    for i, a in enumerate(answers):
        resp[i, :len(a)] = torch.tensor(a)
    lengths = torch.tensor([len(a) for a in answers])
    rmask = (torch.arange(T)[None, :] < lengths[:, None]).float()
    return Rollout(ids, mask, 1, resp.to(device), rmask.to(device), lengths.to(device),
                   torch.zeros(len(answers), dtype=torch.bool, device=device))


def sft(model, tok, task: AdditionTask, cfg: SFTConfig, *, device="cpu", progress=False) -> list[float]:
    """Train ``model`` in place on demonstrations; returns the loss of every step.

    Loss: mean negative log-likelihood of the answer tokens and EOS (prompt tokens are
    context only) — :func:`grpo_lab.losses.aggregate` with ``"token-mean"``.
    """
    rng = np.random.default_rng(cfg.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 20) * 0.5 * (1 + np.cos(np.pi * s / max(cfg.steps, 1))))
    model.train()
    losses = []
    it = range(cfg.steps)
    if progress:
        from tqdm.auto import tqdm

        it = tqdm(it, desc="warm start (SFT)", leave=False)
    for _ in it:
        batch = demonstrations(tok, task.sample(cfg.batch, rng), device)
        nll = -token_logp(model, batch).logp                                  # (B, T)
        loss = aggregate(nll, batch.mask, "token-mean")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        losses.append(float(loss.detach()))
    return losses


def cache_key(model, tok, task: AdditionTask, cfg: SFTConfig, init: str) -> str:
    """Hash of everything that determines the warm-started weights."""
    spec = {"v": WARMSTART_VERSION, "grpo_lab": __version__, "torch": torch.__version__.split("+")[0],
            "transformers": transformers.__version__, "config": model.config.to_diff_dict(),
            "vocab": sorted(tok.get_vocab().items()), "task": task.spec(), "sft": asdict(cfg), "init": init}
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]


def warm_start(model, tok, task: AdditionTask, cfg: SFTConfig, *, init: str, device="cpu",
               cache_dir=None, progress=False):
    """Return (model, info): the warm-started model, loaded from cache or trained then cached.

    ``init`` describes the initial weights (e.g. ``"random:seed=0"``) and is part of the
    key. ``info`` has ``cached`` (bool), ``seconds``, ``path`` and ``losses`` (empty when
    loaded). ``cache_dir=False`` disables the cache.
    """
    t0 = time.perf_counter()
    if cfg.steps == 0:
        return model, {"cached": False, "seconds": 0.0, "path": None, "losses": []}
    root = None if cache_dir is False else Path(cache_dir) if cache_dir else default_cache_dir()
    key = cache_key(model, tok, task, cfg, init)
    path = None if root is None else root / f"warmstart-{key}"
    if path is not None and (path / "config.json").is_file() and (path / "meta.json").is_file():
        loaded, _ = load_model(path)
        model.load_state_dict(loaded.state_dict())
        meta = json.loads((path / "meta.json").read_text())
        return model, {"cached": True, "seconds": time.perf_counter() - t0, "path": str(path),
                       "losses": meta.get("losses", [])}
    model.to(device)
    losses = sft(model, tok, task, cfg, device=device, progress=progress)
    if path is not None:
        root.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-warmstart-", dir=root))
        save_model(model, tok, tmp)
        (tmp / "meta.json").write_text(json.dumps({"key": key, "sft": asdict(cfg), "init": init,
                                                   "task": task.spec(), "losses": losses}))
        try:
            tmp.rename(path)
        except OSError:   # another process cached the same key first
            shutil.rmtree(tmp, ignore_errors=True)
    return model, {"cached": False, "seconds": time.perf_counter() - t0, "path": None if path is None else str(path),
                   "losses": losses}


__all__ = ["SFTConfig", "sft", "warm_start", "demonstrations", "cache_key", "default_cache_dir"]
