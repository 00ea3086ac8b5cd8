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
import time
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import torch
import transformers

from grpo_lab import __version__, _checks
from grpo_lab.losses import aggregate
from grpo_lab.lm import fsutil
from grpo_lab.lm.evaluation import encode_answers, encode_prompts, evaluate
from grpo_lab.lm.model import load_model, save_model
from grpo_lab.lm.rollout import Rollout, token_logp
from grpo_lab.lm.tasks import AdditionTask

WARMSTART_VERSION = 2


@dataclass(frozen=True)
class SFTConfig:
    """Supervised warm start on demonstrations.

    AdamW (``lr``, ``weight_decay``) with a 20-step linear warm-up, then a constant rate.
    Every ``check_every`` steps the greedy accuracy on a fixed probe of *training* problems
    (``probe`` per level, never the held-out set) is measured; once the worst level reaches
    ``target`` — "the pass rate is off zero" — a final ``anneal`` steps (at most as many as
    the constant phase had) decay the rate linearly to 0 and training stops. ``steps`` caps the constant phase. ``target=None``
    trains exactly ``steps`` steps (then anneals). Weight decay matters here: without it the
    moment the model "gets" carrying varies between seeds by a factor of 2–3.
    """

    steps: int = 1000
    batch: int = 64
    lr: float = 3e-3
    weight_decay: float = 0.1
    target: float | None = 0.5
    check_every: int = 50
    anneal: int = 100
    probe: int = 100
    seed: int = 0

    def __post_init__(self):
        _checks.integer("warmstart_steps", self.steps, low=0)
        _checks.integer("warmstart_batch", self.batch, low=1)
        _checks.in_range("warmstart_lr", self.lr, 0.0, low_open=True)
        _checks.in_range("warmstart_weight_decay", self.weight_decay, 0.0)
        if self.target is not None:
            _checks.in_range("warmstart_target", self.target, 0.0, 1.0, low_open=True)
        _checks.integer("check_every", self.check_every, low=1)
        _checks.integer("anneal", self.anneal, low=0)
        _checks.integer("probe", self.probe, low=1)
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


def sft(model, tok, task: AdditionTask, cfg: SFTConfig, *, device="cpu", progress=False) -> dict:
    """Train ``model`` in place on demonstrations. Returns ``{"losses", "probe", "steps"}``.

    Loss: mean negative log-likelihood of the answer tokens and EOS (prompt tokens are
    context only) — :func:`grpo_lab.losses.aggregate` with ``"token-mean"``.
    ``probe`` lists (step, worst-level greedy accuracy on the probe problems).
    """
    rng = np.random.default_rng(cfg.seed)
    probe_set = task.sample(cfg.probe * len(task.levels), np.random.default_rng(cfg.seed + 10_007), stratified=True)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    model.train()
    losses, probe = [], []
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.steps + cfg.anneal, desc="warm start (SFT)", leave=False)

    def one_step(lr):
        for group in opt.param_groups:
            group["lr"] = lr
        batch = demonstrations(tok, task.sample(cfg.batch, rng), device)
        nll = -token_logp(model, batch).logp                                  # (B, T)
        loss = aggregate(nll, batch.mask, "token-mean")
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(float(loss.detach()))
        if bar is not None:
            bar.update(1)

    step = 0
    while step < cfg.steps:
        one_step(cfg.lr * min(1.0, (step + 1) / 20))
        step += 1
        if cfg.target is not None and step % cfg.check_every == 0:
            ev = evaluate(model, tok, task, probe_set, max_new=8, device=device)
            worst = min(ev[f"acc_L{lv}"] for lv in task.levels)
            probe.append((step, round(worst, 4)))
            model.train()
            if worst >= cfg.target:
                break
    anneal = min(cfg.anneal, step)
    for k in range(anneal):                                                   # linear decay to 0
        one_step(cfg.lr * (1 - (k + 1) / (anneal + 1)))
    if bar is not None:
        bar.close()
    return {"losses": losses, "probe": probe, "steps": step + anneal}


def _task_key(task: AdditionTask) -> dict:
    spec = task.spec()
    spec.pop("partial", None)          # the reward does not change the demonstrations
    return spec


def cache_key(model, tok, task: AdditionTask, cfg: SFTConfig, init: str) -> str:
    """Hash of everything that determines the warm-started weights."""
    spec = {"v": WARMSTART_VERSION, "grpo_lab": __version__, "torch": torch.__version__.split("+")[0],
            "transformers": transformers.__version__, "config": model.config.to_diff_dict(),
            "vocab": sorted(tok.get_vocab().items()), "task": _task_key(task), "sft": asdict(cfg), "init": init}
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
        return model, {"cached": False, "seconds": 0.0, "path": None, "losses": [], "probe": [], "steps": 0}
    root = None if cache_dir is False else Path(cache_dir) if cache_dir else default_cache_dir()
    key = cache_key(model, tok, task, cfg, init)
    path = None if root is None else root / f"warmstart-{key}"
    if root is not None:
        fsutil.remove_stale_tmp(root, ".tmp-warmstart")          # left by a save that was killed
    if path is not None and (path / "config.json").is_file() and (path / "meta.json").is_file():
        try:
            meta = json.loads((path / "meta.json").read_text())
            loaded, _ = load_model(path)
            model.load_state_dict(loaded.state_dict())
            return model, {"cached": True, "seconds": time.perf_counter() - t0, "path": str(path),
                           "losses": meta.get("losses", []), "probe": meta.get("probe", []),
                           "steps": meta.get("steps")}
        except Exception as e:   # a truncated or corrupt entry: the cache is only a cache, rebuild it
            warnings.warn(f"warm-start cache entry {str(path)!r} is unreadable ({type(e).__name__}); "
                          f"rebuilding it", UserWarning, stacklevel=2)
            shutil.rmtree(path, ignore_errors=True)
    model.to(device)
    res = sft(model, tok, task, cfg, device=device, progress=progress)
    if path is not None and not _save_entry(model, tok, root, path, {"key": key, "sft": asdict(cfg), "init": init,
                                                                     "task": task.spec(), **res}, t0):
        path = None
    return model, {"cached": False, "seconds": time.perf_counter() - t0, "path": None if path is None else str(path),
                   **res}


def _save_entry(model, tok, root: Path, path: Path, meta: dict, t0: float) -> bool:
    """Cache the warm-started model at ``path``, whole or not at all. A cache that is full or
    read-only is only a cache: warn and carry on uncached (False)."""
    tmp = None
    try:
        root.mkdir(parents=True, exist_ok=True)
        tmp = fsutil.make_tmp_dir(root, "warmstart")
        save_model(model, tok, tmp)
        (tmp / "meta.json").write_text(json.dumps(meta))
        try:
            tmp.rename(path)
        except OSError:
            if not (path / "meta.json").is_file():
                raise
            shutil.rmtree(tmp, ignore_errors=True)   # another process cached the same key first
        return True
    except Exception as e:   # OSError, or safetensors' SafetensorError on a full disk
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        warnings.warn(f"could not cache the warm start in {str(root)!r} ({fsutil.reason(e, root)}); carrying on "
                      f"without caching it, so the next run trains it again (~{time.perf_counter() - t0:.0f} s). "
                      f"Point GRPO_LAB_CACHE (or cache_dir) at a writable folder with space to keep it",
                      UserWarning, stacklevel=3)
        return False


__all__ = ["SFTConfig", "sft", "warm_start", "demonstrations", "cache_key", "default_cache_dir"]
