"""Guards of the LM loop: the divergence check before every optimiser step, and warnings for
settings far outside the ranges GRPO is run with.

:class:`TrainingDiverged` is raised when the loss, the gradient, the policy's
log-probabilities or its weights stop being finite. The check runs *before* the update is
applied (and before any checkpoint is written), so the last checkpoint on disk is intact.
"""
from __future__ import annotations

import math

import torch

from grpo_lab.lm.flags import flag_name


class TrainingDiverged(RuntimeError):
    """Training produced a non-finite loss, gradient or weight at ``step``."""

    def __init__(self, step: int, what: str, cfg, last_checkpoint: int | None = None):
        self.step = step
        ck = (f"the last checkpoint (step {last_checkpoint}) is intact" if last_checkpoint
              else "no checkpoint had been written yet")
        super().__init__(
            f"training diverged at step {step}: {what}. No checkpoint is written from a diverged policy; {ck}. "
            f"Lower the learning rate lr (now {cfg.lr:g}; try {cfg.lr / 10:g}) or the inner iterations "
            f"mu (now {cfg.mu}), or clip harder with max_grad_norm (now {cfg.max_grad_norm:g}), "
            f"then start a new run (a resumed run keeps its settings).")


def all_finite(tensors) -> bool:
    """True when every tensor of ``tensors`` holds only finite values (one device sync in all)."""
    flags = [torch.isfinite(t).all() for t in tensors]
    return bool(torch.stack(flags).all()) if flags else True


def sums_finite(tensors) -> bool:
    """True when every tensor's sum is finite: the cheap check of a whole model's weights.

    A sum is NaN or ±inf when any value is, so this catches every non-finite weight; it also
    fails when finite weights add up past float32's 3.4e38, which only a diverged model does.
    One read of each tensor and no boolean copy: on SmolLM2-135M (fp32, one thread) 0.11 s
    against 0.71 s for an element-wise ``isfinite`` (:func:`all_finite`).
    """
    sums = [t.sum() for t in tensors]
    return bool(torch.isfinite(torch.stack(sums)).all()) if sums else True


def check_finite(step: int, cfg, last_checkpoint, what: str, value) -> None:
    """Raise :class:`TrainingDiverged` unless ``value`` (a tensor or a float) is finite everywhere."""
    ok = all_finite([value]) if isinstance(value, torch.Tensor) else math.isfinite(float(value))
    if not ok:
        raise TrainingDiverged(step, what, cfg, last_checkpoint)


def guarded_step(opt, gn, step: int, cfg, last_checkpoint, it: int) -> None:
    """``opt.step()`` unless the gradient norm ``gn`` is non-finite (the update is skipped, then
    :class:`TrainingDiverged`); raises too if the step made the weights it updated non-finite
    (the optimiser's parameters: under LoRA the adapters only, the frozen base cannot change)."""
    if not torch.isfinite(gn):
        opt.zero_grad(set_to_none=True)
        check_finite(step, cfg, last_checkpoint, f"the gradient norm is {float(gn)} "
                     f"(inner iteration {it + 1}; the update was skipped)", gn)
    opt.step()
    if not sums_finite(p.detach() for group in opt.param_groups for p in group["params"]):
        check_finite(step, cfg, last_checkpoint, "the weights became non-finite in the update "
                     f"(inner iteration {it + 1})", float("nan"))


# field -> (low, high, why): values outside get a warning, not an error (an experiment may want them)
SANE_RANGES = {
    "lr": (1e-8, 1e-2, "GRPO on language models uses 1e-6 to 1e-3; the presets use 1e-4"),
    "warmstart_lr": (1e-6, 1e-1, "the warm start uses 3e-3"),
    "beta": (0.0, 1.0, "β above 1 lets the KL term outweigh the reward; GRPO uses 0 to 0.1"),
    "temperature": (0.1, 3.0, "sampling is near-greedy below 0.1 and near-uniform noise above 3"),
    "eps_low": (0.0, 0.5, "clip ranges are 0.1 to 0.3 (GSPO: about 3e-4)"),
    "eps_high": (0.0, 1.0, "DAPO's clip-higher uses 0.28"),
    "max_grad_norm": (1e-3, 100.0, "the presets clip at 1"),
    "mu": (1, 16, "more than a few inner iterations push ρ far from 1, where clipping stops the gradient"),
    "adv_eps": (0.0, 1.0, "ε only guards the division by the group std (TRL 1e-4)"),
}


def budget_warning(cfg, tok, problems) -> str | None:
    """A message when ``cfg.max_new`` cannot hold the longest correct answer to ``problems`` (its
    tokens and the end-of-response token): those responses are cut off and score 0, silently."""
    from grpo_lab.lm.evaluation import encode_answers

    if not problems:
        return None
    lengths = [len(a) for a in encode_answers(tok, problems)]
    need, fits = max(lengths), sum(n <= cfg.max_new for n in lengths)
    if cfg.max_new >= need:
        return None
    share = "no held-out answer fits, so every reward will be 0" if fits == 0 else \
        f"only {fits} of {len(lengths)} held-out answers fit; the others are cut off and score 0"
    return (f"max_new (--max-new) = {cfg.max_new} is too small for an answer: the longest correct answer takes "
            f"{need} tokens (the answer and the end-of-response token); {share}. Use --max-new {need} or more")


def sanity_warnings(cfg) -> list[str]:
    """One message per field of ``cfg`` far outside :data:`SANE_RANGES` (empty for the presets)."""
    out = []
    for name, (lo, hi, why) in SANE_RANGES.items():
        v = getattr(cfg, name, None)
        if v is None or lo <= v <= hi:
            continue
        flag = flag_name(name)
        out.append(f"{name} ({flag}) = {v:g} is far outside the usual range [{lo:g}, {hi:g}] ({why}); "
                   f"expect the run to collapse or diverge")
    return out
