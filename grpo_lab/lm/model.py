"""The policy: a tiny causal LM made from a ``transformers`` config, or any local model.

Default (:func:`make_model`): a Llama-architecture decoder with hidden size 128, MLP width 512,
4 layers, 4 heads and tied input/output embeddings — about 1.05 M parameters with the
character tokenizer — randomly initialised from a seed. ``arch="qwen2"`` gives the
Qwen2 variant (q/k/v biases). :func:`load_model` loads any local causal-LM directory (or,
with the explicit ``hub=True`` opt-in, a Hub id) with its tokenizer; ``trust_remote_code`` stays off, so only
architectures that ship with ``transformers`` load. Weights are written as safetensors.
"""
from __future__ import annotations

import contextlib
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM, LlamaConfig, Qwen2Config

from grpo_lab import _checks
from grpo_lab.lm.tokenizer import check_tokenizer

# architecture name (grpo_lab.lm.config.ARCHS, GRPOConfig.arch) -> its transformers config
ARCH_CONFIGS = {"llama": LlamaConfig, "qwen2": Qwen2Config}


def tiny_config(tok, *, arch="llama", hidden=128, intermediate=512, layers=4, heads=4,
                kv_heads=None, max_positions=64, tie=True):
    """A small ``LlamaConfig`` / ``Qwen2Config`` sized for ``tok``'s vocabulary."""
    arch = _checks.choice("arch", arch, ARCH_CONFIGS)
    hidden = _checks.integer("hidden", hidden, low=8)
    heads = _checks.integer("heads", heads, low=1)
    if hidden % heads or (hidden // heads) % 2:
        raise ValueError(f"hidden ({hidden}) must be a multiple of heads ({heads}) with an even head size")
    kv_heads = heads if kv_heads is None else _checks.integer("kv_heads", kv_heads, low=1)
    if heads % kv_heads:
        raise ValueError(f"heads ({heads}) must be a multiple of kv_heads ({kv_heads})")
    check_tokenizer(tok)
    return ARCH_CONFIGS[arch](
        vocab_size=len(tok), hidden_size=hidden,
        intermediate_size=_checks.integer("intermediate", intermediate, low=1),
        num_hidden_layers=_checks.integer("layers", layers, low=1),
        num_attention_heads=heads, num_key_value_heads=kv_heads,
        max_position_embeddings=_checks.integer("max_positions", max_positions, low=8),
        tie_word_embeddings=bool(tie), use_cache=True,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)


def make_model(tok, *, seed=0, **config_kw):
    """A randomly initialised causal LM (fp32), the same weights for the same ``seed``.

    Keyword arguments go to :func:`tiny_config`. The global torch RNG is left untouched.
    """
    seed = _checks.integer("seed", seed, low=0)
    cfg = tiny_config(tok, **config_kw)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = AutoModelForCausalLM.from_config(cfg, attn_implementation="sdpa")
    return model.float()


@contextlib.contextmanager
def _quiet():
    """Silence transformers' own progress bars while loading/saving tiny models."""
    from transformers.utils import logging as hf_logging

    was = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was:
            hf_logging.enable_progress_bar()


def n_params(model) -> int:
    return sum(p.numel() for p in model.parameters())


def _looks_like_hub_name(name: str) -> bool:
    parts = name.split("/")
    return (len(parts) == 2 and all(parts) and not name.startswith((".", "~"))
            and not any(c in name for c in "\\:"))


def load_model(path, *, dtype=torch.float32, hub: bool = False):
    """(model, tokenizer) from a local directory with ``config.json`` and tokenizer files.

    Nothing touches the network unless ``hub=True``: then a name of the form ``org/name``
    that is not a local directory is fetched from the Hugging Face Hub (or its cache).
    Without it, a path that does not exist is an error saying so — a mistyped
    ``runs/mymodel`` is never taken for a hub id. ``trust_remote_code`` is off. The
    tokenizer must define an EOS token.
    """
    from transformers import AutoTokenizer

    if not isinstance(path, (str, Path)) or not str(path):
        raise TypeError(f"model must be a directory path or hub name, got {path!r}")
    p = Path(path).expanduser()
    if p.is_dir():
        if not (p / "config.json").is_file():
            raise ValueError(f"model directory {str(p)!r} has no config.json (is it a transformers model?)")
        src = str(p)
    elif p.exists():
        raise ValueError(f"model path {str(p)!r} is a file; pass the directory that holds config.json")
    elif hub and _looks_like_hub_name(str(path)):
        src = str(path)
    elif _looks_like_hub_name(str(path)):
        raise ValueError(f"model path {str(path)!r} does not exist (no folder {str(p.resolve())!r}); to download "
                         f"the Hugging Face Hub repository {str(path)!r} instead, pass hub=True (--hub)")
    else:
        raise ValueError(f"model path {str(path)!r} does not exist")
    try:
        tok = AutoTokenizer.from_pretrained(src, trust_remote_code=False)
        kw = dict(trust_remote_code=False, dtype=dtype, attn_implementation="sdpa")
        with _quiet():
            try:
                model = AutoModelForCausalLM.from_pretrained(src, **kw)
            except (ValueError, ImportError):   # an architecture without SDPA support
                kw.pop("attn_implementation")
                model = AutoModelForCausalLM.from_pretrained(src, **kw)
    except OSError as e:
        raise ValueError(f"could not load model {str(path)!r}: {e}") from None
    return model, check_tokenizer(tok)


def save_model(model, tok, path) -> Path:
    """Write config, safetensors weights and tokenizer files into ``path``."""
    p = Path(path)
    p.mkdir(parents=True, exist_ok=True)
    with _quiet():
        model.save_pretrained(str(p), safe_serialization=True)
    tok.save_pretrained(str(p))
    return p
