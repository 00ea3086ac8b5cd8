"""grpo_lab.losses against independent python-loop implementations (float64), finite
differences, the seed's k3 properties (000 §3, eq. 5) and aggregation invariants (eqs. 6, 7)."""
import math

import numpy as np
import pytest
import torch
from hypothesis import given
from hypothesis import strategies as st

from grpo_lab import losses as L

DT = torch.float64


# ---------------------------------------------------------------------------------
# Reference implementations: plain python loops over floats, written from the seed
# ---------------------------------------------------------------------------------
def ref_clipped_loss(logp, old, adv, mask, eps_low, eps_high, dual_clip, level):
    B, T = len(logp), len(logp[0])
    out = [[0.0] * T for _ in range(B)]
    for i in range(B):
        n = sum(mask[i])
        if level == "sequence":
            s = math.exp(sum(logp[i][t] - old[i][t] for t in range(T) if mask[i][t]) / n) if n else 1.0
        for t in range(T):
            if not mask[i][t]:
                continue
            rho = math.exp(logp[i][t] - old[i][t]) if level == "token" else s
            A = adv[i]
            clipped = min(max(rho, 1 - eps_low), 1 + eps_high)
            obj = min(rho * A, clipped * A)                      # eq. (3)
            if dual_clip is not None and A < 0:
                obj = max(obj, dual_clip * A)
            out[i][t] = -obj
    return out


def ref_kl(logp, ref, kind):
    out = []
    for row_p, row_r in zip(logp, ref):
        row = []
        for lp, lr in zip(row_p, row_r):
            if kind == "k1":
                row.append(lp - lr)
            elif kind == "k2":
                row.append(0.5 * (lp - lr) ** 2)
            else:
                u = math.exp(lr - lp)                            # u = π_ref/π_θ, eq. (5)
                row.append(u - math.log(u) - 1)
        out.append(row)
    return out


def ref_aggregate(values, mask, mode, max_len=None):
    rows = [(sum(v for v, m in zip(vr, mr) if m), sum(mr)) for vr, mr in zip(values, mask)]
    rows = [(s, n) for s, n in rows if n > 0]
    if not rows:
        return 0.0
    if mode == "seq-mean-token-mean":                            # eq. (6)
        return sum(s / n for s, n in rows) / len(rows)
    if mode == "token-mean":                                     # eq. (7)
        return sum(s for s, _ in rows) / sum(n for _, n in rows)
    if mode == "seq-mean-token-sum":
        return sum(s for s, _ in rows) / len(rows)
    return sum(s for s, _ in rows) / (len(rows) * max_len)       # Dr. GRPO 1/C


def random_batch(seed, B=5, T=7, *, spread=0.3, empty_row=True):
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(B, T, generator=g, dtype=DT) * 3 - 0.05
    old = logp + torch.randn(B, T, generator=g, dtype=DT) * spread
    lengths = torch.randint(1, T + 1, (B,), generator=g)
    if empty_row:
        lengths[1] = 0
    mask = (torch.arange(T)[None, :] < lengths[:, None]).to(DT)
    adv = torch.randn(B, generator=g, dtype=DT)
    return logp, old, adv, mask


def L2(t):
    return t.tolist()


def assert_close(a, b, tol=1e-12):
    np.testing.assert_allclose(np.asarray(a, dtype=float), np.asarray(b, dtype=float), rtol=tol, atol=tol)


# ---------------------------------------------------------------------------------
# Formulas vs loops
# ---------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize("eps_low,eps_high,dual_clip", [(0.2, None, None), (0.2, 0.28, None),
                                                         (0.1, 0.3, 3.0), (0.05, 0.05, 1.2)])
def test_policy_loss_matches_loop(seed, level, eps_low, eps_high, dual_clip):
    logp, old, adv, mask = random_batch(seed, spread=0.6)
    got = L.policy_loss_per_token(logp, old, adv, mask, eps_low=eps_low, eps_high=eps_high,
                                  dual_clip=dual_clip, level=level)
    want = ref_clipped_loss(L2(logp), L2(old), L2(adv), L2(mask), eps_low,
                            eps_low if eps_high is None else eps_high, dual_clip, level)
    assert got.shape == logp.shape and got.dtype == DT
    assert_close(got, want)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kind", ["k1", "k2", "k3"])
def test_kl_penalty_matches_loop(seed, kind):
    logp, ref, _, mask = random_batch(seed, spread=0.8)
    assert_close(L.kl_penalty(logp, ref, kind), ref_kl(L2(logp), L2(ref), kind))
    masked = L.kl_penalty(logp, ref, kind, mask=mask)
    assert_close(masked, np.asarray(ref_kl(L2(logp), L2(ref), kind)) * mask.numpy())


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("mode", L.MODES)
def test_aggregate_matches_loop(seed, mode):
    v, _, _, mask = random_batch(seed)
    T = v.shape[1]
    got = L.aggregate(v, mask, mode, max_len=T + 3)
    assert got.ndim == 0
    assert float(got) == pytest.approx(ref_aggregate(L2(v), L2(mask), mode, T + 3), abs=1e-13)


def test_aggregate_seed_formulas_by_hand():
    # two responses, lengths 1 and 3, per-token loss 1 for the short one and 0 for the long one
    v = torch.tensor([[1.0, 0, 0], [0, 0, 0]], dtype=DT)
    m = torch.tensor([[1, 0, 0], [1, 1, 1]], dtype=DT)
    assert float(L.aggregate(v, m, "seq-mean-token-mean")) == pytest.approx(0.5)      # (1/1 + 0)/2
    assert float(L.aggregate(v, m, "token-mean")) == pytest.approx(0.25)              # 1/4
    assert float(L.aggregate(v, m, "seq-mean-token-sum")) == pytest.approx(0.5)
    assert float(L.aggregate(v, m, "seq-mean-token-sum-norm", max_len=4)) == pytest.approx(1 / 8)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("mode", L.MODES)
@pytest.mark.parametrize("kind", ["k1", "k3"])
def test_grpo_loss_matches_loop(seed, mode, kind):
    logp, old, adv, mask = random_batch(seed, spread=0.5)
    ref = logp + torch.randn(logp.shape, generator=torch.Generator().manual_seed(99), dtype=DT) * 0.3
    beta, T = 0.04, logp.shape[1]
    out = L.grpo_loss(logp, old, adv, mask, ref_logp=ref, beta=beta, kl_kind=kind, mode=mode,
                      max_len=T, eps_low=0.2, eps_high=0.28, dual_clip=3.0)
    pg = ref_clipped_loss(L2(logp), L2(old), L2(adv), L2(mask), 0.2, 0.28, 3.0, "token")
    kl = ref_kl(L2(logp), L2(ref), kind)
    per_tok = [[p + beta * k for p, k in zip(rp, rk)] for rp, rk in zip(pg, kl)]
    assert float(out.loss) == pytest.approx(ref_aggregate(per_tok, L2(mask), mode, T), abs=1e-13)
    assert float(out.pg_loss) == pytest.approx(ref_aggregate(pg, L2(mask), mode, T), abs=1e-13)
    assert float(out.kl) == pytest.approx(ref_aggregate(kl, L2(mask), mode, T), abs=1e-13)
    # diagnostics, counted by hand
    lo = hi = n = 0
    ratios = []
    for i in range(logp.shape[0]):
        for t in range(T):
            if mask[i, t]:
                r, A = math.exp(logp[i, t] - old[i, t]), float(adv[i])
                n += 1
                ratios.append(r)
                lo += A < 0 and r < 0.8
                hi += A > 0 and r > 1.28
    assert float(out.clip_frac_low) == pytest.approx(lo / n)
    assert float(out.clip_frac_high) == pytest.approx(hi / n)
    assert float(out.ratio_mean) == pytest.approx(sum(ratios) / n)
    assert float(out.ratio_max) == pytest.approx(max(ratios))
    assert not out.pg_loss.requires_grad and out.loss.requires_grad is False  # plain tensors in
    assert set(out.to_dict()) >= {"loss", "kl", "clip_frac_low", "clip_frac_high", "ratio_mean"}


def test_dual_clip_fraction_by_hand():
    logp = torch.log(torch.tensor([[0.5, 4.0, 1.0]], dtype=DT))
    out = L.grpo_loss(logp, torch.zeros_like(logp), torch.tensor([-1.0], dtype=DT),
                      torch.ones_like(logp), dual_clip=3.0, mode="token-mean")
    assert float(out.clip_frac_low) == pytest.approx(1 / 3)   # ρ = 0.5 < 0.8
    assert float(out.dual_clip_frac) == pytest.approx(1 / 3)  # ρ = 4 > 3
    # per-token losses: −max(min(0.5·−1, 0.8·−1), −3) = 0.8; ρ=4 capped at 3; ρ=1 -> 1
    assert_close(out.per_token, [[0.8, 3.0, 1.0]])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("reduce", ["sum", "mean"])
def test_kl_shaped_rewards_matches_loop(seed, reduce):
    logp, ref, _, mask = random_batch(seed, spread=0.4)
    rewards = torch.tensor([1.0, 0.0, 1.0, 0.0, 0.5], dtype=DT)
    got = L.kl_shaped_rewards(rewards, logp, ref, mask, beta=0.1, reduce=reduce)
    for i in range(5):
        n = int(mask[i].sum())
        s = sum(-0.1 * (float(logp[i, t]) - float(ref[i, t])) for t in range(n))  # r'_t = −β log(π/π_ref)
        if reduce == "mean" and n:
            s /= n
        assert float(got[i]) == pytest.approx(float(rewards[i]) + s, abs=1e-13)
    assert not got.requires_grad


def test_token_and_sequence_ratio_loops():
    logp, old, _, mask = random_batch(3)
    rho = L.token_ratio(logp, old, mask)
    s = L.sequence_ratio(logp, old, mask)
    for i in range(logp.shape[0]):
        n = int(mask[i].sum())
        logs = [float(logp[i, t] - old[i, t]) for t in range(n)]
        assert float(s[i]) == pytest.approx(math.exp(sum(logs) / n) if n else 1.0)
        for t in range(logp.shape[1]):
            assert float(rho[i, t]) == pytest.approx(math.exp(logs[t]) if t < n else 1.0)


def test_broadcast_adv_is_explicit_copy():
    adv = torch.tensor([1.0, -1.0, 0.5], dtype=DT)
    mask = torch.tensor([[1, 1, 0], [1, 0, 0], [1, 1, 1]])
    A = L.broadcast_adv(adv, mask)
    assert_close(A, [[1, 1, 0], [-1, 0, 0], [0.5, 0.5, 0.5]])


# ---------------------------------------------------------------------------------
# Gradients
# ---------------------------------------------------------------------------------
def _fd_grad(f, x, h=1e-6):
    g = torch.zeros_like(x)
    for idx in np.ndindex(*x.shape):
        xp, xm = x.clone(), x.clone()
        xp[idx] += h
        xm[idx] -= h
        g[idx] = (f(xp) - f(xm)) / (2 * h)
    return g


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("mode", L.MODES)
@pytest.mark.parametrize("level", ["token", "sequence"])
def test_token_grad_weights_vs_finite_differences(seed, mode, level):
    logp, old, adv, mask = random_batch(seed, B=4, T=5, spread=0.4)
    ref = old - 0.1
    kw = dict(ref_logp=ref, beta=0.05, mode=mode, max_len=6, eps_low=0.2, eps_high=0.25,
              dual_clip=2.0, level=level)
    # stay away from the kinks of the clipped objective, where the derivative jumps
    for r in (L.token_ratio(logp, old, mask) if level == "token" else
              L.sequence_ratio(logp, old, mask)[:, None].expand_as(logp)).flatten().tolist():
        assert min(abs(r - 0.8), abs(r - 1.25), abs(r - 2.0)) > 1e-4
    w = L.token_grad_weights(logp, old, adv, mask, **kw)
    fd = _fd_grad(lambda x: float(L.grpo_loss(x, old, adv, mask, **kw).loss), logp)
    assert_close(w, fd, tol=1e-7)
    assert float(w[mask == 0].abs().max()) == 0.0


def test_gradcheck_policy_loss():
    logp, old, adv, mask = random_batch(7, B=3, T=4, spread=0.5)
    x = logp.clone().requires_grad_(True)
    assert torch.autograd.gradcheck(
        lambda z: L.policy_loss_per_token(z, old, adv, mask, eps_low=0.2, eps_high=0.3, dual_clip=3.0), (x,))
    for kind in ("k1", "k2", "k3"):
        assert torch.autograd.gradcheck(lambda z: L.kl_penalty(z, old, kind, mask=mask), (x,))


def test_unclipped_weight_is_minus_ratio_times_adv_times_aggregation_weight():
    logp, old, adv, mask = random_batch(2, spread=0.05)
    for mode in L.MODES:
        w = L.token_grad_weights(logp, old, adv, mask, mode=mode, max_len=10, eps_low=0.5)
        c = L.token_weights(mask, mode, max_len=10)
        rho = L.token_ratio(logp, old, mask)
        assert_close(w, -rho * adv[:, None] * c)


@pytest.mark.parametrize("mode", L.MODES)
def test_gspo_stop_gradient_form_equals_plain_sequence_ratio(mode):
    """sg[s_i]·π/sg[π] has the same aggregated gradient as s_i itself (Â is per sequence)."""
    logp, old, adv, mask = random_batch(4, spread=0.02)
    w = L.token_grad_weights(logp, old, adv, mask, mode=mode, max_len=8, level="sequence", eps_low=0.5)
    x = logp.clone().requires_grad_(True)
    s = L.sequence_ratio(x, old, mask)                                   # plain s_i, (B,)
    loss = L.aggregate(-(s * adv)[:, None].expand_as(x) * mask, mask, mode, max_len=8)
    (g,) = torch.autograd.grad(loss, x)
    assert_close(w, g)


def test_first_step_loss_zero_but_gradient_not():
    """μ = 1: old_logp = logp, ρ ≡ 1, no clipping; with group-normalised Â the eq. (6) loss is 0."""
    logp, _, _, mask = random_batch(5, empty_row=False)
    adv = torch.tensor([1.0, 1.0, -1.0, -1.0, 0.0], dtype=DT)          # sums to 0 (1,1,0,0,½ group)
    out = L.grpo_loss(logp, logp.clone(), adv, mask, eps_low=0.2)
    assert float(out.loss) == pytest.approx(0.0, abs=1e-15)
    assert float(out.clip_frac_low) == float(out.clip_frac_high) == 0.0
    assert float(out.ratio_min) == float(out.ratio_max) == 1.0
    w = L.token_grad_weights(logp, logp.clone(), adv, mask)
    assert float(w.abs().max()) > 0.05
    assert_close(w, -adv[:, None] * L.token_weights(mask))


def test_fully_masked_rows_and_batch_give_no_nan():
    logp, old, adv, mask = random_batch(0)
    logp = logp.clone()
    logp[mask == 0] = -math.inf          # padding may hold anything
    old = old.clone()
    old[mask == 0] = math.nan
    for mode in L.MODES:
        for level in L.LEVELS:
            x = logp.clone().requires_grad_(True)
            out = L.grpo_loss(x, old, adv, mask, ref_logp=old, beta=0.1, mode=mode, max_len=9, level=level)
            out.loss.backward()
            assert torch.isfinite(out.loss) and torch.isfinite(x.grad).all()
            assert all(math.isfinite(v) for v in out.to_dict().values())
    zero = torch.zeros_like(mask)
    for mode in L.MODES:
        x = logp.clone().requires_grad_(True)
        out = L.grpo_loss(x, old, adv, zero, mode=mode, max_len=9)
        out.loss.backward()
        assert out.loss.item() == 0.0 and float(x.grad.abs().sum()) == 0.0
        assert float(out.ratio_mean) == 1.0


# ---------------------------------------------------------------------------------
# KL estimators: the seed's k3 properties, exactly on a categorical toy
# ---------------------------------------------------------------------------------
def _categorical(seed, K=6):
    g = torch.Generator().manual_seed(seed)
    z = torch.randn(K, generator=g, dtype=DT)
    z_ref = torch.randn(K, generator=g, dtype=DT)
    return z, z_ref


def _exact_expectation(kind, z, z_ref):
    """E_{o~π_θ}[k(o)] = Σ_o π_θ(o)·k(o), enumerating all K tokens."""
    logp, ref = torch.log_softmax(z, -1), torch.log_softmax(z_ref, -1)
    k = L.kl_penalty(logp[None], ref[None], kind)[0]
    return (logp.exp() * k).sum()


@pytest.mark.parametrize("seed", range(8))
def test_k1_k3_unbiased_k2_biased_exactly(seed):
    z, z_ref = _categorical(seed)
    p, q = torch.softmax(z, -1), torch.softmax(z_ref, -1)
    kl = float((p * (p.log() - q.log())).sum())                        # KL(π_θ‖π_ref)
    assert float(_exact_expectation("k3", z, z_ref)) == pytest.approx(kl, abs=1e-13)
    assert float(_exact_expectation("k1", z, z_ref)) == pytest.approx(kl, abs=1e-13)
    assert float(_exact_expectation("k2", z, z_ref)) != pytest.approx(kl, abs=1e-6)
    u = q / p
    assert float((p * u).sum()) == pytest.approx(1.0, abs=1e-14)      # E[u] = 1, the seed's step


@pytest.mark.parametrize("seed", range(6))
def test_kl_estimator_gradients_exactly(seed):
    """Held-sample gradients: E[∇k1] = 0, E[∇k2] = ∇KL(π‖ref), E[∇k3] = ∇KL(ref‖π)."""
    z0, z_ref = _categorical(seed)
    q = torch.softmax(z_ref, -1)

    def grad_of(kind):
        z = z0.clone().requires_grad_(True)
        logp = torch.log_softmax(z, -1)
        k = L.kl_penalty(logp[None], torch.log(q)[None], kind)[0]
        (g,) = torch.autograd.grad((logp.exp().detach() * k).sum(), z)
        return g

    def grad_exact(direction):
        z = z0.clone().requires_grad_(True)
        p = torch.softmax(z, -1)
        kl = (p * (p.log() - q.log())).sum() if direction == "fwd" else (q * (q.log() - p.log())).sum()
        (g,) = torch.autograd.grad(kl, z)
        return g

    assert_close(grad_of("k1"), torch.zeros_like(z0), tol=1e-14)
    assert_close(grad_of("k2"), grad_exact("fwd"), tol=1e-13)
    assert_close(grad_of("k3"), grad_exact("rev"), tol=1e-13)


finite = st.floats(-20, 5, allow_nan=False, allow_infinity=False)


@given(st.lists(st.tuples(finite, finite), min_size=1, max_size=12))
def test_k3_nonnegative_and_zero_when_equal(pairs):
    logp = torch.tensor([[a for a, _ in pairs]], dtype=DT)
    ref = torch.tensor([[b for _, b in pairs]], dtype=DT)
    k3 = L.kl_penalty(logp, ref, "k3")
    assert bool((k3 >= 0).all())
    assert float(L.kl_penalty(logp, logp, "k3").abs().max()) == 0.0
    assert float(L.kl_penalty(logp, logp, "k2").abs().max()) == 0.0
    # strictly positive once the policies differ measurably (u ≠ 1)
    assert bool(((k3 > 0) | ((logp - ref).abs() < 1e-6)).all())


# ---------------------------------------------------------------------------------
# Property tests (hypothesis)
# ---------------------------------------------------------------------------------
@st.composite
def batches(draw, equal_lengths=False):
    B = draw(st.integers(1, 5))
    T = draw(st.integers(1, 6))
    vals = draw(st.lists(st.floats(-5, 5, allow_nan=False), min_size=B * T, max_size=B * T))
    if equal_lengths:
        n = draw(st.integers(1, T))
        lengths = [n] * B
    else:
        lengths = draw(st.lists(st.integers(0, T), min_size=B, max_size=B))
    v = torch.tensor(vals, dtype=DT).reshape(B, T)
    mask = (torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]).to(DT)
    return v, mask


@given(batches(equal_lengths=True), st.integers(0, 10))
def test_equal_lengths_modes_coincide_up_to_constants(batch, extra):
    v, mask = batch
    n = int(mask[0].sum())
    C = v.shape[1] + extra
    a = float(L.aggregate(v, mask, "seq-mean-token-mean"))
    assert float(L.aggregate(v, mask, "token-mean")) == pytest.approx(a, abs=1e-12)
    assert float(L.aggregate(v, mask, "seq-mean-token-sum")) == pytest.approx(n * a, abs=1e-11)
    assert float(L.aggregate(v, mask, "seq-mean-token-sum-norm", max_len=C)) == pytest.approx(n * a / C, abs=1e-12)


@given(batches(), st.floats(-3, 3, allow_nan=False), st.floats(-3, 3, allow_nan=False))
def test_aggregate_is_linear_and_ignores_padding(batch, a, b):
    v, mask = batch
    w = torch.randn(v.shape, generator=torch.Generator().manual_seed(1), dtype=DT)
    garbage = v.clone()
    garbage[mask == 0] = 1e6
    for mode in L.MODES:
        kw = dict(max_len=v.shape[1])
        lhs = float(L.aggregate(a * v + b * w, mask, mode, **kw))
        rhs = a * float(L.aggregate(v, mask, mode, **kw)) + b * float(L.aggregate(w, mask, mode, **kw))
        assert lhs == pytest.approx(rhs, abs=1e-9)
        assert float(L.aggregate(garbage, mask, mode, **kw)) == float(L.aggregate(v, mask, mode, **kw))


@given(batches(), st.permutations(range(5)))
def test_aggregate_invariant_to_row_order(batch, perm):
    v, mask = batch
    idx = [p for p in perm if p < v.shape[0]]
    for mode in L.MODES:
        x = float(L.aggregate(v, mask, mode, max_len=v.shape[1]))
        y = float(L.aggregate(v[idx], mask[idx], mode, max_len=v.shape[1]))
        assert x == pytest.approx(y, abs=1e-12)


@given(batches(), st.floats(0, 1), st.floats(0, 2), st.sampled_from([None, 1.5, 3.0]),
       st.sampled_from(L.LEVELS))
def test_ratio_one_means_no_clipping(batch, eps_low, eps_high, dual_clip, level):
    """μ = 1 (old_logp = logp): ρ = 1 exactly; no clip region is ever hit, for any ε."""
    logp, mask = batch
    logp = -logp.abs()
    adv = torch.linspace(-2, 2, logp.shape[0], dtype=DT)
    out = L.grpo_loss(logp, logp.clone(), adv, mask, eps_low=eps_low, eps_high=eps_high,
                      dual_clip=dual_clip, level=level)
    assert float(out.clip_frac_low) == float(out.clip_frac_high) == float(out.dual_clip_frac) == 0.0
    assert float(out.ratio_min) == float(out.ratio_max) == 1.0
    assert_close(out.per_token, -adv[:, None] * mask)


@given(st.lists(st.floats(-3, 3, allow_nan=False), min_size=3, max_size=3),
       st.floats(0, 0.9), st.floats(0, 0.9), st.floats(0, 0.5))
def test_loss_nonincreasing_in_eps_and_dual_clip_only_lowers(logr, eps_low, eps_high, d):
    logp = torch.tensor([logr] * 2, dtype=DT)
    old = torch.zeros_like(logp)
    adv = torch.tensor([1.3, -0.7], dtype=DT)
    mask = torch.ones_like(logp)
    base = L.policy_loss_per_token(logp, old, adv, mask, eps_low=eps_low, eps_high=eps_high)
    wider = L.policy_loss_per_token(logp, old, adv, mask, eps_low=min(eps_low + d, 1.0), eps_high=eps_high + d)
    assert bool((wider <= base + 1e-12).all())
    dual = L.policy_loss_per_token(logp, old, adv, mask, eps_low=eps_low, eps_high=eps_high, dual_clip=1.5)
    assert bool((dual <= base + 1e-12).all())
    assert bool((dual[1] <= 1.5 * 0.7 + 1e-12).all())                  # the cap −c·Â


@given(st.floats(-4, 4, allow_nan=False), st.floats(-3, 3, allow_nan=False).filter(lambda a: a != 0),
       st.floats(0.01, 0.9), st.floats(0.01, 1.5))
def test_zero_gradient_exactly_in_clip_regions(logr, A, eps_low, eps_high):
    rho = math.exp(logr)
    logp = torch.tensor([[logr]], dtype=DT)
    w = float(L.token_grad_weights(logp, torch.zeros_like(logp), torch.tensor([A], dtype=DT),
                                   torch.ones_like(logp), eps_low=eps_low, eps_high=eps_high, mode="token-mean"))
    clipped = (A > 0 and rho > 1 + eps_high) or (A < 0 and rho < 1 - eps_low)
    if clipped:
        assert w == 0.0
    elif abs(rho - (1 + eps_high)) > 1e-9 and abs(rho - (1 - eps_low)) > 1e-9:
        assert w == pytest.approx(-rho * A, rel=1e-12)


# ---------------------------------------------------------------------------------
# Names, aliases and bad input
# ---------------------------------------------------------------------------------
def test_trl_and_verl_aliases():
    v, _, _, mask = random_batch(1)
    assert L.resolve_mode("grpo") == "seq-mean-token-mean"
    assert L.resolve_mode("bnpo") == L.resolve_mode("dapo") == "token-mean"
    assert L.resolve_mode("dr_grpo") == "seq-mean-token-sum-norm"
    for alias, mode in L.MODE_ALIASES.items():
        assert float(L.aggregate(v, mask, alias, max_len=9)) == float(L.aggregate(v, mask, mode, max_len=9))
    for alias, kind in L.KL_ALIASES.items():
        assert_close(L.kl_penalty(v, v * 0.5, alias), L.kl_penalty(v, v * 0.5, kind))


def _ok():
    logp, old, adv, mask = random_batch(0)
    return logp, old, adv, mask


@pytest.mark.parametrize("call,exc,word", [
    (lambda lp, o, a, m: L.policy_loss_per_token(lp, o[:, :-1], a, m), ValueError, "old_logp"),
    (lambda lp, o, a, m: L.policy_loss_per_token(lp, o, a, m[:, :-1]), ValueError, "mask"),
    (lambda lp, o, a, m: L.policy_loss_per_token(lp, o, a, m * 0.5), ValueError, "binary"),
    (lambda lp, o, a, m: L.policy_loss_per_token(lp, o, a[:-1], m), ValueError, "adv"),
    (lambda lp, o, a, m: L.policy_loss_per_token(lp, o, a[:, None].expand_as(lp), m), ValueError, "adv"),
    (lambda lp, o, a, m: L.policy_loss_per_token(lp[0], o[0], a, m[0]), ValueError, "logp"),
    (lambda lp, o, a, m: L.policy_loss_per_token(lp, o, a, m, eps_low=-0.1), ValueError, "eps_low"),
    (lambda lp, o, a, m: L.policy_loss_per_token(lp, o, a, m, eps_high=-0.1), ValueError, "eps_high"),
    (lambda lp, o, a, m: L.policy_loss_per_token(lp, o, a, m, dual_clip=1.0), ValueError, "dual_clip"),
    (lambda lp, o, a, m: L.policy_loss_per_token(lp, o, a, m, dual_clip=0.5), ValueError, "dual_clip"),
    (lambda lp, o, a, m: L.policy_loss_per_token(lp, o, a, m, level="word"), ValueError, "level"),
    (lambda lp, o, a, m: L.policy_loss_per_token(lp, o, a * math.nan, m), ValueError, "adv"),
    (lambda lp, o, a, m: L.policy_loss_per_token(lp * math.nan, o, a, m), ValueError, "logp"),
    (lambda lp, o, a, m: L.policy_loss_per_token(lp, o, a, "mask"), TypeError, "mask"),
    (lambda lp, o, a, m: L.kl_penalty(lp, o, "k4"), ValueError, "kind"),
    (lambda lp, o, a, m: L.kl_penalty(lp, o.T, "k3"), ValueError, "ref_logp"),
    (lambda lp, o, a, m: L.aggregate(lp, m, "mean"), ValueError, "mode"),
    (lambda lp, o, a, m: L.aggregate(lp, m, "seq-mean-token-sum-norm"), ValueError, "max_len"),
    (lambda lp, o, a, m: L.aggregate(lp, m, "dr_grpo", max_len=2), ValueError, "max_len"),
    (lambda lp, o, a, m: L.aggregate(lp, m, "dr_grpo", max_len=0), ValueError, "max_len"),
    (lambda lp, o, a, m: L.aggregate(lp, m + 1, "token-mean"), ValueError, "mask"),
    (lambda lp, o, a, m: L.grpo_loss(lp, o, a, m, beta=0.1), ValueError, "ref_logp"),
    (lambda lp, o, a, m: L.grpo_loss(lp, o, a, m, beta=-0.1, ref_logp=o), ValueError, "beta"),
    (lambda lp, o, a, m: L.kl_shaped_rewards(a[:-1], lp, o, m, beta=0.1), ValueError, "rewards"),
    (lambda lp, o, a, m: L.kl_shaped_rewards(a, lp, o, m, beta=0.1, reduce="max"), ValueError, "reduce"),
])
def test_bad_input_gets_clear_error(call, exc, word):
    with pytest.raises(exc, match=word):
        call(*_ok())


def test_accepts_numpy_and_bool_mask():
    logp, old, adv, mask = random_batch(2)
    a = L.policy_loss_per_token(logp.numpy(), old.numpy(), adv.numpy(), mask.numpy().astype(bool))
    b = L.policy_loss_per_token(logp, old, adv, mask)
    assert_close(a, b)


# -- issue 16: constants stay constants, and no overflow at the extremes ----------------------
def test_old_logp_and_adv_carry_no_gradient():
    # the issue's example: logp and old_logp are the same tensor; ρ's gradient must come from logp alone
    x = torch.zeros(2, 3, requires_grad=True)
    adv = torch.tensor([1.0, -1.0], requires_grad=True)
    L.grpo_loss(x, x, adv, torch.ones(2, 3)).loss.backward()
    # eq. (6) with ρ = 1: ∂loss/∂log π = −Â_i/(B·|y_i|) = ∓1/6 on every token
    assert torch.allclose(x.grad, torch.tensor([[-1 / 6] * 3, [1 / 6] * 3]))
    assert adv.grad is None
    old = torch.zeros(2, 3, requires_grad=True)
    L.grpo_loss(torch.zeros(2, 3, requires_grad=True), old, torch.tensor([1.0, -1.0]), torch.ones(2, 3)).loss.backward()
    assert old.grad is None


@pytest.mark.parametrize("level", ["token", "sequence"])
@pytest.mark.parametrize("z, a, dual_clip, expected", [
    (89.0, 1.0, None, -1.2),      # Â > 0, ρ = e^89 (inf in fp32): clipped at 1 + ε, loss −1.2·Â
    (89.0, 1.0, 3.0, -1.2),
    (89.0, -1.0, 3.0, 3.0),       # Â < 0 and ρ > c: the dual clip caps the loss at −c·Â = 3
    (89.0, 0.0, None, 0.0),       # Â = 0: no loss whatever ρ is (was inf·0 = NaN)
    (-100.0, 1.0, None, 0.0),     # ρ = e^−100: ρ·Â, i.e. 0 in fp32
    (-100.0, -1.0, None, 0.8),    # Â < 0, ρ < 1 − ε: clipped, loss −0.8·Â
])
def test_loss_and_gradient_finite_at_extreme_log_ratios(level, z, a, dual_clip, expected):
    lp = torch.full((2, 3), z, requires_grad=True)                      # fp32
    out = L.grpo_loss(lp, torch.zeros(2, 3), torch.full((2,), a), torch.ones(2, 3), dual_clip=dual_clip, level=level)
    out.loss.backward()
    assert out.loss.item() == pytest.approx(expected, abs=1e-6)
    assert torch.isfinite(lp.grad).all()
    if expected != 0.0 or a == 0.0:                                       # clipped / Â = 0: no push at all
        assert torch.equal(lp.grad, torch.zeros_like(lp.grad))


def test_log_ratio_bound_leaves_ordinary_ratios_bit_identical():
    # the clamp only acts beyond the clip boundary: below it the value and the gradient are unchanged
    g = torch.Generator().manual_seed(0)
    lp = (0.3 * torch.randn(4, 5, generator=g)).requires_grad_(True)
    old = torch.zeros(4, 5)
    adv = torch.tensor([1.0, -1.0, 0.5, -0.5])
    out = L.grpo_loss(lp, old, adv, torch.ones(4, 5), eps_low=0.2, eps_high=0.28)
    out.loss.backward()
    ratio = torch.exp(lp.detach())
    A = adv[:, None]
    ref = -torch.minimum(ratio * A, ratio.clamp(0.8, 1.28) * A).mean(-1).mean()
    assert out.loss.item() == pytest.approx(ref.item(), rel=1e-6)
    unclipped = ~(((A > 0) & (ratio > 1.28)) | ((A < 0) & (ratio < 0.8)))
    assert torch.allclose(lp.grad[unclipped], (-(ratio * A) / 20).expand(4, 5)[unclipped])


@pytest.mark.parametrize("d", [100.0, -100.0, 40.0, -40.0])
def test_k3_finite_with_finite_gradient_at_extreme_log_ratios(d):
    lp = torch.full((1, 2), d, requires_grad=True)                      # log(π_θ/π_ref) = d, fp32
    kl = L.kl_penalty(lp, torch.zeros(1, 2), "k3")
    kl.sum().backward()
    assert torch.isfinite(kl).all() and torch.isfinite(lp.grad).all() and (kl > 0).all()
    if d > 0:                                                            # u = e^−d: k3 = e^−d + d − 1 exactly
        assert kl[0, 0].item() == pytest.approx(math.exp(-d) + d - 1, rel=1e-6)
    else:                                                                # beyond the bound: k3's tangent line
        D = L.K3_LOG_RATIO_BOUND
        assert kl[0, 0].item() == pytest.approx(math.expm1(D) - D + math.expm1(D) * (-d - D), rel=1e-5)
        assert lp.grad[0, 0].item() == pytest.approx(-math.expm1(D), rel=1e-5)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_k3_value_and_gradient_bit_identical_to_the_plain_formula_inside_the_bound(dtype):
    # the bound must not move a single bit of ordinary runs (resume tests, cached notebook runs)
    lr = torch.linspace(-L.K3_LOG_RATIO_BOUND, 30.0, 101, dtype=dtype)[None].requires_grad_(True)
    kl = L.kl_penalty(lr, torch.zeros_like(lr), "k3")
    kl.sum().backward()
    plain_lr = lr.detach().clone().requires_grad_(True)
    plain = torch.expm1(-plain_lr) - (-plain_lr)
    plain.sum().backward()
    assert torch.equal(kl, plain) and torch.equal(lr.grad, plain_lr.grad)


def test_k3_grows_monotonically_past_the_bound():
    d = -torch.tensor([[10.0, 20.0, 30.0, 100.0, 1000.0]])
    kl = L.kl_penalty(d, torch.zeros_like(d), "k3")[0]
    assert (kl.diff() > 0).all() and torch.isfinite(kl).all()


def test_kl_penalty_without_a_mask_checks_finiteness():
    with pytest.raises(ValueError, match="logp must be finite"):
        L.kl_penalty(torch.tensor([[float("nan"), 0.0]]), torch.zeros(1, 2))
    with pytest.raises(ValueError, match="ref_logp must be finite"):
        L.kl_penalty(torch.zeros(1, 2), torch.tensor([[0.0, float("inf")]]))


@pytest.mark.parametrize("kw", [{"eps_low": "0.2"}, {"eps_high": True}, {"dual_clip": "3"}, {"beta": "0.1"}])
def test_string_and_bool_hyperparameters_are_refused(kw):
    z = torch.zeros(1, 2)
    with pytest.raises(TypeError, match=next(iter(kw))):
        L.grpo_loss(z, z, torch.ones(1), torch.ones(1, 2), ref_logp=z, **kw)
