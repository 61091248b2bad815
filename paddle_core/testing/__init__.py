"""Testing ops: one call checks an op the way its users will rely on it.

    from paddle_core.testing import check_op, check_grad, run_op

    check_op("scale", {"x": x}, {"scale": 2.0}, reference=lambda x, scale: scale * x)
    (out,) = run_op("add", {"x": a, "y": b})["out"]       # one op, NumPy in, NumPy out
    check_grad("mul", {"x": a, "y": b})                   # analytic vs finite differences

``check_op(op_type, inputs, attrs, *, reference=None, grad=True, devices=None, dtypes=None)``
runs these checks and raises one AssertionError listing every failure (check, device, dtype,
and the largest mismatch), not only the first:

``manifest``
    The op exists; its plugin's manifest passes the core's checks (those ``paddle-ops
    doctor`` reports) and has no problem recorded against it; its shape and grad rules resolve.
``run``
    The op appends and its kernel runs, on every device and dtype tested.
``shape rule``
    The output shapes and dtypes inferred when the op was appended are those the kernel
    returned (a dimension the rule leaves unknown matches any).
``reference``
    The results match ``reference(*inputs, **attrs)``: inputs in the op's slot order (a list
    for a duplicable slot; None for an omitted dispensable input followed by a given one),
    floating ones as float64 copies of what the kernel saw (already rounded to the tested
    dtype), others as given; ``attrs`` as given to check_op (defaults not filled in). It
    returns an array (the first output), a tuple (outputs in slot order) or a dict {output
    slot: array}; only the outputs it gives are compared. Tolerances (rtol, atol) per tested
    dtype are in ``TOLERANCES``: float16 (1e-2, 1e-3), bfloat16 (5e-2, 1e-2), float32
    (1e-5, 1e-5), float64 (1e-10, 1e-12); other dtypes must match exactly (a test of a less
    precise op may loosen one with pytest's ``monkeypatch.setitem``). Without a
    reference, each run is compared with the first one (the most precise dtype on the first
    device).
``grad``
    With ``grad=True``, the gradients of the weighted sum of every floating output with
    respect to every floating input match central finite differences, on each device in the
    most precise floating dtype tested there (``GRAD_TOLERANCES``: float64 with eps 1e-6, rtol
    1e-5, atol 1e-8; float32, eps 1e-3, rtol and atol 1e-2, only where float64 is not tested:
    a device without float64 kernels, or ``dtypes`` leaving it out). Gradients in float16 and
    bfloat16, where tested beside float64, are compared with float64's (computed from the same
    values and weights) within ``TOLERANCES``: finite differences in 16 bits say little. An op
    with floating inputs and no grad rule fails ("pass grad=False if it is not
    differentiable"); one that declares ``paddle_core.rules:no_grad`` (zero gradients) passes.
``save/load``
    The program holding the op serialises, parses back to the same bytes, and gives the same
    results, bit for bit, on each device.
``attrs``
    For each attr with a declared range or choices, values just outside (the bound itself
    when exclusive, the next number when inclusive, a value no choice has) are refused with
    an ``AttrError`` naming that attr.

Which runs: ``devices`` (default: every registered device type that is available here and
has a kernel for the op: ``cpu``, and ``cuda`` where ``paddle_core.CUDA.is_available()``) times
``dtypes`` (default: the floating dtypes the op's kernels declare on that device; with no
floating input, one run on the inputs as given). Inputs of floating dtype are converted to
the tested dtype, others are kept. A device asked for that is not available here is a
failure: mark such tests and skip them where there is no GPU. Keep inputs small: the gradient
check runs the op twice per input element. Every run has a scope of its own, so an op declared
``random`` draws the same numbers in each (finite differences and save/load compare like with
like); test such an op without a reference, in one dtype.

``paddle_core.testing.fixtures`` has opt-in pytest fixtures (an isolated registry, in-process
plugins from manifest text): ``pytest_plugins = ["paddle_core.testing.fixtures"]``.
"""

from ._check import GRAD_TOLERANCES, TOLERANCES, check_op
from ._run import check_grad, run_op

__all__ = ["GRAD_TOLERANCES", "TOLERANCES", "check_grad", "check_op", "run_op"]
