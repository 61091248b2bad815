"""Recurrent training speed: one training step of a word-level language model, ours beside
PyTorch CPU eager, at one and two threads, measured in this run (rounds alternate between the
systems). The model, for LSTM and for GRU alike:
  ids [16, 32] -> embedding 1000 x 128 -> 1 layer, hidden 256 (batch first) -> linear 256 x 1000
  at every step -> softmax cross-entropy against the next ids -> Adam

Ours is one prepared plan per step run by the compiled loop: pc.layers.lstm / gru (the ops'
input projection as one GEMM over all steps, one product per step for the recurrence, oneDNN's
inner product on weight_hh reordered once per run, each weight's gradient as one GEMM over all
steps), with the transposes batch_first needs. PyTorch runs
nn.Embedding, nn.LSTM / nn.GRU (batch_first=True), nn.Linear, F.cross_entropy and
optim.Adam(foreach). Target: our step in at most 0.8x PyTorch's time.

``--model composed`` times the LSTM written by hand from ops instead (unrolled over the 32
steps: a slice, two products, the gates and the cell per step, 1,107 ops with the gradients)
beside the same PyTorch nn.LSTM step: what a recurrence costs where no fused op fits. Its
gradients chain through accumulators (the input's per-step slices and each weight's per-step
products add into one buffer; see docs/writing-op-plugins.md, "Grad rules").

    python bench/bench_seq.py [--rounds 15] [--model lstm|gru|composed|all] [--threads 1 2]
                              [--cpu-time]
    (PyTorch: pip install torch==2.13.0; --cpu-time: the process's CPU time, not the wall clock)
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import timing
from timing import optional

import paddle_core as pc

VOCAB, EMBED, HIDDEN, STEPS, BATCH = 1000, 128, 256, 32, 16


def batch(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Token ids [B, T] and the next token of each, [B, T]."""
    tokens = np.random.default_rng(seed).integers(0, VOCAB, (BATCH, STEPS + 1), dtype=np.int64)
    return tokens[:, :-1].copy(), tokens[:, 1:].copy()


def composed_lstm(x: pc.Variable) -> pc.Variable:
    """An LSTM over x [B, T, EMBED] from ops, step by step; its outputs [B, T, HIDDEN]."""
    ops = pc.ops
    w_ih = pc.layers.create_parameter([EMBED, 4 * HIDDEN], "float32", "w_ih")
    w_hh = pc.layers.create_parameter([HIDDEN, 4 * HIDDEN], "float32", "w_hh")
    bias = pc.layers.create_parameter([4 * HIDDEN], "float32", "b", pc.initializer.Constant(0.0))
    h = c = pc.layers.fill_constant_batch_size_like(x, [-1, HIDDEN], "float32", 0.0)
    outs = []
    for t in range(STEPS):
        x_t = ops.reshape(ops.slice(x, axes=[1], starts=[t], ends=[t + 1]), shape=[-1, EMBED])
        gates = ops.add(ops.add(ops.matmul(x_t, w_ih), ops.matmul(h, w_hh)), bias)
        i, f, g, o = ops.split(gates, num=4, axis=1)
        sigmoid, tanh = pc.layers.sigmoid, pc.layers.tanh
        c = ops.add(ops.mul(sigmoid(f), c), ops.mul(sigmoid(i), tanh(g)))
        h = ops.mul(sigmoid(o), tanh(c))
        outs.append(h)
    return ops.stack(outs, axis=1)


def ours(kind: str, ids: np.ndarray, targets: np.ndarray, threads: int):
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("ids", [STEPS], dtype="int64")
        label = pc.layers.data("label", [STEPS, 1], dtype="int64")
        embedded = pc.layers.embedding(x, [VOCAB, EMBED])
        if kind == "composed":
            out = composed_lstm(embedded)
        else:
            out, _ = getattr(pc.layers, kind)(embedded, HIDDEN)
        logits = pc.layers.fc(out, VOCAB, num_flatten_dims=2)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
        pc.optimizer.Adam(0.001).minimize(loss)
    scope, exe = pc.Scope(), pc.Executor(num_threads=threads)
    exe.run(startup, scope=scope)
    feed = {"ids": ids, "label": targets[:, :, None]}
    return lambda: exe.run(main, feed=feed, scope=scope)


def torch_step(torch, kind: str, ids: np.ndarray, targets: np.ndarray, threads: int):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    nn = torch.nn
    recurrent = {"gru": nn.GRU}.get(kind, nn.LSTM)(EMBED, HIDDEN, batch_first=True)
    model = nn.ModuleList([nn.Embedding(VOCAB, EMBED), recurrent, nn.Linear(HIDDEN, VOCAB)])
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001, foreach=True)
    x, y = torch.from_numpy(ids), torch.from_numpy(targets).reshape(-1)
    embedding, _, head = model

    def step():
        optimizer.zero_grad(set_to_none=True)
        out, _ = recurrent(embedding(x))
        loss = torch.nn.functional.cross_entropy(head(out).reshape(-1, VOCAB), y)
        loss.backward()
        optimizer.step()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--model", choices=["lstm", "gru", "composed", "all"], default="all")
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--cpu-time", action="store_true", help="time with the CPU time")
    args = parser.parse_args()
    if args.cpu_time:
        timing.use_cpu_time()
    timing.banner(__doc__)
    torch = optional("torch")
    ids, targets = batch()
    for kind in ("lstm", "gru", "composed") if args.model == "all" else (args.model,):
        print(
            f"{kind}:\n{'threads':>7} {'paddle-core ms':>15} {'PyTorch ms':>11} {'ours / PyTorch':>15}"
        )
        for threads in args.threads:
            calls = {"ours": ours(kind, ids, targets, threads)}
            if torch is not None:
                calls["torch"] = torch_step(torch, kind, ids, targets, threads)
            ms = {
                k: v * 1e3
                for k, v in timing.interleaved(calls, args.rounds, warmup_seconds=1.0).items()
            }
            torch_ms = ms.get("torch", math.nan)
            print(
                f"{threads:7d} {ms['ours']:15.2f} {torch_ms:11.2f} {ms['ours'] / torch_ms:14.2f}x"
            )
    print("\ntarget: ours / PyTorch <= 0.80; medians of one training step each")


if __name__ == "__main__":
    main()
