"""Train a classifier of scikit-learn's 8x8 digits (bundled with scikit-learn: no download).

Two models, softmax cross-entropy, Adam, batches of 32, with a progress bar per epoch (quiet
when the output is not a terminal):
  mlp  64 -> 128 (relu) -> 10
  cnn  1x8x8 -> conv 3x3 (16) -> batch norm -> relu -> max pool 2x2
             -> conv 3x3 (32) -> batch norm -> relu -> max pool 2x2 -> 10
Then each inference model is saved, loaded back in a fresh process, and its predictions
compared with this process's.

    python examples/train_digits.py [--model mlp|cnn|both] [--epochs 30] [--out DIR]
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


def mlp(image):
    return pc.layers.fc(pc.layers.fc(image, 128, act="relu"), 10)


def cnn(image):
    x = image
    for filters in (16, 32):
        x = pc.layers.conv2d(x, filters, 3, padding=1, bias_attr=False)
        x = pc.layers.batch_norm(x, act="relu")
        x = pc.layers.pool2d(x, 2, pool_stride=2)
    return pc.layers.fc(x, 10)


MODELS = {"mlp": (mlp, [64]), "cnn": (cnn, [1, 8, 8])}


def build(model: str, learning_rate: float = 0.01, optimizer=None):
    """(main, startup, test, loss, accuracy, probabilities): ``optimizer`` (Adam by default)
    minimizes the loss in main; test is main's evaluation clone, taken before."""
    net, image_shape = MODELS[model]
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        image = pc.layers.data("image", image_shape)
        label = pc.layers.data("label", [1], dtype="int64")
        logits = net(image)
        loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
        probabilities = pc.layers.softmax(logits)
        accuracy = pc.layers.accuracy(probabilities, label)
        test = main.clone(for_test=True)
        (optimizer or pc.optimizer.Adam(learning_rate)).minimize(loss)
    return main, startup, test, loss, accuracy, probabilities


def train(model: str, epochs: int, quiet: bool = False, batch: int = 32):
    (x_train, y_train), (x_test, y_test) = load()
    shape = MODELS[model][1]
    x_train, x_test = x_train.reshape(-1, *shape), x_test.reshape(-1, *shape)
    main, startup, test, loss, accuracy, probabilities = build(model)
    scope = pc.Scope()
    exe = pc.Executor()
    exe.run(startup, scope=scope)
    rng = np.random.default_rng(1)
    columns = [TextColumn(model + " epoch {task.fields[epoch]:>2}"), BarColumn()]
    columns.append(MofNCompleteColumn())
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
    parser.add_argument("--model", choices=[*MODELS, "both"], default="both")
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument(
        "--out", type=Path, help="where to save the models (default: a temporary directory)"
    )
    args = parser.parse_args()
    for model in MODELS if args.model == "both" else [args.model]:
        program, scope, probabilities, accuracy, x_test = train(model, args.epochs)
        print(f"{model}: test accuracy after {args.epochs} epochs: {accuracy:.4f}")
        with tempfile.TemporaryDirectory() as tmp:
            directory = (args.out or Path(tmp)) / model
            directory.mkdir(parents=True, exist_ok=True)
            difference = check_saved_model(program, scope, probabilities, x_test, directory)
        print(
            f"{model}: saved model reloaded in a fresh process: predictions differ by at most "
            f"{difference:.2e}"
        )
        want = {"mlp": 0.97, "cnn": 0.98}[model]
        assert accuracy >= want, f"{model}: test accuracy {accuracy:.4f} is below {want}"
        assert difference == 0.0


if __name__ == "__main__":
    main()
