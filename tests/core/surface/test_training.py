"""Training with the public API: layers, initializers, optimizers (with weight decay, clipping
and learning-rate schedules), evaluation programs, and saving and loading models."""

from __future__ import annotations

import math
import subprocess
import sys

import numpy as np
import pytest

import paddle_core as pc

pytest.importorskip("paddle_ops_math", reason="paddle-ops-math is not installed")
pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")

RNG = np.random.default_rng(0)
X = RNG.standard_normal((256, 8)).astype(np.float32)
TRUE_W = RNG.standard_normal((8, 3))
Y = (X @ TRUE_W).argmax(1)[:, None].astype(np.int64)


def classifier(optimizer=None, hidden: int = 16):
    """An MLP classifying X; returns (main, startup, test, loss, acc, logits)."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [8])
        y = pc.layers.data("y", [1], dtype="int64")
        h = pc.layers.fc(x, hidden, act="relu")
        logits = pc.layers.fc(h, 3)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, y))
        acc = pc.layers.accuracy(pc.layers.softmax(logits), y)
        if optimizer is not None:
            optimizer.minimize(loss)
    return main, startup, main.clone(for_test=True), loss, acc, logits


def train(main, startup, loss, epochs: int = 10, scope=None):
    scope = scope or pc.Scope()
    exe = pc.Executor()
    exe.run(startup, scope=scope)
    losses = []
    for _ in range(epochs):
        for i in range(0, len(X), 32):
            feed = {"x": X[i : i + 32], "y": Y[i : i + 32]}
            (value,) = exe.run(main, feed=feed, fetch_list=[loss], scope=scope)
        losses.append(float(value))
    return scope, losses


def test_fc_creates_its_parameters_and_their_initializers():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [8])
        out = pc.layers.fc(x, 4, act="relu")
        pc.layers.fc(out, 2, bias_attr=False, param_attr=pc.ParamAttr(name="last", trainable=False))
    assert out.shape == (None, 4)
    params = {p.name: p for p in main.all_parameters()}
    assert list(params) == ["fc.w_0", "fc.b_0", "last"]
    assert (params["fc.w_0"].shape, params["fc.b_0"].shape) == ((8, 4), (4,))
    assert not params["last"].trainable
    inits = {op.outputs["out"][0]: op for op in startup.global_block().ops}
    limit = math.sqrt(6 / (8 + 4))  # Xavier, uniform
    w_init = inits["fc.w_0"]
    assert w_init.type == "uniform_random"
    assert w_init.attr("min") == pytest.approx(-limit) and w_init.attr("max") == pytest.approx(
        limit
    )
    assert inits["fc.b_0"].type == "fill_constant" and inits["fc.b_0"].attr("value") == 0.0
    scope = pc.Scope()
    pc.Executor().run(startup, scope=scope)
    assert np.abs(scope.get("fc.w_0")).max() <= limit and np.all(scope.get("fc.b_0") == 0)


@pytest.mark.parametrize(
    ("make", "named"),
    [
        (lambda: pc.layers.fc(pc.layers.data("x", [3]), 2, param_attr=False), "fc.w"),
        (
            lambda: pc.layers.embedding(
                pc.layers.data("ids", [1], dtype="int64"), [5, 2], param_attr=False
            ),
            "embedding.w",
        ),
        (lambda: pc.layers.create_parameter([3], attr=False, prefix="mine"), "mine"),
    ],
    ids=["fc", "embedding", "create_parameter"],
)
def test_a_required_parameter_refuses_attr_false(make, named):
    """False means "no such parameter", which only an optional one (a bias) can be: a layer
    needing the parameter says so instead of making one with the defaults."""
    with pc.program_guard(pc.Program(), pc.Program()):
        with pytest.raises(pc.ProgramError, match=f"^{named}: attr False means no such param"):
            make()


@pytest.mark.parametrize(
    "optimizer",
    [
        pc.optimizer.SGD(learning_rate=0.2),
        pc.optimizer.Momentum(learning_rate=0.05, momentum=0.9),
        pc.optimizer.Momentum(learning_rate=0.05, use_nesterov=True),
        pc.optimizer.Adam(learning_rate=0.02),
        pc.optimizer.AdamW(learning_rate=0.02, weight_decay=0.01),
    ],
    ids=lambda o: type(o).__name__,
)
def test_each_optimizer_trains_a_classifier(optimizer):
    main, startup, test, loss, acc, _ = classifier(optimizer)
    scope, losses = train(main, startup, loss)
    assert losses[-1] < losses[0] / 3
    (accuracy,) = pc.Executor().run(test, feed={"x": X, "y": Y}, fetch_list=[acc], scope=scope)
    assert float(accuracy) > 0.9
    roles = {op.role for op in main.global_block().ops}
    assert roles == {"forward", "backward", "optimize"}


def test_the_evaluation_program_never_updates_a_parameter():
    main, startup, test, loss, acc, _ = classifier(pc.optimizer.Adam(0.01))
    scope, _ = train(main, startup, loss, epochs=1)
    before = {p.name: scope.get(p.name).copy() for p in main.all_parameters()}
    pc.Executor().run(test, feed={"x": X, "y": Y}, fetch_list=[acc, loss], scope=scope)
    for name, value in before.items():
        np.testing.assert_array_equal(scope.get(name), value)
    assert not [op for op in test.global_block().ops if op.type == "adam"]


def test_hyperparameters_are_finite_numbers():
    for make, problem in [
        (lambda: pc.optimizer.SGD(learning_rate="0.1"), "SGD: learning_rate .* got '0.1'"),
        (lambda: pc.optimizer.Adam(learning_rate=0), "Adam: learning_rate .* > 0, got 0$"),
        (lambda: pc.optimizer.SGD(float("nan")), "finite number > 0, got nan"),
        (lambda: pc.optimizer.SGD(True), "got True"),
        (lambda: pc.optimizer.L2Decay(-1e-4), "L2Decay: coeff must be a finite number >= 0"),
        (lambda: pc.optimizer.GradientClipByGlobalNorm(None), "clip_norm .* > 0, got None"),
    ]:
        with pytest.raises(pc.ProgramError, match=problem):
            make()
    assert pc.optimizer.L2Decay(0).coeff == 0.0 and pc.optimizer.SGD(1).learning_rate == 1.0


def test_update_attrs_are_checked_where_the_optimizer_is_made():
    for make, problem in [
        (
            lambda: pc.optimizer.Adam(beta1=2.0),
            r"op 'adam', attr 'beta1': .*\[0, 1\), got float 2.0",
        ),
        (lambda: pc.optimizer.AdamW(weight_decay="x"), "op 'adamw', attr 'coeff': .* got str 'x'"),
        (lambda: pc.optimizer.Momentum(0.1, momentum=float("nan")), "attr 'mu': .* got float nan"),
    ]:
        with pytest.raises(pc.AttrError, match=problem):
            make()
    assert pc.optimizer.AdamW(weight_decay=0.5).attrs["coeff"] == 0.5
    assert pc.optimizer.Adam(beta2=0.5).attrs == {"beta1": 0.9, "beta2": 0.5, "epsilon": 1e-8}


def test_minimize_needs_a_path_to_a_trainable_parameter():
    main = pc.Program()
    with pc.program_guard(main, pc.Program()):
        x = pc.layers.data("x", [3])
        pc.layers.fc(x, 2, param_attr=pc.ParamAttr(trainable=False), bias_attr=False)
        loss = pc.layers.mean(x)
        with pytest.raises(pc.ProgramError, match="depends on no trainable parameter"):
            pc.optimizer.SGD(0.1).minimize(loss)


def linear_step(optimizer, w0, x):
    """One step of ``optimizer`` on loss = sum(x * w); returns the new w."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        xs = pc.layers.data("x", [len(w0)], append_batch_size=False)
        w = pc.layers.create_parameter(
            [len(w0)],
            attr=pc.ParamAttr(name="w", initializer=pc.Initializer("fill_constant", value=0.0)),
        )
        optimizer.minimize(pc.ops.sum(pc.ops.mul(xs, w)))
    scope = pc.Scope()
    exe = pc.Executor()
    exe.run(startup, scope=scope)
    scope.set_var("w", np.array(w0, np.float32))
    exe.run(main, feed={"x": np.array(x, np.float32)}, scope=scope)
    return scope.get("w")


def test_l2_decay_adds_to_the_gradient():
    w0, x = [1.0, -2.0, 3.0], [0.5, 0.5, 0.5]
    got = linear_step(pc.optimizer.SGD(0.1, regularization=pc.optimizer.L2Decay(0.2)), w0, x)
    np.testing.assert_allclose(
        got, np.array(w0) - 0.1 * (np.array(x) + 0.2 * np.array(w0)), rtol=1e-6
    )


def test_clipping_by_global_norm_keeps_direction_and_bounds_the_norm():
    w0, x = [0.0, 0.0], [3.0, 4.0]  # gradient (3, 4): norm 5
    got = linear_step(
        pc.optimizer.SGD(1.0, grad_clip=pc.optimizer.GradientClipByGlobalNorm(1.0)), w0, x
    )
    np.testing.assert_allclose(got, [-0.6, -0.8], rtol=1e-6)
    got = linear_step(
        pc.optimizer.SGD(1.0, grad_clip=pc.optimizer.GradientClipByGlobalNorm(10.0)), w0, x
    )
    np.testing.assert_allclose(got, [-3.0, -4.0], rtol=1e-6)  # within the bound: unchanged


def test_the_decay_is_added_to_the_clipped_gradient_as_in_fluid_and_pytorch():
    w0, x = [1.0, 2.0], [3.0, 4.0]  # gradient (3, 4): norm 5, clipped to (0.06, 0.08)
    optimizer = pc.optimizer.SGD(
        1.0,
        regularization=pc.optimizer.L2Decay(0.5),
        grad_clip=pc.optimizer.GradientClipByGlobalNorm(0.1),
    )
    got = linear_step(optimizer, w0, x)
    np.testing.assert_allclose(got, [1.0 - (0.06 + 0.5), 2.0 - (0.08 + 1.0)], rtol=1e-6)


def test_layer_and_schedule_arguments_are_checked():
    L, opt = pc.layers, pc.optimizer
    with pc.program_guard(pc.Program(), pc.Program()):
        image, ids = L.data("image", [3, 8, 8]), L.data("ids", [1], dtype="int64")
        for make, problem in [
            (lambda: L.piecewise_decay([4, 2], [0.1, 0.05, 0.01]), "boundaries must increase"),
            (lambda: L.piecewise_decay([1.5], [0.1, 0.05]), r"steps \(ints >= 0\), got 1.5"),
            (lambda: L.exponential_decay(0.1, 0, 0.5), "decay_steps must be an int >= 1, got 0"),
            (lambda: L.cosine_decay(0.1, 0, 5), "step_each_epoch must be an int >= 1"),
            (lambda: L.linear_lr_warmup(0.1, 0, 0.0, 0.1), "warmup_steps must be an int >= 1"),
            (lambda: L.conv2d(image, 6, 0), "conv2d: filter_size must be an int >= 1, got 0"),
            (lambda: L.pool2d(image, pool_size=[2, -1]), "pool_size must be an int >= 1"),
            (lambda: L.embedding(ids, [7, 3], padding_idx=-8), r"padding_idx -8 .*\[-7, 6\]"),
            (lambda: L.fc(ids, 2), "fc.w: a trainable parameter has a float dtype .* got 'int64'"),
            (lambda: L.data("q", None), "shape must be a list of dimensions"),
            (lambda: pc.ParamAttr(regularizer=0.1), "regularizer must be a pc.optimizer.L2Decay"),
            (lambda: pc.ParamAttr(initializer="foo"), "initializer must be an initializer"),
            (lambda: opt.SGD(0.1, regularization=0.1), "SGD: regularization must be"),
            (lambda: opt.SGD(0.1, grad_clip=1.0), "SGD: grad_clip must be"),
            (lambda: opt.Adam(0.1, beta_1=0.9), "Adam has no argument 'beta_1' .*'beta1'"),
        ]:
            with pytest.raises(pc.ProgramError, match=problem):
                make()
        counter = L.create_parameter(  # an integer parameter that is not trained: fine
            [1], "int64", pc.ParamAttr(initializer=pc.initializer.Constant(0), trainable=False)
        )
        assert counter.dtype == "int64" and not counter.trainable


def test_data_appends_a_batch_dimension_only_where_none_is_unknown():
    """As Paddle fluid's: a shape that already has an unknown dimension is taken as given."""
    with pc.program_guard(pc.Program(), pc.Program()):
        assert pc.layers.data("a", [3]).shape == (None, 3)
        assert pc.layers.data("b", [None, 3]).shape == (None, 3)
        assert pc.layers.data("c", [-1, 7, 3]).shape == (None, 7, 3)
        assert pc.layers.data("d", [4, None]).shape == (4, None)
        assert pc.layers.data("e", [3], append_batch_size=False).shape == (3,)


def schedule(make, steps: int):
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        lr = make()
    scope = pc.Scope()
    exe = pc.Executor()
    exe.run(startup, scope=scope)
    return [float(exe.run(main, fetch_list=[lr], scope=scope)[0][0]) for _ in range(steps)]


def test_learning_rate_schedules():
    assert schedule(lambda: pc.layers.piecewise_decay([2, 4], [1.0, 0.5, 0.1]), 6) == pytest.approx(
        [1.0, 1.0, 0.5, 0.5, 0.1, 0.1]
    )
    assert schedule(
        lambda: pc.layers.exponential_decay(1.0, 2, 0.5, staircase=True), 5
    ) == pytest.approx([1, 1, 0.5, 0.5, 0.25])
    assert schedule(lambda: pc.layers.cosine_decay(1.0, 2, 4), 6) == pytest.approx(
        [1, 1, (math.cos(math.pi / 4) + 1) / 2, (math.cos(math.pi / 4) + 1) / 2, 0.5, 0.5]
    )
    assert schedule(lambda: pc.layers.linear_lr_warmup(1.0, 4, 0.0, 0.8), 6) == pytest.approx(
        [0.0, 0.2, 0.4, 0.6, 1.0, 1.0]
    )


def test_a_schedule_drives_an_optimizer():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [1], append_batch_size=False)
        w = pc.layers.create_parameter(
            [1], attr=pc.ParamAttr(name="w", initializer=pc.initializer.Constant(1.0))
        )
        rate = pc.layers.piecewise_decay([1, 2], [0.1, 0.0, 0.5])
        pc.optimizer.SGD(rate).minimize(pc.ops.sum(pc.ops.mul(x, w)))
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    seen = []
    for _ in range(3):
        exe.run(main, feed={"x": np.ones(1, np.float32)}, scope=scope)
        seen.append(float(scope.get("w")[0]))
    assert seen == pytest.approx([0.9, 0.9, 0.4])  # rates 0.1, 0.0, 0.5 by step
    assert w.shape == (1,)


def test_save_and_load_params(tmp_path):
    main, startup, _, loss, _, _ = classifier(pc.optimizer.Adam(0.02))
    scope, _ = train(main, startup, loss, epochs=3)
    pc.io.save_params(tmp_path / "params.npz", main, scope)
    other = pc.Scope()
    pc.io.load_params(tmp_path / "params.npz", main, other)
    for p in main.all_parameters():
        np.testing.assert_array_equal(other.get(p.name), scope.get(p.name))
    wrong = {p.name: scope.get(p.name) for p in main.all_parameters()}
    wrong["fc.w_0"] = np.zeros((8, 5), np.float32)
    np.savez(tmp_path / "wrong.npz", **wrong)
    with pytest.raises(
        pc.FeedError,
        match=r"parameter 'fc.w_0' is declared float32\[8, 16\], but .* holds float32\[8, 5\]",
    ):
        pc.io.load_params(tmp_path / "wrong.npz", main, pc.Scope())


def test_io_arguments_are_checked_and_an_executor_is_named(tmp_path):
    """Paddle fluid's io functions took an executor; ours do not, and say so."""
    main, _, _, _, _, logits = classifier(pc.optimizer.SGD(0.1))
    exe, path = pc.Executor(), tmp_path / "m"
    for call, problem in [
        (lambda: pc.io.save_params(exe, path, main), r"save_params\(\): path must not be"),
        (lambda: pc.io.load_params(path, main, exe), r"load_params\(\): scope must not be"),
        (lambda: pc.io.save_inference_model(path, ["x"], [logits], exe), "program must not be"),
        (
            lambda: pc.io.load_inference_model(path, exe),
            r"load_inference_model\(\): scope must not be",
        ),
    ]:
        with pytest.raises(
            pc.ProgramError, match=problem + " an Executor \\(these functions take none\\)"
        ):
            call()
    with pytest.raises(pc.ProgramError, match=r"cannot run save_params\(\): the path must be"):
        pc.io.save_params(None, main)
    for feed, targets, problem in [
        ("x", [logits], "feed_names must be a list .* got str 'x'"),
        (["x"], logits, "targets must be a list .* got Variable"),
        (["x"], [1], "targets must be a list .* got list"),
    ]:
        with pytest.raises(pc.ProgramError, match=problem):
            pc.io.save_inference_model(path, feed, targets, main)
    assert not path.exists()  # nothing written before the arguments are known to be good


def test_a_checkpoint_of_the_persistables_resumes_training_exactly(tmp_path):
    """Adam's moments, the schedule's step counter and dropout's run count come back too."""

    def build():
        main, startup = pc.Program(), pc.Program()
        main.random_seed = startup.random_seed = 7
        with pc.program_guard(main, startup):
            x, y = pc.layers.data("x", [8]), pc.layers.data("y", [1], dtype="int64")
            hidden = pc.layers.dropout(pc.layers.fc(x, 16, act="relu"), dropout_prob=0.3)
            loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(pc.layers.fc(hidden, 5), y))
            lr = pc.layers.exponential_decay(0.05, 2, 0.5)
            pc.optimizer.Adam(lr).minimize(loss)
        return main, startup, loss

    def steps(main, loss, scope, n):
        exe = pc.Executor()
        feed = {"x": X[:32], "y": Y[:32]}
        return [exe.run(main, feed=feed, fetch_list=[loss], scope=scope)[0] for _ in range(n)]

    main, startup, loss = build()
    straight = pc.Scope()
    pc.Executor().run(startup, scope=straight)
    want = steps(main, loss, straight, 6)

    main, startup, loss = build()
    first = pc.Scope()
    pc.Executor().run(startup, scope=first)
    steps(main, loss, first, 3)
    pc.io.save_persistables(tmp_path / "checkpoint.npz", main, first)
    resumed = pc.Scope()
    pc.io.load_persistables(tmp_path / "checkpoint.npz", main, resumed)
    got = steps(main, loss, resumed, 3)
    for g, w in zip(got, want[3:]):
        np.testing.assert_array_equal(g, w)
    for p in main.all_parameters():
        np.testing.assert_array_equal(resumed.get(p.name), straight.get(p.name))
    np.save(tmp_path / "one.npy", np.zeros(3))
    for path, problem in [
        (tmp_path / "one.npy", "holds one array, not an .npz archive"),
        (tmp_path / "junk", "is not an .npz archive of arrays"),
    ]:
        if path.name == "junk":
            path.write_bytes(b"\x80\x04junk")
        with pytest.raises(pc.ProgramError, match=problem):
            pc.io.load_persistables(path, main, pc.Scope())


def test_an_inference_model_runs_in_a_fresh_process(tmp_path):
    main, startup, _, loss, _, logits = classifier(pc.optimizer.Adam(0.02))
    scope, _ = train(main, startup, loss, epochs=3)
    with pc.program_guard(main):
        probabilities = pc.layers.softmax(logits)
    model = pc.io.save_inference_model(tmp_path / "model", ["x"], [probabilities], main, scope)
    assert {op.role for op in model.global_block().ops} == {"forward"}
    assert "y" not in model.global_block().vars  # the label is not needed to predict
    (want,) = pc.Executor().run(
        model, feed={"x": X[:5]}, fetch_list=[probabilities.name], scope=scope
    )
    np.save(tmp_path / "x.npy", X[:5])
    script = (
        "import sys, numpy as np, paddle_core as pc\n"
        "program, feed, fetch = pc.io.load_inference_model(sys.argv[1])\n"
        "x = np.load(sys.argv[2])\n"
        "(out,) = pc.Executor().run(program, feed={feed[0]: x}, fetch_list=fetch)\n"
        "np.save(sys.argv[3], out)\n"
    )
    subprocess.run(
        [
            sys.executable,
            "-P",
            "-c",
            script,
            str(tmp_path / "model"),
            str(tmp_path / "x.npy"),
            str(tmp_path / "out.npy"),
        ],
        check=True,
        cwd=tmp_path,
    )
    np.testing.assert_allclose(np.load(tmp_path / "out.npy"), want, rtol=1e-6)


def test_embedding_and_dropout_layers():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        ids = pc.layers.data("ids", [3], dtype="int64")
        vectors = pc.layers.embedding(ids, size=[10, 4], padding_idx=-1)
        dropped = pc.layers.dropout(
            vectors, dropout_prob=0.5, dropout_implementation="upscale_in_train"
        )
    assert (vectors.shape, dropped.shape) == ((None, 3, 4), (None, 3, 4))
    assert main.global_block().ops[0].attr("padding_idx") == 9
    scope = pc.Scope()
    exe = pc.Executor()
    exe.run(startup, scope=scope)
    (got,) = exe.run(
        main.clone(for_test=True),
        feed={"ids": np.array([[1, 9, 2]])},
        fetch_list=[dropped.name],
        scope=scope,
    )
    table = scope.get(main.all_parameters()[0].name)
    np.testing.assert_array_equal(got[0], [table[1], np.zeros(4), table[2]])


def test_conv_and_pool_layers_create_filters_and_compute_paddles_shapes():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", [3, 9, 9])
        conv = pc.layers.conv2d(image, 4, 3, stride=2, padding=1, act="relu")
        grouped = pc.layers.conv2d(conv, 4, [3, 1], groups=2, bias_attr=False, name="grouped")
        pooled = pc.layers.pool2d(conv, 2, pool_type="avg", pool_stride=2, ceil_mode=True)
        whole = pc.layers.pool2d(conv, global_pooling=True)
        up = pc.layers.conv2d_transpose(conv, 2, output_size=10, padding=1, stride=2)
    assert conv.shape == (None, 4, 5, 5) and grouped.shape == (None, 4, 3, 5)
    assert (pooled.shape, whole.shape, up.shape) == (
        (None, 4, 3, 3),
        (None, 4, 1, 1),
        (None, 2, 10, 10),
    )
    params = {p.name: p.shape for p in main.all_parameters()}
    assert params == {
        "conv2d.w_0": (4, 3, 3, 3),
        "conv2d.b_0": (4,),
        "grouped.w_0": (4, 2, 3, 1),
        "conv2d_transpose.w_0": (4, 2, 4, 4),  # the filter size that gives output_size
        "conv2d_transpose.b_0": (2,),
    }
    inits = {op.outputs["out"][0]: op for op in startup.global_block().ops}
    assert inits["conv2d.w_0"].type == "gaussian_random"
    assert inits["conv2d.w_0"].attr("std") == pytest.approx(math.sqrt(2 / 27))
    with pc.program_guard(main, startup):
        with pytest.raises(pc.ProgramError, match="give pool_size"):
            pc.layers.pool2d(conv)
        with pytest.raises(pc.ProgramError, match="4 channels must be divisible by groups 3"):
            pc.layers.conv2d(conv, 6, 3, groups=3)
        ids = pc.layers.data("ids", [4], dtype="int64")
        for make, problem in [
            (lambda: pc.layers.fc(conv, -1), "fc: size must be an int >= 1, got -1"),
            (lambda: pc.layers.fc(conv, 0), "fc: size must be an int >= 1, got 0"),
            (lambda: pc.layers.conv2d(conv, 2.0, 3), "conv2d: num_filters must be an int >= 1"),
            (lambda: pc.layers.conv2d_transpose(conv, 0, 3), "conv2d_transpose: num_filters"),
            (lambda: pc.layers.embedding(ids, [10, 0]), r"embedding: size\[1\] must be an int"),
            (lambda: pc.layers.embedding(ids, 10), r"size must be \[vocabulary, width\], got 10"),
        ]:
            with pytest.raises(pc.ProgramError, match=problem):
                make()


def test_a_small_cnn_learns():
    images = RNG.standard_normal((64, 1, 6, 6)).astype(np.float32)
    labels = (images[:, 0, :3].sum((1, 2)) > images[:, 0, 3:].sum((1, 2)))[:, None].astype(np.int64)
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [1, 6, 6])
        y = pc.layers.data("y", [1], dtype="int64")
        h = pc.layers.conv2d(x, 4, 3, padding=1, act="relu")
        h = pc.layers.pool2d(h, 2, pool_stride=2)
        logits = pc.layers.fc(h, 2)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, y))
        pc.optimizer.Adam(0.02).minimize(loss)
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    losses = [
        float(exe.run(main, feed={"x": images, "y": labels}, fetch_list=[loss], scope=scope)[0])
        for _ in range(60)
    ]
    assert losses[-1] < losses[0] / 4


def test_a_persistable_set_to_a_list_or_a_misshapen_array_is_named():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [3])
        out = pc.layers.fc(x, 4, param_attr="w", bias_attr=False)
    scope = pc.Scope()
    pc.Executor().run(startup, scope=scope)
    hint = r" \(set it with scope.set_var\('w', np.asarray\(value, 'float32'\)\)\)$"
    for value, got in [
        ([[1.0] * 4] * 3, r"holds list \[\[1.0, .*, not an array" + "(.*)" + hint),
        (np.zeros((3, 4), np.int32), r"holds ndarray int32\[3, 4\]" + "(.*)" + hint),
    ]:
        scope.set_var("w", value)
        with pytest.raises(pc.FeedError, match=rf"'w' {got}"):
            pc.Executor().run(
                main, feed={"x": np.ones((2, 3), np.float32)}, fetch_list=[out], scope=scope
            )
    # A shape no cast mends is refused where it is set: the startup program declared w.
    with pytest.raises(
        pc.FeedError,
        match=r"'w' is declared float32\[3, 4\], got an array of shape \[4, 3\] \(its transpose: set value.T",
    ):
        scope.set_var("w", np.zeros((4, 3), np.float32))
