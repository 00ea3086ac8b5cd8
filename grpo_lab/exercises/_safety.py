"""What keeps :func:`grpo_lab.exercises.check` from ever raising or hanging on a student's answer.

* :func:`time_limit` stops a student's function after :data:`TIMEOUT_S` seconds (an infinite
  loop), with ``SIGALRM`` where the check runs in the main thread of a Unix process — a Jupyter
  kernel does; elsewhere (Windows, a worker thread) the call is not bounded.
* :func:`to_float_array` reads any answer as float64 numbers or raises ``TypeError``/``ValueError``
  (never ``RuntimeError`` for a tensor that requires grad, never "truth value … is ambiguous").
* :func:`changed` tells whether a student's function changed an argument in place.
* :func:`gradients` backpropagates a fixed random weighting of an output to chosen inputs.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

import numpy as np

TIMEOUT_S = 3.0          # seconds a student's function may run in one check (all its inputs together)


class CheckTimeout(BaseException):
    """Raised inside a student's function when the time limit is up (a BaseException, so that a
    student's ``except Exception:`` cannot swallow it)."""


def _is_torch(x) -> bool:
    return type(x).__module__.split(".")[0] == "torch"


@contextmanager
def time_limit(seconds: float | None = None):
    """Raise :class:`CheckTimeout` in the block after ``seconds`` (default :data:`TIMEOUT_S`)."""
    seconds = TIMEOUT_S if seconds is None else seconds
    usable = hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    if not usable:
        yield
        return

    def _stop(signum, frame):
        raise CheckTimeout()

    old = signal.signal(signal.SIGALRM, _stop)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def to_float_array(x) -> np.ndarray:
    """``x`` as a float64 array; ``TypeError``/``ValueError`` (only) when it is not numbers."""
    if x is None or isinstance(x, (str, bytes, dict, set)):
        raise TypeError(f"not numbers: {type(x).__name__}")
    if _is_torch(x):
        try:
            return x.detach().cpu().double().numpy()
        except Exception as err:                       # a sparse or meta tensor, …
            raise TypeError(str(err)) from None
    if isinstance(x, (list, tuple)):
        parts = [to_float_array(v) for v in x]
        try:
            return np.asarray(parts, dtype=float)
        except Exception as err:                       # ragged lists
            raise ValueError(str(err)) from None
    try:
        arr = np.asarray(x, dtype=float)
    except Exception as err:                           # generators, objects, overflow …
        raise TypeError(str(err)) from None
    return arr


def changed(before, after) -> bool:
    """True when ``after`` (the argument the function got) differs from ``before`` (its pristine copy)."""
    try:
        if _is_torch(before):
            return not (before.shape == after.shape and bool((before == after).logical_or(
                before.isnan() & after.isnan()).all()))
        if isinstance(before, np.ndarray):
            return not np.array_equal(before, after, equal_nan=before.dtype.kind in "fc")
        if isinstance(before, (list, tuple)):
            return len(before) != len(after) or any(changed(a, b) for a, b in zip(before, after))
        return bool(before != after) and not (before != before and after != after)   # NaN == NaN here
    except Exception:
        return True


def gradients(out, inputs, where=None):
    """∂(Σ W·out)/∂input for each of ``inputs``, W a fixed random weighting (0 outside ``where``)."""
    import torch

    if out.dim() == 0:
        total = out
    else:
        g = torch.Generator().manual_seed(19)
        w = torch.rand(out.shape, generator=g, dtype=torch.float64).to(out.dtype) + 0.5
        if where is not None:
            w = w * torch.as_tensor(np.asarray(where, dtype=float), dtype=out.dtype)
        total = (out * w).sum()
    grads = torch.autograd.grad(total, inputs, allow_unused=True)
    return [np.zeros(tuple(x.shape)) if gr is None else gr.detach().double().numpy() for gr, x in zip(grads, inputs)]
