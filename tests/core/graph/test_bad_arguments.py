"""Arguments of every kind that used to escape as raw Python exceptions (KeyError, TypeError,
OverflowError) or hang: each is now the core's typed error naming the op, attr or argument,
the value and what is allowed."""

from __future__ import annotations

import time

import numpy as np
import pytest

import paddle_core as pc

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")


@pytest.fixture
def x():
    prog = pc.Program()
    with pc.program_guard(prog):
        yield pc.data("x", [2, 3])


def test_attr_names_must_be_strings(x):
    with pytest.raises(pc.AttrError, match=r"op 'scale': attr names must be strings, got bool"):
        x.block.append_op("scale", {"x": x}, attrs={True: 1})


@pytest.mark.parametrize("name", [["a"], 5, ""])
def test_an_output_name_must_be_a_nonempty_string(x, name):
    with pytest.raises(pc.OpInputError, match=r"op 'minimum': name must be a non-empty string"):
        pc.ops.minimum(x, x, name=name)


def test_an_int_beyond_floats_range_is_refused_for_a_float_attr(x):
    with pytest.raises(
        pc.AttrError,
        match=r"attr 'value': expected a float, got int 1000.*\.\.\. \(401 characters\)$",
    ):
        pc.ops.full_like(x, value=10**400)


def test_a_0d_array_is_not_a_list(x):
    with pytest.raises(pc.AttrError, match=r"attr 'perm': expected a list of ints, got ndarray"):
        pc.ops.transpose(x, perm=np.array(1))


def test_too_many_dimensions_are_refused_at_once(x):
    """unsqueeze with 100,000 axes took a minute in a quadratic rule; it is refused at once."""
    start = time.perf_counter()
    with pytest.raises(pc.ShapeError, match=r"'unsqueeze': output 'out' has 100002 dimensions"):
        pc.ops.unsqueeze(x, axes=list(range(100_000)))
    assert time.perf_counter() - start < 10  # a hang guard, not a benchmark


def test_a_computed_shape_too_large_for_one_buffer_is_refused(x):
    with pytest.raises(pc.ShapeError, match=r"output 'out' float32\[.*\] is larger than the"):
        pc.ops.broadcast_to(pc.data("one", [1, 1]), shape=[2**30, 2**30])


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"num_threads": 2**31}, r"num_threads must be an int in \[1, 4096\] or None, got 2147"),
        ({"num_threads": -1}, r"num_threads must be an int in \[1, 4096\] or None, got -1"),
        ({"num_threads": 2.0}, r"num_threads must be an int"),
        ({"cache_size": 0}, r"cache_size must be an int in \[1, "),
        ({"reuse_memory": "no"}, r"reuse_memory must be True or False, got 'no'"),
        ({"early_updates": 1}, r"early_updates must be True or False, got 1"),
    ],
)
def test_executor_arguments_are_checked(kwargs, message):
    with pytest.raises(pc.ConfigError, match=message):
        pc.Executor(**kwargs)


@pytest.mark.parametrize("value", ["abc", "0", "-3", "99999", "2.5"])
def test_a_thread_count_setting_that_is_not_one_is_ignored_with_a_warning(monkeypatch, value):
    monkeypatch.setenv("PADDLE_CORE_NUM_THREADS", value)
    monkeypatch.setenv("OMP_NUM_THREADS", "3")
    message = rf"PADDLE_CORE_NUM_THREADS='{value}' is not a thread count in \[1, 4096\]"
    with pytest.warns(pc.ConfigWarning, match=message):
        assert pc.Executor().num_threads == 3  # the next setting in line


@pytest.mark.parametrize("name", [5, "", None])
def test_scope_names_are_nonempty_strings(name):
    with pytest.raises(pc.ProgramError, match=r"Scope.set_var: names are non-empty strings"):
        pc.Scope().set_var(name, np.ones(3))


def test_a_scope_value_that_does_not_fit_is_a_typed_error_at_run():
    prog = pc.Program()
    with pc.program_guard(prog):
        w = prog.global_block().create_var("w", [3], persistable=True)
        y = pc.ops.scale(w, scale=2.0)
    for value in ("not an array", [1.0, 2.0, 3.0], np.ones(3, complex), np.ones(4, np.float32)):
        scope = pc.Scope()
        scope.set_var("w", value)
        with pytest.raises(pc.PaddleCoreError, match="'w'"):
            pc.Executor().run(prog, fetch_list=[y], scope=scope)
