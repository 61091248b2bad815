"""Train examples/train_digits.py's classifiers data-parallel, on N processes:

    paddle-ops launch -n 2 examples/train_digits_distributed.py [--model mlp|cnn] [--epochs 30]

Each rank trains on its shard of every epoch with batches of 32 // N (so that the ranks
together take the single-process script's batches of 32); the DistributedOptimizer sums the
gradients across the ranks (and the CNN's batch-norm statistics), so every rank holds the same
parameters after every step, those one process with batches of 32 would hold. Rank 0
reports the test accuracy and saves a checkpoint, which every rank then loads back.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
from train_digits import MODELS, build, load

import paddle_core as pc


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", choices=list(MODELS), default="cnn")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument(
        "--checkpoint",
        type=Path,
        default=Path("digits_checkpoint.npz"),
        help="where rank 0 saves the checkpoint (on a file system every rank sees)",
    )
    args = parser.parse_args()
    rank, size = pc.distributed.init()
    (x_train, y_train), (x_test, y_test) = load()
    shape = MODELS[args.model][1]
    x_train, x_test = x_train.reshape(-1, *shape), x_test.reshape(-1, *shape)
    # The CNN's batch norms normalise with the statistics of every rank's batch together.
    optimizer = pc.distributed.DistributedOptimizer(pc.optimizer.Adam(0.01), sync_batch_norm=True)
    main, startup, test, loss, accuracy, _ = build(args.model, optimizer=optimizer)
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    batch = max(32 // size, 1)
    for epoch in range(args.epochs):
        mine = pc.distributed.shard(len(x_train), seed=epoch)
        for start in range(0, len(mine), batch):
            rows = mine[start : start + batch]
            feed = {"image": x_train[rows], "label": y_train[rows]}
            exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    feed = {"image": x_test, "label": y_test}
    (test_accuracy,) = exe.run(test, feed=feed, fetch_list=[accuracy], scope=scope)
    params = [p.name for p in main.all_parameters()]  # batch norm's statistics included
    weights = np.concatenate([np.ravel(scope.get(name)) for name in params])
    pc.io.save_persistables(args.checkpoint, main, scope)  # rank 0 writes; every rank waits
    restored = pc.Scope()
    pc.io.load_persistables(args.checkpoint, main, restored)
    same = all(np.array_equal(scope.get(name), restored.get(name)) for name in params)
    size_text = f"{size} process" + ("es" if size > 1 else "")
    if rank == 0:
        print(
            f"{args.model} on {size_text}: test accuracy after {args.epochs} epochs: "
            f"{float(test_accuracy):.4f}; checkpoint restored on every rank: {same}; "
            f"parameter checksum {weights.sum():.6f}"
        )
    want = {"mlp": 0.97, "cnn": 0.98}[args.model]
    assert float(test_accuracy) >= want, f"test accuracy {float(test_accuracy):.4f} < {want}"
    assert same


if __name__ == "__main__":
    main()
