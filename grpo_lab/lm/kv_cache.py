"""The key/value cache of :mod:`grpo_lab.lm.rollout`, across transformers versions.

* :func:`cache_kw`, :func:`new_cache`: the cache argument's name (``past_key_values`` in 4.x and
  early 5.x, ``cache`` in 5.24) and the cache's constructor differ between transformers versions;
  these hide that.
* :class:`RoomLayer`, :func:`decoding_cache`: a decoding cache whose buffers have room for the
  whole reply, so a token is written in place instead of copying the cache.
* :func:`cache_rows`: the shared prompt cache selected for some rows (a length bucket).
"""
from __future__ import annotations

import inspect

import torch
from transformers import DynamicCache

Tensor = torch.Tensor

_CACHE_ARG: dict[type, str] = {}   # transformers model class -> "cache" or "past_key_values"


def base_model(model):
    """The transformers model under a peft wrapper (LoRA, :mod:`grpo_lab.lm.lora`), else ``model``."""
    get = getattr(model, "get_base_model", None)
    return get() if callable(get) else model


def cache_kw(model, cache) -> dict:
    """``{name: cache, "use_cache": True}`` with the name this model's ``forward`` takes."""
    cls = type(base_model(model))                    # a peft wrapper's name depends on the model under it
    if cls not in _CACHE_ARG:
        params = inspect.signature(base_model(model).forward).parameters
        _CACHE_ARG[cls] = "cache" if "cache" in params else "past_key_values"
    return {_CACHE_ARG[cls]: cache, "use_cache": True}


def new_cache(model):
    """An empty :class:`DynamicCache` (older transformers take no ``config``)."""
    try:
        return DynamicCache(config=model.config)
    except TypeError:  # older transformers
        return DynamicCache()


try:
    from transformers.cache_utils import DynamicLayer
except ImportError:   # a transformers without per-layer caches: decoding keeps the default cache
    DynamicLayer = None

if DynamicLayer is not None:
    class RoomLayer(DynamicLayer):
        """A :class:`DynamicLayer` whose keys and values sit in a buffer with ``room`` spare positions.

        ``DynamicLayer.update`` appends by ``torch.cat``, which copies the whole cache at every
        token: on SmolLM2-135M (30 layers, 16 responses × 40 tokens; one machine, a 2-core Intel Xeon
        without AMX, one thread) ``cat`` was 18–23 % of the profiled decoding time; with this layer
        decoding took 6–8 % less wall time (two runs).
        Here a token is written in place and ``keys``/``values`` are views of the filled part
        (the same values, so the same attention). A batch operation (repeat, select) leaves a
        plain tensor; the next update moves it into a new buffer, one copy. Only what
        :func:`grpo_lab.lm.rollout.sample` calls is handled: beam search's ``reorder_cache``, and
        ``reset`` followed by another batch size, are not.
        """

        _layer_type = None                       # never registered as transformers' default layer

        def __init__(self, room: int):
            super().__init__()
            self.room = room
            self._k = self._v = None             # (b, heads, capacity, head_dim) buffers, or None

        def update(self, key_states, value_states, *args, **kwargs):
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            n = self.get_seq_length()
            m = n + key_states.shape[-2]
            if self._k is None or m > self._k.shape[-2]:
                shape = (*key_states.shape[:-2], m + self.room, key_states.shape[-1])
                k, v = key_states.new_empty(shape), value_states.new_empty(shape)
                if n:
                    k[..., :n, :], v[..., :n, :] = self.keys, self.values
                self._k, self._v = k, v
            self._k[..., n:m, :], self._v[..., n:m, :] = key_states, value_states
            self.keys, self.values = self._k[..., :m, :], self._v[..., :m, :]
            return self.keys, self.values

        def batch_repeat_interleave(self, repeats: int) -> None:
            super().batch_repeat_interleave(repeats)
            self._k = self._v = None

        def batch_select_indices(self, indices) -> None:
            super().batch_select_indices(indices)
            self._k = self._v = None


def decoding_cache(model, room: int):
    """The KV cache for decoding ``room`` more tokens: in-place appends where transformers allows."""
    cache = new_cache(model)
    layers = getattr(cache, "layers", None)
    if DynamicLayer is not None and isinstance(layers, list):
        cache.layers = [RoomLayer(room) if type(layer) is DynamicLayer else layer for layer in layers]
    return cache


def cache_rows(model, cache, rows: Tensor, *, last: bool):
    """The prefix cache for ``rows`` (one prompt index per row); ``last``: the cache itself may be used up.

    Without a prefix (one-token prompts) the cache is empty: a new one per forward.
    """
    if cache.get_seq_length() == 0:
        return new_cache(model) if not last else cache
    if last:
        cache.batch_select_indices(rows)                                       # (P, …) -> (n, …)
        return cache
    data = [(layer.keys[rows], layer.values[rows]) for layer in cache.layers]
    try:
        return DynamicCache(ddp_cache_data=data, config=model.config)
    except TypeError:
        return DynamicCache(ddp_cache_data=data)
