"""python -m grpo_lab train: runs, documents every flag, and fails clearly on bad input."""
import json

import pandas as pd
import pytest

from grpo_lab.__main__ import main as grpo_main
from grpo_lab.lm.cli import build_parser, main

FAST = ["--warmstart-steps", "0", "--prompts", "2", "--G", "2", "--max-new", "4", "--levels", "1",
        "--no-progress", "--threads", "1", "--device", "cpu"]


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("GRPO_LAB_CACHE", str(tmp_path / "cache"))


def test_cli_runs_two_steps(tmp_path, capsys):
    out = tmp_path / "run"
    assert grpo_main(["train", "--preset", "grpo", "--steps", "2", "--out", str(out), "--seed", "3"] + FAST) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["steps"] == 2 and 0 <= summary["heldout_acc_after"] <= 1
    assert pd.read_csv(out / "metrics.csv")["step"].tolist() == [1, 2]
    assert json.loads((out / "config.json").read_text())["seed"] == 3


def test_cli_resume_continues(tmp_path, capsys):
    out = str(tmp_path / "run")
    assert main(["--preset", "dr_grpo", "--steps", "1", "--out", out] + FAST) == 0
    assert main(["--preset", "dr_grpo", "--steps", "2", "--out", out, "--resume"] + FAST) == 0
    assert pd.read_csv(tmp_path / "run" / "metrics.csv")["step"].tolist() == [1, 2]


def test_help_explains_every_flag(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    text = capsys.readouterr().out
    for action in build_parser()._actions:
        assert action.help, action.dest
    for flag in ("--preset", "--steps", "--out", "--model", "--device", "--resume", "--seed"):
        assert flag in text
    assert "dapo" in text and "auto" in text


@pytest.mark.parametrize("argv, message", [
    (["--preset", "ppo", "--steps", "2", "--out", "x"], "invalid choice: 'ppo'"),
    (["--preset", "grpo", "--steps", "2", "--out", "x", "--G", "1"], "G must be >= 2"),
    (["--preset", "grpo", "--steps", "2", "--out", "x", "--model", "/no/such/dir"], "does not exist"),
    (["--preset", "grpo", "--steps", "2", "--out", "x", "--levels", "1,9"], "levels"),
])
def test_bad_input_gives_a_clear_error(argv, message, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_diverged_run_is_one_line_and_exit_1(tmp_path, capsys):
    out = str(tmp_path / "run")
    with pytest.warns(UserWarning, match="--lr"):
        code = main(["--preset", "grpo", "--steps", "4", "--out", out, "--lr", "1e30", "--mu", "2",
                     "--checkpoint-every", "1"] + FAST + ["--warmstart-steps", "20", "--G", "4", "--prompts", "4"])
    assert code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "training diverged at step" in err[0] and "Traceback" not in err[0]


def test_ctrl_c_says_how_to_continue(tmp_path, capsys, monkeypatch):
    from grpo_lab.lm import trainer as T

    def interrupted(self):
        raise KeyboardInterrupt

    monkeypatch.setattr(T.Trainer, "step", interrupted)
    assert main(["--preset", "grpo", "--steps", "2", "--out", str(tmp_path / "run")] + FAST) == 130
    assert "--resume" in capsys.readouterr().err
