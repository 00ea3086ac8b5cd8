"""The run folder: its lock, checkpoints (write, verify, load, fall back) and the metrics files.

Layout of ``out/``::

    .grpo_lab_run.json     the marker: written only by grpo_lab, lists every file the run wrote
                           outside checkpoints/ (grpo_lab.lm.runfolder)
    .lock                  {"pid", "host", "started"} of the process training in it
    config.json            the run's GRPOConfig
    ref/                   the reference model π_ref (saved once, when it is needed)
    metrics.csv / .jsonl   one row per step, appended after every step
    eval_before.json / eval_after.json
    checkpoints/step_NNNNNN/   model.safetensors + config + tokenizer, optimizer.pt, state.json

A checkpoint is written into ``.tmp_step_NNNNNN``, every file and the folder are fsynced,
and only then is it renamed into place (and the parent folder fsynced), so neither a kill
nor a power loss can leave a half-written ``step_*`` folder. Randomness needs no saved
state: every step draws it from generators seeded by (seed, step).
"""
from __future__ import annotations

import io
import json
import math
import os
import shutil
import socket
import time
import warnings
from pathlib import Path

import pandas as pd
import torch

from grpo_lab.lm import fsutil, runfolder
from grpo_lab.lm.guard import all_finite
from grpo_lab.lm.model import load_model, save_model

CHECKPOINT_FILES = ("state.json", "config.json", "model.safetensors", "optimizer.pt")


class CheckpointError(ValueError):
    """A checkpoint (or the reference model) is missing a file or has an unreadable one."""


class RunLocked(ValueError):
    """Another live process is training in the same run folder."""


# -- the run folder and its lock -------------------------------------------------------------
def check_folder(path: Path, what: str, *, writable: bool = True) -> None:
    """Refuse, before any work, a folder path that cannot be created or written (``what`` names it).

    ``writable=False``: only a file in the way is refused; a read-only folder is fine (a shared cache
    that is only read; what cannot be cached is then said when it happens).
    """
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ValueError(f"{what} {str(p)!r} is a file, not a folder; pass a folder path")
    anc = p
    while not anc.exists():
        anc = anc.parent
    if not anc.is_dir():
        raise ValueError(f"{what} {str(p)!r} cannot be created: {str(anc)!r} is a file, not a folder")
    if writable and not os.access(anc, os.W_OK | os.X_OK):
        raise ValueError(f"{what} {str(p)!r} cannot be created: {str(anc)!r} is not writable")


def make_folder(path: Path, what: str) -> None:
    """Create ``path`` (and parents); an OSError becomes one line naming ``what``."""
    check_folder(path, what)
    try:
        Path(path).mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise ValueError(f"{what} {str(path)!r} cannot be created: {e.strerror or e}") from None


_alive = fsutil.alive            # a zombie (killed, not yet reaped) is gone too


class RunLock:
    """``out/.lock`` holding this process's PID: one training process per run folder.

    A lock whose process is gone (killed) is stale and taken over with a warning; a lock of
    the same process is re-entered (a notebook re-running its cell).
    """

    def __init__(self, out: Path):
        self.path = Path(out) / ".lock"
        self.held = False

    def acquire(self) -> None:
        me = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
        for _ in range(3):
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                if self._take_over_or_refuse(me):
                    continue
            except OSError as e:          # disk full, read-only: nothing was created
                raise fsutil.write_error("the run lock", self.path, e, "Free space on that disk (or choose "
                                         "another --out), then run again") from None
            else:
                try:
                    with os.fdopen(fd, "w") as f:
                        f.write(json.dumps(me))
                except OSError as e:      # a 0-byte lock would block the next run: remove it
                    self.path.unlink(missing_ok=True)
                    raise fsutil.write_error("the run lock", self.path, e, "Free space on that disk (or "
                                             "choose another --out), then run again") from None
                self.held = True
                return
        raise RunLocked(f"could not take the lock {str(self.path)!r}; another process keeps creating it")

    def _take_over_or_refuse(self, me: dict) -> bool:
        """True once a stale or own lock was removed (retry); raises RunLocked for a live one."""
        try:
            other = json.loads(self.path.read_text())
            pid, host = int(other["pid"]), str(other.get("host", me["host"]))
        except (OSError, ValueError, KeyError, TypeError):
            if time.time() - self.path.stat().st_mtime < 10:   # being written right now
                raise RunLocked(f"run folder {str(self.path.parent)!r} is being locked by another process") from None
            warnings.warn(f"removing an unreadable stale lock {str(self.path)!r}", UserWarning, stacklevel=4)
            self.path.unlink(missing_ok=True)
            return True
        if pid == me["pid"] and host == me["host"]:
            self.path.unlink(missing_ok=True)
            return True
        if host != me["host"]:
            raise RunLocked(f"run folder {str(self.path.parent)!r} is in use by process {pid} on host {host!r}; "
                            f"if that run is gone, delete {str(self.path)!r}")
        if _alive(pid):
            raise RunLocked(f"run folder {str(self.path.parent)!r} is in use by process {pid}; wait for it "
                            f"to finish or choose another folder (--out). If no such run exists, delete "
                            f"{str(self.path)!r}")
        warnings.warn(f"taking over the stale lock of process {pid} (it is no longer running) in "
                      f"{str(self.path.parent)!r}", UserWarning, stacklevel=4)
        self.path.unlink(missing_ok=True)
        return True

    def release(self) -> None:
        if not self.held:
            return
        self.held = False
        try:
            if json.loads(self.path.read_text()).get("pid") == os.getpid():
                self.path.unlink()
        except (OSError, ValueError):
            pass


# -- writing ------------------------------------------------------------------------------------
_fsync = fsutil.fsync


def fsync_tree(folder: Path) -> None:
    """fsync every file in ``folder``, then the folder itself (its directory entries)."""
    for p in sorted(folder.iterdir()):
        if p.is_file():
            _fsync(p)
    _fsync(folder)


def remove_stale_tmp(out: Path) -> None:
    """Delete ``.tmp_step_*`` / ``.tmp_ref`` folders left by a write that was killed (inside
    ``checkpoints/``, which only the run writes)."""
    root = out / "checkpoints"
    if root.is_dir():
        for p in [*root.glob(".tmp_step_*"), *root.glob(".tmp_ref")]:
            shutil.rmtree(p, ignore_errors=True)


def save_ref(out: Path, model, tok) -> Path:
    """Write the reference model to ``out/ref``: saved under ``checkpoints/.tmp_ref``, every file
    recorded in the run-folder marker, then renamed into place."""
    root = out / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / ".tmp_ref"
    shutil.rmtree(tmp, ignore_errors=True)
    dest = out / "ref"
    try:
        save_model(model, tok, tmp)
        runfolder.record(out, *(f"ref/{p.name}" for p in sorted(tmp.iterdir())))
        fsync_tree(tmp)
    except Exception as e:   # OSError, SafetensorError, RuntimeError: none says "disk full" by itself
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(e, (runfolder.NotARunFolder, fsutil.StorageError)):
            raise
        raise fsutil.write_error("the reference model", dest, e, "Free space on that disk (or choose another "
                                 "--out), then run again") from None
    if dest.is_dir():
        # a run killed after writing π_ref but before its first checkpoint starts afresh and writes
        # π_ref again: the old copy is replaced when every file in it is one this run recorded
        mine = set(runfolder.written(out))
        if all(f"ref/{p.name}" in mine for p in dest.iterdir()):
            shutil.rmtree(dest)
    try:
        os.replace(tmp, dest)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ValueError(f"cannot write the reference model to {str(dest)!r}: the folder holds files this run "
                         f"did not write ({', '.join(sorted(p.name for p in dest.iterdir()))}); move them away "
                         f"and run again") from None
    _fsync(out)
    return dest


def write_checkpoint(out: Path, step: int, policy, tok, opt, state: dict, keep: int = 2) -> Path:
    """Policy (safetensors), optimiser state and ``state`` under ``out/checkpoints/step_NNNNNN``.

    Refuses non-finite weights (a diverged policy is never checkpointed).
    """
    if not all_finite(p.detach() for p in policy.parameters()):
        raise ValueError(f"refusing to checkpoint step {step}: the policy weights are not finite (NaN or inf)")
    root = out / "checkpoints"
    root.mkdir(parents=True, exist_ok=True)
    remove_stale_tmp(out)
    path = root / f"step_{step:06d}"
    tmp = root / f".tmp_step_{step:06d}"
    try:
        save_model(policy, tok, tmp)
        torch.save(opt.state_dict(), tmp / "optimizer.pt")
        (tmp / "state.json").write_text(json.dumps(state))
        fsync_tree(tmp)
    except Exception as e:   # OSError, SafetensorError, torch's "enforce fail at inline_container.cc"
        shutil.rmtree(tmp, ignore_errors=True)
        prev = latest_checkpoint(out)
        raise fsutil.write_error(f"the checkpoint of step {step}", path, e, "Nothing half-written was kept; "
                                 + (f"the last checkpoint ({prev.name}) is intact. " if prev else "")
                                 + "Free space on that disk, then continue with --resume") from None
    shutil.rmtree(path, ignore_errors=True)
    os.replace(tmp, path)
    _fsync(root)
    for old in sorted(p for p in root.iterdir() if p.name.startswith("step_"))[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return path


# -- reading ------------------------------------------------------------------------------------
def checkpoint_dirs(out: Path) -> list[Path]:
    """Every checkpoint folder of the run in ``out`` (renamed into place, so complete when written), oldest first."""
    d = out / "checkpoints"
    if not d.is_dir():
        return []
    return sorted(p for p in d.iterdir() if p.name.startswith("step_") and p.is_dir())


def latest_checkpoint(out: Path | None) -> Path | None:
    if out is None:
        return None
    steps = checkpoint_dirs(out)
    return steps[-1] if steps else None


def _read_json(path: Path, what: str) -> dict:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise CheckpointError(f"{what} is missing {path.name} ({str(path)!r})") from None
    except (OSError, ValueError) as e:
        raise CheckpointError(f"{path.name} of {what} is unreadable ({str(path)!r}: {e})") from None


def read_model(path: Path, what: str):
    """(model, tokenizer) saved by :func:`save_model` in ``path``; errors name the broken file."""
    for name in ("config.json", "model.safetensors"):
        if not (path / name).is_file():
            raise CheckpointError(f"{what} is missing {name} ({str(path / name)!r})")
    _read_json(path / "config.json", what)
    try:
        return load_model(path)
    except Exception as e:   # a truncated file raises SafetensorError, OSError, ValueError …
        raise CheckpointError(f"model.safetensors of {what} is unreadable ({str(path / 'model.safetensors')!r}: "
                              f"{type(e).__name__}: {e})") from None


def read_checkpoint(path: Path, device) -> tuple[dict, dict, dict]:
    """(state, policy state dict, optimiser state dict) of the checkpoint at ``path``, every file checked."""
    what = f"checkpoint {path.name}"
    state = _read_json(path / "state.json", what)
    if not isinstance(state, dict) or "step" not in state or "config" not in state:
        raise CheckpointError(f"state.json of {what} lacks its step or config ({str(path / 'state.json')!r})")
    if (path / "adapter_config.json").is_file():       # a LoRA run: only the adapters (grpo_lab.lm.lora)
        policy_sd = _read_adapters(path, what)
    else:
        policy_sd = read_model(path, what)[0].state_dict()
    opt_path = path / "optimizer.pt"
    if not opt_path.is_file():
        raise CheckpointError(f"{what} is missing optimizer.pt ({str(opt_path)!r})")
    try:
        opt_state = torch.load(opt_path, map_location=device, weights_only=True)
    except Exception as e:   # truncated: RuntimeError / EOFError / UnpicklingError
        raise CheckpointError(f"optimizer.pt of {what} is unreadable ({str(opt_path)!r}: {type(e).__name__}: {e})") from None
    return state, policy_sd, opt_state


def _read_adapters(path: Path, what: str) -> dict:
    """The LoRA adapters of a checkpoint (``adapter_model.safetensors``); errors name the file."""
    f = path / "adapter_model.safetensors"
    if not f.is_file():
        raise CheckpointError(f"{what} is missing adapter_model.safetensors ({str(f)!r})")
    try:
        from safetensors.torch import load_file

        return load_file(str(f))
    except Exception as e:
        raise CheckpointError(f"adapter_model.safetensors of {what} is unreadable ({str(f)!r}: "
                              f"{type(e).__name__}: {e})") from None


def load_newest_intact(out: Path, device):
    """(path, state, policy sd, optimiser sd) of the newest checkpoint that reads back whole.

    A broken newer checkpoint is skipped with a warning naming the file; if none is intact
    the newest one's error is raised.
    """
    dirs = checkpoint_dirs(out)[::-1]
    first_error = None
    for i, path in enumerate(dirs):
        try:
            return (path, *read_checkpoint(path, device))
        except CheckpointError as e:
            first_error = first_error or e
            if i + 1 < len(dirs):
                warnings.warn(f"{e}; falling back to the previous checkpoint {dirs[i + 1].name}",
                              UserWarning, stacklevel=3)
    raise CheckpointError(f"cannot resume the run in {str(out)!r}: {first_error}; no intact checkpoint is left "
                          f"(delete {str(out / 'checkpoints')!r} to restart it from the warm start)")


# -- resuming ---------------------------------------------------------------------------------
def config_differences(saved, cfg) -> list[str]:
    """Every field (except the runtime ones) where ``cfg`` differs from the run's ``saved`` config."""
    out = []
    for f, old in saved.to_dict().items():
        if f in type(cfg).RUNTIME_FIELDS:
            continue
        new = getattr(cfg, f)
        if f in ("levels", "chat_levels"):
            old, new = tuple(old), tuple(new)
        if old != new:
            out.append(f"{f} is {new!r} here but the run used {old!r}")
    return out


def clear_run(out: Path) -> None:
    """Remove what a run wrote before its first checkpoint, so it can start again at step 0.

    Only the files the run-folder marker lists are deleted (:func:`runfolder.remove_written`);
    a file of someone else's in ``ref/`` stays, and the restart then says so.
    """
    runfolder.remove_written(out)
    remove_stale_tmp(out)


# -- metrics files ------------------------------------------------------------------------------
def append_metrics(out: Path, row: dict) -> None:
    """Append one step's row to ``metrics.csv`` and ``metrics.jsonl`` (NaN → null in JSON)."""
    csv, jl = out / "metrics.csv", out / "metrics.jsonl"
    header = not csv.exists()
    if header:
        runfolder.record(out, "metrics.csv", "metrics.jsonl")
    sizes = {p: (p.stat().st_size if p.exists() else 0) for p in (csv, jl)}
    line = json.dumps({k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}) + "\n"
    target = csv
    try:
        pd.DataFrame([row]).to_csv(csv, mode="a", header=header, index=False)
        target = jl
        with open(jl, "a") as f:
            f.write(line)
    except OSError as e:               # disk full: cut both files back to their whole rows, name the file
        for p, size in sizes.items():
            try:
                os.truncate(p, size)
            except OSError:
                pass
        raise fsutil.write_error(f"the metrics of step {row.get('step')}", target, e, "Free space on that disk, "
                                 "then continue with --resume (from the last checkpoint)") from None


def _whole_lines(path: Path) -> str:
    """The text of ``path`` up to its last newline: a line cut short by a kill is dropped."""
    text = path.read_text()
    return text if text.endswith("\n") else text[:text.rfind("\n") + 1]


def truncate_metrics(out: Path, step: int) -> list[dict]:
    """Drop the rows after ``step`` (they belong to an interrupted future) and any partial line;
    returns the rows kept."""
    csv = out / "metrics.csv"
    if not csv.exists():
        return []
    text = _whole_lines(csv)
    df = pd.read_csv(io.StringIO(text)) if text.count("\n") > 1 else pd.DataFrame()
    df = df[df["step"] <= step] if len(df) else df
    if len(df):
        runfolder.replace_text(csv, df.to_csv(index=False))
    else:
        csv.unlink()
    jl = out / "metrics.jsonl"
    if jl.exists():
        keep = []
        for ln in _whole_lines(jl).splitlines():
            try:
                if ln.strip() and json.loads(ln)["step"] <= step:
                    keep.append(ln)
            except (ValueError, KeyError, TypeError):
                continue
        runfolder.replace_text(jl, "".join(ln + "\n" for ln in keep))
    return df.to_dict("records")
