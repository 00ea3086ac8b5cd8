"""scripts/bad_input_sweep.py on the current code: every bad call gives a clear error (or, for a
legal but extreme setting, a warning naming it); none is silent or a raw traceback (issue 16)."""
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_no_bad_call_is_silent_or_a_raw_traceback(tmp_path):
    out = tmp_path / "sweep.json"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    subprocess.run([sys.executable, str(ROOT / "scripts" / "bad_input_sweep.py"), "--quiet", "--json", str(out)],
                   env=env, check=True, capture_output=True, text=True, timeout=600)
    rows = json.loads(out.read_text())
    counts = Counter(r["outcome"] for r in rows)
    assert len(rows) >= 150
    bad = [f"{r['outcome']}: {r['call']} -> {r['detail']}" for r in rows
           if r["outcome"] not in ("clear_error", "warned", "correct")]
    assert not bad, "\n".join(bad)
    assert counts["correct"] >= 10 and counts["warned"] >= 4
