"""Command line: ``python -m grpo_lab {lab,figures,strip-notebooks,train,exercises,translations} ...``."""
from __future__ import annotations

import argparse
import sys


def _figures(argv):
    ap = argparse.ArgumentParser(prog="python -m grpo_lab figures",
                                 description="Regenerate the course figures deterministically.")
    ap.add_argument("--out", default="figures", help="output folder (default: figures)")
    ap.add_argument("--only", default=None, help="glob of figure names, e.g. '01_*'")
    ap.add_argument("--svg", action="store_true", help="also write SVG files")
    args = ap.parse_args(argv)
    from grpo_lab.figures import render

    for path in render(args.out, args.only, args.svg):
        print(path)


def _strip(argv):
    ap = argparse.ArgumentParser(prog="python -m grpo_lab strip-notebooks",
                                 description="Clear outputs and execution counts of notebooks in place.")
    ap.add_argument("paths", nargs="+")
    args = ap.parse_args(argv)
    from grpo_lab.notebook_tools import strip_notebook

    for path in args.paths:
        if strip_notebook(path):
            print(f"stripped {path}")


def _exercises(argv):
    from grpo_lab.exercises.notebooks import main as exercises_main

    return exercises_main(argv)


def _translations(argv):
    from grpo_lab.translations_cli import main as translations_main

    return translations_main(argv)


def _train(argv):
    from grpo_lab.lm.cli import main as train_main

    return train_main(argv)


def _lab(argv):
    from grpo_lab.course import main as lab_main

    return lab_main(argv)


COMMANDS = {"lab": _lab, "figures": _figures, "strip-notebooks": _strip, "train": _train, "exercises": _exercises,
            "translations": _translations}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in COMMANDS:
        print("usage: python -m grpo_lab {" + ",".join(COMMANDS) + "} [--help]")
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    return COMMANDS[argv[0]](argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main())
