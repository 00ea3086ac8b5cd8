"""A character-level tokenizer, built with the ``tokenizers`` library (no hand-written class).

Every character of :data:`DEFAULT_CHARS` is one token; ``<pad>``, ``<bos>``, ``<eos>``
and ``<unk>`` come first (ids 0–3). Encoding a prompt prepends ``<bos>``; the model ends
its answer by emitting ``<eos>`` — the response length is the model's choice, which is
what makes the length dynamics of seed 000 §4 (序列平均 vs 批次平均) observable.

The ``tokenizers.Tokenizer`` (a ``WordLevel`` model over single characters, a regex
pre-tokenizer that isolates each character, a ``Fuse`` decoder) is wrapped as a
``transformers.PreTrainedTokenizerFast`` so that ``save_pretrained`` / ``from_pretrained``
/ ``AutoTokenizer`` work as for any hub model. Prompts are padded on the left (the
generation convention).
"""
from __future__ import annotations

from pathlib import Path

from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import AutoTokenizer, PreTrainedTokenizerFast

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
SPECIALS = (PAD, BOS, EOS, UNK)
DEFAULT_CHARS = "0123456789+-*= "


def char_tokenizer(chars: str = DEFAULT_CHARS) -> PreTrainedTokenizerFast:
    """A character-level ``PreTrainedTokenizerFast`` with pad/bos/eos/unk set.

    ``chars`` lists the ordinary characters, one token each (no duplicates, no empty
    string). Unknown characters map to ``<unk>``.
    """
    if not isinstance(chars, str) or not chars:
        raise ValueError(f"chars must be a non-empty string of characters, got {chars!r}")
    if len(set(chars)) != len(chars):
        raise ValueError(f"chars must not repeat a character, got {chars!r}")
    vocab = {tok: i for i, tok in enumerate(list(SPECIALS) + list(chars))}
    tk = Tokenizer(models.WordLevel(vocab, unk_token=UNK))
    tk.pre_tokenizer = pre_tokenizers.Split(Regex("."), behavior="isolated")   # one char = one piece
    tk.decoder = decoders.Fuse()                                                 # join without spaces
    tk.post_processor = processors.TemplateProcessing(single=f"{BOS} $A", special_tokens=[(BOS, vocab[BOS])])
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, bos_token=BOS, eos_token=EOS,
                                  pad_token=PAD, unk_token=UNK, padding_side="left")
    return tok


def load_tokenizer(path) -> PreTrainedTokenizerFast:
    """``AutoTokenizer.from_pretrained(path)`` for a local directory, checked with :func:`check_tokenizer`."""
    p = Path(path)
    if not p.is_dir():
        raise ValueError(f"tokenizer path {str(path)!r} is not a directory")
    return check_tokenizer(AutoTokenizer.from_pretrained(str(p), trust_remote_code=False))


def check_tokenizer(tok):
    """Ensure the tokenizer can end a response and pad a batch; returns it.

    An EOS token is required (the model must be able to stop, or every response would be
    truncated). A missing pad token is set to EOS (common for hub LMs); left padding is
    enforced for prompts.
    """
    if getattr(tok, "eos_token_id", None) is None:
        raise ValueError("tokenizer has no EOS token (eos_token is None): responses could never end; "
                         "set tokenizer.eos_token or use a tokenizer that defines one")
    if tok.pad_token_id is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok
