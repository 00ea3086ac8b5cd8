"""Step 1 of the recipe (seed 000 §5, "采样"): G responses per prompt, their log-probs, masks.

Layout. ``P`` prompts, each answered ``G`` times, give ``B = P·G`` responses stored group
after group (responses ``k·G … k·G+G−1`` answer prompt ``k``; the layout
:func:`grpo_lab.advantages.advantages_from_flat` expects). Prompts are left-padded to
``Lp`` tokens; responses are right-padded to ``T`` tokens with a 0/1 response ``mask``
(B, T) that covers every generated token up to and including EOS.

Doing no work the recipe does not need:

* **Shared prompts.** The G copies of a prompt have identical activations, so the prompt
  runs through the model *once per prompt* (P rows, not B) and its key/value cache is
  repeated G times (``batch_repeat_interleave``). Only the response tokens are run per
  sample. This holds for sampling, for the reference model and for the policy forward with
  gradient: the gradient flows back through the repeated cache into the single prompt
  computation (autograd sums the G copies), which is exactly the gradient of the
  unshared computation.
* **Only the logits that are scored.** The policy forward feeds ``prompt[:-1]`` as the
  prefix and ``[last prompt token, o_1 … o_{T−1}]`` as the suffix, so it produces exactly
  the T logits that predict o_1 … o_T — no logits for prompt positions.
* **Identical responses once.** A confident policy often samples the same string several
  times for one prompt; :func:`token_logp` runs each distinct (prompt, response) pair once
  and gathers the result back to all B rows (exact, gradients included).
* **KV cache while sampling**, stopping as soon as every response has emitted EOS; its
  buffers have room for the whole reply, so a token is written in place instead of copying
  the cache (:class:`grpo_lab.lm.kv_cache.RoomLayer`).
* **No padding the batch does not need.** Replies of one batch differ in length; the
  reference and policy forwards run them in buckets of similar length, each padded to its
  own longest (:func:`length_buckets`), where that is cheaper than one padded forward.
* **μ = 1 needs no old-policy forward**: π_θold is the policy that sampled, so before the
  first update ``old_logp`` *is* ``logp.detach()`` (the trainer uses that; see
  :mod:`grpo_lab.lm.trainer`).

Log-probs are those of the *sampling* distribution, softmax(logits / temperature) (TRL
does the same); with temperature 1 they are the model's own.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from grpo_lab.lm import kv_cache
from grpo_lab.lm.kv_cache import base_model, cache_kw, new_cache

Tensor = torch.Tensor


@dataclass
class Rollout:
    """Prompts and their G sampled responses (token ids), as tensors on one device."""

    prompt_ids: Tensor      # (P, Lp) left-padded prompt tokens
    prompt_mask: Tensor     # (P, Lp) 1 for real prompt tokens
    G: int                  # responses per prompt
    response_ids: Tensor    # (B, T) sampled tokens, pad after EOS
    mask: Tensor            # (B, T) float 1 for response tokens (EOS included)
    lengths: Tensor         # (B,) |y_i| = mask.sum(-1)
    truncated: Tensor       # (B,) bool: reached max_new without EOS
    sampler_logp: Tensor | None = None   # (B, T) log-probs of the drawn tokens under the sampler (0 on padding;
    #                                      None for greedy sampling): what a trainer compares its own against

    @property
    def B(self) -> int:
        return self.response_ids.shape[0]

    @property
    def n_tokens(self) -> int:
        return int(self.lengths.sum())

    def select_groups(self, keep) -> "Rollout":
        """The sub-rollout of the prompts (groups) whose indices are in ``keep``."""
        keep = torch.as_tensor(keep, dtype=torch.long, device=self.prompt_ids.device)
        rows = (keep[:, None] * self.G + torch.arange(self.G, device=keep.device)).reshape(-1)
        return Rollout(self.prompt_ids[keep], self.prompt_mask[keep], self.G, self.response_ids[rows],
                       self.mask[rows], self.lengths[rows], self.truncated[rows],
                       None if self.sampler_logp is None else self.sampler_logp[rows])

    @staticmethod
    def concat(parts: list["Rollout"], pad_id: int) -> "Rollout":
        """Stack rollouts with the same G (prompts and responses re-padded)."""
        if len(parts) == 1:
            return parts[0]
        G = parts[0].G
        Lp = max(p.prompt_ids.shape[1] for p in parts)
        T = max(p.response_ids.shape[1] for p in parts)

        def lpad(x, n, v):
            return F.pad(x, (n - x.shape[1], 0), value=v)

        def rpad(x, n, v):
            return F.pad(x, (0, n - x.shape[1]), value=v)

        return Rollout(torch.cat([lpad(p.prompt_ids, Lp, pad_id) for p in parts]),
                       torch.cat([lpad(p.prompt_mask, Lp, 0) for p in parts]), G,
                       torch.cat([rpad(p.response_ids, T, pad_id) for p in parts]),
                       torch.cat([rpad(p.mask, T, 0.0) for p in parts]),
                       torch.cat([p.lengths for p in parts]), torch.cat([p.truncated for p in parts]),
                       None if any(p.sampler_logp is None for p in parts) else
                       torch.cat([rpad(p.sampler_logp, T, 0.0) for p in parts]))


def autocast(device: torch.device | str, enabled: bool | str = True):
    """bf16 autocast. ``enabled=True``: on CUDA (where supported), a no-op on CPU (fp32);
    ``enabled="always"``: on the CPU too (pays where the CPU has bf16 matrix units, see
    :func:`cpu_has_bf16`); ``False``: never."""
    dev = torch.device(device)
    if enabled and dev.type == "cuda" and torch.cuda.is_bf16_supported():
        return torch.autocast("cuda", dtype=torch.bfloat16)
    if enabled == "always" and dev.type == "cpu":
        return torch.autocast("cpu", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def amp_mode(bf16: bool, cpu_bf16: bool | None, device, *, pretrained: bool) -> bool | str:
    """The ``amp`` argument for :func:`sample` / :func:`token_logp` from the config fields.

    ``cpu_bf16=None`` (auto) turns CPU bf16 on for a pretrained model on a CPU with bf16
    units and leaves the tiny model in fp32 (its results stay bit-identical).
    """
    if torch.device(device).type == "cuda":
        return bool(bf16)
    use_cpu = (pretrained and cpu_has_bf16()) if cpu_bf16 is None else bool(cpu_bf16)
    return "always" if use_cpu else False


def cpu_has_bf16() -> bool:
    """True when the CPU advertises bf16 matrix instructions (AVX512-BF16 or AMX-BF16; Linux only).

    Measured on the course's 2-core AMD EPYC: a (768×576)·(576×1536) matmul runs at 107
    GFLOP/s in fp32 and 473 GFLOP/s in bf16 (one thread).
    """
    try:
        flags = open("/proc/cpuinfo").read()
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


def _positions(mask: Tensor) -> Tensor:
    """Position ids for a left-padded row: 0, 1, … from the first real token."""
    return (mask.long().cumsum(-1) - 1).clamp(min=0)


# ---------------------------------------------------------------------------------
# Sampling
# ---------------------------------------------------------------------------------
class Bf16Sampler:
    """A bf16 copy of the policy used only for sampling on the CPU (``amp="always"``).

    Decoding is bound by reading the weights once per token; autocast re-casts the fp32
    weights at every call, a bf16 copy reads half the bytes once. Measured on SmolLM2-135M,
    16 responses × 48 tokens, one thread: fp32 5.3 s, autocast 3.3 s, this copy 2.4 s.
    :meth:`sync` copies the current weights in (≈ 0.1 s) before each step's sampling. The
    responses then come from the bf16-rounded policy, while their log-probs (and the ratio)
    are computed by the training forward — the same small sampler/learner mismatch as TRL's
    vLLM generation.

    Under LoRA the copy is the base model with the adapters merged in, W + (α/r)·B·A, and
    :meth:`sync` re-merges only the adapted layers: decoding then costs what full fine-tuning's
    does instead of running every adapter beside its layer. Measured on SmolLM2-135M, rank 8,
    16 responses × 40 tokens, one thread: 7.4 s through the adapters, 5.9–6.0 s merged (the
    TRL without vLLM that the benchmark runs generates through the adapters).
    ``dtype`` exists for the tests (fp32 shows the merge is exact).
    """

    def __init__(self, policy, dtype=torch.bfloat16):
        import copy

        from grpo_lab.lm import lora

        self.lora = lora.is_lora(policy)
        model = copy.deepcopy(policy)
        if self.lora:
            model = model.merge_and_unload()                    # a plain model: W + ΔW in every adapted layer
        self.model = model.to(dtype).eval().requires_grad_(False)

    @torch.no_grad()
    def sync(self, policy):
        from grpo_lab.lm import lora

        if self.lora:                                           # the frozen rest never changes
            for name, layer in lora.adapted_layers(policy):
                self.model.get_submodule(name).weight.copy_(lora.merged_weight(layer))
        else:
            for dst, src in zip(self.model.parameters(), policy.parameters()):
                dst.copy_(src)
        return self.model


def _draw(logits: Tensor, temperature: float, generator) -> Tensor:
    """One token per row from softmax(logits / temperature); greedy when temperature == 0.

    ``logits`` (n, V) are already divided by the temperature when it is not 0 (fp32).
    """
    if temperature == 0:
        return logits.argmax(-1)
    # Gumbel-max: argmax(logits/τ + g), g ~ Gumbel(0, 1), is an exact sample of the
    # softmax and cheaper than multinomial on small vocabularies. In place: one (n, V)
    # buffer per token instead of five (the values are the same).
    g = torch.rand(logits.shape, generator=generator, device=logits.device, dtype=torch.float32)
    g.clamp_(min=1e-20).log_().neg_().log_().neg_()                           # g = −log(−log u)
    return g.add_(logits).argmax(-1)


def sample(model, prompt_ids: Tensor, prompt_mask: Tensor, *, G: int, max_new: int, temperature: float,
           eos_id: int, pad_id: int, generator: torch.Generator | None = None, amp: bool = True) -> Rollout:
    """G responses to each of the P prompts with the KV cache. Returns a :class:`Rollout`.

    The prompt runs once per prompt; its cache and last logits are repeated G times.
    Generation stops when every response has produced EOS or after ``max_new`` tokens.
    """
    with torch.inference_mode():
        ro = _sample(model, prompt_ids, prompt_mask, G, max_new, temperature, eos_id, pad_id, generator, amp)
    # tensors made under inference_mode cannot enter an autograd graph: copy them out
    return Rollout(*(x.clone() if isinstance(x, Tensor) else x for x in
                     (ro.prompt_ids, ro.prompt_mask, ro.G, ro.response_ids, ro.mask, ro.lengths, ro.truncated,
                      ro.sampler_logp)))


def _sample(model, prompt_ids, prompt_mask, G, max_new, temperature, eos_id, pad_id, generator, amp):
    dev = prompt_ids.device
    P, Lp = prompt_ids.shape
    B = P * G
    padded = bool((prompt_mask == 0).any())
    cache = kv_cache.decoding_cache(model, max_new)
    with autocast(dev, amp):
        out = model(input_ids=prompt_ids, attention_mask=prompt_mask if padded else None,
                    position_ids=_positions(prompt_mask), **cache_kw(model, cache))
    cache.batch_repeat_interleave(G)
    logits = out.logits[:, -1].repeat_interleave(G, dim=0)                    # (B, V)
    attn = prompt_mask.repeat_interleave(G, dim=0) if padded else None         # (B, Lp)
    pos = prompt_mask.sum(-1).repeat_interleave(G, dim=0)[:, None]             # (B, 1) next position
    tokens = torch.full((B, max_new), pad_id, dtype=torch.long, device=dev)    # (B, max_new)
    slogp = torch.zeros((B, max_new), dtype=torch.float32, device=dev)         # (B, max_new) the sampler's log π
    done = torch.zeros(B, dtype=torch.bool, device=dev)
    T = max_new
    for t in range(max_new):
        if temperature > 0:
            logits = logits.float() / temperature                              # (B, V) the sampling logits
        tok = _draw(logits, temperature, generator)
        tok = torch.where(done, torch.full_like(tok, pad_id), tok)
        tokens[:, t] = tok
        if temperature > 0:   # kept while sampling, as vLLM returns them: log softmax(logits/τ) of the drawn token
            lp = logits.log_softmax(-1).gather(-1, tok[:, None]).squeeze(-1)
            slogp[:, t] = torch.where(done, torch.zeros_like(lp), lp)
        done |= tok == eos_id
        if bool(done.all()):
            T = t + 1
            break
        if t + 1 == max_new:
            break
        if attn is not None:
            attn = torch.cat([attn, torch.ones((B, 1), dtype=attn.dtype, device=dev)], dim=1)
        with autocast(dev, amp):
            out = model(input_ids=tok[:, None], attention_mask=attn, position_ids=pos + t,
                        **cache_kw(model, cache))
        logits = out.logits[:, -1]
    tokens = tokens[:, :T]
    is_eos = tokens == eos_id
    has_eos = is_eos.any(-1)
    first = torch.where(has_eos, is_eos.float().argmax(-1), torch.full_like(has_eos, T, dtype=torch.long))
    lengths = torch.where(has_eos, first + 1, torch.full_like(first, T))       # (B,) EOS counted
    mask = (torch.arange(T, device=dev)[None, :] < lengths[:, None]).float()   # (B, T)
    return Rollout(prompt_ids, prompt_mask, G, tokens, mask, lengths, ~has_eos,
                   slogp[:, :T] * mask if temperature > 0 else None)


# ---------------------------------------------------------------------------------
# Log-probs of the sampled tokens (policy with gradient, reference without)
# ---------------------------------------------------------------------------------
@dataclass
class TokenLogp:
    logp: Tensor                  # (B, T) log π(o_{i,t} | x, o_{i,<t}), fp32
    entropy: Tensor | None        # (B, T) entropy of π(· | x, o_{i,<t}), detached, fp32


def token_logp(model, ro: Rollout, *, temperature: float = 1.0, entropy: bool = False,
               amp: bool = True, dedup: bool = True) -> TokenLogp:
    """log π(o_{i,t}) for every response token: prompt once per prompt, responses per sample.

    ``dedup=True`` also runs each *distinct* response of a group once: G samples of a
    confident policy are often identical strings, and identical (prompt, response) pairs
    have identical log-probs, so their rows are computed once and gathered back (B, T);
    autograd sums their gradients, which is exactly the gradient of the repeated rows.

    Gradient flows if grad mode is on (policy); wrap in ``torch.inference_mode()`` for the
    reference model. Values at padding positions are finite but meaningless (mask them).
    """
    dev = ro.prompt_ids.device
    P, Lp = ro.prompt_ids.shape
    G, T = ro.G, ro.response_ids.shape[1]
    group = torch.arange(P, device=dev).repeat_interleave(G)                   # (B,) prompt of each row
    if dedup:
        key = torch.cat([group[:, None], ro.response_ids], 1)                  # (B, 1+T)
        uniq, inverse = torch.unique(key, dim=0, return_inverse=True)          # (U, 1+T), (B,)
        rows, resp = uniq[:, 0], uniq[:, 1:]                                   # (U,), (U, T)
    else:
        rows, resp, inverse = group, ro.response_ids, None
    U = resp.shape[0]
    padded = bool((ro.prompt_mask == 0).any())
    plen = ro.prompt_mask.sum(-1)                                              # (P,)
    if model.training and torch.is_grad_enabled() and _checkpointing(model):
        # transformers drops the KV cache under gradient checkpointing, so the shared prefix
        # cannot be reused: run prompt + response in one forward per (distinct) response and
        # keep only the T logits that predict o_1 … o_T (logits_to_keep)
        full = torch.cat([ro.prompt_ids[rows], resp[:, :-1]], 1)                # (U, Lp + T − 1)
        fmask = torch.cat([ro.prompt_mask[rows], torch.ones((U, T - 1), dtype=ro.prompt_mask.dtype, device=dev)], 1)
        with autocast(dev, amp):
            out = model(input_ids=full, attention_mask=fmask, position_ids=_positions(fmask), use_cache=False,
                        logits_to_keep=T)
        return _gathered(out.logits, resp, temperature, entropy, inverse)
    lengths = ro.lengths if inverse is None else \
        torch.zeros(U, dtype=ro.lengths.dtype, device=dev).scatter_(0, inverse, ro.lengths)   # (U,)
    buckets = length_buckets(lengths, n_params(model))
    cache = new_cache(model)
    parts = []
    with autocast(dev, amp):
        if Lp > 1:   # prefix: every prompt token but the last, once per prompt
            pm = ro.prompt_mask[:, :-1]
            model(input_ids=ro.prompt_ids[:, :-1], attention_mask=pm if padded else None,
                  position_ids=_positions(pm), **cache_kw(model, cache))
        for idx in buckets:                     # None = every row, as sampled (one bucket)
            b_rows = rows if idx is None else rows[idx]                        # (n,) prompt of each row
            Tb = T if idx is None else int(lengths[idx].max())                 # the bucket's longest response
            b_resp = resp if idx is None else resp[idx, :Tb]                   # (n, Tb)
            b_cache = kv_cache.cache_rows(model, cache, b_rows, last=idx is None or idx is buckets[-1])
            # suffix: [last prompt token, o_1 … o_{Tb−1}] predicts o_1 … o_Tb, per (distinct) response
            suffix = torch.cat([ro.prompt_ids[b_rows, -1:], b_resp[:, :-1]], 1)   # (n, Tb)
            pos = (plen - 1)[b_rows][:, None] + torch.arange(Tb, device=dev)[None, :]
            attn = None
            if padded:
                n = b_rows.shape[0]
                attn = torch.cat([ro.prompt_mask[b_rows], torch.ones((n, Tb), dtype=ro.prompt_mask.dtype, device=dev)], 1)
            out = model(input_ids=suffix, attention_mask=attn, position_ids=pos, **cache_kw(model, b_cache))
            parts.append(_gathered(out.logits, b_resp, temperature, entropy, None))
    if buckets == [None]:
        tl = parts[0]
    else:   # (n_b, T_b) per bucket -> (U, T) in the rows' order, 0 past each bucket's longest response
        order = torch.cat(buckets)                                             # (U,) bucket rows, in bucket order
        back = torch.empty_like(order).scatter_(0, order, torch.arange(U, device=dev))

        def joined(xs):
            return torch.cat([F.pad(x, (0, T - x.shape[1])) for x in xs])[back]

        tl = TokenLogp(joined([p.logp for p in parts]), None if not entropy else joined([p.entropy for p in parts]))
    if inverse is not None:
        tl = TokenLogp(tl.logp[inverse], None if tl.entropy is None else tl.entropy[inverse])   # (B, T)
    return tl


# One more forward costs about as much as this many token positions of a 135M-parameter model
# (per-layer kernel launches, the prefix cache's copy, one more backward), so a bucket must save
# more than that; per-token cost grows with the parameter count, the fixed cost does not.
BUCKET_COST_TOKEN_PARAMS = 16 * 135_000_000


def length_buckets(lengths: Tensor, params: int) -> list:
    """Rows grouped by response length, so that a forward pads each group only to its own longest.

    Returns ``[None]`` (one forward over every row, padded to the batch's T: the unbucketed
    computation, bit for bit) unless splitting saves more padded positions than the extra
    forwards cost (:data:`BUCKET_COST_TOKEN_PARAMS` / ``params`` positions each). Else a list
    of index tensors into ``lengths``, each a run of rows of similar length, shortest first:
    the cheapest such partition (dynamic programming over the distinct lengths).

    Measured on SmolLM2-135M, one thread, 4 prompts × G = 4 replies of 12–40 tokens (mean 21,
    as after training): one forward pads 16 × 40 = 640 positions for 329 reply tokens; three
    buckets (7, 7 and 2 replies) took the reference forward, the policy forward and the backward
    from 13.4 to 8.7 s in fp32 and from 21.0 to 14.8 s under bf16 autocast (medians of 2 repeats,
    one batch; under LoRA the adapters count as parameters too and the same batch splits in 4).
    Each bucket adds a weight-gradient pass to the backward; the cost per bucket is meant to
    cover it (an estimate, not measured apart).
    The tiny model (≈ 0.9 M parameters) never splits: a forward costs it more than any padding
    it could save, and its results stay bit for bit those of one forward. (TRL's GRPOTrainer
    pads every completion of a batch to the batch's longest.)
    """
    per_bucket = BUCKET_COST_TOKEN_PARAMS / max(int(params), 1)               # positions one forward costs
    lens = lengths.tolist()
    distinct = sorted(set(lens))
    count = [0] * len(distinct)
    for n in lens:
        count[distinct.index(n)] += 1
    # best[j]: the cheapest cost of the rows with the j shortest lengths; cut[j]: where its last bucket starts
    best, cut = [0.0] + [float("inf")] * len(distinct), [0] * (len(distinct) + 1)
    for j in range(1, len(distinct) + 1):
        rows = 0
        for i in range(j, 0, -1):           # last bucket = lengths distinct[i-1 .. j-1]
            rows += count[i - 1]
            c = best[i - 1] + rows * distinct[j - 1] + per_bucket
            if c < best[j]:
                best[j], cut[j] = c, i - 1
    bounds, j = [], len(distinct)
    while j > 0:
        bounds.append((distinct[cut[j]], distinct[j - 1]))
        j = cut[j]
    one = len(lens) * max(lens, default=0) + per_bucket                        # the unbucketed cost
    if len(bounds) == 1 or best[-1] >= one:
        return [None]
    return [torch.nonzero((lengths >= lo) & (lengths <= hi)).squeeze(1) for lo, hi in reversed(bounds)]


def n_params(model) -> int:
    """The model's parameter count (LoRA adapters and frozen base included)."""
    return sum(p.numel() for p in model.parameters())


def enable_checkpointing(model) -> None:
    """Turn on activation (gradient) checkpointing (transformers ≥ 5 renamed the method)."""
    (getattr(model, "activation_checkpointing_enable", None) or model.gradient_checkpointing_enable)()


def _checkpointing(model) -> bool:
    """Is activation (gradient) checkpointing on? (transformers ≥ 5 renamed the attribute.)"""
    model = base_model(model)
    on = getattr(model, "is_activation_checkpointing", None)
    return bool(getattr(model, "is_gradient_checkpointing", False) if on is None else on)


def _gathered(logits, resp, temperature, entropy, inverse) -> TokenLogp:
    """log-probs (and entropies) of ``resp`` (U, T) from its logits (U, T, V), gathered back to B rows."""
    logits = logits.float()                                                    # (U, T, V)
    if temperature not in (0, 1):
        logits = logits / temperature
    logprobs = logits.log_softmax(-1)                                          # (U, T, V)
    logp = logprobs.gather(-1, resp[..., None]).squeeze(-1)                    # (U, T)
    ent = None
    if entropy:
        with torch.no_grad():
            lp = logprobs.detach()
            ent = -(lp.exp() * lp).sum(-1)                                     # (U, T)
    if inverse is not None:
        logp = logp[inverse]                                                   # (B, T)
        ent = None if ent is None else ent[inverse]
    return TokenLogp(logp, ent)
