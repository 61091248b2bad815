"""Train an MLP on scikit-learn's 8x8 digits (bundled with scikit-learn: no download).

64 -> 128 (relu) -> 10, softmax cross-entropy, Adam, batches of 32, with a progress bar per
epoch (quiet when the output is not a terminal). Then the inference model is saved, loaded
back in a fresh process, and its predictions compared with this process's.

    python examples/train_digits.py [--epochs 30] [--out DIR]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
from sklearn.datasets import load_digits

import paddle_core as pc


def load(seed: int = 0):
    """Train and test splits (80/20) of the digits, pixels scaled to [0, 1]."""
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)[:, None]
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    return (x[order[:cut]], y[order[:cut]]), (x[order[cut:]], y[order[cut:]])


def build(learning_rate: float = 0.01):
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", [64])
        label = pc.layers.data("label", [1], dtype="int64")
        hidden = pc.layers.fc(image, 128, act="relu")
        logits = pc.layers.fc(hidden, 10)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
        probabilities = pc.layers.softmax(logits)
        accuracy = pc.layers.accuracy(probabilities, label)
        test = main.clone(for_test=True)
        pc.optimizer.Adam(learning_rate).minimize(loss)
    return main, startup, test, loss, accuracy, probabilities


def train(epochs: int, quiet: bool = False, batch: int = 32):
    (x_train, y_train), (x_test, y_test) = load()
    main, startup, test, loss, accuracy, probabilities = build()
    scope = pc.Scope()
    exe = pc.Executor()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(1)
    columns = [TextColumn("epoch {task.fields[epoch]:>2}"), BarColumn(), MofNCompleteColumn()]
    columns.append(TextColumn("loss {task.fields[loss]:.4f}  acc {task.fields[acc]:.3f}"))
    with Progress(*columns, disable=quiet or not sys.stdout.isatty()) as progress:
        for epoch in range(1, epochs + 1):
            order = rng.permutation(len(x_train))
            steps = range(0, len(order), batch)
            task = progress.add_task("", total=len(steps), epoch=epoch, loss=0.0, acc=0.0)
            for start in steps:
                rows = order[start : start + batch]
                feed = {"image": x_train[rows], "label": y_train[rows]}
                value, acc = exe.run(main, feed=feed, fetch_list=[loss, accuracy], scope=scope)
                progress.update(task, advance=1, loss=float(value), acc=float(acc))
    feed = {"image": x_test, "label": y_test}
    (test_accuracy,) = exe.run(test, feed=feed, fetch_list=[accuracy], scope=scope)
    return main, scope, probabilities, float(test_accuracy), x_test


PREDICT = """
import sys, numpy as np, paddle_core as pc
program, feed, fetch = pc.io.load_inference_model(sys.argv[1])
(out,) = pc.Executor().run(program, feed={feed[0]: np.load(sys.argv[2])}, fetch_list=fetch)
np.save(sys.argv[3], out)
"""


def check_saved_model(main, scope, probabilities, x_test, directory: Path) -> float:
    """Save the inference model, predict with it in a fresh process; return the largest
    difference from this process's predictions."""
    model = pc.io.save_inference_model(directory / "model", ["image"], [probabilities], main, scope)
    (here,) = pc.Executor().run(
        model, feed={"image": x_test}, fetch_list=[probabilities.name], scope=scope
    )
    np.save(directory / "x.npy", x_test)
    args = [str(directory / "model"), str(directory / "x.npy"), str(directory / "out.npy")]
    # From the model's directory: a fresh process that knows only the saved files (and not
    # a source checkout it might be started in).
    subprocess.run([sys.executable, "-c", PREDICT, *args], check=True, cwd=directory)
    there = np.load(directory / "out.npy")
    return float(np.abs(here - there).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument(
        "--out", type=Path, help="where to save the model (default: a temporary directory)"
    )
    args = parser.parse_args()
    program, scope, probabilities, accuracy, x_test = train(args.epochs)
    print(f"test accuracy after {args.epochs} epochs: {accuracy:.4f}")
    with tempfile.TemporaryDirectory() as tmp:
        directory = args.out or Path(tmp)
        difference = check_saved_model(program, scope, probabilities, x_test, directory)
    print(
        f"saved model reloaded in a fresh process: predictions differ by at most {difference:.2e}"
    )
    assert accuracy >= 0.97, f"test accuracy {accuracy:.4f} is below 0.97"
    assert difference == 0.0


if __name__ == "__main__":
    main()
