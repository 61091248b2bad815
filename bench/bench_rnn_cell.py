"""A recurrent cell written by the user: one training step of an LSTM cell built from ordinary
ops and run over the time steps by pc.layers.rnn, beside PyTorch CPU eager running a Python
loop over nn.LSTMCell, at one and two threads, measured in this run (rounds alternate between
the systems). The model, for both:
  x [16, 32, 256] -> LSTM cell, hidden 256, batch first -> mean of the squared outputs -> SGD

Ours is one prepared plan per training step: a recurrent_block whose step block (two GEMMs,
split, the gates) runs as a scan of the compiled runtime with no Python between time steps,
and a recurrent_block_backward running the step's gradient block once per time step, last
first, that sums the weights' gradients with its own ops. PyTorch loops over the time steps in
Python, calling nn.LSTMCell, then runs loss.backward() and optim.SGD.

    python bench/bench_rnn_cell.py [--rounds 15] [--threads 1 2] [--cpu-time]
    (PyTorch: pip install torch==2.13.0; --cpu-time: the process's CPU time, not the wall clock)
"""

from __future__ import annotations

import argparse
import math

import numpy as np
import timing
from timing import optional

import paddle_core as pc
from paddle_core import ops

STEPS, BATCH, HIDDEN = 32, 16, 256


def lstm_cell(w_ih, w_hh, b_ih, b_hh):
    """PyTorch's LSTMCell (gates i, f, g, o), written with ops; out = h."""

    def cell(x_t, states):
        h, c = states
        gates = ops.add(ops.matmul(x_t, w_ih, transpose_y=True), b_ih)
        gates = ops.add(gates, ops.add(ops.matmul(h, w_hh, transpose_y=True), b_hh))
        i, f, g, o = ops.split(gates, num=4, axis=-1)
        c = ops.add(ops.mul(ops.sigmoid(f), c), ops.mul(ops.sigmoid(i), ops.tanh(g)))
        h = ops.mul(ops.sigmoid(o), ops.tanh(c))
        return h, (h, c)

    return cell


def ours(x: np.ndarray, threads: int):
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        xs = pc.layers.data("x", [STEPS, HIDDEN])
        zeros = pc.layers.fill_constant_batch_size_like(xs, [BATCH, HIDDEN], "float32", 0.0)
        weights = [
            pc.layers.create_parameter(shape, "float32", attr=f"cell.{name}")
            for name, shape in (
                ("w_ih", [4 * HIDDEN, HIDDEN]),
                ("w_hh", [4 * HIDDEN, HIDDEN]),
                ("b_ih", [4 * HIDDEN]),
                ("b_hh", [4 * HIDDEN]),
            )
        ]
        out, _ = pc.layers.rnn(lstm_cell(*weights), xs, (zeros, zeros))
        loss = pc.layers.mean(ops.square(out))
        pc.optimizer.SGD(0.01).minimize(loss)
    scope, exe = pc.Scope(), pc.Executor(num_threads=threads)
    exe.run(startup, scope=scope)
    feed = {"x": x}
    return lambda: exe.run(main, feed=feed, scope=scope)


def torch_step(torch, x: np.ndarray, threads: int):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    cell = torch.nn.LSTMCell(HIDDEN, HIDDEN)
    optimizer = torch.optim.SGD(cell.parameters(), lr=0.01)
    xs = torch.from_numpy(x)

    def step():
        optimizer.zero_grad(set_to_none=True)
        h = c = torch.zeros(BATCH, HIDDEN)
        outs = []
        for t in range(STEPS):
            h, c = cell(xs[:, t], (h, c))
            outs.append(h)
        loss = torch.stack(outs, 1).square().mean()
        loss.backward()
        optimizer.step()

    return step


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--cpu-time", action="store_true", help="time with the CPU time")
    args = parser.parse_args()
    if args.cpu_time:
        timing.use_cpu_time()
    timing.banner(__doc__)
    torch = optional("torch")
    x = np.random.default_rng(0).standard_normal((BATCH, STEPS, HIDDEN)).astype(np.float32)
    print(f"{'threads':>7} {'paddle-core ms':>15} {'PyTorch ms':>11} {'ours / PyTorch':>15}")
    for threads in args.threads:
        calls = {"ours": ours(x, threads)}
        if torch is not None:
            calls["torch"] = torch_step(torch, x, threads)
        ms = {
            k: v * 1e3
            for k, v in timing.interleaved(calls, args.rounds, warmup_seconds=1.0).items()
        }
        torch_ms = ms.get("torch", math.nan)
        print(f"{threads:7d} {ms['ours']:15.2f} {torch_ms:11.2f} {ms['ours'] / torch_ms:14.2f}x")
    print("\nmedians of one training step each")


if __name__ == "__main__":
    main()
