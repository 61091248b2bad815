"""Expression.value() overhead: a Model's lazy evaluation beside Executor.run of the same
pruned program, in this run (rounds alternate between the two, after the first calls).

Three cases, each fed a new batch on every call (a feed is a change, so every call runs):
  tiny     one scale op on 16 floats: what the model's bookkeeping costs, nearly alone
  forward  the digits MLP's class probabilities (64 -> 128 relu -> 10 softmax), batches of 32,
           from a model that also holds its training step (which the subgraph leaves out)
  step     that model's training step (Adam): TrainStep.value() beside Executor.run of the
           training program fetching the loss
``Executor.run`` runs ``model.program_for([target])``: the ops the expression needs, nothing
else (for the step, the training program itself), with its repeated-call fast path.
Also shown: a value() served from the cache (nothing changed: no op runs).
Target: value() within 1.2x of Executor.run after the first call.

    python bench/bench_expression.py [--repeat 2000] [--threads 1]
"""

from __future__ import annotations

import argparse

import numpy as np
from timing import interleaved

import paddle_core as pc

BATCH = 32


def tiny(threads: int):
    model = pc.Model(num_threads=threads)
    x = pc.layers.data("x", [16], append_batch_size=False, model=model)
    y = pc.ops.scale(x, scale=2.0)
    feeds = [{"x": np.full(16, i, np.float32)} for i in range(2)]
    return model, y, feeds


def mlp(threads: int):
    model = pc.Model(num_threads=threads)
    image = pc.layers.data("image", [64], model=model)
    label = pc.layers.data("label", [1], dtype="int64", model=model)
    logits = pc.layers.fc(pc.layers.fc(image, 128, act="relu"), 10)
    probabilities = pc.layers.softmax(logits)
    loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
    step = model.minimize(loss, pc.optimizer.Adam(0.001))
    rng = np.random.default_rng(0)
    feeds = [
        {
            "image": rng.random((BATCH, 64), dtype=np.float32),
            "label": rng.integers(0, 10, (BATCH, 1)),
        }
        for _ in range(2)
    ]
    return model, probabilities, step, feeds


def compare(model, target, feeds: list[dict], threads: int, program=None) -> tuple:
    """(value() call, Executor.run call) alternating between two feeds, checked equal."""
    program = program or model.program_for([target])
    exe = pc.Executor(num_threads=threads)
    scope = model.scope
    fetch = [target.name()]
    names = {k: v for k, v in feeds[0].items() if k in program.global_block().vars}
    ours_feeds = [{k: f[k] for k in names} for f in feeds]
    theirs_feeds = [dict(f) for f in ours_feeds]
    state = {"ours": 0, "theirs": 0}

    def ours():
        state["ours"] ^= 1
        return target.value(ours_feeds[state["ours"]])

    def theirs():
        state["theirs"] ^= 1
        return exe.run(program, feed=theirs_feeds[state["theirs"]], fetch_list=fetch, scope=scope)

    if not isinstance(target, pc.TrainStep):  # a step changes the parameters: not comparable
        np.testing.assert_array_equal(ours(), theirs()[0])
        np.testing.assert_array_equal(ours(), theirs()[0])
    return ours, theirs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2000)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    cases = {}
    model, y, feeds = tiny(args.threads)
    cases["tiny (1 op)"] = compare(model, y, feeds, args.threads)
    model, probabilities, step, feeds = mlp(args.threads)
    ops = len(model.program_for([probabilities]).global_block().ops)
    cases[f"forward ({ops} ops)"] = compare(model, probabilities, feeds, args.threads)
    training = model.main_program  # the executor runs the whole training program
    ops = len(model.program_for([step]).global_block().ops)
    cases[f"step ({ops} ops)"] = compare(model, step, feeds, args.threads, training)

    probabilities.value(feeds[0])
    cached = {"cached value()": lambda: probabilities.value()}  # nothing changed: no run

    print(
        f"{'case':18} {'value() µs':>11} {'Executor.run µs':>16} {'ratio':>7}"
        f"   (median of {args.repeat}, {args.threads} thread(s))"
    )
    for name, (ours, theirs) in cases.items():
        times = interleaved({"ours": ours, "theirs": theirs}, args.repeat, warmup_seconds=0.2)
        a, b = times["ours"] * 1e6, times["theirs"] * 1e6
        print(f"{name:18} {a:11.2f} {b:16.2f} {a / b:6.2f}x")
    times = interleaved(cached, args.repeat)
    print(f"{'cached value()':18} {times['cached value()'] * 1e6:11.2f}")
    print("\ntarget: value() within 1.2x of Executor.run of the same pruned program")


if __name__ == "__main__":
    main()
