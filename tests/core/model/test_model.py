"""Models: the device (fixed by the first run), scopes (shared roots, a stack), initialising what
the scope lacks, the Program API's interop, the default model, clones, saving and loading."""

from __future__ import annotations

import numpy as np
import pytest

import paddle_core as pc


class Sim(pc.Device):
    """A device type whose memory is the host's (its ops fall back to CPU kernels)."""

    type = "sim"
    kernel_device_type = 64  # PC_DEVICE_FIRST_PLUGIN
    host_memory = True

    def to_device(self, array):
        return array

    def to_host(self, array):
        return array


class Boxed:
    """A buffer of the "far" device: a host array kernels cannot read as it is."""

    def __init__(self, array):
        self.array, self.shape, self.dtype = array, array.shape, array.dtype


class Far(pc.Device):
    """A device type with memory of its own: its plans run in the Python loop, with copies."""

    type = "far"

    def holds(self, value):
        return isinstance(value, Boxed)

    def to_device(self, array):
        return array if isinstance(array, Boxed) else Boxed(np.array(array))

    def to_host(self, buffer):
        return buffer.array.copy() if isinstance(buffer, Boxed) else buffer


class SimDevices:
    @pc.hookimpl
    def paddle_core_device_types(self):
        return [Sim, Far]


def linear(model, name="w", size=1):
    """x [?, 2] -> fc without bias (parameter ``name``)."""
    x = pc.layers.data("x", [2], model=model)
    return x, pc.layers.fc(x, size, bias_attr=False, param_attr=pc.ParamAttr(name=name))


ONES = np.ones((1, 2), np.float32)


# -- the device ----------------------------------------------------------------------------------


@pytest.mark.usefixtures("fresh_warnings")
def test_the_device_is_chosen_before_the_first_run_and_fixed_by_it():
    pc.register_plugin(SimDevices())
    model = pc.Model()
    assert model.device is None
    model.device = "sim"
    model.device = "cpu:0"  # any number of times before it runs
    assert model.device == pc.get_device("cpu")
    x, y = linear(model)
    y.value(feed={x: ONES})
    assert "(fixed)" in repr(model)
    model.device = "cpu"  # the same device: fine
    with pytest.raises(
        pc.DeviceError, match=r"device is cpu, fixed when it first ran.*become sim:0"
    ):
        model.device = "sim"
    with pytest.raises(pc.DeviceError, match=r"fixed when it first ran.*become tpu"):
        model.device = "tpu"
    with pytest.raises(pc.DeviceError, match="unknown device 'tpu'"):
        pc.Model(device="tpu")


@pytest.mark.usefixtures("fresh_warnings")
def test_a_model_runs_on_its_device():
    pc.register_plugin(SimDevices())
    model = pc.Model(device="sim")
    x, y = linear(model)
    with pytest.warns(RuntimeWarning, match="no sim kernel"):
        y.value(feed={x: ONES})
    assert model.device == pc.get_device("sim")


@pytest.mark.usefixtures("fresh_warnings")
def test_a_model_on_a_device_with_memory_of_its_own():
    pc.register_plugin(SimDevices())
    model = pc.Model(device="far")
    x, y = linear(model)
    z = pc.layers.data("z", [2], model=model)  # fed, but not read by y
    with pytest.warns(RuntimeWarning, match="no far kernel"):
        got = y.value(feed={x: ONES, z: ONES})
    assert isinstance(got, np.ndarray)
    np.testing.assert_allclose(got, ONES @ model.scope.find_var("w").array, rtol=1e-6)
    y.value()
    assert model.run_count == 1


def test_an_unset_device_becomes_the_cpu_at_init():
    model = pc.Model()
    linear(model)
    model.init()  # initialising runs the startup program: the device is fixed then
    assert model.device == pc.get_device("cpu")
    assert "w" in model.root_scope


# -- scopes --------------------------------------------------------------------------------------


def test_models_sharing_a_root_scope_share_parameters_by_name():
    generator = pc.Model()
    x, fake = linear(generator, name="shared")
    discriminator = pc.Model(scope=generator.root_scope)
    z, judged = linear(discriminator, name="shared")
    g_value = fake.value(feed={x: ONES})
    d_value = judged.value(feed={z: ONES})  # initialised once: the generator's value
    np.testing.assert_array_equal(g_value, d_value)

    label = pc.layers.data("label", [1], model=discriminator)
    loss = pc.layers.mean(pc.ops.square(pc.ops.sub(judged, label)))
    step = discriminator.minimize(loss, pc.optimizer.SGD(0.5))
    step.value(feed={label: np.array([[3.0]], np.float32)})
    assert discriminator.run_count == 2
    # The generator's expression read "shared", which the discriminator's step changed.
    runs = generator.run_count
    np.testing.assert_array_equal(fake.value(), judged.value())
    assert not np.array_equal(fake.value(), g_value)
    assert generator.run_count == runs + 1


def test_a_scope_guard_pushes_a_child_scope():
    model = pc.Model()
    x, y = linear(model)
    outer = y.value(feed={x: ONES})
    with model.scope_guard() as child:
        assert model.scope is child and child.parent is model.root_scope
        child.set_var("w", np.full((2, 1), 5, np.float32))  # shadows the root's w
        np.testing.assert_array_equal(y.value(), [[10]])
    assert model.scope is model.root_scope
    np.testing.assert_array_equal(y.value(), outer)  # the root's w again
    with pytest.raises(pc.ProgramError, match="scope_guard expects a Scope"):
        with model.scope_guard("root"):
            pass


def test_init_gives_values_only_to_what_the_scope_lacks():
    model = pc.Model()
    x, y = linear(model)
    model.init()
    model.root_scope.set_var("w", np.full((2, 1), 7, np.float32))
    loss = pc.layers.mean(y)
    step = model.minimize(loss, pc.optimizer.Adam(0.1))  # new state: moments, beta powers
    step.value(feed={x: ONES})  # initialises the optimizer's state, not w
    assert "w@moment1" in model.root_scope
    np.testing.assert_allclose(model.scope.find_var("w"), np.full((2, 1), 6.9), rtol=1e-6)


# -- interop with the Program API ----------------------------------------------------------------


def test_a_program_built_the_usual_way_becomes_a_model():
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.layers.data("x", [2])
        y = pc.layers.fc(x, 3, act="relu")
        assert type(y) is pc.Variable  # the Program API is unchanged
    model = pc.Model(main_program=main, startup_program=startup)
    assert model.main_program is main and model.startup_program is startup
    assert model.global_block() is main.global_block() is model.current_block()
    got = model.expression(y).value(feed={"x": ONES})
    exe = pc.Executor()
    (want,) = exe.run(main, feed={"x": ONES}, fetch_list=[y], scope=model.scope)
    np.testing.assert_array_equal(got, want)
    assert model.expression(y.name).variable is y
    with pytest.raises(pc.ProgramError, match="no variable 'yy'"):
        model.expression("yy")
    with pytest.raises(pc.ProgramError, match="must be a Program"):
        pc.Model(main_program=startup.global_block())


def test_with_model_guard_the_program_api_builds_the_model():
    model = pc.Model()
    with model.guard():
        x = pc.data("x", [None, 2])
        y = pc.ops.scale(x, scale=3.0)
    np.testing.assert_array_equal(model.expression(y).value(feed={"x": ONES}), [[3, 3]])


def test_program_for_gives_the_pruned_program_an_executor_runs():
    model = pc.Model()
    x, y = linear(model)
    z = pc.ops.scale(y, scale=2.0)
    pc.ops.exp(x)  # not needed by z
    pruned = model.program_for([z])
    assert [op.type for op in pruned.global_block().ops] == ["matmul_2d", "scale"]
    value = z.value(feed={x: ONES})
    exe = pc.Executor()
    (got,) = exe.run(pruned, feed={"x": ONES}, fetch_list=[z.name()], scope=model.scope)
    np.testing.assert_array_equal(got, value)


def test_the_default_model_is_the_default_programs_and_the_global_scope():
    default = pc.default_model()
    assert default is pc.default_model()
    assert default.main_program is pc.default_main_program()
    assert default.root_scope is pc.global_scope()
    x = pc.layers.data("x", [2])
    assert type(x) is pc.Variable  # without model=, the Program API as always
    y = pc.layers.fc(x, 2, model=default)  # with it, an expression of the default programs
    assert isinstance(y, pc.Expression)
    got = y.value(feed={"x": ONES})
    exe = pc.Executor()
    (want,) = exe.run(feed={"x": ONES}, fetch_list=[y.name()])
    np.testing.assert_array_equal(got, want)
    with pc.program_guard(pc.Program(), pc.Program()):
        with pytest.raises(pc.ProgramError, match="not this model's main program"):
            y.value()


# -- clones, schedules ---------------------------------------------------------------------------


def test_an_evaluation_clone_shares_the_parameters_and_evaluates_the_source_expressions():
    model = pc.Model()
    x = pc.layers.data("x", [4], model=model)
    dropped = pc.layers.dropout(x, dropout_prob=0.5)
    loss = pc.layers.mean(pc.layers.fc(dropped, 1))
    step = model.minimize(loss, pc.optimizer.SGD(0.1))
    data = np.ones((8, 4), np.float32)
    step.value(feed={x: data})
    evaluation = model.clone(for_test=True)
    assert evaluation.root_scope is model.root_scope
    (kept,) = evaluation.run([dropped], feed={x: data})  # by name; dropout infers
    np.testing.assert_array_equal(kept, data * 0.5)  # (downgrade_in_infer: scaled by 1 - p)
    assert evaluation.expression(loss).variable is not loss.variable
    with pytest.raises(pc.ProgramError, match="another model"):
        model.expression(evaluation.expression(loss))
    weights = {p.name(): model.scope.find_var(p.name()).copy() for p in model.parameters()}
    with pytest.raises(pc.ProgramError, match="is a training step of another model"):
        evaluation.run([step], feed={x: data})  # (by name it would only evaluate the loss)
    for name, value in weights.items():
        np.testing.assert_array_equal(model.scope.find_var(name), value)
    (evaluated,) = evaluation.run([step.loss], feed={x: data})
    assert np.isfinite(evaluated).all()


def test_a_learning_rate_schedule_drives_a_models_optimizer():
    model = pc.Model()
    x, y = linear(model)
    lr = pc.layers.piecewise_decay([2], [1.0, 0.5], model=model)
    assert isinstance(lr, pc.Expression)
    step = model.minimize(pc.layers.mean(y), pc.optimizer.SGD(lr))
    counter = model.expression("@step_counter")
    model.feed({x: ONES})
    model.init()
    w0 = model.scope.find_var("w").copy()
    for _ in range(3):
        step.value()
    assert counter.value().tolist() == [2.0]
    np.testing.assert_allclose(model.scope.find_var("w"), w0 - (1 + 1 + 0.5), rtol=1e-6)
    assert lr.value().tolist() == [0.5]  # evaluating the rate does not count a step
    assert counter.value().tolist() == [2.0]


def test_run_without_targets_runs_the_whole_program():
    model = pc.Model()
    x, y = linear(model)
    model.minimize(pc.layers.mean(y), pc.optimizer.SGD(1.0))
    model.feed({x: ONES})
    model.init()
    w0 = model.scope.find_var("w").copy()
    assert model.run() == []
    np.testing.assert_allclose(model.scope.find_var("w"), w0 - 1.0, rtol=1e-6)


# -- saving and loading --------------------------------------------------------------------------


def small_classifier():
    model = pc.Model()
    x = pc.layers.data("x", [4], model=model)
    label = pc.layers.data("label", [1], dtype="int64", model=model)
    logits = pc.layers.fc(x, 3)
    loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
    probabilities = pc.layers.softmax(logits)
    step = model.minimize(loss, pc.optimizer.Adam(0.1))
    return model, step, probabilities


def test_a_saved_model_loads_back_with_its_values(tmp_path):
    model, step, probabilities = small_classifier()
    data = np.random.default_rng(0).standard_normal((5, 4)).astype(np.float32)
    model.feed({"x": data, "label": np.zeros((5, 1), np.int64)})
    with pytest.raises(pc.FeedError, match=r"has no value yet.*model.init"):
        model.save(tmp_path / "none")
    for _ in range(3):
        step.value()
    model.save(tmp_path / "model")
    assert sorted(p.name for p in (tmp_path / "model").iterdir()) == [
        "main.pb",
        "startup.pb",
        "values.npz",
    ]
    loaded = pc.load_model(tmp_path / "model")
    assert loaded.main_program.serialize() == model.main_program.serialize()
    again = loaded.expression(probabilities.name())
    np.testing.assert_array_equal(again.value(feed={"x": data}), probabilities.value())

    # A checkpoint restored into a model built the same way resumes training exactly.
    twin, twin_step, _ = small_classifier()
    twin.load(tmp_path / "model")
    twin.feed({"x": data, "label": np.zeros((5, 1), np.int64)})
    np.testing.assert_array_equal(twin_step.value(), step.value())
    assert twin.scope.find_var("fc.w_0@beta1_pow").tolist() == pytest.approx([0.9**5])

    # The loaded model holds its training already: minimize again is refused, saying so.
    with pytest.raises(pc.ProgramError, match=r"loaded model's program .* model.run\(\) runs one"):
        loaded.minimize(loaded.expression(step.loss.name()), pc.optimizer.SGD(0.1))
    with pytest.raises(pc.ProgramError, match="for an earlier minimize"):
        model.minimize(step.loss, pc.optimizer.SGD(0.1))


def test_loading_checks_every_value_first(tmp_path):
    model, _, _ = small_classifier()
    model.init()
    model.save(tmp_path / "model")
    other = pc.Model()
    x = pc.layers.data("x", [5], model=other)
    pc.layers.fc(x, 3)
    with pytest.raises(pc.FeedError, match=r"parameter 'fc.w_0' is declared float32\[5, 3\]"):
        other.load(tmp_path / "model")
    assert "fc.b_0" not in other.root_scope  # nothing was set
    with pytest.raises(pc.ProgramError, match="cannot read"):
        other.load(tmp_path / "nowhere")


def test_a_checkpoint_resumes_random_ops_where_they_left_off(tmp_path):
    """values.npz keeps the scope's count of runs that drew random numbers, so dropout's
    masks after loading are the ones training would have drawn next."""

    def with_dropout():
        model = pc.Model()
        x = pc.layers.data("x", [4], model=model)
        hidden = pc.layers.dropout(pc.layers.fc(x, 8), dropout_prob=0.5)
        loss = pc.layers.mean(pc.ops.square(pc.layers.fc(hidden, 1)))
        return model, model.minimize(loss, pc.optimizer.Adam(0.01))

    data = {"x": np.random.default_rng(1).standard_normal((6, 4)).astype(np.float32)}
    model, step = with_dropout()
    model.feed(data)
    for _ in range(3):
        step.value()
    model.save(tmp_path / "model")
    twin, twin_step = with_dropout()
    twin.load(tmp_path / "model")
    twin.feed(data)
    for _ in range(3):
        np.testing.assert_array_equal(twin_step.value(), step.value())


def test_saving_and_loading_refuse_bad_places_and_broken_files(tmp_path):
    model, _, _ = small_classifier()
    model.init()
    (tmp_path / "file").write_text("")
    for place in (tmp_path / "file" / "sub", tmp_path / "file", "/proc/no/such/dir"):
        with pytest.raises(pc.ProgramError, match="cannot save the model to"):
            model.save(place)
    for place in (None, 3, ""):
        with pytest.raises(pc.ProgramError, match="the path must be a non-empty str"):
            model.save(place)
        with pytest.raises(pc.ProgramError, match="the path must be a non-empty str"):
            pc.load_model(place)
    model.save(tmp_path / "model")
    values = tmp_path / "model" / "values.npz"
    whole = values.read_bytes()
    broken = {"empty": b"", "truncated": whole[: len(whole) // 2], "flipped": bytearray(whole)}
    broken["flipped"][len(whole) // 2] ^= 0xFF
    for data in broken.values():
        values.write_bytes(bytes(data))
        with pytest.raises(pc.ProgramError, match=r"cannot read parameters from .*values\.npz"):
            model.load(tmp_path / "model")


def test_a_models_settings_and_optimizer_are_checked():
    with pytest.raises(pc.ConfigError, match=r"Model: num_threads must be an int in \[1, 4096\]"):
        pc.Model(num_threads="2")
    model = pc.Model()
    x = pc.layers.data("x", [4], model=model)
    loss = pc.layers.mean(pc.layers.fc(x, 1))
    for optimizer in ("adam", pc.optimizer.Adam):
        with pytest.raises(pc.ProgramError, match=r"minimize\(\) takes an optimizer: an instance"):
            model.minimize(loss, optimizer)
    with pytest.raises(pc.ProgramError, match=r"data\(\): model must be a pc\.Model, got 'x'"):
        pc.layers.data("z", [2], model="x")
