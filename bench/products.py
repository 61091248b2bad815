"""The matrix products of a program's run, and the least time they take on this machine.

A step whose time is its matrix products (the Transformer encoder's: 90% of it in GEMMs) can be
no faster than those products alone. ``products`` lists them from the program's ops (matmul
and its gradient, scaled_dot_product_attention and its gradient: the GEMMs each makes, at the
feed's batch size); ``floor_seconds`` times each alone, back to back, with NumPy's OpenBLAS and
with PyTorch's MKL, and adds up the faster of the two. No kernel of ours takes part, so the
figure bounds what any implementation on these GEMMs can reach: bench_models prints it beside
a training step it makes up most of.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from typing import NamedTuple

import numpy as np
from timing import optional

# Before timing, the other libraries' idle threads (ONNX Runtime's, PyTorch's spin after a
# call) fall asleep: none competes with the GEMMs.
PAUSE = 0.5


class Gemm(NamedTuple):
    """``batch`` products C[M, N] = op(A) op(B), A [M, K] (or [K, M] when ``ta``), B [K, N]
    (or [N, K] when ``tb``)."""

    batch: int
    M: int
    N: int
    K: int
    ta: bool = False
    tb: bool = False

    @property
    def flops(self) -> int:
        return 2 * self.batch * self.M * self.N * self.K


def products(program, batch: int) -> Counter[Gemm]:
    """The GEMMs one run of ``program`` makes, with how many times each, where the feed has
    ``batch`` rows (the variables' unknown leading dimension)."""
    block = program.global_block()

    def shape(name: str) -> list[int]:
        return [batch if d is None or d < 0 else d for d in block.var(name).shape]

    found: Counter[Gemm] = Counter()
    for op in block.ops:
        if op.type in ("matmul", "matmul_grad"):
            found.update(_matmul(op, shape))
        elif op.type in ("scaled_dot_product_attention", "scaled_dot_product_attention_grad"):
            found.update(_attention(op, shape))
    return found


def _matmul(op, shape) -> list[Gemm]:
    """matmul's product, or its gradient's two (x's and y's, where wanted). x's batch
    dimensions fold into its rows against a matrix y, as the kernel folds them."""
    x, y = shape(op.input("x")[0]), shape(op.input("y")[0])
    tx, ty = op.attr("transpose_x"), op.attr("transpose_y")
    M, K = (x[-1], x[-2]) if tx else (x[-2], x[-1])
    N = y[-2] if ty else y[-1]
    batch = math.prod(x[:-2])
    if len(y) == 2 and not tx:
        M, batch = M * batch, 1
    if op.type == "matmul":
        return [Gemm(batch, M, N, K, tx, ty)]
    found = []
    if op.output("x_grad"):  # d[M, N] op(y)^T
        found.append(
            Gemm(batch, M, K, N, False, not ty) if not tx else Gemm(batch, K, M, N, ty, True)
        )
    if op.output("y_grad"):  # op(x)^T d, or d^T op(x)
        found.append(
            Gemm(batch, K, N, M, not tx, False) if not ty else Gemm(batch, N, K, M, True, tx)
        )
    return found


def _attention(op, shape) -> list[Gemm]:
    """Attention's products per (batch, head): scores q k^T and out = P v; its gradient
    recomputes the scores and makes v's, P's, k's and q's (FlashAttention's five)."""
    q, k, v = (shape(op.input(slot)[0]) for slot in ("q", "k", "v"))
    bh, (L, E), S, Ev = math.prod(q[:-2]), q[-2:], k[-2], v[-1]
    scores = Gemm(bh, L, S, E, False, True)
    if op.type == "scaled_dot_product_attention":
        return [scores, Gemm(bh, L, Ev, S)]
    return [
        scores,
        Gemm(bh, S, Ev, L, True, False),  # v_grad = P^T out_grad
        Gemm(bh, L, S, Ev, False, True),  # dP = out_grad v^T
        Gemm(bh, S, E, L, True, False),  # k_grad = dS^T q
        Gemm(bh, L, E, S),  # q_grad = dS k
    ]


def floor_seconds(gemms: Counter[Gemm], threads: int, repeat: int = 9) -> float | None:
    """The time of ``gemms`` made one after another at ``threads`` threads, each in the least
    time NumPy's or PyTorch's GEMM took over ``repeat`` calls of it alone; None without
    PyTorch."""
    torch = optional("torch")
    limits = optional("threadpoolctl")
    if torch is None:
        return None
    torch.set_num_threads(threads)
    rng = np.random.default_rng(0)
    time.sleep(PAUSE)
    total = 0.0
    for g, count in gemms.items():
        a = rng.standard_normal((g.batch, *((g.K, g.M) if g.ta else (g.M, g.K))), np.float32)
        b = rng.standard_normal((g.batch, *((g.N, g.K) if g.tb else (g.K, g.N))), np.float32)
        a, b = (t[0] if g.batch == 1 else t for t in (a, b))  # one matrix: a plain GEMM
        a, b = (t.swapaxes(-1, -2) if flag else t for t, flag in ((a, g.ta), (b, g.tb)))
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)  # (views alike: the same transposes)
        best = fastest(lambda ta=ta, tb=tb: torch.matmul(ta, tb), repeat)
        if limits is not None:
            with limits.threadpool_limits(threads, user_api="blas"):
                best = min(best, fastest(lambda a=a, b=b: np.matmul(a, b), repeat))
        total += count * best
    return total


def fastest(fn, repeat: int) -> float:
    """The least seconds a call of ``fn`` took, over ``repeat`` after two untimed."""
    fn(), fn()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)
