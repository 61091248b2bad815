"""Train a recurrent cell written as a while loop to sum sequences.

Each sequence x has T numbers; the cell reads one per step, h = a * h + b * x[t], and the
prediction is c * h after the last step (summing needs a = 1 and b * c = 1). The loop is one
``while_block`` op (``pc.layers.while_loop``): its body picks x[:, t] with a one-hot row built
from the step counter, so the same program serves every length T fed. Backward flows through
the loop (it keeps each step's carried values), and Adam trains a, b and c.
"""

import numpy as np

import paddle_core as pc
from paddle_core import ops

T, BATCH = 5, 64
rng = np.random.default_rng(0)

main, startup = pc.Program(), pc.Program()
with pc.program_guard(main, startup):
    x = pc.data("x", [BATCH, T])  # the sequences
    positions = pc.data("positions", [T])  # 0, 1, ..., T-1 (float32)
    target = pc.data("target", [BATCH])
    steps = pc.data("steps", [1], "int64")
    small = pc.Initializer("fill_constant", value=0.5)
    a, b, c = (
        pc.layers.create_parameter([1], attr=pc.ParamAttr(n, initializer=small)) for n in "abc"
    )

    def cell(t, h):
        here = ops.cast(ops.equal(positions, ops.cast(t, dtype="float32")), dtype="float32")
        x_t = ops.sum(ops.mul(x, here), axes=[1])  # x[:, t]
        h = ops.add(ops.mul(h, a), ops.mul(x_t, b))
        return ops.add(t, ops.fill_constant(shape=[1], dtype="int64", value=1)), h

    t0 = ops.fill_constant(shape=[1], dtype="int64", value=0)
    h0 = ops.fill_constant(shape=[BATCH], dtype="float32", value=0.0)
    _, h = pc.layers.while_loop(lambda t, h: ops.less(t, steps), cell, [t0, h0])
    err = ops.sub(ops.mul(h, c), target)
    loss = ops.mean(ops.mul(err, err))
    pc.optimizer.Adam(learning_rate=0.05).minimize(loss)

scope = pc.Scope()
exe = pc.Executor()
exe.run(startup, scope=scope)
fixed = {"positions": np.arange(T, dtype=np.float32), "steps": np.array([T])}
for step in range(301):
    seqs = rng.uniform(-1, 1, (BATCH, T)).astype(np.float32)
    feed = {**fixed, "x": seqs, "target": seqs.sum(axis=1)}
    (value,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
    if step % 100 == 0:
        print(f"step {step:3d}: loss {float(value):.5f}")
a_v, b_v, c_v = (float(scope.get(n)[0]) for n in "abc")
print(f"a = {a_v:.3f}, b * c = {b_v * c_v:.3f}  (summing: a = 1, b * c = 1)")
assert float(value) < 1e-3, "the cell did not learn to sum"
