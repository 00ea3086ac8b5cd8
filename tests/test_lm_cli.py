"""python -m grpo_lab train: runs, documents every flag, and fails clearly on bad input."""
import json

import pandas as pd
import pytest

from grpo_lab.__main__ import main as grpo_main
from grpo_lab.lm.cli import build_parser, main
from grpo_lab.lm.config import GRPOConfig

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


# -- the parser is generated from GRPOConfig ----------------------------------------------
def test_every_config_field_is_a_flag_with_its_help(capsys):
    from dataclasses import fields

    from grpo_lab.lm.config import GRPOConfig
    from grpo_lab.lm.flags import flag_name

    with pytest.raises(SystemExit):
        main(["--help"])
    text = capsys.readouterr().out
    for f in fields(GRPOConfig):
        assert flag_name(f.name) in text, f.name
        assert f.metadata.get("help"), f"{f.name} has no help text"
    for flag in ("--prompts", "--G", "--warmstart-steps", "--no-progress", "--eps-high", "--agg", "--ratio-level",
                 "--adv-std", "--kl-kind", "--dual-clip", "--temperature", "--no-dedup", "--arch"):
        assert flag in text, flag


def test_flags_reach_the_config():
    from grpo_lab.lm.flags import config_from_args

    ap = build_parser()
    args = ap.parse_args(["--preset", "dapo", "--steps", "3", "--out", "x", "--eps-high", "0.3", "--agg", "seq-mean-token-mean",
                          "--no-dedup", "--levels", "1,3", "--dual-clip", "3", "--kv-heads", "none", "--prompts", "6"])
    cfg = config_from_args(ap, args)
    assert (cfg.eps_high, cfg.agg, cfg.dedup, cfg.levels, cfg.dual_clip, cfg.kv_heads, cfg.prompts_per_step) == \
        (0.3, "seq-mean-token-mean", False, (1, 3), 3.0, None, 6)
    assert cfg.dynamic_sampling and cfg.overlong_buffer == 2          # not given: the preset's value
    plain = config_from_args(ap, ap.parse_args(["--preset", "gspo", "--steps", "1", "--out", "x"]))
    assert (plain.eps_low, plain.eps_high, plain.ratio_level) == (3e-4, 4e-4, "sequence")


@pytest.mark.parametrize("argv, message", [
    (["--prompts", "0"], "--prompts must be >= 2, got 0"),                 # issue 16 item 11: the flag, not the field
    (["--levels", "a,b"], "argument --levels: expected comma-separated integers such as 1,2; got 'a,b'"),
    (["--eps-low", "2"], "--eps-low must be <= 1.0"),
    (["--G", "two"], "argument --G: expected an integer"),
    (["--eps-high", "wide"], "argument --eps-high: expected a number or none"),
    (["--agg", "mean"], "argument --agg: invalid choice: 'mean'"),
    (["--overlong-buffer", "9", "--max-new", "4"], "--overlong-buffer must be <= 4"),
])
def test_errors_name_the_flag(argv, message, capsys):
    with pytest.raises(SystemExit) as e:
        main(["--preset", "grpo", "--steps", "1", "--out", "x"] + argv)
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert message in err
    assert "prompts_per_step" not in err and "overlong_buffer must" not in err


def test_benchmarks_and_the_trl_example_use_the_same_builder():
    import importlib.util
    import sys
    from dataclasses import fields
    from pathlib import Path

    from grpo_lab.lm.config import GRPOConfig

    root = Path(__file__).resolve().parents[1]
    sys.path.insert(0, str(root / "benchmarks"))
    try:
        from _flags import comparison_parser
    finally:
        sys.path.remove(str(root / "benchmarks"))
    spec = importlib.util.spec_from_file_location("train_with_trl", root / "examples" / "train_with_trl.py")
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    every = {f.name for f in fields(GRPOConfig)}
    assert set(comparison_parser("x")._grpo_fields) == every - {"steps"}     # --steps counts timed steps there
    assert set(example.build_parser()._grpo_fields) == every - {"out"}        # --out is TRL's output folder
    assert set(build_parser()._grpo_fields) == every


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


def test_warnings_are_one_line_naming_the_flag():
    from grpo_lab.lm.cli import one_line_warning

    from grpo_lab.lm import guard

    (message,) = guard.sanity_warnings(GRPOConfig.preset("grpo", lr=1000.0))
    text = one_line_warning(UserWarning(message), UserWarning, "guard.py", 12)
    assert text.count("\n") == 1 and text.startswith("python -m grpo_lab train: warning:")
    assert "--lr" in text and "guard.py" not in text


def _cli_config(*flags):
    from grpo_lab.lm.cli import apply_model_defaults
    from grpo_lab.lm.flags import config_from_args

    ap = build_parser()
    return config_from_args(ap, apply_model_defaults(ap.parse_args(["--steps", "2", "--out", "x", *flags])))


def test_smollm2_trains_with_the_capstone_settings_unless_a_flag_says_otherwise():
    from grpo_lab.lm import real_runs as R
    from grpo_lab.lm.cli import model_defaults, model_defaults_help

    c = _cli_config("--model", R.MODEL)
    assert (c.temperature, c.chat_levels, c.max_new, c.lr, c.lr_warmup) == (0.7, (2, 3), 64, 2e-5, 0)
    assert (c.chat_levels, c.max_new, c.lr) == (R.LEVELS, R.TRAIN["max_new"], R.TRAIN["lr"])      # notebook 08's run
    assert c.temperature == json.loads((R.data_dir() / "choice.json").read_text())["temperature"]  # the τ it chose
    given = _cli_config("--model", R.MODEL, "--temperature", "1.0", "--max-new", "32", "--chat-levels", "1,2",
                        "--lr", "1e-4", "--lr-warmup", "3")
    assert (given.temperature, given.max_new, given.chat_levels, given.lr, given.lr_warmup) == (1.0, 32, (1, 2), 1e-4, 3)
    tiny, default = _cli_config(), GRPOConfig()
    assert (tiny.temperature, tiny.max_new, tiny.chat_levels, tiny.lr) == (default.temperature, default.max_new,
                                                                           default.chat_levels, default.lr)
    assert model_defaults("/a/local/folder") == {} and model_defaults(None) == {}
    assert model_defaults_help() in build_parser().format_help()
    assert "--chat-levels 2,3, --max-new 64, --temperature 0.7, --lr 2e-05, --lr-warmup 0" in model_defaults_help()


def test_main_passes_the_model_defaults_to_the_trainer(monkeypatch, capsys):
    import grpo_lab.lm.trainer as T

    seen = []

    class Refuse:
        def __init__(self, cfg):
            seen.append(cfg)
            raise OSError("stop before loading the model")

    monkeypatch.setattr(T, "Trainer", Refuse)
    assert main(["--model", "smollm2-135m", "--steps", "2", "--out", "x", "--max-new", "80"]) == 1
    assert (seen[0].temperature, seen[0].max_new, seen[0].chat_levels) == (0.7, 80, (2, 3))
    assert "stop before loading the model" in capsys.readouterr().err
