"""Fit y = 3x - 2 by gradient descent, with paddle-ops-math ops and the core's backward.

The startup program holds the parameters' initializers; the main program holds the model (a
matmul and a bias), the loss (mean squared error), the gradients (append_backward) and the
parameter updates (ops writing the parameters back, in the "optimize" role). Each
Executor.run of it is one training step, run by the compiled runtime; its evaluation program
(clone(for_test=True)) predicts without training.
"""

import numpy as np

import paddle_core as pc

rng = np.random.default_rng(0)
x_train = rng.uniform(-1, 1, (256, 1)).astype(np.float32)
y_train = 3 * x_train - 2 + rng.normal(0, 0.05, (256, 1)).astype(np.float32)

main, startup = pc.Program(), pc.Program()
with pc.program_guard(main, startup):
    x = pc.data("x", [None, 1])
    y = pc.data("y", [None, 1])
    block = main.global_block()
    zeros = pc.Initializer("fill_constant", value=0.0)
    w = block.create_parameter("w", [1, 1], initializer=zeros)
    b = block.create_parameter("b", [1], initializer=zeros)
    pred = pc.ops.add(pc.ops.matmul(x, w), b)
    err = pc.ops.sub(pred, y)
    loss = pc.ops.mean(pc.ops.mul(err, err))
    for param, grad in pc.append_backward(loss):
        with main.role_guard("optimize"):
            step = pc.ops.scale(grad, scale=-0.5)  # learning rate 0.5
            block.append_op("add", inputs={"x": param, "y": step}, outputs={"out": param})
test = main.clone(for_test=True)  # the model and the loss, without backward and updates

scope = pc.Scope()
exe = pc.Executor("cpu")
exe.run(startup, scope=scope)  # w = 0, b = 0
for epoch in range(60):
    (value,) = exe.run(main, feed={"x": x_train, "y": y_train}, fetch_list=[loss], scope=scope)
    if epoch % 20 == 0:
        print(f"step {epoch:2d}: loss {float(value):.4f}")

w_fit, b_fit = float(scope.get("w")[0, 0]), float(scope.get("b")[0])
print(
    f"fitted y = {w_fit:.3f} x {b_fit:+.3f}  (true: y = 3x - 2); "
    f"prepared once: {exe.prepare_count == 2}"  # the startup program, and the main one
)
assert abs(w_fit - 3) < 0.05 and abs(b_fit + 2) < 0.05
(guess,) = exe.run(test, feed={"x": np.array([[2.0]], np.float32)}, fetch_list=[pred], scope=scope)
print(f"prediction for x = 2: {float(guess[0, 0]):.3f}")
assert abs(float(guess[0, 0]) - 4) < 0.1 and float(scope.get("w")[0, 0]) == w_fit
