"""Issue 25, items 1–2: a run never deletes or overwrites what it did not write.

A run folder carries a marker only grpo_lab writes (``.grpo_lab_run.json``, with a format
version and the list of files the run wrote); a non-empty folder without it is refused before
anything is written, and a restart deletes only what the marker lists. The first three tests
reproduce the issue exactly and failed before the marker existed.
"""
import json
import os
import shutil
import warnings
from pathlib import Path

import pytest

from grpo_lab.lm import runfolder
from grpo_lab.lm.cli import main as cli_main
from grpo_lab.lm.trainer import Trainer, train

from tiny_run import TINY, cache, cfg  # noqa: E402,F401  (shared settings and fixtures)

FAST = ["--warmstart-steps", "0", "--prompts", "2", "--G", "2", "--max-new", "4", "--levels", "1",
        "--no-progress", "--threads", "1", "--device", "cpu"]


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def _students_folder(tmp_path) -> Path:
    """The issue's reproduction: a folder with ref/notes.txt, a metrics.csv and an eval_before.json of one's own."""
    f = tmp_path / "mine"
    (f / "ref").mkdir(parents=True)
    (f / "ref" / "notes.txt").write_text("my notes\n")
    (f / "metrics.csv").write_text("step,score\n1,0.5\n")
    (f / "eval_before.json").write_text('{"mine": true}')
    return f


def test_resume_on_a_folder_that_is_not_a_run_deletes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("GRPO_LAB_CACHE", str(tmp_path / "cache"))
    f = _students_folder(tmp_path)
    before = _snapshot(f)
    with pytest.raises(SystemExit) as e:
        cli_main(["--steps", "2", "--out", str(f), "--resume"] + FAST)
    assert e.value.code != 0
    err = capsys.readouterr().err
    assert "not a grpo_lab run folder" in err and "metrics.csv" in err and "ref/" in err and "--out" in err
    assert _snapshot(f) == before                              # notes.txt and the rest untouched
    assert sorted(p.name for p in f.iterdir()) == ["eval_before.json", "metrics.csv", "ref"]   # no lock, no marker


def test_a_run_never_writes_into_a_folder_holding_someone_elses_config(cfg, tmp_path):
    f = tmp_path / "project"
    f.mkdir()
    (f / "config.json").write_text('{"my_setting": 1}')
    (f / "eval_after.json").write_text("{}")
    before = _snapshot(f)
    with pytest.raises(runfolder.NotARunFolder, match=r"config\.json.*eval_after\.json.*nothing was written"):
        Trainer(cfg.replace(steps=1, out=str(f)))
    assert _snapshot(f) == before and sorted(p.name for p in f.iterdir()) == ["config.json", "eval_after.json"]


def test_a_restart_deletes_only_what_the_run_wrote(cfg, tmp_path):
    """A run killed before its first checkpoint, then a file of one's own put into ref/: --resume
    restarts the run but keeps that file (and says why it cannot write ref/)."""
    out = tmp_path / "r"
    c = cfg.replace(steps=3, out=str(out))
    tr = Trainer(c)
    tr._append_metrics(tr.step())                               # one step, no checkpoint
    tr.close()
    (out / "ref" / "notes.txt").write_text("mine")
    (out / "plot.png").write_bytes(b"png")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)            # "kept ref/: it holds files this run did not write"
        with pytest.raises(ValueError, match=r"ref.*notes\.txt"):
            Trainer(c.replace(resume=True))
    assert (out / "ref" / "notes.txt").read_text() == "mine" and (out / "plot.png").read_bytes() == b"png"
    (out / "ref" / "notes.txt").unlink()
    Trainer(c.replace(resume=True)).run()                       # once it is moved, the restart works
    assert (out / "plot.png").read_bytes() == b"png"


def test_a_run_killed_after_writing_ref_but_before_its_first_step_restarts(cfg, tmp_path):
    """The capstone's rft_s0, killed between writing π_ref and step 1 (no metrics, no checkpoint):
    the restart writes π_ref again over the copy it recorded, instead of refusing its own folder."""
    out = tmp_path / "r"
    c = cfg.replace(steps=2, out=str(out))
    Trainer(c).close()                                          # config.json and ref/ written, no step
    assert (out / "ref" / "model.safetensors").exists() and not (out / "metrics.csv").exists()
    Trainer(c.replace(resume=True)).run()
    assert set(runfolder.written(out)) >= {"ref/model.safetensors", "metrics.csv", "eval_after.json"}
    (out / "ref" / "notes.txt").write_text("mine")              # a file of one's own in ref/ is still refused
    (out / "metrics.csv").unlink()
    shutil.rmtree(out / "checkpoints")
    with pytest.raises(ValueError, match=r"ref.*notes\.txt"):
        Trainer(c.replace(resume=True))
    assert (out / "ref" / "notes.txt").read_text() == "mine"


def test_the_marker_lists_every_file_the_run_wrote(cfg, tmp_path):
    out = tmp_path / "r"
    train(cfg.replace(steps=2, out=str(out)))
    marker = json.loads((out / runfolder.MARKER).read_text())
    assert marker["format"] == runfolder.FORMAT and marker["grpo_lab"]
    on_disk = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()
               and p.relative_to(out).parts[0] not in ("checkpoints", runfolder.MARKER)}
    assert on_disk == set(marker["written"])
    assert {"config.json", "metrics.csv", "metrics.jsonl", "eval_before.json", "eval_after.json",
            "ref/model.safetensors"} <= on_disk


def test_an_empty_folder_or_one_holding_only_a_lock_is_claimed(cfg, tmp_path):
    for name in ("empty", "locked"):
        f = tmp_path / name
        f.mkdir()
        if name == "locked":           # a stale lock of a process that is gone
            (f / ".lock").write_text(json.dumps({"pid": 2**22 + 17, "host": os.uname().nodename}))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            Trainer(cfg.replace(steps=1, out=str(f))).run()
        assert (f / runfolder.MARKER).is_file() and (f / "metrics.csv").is_file()


def test_a_marker_from_a_newer_format_or_a_broken_one_is_refused(cfg, tmp_path):
    f = tmp_path / "r"
    f.mkdir()
    (f / runfolder.MARKER).write_text(json.dumps({"format": runfolder.FORMAT + 1, "written": []}))
    with pytest.raises(runfolder.NotARunFolder, match="newer grpo_lab"):
        Trainer(cfg.replace(steps=1, out=str(f)))
    (f / runfolder.MARKER).write_text("{")
    with pytest.raises(runfolder.NotARunFolder, match="marker.*unreadable"):
        Trainer(cfg.replace(steps=1, out=str(f)))


def test_a_run_made_before_the_marker_is_adopted_only_on_resume(cfg, tmp_path):
    out = tmp_path / "r"
    train(cfg.replace(steps=1, out=str(out)))
    (out / runfolder.MARKER).unlink()                           # as an older grpo_lab left it
    with pytest.raises(runfolder.NotARunFolder):
        Trainer(cfg.replace(steps=2, out=str(out)))
    with pytest.warns(UserWarning, match="adopting"):
        tr = Trainer(cfg.replace(steps=2, out=str(out), resume=True))
    assert tr.step_count == 1
    tr.run()
    marker = json.loads((out / runfolder.MARKER).read_text())
    assert marker["adopted"] is True and {"config.json", "metrics.csv", "ref/model.safetensors"} <= set(marker["written"])


def test_two_processes_claiming_one_folder_create_one_marker(tmp_path, monkeypatch):
    f = tmp_path / "r"
    f.mkdir()
    real_link = os.link

    def link_after_the_other(src, dst):              # the other process creates the marker first
        (f / runfolder.MARKER).write_text(json.dumps({"format": 1, "written": ["config.json"], "other": True}))
        return real_link(src, dst)

    monkeypatch.setattr(os, "link", link_after_the_other)
    assert runfolder.claim(f, resume=False)["other"] is True
    assert json.loads((f / runfolder.MARKER).read_text())["other"] is True
    assert [p.name for p in f.iterdir()] == [runfolder.MARKER]          # no temporary left
