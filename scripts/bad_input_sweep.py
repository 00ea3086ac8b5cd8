"""Bad-input sweep: ≥150 bad calls to grpo_lab's public API and CLI, and what each one did.

    python scripts/bad_input_sweep.py            # the table of outcomes, then one line per call
    python scripts/bad_input_sweep.py --quiet    # the table only

Every call is given input that is wrong (a string where a number belongs, a bool, None, NaN,
a masked array, a negative size, a file where a folder belongs, a corrupt checkpoint …) or
extreme-but-valid (a log-ratio of 89 in fp32, θ = −1e300), and is classified as

=================  ==============================================================
``clear_error``    ValueError/TypeError (or a CLI exit ≠ 0, or grpo_lab's one-line
                   ``StorageError`` for a full or read-only disk) whose message names
                   the argument, flag or file it is about
``warned``         accepted with a warning that names it (only for settings that are legal
                   but far outside sane ranges)
``correct``        an extreme-but-valid input that gave the right, finite answer
``unclear_error``  ValueError/TypeError whose message does not name the argument
``raw_traceback``  any other exception escaping from inside (KeyError, SafetensorError, …)
``silent``         returned a result (or NaN) for bad input, or a wrong/non-finite answer
                   for an extreme one
=================  ==============================================================

The run-folder, disk-full, cache and budget cases of issue 25 inject their faults
(``OSError(ENOSPC)``, or the errors safetensors and torch raise on a full disk) by patching
names that existed before that issue too. It only imports names that already existed before
issue 16, so the same script runs on an older checkout (``PYTHONPATH=<checkout> python scripts/bad_input_sweep.py``) to give the
before/after figures of docs/reliability.md. Offline: ``HF_HUB_OFFLINE=1`` is set.
"""
from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import sys
import tempfile
import warnings
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)

from grpo_lab import advantages as A  # noqa: E402
from grpo_lab import bandit as Bd  # noqa: E402
from grpo_lab import losses as L  # noqa: E402

CASES: list[tuple[str, str, str, object]] = []     # (id, kind "bad"/"extreme", token, fn or (fn, check))


def bad(case_id: str, token: str, fn):
    CASES.append((case_id, "bad", token, fn))


def extreme(case_id: str, fn, check):
    CASES.append((case_id, "extreme", "", (fn, check)))


def _finite(x) -> bool:
    if isinstance(x, torch.Tensor):
        return bool(torch.isfinite(x).all())
    if isinstance(x, (tuple, list)):
        return all(_finite(v) for v in x)
    try:
        return bool(np.all(np.isfinite(np.asarray(x, dtype=float))))
    except (TypeError, ValueError):
        return True


# -- advantages -------------------------------------------------------------------------------------
BAD_REWARDS = {
    "None": None, "str": "1,0,0,0", "str_list": ["1", "0", "0", "0"], "bytes_list": [b"1", b"0"],
    "masked": np.ma.masked_array([1.0, 0.0, 0.0, 9.0], mask=[0, 0, 0, 1]), "dict": {"a": 1},
    "ragged": [[1.0, 0.0], [1.0]], "empty": [], "3d": np.zeros((2, 2, 2)), "nan": [1.0, float("nan")],
    "inf": [1.0, float("inf")], "object": np.array([1.0, None], dtype=object), "scalar": 1.0,
}
for name, r in BAD_REWARDS.items():
    bad(f"group_advantages(rewards={name})", "rewards", lambda r=r: A.group_advantages(r))
    bad(f"rloo_advantages(rewards={name})", "rewards", lambda r=r: A.rloo_advantages(r))
    bad(f"group_std(rewards={name})", "rewards", lambda r=r: A.group_std(r))
for name, r in [(k, BAD_REWARDS[k]) for k in ("None", "str_list", "masked", "nan", "3d", "empty")]:
    bad(f"advantages_from_flat(rewards={name})", "rewards", lambda r=r: A.advantages_from_flat(r, 2))
    bad(f"degenerate_stats(rewards={name})", "rewards", lambda r=r: A.degenerate_stats(r))
for v in ("1e-4", True, None, -1.0, float("nan")):
    bad(f"group_advantages(eps={v!r})", "eps", lambda v=v: A.group_advantages([1.0, 0.0], eps=v))
for v in ("groups", None, 3):
    bad(f"group_advantages(scale={v!r})", "scale", lambda v=v: A.group_advantages([1.0, 0.0], scale=v))
    bad(f"group_advantages(std={v!r})", "std", lambda v=v: A.group_advantages([1.0, 0.0], std=v))
for v in (0, -1, 2.5, "4", True):
    bad(f"advantages_from_flat(group_size={v!r})", "group_size", lambda v=v: A.advantages_from_flat([1.0, 0.0, 1.0, 0.0], v))
bad("advantages_from_flat(len 5, group_size=2)", "group_size", lambda: A.advantages_from_flat([1.0] * 5, 2))
bad("advantages_from_flat(fp16 overflow, rloo)", "float16", lambda: A.advantages_from_flat(
    torch.tensor([65000.0, -65000.0, -65000.0, -65000.0], dtype=torch.float16), 4, estimator="rloo"))
bad("advantages_from_flat(estimator='ppo')", "estimator", lambda: A.advantages_from_flat([1.0, 0.0], 2, estimator="ppo"))
for v in ("0.5", True, None, 1.5, -0.1):
    bad(f"p_degenerate(p={v!r})", "p", lambda v=v: A.p_degenerate(v, 4))
for v in (0, "4", True, 2.5):
    bad(f"p_degenerate(G={v!r})", "G", lambda v=v: A.p_degenerate(0.5, v))
bad("expected_informative(n_prompts=-1)", "n_prompts", lambda: A.expected_informative(0.5, 4, -1))
bad("degenerate_stats(correct == wrong)", "correct", lambda: A.degenerate_stats([[1.0, 0.0]], correct=0.0, wrong=0.0))

# -- bandit -------------------------------------------------------------------------------------------
for v in ("0.5", b"0.5", True, None, float("nan"), float("inf"), [0.5]):
    bad(f"prob_a(theta={v!r})", "theta", lambda v=v: Bd.prob_a(v))
for v in ("C", None, 1, "a"):
    bad(f"grad_log_prob(action={v!r})", "action", lambda v=v: Bd.grad_log_prob(0.0, v))
for v in ("0.5", True, None, float("nan")):
    bad(f"grad_estimate(baseline={v!r})", "baseline", lambda v=v: Bd.grad_estimate(0.0, "A", 1.0, baseline=v))
    bad(f"grad_estimate(reward={v!r})", "reward", lambda v=v: Bd.grad_estimate(0.0, "A", v))
for v in (1, 0, "4", 2.5, True):
    bad(f"group_baseline_stats(G={v!r})", "G", lambda v=v: Bd.group_baseline_stats(0.0, v))
for v in (0, -3, "10"):
    bad(f"sample_estimates(n={v!r})", "n", lambda v=v: Bd.sample_estimates(0.0, v))
for v in (None, "1,2", [[1.0, 2.0]], [float("nan")]):
    bad(f"running_mean(x={v!r})", "x", lambda v=v: Bd.running_mean(v))
bad("train(rung='best')", "rung", lambda: Bd.train("best"))
for kw in ({"ema": 2.0}, {"value_lr": -1.0}, {"constant": "0.5"}, {"lr": "0.5"}, {"lr": 0.0}, {"steps": 0},
           {"G": 0}, {"seeds": 0}, {"seed": -1}, {"theta0": True}):
    k = next(iter(kw))
    bad(f"bandit.train(TrainConfig({k}={kw[k]!r}))", k, lambda kw=kw: Bd.train("constant", Bd.TrainConfig(**kw)))
extreme("prob_a(theta=-1e300) = 0 with no warning", lambda: Bd.prob_a(-1e300), lambda v: v == 0.0)
extreme("prob_a(theta=1e300) = 1", lambda: Bd.prob_a(1e300), lambda v: v == 1.0)

# -- losses ---------------------------------------------------------------------------------------------
Z, ONE = torch.zeros(2, 3), torch.ones(2, 3)
ADV = torch.tensor([1.0, -1.0])
for k, vals in {"eps_low": ("0.2", True, None, -0.1, 1.5, float("nan")), "eps_high": ("0.28", True, -1.0),
                "dual_clip": ("3", True, 0.5, 1.0), "beta": ("0.04", True, -1.0, float("inf")),
                "mode": ("mean", None), "kl_kind": ("k4", None), "level": ("seq", None),
                "max_len": (0, "8", 2.5)}.items():
    for v in vals:
        kw = {k: v}
        if k == "max_len":
            kw["mode"] = "seq-mean-token-sum-norm"
        bad(f"grpo_loss({k}={v!r})", k, lambda kw=kw: L.grpo_loss(Z, Z, ADV, ONE, ref_logp=Z, **kw))
for name, m in {"mask_float": ONE * 0.5, "mask_shape": torch.ones(2, 2), "mask_none": None, "mask_str": "all"}.items():
    bad(f"grpo_loss({name})", "mask", lambda m=m: L.grpo_loss(Z, Z, ADV, m))
for name, a in {"adv_shape": torch.ones(3), "adv_2d": torch.ones(2, 3), "adv_nan": torch.tensor([1.0, float("nan")]),
                "adv_none": None, "adv_str": "1,1"}.items():
    bad(f"grpo_loss({name})", "adv", lambda a=a: L.grpo_loss(Z, Z, a, ONE))
for name, lp in {"logp_nan": torch.tensor([[float("nan"), 0, 0], [0, 0, 0]]), "logp_1d": torch.zeros(3),
                 "logp_none": None, "logp_str": "x"}.items():
    bad(f"grpo_loss({name})", "logp", lambda lp=lp: L.grpo_loss(lp, Z, ADV, ONE))
bad("grpo_loss(beta>0 without ref_logp)", "ref_logp", lambda: L.grpo_loss(Z, Z, ADV, ONE, beta=0.1))
bad("grpo_loss(old_logp shape)", "old_logp", lambda: L.grpo_loss(Z, torch.zeros(2, 2), ADV, ONE))
bad("grpo_loss(dr_grpo without max_len)", "max_len", lambda: L.grpo_loss(Z, Z, ADV, ONE, mode="dr_grpo"))
bad("kl_penalty(logp NaN, no mask)", "logp", lambda: L.kl_penalty(torch.tensor([[float("nan")]]), torch.zeros(1, 1)))
bad("kl_penalty(ref_logp inf, no mask)", "ref_logp", lambda: L.kl_penalty(torch.zeros(1, 1), torch.tensor([[float("inf")]])))
bad("kl_penalty(kind='k9')", "kind", lambda: L.kl_penalty(Z, Z, "k9"))
bad("aggregate(mode='sum')", "mode", lambda: L.aggregate(Z, ONE, "sum"))
bad("aggregate(values NaN)", "values", lambda: L.aggregate(torch.full((2, 3), float("nan")), ONE))
for v in ([0.0, 1.0], [-1.0], None, "1", [float("nan")]):
    bad(f"surrogate_curve(ratio={v!r})", "ratio", lambda v=v: L.surrogate_curve(v, 1.0))
for v in ("1", None, True, float("nan")):
    bad(f"zero_grad_intervals(adv={v!r})", "adv", lambda v=v: L.zero_grad_intervals(v))
bad("kl_shaped_rewards(rewards shape)", "rewards", lambda: L.kl_shaped_rewards(torch.ones(3), Z, Z, ONE, beta=0.1))
bad("kl_shaped_rewards(beta='0.1')", "beta", lambda: L.kl_shaped_rewards(torch.ones(2), Z, Z, ONE, beta="0.1"))


def _grad(z, a, **kw):
    lp = torch.full((2, 3), z, requires_grad=True)
    out = L.grpo_loss(lp, torch.zeros(2, 3), torch.full((2,), a), torch.ones(2, 3), **kw)
    out.loss.backward()
    return float(out.loss), lp.grad


for z, a, kw, want in [(89.0, 1.0, {}, -1.2), (89.0, 1.0, {"dual_clip": 3.0}, -1.2), (89.0, -1.0, {"dual_clip": 3.0}, 3.0),
                       (89.0, 0.0, {}, 0.0), (89.0, 1.0, {"level": "sequence"}, -1.2), (-100.0, -1.0, {}, 0.8)]:
    extreme(f"grpo_loss(log-ratio {z}, adv {a}, {kw}) finite loss and gradient",
            lambda z=z, a=a, kw=kw: _grad(z, a, **kw),
            lambda v, want=want: abs(v[0] - want) < 1e-5 and bool(torch.isfinite(v[1]).all()))
for d in (-100.0, -50.0):
    extreme(f"kl_penalty(k3, log-ratio {d}, fp32) finite", lambda d=d: L.kl_penalty(torch.full((1, 1), d), torch.zeros(1, 1)),
            lambda v: _finite(v))


def _detached():
    x = torch.zeros(2, 3, requires_grad=True)
    L.grpo_loss(x, x, torch.tensor([1.0, -1.0]), torch.ones(2, 3)).loss.backward()
    return x.grad


extreme("grpo_loss(logp is old_logp) gradient comes from logp alone", _detached,
        lambda g: bool((g.abs() > 0).all()))

# -- GRPOConfig -----------------------------------------------------------------------------------------
from grpo_lab.lm.config import GRPOConfig  # noqa: E402

for k, vals in {"lr": ("1e-4", True, -1.0, float("nan")), "beta": ("0.04", -0.1), "G": (1, 2.5, "8", True),
                "prompts_per_step": (0, "4"), "temperature": (0.0, "1"), "eps_low": ("0.2", 2.0),
                "steps": (-1, 1.5), "max_new": (0,), "agg": ("mean",), "kl_kind": ("k4",), "levels": ((9,), ()),
                "mu": (0,), "max_grad_norm": (0.0,), "adv_scale": ("std",), "device": ("tpu",), "seed": (-1,)}.items():
    for v in vals:
        bad(f"GRPOConfig.preset('grpo', {k}={v!r})", k, lambda k=k, v=v: GRPOConfig.preset("grpo", **{k: v}))
bad("GRPOConfig.preset('ppo')", "preset", lambda: GRPOConfig.preset("ppo"))
bad("GRPOConfig.preset(gamma=0.9)", "gamma", lambda: GRPOConfig.preset("grpo", gamma=0.9))

# -- the CLI (in-process; argparse errors exit 2) -----------------------------------------------------------
from grpo_lab.lm import cli  # noqa: E402

BASE = ["--preset", "grpo", "--steps", "2", "--out", "SCRATCH/cli_out", "--no-progress"]
for flags, token in [(["--prompts", "0"], "prompts"), (["--levels", "a,b"], "levels"), (["--levels", "1,9"], "levels"),
                     (["--G", "1"], "G"), (["--G", "x"], "--G"), (["--lr", "-1"], "lr"), (["--beta", "-0.5"], "beta"),
                     (["--mu", "0"], "mu"), (["--max-new", "0"], "max"), (["--device", "tpu"], "--device"),
                     (["--seed", "-1"], "seed"), (["--warmstart-target", "2"], "warmstart"),
                     (["--threads", "0"], "threads"), (["--checkpoint-every", "-1"], "checkpoint")]:
    bad(f"cli {' '.join(flags)}", token, lambda flags=flags: cli.main(BASE + flags))
bad("cli --preset ppo", "preset", lambda: cli.main(["--preset", "ppo", "--steps", "2", "--out", "x"]))
bad("cli --steps x", "--steps", lambda: cli.main(["--preset", "grpo", "--steps", "x", "--out", "x"]))

# -- the trainer and its run folder (tiny sizes) -------------------------------------------------------------
TINY = dict(hidden=32, intermediate=64, layers=1, heads=2, levels=(1,), G=2, prompts_per_step=2, max_new=4,
            warmstart_steps=5, eval_per_level=4, progress=False, threads=1)


def _trainer(**kw):
    from grpo_lab.lm.trainer import Trainer

    return Trainer(GRPOConfig.preset("grpo", cache_dir=str(SCRATCH / "cache"), **{**TINY, **kw}))


def _run(**kw):
    from grpo_lab.lm.trainer import train

    return train(GRPOConfig.preset("grpo", cache_dir=str(SCRATCH / "cache"), **{**TINY, **kw}))


def _resume_after(damage, name, steps=2):
    """A 2-step run, damaged by ``damage(out)``, then resumed to ``steps`` + 1."""
    out = SCRATCH / f"resume_{name}"
    shutil.rmtree(out, ignore_errors=True)
    _run(steps=2, out=str(out))
    damage(out)
    return _run(steps=steps + 1, out=str(out), resume=True)


def _truncate(p: Path):
    p.write_bytes(p.read_bytes()[: max(1, p.stat().st_size // 3)])


def _ck(out):
    return out / "checkpoints" / "step_000002"


def _trainer_cases():
    bad("Trainer(out=<a file>)", "out", lambda: _trainer(out=str(SCRATCH / "afile")))
    bad("Trainer(out=<a file>/sub)", "out", lambda: _trainer(out=str(SCRATCH / "afile" / "sub")))
    bad("Trainer(cache_dir=<a file>/c)", "cache", lambda: _trainer(out=str(SCRATCH / "t_cache"),
                                                                  cache_dir=str(SCRATCH / "afile" / "c")))
    bad("Trainer(model='runs/mymodel')", "runs/mymodel", lambda: _trainer(model="runs/mymodel"))
    bad("Trainer(model=<a file>)", "model", lambda: _trainer(model=str(SCRATCH / "afile")))
    bad("Trainer(config=dict)", "config", lambda: __import__("grpo_lab.lm.trainer", fromlist=["Trainer"]).Trainer({}))
    bad("resume: ref/ deleted", "ref", lambda: _resume_after(lambda o: shutil.rmtree(o / "ref"), "ref"))
    bad("resume: model.safetensors truncated", "model.safetensors",
        lambda: _resume_after(lambda o: _truncate(_ck(o) / "model.safetensors"), "st"))
    bad("resume: optimizer.pt truncated", "optimizer.pt",
        lambda: _resume_after(lambda o: _truncate(_ck(o) / "optimizer.pt"), "opt"))
    bad("resume: optimizer.pt deleted", "optimizer.pt",
        lambda: _resume_after(lambda o: (_ck(o) / "optimizer.pt").unlink(), "opt_rm"))
    bad("resume: state.json empty", "state.json", lambda: _resume_after(lambda o: (_ck(o) / "state.json").write_text(""), "state"))
    bad("resume: --steps below the steps done", "steps", lambda: _resume_after(lambda o: None, "steps", steps=0))
    bad("resume: beta and lr changed (both must be reported)", "beta&lr", _resume_changed)
    bad("diverging run (lr=1e30, mu=2)", "diverged", lambda: _run(
        steps=4, out=str(SCRATCH / "div"), lr=1e30, mu=2, lr_warmup=0, checkpoint_every=1, partial_credit=True,
        G=4, prompts_per_step=4)["loss"].to_numpy())
    for k, v in (("lr", 1000.0), ("beta", 50.0), ("temperature", 20.0), ("mu", 100)):
        bad(f"Trainer({k}={v}) (legal, far outside sane ranges)", k, lambda k=k, v=v: _trainer(**{k: v}))


# -- issue 25: folders that are not runs, full disks, full caches, budgets too small ------------------------
FULL_ST = "Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: \"No space left on device\" })"


def _no_space(*_a, **_k):
    import errno

    raise OSError(errno.ENOSPC, "No space left on device")


@contextlib.contextmanager
def _patched(obj, name, value):
    old = getattr(obj, name, None)
    setattr(obj, name, value)
    try:
        yield
    finally:
        if old is None:
            delattr(obj, name)
        else:
            setattr(obj, name, old)


def _own_folder(name, files):
    f = SCRATCH / name
    shutil.rmtree(f, ignore_errors=True)
    for rel, text in files.items():
        (f / rel).parent.mkdir(parents=True, exist_ok=True)
        (f / rel).write_text(text)
    return f


def _cli_tiny(*flags):
    return cli.main(["--hidden", "32", "--intermediate", "64", "--layers", "1", "--heads", "2", "--levels", "1",
                     "--G", "2", "--prompts", "2", "--max-new", "4", "--warmstart-steps", "5", "--eval-per-level", "4",
                     "--no-progress", "--threads", "1", "--device", "cpu", *flags])


def _full_ref():
    from grpo_lab.lm import checkpoint as ckpt
    from grpo_lab.lm import trainer as tr

    def full(model, tok, path):
        raise RuntimeError(FULL_ST)

    shutil.rmtree(SCRATCH / "full_ref", ignore_errors=True)
    with _patched(ckpt, "save_model", full), _patched(tr, "save_model", full):
        return _cli_tiny("--steps", "1", "--out", str(SCRATCH / "full_ref"))


def _full_checkpoint():
    real = torch.save

    def save(obj, f, *a, **k):
        if Path(str(f)).name == "optimizer.pt":
            raise RuntimeError("[enforce fail at inline_container.cc:626] . unexpected pos 2304 vs 2198")
        return real(obj, f, *a, **k)

    shutil.rmtree(SCRATCH / "full_ck", ignore_errors=True)
    with _patched(torch, "save", save):
        return _cli_tiny("--steps", "2", "--out", str(SCRATCH / "full_ck"))


def _full_metrics():
    from grpo_lab.lm import checkpoint as ckpt

    def fake_open(path, mode="r", *a, **k):
        if str(path).endswith("metrics.jsonl") and "a" in mode:
            _no_space()
        return open(path, mode, *a, **k)

    shutil.rmtree(SCRATCH / "full_metrics", ignore_errors=True)
    with _patched(ckpt, "open", fake_open):
        return _run(steps=2, out=str(SCRATCH / "full_metrics"))


def _full_lock_on_resume():
    out = SCRATCH / "full_lock"
    shutil.rmtree(out, ignore_errors=True)
    _cli_tiny("--steps", "1", "--out", str(out))
    real = os.open

    def full_open(path, flags, *a, **k):
        if str(path).endswith(".lock") and flags & os.O_CREAT:
            _no_space()
        return real(path, flags, *a, **k)

    with _patched(os, "open", full_open):
        return _cli_tiny("--steps", "2", "--out", str(out), "--resume")


def _full_warmstart_cache():
    from grpo_lab.lm import warmstart

    def full(model, tok, path):
        raise RuntimeError(FULL_ST)

    from grpo_lab.lm.trainer import Trainer

    with _patched(warmstart, "save_model", full):
        return Trainer(GRPOConfig.preset("grpo", **{**TINY, "cache_dir": str(SCRATCH / "full_cache")}))


def _issue25_cases():
    mine = {"ref/notes.txt": "my notes", "metrics.csv": "step,score\n1,0.5\n", "eval_before.json": "{}"}
    bad("cli --resume on a folder of one's own (ref/notes.txt, metrics.csv)", "not a grpo_lab run",
        lambda: _cli_tiny("--steps", "2", "--resume", "--out", str(_own_folder("own_resume", mine))))
    bad("Trainer(out=<a folder holding one's own config.json>)", "config.json",
        lambda: _trainer(out=str(_own_folder("own_config", {"config.json": '{"mine": 1}'}))))
    bad("cli: disk full writing ref/ (SafetensorError)", "ref", _full_ref)
    bad("cli: disk full writing a checkpoint (torch 'enforce fail')", "checkpoint", _full_checkpoint)
    bad("train: disk full appending metrics", "metrics.jsonl", _full_metrics)
    bad("cli --resume with the disk still full (run lock)", ".lock", _full_lock_on_resume)
    bad("Trainer: warm-start cache full (carry on uncached)", "could not cache", _full_warmstart_cache)
    bad("Trainer(max_new=1) (too small for any answer)", "max-new", lambda: _trainer(max_new=1))
    bad("cli --prompts 1 (fewer prompts than levels)", "per level",
        lambda: cli.main(["--steps", "1", "--out", str(SCRATCH / "p1"), "--prompts", "1"]))


def _resume_changed():
    out = SCRATCH / "resume_changed"
    shutil.rmtree(out, ignore_errors=True)
    _run(steps=1, out=str(out))
    return _run(steps=2, out=str(out), resume=True, beta=0.1, lr=3e-4)


# -- running and classifying ------------------------------------------------------------------------------------
def _names(token: str, msg: str) -> bool:
    """Does ``msg`` name ``token`` (every part of an ``a&b`` token)?"""
    return all(t.lower() in msg.lower() for t in token.split("&"))


def classify(kind, token, fn):
    err, warned = io.StringIO(), []
    with warnings.catch_warnings(record=True) as w, contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        warnings.simplefilter("always")
        try:
            result = fn() if kind == "bad" else fn[0]()
        except SystemExit as e:
            msg = err.getvalue().strip().splitlines()[-1:] or [""]
            if e.code in (0, None):
                return "silent", "exit 0"
            return ("clear_error" if _names(token, msg[0]) else "unclear_error"), msg[0][:160]
        except (ValueError, TypeError) as e:
            return ("clear_error" if _names(token, str(e)) else "unclear_error"), f"{type(e).__name__}: {e}"[:160]
        except OSError as e:
            if type(e).__name__ != "StorageError":     # a raw OSError from deep inside
                return "raw_traceback", f"{type(e).__name__}: {e}"[:160]
            return ("clear_error" if _names(token, str(e)) else "unclear_error"), f"{type(e).__name__}: {e}"[:160]
        except Exception as e:   # noqa: BLE001 - that is what is being counted
            if "diverged" in str(e) and token == "diverged":
                return "clear_error", f"{type(e).__name__}: {e}"[:160]
            return "raw_traceback", f"{type(e).__name__}: {e}"[:160]
        warned = [str(x.message) for x in w if token and _names(token, str(x.message))]
    if kind == "bad" and isinstance(result, int) and not isinstance(result, bool) and result != 0 \
            and "python -m grpo_lab train" in err.getvalue():
        msg = err.getvalue().strip().splitlines()[-1:] or [""]      # a CLI that returned its exit code
        if "Traceback" in err.getvalue():
            return "raw_traceback", msg[0][:160]
        return ("clear_error" if _names(token, msg[0]) else "unclear_error"), msg[0][:160]
    if kind == "extreme":
        try:
            ok = fn[1](result) and not any(issubclass(x.category, RuntimeWarning) for x in w)
        except Exception:   # noqa: BLE001
            ok = False
        return ("correct" if ok else "silent"), repr(result)[:160]
    if warned:
        return "warned", warned[0][:160]
    if hasattr(result, "columns"):                 # a training run's DataFrame: it ran
        return "silent", "trained and returned a DataFrame"
    return "silent", ("NaN/inf result" if not _finite(result) else "returned a result")


SCRATCH = Path(tempfile.mkdtemp(prefix="grpo_sweep_"))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quiet", action="store_true", help="print the summary table only")
    ap.add_argument("--json", default=None, help="also write every outcome to this JSON file")
    args = ap.parse_args(argv)
    json_out = Path(args.json).resolve() if args.json else None
    (SCRATCH / "afile").write_text("not a folder")
    os.chdir(SCRATCH)
    BASE[5] = str(SCRATCH / "cli_out")
    os.environ["GRPO_LAB_CACHE"] = str(SCRATCH / "cache")
    _trainer_cases()
    _issue25_cases()
    rows = []
    for case_id, kind, token, fn in CASES:
        outcome, detail = classify(kind, token, fn)
        rows.append({"call": case_id, "outcome": outcome, "detail": " ".join(detail.split())})
    counts = Counter(r["outcome"] for r in rows)
    print(f"bad-input sweep: {len(rows)} calls")
    for k in ("clear_error", "warned", "correct", "unclear_error", "raw_traceback", "silent"):
        print(f"  {k:14s} {counts.get(k, 0):4d}")
    if not args.quiet:
        for r in rows:
            print(f"{r['outcome']:14s} {r['call']}  ->  {r['detail']}")
    if json_out:
        json_out.write_text(json.dumps(rows, indent=1))
    shutil.rmtree(SCRATCH, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
