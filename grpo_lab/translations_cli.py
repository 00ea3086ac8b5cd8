"""``python -m grpo_lab translations {sync,report,export,import}``: keep notebooks/zh in sync.

    sync     write notebooks/zh/NAME.ipynb from notebooks/NAME.ipynb (code cells copied,
             translations kept, new/changed English markdown flagged); --report lists
             what still needs a translator
    report   list stale / untranslated cells (notebook, cell index, first English line);
             exit status 1 if there are any
    export   write the cells that need translating to a text file (one marker per cell)
    import   read that file back once the text under each marker is Chinese
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from grpo_lab import translations as T


def _print_report(folder) -> int:
    problems = T.report(folder)
    for p in problems:
        print(p)
    print(f"{len(problems)} cell(s) need work" if problems else "notebooks/zh: every cell in sync")
    return 1 if problems else 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m grpo_lab translations", description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("command", choices=("sync", "report", "export", "import"))
    ap.add_argument("file", nargs="?", help="export/import: the text file (default: stdout/stdin)")
    ap.add_argument("--notebooks", default="notebooks", help="folder of the English notebooks (default: notebooks)")
    ap.add_argument("--report", action="store_true", help="sync: list what still needs translating afterwards")
    ap.add_argument("--stale", choices=("keep", "english"), default="keep",
                    help="sync: a translation whose English cell changed is kept and reported stale (keep, the "
                         "default) or replaced by the new English text, flagged untranslated (english)")
    ap.add_argument("--only", nargs="*", help="export: only these notebooks (names without .ipynb)")
    ap.add_argument("--all", action="store_true", help="export: every markdown cell, not just the ones that need work")
    args = ap.parse_args(argv)
    if not Path(args.notebooks).is_dir():
        ap.error(f"--notebooks: {args.notebooks!r} is not a folder")
    if args.command == "sync":
        for path in T.sync(args.notebooks, stale=args.stale):
            print(f"wrote {path}")
        return _print_report(args.notebooks) if args.report else 0
    if args.command == "report":
        return _print_report(args.notebooks)
    if args.command == "export":
        text = T.export_cells(args.notebooks, args.only, args.all)
        if args.file:
            Path(args.file).write_text(text, encoding="utf-8")
            print(f"wrote {text.count('<!-- zh-cell ')} cell(s) to {args.file}")
        else:
            sys.stdout.write(text)
        return 0
    text = Path(args.file).read_text(encoding="utf-8") if args.file else sys.stdin.read()
    try:
        done = T.import_cells(text, args.notebooks)
    except (ValueError, FileNotFoundError) as err:
        print(f"translations import: {err}", file=sys.stderr)
        return 2
    print(f"imported {len(done)} translated cell(s)")
    return _print_report(args.notebooks)
