"""Command-line flags generated from :class:`~grpo_lab.lm.config.GRPOConfig` (one per field).

Each field's help text lives with the field (``field(metadata={"help": ...})``); this module
turns the dataclass into ``argparse`` flags, so ``python -m grpo_lab train``, the benchmarks
(``benchmarks/_flags.py``) and ``examples/train_with_trl.py`` share one builder and cannot
drift from the config. Conventions:

* the flag is the field name with ``-`` for ``_`` (``--eps-high``), or the field's
  ``metadata["flag"]`` (``prompts_per_step`` is ``--prompts``); ``G`` stays ``--G``;
* bools are ``--x`` / ``--no-x``; optional numbers accept ``none``; tuples are
  comma-separated (``--levels 1,2``);
* a flag that is not given leaves the preset's value (its default is not in the namespace);
* errors name the flag, not the field: ``--prompts must be >= 2, got 0``.
"""
from __future__ import annotations

import argparse
import typing
from dataclasses import MISSING, fields

from grpo_lab.lm.config import GRPOConfig

_NONE = ("none", "None")


def flag_name(field_name: str) -> str:
    """``--prompts`` for ``prompts_per_step``, ``--eps-high`` for ``eps_high``."""
    f = _FIELDS[field_name]
    return "--" + f.metadata.get("flag", f.name.replace("_", "-"))


def _scalar(kind, optional: bool, label: str):
    def parse(text: str):
        if optional and text in _NONE:
            return None
        try:
            return kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected {label}{' or none' if optional else ''}, got {text!r}") from None
    parse.__name__ = label
    return parse


def _int_tuple(text: str) -> tuple:
    try:
        out = tuple(int(x) for x in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers such as 1,2; got {text!r}") from None
    return out


def _kind(f):
    """(argparse type or "bool", optional?) from the field's annotation."""
    hint = _HINTS[f.name]
    args = typing.get_args(hint)
    optional = type(None) in args
    base = next((a for a in args if a is not type(None)), hint) if args else hint
    if base is tuple or typing.get_origin(base) is tuple:
        return _int_tuple, optional
    if base is bool:
        return "bool", optional
    label = {int: "an integer", float: "a number", str: "a string"}[base]
    return _scalar(base, optional, label), optional


def add_config_flags(ap: argparse.ArgumentParser, *, include=None, exclude=(), defaults: dict | None = None,
                     required=(), title: str = "GRPOConfig fields") -> argparse.ArgumentParser:
    """Add one flag per :class:`GRPOConfig` field to ``ap`` (all of them unless ``include``).

    ``defaults`` (field -> value) are set on the parser (a benchmark's own defaults);
    without one, an absent flag is absent from the namespace and the preset's value stays.
    ``required`` fields must be given. Returns ``ap``; :func:`overrides` reads the values back.
    """
    defaults = dict(defaults or {})
    unknown = sorted((set(defaults) | set(required) | set(include or ()) | set(exclude)) - set(_FIELDS))
    if unknown:
        raise ValueError(f"unknown GRPOConfig field(s) {unknown}")
    group = ap.add_argument_group(title)
    dests = getattr(ap, "_grpo_fields", {})
    for f in fields(GRPOConfig):
        if (include is not None and f.name not in include) or f.name in exclude:
            continue
        kind, optional = _kind(f)
        help_text = f.metadata.get("help", "")
        default = defaults.get(f.name, f.default if f.default is not MISSING else None)
        if f.name in defaults:
            help_text += f" (default: {_show(default)})"
        elif f.name in _METHOD_FIELDS:
            help_text += f" (default: the preset's; grpo: {_show(GRPOConfig.PRESETS['grpo'][f.name])})"
        elif f.name not in required:
            help_text += f" (default: {_show(default)})"
        kw = dict(dest=f.name, help=help_text.replace("%", "%%"), required=f.name in required,
                  default=defaults[f.name] if f.name in defaults else argparse.SUPPRESS)
        if kind == "bool":
            kw["action"] = argparse.BooleanOptionalAction
        else:
            kw["type"] = kind
            choices = f.metadata.get("choices")
            if choices is not None and kind is not _int_tuple:
                kw["choices"] = tuple(choices)
            kw["metavar"] = f.name.upper() if choices is None or kind is _int_tuple else None
        group.add_argument(flag_name(f.name), **kw)
        dests[f.name] = flag_name(f.name)
    ap._grpo_fields = dests
    return ap


def _show(v) -> str:
    if isinstance(v, tuple):
        return ",".join(map(str, v))
    return "none" if v is None else str(v)


def overrides(args: argparse.Namespace, ap: argparse.ArgumentParser | None = None) -> dict:
    """The :class:`GRPOConfig` fields given on the command line (or defaulted by the parser).

    With ``ap``, only the fields :func:`add_config_flags` added to it (a script's own flag of
    the same name, e.g. the TRL example's ``--out``, is not a config field).
    """
    names = getattr(ap, "_grpo_fields", _FIELDS) if ap is not None else _FIELDS
    return {name: getattr(args, name) for name in names if hasattr(args, name)}


def flag_message(message: str) -> str:
    """Rewrite a config error that starts with a field name to start with its flag.

    ``"prompts_per_step must be >= 2, got 0"`` -> ``"--prompts must be >= 2, got 0"``.
    """
    for name in sorted(_FIELDS, key=len, reverse=True):
        if message.startswith(name + " ") or message.startswith(name + ":"):
            return flag_name(name) + message[len(name):]
    return message


def config_from_args(ap: argparse.ArgumentParser, args: argparse.Namespace, **fixed) -> GRPOConfig:
    """``GRPOConfig.preset(args.preset, **flags, **fixed)``; a bad value exits via ``ap.error``
    with a message that names the flag."""
    over = {**overrides(args, ap), **fixed}
    preset = over.pop("preset", "grpo")
    try:
        return GRPOConfig.preset(preset, **over)
    except (ValueError, TypeError) as e:
        ap.error(flag_message(str(e)))


_FIELDS = {f.name: f for f in fields(GRPOConfig)}
_HINTS = typing.get_type_hints(GRPOConfig)
_METHOD_FIELDS = frozenset(GRPOConfig.PRESETS["grpo"])

__all__ = ["add_config_flags", "overrides", "config_from_args", "flag_name", "flag_message"]
