"""The GRPO loop on a tiny causal LM: the six steps of seed 000 §5, in order.

One call of :meth:`Trainer.step` is one pass of the recipe:

1. 采样 sample — G responses per prompt from the current policy (:func:`rollout.sample`),
   then the log-probs of the sampled tokens (:func:`rollout.token_logp`).
2. 打分 score — the verifier gives each response a scalar r_i (:func:`evaluation.score`).
3. 组内标准化 group normalisation — Â_i = (r_i − mean)/(std + ε), eq. (1)
   (:func:`grpo_lab.advantages.advantages_from_flat`).
4. per-token assembly — ρ_{i,t}, eq. (4), and the clipped term ℓ_{i,t}, eq. (3), with the
   *same* sequence-level Â_i on every token;
5. aggregation — eq. (6) seq-mean or eq. (7) token-mean (or Dr. GRPO's 1/C);
6. the KL term — β·k3, eq. (5) (form 1) — then the optimiser step; the batch is discarded.

Steps 3–6 and the μ optimiser steps are the one update loop :func:`grpo_lab.lm.microbatch.learn`
(the whole batch as one chunk, or gradient accumulation over chunks); steps 4–6 are one call of
:func:`grpo_lab.losses.grpo_loss`, the only place the loss is
computed in this project. KL-in-reward (form 2) folds the KL into r_i before step 3
(:func:`grpo_lab.losses.kl_shaped_rewards`).

Work the recipe does not need is not done: the prompt runs once per prompt, not G times
(see :mod:`grpo_lab.lm.rollout`); with μ inner iterations the first iteration's
``logp.detach()`` *is* ``old_logp`` (the policy has not moved yet), so π_θold never needs
its own forward pass; the reference forward is skipped when β = 0 and the KL metric is off.

Resumption: every step draws its randomness from generators seeded by (seed, step), and a
checkpoint holds the policy weights (safetensors), the AdamW state and the step; the
reference model is saved once. On CPU a resumed run therefore repeats the uninterrupted
run bit for bit (same threads, same library versions, same machine). On another machine the same
seed has almost certainly given another run (notebook 08, section 7, where this is inferred; which
of the possible differences is the cause — the CPU type and the amp mode, both unrecorded for the
first runs, the code version, the converted model folder — is not known). The run folder (lock,
checkpoints, fallback past a corrupt one, metrics files) is :mod:`grpo_lab.lm.checkpoint`; steps 1–2
are :mod:`grpo_lab.lm.sampling`; the metric columns :mod:`grpo_lab.lm.metrics`; the divergence guard,
checked before every optimiser step, :mod:`grpo_lab.lm.guard`. What happens when a run is killed,
diverges or finds a corrupt file: docs/reliability.md.
"""
from __future__ import annotations

import copy
import json
import sys
import time
import warnings
import weakref
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from grpo_lab.lm import checkpoint as ckpt
from grpo_lab.lm import lora, microbatch, mismatch, pretrained, runfolder
from grpo_lab.lm.chat_tasks import task_for
from grpo_lab.lm.config import GRPOConfig
from grpo_lab.lm.evaluation import evaluate
from grpo_lab.lm.guard import TrainingDiverged, budget_warning, sanity_warnings
from grpo_lab.lm.metrics import (CONDITIONAL_COLUMNS, METRICS, TIMING_COLUMNS, Timer, metric_definitions,
                                 metrics_markdown, sampling_metrics)
from grpo_lab.lm.model import make_model
from grpo_lab.lm.rollout import Bf16Sampler, Rollout, amp_mode, enable_checkpointing, token_logp
from grpo_lab.lm.sampling import sample_step, step_rngs
from grpo_lab.lm.tasks import AdditionTask
from grpo_lab.lm.tokenizer import char_tokenizer
from grpo_lab.lm.warmstart import SFTConfig, default_cache_dir, warm_start

__all__ = ["Trainer", "train", "resolve_device", "metric_definitions", "metrics_markdown", "METRICS",
           "TIMING_COLUMNS", "CONDITIONAL_COLUMNS", "TrainingDiverged"]


def adamw(params, *, lr: float, weight_decay: float) -> torch.optim.AdamW:
    """The GRPO optimiser: AdamW, fused where torch has the kernel for the parameters' device.

    Fused runs one fused kernel per group of tensors instead of a dozen small ops per tensor: on SmolLM2-135M
    (fp32, one CPU thread) 0.19 s against 1.26 s. transformers' Trainer, hence TRL, uses it by
    default on torch ≥ 2.8. The update rule is the same; values may differ from the op-by-op
    implementation in the last bits. Falls back to that one where fused is not available.
    """
    params = list(params)
    try:
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay, fused=True)
    except (RuntimeError, TypeError, ValueError):   # a device (or an old torch) without the fused kernel
        return torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)


def resolve_device(device: str) -> torch.device:
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cuda" and not torch.cuda.is_available():
        raise ValueError("device='cuda' but no CUDA device is available; use device='auto' or 'cpu'")
    return torch.device(device)


class Trainer:
    """Holds the policy, the reference model, the optimiser and the run folder.

    ``Trainer(config).run()`` trains and returns the metrics DataFrame; ``callback(trainer,
    row)`` is called after every step (the notebook's live plots use it).
    """

    def __init__(self, config: GRPOConfig, *, callback=None):
        if not isinstance(config, GRPOConfig):
            raise TypeError(f"config must be a GRPOConfig, got {type(config).__name__}")
        self.cfg = cfg = config.validate()
        self.callback = callback
        if cfg.threads is not None:
            torch.set_num_threads(cfg.threads)
        self.device = resolve_device(cfg.device)
        self.amp = amp_mode(cfg.bf16, cfg.cpu_bf16, self.device, pretrained=cfg.model is not None)
        self.out = Path(cfg.out) if cfg.out else None
        self.rows: list[dict] = []
        self.step_count = 0
        self.eval_before: dict | None = None
        self.eval_after: dict | None = None
        self.warmstart_info: dict = {}
        self.need_ref = cfg.beta > 0 or cfg.kl_metric
        # the last step's responses, one row each: group, prompt, response, reward, adv, length,
        # truncated (adv is NaN for groups dynamic sampling dropped); None before the first step
        self.last_samples: pd.DataFrame | None = None
        self.last_adv = np.zeros(0)

        self._last_ckpt_step: int | None = None
        for msg in sanity_warnings(cfg):
            warnings.warn(msg, UserWarning, stacklevel=2)
        # paths first, before any work (the warm start may take minutes)
        if self.out is not None:
            ckpt.check_folder(self.out, "out (the run folder)")
        if cfg.warmstart_steps and cfg.cache_dir is not False:   # read-only is fine: it may only be read
            ckpt.check_folder(Path(cfg.cache_dir) if cfg.cache_dir else default_cache_dir(),
                              "the warm-start cache folder (cache_dir, or $GRPO_LAB_CACHE)", writable=False)
        self._lock = None
        if self.out is not None:
            ckpt.make_folder(self.out, "out (the run folder)")
            runfolder.claim(self.out, resume=cfg.resume)    # a folder grpo_lab did not make is refused
            self._lock = ckpt.RunLock(self.out)
            self._lock.acquire()
            weakref.finalize(self, self._lock.release)
        try:
            self._open_run_folder()
        except BaseException:
            self.close()
            raise

    def _open_run_folder(self):
        """Build the models; resume from the newest intact checkpoint, restart, or start the run."""
        cfg, out = self.cfg, self.out
        resumed = has_run = False
        if out is not None:
            has_ckpt = bool(ckpt.checkpoint_dirs(out))
            has_run = has_ckpt or (out / "metrics.csv").exists()
            if has_run and not cfg.resume:
                raise ValueError(f"out folder {str(out)!r} already holds a run; pass resume=True "
                                 f"(--resume) to continue it, or choose another folder")
            resumed = cfg.resume and has_ckpt
            if has_run and not resumed:           # resume asked, but the run died before its first checkpoint
                self._check_resumable_config(out / "config.json")
                print(f"no checkpoint in {str(out)!r} yet (the run stopped before its first one): "
                      f"restarting it from the warm start, step 0", file=sys.stderr)
                ckpt.clear_run(out)
        self._build_models(resumed)
        self.opt = adamw(lora.trainable(self.policy), lr=cfg.lr, weight_decay=cfg.weight_decay)
        if resumed:
            self._load_checkpoint()
        elif out is not None:
            runfolder.write_text(out, "config.json", self.cfg.to_json())
            if self.ref is not None and not cfg.lora_rank:     # under LoRA π_ref is the base --model
                ckpt.save_ref(out, self.ref, self.tok)

    def close(self):
        """Release the run folder's lock (done at the end of :meth:`run`; a killed process leaves a stale one)."""
        if self._lock is not None:
            self._lock.release()

    # -- set-up ---------------------------------------------------------------------
    def _build_models(self, resumed: bool):
        cfg = self.cfg
        if cfg.model is not None:   # a short name (grpo_lab.lm.pretrained.REGISTRY), a local folder, a hub id
            self.policy, self.tok = pretrained.load(cfg.model, cache_dir=cfg.cache_dir, hub=cfg.hub)
            src = pretrained.resolve(cfg.model, cache_dir=cfg.cache_dir, hub=cfg.hub)
            init = f"path:{src.resolve() if isinstance(src, Path) else src}"
        else:
            self.tok = char_tokenizer()
            self.policy = make_model(self.tok, seed=cfg.seed, arch=cfg.arch, hidden=cfg.hidden,
                                     intermediate=cfg.intermediate, layers=cfg.layers, heads=cfg.heads,
                                     kv_heads=cfg.kv_heads, max_positions=max(64, 16 + cfg.max_new))
            init = f"random:seed={cfg.seed}"
        self.policy.to(self.device)
        self.task, self.eval_problems = task_for(cfg, self.tok)
        if (msg := budget_warning(cfg, self.tok, self.eval_problems)) is not None:
            warnings.warn(msg, UserWarning, stacklevel=4)
        if resumed:
            self.warmstart_info = {"cached": None, "resumed": True}
        elif not isinstance(self.task, AdditionTask):   # the SFT demonstrations are character-task ones
            self.warmstart_info = {"cached": None, "skipped": "chat task: no warm start"}
        else:
            sft_cfg = SFTConfig(steps=cfg.warmstart_steps, batch=cfg.warmstart_batch, lr=cfg.warmstart_lr,
                                target=cfg.warmstart_target, seed=cfg.seed)
            self.policy, self.warmstart_info = warm_start(self.policy, self.tok, self.task, sft_cfg, init=init,
                                                          device=self.device, cache_dir=cfg.cache_dir,
                                                          progress=cfg.progress)
        self.policy.to(self.device).train()
        self.ref = None
        if cfg.lora_rank:               # π_ref is the frozen base model (rebuilt from --model on resume)
            lora.check(cfg, self.policy)
            if self.need_ref:
                self.ref = copy.deepcopy(self.policy).to(self.device).eval().requires_grad_(False)
            self.policy = lora.wrap(self.policy, cfg).to(self.device).train()
        if cfg.gradient_checkpointing:
            enable_checkpointing(self.policy)
        self._sampler = Bf16Sampler(self.policy) if self.amp == "always" or cfg.sampler_bf16 else None
        if self.need_ref and self.ref is None:
            if resumed:   # never a copy of the (not warm-started) policy: that would be a random π_ref
                ref = self.out / "ref"
                if not ref.is_dir():
                    raise ckpt.CheckpointError(
                        f"cannot resume the run in {str(self.out)!r}: its reference model {str(ref)!r} is missing "
                        f"(needed because beta > 0 or kl_metric is on; without it the KL would be measured "
                        f"against a random model). Restore it, or start a new run")
                self.ref, _ = ckpt.read_model(ref, f"the reference model {str(ref)!r}")
            else:
                self.ref = copy.deepcopy(self.policy)
            self.ref.to(self.device).eval().requires_grad_(False)

    def lr_at(self, step: int) -> float:
        """Learning rate of step ``step`` (1-based): linear warm-up, then constant."""
        w = self.cfg.lr_warmup
        return self.cfg.lr * (min(1.0, step / w) if w else 1.0)

    # -- randomness: a pure function of (seed, step), so resuming needs no RNG state --------
    def _rngs(self, step: int):
        return step_rngs(self.cfg.seed, step, self.device)

    # -- one GRPO step: the six steps of seed 000 §5 --------------------------------------
    def step(self) -> dict:
        cfg, tok = self.cfg, self.tok
        P, G = cfg.prompts_per_step, cfg.G
        step = self.step_count + 1
        rng, gen = self._rngs(step)
        timer = Timer(self.device)
        lr = self.lr_at(step)
        for group in self.opt.param_groups:
            group["lr"] = lr
        t_start = time.perf_counter()

        # ---- Step 1 (采样): G responses per prompt from the current policy -------------------
        # ---- Step 2 (打分): the verifier scores every response ------------------------------
        # (with dynamic sampling, degenerate groups are dropped and more prompts are drawn)
        sampler = self.policy if self._sampler is None else self._sampler.sync(self.policy)
        drawn = sample_step(sampler, tok, self.task, cfg, rng, gen, timer, self.device, self.amp)
        batch, rewards, used = drawn.batch(P, G, tok.pad_token_id)
        row = sampling_metrics(drawn.rounds, G, self.task.levels, drawn.n_tokens)
        row["n_groups_used"] = used

        self.last_adv = np.zeros(0)
        if batch is None:   # dynamic sampling found no informative group: nothing to learn from
            row.update(kl=float("nan"), loss=0.0, pg_loss=0.0, clip_frac_low=0.0, clip_frac_high=0.0,
                       ratio_max=1.0, entropy=float("nan"), adv_abs_mean=0.0, grad_norm=0.0, **mismatch.empty())
        else:
            row.update(self.learn(batch, rewards, timer))
        self.last_samples = drawn.samples_frame(P, G, self.last_adv)
        # ---- the batch is discarded; the next step samples afresh -----------------------------
        seconds = time.perf_counter() - t_start
        row.update(lr=lr, seconds=seconds, tokens_per_s=drawn.n_tokens / seconds,
                   completions_per_s=sum(r.rollout.B for r in drawn.rounds) / seconds,
                   **{f"t_{k}": timer.t.get(k, 0.0) for k in ("sample", "score", "ref", "policy", "backward")})
        if not self.need_ref:
            row.pop("kl", None)
        self.step_count = step
        self.last_cpu_times = dict(timer.cpu)
        row = {"step": step, **row}
        self.rows.append(row)
        return row

    def learn(self, batch: Rollout, rewards, timer: Timer | None = None) -> dict:
        """Steps 3–6 on a scored batch: advantages, loss, μ optimiser steps. Returns metrics.

        ``rewards`` (B,) are the rewards r_i of ``batch``'s responses, group after group.
        Usable on a hand-made batch (the tests construct one).
        """
        cfg = self.cfg
        timer = timer or Timer(self.device)
        rewards_t = torch.as_tensor(np.asarray(rewards, dtype=np.float32), device=self.device)   # (B,)
        if rewards_t.ndim != 1 or rewards_t.shape[0] != batch.B:
            raise ValueError(f"rewards must have shape ({batch.B},), one per response; got {tuple(rewards_t.shape)}")
        if batch.G != cfg.G:
            raise ValueError(f"batch has groups of {batch.G} responses but config.G = {cfg.G}")
        chunks = microbatch.group_chunks(batch, cfg.tokens_per_microbatch)   # None = the whole batch at once
        return microbatch.learn(self, batch, rewards_t, chunks, timer)          # the one update loop

    # -- evaluation -----------------------------------------------------------------------
    def evaluate(self, *, temperature: float = 0.0, samples: int = 1) -> dict:
        """Held-out accuracy, overall and per level: greedy by default, else ``samples``
        responses per problem at ``temperature`` (the pass rate GRPO optimises)."""
        return evaluate(self.policy, self.tok, self.task, self.eval_problems, max_new=self.cfg.max_new,
                        temperature=temperature, G=samples, seed=self.cfg.seed, device=self.device,
                        amp=self.amp)

    def evaluate_both(self) -> dict:
        """{"greedy": …, "sampled": …}; sampled = 4 responses per problem at the training τ."""
        return {"greedy": self.evaluate(), "sampled": self.evaluate(temperature=self.cfg.temperature, samples=4)}

    # -- the whole run --------------------------------------------------------------------
    def run(self) -> pd.DataFrame:
        """Train to ``config.steps``; checkpoint every ``checkpoint_every`` steps, every
        ``checkpoint_seconds`` and at the end. Raises :class:`TrainingDiverged` (the metrics so
        far and the last checkpoint stay on disk) if the loss or the gradient stops being finite."""
        if self._lock is not None:
            self._lock.acquire()
        try:
            self._train_loop()
            if self.out is not None and self._last_ckpt_step != self.step_count:
                self.save_checkpoint()
            self.eval_after = self.evaluate_both()
            self._write_json("eval_after.json", self.eval_after)
        finally:
            self.close()
        return self.dataframe()

    def _train_loop(self):
        cfg = self.cfg
        if self.eval_before is None:
            self.eval_before = self.evaluate_both()
            self._write_json("eval_before.json", self.eval_before)
        from tqdm.auto import tqdm

        bar = tqdm(total=cfg.steps, initial=min(self.step_count, cfg.steps), desc=f"GRPO ({cfg.preset})",
                   disable=not cfg.progress, leave=True)
        last_save = time.monotonic()
        try:
            while self.step_count < cfg.steps:
                row = self.step()
                self._append_metrics(row)
                due = (cfg.checkpoint_every and self.step_count % cfg.checkpoint_every == 0) or \
                    (cfg.checkpoint_seconds and time.monotonic() - last_save >= cfg.checkpoint_seconds)
                if due and self.out is not None:
                    self.save_checkpoint()
                    last_save = time.monotonic()
                bar.update(1)
                bar.set_postfix(reward=f"{row['reward_mean']:.2f}", acc=f"{row['acc']:.2f}",
                                kl=f"{row.get('kl', 0.0):.3f}", refresh=False)
                if self.callback is not None:
                    self.callback(self, row)
        finally:
            bar.close()

    def dataframe(self) -> pd.DataFrame:
        df = pd.DataFrame(self.rows)
        df.attrs.update(eval_before=self.eval_before, eval_after=self.eval_after, preset=self.cfg.preset,
                        warmstart=self.warmstart_info, definitions=metric_definitions(self.task.levels))
        return df

    # -- files ----------------------------------------------------------------------------
    def _write_json(self, name, obj):
        if self.out is not None:
            runfolder.write_text(self.out, name, json.dumps(obj, indent=1))

    def _append_metrics(self, row: dict):
        if self.out is not None:
            ckpt.append_metrics(self.out, row)

    def save_checkpoint(self, keep: int = 2) -> Path:
        """Policy (safetensors), optimiser state and step under ``out/checkpoints/step_NNNNNN``."""
        if self.out is None:
            raise ValueError("save_checkpoint needs config.out (a run folder)")
        state = {"step": self.step_count, "config": self.cfg.to_dict(), "eval_before": self.eval_before}
        path = ckpt.write_checkpoint(self.out, self.step_count, self.policy, self.tok, self.opt, state, keep=keep)
        self._last_ckpt_step = self.step_count
        return path

    def _check_resumable_config(self, saved):
        """Raise, listing every differing field, unless ``saved`` (a config dict or a config.json path) matches."""
        if isinstance(saved, Path):
            try:
                saved = json.loads(saved.read_text())
            except (OSError, ValueError):
                return                            # nothing readable to compare against
        diffs = ckpt.config_differences(GRPOConfig.from_dict(saved), self.cfg)
        if diffs:
            raise ValueError(f"cannot resume the run in {str(self.out)!r}: {len(diffs)} setting(s) differ from "
                             f"the run's: " + "; ".join(diffs) + ". Resume with the run's settings, or start "
                             f"a new run in another folder")

    def _load_checkpoint(self):
        """Load the newest intact checkpoint (a corrupt newer one is skipped with a warning)."""
        path, state, policy_sd, opt_sd = ckpt.load_newest_intact(self.out, self.device)
        self._check_resumable_config(state["config"])
        lora.load_state(self.policy, policy_sd)
        self.opt.load_state_dict(opt_sd)
        self.step_count = self._last_ckpt_step = int(state["step"])
        self.eval_before = state.get("eval_before")
        ckpt.remove_stale_tmp(self.out)
        # metrics written after this checkpoint belong to the interrupted future: drop them
        self.rows = ckpt.truncate_metrics(self.out, self.step_count)
        if self.cfg.steps < self.step_count:
            raise ValueError(f"the run in {str(self.out)!r} has already done {self.step_count} steps; steps "
                             f"(--steps) = {self.cfg.steps} is below that, so there is nothing to do. Pass "
                             f"--steps {self.step_count + 1} or more to continue it")
        if self.cfg.steps == self.step_count:
            print(f"the run in {str(self.out)!r} has already done its {self.step_count} steps: nothing to train "
                  f"(pass a larger --steps to continue it)", file=sys.stderr)


def train(config: GRPOConfig, *, callback=None) -> pd.DataFrame:
    """Run GRPO with ``config``; one DataFrame row per step (columns: :data:`METRICS`).

    ``df.attrs`` holds the held-out accuracy before and after (``eval_before`` /
    ``eval_after``, greedy and sampled), the warm-start info and the metric definitions.
    """
    return Trainer(config, callback=callback).run()
