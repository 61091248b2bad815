"""paddle_core.testing: check_op on real ops of both plugins, and each of its checks failing,
with a message naming the check, on in-process ops built to break it."""

from __future__ import annotations

import math

import numpy as np
import pytest

import paddle_core as pc
from paddle_core.proto import framework_pb2 as pb
from paddle_core.testing import _run, check_grad, check_op
from paddle_core.testing._check import outside_values

pytest_plugins = ["paddle_core.testing.fixtures", "pytester"]

RNG = np.random.default_rng(0)
X = RNG.standard_normal((2, 3))

# An op with a Python kernel and its gradient, each replaceable by the tests below.
TRIPLE = """
ops {
  proto {
    type: "triple" comment: "3 * x."
    inputs { name: "x" comment: "Input." } outputs { name: "out" comment: "3 * x." }
    attrs {
      name: "mode" type: STRING comment: "How to triple." default { s: "add" }
      choices { strings: ["add", "mul"] }
    }
    attrs {
      name: "p" type: FLOAT comment: "A probability, unused." default { f: 0.5 }
      min { value: 0 } max { value: 1 exclusive: true }
    }
  }
  kernels { device: "cpu" dtypes: [FLOAT32, FLOAT64] python: "triple_cpu" }
  shape_rule: "shape"
  grad_rule: "%s"
}
ops {
  proto {
    type: "triple_grad" comment: "x_grad = 3 * out_grad."
    inputs { name: "out_grad" comment: "Gradient of out." }
    outputs { name: "x_grad" comment: "Gradient of x." }
  }
  kernels { device: "cpu" dtypes: [FLOAT32, FLOAT64] python: "triple_grad_cpu" }
  shape_rule: "paddle_core.rules:unary"
}
"""


def triple(x, **attrs):
    return 3 * x


def register_triple(op_plugin, *, grad_rule="paddle_core.rules:default_grad", **replaced):
    functions = {
        "triple_cpu": lambda x, mode, p: 3 * x,
        "triple_grad_cpu": lambda out_grad: 3 * out_grad,
        "shape": pc.rules.unary,
        **replaced,
    }
    return op_plugin(TRIPLE % grad_rule, **{k: f for k, f in functions.items() if f is not None})


def failure(**kwargs) -> str:
    with pytest.raises(AssertionError) as caught:
        check_op(**kwargs)
    return str(caught.value)


# -- passing on real ops ------------------------------------------------------------------


def test_check_op_passes_on_math_scale() -> None:
    check_op(
        "scale",
        {"x": X},
        {"scale": 2.0, "bias": 0.5},
        reference=lambda x, scale, bias: scale * x + bias,
    )


def test_check_op_passes_on_matmul_with_transposes() -> None:
    x, y = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((5, 4))
    check_op(
        "matmul",
        {"x": x, "y": y},
        {"transpose_y": True},
        reference=lambda x, y, transpose_y: x @ y.T,
    )


def test_check_op_passes_on_nn_softmax() -> None:
    def softmax(x, axis=-1):
        e = np.exp(x - x.max(axis=axis, keepdims=True))
        return e / e.sum(axis=axis, keepdims=True)

    check_op("softmax", {"x": X}, {"axis": 0}, reference=softmax)


def test_check_op_checks_real_attr_ranges() -> None:
    # leaky_relu's alpha is declared in [0, inf): -5e-324 and inf must be refused, and are.
    check_op(
        "leaky_relu",
        {"x": X + 0.1},  # (no element at the kink, where finite differences mislead)
        {"alpha": 0.1},
        reference=lambda x, alpha: np.where(x > 0, x, alpha * x),
    )


def test_check_op_passes_on_a_random_op() -> None:
    # Every run gets a scope of its own, so dropout draws one mask for all of them: finite
    # differences and save/load compare like with like.
    attrs = {"dropout_prob": 0.5, "dropout_implementation": "upscale_in_train"}
    check_op("dropout", {"x": X}, attrs, dtypes=["float64"])


def test_check_op_passes_on_duplicable_slots() -> None:
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((2, 1))
    check_op(
        "concat", {"xs": [a, b]}, {"axis": 1}, reference=lambda xs, axis: np.concatenate(xs, axis)
    )
    x = RNG.standard_normal((2, 4))
    # split's num is declared in [0, 65536] and sections' items in [-1, inf): refused outside.
    check_op(
        "split", {"x": x}, {"num": 2, "axis": 1}, reference=lambda x, num, axis: np.split(x, 2, 1)
    )
    check_op("split", {"x": x}, {"num": 2}, reference=lambda x, num: {"outs": np.split(x, num)})


def test_check_op_runs_integer_inputs_as_given_and_compares_them_exactly() -> None:
    ints = np.arange(-3, 3, dtype=np.int32).reshape(2, 3)
    check_op("scale", {"x": ints}, {"scale": 2.0}, reference=lambda x, scale: scale * x)
    message = failure(
        op_type="scale", inputs={"x": ints}, attrs={"scale": 2.0}, reference=lambda x, scale: x
    )
    assert "[reference] cpu int32: output 'out' vs the reference: 5 of 6" in message


def test_check_op_without_a_reference_compares_dtypes_with_each_other() -> None:
    check_op("tanh", {"x": X})


def test_check_op_passes_on_an_op_declaring_zero_gradients(op_plugin) -> None:
    register_triple(op_plugin, grad_rule="paddle_core.rules:no_grad")
    check_op("triple", {"x": X}, reference=triple)


def test_check_op_tests_the_dtypes_asked_for_and_no_other(op_plugin) -> None:
    seen = []

    def triple_cpu(x, mode, p):
        seen.append(x.dtype.name)
        return 3 * x

    register_triple(op_plugin, triple_cpu=triple_cpu)
    check_op("triple", {"x": X}, reference=triple, dtypes=["float32"], grad=False)
    assert set(seen) == {"float32"}
    seen.clear()
    check_op("triple", {"x": X}, reference=triple, grad=False)
    assert set(seen) == {"float32", "float64"}


# -- each check failing -------------------------------------------------------------------


def test_an_unknown_op_fails_the_manifest_check() -> None:
    message = failure(op_type="scael", inputs={"x": X})
    assert "[manifest]" in message and "unknown op 'scael'" in message


def test_a_rule_that_does_not_resolve_fails_the_manifest_check(op_plugin) -> None:
    register_triple(op_plugin, shape=None)  # (the manifest names "shape": the plugin lacks it)
    message = failure(op_type="triple", inputs={"x": X})
    assert "[manifest] its shape rule does not resolve" in message and "'shape'" in message


def low_high_shape(ctx) -> None:
    x = ctx.input("x")
    ctx.set_output("low", x.shape, x.dtype)
    ctx.set_output("high", x.shape, x.dtype)


def test_a_reference_gives_several_outputs_as_a_tuple_or_a_dict(op_plugin) -> None:
    op_plugin(
        """
        ops {
          proto {
            type: "low_high" comment: "Both bounds."
            inputs { name: "x" comment: "x." } inputs { name: "y" comment: "y." }
            outputs { name: "low" comment: "The smaller." }
            outputs { name: "high" comment: "The larger." }
          }
          kernels { device: "cpu" dtypes: [FLOAT64] python: "low_high_cpu" }
          shape_rule: "low_high_shape"
          grad_rule: "paddle_core.rules:no_grad"
        }""",
        low_high_cpu=lambda x, y: (np.minimum(x, y), np.maximum(x, y)),
        low_high_shape=low_high_shape,
    )
    y = RNG.standard_normal((2, 3))
    check_op(
        "low_high", {"x": X, "y": y}, reference=lambda x, y: (np.minimum(x, y), np.maximum(x, y))
    )
    check_op("low_high", {"x": X, "y": y}, reference=lambda x, y: {"high": np.maximum(x, y)})
    message = failure(op_type="low_high", inputs={"x": X, "y": y}, reference=lambda x, y: (x, y))
    assert (
        "output 'low' vs the reference" in message and "output 'high' vs the reference" in message
    )


def test_a_wrong_reference_is_reported_for_every_dtype_with_its_largest_mismatch() -> None:
    message = failure(op_type="scale", inputs={"x": X}, attrs={"scale": 2.0}, reference=triple)
    floats = ("float32", "float64", "float16", "bfloat16")  # scale's floating dtypes
    assert message.startswith(f"check_op('scale'): {len(floats)} failed (reference)")
    for dtype in floats:
        assert f"[reference] cpu {dtype}: output 'out' vs the reference: 6 of 6" in message
    largest = np.max(np.abs(X))
    assert f"largest mismatch {largest:.3g}" in message


def test_a_reference_that_raises_is_reported() -> None:
    message = failure(op_type="scale", inputs={"x": X}, reference=lambda x, y: x)
    assert "[reference]" in message and "TypeError" in message


def test_a_kernel_disagreeing_with_its_shape_rule_fails_the_shape_rule_check(op_plugin) -> None:
    register_triple(op_plugin, triple_cpu=lambda x, mode, p: 3 * x.T)
    message = failure(op_type="triple", inputs={"x": X}, reference=triple, grad=False)
    assert "[shape rule] cpu float32" in message and "[shape rule] cpu float64" in message
    assert "float64[3, 2]" in message and "float64[2, 3]" in message


def test_a_kernel_changing_the_dtype_fails_the_shape_rule_check(op_plugin) -> None:
    register_triple(op_plugin, triple_cpu=lambda x, mode, p: (3 * x).astype(np.float64))
    message = failure(op_type="triple", inputs={"x": X}, dtypes=["float32"], grad=False)
    assert "[shape rule] cpu float32" in message


def test_a_missing_grad_rule_fails_unless_grad_is_false(op_plugin) -> None:
    register_triple(op_plugin, grad_rule="")
    message = failure(op_type="triple", inputs={"x": X}, reference=triple)
    assert "[grad] declares no grad rule; pass grad=False if it is not differentiable" in message
    check_op("triple", {"x": X}, reference=triple, grad=False)


def test_a_wrong_grad_kernel_fails_the_grad_check(op_plugin) -> None:
    register_triple(op_plugin, triple_grad_cpu=lambda out_grad: 2 * out_grad)
    message = failure(op_type="triple", inputs={"x": X}, reference=triple)
    assert "[grad] cpu float64: gradient of input 'x' (analytic vs finite differences)" in (message)
    assert message.count("[") == 1  # the forward checks pass


def test_a_failing_grad_kernel_fails_the_grad_check(op_plugin) -> None:
    def triple_grad_cpu(out_grad):
        raise ValueError("no gradient today")

    register_triple(op_plugin, triple_grad_cpu=triple_grad_cpu)
    message = failure(op_type="triple", inputs={"x": X}, reference=triple)
    assert "[grad] cpu float64: computing the gradients failed: KernelRuntimeError" in message
    assert "no gradient today" in message


def test_gradients_are_checked_in_float32_where_float64_is_not_tested(op_plugin) -> None:
    right = register_triple(op_plugin)
    check_op("triple", {"x": X}, reference=triple, dtypes=["float32"])
    pc.unregister_plugin(right)
    register_triple(op_plugin, triple_grad_cpu=lambda out_grad: 2 * out_grad)
    message = failure(op_type="triple", inputs={"x": X}, reference=triple, dtypes=["float32"])
    assert "[grad] cpu float32: gradient of input 'x'" in message


def test_an_unenforced_attr_range_fails_the_attrs_check(op_plugin, monkeypatch) -> None:
    register_triple(op_plugin)
    signature = pc.get_registry().op("triple").signature()
    defaults = pc.get_registry().op("triple").attr_defaults
    monkeypatch.setattr(signature, "validate", lambda attrs: {**defaults, **attrs})
    message = failure(op_type="triple", inputs={"x": X}, reference=triple)
    assert "[attrs] attr 'p' = -5e-324 (declared range [0, 1)) was accepted" in message
    assert "[attrs] attr 'p' = 1.0 (declared range [0, 1)) was accepted" in message
    assert "[attrs] attr 'mode' = 'not_add_or_mul' (choices 'add', 'mul') was accepted" in message


def test_a_kernel_giving_other_results_each_run_fails_the_save_load_check(op_plugin) -> None:
    draws = iter(range(1000))
    register_triple(op_plugin, triple_cpu=lambda x, mode, p: 3 * x + next(draws))
    message = failure(op_type="triple", inputs={"x": X}, grad=False, dtypes=["float64"])
    assert "[save/load] cpu float64: 'triple_0.out' after reloading" in message


def test_every_failure_is_listed_not_only_the_first(op_plugin) -> None:
    register_triple(op_plugin, grad_rule="", triple_cpu=lambda x, mode, p: 2 * x)
    message = failure(op_type="triple", inputs={"x": X}, reference=triple)
    assert "3 failed (reference, grad)" in message
    assert message.count("\n  [reference]") == 2 and message.count("\n  [grad]") == 1


def test_an_op_with_no_kernel_on_any_device_here_is_a_failure(op_plugin) -> None:
    op_plugin(TRIPLE.replace('device: "cpu"', 'device: "elsewhere"') % "", shape=pc.rules.unary)
    message = failure(op_type="triple", inputs={"x": X}, grad=False)
    assert (
        "[run] no device here has a kernel for it (it declares kernels for: elsewhere)" in message
    )


def test_a_device_asked_for_that_is_not_here_is_a_failure() -> None:
    if pc.CUDA.is_available():
        pytest.skip("a CUDA device is available here")
    message = failure(op_type="scale", inputs={"x": X}, devices=["cuda"])
    assert "[run]" in message and "device cuda:0 is not available" in message


@pytest.mark.gpu
def test_check_op_runs_on_cuda_where_there_is_a_gpu() -> None:
    if not pc.CUDA.is_available():
        pytest.skip(f"no usable CUDA device: {pc.CUDA.unavailable_reason(0)}")
    check_op("scale", {"x": X}, {"scale": 2.0}, reference=lambda x, scale: scale * x)
    check_op("scale", {"x": X}, devices=["cuda"], dtypes=["float32"])


# -- the pieces ---------------------------------------------------------------------------


def attr(text: str) -> pb.AttrProto:
    from google.protobuf import text_format

    return text_format.Parse(text, pb.AttrProto())


@pytest.mark.parametrize(
    ("text", "outside"),
    [
        ('name: "a" type: INT min { value: 1 }', [0]),
        ('name: "a" type: INT min { value: 0 exclusive: true } max { value: 7 }', [0, 8]),
        ('name: "a" type: LONG max { value: 2.5 }', [3]),
        ('name: "a" type: INTS min { value: -1 }', [[-2]]),
        ('name: "a" type: FLOAT min { value: 0 } max { value: 1 exclusive: true }', [-5e-324, 1.0]),
        ('name: "a" type: FLOAT max { value: 1 }', [math.nextafter(1.0, math.inf)]),
        ('name: "a" type: FLOAT min { value: -inf }', []),
        ('name: "a" type: INT max { value: inf exclusive: true }', []),
        ('name: "a" type: FLOAT max { value: inf exclusive: true }', [math.inf]),
        ('name: "a" type: STRING choices { strings: ["x", "y"] }', ["not_x_or_y"]),
        ('name: "a" type: INT choices { ints: [1, 4] }', [5]),
        ('name: "a" type: BOOL', []),
    ],
)
def test_values_just_outside_a_declaration(text: str, outside: list) -> None:
    assert outside_values(attr(text)) == outside


def test_check_grad_seed_names_never_collide_with_the_programs(monkeypatch) -> None:
    build = _run.build

    def crowded(*args):
        built = build(*args)
        block = built[0].global_block()
        (out,) = built[2]["out"]
        block.create_var(f"{out.name}@W", [1], "float32")  # the name a seed used to take
        return built

    monkeypatch.setattr(_run, "build", crowded)
    check_grad("tanh", {"x": X})


def test_the_fixtures_give_an_isolated_registry(op_registry, op_plugin) -> None:
    assert "triple" not in op_registry
    name = register_triple(op_plugin)
    assert "triple" in pc.get_registry() and name.startswith("test_plugin_")


FIXTURE_USER = '''
import numpy as np
import paddle_core as pc
from paddle_core.testing import check_op

pytest_plugins = ["paddle_core.testing.fixtures"]
DOUBLE = """
ops {
  proto { type: "double2" comment: "2 * x." inputs { name: "x" } outputs { name: "out" } }
  kernels { device: "cpu" dtypes: [FLOAT64] python: "double_cpu" }
  shape_rule: "paddle_core.rules:unary"
}"""


def test_registers(op_plugin):
    op_plugin(DOUBLE, double_cpu=lambda x: 2 * x)
    check_op("double2", {"x": np.ones(3)}, reference=lambda x: 2 * x, grad=False)


def test_leaves_nothing_behind(op_registry):
    assert "double2" not in op_registry and "double2" not in pc.get_registry()
'''


def test_the_fixtures_work_in_a_users_test_session(pytester) -> None:
    pytester.makepyfile(test_user=FIXTURE_USER)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=2)


REBUILD_USER = """
import paddle_core as pc
import pytest
from paddle_core.testing.fixtures import isolated_plugins

seen = []


@pytest.fixture(autouse=True)
def isolated():
    yield from isolated_plugins()


def test_keeps_the_registry():
    seen.append(pc.get_registry())


def test_finds_it_kept():
    assert pc.get_registry() is seen[0]


def test_switches_plugins_off(monkeypatch):
    monkeypatch.setenv("PADDLE_CORE_NO_PLUGINS", "1")
    assert "fill_like" not in pc.reload_registry()


def test_finds_them_back():
    assert "fill_like" in pc.get_registry() and pc.get_registry() is not seen[0]
"""


def test_the_registry_is_rebuilt_after_a_test_that_changed_it_only(pytester) -> None:
    pytester.makepyfile(test_user=REBUILD_USER)
    result = pytester.runpytest_subprocess("-q", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=4)
