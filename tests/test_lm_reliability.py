"""Issue 16: what the LM loop does when a run is killed, diverges, finds corrupt files, shares
its folder, or is given a bad path. Tiny CPU sizes; every test failed before its fix."""
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from grpo_lab.lm.config import GRPOConfig
from grpo_lab.lm.trainer import TIMING_COLUMNS, Trainer, train

from tiny_run import TINY, cache, cfg  # noqa: E402,F401  (shared settings and fixtures)


def _weights(tr):
    return {n: p.detach().clone() for n, p in tr.policy.named_parameters()}


def _same_run(a: pd.DataFrame, b: pd.DataFrame):
    cols = [c for c in a.columns if c not in TIMING_COLUMNS]
    pd.testing.assert_frame_equal(a[cols].reset_index(drop=True), b[cols].reset_index(drop=True), check_dtype=False)


def _killed(cfg, steps_done, checkpoint_at=()):
    """Run ``steps_done`` steps into ``cfg.out`` as run() would, checkpointing at ``checkpoint_at``, then drop it."""
    tr = Trainer(cfg)
    tr.eval_before = tr.evaluate_both()
    tr._write_json("eval_before.json", tr.eval_before)
    for _ in range(steps_done):
        tr._append_metrics(tr.step())
        if tr.step_count in checkpoint_at:
            tr.save_checkpoint()
    getattr(tr, "close", lambda: None)()      # (releases the run lock; a killed process does not)


# -- 1. resume verifies what it needs -----------------------------------------------------------
def test_resume_without_the_reference_model_stops_and_names_it(cfg, tmp_path):
    out = tmp_path / "r"
    train(cfg.replace(steps=2, out=str(out)))
    import shutil

    shutil.rmtree(out / "ref")
    with pytest.raises(ValueError, match=r"reference model.*ref.*missing"):
        Trainer(cfg.replace(steps=3, out=str(out), resume=True))


def test_resume_without_the_optimizer_state_names_the_file(cfg, tmp_path):
    out = tmp_path / "r"
    train(cfg.replace(steps=2, out=str(out)))
    (out / "checkpoints" / "step_000002" / "optimizer.pt").unlink()
    with pytest.raises(ValueError, match="optimizer.pt"):
        Trainer(cfg.replace(steps=3, out=str(out), resume=True))


# -- 2. a run killed before its first checkpoint ------------------------------------------------
def test_resume_before_any_checkpoint_restarts_from_the_warm_start(cfg, tmp_path, capsys):
    full = train(cfg.replace(steps=3, out=str(tmp_path / "full")))
    part = cfg.replace(steps=3, out=str(tmp_path / "part"))
    _killed(part, 2)                                   # no checkpoint yet
    tr = Trainer(part.replace(resume=True))
    assert "no checkpoint" in capsys.readouterr().err
    assert tr.step_count == 0
    _same_run(full, tr.run())
    assert pd.read_csv(tmp_path / "part" / "metrics.csv")["step"].tolist() == [1, 2, 3]


def test_checkpoints_by_time_when_no_step_interval(cfg, tmp_path):
    c = cfg.replace(steps=3, out=str(tmp_path / "r"), checkpoint_every=0, checkpoint_seconds=1e-9)

    def stop(trainer, row):
        if row["step"] == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Trainer(c, callback=stop).run()
    assert sorted(p.name for p in (tmp_path / "r" / "checkpoints").iterdir()) == ["step_000001", "step_000002"]
    assert GRPOConfig().checkpoint_seconds > 0                    # on by default


# -- 3. divergence guard -------------------------------------------------------------------------
def test_divergence_stops_before_a_nonfinite_update(cfg, tmp_path):
    from grpo_lab.lm.trainer import TrainingDiverged

    out = tmp_path / "r"
    c = cfg.replace(steps=6, out=str(out), lr=1e30, mu=2, checkpoint_every=1, lr_warmup=0)
    with pytest.warns(UserWarning, match="lr"), pytest.raises(TrainingDiverged, match=r"diverged at step \d+.*lr"):
        Trainer(c).run()
    for ck in (out / "checkpoints").glob("step_*"):
        from safetensors.torch import load_file

        assert all(torch.isfinite(t).all() for t in load_file(ck / "model.safetensors").values()), ck.name


def test_nonfinite_checkpoint_is_never_written(cfg, tmp_path):
    tr = Trainer(cfg.replace(steps=1, out=str(tmp_path / "r")))
    with torch.no_grad():
        next(tr.policy.parameters()).fill_(float("nan"))
    with pytest.raises(ValueError, match="not finite"):
        tr.save_checkpoint()
    assert not list((tmp_path / "r").glob("checkpoints/step_*"))



@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_the_weights_check_after_a_step_catches_any_nonfinite_value(bad):
    from grpo_lab.lm.guard import all_finite, sums_finite

    ts = [torch.randn(7, 5), torch.randn(300)]
    assert sums_finite(ts) and all_finite(ts) and sums_finite([])
    for t in ts:
        t = t.clone()
        t.view(-1)[3] = bad
        assert not sums_finite([ts[0], t]) and not all_finite([ts[0], t])
    assert not sums_finite([torch.tensor([3e38, 3e38])])    # finite but past float32: only a diverged model


def test_an_update_that_makes_the_adapted_weights_nonfinite_raises(cfg, monkeypatch):
    from grpo_lab.lm.trainer import TrainingDiverged

    tr = Trainer(cfg.replace(steps=1))
    real_step = tr.opt.step

    def poisoned_step(*a, **k):                  # an optimiser step that leaves one NaN weight behind
        real_step(*a, **k)
        with torch.no_grad():
            tr.opt.param_groups[0]["params"][-1].view(-1)[0] = float("nan")

    monkeypatch.setattr(tr.opt, "step", poisoned_step)
    with pytest.raises(TrainingDiverged, match="weights became non-finite in the update"):
        tr.step()


def test_adamw_is_fused_where_torch_has_the_kernel_and_falls_back_elsewhere(monkeypatch):
    from grpo_lab.lm import trainer

    w = [torch.nn.Parameter(torch.ones(3))]
    assert trainer.adamw(iter(w), lr=0.1, weight_decay=0.0).defaults.get("fused") is True   # CPU, torch 2.13
    real = torch.optim.AdamW

    def no_fused(params, **kw):
        if kw.get("fused"):
            raise RuntimeError("`fused=True` requires all the params to be floating point Tensors of supported devices")
        return real(params, **kw)

    monkeypatch.setattr(torch.optim, "AdamW", no_fused)
    opt = trainer.adamw(iter(w), lr=0.1, weight_decay=0.0)    # a generator is read once, for both tries
    assert not opt.defaults.get("fused") and opt.param_groups[0]["params"] == w
    # the two give the same update (to float rounding)
    a, b = torch.nn.Parameter(torch.arange(4.0)), torch.nn.Parameter(torch.arange(4.0))
    for p, fused in ((a, True), (b, False)):
        o = real([p], lr=0.1, weight_decay=0.01, fused=fused)
        for _ in range(3):
            p.grad = torch.tensor([1.0, -2.0, 0.5, 0.0])
            o.step()
    torch.testing.assert_close(a.detach(), b.detach(), atol=1e-6, rtol=1e-6)

# -- 5. bad output / cache paths are checked before any work -----------------------------------
def test_out_is_a_file(cfg, tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    fresh = str(tmp_path / "fresh_cache")
    for out in (f, f / "sub"):
        with pytest.raises(ValueError, match="out"):
            Trainer(cfg.replace(out=str(out), cache_dir=fresh))
    assert not Path(fresh).exists()                                # no warm start was trained


def test_unusable_cache_dir(cfg, tmp_path):
    f = tmp_path / "afile"
    f.write_text("x")
    with pytest.raises(ValueError, match="cache"):
        Trainer(cfg.replace(out=str(tmp_path / "r"), cache_dir=str(f / "cache")))
    assert not (tmp_path / "r").exists()


# -- 6. corrupt files ---------------------------------------------------------------------------
def _truncate(p: Path):
    p.write_bytes(p.read_bytes()[: max(1, p.stat().st_size // 3)])


def test_corrupt_latest_checkpoint_falls_back_to_the_previous_one(cfg, tmp_path):
    out = tmp_path / "r"
    full = train(cfg.replace(steps=4, out=str(tmp_path / "full")))
    c = cfg.replace(steps=4, out=str(out), checkpoint_every=1)
    _killed(c, 3, checkpoint_at=(2, 3))
    _truncate(out / "checkpoints" / "step_000003" / "model.safetensors")
    with pytest.warns(UserWarning, match="model.safetensors"):
        tr = Trainer(c.replace(resume=True))
    assert tr.step_count == 2
    _same_run(full, tr.run())


@pytest.mark.parametrize("name", ["model.safetensors", "optimizer.pt", "state.json"])
def test_corrupt_only_checkpoint_names_the_file(cfg, tmp_path, name):
    out = tmp_path / "r"
    train(cfg.replace(steps=2, out=str(out)))
    p = out / "checkpoints" / "step_000002" / name
    if name == "state.json":
        p.write_text("")
    else:
        _truncate(p)
    with pytest.raises(ValueError, match=name):
        Trainer(cfg.replace(steps=3, out=str(out), resume=True))


def test_partial_last_metrics_line_is_dropped_on_resume(cfg, tmp_path):
    out = tmp_path / "r"
    c = cfg.replace(steps=3, out=str(out), checkpoint_every=1)
    _killed(c, 2, checkpoint_at=(1,))
    for name in ("metrics.jsonl", "metrics.csv"):
        p = out / name
        p.write_text(p.read_text()[:-7])                         # killed while writing the row of step 2
    tr = Trainer(c.replace(resume=True))
    assert tr.step_count == 1 and len(tr.rows) == 1
    tr.run()
    assert pd.read_csv(out / "metrics.csv")["step"].tolist() == [1, 2, 3]
    assert [json.loads(x)["step"] for x in (out / "metrics.jsonl").read_text().splitlines()] == [1, 2, 3]


def test_corrupt_warm_start_cache_entry_is_rebuilt(cfg, tmp_path):
    c = cfg.replace(cache_dir=str(tmp_path / "cache"))
    w0 = _weights(Trainer(c))
    (entry,) = (tmp_path / "cache").glob("warmstart-*")
    _truncate(entry / "model.safetensors")
    with pytest.warns(UserWarning, match="rebuil"):
        tr = Trainer(c)
    assert tr.warmstart_info["cached"] is False
    assert all(torch.equal(w0[n], p) for n, p in _weights(tr).items())
    assert Trainer(c).warmstart_info["cached"] is True


# -- 7. one run per folder ----------------------------------------------------------------------
def test_second_run_on_a_locked_folder_is_refused(cfg, tmp_path):
    out = tmp_path / "r"
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        out.mkdir()
        (out / ".lock").write_text(json.dumps({"pid": other.pid, "host": os.uname().nodename}))
        with pytest.raises(ValueError, match=rf"in use by process {other.pid}"):
            Trainer(cfg.replace(steps=2, out=str(out)))
    finally:
        other.kill()
        other.wait()
    # the same lock, now stale (its process is gone), is taken over
    with pytest.warns(UserWarning, match="stale"):
        tr = Trainer(cfg.replace(steps=1, out=str(out)))
    assert json.loads((out / ".lock").read_text())["pid"] == os.getpid()
    tr.run()
    assert not (out / ".lock").exists()                            # released at the end of the run


# -- 8. no network unless asked -----------------------------------------------------------------
def test_missing_local_model_path_never_reaches_the_hub(monkeypatch, tmp_path):
    import transformers

    from grpo_lab.lm.model import load_model

    def forbidden(*a, **k):
        raise AssertionError("from_pretrained was called: the network would be used")

    monkeypatch.setattr(transformers.AutoTokenizer, "from_pretrained", forbidden)
    monkeypatch.setattr(transformers.AutoModelForCausalLM, "from_pretrained", forbidden)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match=r"'runs/mymodel' does not exist.*hub"):
        load_model("runs/mymodel")
    assert GRPOConfig().hub is False


# -- 11. resume and range messages --------------------------------------------------------------
def test_resume_reports_every_changed_field(cfg, tmp_path):
    out = tmp_path / "r"
    train(cfg.replace(steps=1, out=str(out)))
    with pytest.raises(ValueError) as e:
        Trainer(cfg.replace(steps=2, out=str(out), resume=True, beta=0.1, lr=3e-4, G=2))
    msg = str(e.value)
    assert all(f in msg for f in ("beta", "lr", "G")), msg


def test_steps_below_what_the_run_has_done(cfg, tmp_path):
    out = tmp_path / "r"
    train(cfg.replace(steps=3, out=str(out)))
    with pytest.raises(ValueError, match=r"already done 3 steps"):
        Trainer(cfg.replace(steps=2, out=str(out), resume=True))


@pytest.mark.parametrize("field, value", [("lr", 1000.0), ("beta", 50.0), ("temperature", 20.0)])
def test_values_far_outside_sane_ranges_warn(cfg, field, value):
    with pytest.warns(UserWarning, match=field):
        Trainer(cfg.replace(**{field: value}))


def test_sane_values_do_not_warn(cfg):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Trainer(cfg)


# -- 12. leftovers and durability ---------------------------------------------------------------
def test_stale_tmp_checkpoints_are_removed(cfg, tmp_path):
    out = tmp_path / "r"
    train(cfg.replace(steps=2, out=str(out)))
    stale = out / "checkpoints" / ".tmp_step_000007"
    stale.mkdir()
    (stale / "model.safetensors").write_bytes(b"half")
    Trainer(cfg.replace(steps=3, out=str(out), resume=True)).run()
    assert not list((out / "checkpoints").glob(".tmp_*"))


def test_checkpoint_files_and_folder_are_fsynced_before_the_rename(cfg, tmp_path, monkeypatch):
    tr = Trainer(cfg.replace(steps=1, out=str(tmp_path / "r")))
    tr.step()
    synced, real_fsync, real_replace = [], os.fsync, os.replace

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real_fsync(fd)

    def replace(a, b):
        names = {Path(s).name for s in synced}
        assert {"model.safetensors", "optimizer.pt", "state.json"} <= names, names
        assert str(Path(a)) in synced                              # the folder itself
        return real_replace(a, b)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    tr.save_checkpoint()
    assert str(tmp_path / "r" / "checkpoints") in synced           # the parent, after the rename


# -- kill anywhere: a SIGKILLed process, resumed, repeats the uninterrupted run bit for bit -----------
CHILD = """
import json, os, signal, sys
from grpo_lab.lm import checkpoint as ckpt
from grpo_lab.lm.config import GRPOConfig
from grpo_lab.lm.trainer import Trainer
cfg = GRPOConfig.from_dict(json.loads(sys.argv[1]))
where, at = sys.argv[2], int(sys.argv[3])
die = lambda: os.kill(os.getpid(), signal.SIGKILL)
if where == "after_step":            # killed between steps, after the metrics row of step `at`
    Trainer(cfg, callback=lambda tr, row: die() if row["step"] == at else None).run()
else:                                # killed inside the checkpoint write of step `at`, files half-synced
    real = ckpt.fsync_tree
    def fsync_tree(folder):
        if folder.name == f".tmp_step_{at:06d}":
            die()
        real(folder)
    ckpt.fsync_tree = fsync_tree
    Trainer(cfg).run()
"""


def _kill_child(cfg, where, at):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[1]),
                                                        os.environ.get("PYTHONPATH", "")]),
           "OMP_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, "-c", CHILD, json.dumps(cfg.to_dict()), where, str(at)], env=env,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == -9, p.stderr[-2000:]                  # it really was SIGKILLed


def _final_weights(out):
    from safetensors.torch import load_file

    return load_file(str(ckpt_dir(out)[-1] / "model.safetensors"))


def ckpt_dir(out):
    return sorted((Path(out) / "checkpoints").glob("step_*"))


@pytest.fixture(scope="module")
def uninterrupted(cache, tmp_path_factory):
    out = tmp_path_factory.mktemp("full") / "run"
    c = GRPOConfig.preset("grpo", cache_dir=cache, steps=5, out=str(out), checkpoint_every=2, **TINY)
    return c, train(c), _final_weights(out)


@pytest.mark.parametrize("where, at, checkpoint_every", [
    ("after_step", 3, 0),            # before the first checkpoint (only at the end): restart from the warm start
    ("after_step", 3, 2),            # between checkpoints: resume from step 2
    ("in_checkpoint", 4, 2),         # inside the write of checkpoint 4: its .tmp folder is left half-synced
])
def test_sigkill_anywhere_then_resume_is_bit_identical(uninterrupted, tmp_path, where, at, checkpoint_every):
    full_cfg, full_df, full_w = uninterrupted
    c = full_cfg.replace(out=str(tmp_path / "run"), checkpoint_every=checkpoint_every, checkpoint_seconds=0.0)
    _kill_child(c, where, at)
    assert (tmp_path / "run" / ".lock").exists()                 # a killed process leaves its lock behind
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)             # "taking over the stale lock …"
        tr = Trainer(c.replace(resume=True))
    assert tr.step_count == (0 if checkpoint_every == 0 else 2)
    df = tr.run()
    _same_run(full_df, df)
    w = _final_weights(tmp_path / "run")
    assert all(torch.equal(full_w[k], w[k]) for k in full_w)
    assert pd.read_csv(tmp_path / "run" / "metrics.csv")["step"].tolist() == [1, 2, 3, 4, 5]
    assert not list((tmp_path / "run" / "checkpoints").glob(".tmp_*"))


def test_the_divergence_guard_also_guards_a_microbatched_run(cfg, tmp_path):
    from grpo_lab.lm.trainer import TrainingDiverged

    c = cfg.replace(steps=6, out=str(tmp_path / "r"), lr=1e30, mu=2, checkpoint_every=1, lr_warmup=0,
                    tokens_per_microbatch=1)
    with pytest.warns(UserWarning, match="lr"), pytest.raises(TrainingDiverged, match=r"diverged at step \d+"):
        Trainer(c).run()
