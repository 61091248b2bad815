"""The CUDA figures, on a machine with an NVIDIA GPU, each beside a reference measured in this run:

  add     256M-element float32 add on cuda:0, as GB/s and as a fraction of the GPU's copy
          bandwidth (CuPy device-to-device copy). Target: at least 0.85.
  matmul  4096x4096 float32 and bfloat16. Target: at least 0.9x PyTorch CUDA's speed.
  train   one step of the digits MLP (64 -> 128 -> 10, Adam) at batch 256, and conv2d
          forward+backward (8x64x56x56, 3x3, 64 filters) at batch 256. Target: at least 0.8x
          PyTorch CUDA's speed. The conv2d line says which engine ran it (cuDNN, or the
          plugin's own kernels without it), and PyTorch's is held to what ours computes:
          float32 without TF32, deterministic algorithms.

A figure is ours only when every op of its plan runs a CUDA kernel: where some op falls back
to the CPU, the line says which and times nothing. Timings synchronise the GPU after each call
(median of --repeat calls). Run through bench/gpu_check.sh, which builds the CUDA kernels first.

    python bench/bench_cuda.py [--repeat 20] [--only add|matmul|train]
"""

from __future__ import annotations

import argparse
import warnings

import numpy as np
from paddle_ops_nn import cudnn
from timing import optional, steady

import paddle_core as pc


def cpu_ops(exe: pc.Executor, prog: pc.Program, feed: dict, fetch: list) -> list[str]:
    """The ops of this plan that run on the CPU (no CUDA kernel)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the fallback warning: reported here instead
        plan = exe.prepare(prog, feed, fetch)
    return sorted({s.op.type for s in plan.steps if s.fallback})


def timed(exe, prog, feed, fetch, sync, repeat, scope=None) -> float | str:
    """Median seconds per run, or why there is no CUDA figure."""
    on_cpu = cpu_ops(exe, prog, feed, fetch)
    if on_cpu:
        return f"not a CUDA figure: no CUDA kernel for {', '.join(on_cpu)}"
    scope = scope or pc.Scope()

    def run():
        exe.run(prog, feed=feed, fetch_list=fetch, scope=scope, return_numpy=False)
        sync()

    return steady(run, repeat)


def report(name: str, ours: float | str, reference: str, theirs: float | None, unit=None) -> None:
    if isinstance(ours, str):
        print(f"  {name:<34} {ours}")
        return
    line = f"  {name:<34} ours {ours * 1e3:8.3f} ms"
    if theirs is not None:
        line += f"   {reference} {theirs * 1e3:8.3f} ms   ratio {theirs / ours:5.2f}x"
    if unit is not None:
        line += f"   ({unit(ours)})"
    print(line)


def bench_add(cupy, repeat: int) -> None:
    n = 256 * 1024 * 1024
    a = cupy.random.standard_normal(n, dtype=cupy.float32)
    b = cupy.random.standard_normal(n, dtype=cupy.float32)
    prog = pc.Program()
    with pc.program_guard(prog):
        out = pc.ops.add(pc.data("a", [n]), pc.data("b", [n]))
    exe, sync = pc.Executor("cuda:0"), cupy.cuda.Device(0).synchronize
    feed = {"a": a, "b": b}
    ours = timed(exe, prog, feed, [out], sync, repeat)
    if not isinstance(ours, str):
        (got,) = exe.run(prog, feed=feed, fetch_list=[out], return_numpy=False)
        assert bool((got == a + b).all()), "cuda add disagrees with CuPy"
    dst = cupy.empty_like(a)
    copy = steady(lambda: (dst.data.copy_from_device(a.data, a.nbytes), sync()), repeat)
    copy_rate = 2 * a.nbytes / copy  # bytes read and written per second
    cupy_add = steady(lambda: (a + b, sync()), repeat)
    print(f"add, 256M float32 (device copy: {copy_rate / 1e9:.0f} GB/s read+written)")
    moved = 3 * a.nbytes  # two inputs read, one output written

    def rate(t: float) -> str:
        return f"{moved / t / 1e9:.0f} GB/s, {moved / t / copy_rate:.2f} of copy"

    report("paddle-core vs CuPy a + b", ours, "CuPy", cupy_add, unit=rate)


def tflops(seconds: float, n: int = 4096) -> str:
    return f"{2 * n**3 / seconds / 1e12:.0f} TFLOP/s"


def bench_matmul(cupy, torch, repeat: int) -> None:
    print("matmul, 4096x4096")
    n = 4096
    sync = cupy.cuda.Device(0).synchronize
    for dtype in ("float32", "bfloat16"):
        prog = pc.Program()
        with pc.program_guard(prog):
            out = pc.ops.matmul(pc.data("x", [n, n], dtype), pc.data("y", [n, n], dtype))
        exe = pc.Executor("cuda:0")
        if dtype == "bfloat16":
            if torch is None:
                print("  bfloat16: needs PyTorch to make the inputs")
                continue
            xt = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
            yt = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
            feed = {"x": xt, "y": yt}  # through DLPack
        else:
            feed = {
                "x": cupy.random.standard_normal((n, n), dtype=cupy.float32),
                "y": cupy.random.standard_normal((n, n), dtype=cupy.float32),
            }
        try:
            ours = timed(exe, prog, feed, [out], sync, repeat)
        except pc.PaddleCoreError as e:
            ours = f"not a CUDA figure: {e}"
        theirs = None
        if torch is not None:
            xt = torch.as_tensor(feed["x"], device="cuda")
            yt = torch.as_tensor(feed["y"], device="cuda")
            theirs = steady(lambda xt=xt, yt=yt: (xt @ yt, torch.cuda.synchronize()), repeat)
        report(f"{dtype} vs PyTorch", ours, "PyTorch", theirs, unit=tflops)


def bench_train(cupy, torch, repeat: int) -> None:
    print("training, batch 256")
    sync = cupy.cuda.Device(0).synchronize
    rng = np.random.default_rng(0)
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", [64])
        label = pc.layers.data("label", [1], dtype="int64")
        logits = pc.layers.fc(pc.layers.fc(image, 128, act="relu"), 10)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
        pc.optimizer.Adam(0.001).minimize(loss)
    exe, scope = pc.Executor("cuda:0"), pc.Scope()
    exe.run(startup, scope=scope)
    x = cupy.asarray(rng.random((256, 64), np.float32))
    y = cupy.asarray(rng.integers(0, 10, (256, 1)))
    ours = timed(exe, main, {"image": x, "label": y}, [], sync, repeat, scope)
    theirs = None
    if torch is not None:
        nn = torch.nn
        model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).cuda()
        opt = torch.optim.Adam(model.parameters(), lr=0.001)
        xt, yt = torch.as_tensor(x), torch.as_tensor(y[:, 0])

        def step():
            opt.zero_grad(set_to_none=True)
            torch.nn.functional.cross_entropy(model(xt), yt).backward()
            opt.step()
            torch.cuda.synchronize()

        theirs = steady(step, repeat)
    report("digits MLP step vs PyTorch", ours, "PyTorch", theirs)

    shape = (256, 64, 56, 56)
    prog = pc.Program()
    with pc.program_guard(prog):
        xv, wv, gv = (
            pc.data("x", list(shape)),
            pc.data("w", [64, 64, 3, 3]),
            pc.data("g", list(shape)),
        )
        out = pc.ops.conv2d(xv, wv, paddings=[1, 1])
        fetch = [out, *pc.gradients([out], [xv, wv], target_gradients=[gv])]
    xc = cupy.random.standard_normal(shape, dtype=cupy.float32)
    wc = cupy.random.standard_normal((64, 64, 3, 3), dtype=cupy.float32) * 0.05
    gc = cupy.random.standard_normal(shape, dtype=cupy.float32)
    feed = {"x": xc, "w": wc, "g": gc}
    before = cudnn.engines_prepared()
    try:
        ours = timed(pc.Executor("cuda:0"), prog, feed, fetch, sync, repeat)
    except pc.PaddleCoreError as e:
        ours = f"not a CUDA figure: {e}"
    theirs = None
    if torch is not None:
        xt = torch.as_tensor(xc).requires_grad_()
        wt = torch.as_tensor(wc).requires_grad_()
        gt = torch.as_tensor(gc)

        def both():
            torch.nn.functional.conv2d(xt, wt, padding=1).backward(gt)
            torch.cuda.synchronize()

        flags = torch.backends.cudnn
        saved = flags.allow_tf32, flags.deterministic
        flags.allow_tf32, flags.deterministic = False, True  # as ours: FMA math, deterministic
        try:
            theirs = steady(both, repeat)
        finally:
            flags.allow_tf32, flags.deterministic = saved
    report(f"conv2d fwd+bwd ({engines_since(before)}) vs PyTorch", ours, "PyTorch", theirs)


def engines_since(before: dict[str, int]) -> str:
    """Which engines computed the CUDA convolutions prepared since ``before``: cuDNN, or the
    plugin's own kernels (cuDNN missing, switched off, or not taking the convolution)."""
    after = cudnn.engines_prepared()
    return " and ".join(name for name in after if after[name] > before[name]) or "no engine"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--only", choices=["add", "matmul", "train"])
    args = parser.parse_args()
    reason = pc.CUDA.unavailable_reason(0)
    if reason is not None:
        print(f"no CUDA figures: {reason}")
        return
    cupy = optional("cupy")
    torch = optional("torch")
    if torch is not None and not torch.cuda.is_available():
        print("this PyTorch has no CUDA: skipping the PyTorch references")
        torch = None
    if args.only in (None, "add"):
        bench_add(cupy, args.repeat)
    if args.only in (None, "matmul"):
        bench_matmul(cupy, torch, args.repeat)
    if args.only in (None, "train"):
        bench_train(cupy, torch, args.repeat)


if __name__ == "__main__":
    main()
