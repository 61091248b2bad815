"""scaled_dot_product_attention on float32, ours beside PyTorch CPU's F.scaled_dot_product_attention.

Batch 2, 4 heads, sequences of 1024 queries and keys, head dimension 64 (as --batch, --heads,
--seq, --dim); full and causal; the forward alone, and forward plus the gradients of sum(out)
with respect to q, k and v (ours: one program, pc.gradients; PyTorch: torch.autograd.grad).
Ours runs one prepared program per case through pc.Executor. At one thread: ours
num_threads=1 and torch.set_num_threads(1); at two: both 2. Medians over --repeat rounds,
each round timing both systems once in turn; ratios above 1 mean ours is faster.

Then peak memory of forward plus backward at one thread, each system in a fresh process: the
peak resident set over four runs (VmHWM, reset through /proc/self/clear_refs first, so that
importing the libraries does not mask it) past the resident set once the inputs were made and
the program built; it counts the plan's buffers and the gradients. Linux only. Beside ours: the
composed form built from our ops (matmul, scale, softmax, matmul), which holds the [L, S]
probabilities per head, and PyTorch's fused and composed forms.

    python bench/bench_attention.py [--repeat 7]

PyTorch is optional (`pip install torch==2.13.0`); without it only our figures print.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import numpy as np
from timing import banner, interleaved, optional, ours_beside

import paddle_core as pc

torch = optional("torch")
HERE = os.path.dirname(os.path.abspath(__file__))
CASES = ["forward", "fwd+bwd", "causal forward", "causal fwd+bwd"]


def inputs(batch: int, heads: int, seq: int, dim: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(0)
    shape = (batch, heads, seq, dim)
    return {n: rng.standard_normal(shape, dtype=np.float32) for n in "qkv"}


def program(case: str, feed: dict, composed: bool = False):
    """The case as a program of ours, and what it fetches."""
    prog = pc.Program()
    with pc.program_guard(prog):
        q, k, v = (pc.data(n, list(feed[n].shape)) for n in "qkv")
        if composed:
            scores = pc.ops.matmul(q, k, transpose_y=True)
            scaled = pc.ops.scale(scores, scale=float(1 / np.sqrt(feed["q"].shape[-1])))
            out = pc.ops.matmul(pc.ops.softmax(scaled), v)
        else:
            out, _, _ = pc.ops.scaled_dot_product_attention(q, k, v, is_causal="causal" in case)
        fetch = [out]
        if "bwd" in case:
            fetch = pc.gradients([pc.ops.sum(out)], [q, k, v])
    return prog, fetch


def ours(case: str, feed: dict, threads: int):
    prog, fetch = program(case, feed)
    exe = pc.Executor(num_threads=threads)
    return lambda: exe.run(prog, feed=feed, fetch_list=fetch)


def theirs(case: str, feed: dict, composed: bool = False):
    F = torch.nn.functional
    t = {n: torch.from_numpy(a).requires_grad_("bwd" in case) for n, a in feed.items()}
    causal = "causal" in case

    def attend():
        if composed:
            scores = t["q"] @ t["k"].transpose(-1, -2) / np.sqrt(t["q"].shape[-1])
            return torch.softmax(scores, -1) @ t["v"]
        return F.scaled_dot_product_attention(t["q"], t["k"], t["v"], is_causal=causal)

    if "bwd" not in case:
        return lambda: attend().detach()
    return lambda: torch.autograd.grad(attend().sum(), (t["q"], t["k"], t["v"]))


# -- peak memory, in a fresh process per system ------------------------------------------------

MEMORY_SCRIPT = """
import json, sys
sys.path.insert(0, sys.argv[3])
import bench_attention as b
system, shape = sys.argv[1], json.loads(sys.argv[2])
feed = b.inputs(*shape)
if system.startswith("torch"):
    b.torch.set_num_threads(1)
    fn = b.theirs("fwd+bwd", feed, composed=system == "torch composed")
else:
    import paddle_core as pc
    prog, fetch = b.program("fwd+bwd", feed, composed=system == "ours composed")
    exe = pc.Executor(num_threads=1)
    fn = lambda: exe.run(prog, feed=feed, fetch_list=fetch)
def status(field):
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith(field))
before = status("VmRSS:")
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")  # resets the peak (VmHWM) to the current resident set
for _ in range(4):
    fn()
print(json.dumps((status("VmHWM:") - before) / 1024))
"""


def peak_growth_mib(system: str, shape: list[int]) -> float:
    # -P: the checkout's source tree must not shadow the installed paddle_core.
    result = subprocess.run(
        [sys.executable, "-P", "-c", MEMORY_SCRIPT, system, json.dumps(shape), HERE],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--heads", type=int, default=4)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--dim", type=int, default=64)
    args = parser.parse_args()
    banner(__doc__)
    shape = [args.batch, args.heads, args.seq, args.dim]
    feed = inputs(*shape)
    print(f"q, k, v: float32 {shape}")
    for threads in (1, 2):
        if torch is not None:
            torch.set_num_threads(threads)
        print(f"\n{threads} thread(s)")
        print(f"{'case':16} {'ours ms':>9} {'PyTorch ms':>10} {'vs PyTorch':>10}")
        for case in CASES:
            calls = {"ours": ours(case, feed, threads)}
            if torch is not None:
                calls["torch"] = theirs(case, feed)
            t = interleaved(calls, args.repeat, warmup_seconds=0.5)
            print(f"{case:16}" + ours_beside(t))
    print("\npeak memory growth of fwd+bwd, 1 thread (VmHWM over VmRSS, fresh process each)")
    systems = ["ours", "ours composed"] + (["torch", "torch composed"] if torch else [])
    for system in systems:
        print(f"{system:16} {peak_growth_mib(system, shape):9.1f} MiB")


if __name__ == "__main__":
    main()
