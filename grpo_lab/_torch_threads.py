"""Run tiny torch computations on one intra-op thread.

Measured on the course machine (2 cores shared with other processes): ``log_softmax`` +
backward on an (8, 6) tensor takes ≈ 0.03 ms with one thread and 5–20 ms with two, because
the thread pool's barrier waits for a core. The toys behind the widget panels are tiny, so
they switch to one thread for their duration and restore the previous setting afterwards.
"""
from __future__ import annotations

import contextlib

import torch


@contextlib.contextmanager
def single_thread():
    n = torch.get_num_threads()
    if n == 1:
        yield
        return
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(n)
