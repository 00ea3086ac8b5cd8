"""Helpers for the fault-injection tests: read-only folders (also as root), injected ENOSPC,
and a fake GGUF conversion (a tiny model instead of the 35-second dequantisation)."""
import contextlib
import errno
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ENOSPC = OSError(errno.ENOSPC, "No space left on device")
# what safetensors raises when the disk fills up while it writes (it says nothing of a path)
SAFETENSORS_FULL = "Error while serializing: IoError(Os { code: 28, kind: StorageFull, message: \"No space left on device\" })"


def no_space(*_a, **_k):
    raise OSError(errno.ENOSPC, "No space left on device")


@contextlib.contextmanager
def read_only(folder: Path):
    """Make ``folder`` and every folder under it read-only: chmod for a normal user; for root
    (whom permissions do not stop) the immutable attribute (``chattr +i``)."""
    dirs = [folder, *[p for p in Path(folder).rglob("*") if p.is_dir()]]
    if os.geteuid() != 0:
        modes = {d: d.stat().st_mode for d in dirs}
        for d in dirs:
            d.chmod(0o555)
        try:
            yield
        finally:
            for d, m in modes.items():
                d.chmod(m)
        return
    if shutil.which("chattr") is None:
        pytest.skip("running as root without chattr: cannot make a read-only folder")
    done = []
    try:
        for d in dirs:
            if subprocess.run(["chattr", "+i", str(d)], capture_output=True).returncode != 0:
                pytest.skip("running as root on a file system without chattr +i: cannot make a read-only folder")
            done.append(d)
        yield
    finally:
        for d in done:
            subprocess.run(["chattr", "-i", str(d)], capture_output=True)


def tiny_model():
    from grpo_lab.lm.model import make_model
    from grpo_lab.lm.tokenizer import char_tokenizer

    tok = char_tokenizer()
    return make_model(tok, seed=0, hidden=32, intermediate=64, layers=1, heads=2), tok


FAKE_CHILD = """
import os, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from grpo_lab.lm import pretrained
from faults import tiny_model
fake, log = Path(sys.argv[1]), Path(sys.argv[2])
pretrained.gguf_path = lambda name: fake
def dequantise(gguf):
    with open(log, "a") as f:
        f.write(f"{os.getpid()}\\n")
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))
    return tiny_model()
pretrained._dequantise = dequantise
print(pretrained.resolve("smollm2-135m"), flush=True)
"""
