"""Parameters and the startup program: a parameter's initializer is an op of the startup
program, so running it once initialises every parameter in the scope."""

from __future__ import annotations

import numpy as np
import pytest

import paddle_core as pc


def model(main: pc.Program, startup: pc.Program, value: float = 0.5):
    with pc.program_guard(main, startup):
        x = pc.data("x", [None, 3])
        w = main.global_block().create_parameter(
            "w", [3, 2], initializer=pc.Initializer("fill_constant", value=value)
        )
        return w, pc.ops.matmul(x, w)


def test_the_initializer_goes_to_the_startup_program_and_initialises_the_scope():
    main, startup = pc.Program(), pc.Program()
    _, out = model(main, startup)
    (op,) = startup.global_block().ops
    assert (op.type, op.outputs) == ("fill_constant", {"out": ["w"]})
    # the op's shape and dtype attrs are the parameter's
    assert dict(op.attrs) == {"shape": [3, 2], "value": 0.5, "dtype": "float32"}
    assert startup.global_block().var("w").persistable
    assert [op.type for op in main.global_block().ops] == ["matmul"]  # main computes only
    scope = pc.Scope()
    exe = pc.Executor()
    exe.run(startup, scope=scope)
    np.testing.assert_array_equal(scope.get("w"), np.full((3, 2), 0.5, np.float32))
    (got,) = exe.run(main, feed={"x": np.ones((2, 3), np.float32)}, fetch_list=[out], scope=scope)
    np.testing.assert_array_equal(got, np.full((2, 2), 1.5, np.float32))


def test_a_parameter_without_initializer_adds_nothing_to_startup():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        main.global_block().create_parameter("w", [2])
    assert not startup.global_block().ops and not startup.global_block().vars


def test_programs_sharing_a_startup_program_initialise_a_parameter_once():
    startup = pc.Program()
    model(pc.Program(), startup)
    model(pc.Program(), startup)
    assert [op.type for op in startup.global_block().ops] == ["fill_constant"]


def test_a_parameter_that_contradicts_the_startup_programs_is_refused():
    startup = pc.Program()
    model(pc.Program(), startup)
    other = pc.Program()
    with pc.program_guard(other, startup), pytest.raises(pc.ProgramError) as err:
        other.global_block().create_parameter(
            "w", [4], initializer=pc.Initializer("fill_constant", value=1.0)
        )
    assert str(err.value) == (
        "parameter 'w' is float32[4], but the startup program already initialises a "
        "float32[3, 2] of that name (give each model its own: program_guard(main, startup))"
    )
    assert "w" not in other.global_block().vars


@pytest.mark.parametrize(
    "initializer, error",
    [
        (pc.Initializer("fill_konstant"), pc.OpNotFoundError),
        (pc.Initializer("fill_constant", value="half"), pc.AttrError),
    ],
)
def test_a_bad_initializer_is_refused_and_changes_nothing(initializer, error):
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup), pytest.raises(error):
        main.global_block().create_parameter("w", [2], initializer=initializer)
    assert not main.global_block().vars
    assert not startup.global_block().vars and not startup.global_block().ops
