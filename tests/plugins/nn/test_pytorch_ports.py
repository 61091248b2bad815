"""Layers that port PyTorch modules, against PyTorch itself: the module's state_dict copied in
by name, then outputs and gradients (of the input and of every parameter) compared in float32.
PyTorch is a test-only dependency; without it these tests skip."""

from __future__ import annotations

import numpy as np
import pytest
from op_helpers import pc

pytest.importorskip("paddle_ops_nn", reason="paddle-ops-nn is not installed")
torch = pytest.importorskip("torch")

RNG = np.random.default_rng(0)
FLOAT32 = dict(rtol=2e-4, atol=2e-5)


def run_with_gradients(build, module, feeds: dict, prefix: str = ""):
    """Build ``build(inputs) -> out`` on fed variables, copy ``module``'s state_dict in under
    ``prefix``, and run loss = sum(out * weights): returns out, the gradient of each fed
    input and of each parameter (by its PyTorch name), and the weights used."""
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        inputs = {}
        for name, value in feeds.items():
            var = pc.data(name, list(value.shape), str(value.dtype))
            var.stop_gradient = False
            inputs[name] = var
        out = build(**inputs)
        weights = pc.data("loss_weights", list(out.shape), "float32")
        loss = pc.ops.sum(pc.ops.mul(out, weights))
        names = [prefix + n for n, _ in module.named_parameters()]
        block = main.global_block()
        wrt = [*inputs.values(), *(block.var(n) for n in names)]
        grads = pc.gradients([loss], wrt)
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    for name, tensor in module.state_dict().items():
        if prefix + name in block.vars:
            scope.set_var(prefix + name, tensor.detach().numpy().copy())
    w = RNG.standard_normal(tuple(out.shape) if None not in out.shape else ()).astype(np.float32)
    feed = {**feeds, "loss_weights": w}
    got = exe.run(main, feed=feed, fetch_list=[out, *grads], scope=scope)
    input_grads = dict(zip(feeds, got[1 : 1 + len(feeds)], strict=True))
    param_grads = dict(zip(names, got[1 + len(feeds) :], strict=True))
    return got[0], input_grads, param_grads, w


def torch_with_gradients(module, feeds: dict, w, call=None):
    tensors = {n: torch.from_numpy(v).requires_grad_(True) for n, v in feeds.items()}
    module.zero_grad()
    out = (call or module)(*tensors.values())
    (out * torch.from_numpy(w)).sum().backward()
    grads = {n: t.grad.numpy() for n, t in tensors.items()}
    params = {n: p.grad.numpy() for n, p in module.named_parameters()}
    return out.detach().numpy(), grads, params


def assert_same_port(ours, theirs, prefix: str = ""):
    (out, in_grads, p_grads, _), (t_out, t_in, t_params) = ours, theirs
    np.testing.assert_allclose(out, t_out, **FLOAT32)
    for name in t_in:
        np.testing.assert_allclose(in_grads[name], t_in[name], **FLOAT32, err_msg=name)
    for name in t_params:
        np.testing.assert_allclose(p_grads[prefix + name], t_params[name], **FLOAT32, err_msg=name)


@pytest.mark.parametrize("shape", [(5, 8), (2, 3, 8)])
def test_linear_is_torch_nn_linear(shape):
    module = torch.nn.Linear(8, 6)
    x = RNG.standard_normal(shape).astype(np.float32)
    ours = run_with_gradients(
        lambda x: pc.layers.linear(x, 6, name="fc"), module, {"x": x}, prefix="fc."
    )
    assert_same_port(ours, torch_with_gradients(module, {"x": x}, ours[3]), prefix="fc.")


def test_linear_without_bias_and_its_names():
    main = pc.Program()
    with pc.program_guard(main, pc.Program()):
        pc.layers.linear(pc.layers.data("x", [4]), 3, bias=False)
        pc.layers.linear(pc.layers.data("y", [4]), 3)
    shapes = {n: v.shape for n, v in main.global_block().vars.items() if v.persistable}
    assert shapes == {"linear_0.weight": (3, 4), "linear_1.weight": (3, 4), "linear_1.bias": (3,)}
    with pc.program_guard(pc.Program()):
        with pytest.raises(
            pc.ProgramError, match=r"linear: the last dimension of 'z' must be known"
        ):
            pc.layers.linear(pc.layers.data("z", [None]), 3)


def test_batch_norm_ports_with_pytorch_names_and_momentum():
    """Evaluated with copied statistics: the same outputs. Trained a step: the running mean
    moves as PyTorch's with momentum 1 - PyTorch's, the variance by the biased estimate."""
    module = torch.nn.BatchNorm2d(3, momentum=0.1)
    with torch.no_grad():
        module.weight.uniform_(0.5, 1.5)
        module.bias.uniform_(-0.5, 0.5)
        module.running_mean.uniform_(-1, 1)
        module.running_var.uniform_(0.5, 2)
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        y = pc.layers.batch_norm(
            pc.layers.data("x", [3, 4, 4]), momentum=0.9, param_attr="bn.weight",
            bias_attr="bn.bias", moving_mean_name="bn.running_mean",
            moving_variance_name="bn.running_var",
        )  # fmt: skip
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    for name, tensor in module.state_dict().items():
        if name != "num_batches_tracked":
            scope.set_var(f"bn.{name}", tensor.numpy().copy())  # (trained in place below)
    x = RNG.standard_normal((2, 3, 4, 4)).astype(np.float32)
    test = main.clone(for_test=True)
    (evaluated,) = exe.run(test, feed={"x": x}, fetch_list=[y.name], scope=scope)
    with torch.no_grad():
        np.testing.assert_allclose(evaluated, module.eval()(torch.from_numpy(x)).numpy(), **FLOAT32)
    (trained,) = exe.run(main, feed={"x": x}, fetch_list=[y], scope=scope)
    with torch.no_grad():
        want = module.train()(torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(trained, want, **FLOAT32)
    np.testing.assert_allclose(
        scope.find_var("bn.running_mean"), module.running_mean.numpy(), **FLOAT32
    )
    n = x.size // 3  # PyTorch's running variance takes the unbiased batch variance
    batch_var = x.transpose(1, 0, 2, 3).reshape(3, -1).var(1)
    ours_var = scope.find_var("bn.running_var")
    gap = module.running_var.numpy() - ours_var
    np.testing.assert_allclose(gap, 0.1 * batch_var / (n - 1), **FLOAT32)


# -- attention ---------------------------------------------------------------------------------

needs_attention = pytest.mark.skipif(
    "scaled_dot_product_attention" not in pc.get_registry(),
    reason="paddle-ops-nn has no scaled_dot_product_attention",
)


@needs_attention
@pytest.mark.parametrize("kind", ["self", "cross"])
def test_multi_head_attention_is_torch_multihead_attention(kind):
    module = torch.nn.MultiheadAttention(16, 4, batch_first=True)
    q = RNG.standard_normal((2, 5, 16)).astype(np.float32)
    feeds = {"q": q}
    if kind == "cross":
        feeds |= {"k": RNG.standard_normal((2, 7, 16)).astype(np.float32)}
        feeds |= {"v": RNG.standard_normal((2, 7, 16)).astype(np.float32)}

    def build(q, k=None, v=None):
        k, v = (q, q) if k is None else (k, v)
        return pc.layers.multi_head_attention(q, k, v, 16, 4, name="mha")

    def call(q, k=None, v=None):
        k, v = (q, q) if k is None else (k, v)
        return module(q, k, v, need_weights=False)[0]

    ours = run_with_gradients(build, module, feeds, prefix="mha.")
    assert_same_port(ours, torch_with_gradients(module, feeds, ours[3], call), prefix="mha.")


@needs_attention
@pytest.mark.parametrize(
    "mask", ["bool", "float", "padding", "causal", "bool+padding", "float+padding"]
)
def test_multi_head_attention_takes_pytorch_masks(mask):
    module = torch.nn.MultiheadAttention(8, 2, batch_first=True)
    x = RNG.standard_normal((2, 4, 8)).astype(np.float32)
    causal = np.triu(np.ones((4, 4), bool), 1)  # True: may not attend (PyTorch's meaning)
    padding = np.array([[False, False, False, True], [False, False, True, True]])
    feeds, kwargs = {"x": x}, {}
    if mask.startswith("bool"):
        feeds["attn_mask"], kwargs["attn_mask"] = causal, torch.from_numpy(causal)
    if mask.startswith("float"):
        additive = RNG.standard_normal((4, 4)).astype(np.float32)
        feeds["attn_mask"], kwargs["attn_mask"] = additive, torch.from_numpy(additive)
    if mask.endswith("padding"):
        feeds["key_padding_mask"] = padding
        kwargs["key_padding_mask"] = torch.from_numpy(padding)
    if mask == "causal":
        kwargs |= {"attn_mask": torch.from_numpy(causal), "is_causal": True}
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        vars_ = {n: pc.data(n, list(v.shape), str(v.dtype)) for n, v in feeds.items()}
        x_var = vars_.pop("x")
        out = pc.layers.multi_head_attention(
            x_var, x_var, x_var, 8, 2, is_causal=mask == "causal", name="mha", **vars_
        )
    scope, exe = pc.Scope(), pc.Executor()
    exe.run(startup, scope=scope)
    for name, tensor in module.state_dict().items():
        scope.set_var(f"mha.{name}", tensor.numpy().copy())
    (got,) = exe.run(main, feed=feeds, fetch_list=[out], scope=scope)
    with torch.no_grad():
        t = torch.from_numpy(x)
        want = module(t, t, t, need_weights=False, **kwargs)[0].numpy()
    np.testing.assert_allclose(got, want, **FLOAT32)


@needs_attention
@pytest.mark.parametrize(("norm_first", "activation"), [(False, "relu"), (True, "gelu")])
def test_transformer_encoder_layer_is_pytorch_s(norm_first, activation):
    module = torch.nn.TransformerEncoderLayer(
        16, 4, dim_feedforward=32, dropout=0.0, activation=activation, batch_first=True,
        norm_first=norm_first,
    )  # fmt: skip
    x = RNG.standard_normal((2, 6, 16)).astype(np.float32)

    def build(x):
        return pc.layers.transformer_encoder_layer(
            x, 16, 4, dim_feedforward=32, dropout=0.0, activation=activation,
            norm_first=norm_first, name="enc",
        )  # fmt: skip

    ours = run_with_gradients(build, module, {"x": x}, prefix="enc.")
    assert_same_port(ours, torch_with_gradients(module, {"x": x}, ours[3]), prefix="enc.")
