"""Run under `paddle-ops launch -n N worker_contract.py MODEL STEPS BATCH`: N ranks with batch
B each against one process with batch N * B, step by step. Rank 0 runs that process too (the
same program built without DistributedOptimizer, from the same initial values) and prints one
JSON line per step: the largest differences of the loss and of the parameters from it, and
whether every rank holds the very same parameter bytes (batch norm's running statistics
included)."""

from __future__ import annotations

import json
import sys

import numpy as np
from mpi4py import MPI

import paddle_core as pc

MODEL, STEPS, BATCH = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
OVERLAP = "--overlap" in sys.argv[4:]
RANK, SIZE = pc.distributed.init()


def mlp(image):
    return pc.layers.fc(pc.layers.fc(image, 32, act="tanh"), 10)


def cnn(image):  # no batch norm: its statistics stay per rank, so it could not match
    x = pc.layers.conv2d(image, 8, 3, padding=1, act="relu")
    x = pc.layers.pool2d(x, 2, pool_stride=2)
    x = pc.layers.conv2d(x, 16, 3, padding=1, act="relu")
    return pc.layers.fc(x, 10)


def cnn_bn(image):  # with sync_batch_norm: the statistics of every rank's batch together
    x = pc.layers.conv2d(image, 8, 3, padding=1, bias_attr=False)
    x = pc.layers.pool2d(pc.layers.batch_norm(x, act="relu"), 2, pool_stride=2)
    return pc.layers.fc(x, 10)


NETS = {"mlp": (mlp, [64]), "cnn": (cnn, [1, 8, 8]), "cnn_bn": (cnn_bn, [1, 8, 8])}


def build(distributed: bool):
    net, shape = NETS[MODEL]
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", shape)
        label = pc.layers.data("label", [1], dtype="int64")
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(net(image), label))
        optimizer = pc.optimizer.Adam(0.01)
        if distributed:
            sync = MODEL == "cnn_bn"
            optimizer = pc.distributed.DistributedOptimizer(
                optimizer, 0.001, sync_batch_norm=sync, overlap=OVERLAP
            )
        optimizer.minimize(loss)
    return main, startup, loss


rng = np.random.default_rng(7)
n = 8 * SIZE * BATCH
images = rng.standard_normal((n, *NETS[MODEL][1])).astype(np.float32)
labels = rng.integers(0, 10, (n, 1))
order = np.random.default_rng(3).permutation(n)  # pc.distributed.shard's, for every rank
mine = pc.distributed.shard(n, seed=3)
assert np.array_equal(mine, order[RANK::SIZE])

exe = pc.Executor("cpu")
main, startup, loss = build(True)
scope = pc.Scope()
exe.run(startup, scope=scope)
params = [p.name for p in main.all_parameters()]
comm = MPI.COMM_WORLD
if RANK == 0:
    ref_main, ref_startup, ref_loss = build(False)
    ref_scope = pc.Scope()
    exe.run(ref_startup, scope=ref_scope)
    for name in params:  # rank 0's initial values, which the startup broadcast to every rank
        ref_scope.set_var(name, np.array(scope.get(name)))

for step in range(STEPS):
    rows = mine[step * BATCH : (step + 1) * BATCH]
    (value,) = exe.run(
        main, feed={"image": images[rows], "label": labels[rows]}, fetch_list=[loss], scope=scope
    )
    state = b"".join(np.ascontiguousarray(scope.get(name)).tobytes() for name in params)
    losses, states = comm.gather(float(value), root=0), comm.gather(state, root=0)
    if RANK == 0:
        rows = order[step * SIZE * BATCH : (step + 1) * SIZE * BATCH]
        (want,) = exe.run(
            ref_main,
            feed={"image": images[rows], "label": labels[rows]},
            fetch_list=[ref_loss],
            scope=ref_scope,
        )
        param_diff = max(
            float(np.abs(np.asarray(scope.get(p)) - np.asarray(ref_scope.get(p))).max())
            for p in params
        )
        print(
            json.dumps(
                {
                    "step": step,
                    "loss_diff": abs(float(np.mean(losses)) - float(want)),
                    "loss": float(want),
                    "param_diff": param_diff,
                    "ranks_identical": all(s == states[0] for s in states),
                }
            ),
            flush=True,
        )
