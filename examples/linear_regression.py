"""Fit y = 3x - 2 by gradient descent, with paddle-ops-math ops and the core's backward.

One program holds the model (a matmul and a bias), the loss (mean squared error), the
gradients (append_backward) and the parameter updates (ops writing the parameters back);
each Executor.run is one training step, run by the compiled runtime.
"""

import numpy as np

import paddle_core as pc

rng = np.random.default_rng(0)
x_train = rng.uniform(-1, 1, (256, 1)).astype(np.float32)
y_train = 3 * x_train - 2 + rng.normal(0, 0.05, (256, 1)).astype(np.float32)

prog = pc.Program()
with pc.program_guard(prog):
    x = pc.data("x", [None, 1])
    y = pc.data("y", [None, 1])
    block = prog.global_block()
    w = block.create_parameter("w", [1, 1])
    b = block.create_parameter("b", [1])
    pred = pc.ops.add(pc.ops.matmul(x, w), b)
    err = pc.ops.sub(pred, y)
    loss = pc.ops.mean(pc.ops.mul(err, err))
    for param, grad in pc.append_backward(loss):
        step = pc.ops.scale(grad, scale=-0.5)  # learning rate 0.5
        block.append_op("add", inputs={"x": param, "y": step}, outputs={"out": param})

scope = pc.Scope()
scope.set_var("w", np.zeros((1, 1), np.float32))
scope.set_var("b", np.zeros(1, np.float32))
exe = pc.Executor("cpu")
for epoch in range(60):
    (value,) = exe.run(prog, feed={"x": x_train, "y": y_train}, fetch_list=[loss], scope=scope)
    if epoch % 20 == 0:
        print(f"step {epoch:2d}: loss {float(value):.4f}")

w_fit, b_fit = float(scope.get("w")[0, 0]), float(scope.get("b")[0])
print(
    f"fitted y = {w_fit:.3f} x {b_fit:+.3f}  (true: y = 3x - 2); prepared once: {exe.prepare_count == 1}"
)
assert abs(w_fit - 3) < 0.05 and abs(b_fit + 2) < 0.05
