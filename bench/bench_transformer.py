"""Transformer encoder speed: a training step and an inference, ours beside PyTorch CPU eager.

At one and two threads, measured in this run (rounds alternate between the systems). The model:
two encoder layers (d_model 256, 4 heads, feed-forward 1024, relu, post-norm, dropout 0: the
same computation on both sides), over batches of 8 sequences of 128 vectors. Training: the
mean square of the output as the loss, its gradients and an Adam step. Inference: the output
alone (PyTorch: eval() under no_grad, its fast path where it takes one).

Ours is pc.layers.transformer_encoder_layer (the fused scaled_dot_product_attention op) in
one prepared plan per step; PyTorch runs nn.TransformerEncoder(nn.TransformerEncoderLayer(...,
batch_first=True), 2) (bench/networks.py builds both). Targets: training at most 0.7x
PyTorch's time, inference at most 0.8x.

    python bench/bench_transformer.py [--rounds 9] [--threads 1 2] [--cpu-time]
    (PyTorch: pip install torch==2.13.0; --cpu-time: the process's CPU time, not the wall clock)
"""

from __future__ import annotations

import argparse
import math

import networks
import numpy as np
import timing
from timing import optional

import paddle_core as pc

# the shape of a batch, [batch, sequence, d_model]; d_model, heads, feed_forward, dropout (none)
_, SHAPE, ENCODER = networks.CONFIGS["transformer"]


def ours(x: np.ndarray, threads: int):
    """(training step, inference) callables."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        out = networks.transformer_encoder(pc.layers.data("x", list(SHAPE[1:])), **ENCODER)
        loss = pc.layers.mean(pc.ops.mul(out, out))
        test = main.clone(for_test=True)
        pc.optimizer.Adam(0.001).minimize(loss)
    scope, exe = pc.Scope(), pc.Executor(num_threads=threads)
    exe.run(startup, scope=scope)
    feed = {"x": x}
    return (
        lambda: exe.run(main, feed=feed, scope=scope),
        lambda: exe.run(test, feed=feed, fetch_list=[out.name], scope=scope),
    )


def torch_calls(torch, x: np.ndarray, threads: int):
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = networks.torch_models().Encoder(**ENCODER)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.001, foreach=True)
    inputs = torch.from_numpy(x)

    def train():
        model.train()
        optimizer.zero_grad(set_to_none=True)
        out = model(inputs)
        (out * out).mean().backward()
        optimizer.step()

    def infer():
        model.eval()
        with torch.no_grad():
            model(inputs)

    return train, infer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--cpu-time", action="store_true", help="time with the CPU time")
    args = parser.parse_args()
    if args.cpu_time:
        timing.use_cpu_time()
    timing.banner(__doc__)
    torch = optional("torch")
    x = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    print(f"{'':9} {'threads':>7} {'paddle-core ms':>15} {'PyTorch ms':>11} {'ours / PyTorch':>15}")
    for threads in args.threads:
        train, infer = ours(x, threads)
        theirs = torch_calls(torch, x, threads) if torch is not None else None
        for k, what in enumerate(("training", "inference")):
            calls = {"ours": (train, infer)[k]}
            if theirs is not None:
                calls["torch"] = theirs[k]
            ms = {
                name: t * 1e3
                for name, t in timing.interleaved(calls, args.rounds, warmup_seconds=1.0).items()
            }
            torch_ms = ms.get("torch", math.nan)
            ratio = ms["ours"] / torch_ms
            print(f"{what:9} {threads:7d} {ms['ours']:15.2f} {torch_ms:11.2f} {ratio:14.2f}x")
    print("\ntargets: ours / PyTorch <= 0.70 (training), <= 0.80 (inference)")


if __name__ == "__main__":
    main()
