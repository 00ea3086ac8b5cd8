"""Whose folder is it? The run-folder marker, and the record of every file a run wrote.

A run folder carries ``.grpo_lab_run.json``, written only by grpo_lab::

    {"format": 1, "grpo_lab": "0.4.0", "created": "2026-12-01T23:40:00Z",
     "written": ["config.json", "ref/model.safetensors", "metrics.csv", ...]}

* ``format`` is :data:`FORMAT`; a marker from a newer format is refused (it may mean
  something this version does not know).
* ``written`` lists every file the run created outside ``checkpoints/`` (relative paths),
  recorded *before* the file is created, so a kill cannot leave a file of the run unlisted.
  ``checkpoints/`` is the run's own: everything in it is written by
  :func:`grpo_lab.lm.checkpoint.write_checkpoint`.

:func:`claim` runs before anything is written (the lock included): an empty or new folder is
claimed (the marker is created with ``os.link``, so of two processes claiming one folder at
once exactly one creates it); a marked folder is the run's; any other non-empty folder is
refused with the list of what is in it. A folder made by grpo_lab before the marker existed
is adopted (with a warning) only when it holds a checkpoint that grpo_lab wrote and
``--resume`` is given. :func:`remove_written` is the only deletion of run files outside
``checkpoints/``, and it deletes only what ``written`` lists.
"""
from __future__ import annotations

import json
import os
import time
import warnings
from pathlib import Path

from grpo_lab.lm import fsutil

MARKER = ".grpo_lab_run.json"
FORMAT = 1
# entries that do not make a folder "not empty": our own lock and marker temporaries, and
# what file browsers and Jupyter put into any folder
IGNORED = (".lock", ".DS_Store", ".ipynb_checkpoints", "Thumbs.db")


# the files an older grpo_lab wrote outside checkpoints/ (what an adopted run's marker lists)
RUN_FILES = ("config.json", "metrics.csv", "metrics.jsonl", "eval_before.json", "eval_after.json",
             *(f"ref/{n}" for n in ("config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                                    "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja")))


class NotARunFolder(ValueError):
    """``out`` is not empty and was not made by grpo_lab: a run would mix its files with others."""


def _version() -> str:
    from grpo_lab import __version__

    return __version__


def _ignored(name: str) -> bool:
    return name in IGNORED or (name.startswith(MARKER + ".") and name.endswith(".tmp"))


def _describe(entries: list[Path]) -> str:
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in entries)
    shown = ", ".join(names[:8]) + (f", … ({len(names)} entries in all)" if len(names) > 8 else "")
    return shown


def read_marker(out: Path) -> dict | None:
    """The marker of ``out`` (None when there is none); a broken or newer one is an error naming it."""
    path = Path(out) / MARKER
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    except OSError as e:
        raise NotARunFolder(f"cannot read the run-folder marker {str(path)!r}: {e.strerror or e}") from None
    try:
        marker = json.loads(text)
        fmt = int(marker["format"])
        if not isinstance(marker.get("written", []), list):
            raise TypeError
    except (ValueError, KeyError, TypeError):
        raise NotARunFolder(f"the run-folder marker {str(path)!r} is unreadable; it is written only by grpo_lab, "
                            f"so this folder's records cannot be trusted: start the run in another folder (--out)"
                            ) from None
    if fmt > FORMAT:
        raise NotARunFolder(f"the run in {str(out)!r} was made by a newer grpo_lab (run-folder format {fmt}; this "
                            f"version reads format {FORMAT}): upgrade grpo_lab, or choose another folder (--out)")
    return marker


def _write_marker(out: Path, marker: dict, *, exclusive: bool = False) -> bool:
    """Write ``marker`` atomically (temporary file, fsync, rename). ``exclusive``: only if there is
    none yet (``os.link`` fails if it exists); returns False when another process won."""
    path = Path(out) / MARKER
    tmp = Path(out) / f"{MARKER}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            f.write(json.dumps(marker, indent=1))
            f.flush()
            os.fsync(f.fileno())
        if exclusive:
            try:
                os.link(tmp, path)
            except FileExistsError:
                return False
        else:
            os.replace(tmp, path)
    except OSError as e:
        raise fsutil.write_error("the run-folder marker", path, e, "Free space on that disk (or choose another "
                                 "--out), then run again") from None
    finally:
        tmp.unlink(missing_ok=True)
    return True


def _legacy_run(out: Path) -> bool:
    """True when ``out`` holds a checkpoint whose state.json grpo_lab wrote (a run from before the marker)."""
    for state in sorted(Path(out).glob("checkpoints/step_*/state.json")):
        try:
            s = json.loads(state.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(s, dict) and "step" in s and isinstance(s.get("config"), dict) and "preset" in s["config"]:
            return True
    return False


def claim(out: Path, *, resume: bool) -> dict:
    """Make sure ``out`` is a grpo_lab run folder before anything is written into it.

    A new or empty folder gets a fresh marker; a marked one is returned as is; any other
    non-empty folder raises :class:`NotARunFolder` saying what is there and what to do.
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    marker = read_marker(out)
    if marker is not None:
        return marker
    others = [p for p in out.iterdir() if not _ignored(p.name)]
    fresh = {"format": FORMAT, "grpo_lab": _version(),
             "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "written": []}
    if others:
        if resume and _legacy_run(out):
            warnings.warn(f"{str(out)!r} holds a run made by a grpo_lab without run-folder markers; adopting it "
                          f"(its marker lists the run files an older grpo_lab writes; nothing else in the folder is ever deleted)",
                          UserWarning, stacklevel=3)
            fresh["adopted"] = True
            fresh["written"] = [n for n in RUN_FILES if (out / n).is_file()]
        else:
            raise NotARunFolder(
                f"out (the run folder) {str(out)!r} is not empty and is not a grpo_lab run folder (it has no "
                f"{MARKER}); it holds: {_describe(others)}. A run would write config.json, metrics.csv, "
                f"eval_before.json, ref/ and checkpoints/ there and could overwrite your files, so nothing was "
                f"written. Choose a new or empty folder (--out)" + (", or move these files away" if resume else ""))
    if not _write_marker(out, fresh, exclusive=True):       # another process claimed it a moment ago
        return read_marker(out) or fresh
    return fresh


def record(out: Path, *relpaths: str) -> None:
    """Add ``relpaths`` (relative to ``out``) to the marker's list of files this run wrote.

    Call it *before* creating the files. Only the process holding the run lock calls it.
    """
    marker = read_marker(out)
    if marker is None:
        raise NotARunFolder(f"{str(out)!r} has no run-folder marker {MARKER}: it was removed while the run was "
                            f"using the folder")
    new = [r for r in relpaths if r not in marker["written"]]
    if new:
        marker["written"] = marker["written"] + new
        _write_marker(out, marker)


def replace_text(path: Path, text: str) -> None:
    """Write ``path`` whole or not at all (temporary file, fsync, rename); a failure is one line naming it."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as e:
        tmp.unlink(missing_ok=True)
        raise fsutil.write_error(path.name, path, e, "Free space on that disk (or choose another --out), then "
                                 "continue with --resume") from None


def write_text(out: Path, name: str, text: str) -> None:
    """Write the run file ``out/name`` (recorded first), whole or not at all."""
    record(out, name)
    replace_text(Path(out) / name, text)


def written(out: Path) -> list[str]:
    marker = read_marker(out)
    return list(marker["written"]) if marker else []


def remove_written(out: Path, *, under: str | None = None) -> list[str]:
    """Delete the files the marker lists (all of them, or those under folder ``under``) and the
    folders they leave empty; returns what was removed. Nothing unlisted is touched: a folder
    that still holds other files is kept (with a warning naming them)."""
    out = Path(out)
    names = [n for n in written(out) if under is None or n.startswith(under.rstrip("/") + "/")]
    removed, folders = [], set()
    for name in names:
        p = out / name
        if p.is_file() or p.is_symlink():
            p.unlink()
            removed.append(name)
        folders.update(parent for parent in Path(name).parents if str(parent) != ".")
    for folder in sorted(folders, key=lambda f: len(f.parts), reverse=True):
        d = out / folder
        if d.is_dir():
            try:
                d.rmdir()
            except OSError:
                warnings.warn(f"kept {str(d)!r}: it holds files this run did not write "
                              f"({_describe(list(d.iterdir()))})", UserWarning, stacklevel=3)
    return removed


__all__ = ["MARKER", "FORMAT", "NotARunFolder", "claim", "record", "write_text", "remove_written", "read_marker",
           "written"]
