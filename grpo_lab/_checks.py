"""Input validation shared by every module.

Each helper raises a ``ValueError`` (or ``TypeError``) whose message names the argument
and says what was expected, so that a student who passes the wrong thing learns why.
"""
from __future__ import annotations

import math
from typing import Iterable

import numpy as np


def finite_float(name: str, value) -> float:
    """``value`` as a float; raises if it is not a finite real number.

    Strings (``"0.5"``), bytes, bools and ``None`` are refused rather than converted: a
    string or a bool where a number belongs is almost always a mistake upstream.
    """
    if isinstance(value, (str, bytes, bool, np.bool_)) or value is None:
        raise TypeError(f"{name} must be a real number, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a real number, got {value!r}") from None
    if not math.isfinite(x):
        raise ValueError(f"{name} must be finite, got {x}")
    return x


def in_range(name: str, value, low=None, high=None, *, low_open=False, high_open=False) -> float:
    """A finite float in [low, high] (ends open where asked)."""
    x = finite_float(name, value)
    if low is not None and (x < low or (low_open and x == low)):
        raise ValueError(f"{name} must be {'>' if low_open else '>='} {low}, got {x}")
    if high is not None and (x > high or (high_open and x == high)):
        raise ValueError(f"{name} must be {'<' if high_open else '<='} {high}, got {x}")
    return x


def integer(name: str, value, low=None, high=None) -> int:
    """An int in [low, high]; bools and non-integral floats are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        if isinstance(value, (float, np.floating)) and float(value).is_integer():
            value = int(value)
        else:
            raise TypeError(f"{name} must be an integer, got {value!r}")
    value = int(value)
    if low is not None and value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    if high is not None and value > high:
        raise ValueError(f"{name} must be <= {high}, got {value}")
    return value


def choice(name: str, value, options: Iterable[str]) -> str:
    """``value`` if it is one of ``options``; else an error listing them."""
    options = tuple(options)
    if value not in options:
        raise ValueError(f"{name} must be one of {', '.join(map(repr, options))}; got {value!r}")
    return value


def finite_array(name: str, value, *, ndim=None, min_size: int = 1, dtype=float) -> np.ndarray:
    """A finite numpy array of the given number of dimensions.

    Refused with a message naming ``name``: ``None``, strings and arrays of strings or
    objects (``["1", "0"]`` is not converted), and numpy masked arrays (their mask would
    be ignored; fill or drop the masked entries first), and a lone bool. Bool arrays count as 0/1.
    """
    if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
        raise TypeError(f"{name} must be an array of numbers, got {value!r}")
    if isinstance(value, np.ma.MaskedArray):
        raise ValueError(f"{name} is a masked array, whose mask would be ignored; pass plain values "
                         f"(np.ma.compressed(x) drops the masked entries, x.filled(v) fills them)")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of numbers, got {type(value).__name__}") from None
    if raw.dtype.kind not in "biuf":
        raise TypeError(f"{name} must be an array of numbers, got an array of {raw.dtype} "
                        f"(e.g. strings or None: convert them to numbers first)")
    try:
        arr = np.asarray(raw, dtype=dtype)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be an array of numbers, got {type(value).__name__}") from None
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(f"{d}-d" for d in allowed)
            raise ValueError(f"{name} must be {want}, got shape {arr.shape}")
    if arr.size < min_size:
        raise ValueError(f"{name} must hold at least {min_size} value(s), got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr
