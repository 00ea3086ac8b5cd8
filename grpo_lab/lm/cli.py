"""``python -m grpo_lab train``: run GRPO on the tiny LM (or a local model) from the shell."""
from __future__ import annotations

import argparse
import json
import signal
import sys
import warnings

PROG = "python -m grpo_lab train"

DESCRIPTION = """\
Train a small causal LM with GRPO on verifiable addition problems (lecture notes 000 §5).
Writes OUT/metrics.csv and OUT/metrics.jsonl (one row per step), OUT/config.json,
OUT/eval_before.json / eval_after.json (held-out accuracy) and checkpoints under
OUT/checkpoints/. OUT must be new, empty or a run folder grpo_lab made (it carries
OUT/.grpo_lab_run.json): a folder of other files is refused, never overwritten. Runs offline on
a CPU in minutes; uses CUDA when available.
"""

EPILOG = """\
examples:
  python -m grpo_lab train --preset grpo --steps 200 --out runs/grpo
  python -m grpo_lab train --preset dapo --steps 200 --out runs/dapo --device cpu --seed 1
  python -m grpo_lab train --preset grpo --steps 400 --out runs/grpo --resume   # continue a killed run
  python -m grpo_lab train --preset grpo --steps 200 --out runs/clip --eps-high 0.28 --agg token-mean
  python -m grpo_lab train --model smollm2-135m --steps 2 --prompts 2 --G 4 --out runs/smol

Every GRPOConfig field is a flag; a flag that is not given keeps the preset's value.
"""


def model_defaults(model) -> dict:
    """The fields a short-named real model trains with when no flag sets them.

    For ``smollm2-135m``: the capstone's (notebook 08, :data:`grpo_lab.lm.real_runs.TRAIN`), namely its
    chat levels, its 64-token budget, its learning rate without warm-up, and the τ chosen from the
    probes (``grpo_lab/data/real_lm/choice.json``). The generic defaults (τ = 1.0, an 8-token budget,
    lr 1e-4) are the tiny model's, too short for an instruct model's replies. Other models: none.
    """
    from grpo_lab.lm import real_runs as R

    if model != R.MODEL:
        return {}
    choice = json.loads((R.data_dir() / "choice.json").read_text(encoding="utf-8"))
    return {"chat_levels": tuple(R.LEVELS), "max_new": R.TRAIN["max_new"], "temperature": float(choice["temperature"]),
            "lr": R.TRAIN["lr"], "lr_warmup": R.TRAIN["lr_warmup"]}


def model_defaults_help(model: str = "smollm2-135m") -> str:
    """The epilog's sentence on :func:`model_defaults` (its values, so help and code cannot disagree)."""
    from grpo_lab.lm.flags import flag_name

    shown = {k: ",".join(map(str, v)) if isinstance(v, tuple) else v for k, v in model_defaults(model).items()}
    flags = ", ".join(f"{flag_name(k)} {v}" for k, v in shown.items())
    return (f"--model {model} trains with the capstone's settings (notebook 08) unless a flag says\n"
            f"otherwise: {flags}.\n")


def apply_model_defaults(args: argparse.Namespace) -> argparse.Namespace:
    """Fill in :func:`model_defaults` for every field the command line left out (a given flag wins)."""
    for name, value in model_defaults(getattr(args, "model", None)).items():
        if not hasattr(args, name):          # an absent flag is absent from the namespace (argparse.SUPPRESS)
            setattr(args, name, value)
    return args


def build_parser() -> argparse.ArgumentParser:
    """The ``train`` parser: one flag per :class:`GRPOConfig` field (:mod:`grpo_lab.lm.flags`)."""
    from grpo_lab.lm.flags import add_config_flags

    ap = argparse.ArgumentParser(prog=PROG, description=DESCRIPTION, epilog=EPILOG + model_defaults_help(),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    return add_config_flags(ap, required=("steps", "out"))


def one_line_warning(message, category, filename, lineno, line=None) -> str:
    """Warnings on the command line: one line (the guard's messages name field and flag), not
    Python's file:line + source line."""
    return f"{PROG}: warning: {message}\n"


def main(argv=None) -> int:
    default_format = warnings.formatwarning
    warnings.formatwarning = one_line_warning
    try:
        return _main(argv)
    finally:
        warnings.formatwarning = default_format


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a batch scheduler's time limit), turned into an exception so that the
    run's ``finally`` blocks release its lock on the way out."""


def _on_sigterm(signum, frame):
    raise Terminated()


def _stopped(ap, e: KeyboardInterrupt, trainer) -> int:
    """One line for Ctrl-C / SIGTERM, never a traceback; exit 130 (SIGINT) or 143 (SIGTERM)."""
    how = "terminated (SIGTERM)" if isinstance(e, Terminated) else "interrupted"
    signal.signal(signal.SIGINT, signal.SIG_IGN)      # the way out is decided: a second Ctrl-C must not cut it short
    if trainer is None:
        print(f"{ap.prog}: {how} during start-up, before the first step; nothing was trained (run the same "
              f"command again; the warm start is cached once it has finished)", file=sys.stderr)
    else:
        print(f"{ap.prog}: {how} during step {trainer.step_count + 1}; continue with --resume "
              f"(from the last checkpoint)", file=sys.stderr)
    return 143 if isinstance(e, Terminated) else 130


def _main(argv) -> int:
    from grpo_lab.lm.flags import config_from_args, flag_message

    ap = build_parser()
    args = apply_model_defaults(ap.parse_args(sys.argv[1:] if argv is None else argv))
    cfg = config_from_args(ap, args)
    previous = _install_sigterm()
    trainer = None
    try:
        try:
            from grpo_lab.lm.trainer import Trainer

            trainer = Trainer(cfg)
        except (ValueError, TypeError) as e:
            ap.error(flag_message(str(e)))
        except OSError as e:                  # disk full, read-only folder: one line naming the path
            print(f"{ap.prog}: error: {e}", file=sys.stderr)
            return 1
        from grpo_lab.lm.trainer import TrainingDiverged

        try:
            df = trainer.run()
        except (TrainingDiverged, ValueError, OSError) as e:   # one clear line, not a traceback
            print(f"{ap.prog}: error: {flag_message(str(e))}", file=sys.stderr)
            return 1
    except KeyboardInterrupt as e:
        return _stopped(ap, e, trainer)
    finally:
        _restore_sigterm(previous)
    before, after = df.attrs["eval_before"]["greedy"], df.attrs["eval_after"]["greedy"]
    print(json.dumps({"steps": int(trainer.step_count), "out": cfg.out,
                      "heldout_acc_before": round(before["acc"], 4), "heldout_acc_after": round(after["acc"], 4),
                      "last_reward_mean": round(float(df["reward_mean"].iloc[-1]), 4) if len(df) else None}))
    return 0


def _install_sigterm():
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _on_sigterm)


def _restore_sigterm(previous) -> None:
    import signal

    if previous is not None:
        signal.signal(signal.SIGTERM, previous)


if __name__ == "__main__":
    sys.exit(main())
