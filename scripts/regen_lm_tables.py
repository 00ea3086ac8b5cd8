"""Regenerate the generated tables of docs/lm.md from the package (run from the repo root).

    .venv/bin/python scripts/regen_lm_tables.py          # rewrite docs/lm.md in place
    .venv/bin/python scripts/regen_lm_tables.py --check  # exit 1 if a table is stale

Each table sits between `<!-- generated: NAME -->` and `<!-- end generated -->`:
  metrics       grpo_lab.lm.trainer.metrics_markdown((1, 2))     (tests/test_lm_trainer.py::test_docs_list_every_metric)
  metric_guide  grpo_lab.lm.metric_guide.markdown_table()        (tests/test_metric_guide.py::test_docs_carry_the_same_guide)
  broken_runs   grpo_lab.lm.broken_runs.summary + metric_guide.red_flags over grpo_lab/data/broken_runs.csv
"""
import re
import sys
from pathlib import Path

import numpy as np


def _g(x):
    return "0" if x == 0 else f"{x:.3g}"


def broken_runs_table() -> str:
    from grpo_lab.lm import broken_runs, metric_guide
    runs = broken_runs.load()
    s = broken_runs.summary(runs)
    rows = ["| run | reward_mean | frac_all_wrong | adv_abs_mean | kl | red flags raised |",
            "| --- | --- | --- | --- | --- | --- |"]
    for r in broken_runs.RUNS:
        if r.name not in s.index:
            continue
        flags = metric_guide.red_flags(runs[runs["run"] == r.name])
        row = s.loc[r.name]
        rows.append(f"| {r.label.en} | {_g(row['reward_mean'])} | {_g(row['frac_all_wrong'])} | "
                    f"{_g(row['adv_abs_mean'])} | {_g(row['kl'])} | {', '.join(flags) or '—'} |")
    return "\n".join(rows)


def blocks() -> dict:
    from grpo_lab.lm import metric_guide
    from grpo_lab.lm.trainer import metrics_markdown
    return {"metrics": metrics_markdown((1, 2)), "metric_guide": metric_guide.markdown_table(),
            "broken_runs": broken_runs_table()}


def main(argv):
    path = Path("docs/lm.md")
    text = path.read_text(encoding="utf-8")
    new = text
    for name, body in blocks().items():
        # the block's body never contains another marker, so an empty block cannot swallow the next one
        pat = re.compile(rf"(<!-- generated: {name} -->\n)(?:(?!<!-- ).)*?(<!-- end generated -->)", re.S)
        if len(pat.findall(new)) != 1:
            sys.exit(f"docs/lm.md must have exactly one block {name!r}")
        new = pat.sub(lambda m: m.group(1) + body + "\n" + m.group(2), new)
    if "--check" in argv:
        print("up to date" if new == text else "stale")
        sys.exit(0 if new == text else 1)
    path.write_text(new, encoding="utf-8")
    print("rewritten" if new != text else "unchanged")


if __name__ == "__main__":
    main(sys.argv[1:])
