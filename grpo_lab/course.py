"""``grpo-lab lab [FOLDER]``: copy the course notebooks into a writable folder and open JupyterLab there.

The way in without ``make`` (Windows, macOS without developer tools, hosted notebooks): after
``pip install .`` the notebooks travel inside the package (``grpo_lab/course/``, copied there
from ``notebooks/`` when the wheel is built — see ``setup.py``); in a source checkout they are
read from ``notebooks/`` directly. The copy never overwrites a notebook the student changed
without asking: a manifest in the folder records what was copied, a file that still matches
it is refreshed silently when the package ships a newer one, a changed file is kept unless
the student answers "y" (or passes ``--force``).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

PACKAGED = Path(__file__).resolve().parent / "course"        # in an installed wheel
CHECKOUT = Path(__file__).resolve().parents[1] / "notebooks"  # in a source checkout
MANIFEST = ".grpo_lab_course.json"
DEFAULT_FOLDER = "grpo_lab_course"
ZH = "zh"


def source_dir() -> Path:
    """Where the shipped notebooks are: the package's ``course/`` or the checkout's ``notebooks/``."""
    for d in (PACKAGED, CHECKOUT):
        if any(d.glob("*.ipynb")):
            return d
    raise FileNotFoundError(f"no course notebooks found in {PACKAGED} or {CHECKOUT}: reinstall grpo_lab "
                            "(pip install .) from a complete copy of the repository")


def course_files(src: Path | None = None) -> list[str]:
    """The notebooks to copy, relative to :func:`source_dir` (English ``*.ipynb`` and ``zh/*.ipynb``)."""
    src = source_dir() if src is None else src
    files = sorted(p.name for p in src.glob("*.ipynb"))
    files += sorted(f"{ZH}/{p.name}" for p in (src / ZH).glob("*.ipynb"))
    return files


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _ask(question: str) -> bool:
    if not sys.stdin or not sys.stdin.isatty():
        return False
    try:
        return input(question + " [y/N] ").strip().lower() in ("y", "yes")
    except EOFError:
        return False


def copy_course(folder, *, force: bool = False, ask=_ask, log=print) -> dict:
    """Copy the course into ``folder`` (created if needed).

    A notebook missing there is copied; one that still matches what was copied last time is
    replaced by the shipped version; one the student changed is kept without a question while the
    course has nothing newer for it than what was copied last time ("yours"), and otherwise kept
    unless ``force`` or ``ask(question)`` says yes (a habitual "y" at every start would lose work).
    Returns ``{"copied": [...], "kept": [...], "yours": [...], "unchanged": [...]}``.
    """
    src, dest = source_dir(), Path(folder).expanduser()
    try:
        dest.mkdir(parents=True, exist_ok=True)
        (dest / ZH).mkdir(exist_ok=True)
    except OSError as e:
        raise SystemExit(f"grpo-lab lab: FOLDER {str(dest)!r} is not writable ({e.strerror}); "
                         "give a folder you can write to, e.g. grpo-lab lab ~/grpo_lab_course") from None
    man_path = dest / MANIFEST
    try:
        manifest = json.loads(man_path.read_text()) if man_path.exists() else {}
    except (OSError, ValueError):
        manifest = {}
    done: dict[str, list[str]] = {"copied": [], "kept": [], "yours": [], "unchanged": []}
    for rel in course_files(src):
        shipped, target = src / rel, dest / rel
        new = _digest(shipped)
        if target.exists():
            have = _digest(target)
            if have == new:
                done["unchanged"].append(rel)
                manifest[rel] = new
                continue
            edited = have != manifest.get(rel)
            if edited and not force and manifest.get(rel) == new:
                done["yours"].append(rel)            # the student's edits; nothing newer shipped: no question
                continue
            if edited and not force and not ask(f"{target} differs from the course's copy (your edits?). "
                                                "Overwrite it with the course's version?"):
                done["kept"].append(rel)
                continue
        shutil.copyfile(shipped, target)
        manifest[rel] = new
        done["copied"].append(rel)
    man_path.write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    if done["kept"]:
        log(f"grpo-lab lab: kept your changed {', '.join(done['kept'])} (grpo-lab lab --force replaces them)")
    log(f"grpo-lab lab: {len(done['copied'])} notebook(s) copied to {dest}, "
        f"{len(done['unchanged'])} already up to date"
        + (f", {len(done['yours'])} with your changes left as they are" if done["yours"] else ""))
    return done


def lab_command(folder, *, zh: bool = False, extra=()) -> list[str]:
    """The JupyterLab command line: the folder (its ``zh/`` for the Chinese edition), ``--allow-root``
    when running as root (containers, hosted notebooks, CI), then ``extra`` (e.g. ``--no-browser``)."""
    root = Path(folder).expanduser() / (ZH if zh else "")
    as_root = getattr(os, "geteuid", lambda: 1)() == 0
    return [sys.executable, "-m", "jupyterlab", str(root), *(["--allow-root"] if as_root else []), *extra]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="grpo-lab lab",
        description="Copy the course notebooks into FOLDER (a writable folder) and open JupyterLab there. "
                    "Flags not listed here go to JupyterLab (e.g. --port=8899).")
    ap.add_argument("folder", nargs="?", default=DEFAULT_FOLDER,
                    help=f"where the notebooks go (default: ./{DEFAULT_FOLDER})")
    ap.add_argument("--zh", action="store_true", help="open the Chinese edition (中文版)")
    ap.add_argument("--force", action="store_true", help="replace notebooks you changed with the course's copies")
    ap.add_argument("--no-browser", action="store_true", help="start the server without opening a browser")
    ap.add_argument("--copy-only", action="store_true",
                    help="only copy the notebooks (for a hosted notebook service that already runs Jupyter)")
    args, extra = ap.parse_known_args(argv)
    bad = [a for i, a in enumerate(extra) if not a.startswith("-")
           and not (i and extra[i - 1].startswith("--") and "=" not in extra[i - 1])]     # "--port 8899" is fine
    if bad:
        ap.error(f"unexpected argument(s) {bad}: give one FOLDER; JupyterLab options start with --")
    copy_course(args.folder, force=args.force)
    if args.copy_only:
        return 0
    cmd = lab_command(args.folder, zh=args.zh, extra=[*(["--no-browser"] if args.no_browser else []), *extra])
    if os.name == "posix":
        # Become JupyterLab rather than wait for it: a signal to this process (a closed terminal,
        # a job manager's SIGTERM) then reaches the server itself, and no orphaned server is left
        # holding the port. (Ctrl-C already reached both: it goes to the terminal's process group.)
        sys.stdout.flush()
        sys.stderr.flush()
        os.execv(cmd[0], cmd)
    try:
        return subprocess.call(cmd)
    except KeyboardInterrupt:
        return 0
