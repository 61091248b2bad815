"""Run under `paddle-ops launch -n N worker_failures.py CASE`: one way for a job to go wrong.

- differ: rank 1 builds a wider hidden layer. Every rank catches the DistributedError of the
  startup's program check and writes it to rank<R>.txt; the job then exits with status 3.
- raise: rank 1 raises after the startup while the others go on into a training step.
- timeout: rank 1 sleeps past PADDLE_DIST_TIMEOUT before its first step.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

import paddle_core as pc

CASE = sys.argv[1]
RANK, SIZE = pc.distributed.init()

main, startup = pc.Program(), pc.Program()
with pc.program_guard(main, startup):
    image = pc.layers.data("image", [64])
    label = pc.layers.data("label", [1], dtype="int64")
    hidden = 33 if CASE == "differ" and RANK == 1 else 32
    logits = pc.layers.fc(pc.layers.fc(image, hidden, act="relu"), 10)
    loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
    pc.distributed.DistributedOptimizer(pc.optimizer.SGD(0.1)).minimize(loss)

exe, scope = pc.Executor("cpu"), pc.Scope()
try:
    exe.run(startup, scope=scope)
except pc.DistributedError as e:  # (a file per rank: the ranks' output interleaves)
    Path(f"rank{RANK}.txt").write_text(f"rank {RANK} caught DistributedError: {e}")
    MPI.COMM_WORLD.Barrier()
    sys.exit(3)
if CASE == "raise" and RANK == 1:
    raise RuntimeError("rank 1 fails on purpose")
if CASE == "timeout" and RANK == 1:
    time.sleep(60)
feed = {"image": np.ones((4, 64), np.float32), "label": np.zeros((4, 1), np.int64)}
exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
print(f"rank {RANK} finished a step", flush=True)
