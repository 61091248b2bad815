"""Train the digits MLP of train_digits.py the Model way: no Program, Executor or Scope in
sight, the same numbers.

A ``pc.Model`` holds the programs, the parameters' scope and the device; layers given
``model=`` (or the model's expressions) return Expressions; ``model.minimize`` returns the
training step, and ``model.run([step, accuracy], feed=...)`` runs one step and the batch's
accuracy together. With the same data order this trains exactly as examples/train_digits.py
does (tests/core/model/test_digits_both_ways.py checks it, parameter for parameter). The
model is then saved, loaded back in a fresh process with ``pc.load_model``, and its
predictions compared with this process's.

    python examples/train_digits_model.py [--epochs 30]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from sklearn.datasets import load_digits

import paddle_core as pc


def load(seed: int = 0):
    """Train and test splits (80/20) of the digits, pixels scaled to [0, 1] (as
    train_digits.py splits them)."""
    digits = load_digits()
    x = (digits.data / 16.0).astype(np.float32)
    y = digits.target.astype(np.int64)[:, None]
    order = np.random.default_rng(seed).permutation(len(x))
    cut = int(0.8 * len(x))
    return (x[order[:cut]], y[order[:cut]]), (x[order[cut:]], y[order[cut:]])


def build(learning_rate: float = 0.01):
    """The MLP 64 -> 128 (relu) -> 10, its loss, metrics and training step."""
    model = pc.Model()
    image = pc.layers.data("image", [64], model=model)
    label = pc.layers.data("label", [1], dtype="int64", model=model)
    logits = pc.layers.fc(pc.layers.fc(image, 128, act="relu"), 10)  # builds image's model
    loss = pc.layers.mean(pc.layers.softmax_with_cross_entropy(logits, label))
    probabilities = pc.layers.softmax(logits)
    accuracy = pc.layers.accuracy(probabilities, label)
    step = model.minimize(loss, pc.optimizer.Adam(learning_rate))
    return model, step, accuracy, probabilities


def train(epochs: int, batch: int = 32):
    (x_train, y_train), (x_test, y_test) = load()
    model, step, accuracy, probabilities = build()
    rng = np.random.default_rng(1)
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(x_train))
        for start in range(0, len(order), batch):
            rows = order[start : start + batch]
            feed = {"image": x_train[rows], "label": y_train[rows]}
            loss, acc = model.run([step, accuracy], feed=feed)  # one step, and its accuracy
        if epoch % 10 == 0:
            print(f"epoch {epoch}: last batch's loss {float(loss):.4f}, accuracy {float(acc):.3f}")
    # The evaluation model: the same parameters, forward ops only, inference mode.
    evaluation = model.clone(for_test=True)
    (test_accuracy,) = evaluation.run([accuracy], feed={"image": x_test, "label": y_test})
    return model, probabilities, float(test_accuracy), x_test


PREDICT = """
import sys, numpy as np, paddle_core as pc
model = pc.load_model(sys.argv[1])
probabilities = model.expression(sys.argv[2])
np.save(sys.argv[4], probabilities.value(feed={"image": np.load(sys.argv[3])}))
"""


def check_saved_model(model, probabilities, x_test, directory: Path) -> float:
    """Save the model, predict with it in a fresh process; return the largest difference
    from this process's predictions."""
    model.save(directory / "model")
    here = probabilities.value(feed={"image": x_test})
    np.save(directory / "x.npy", x_test)
    args = [str(directory / "model"), probabilities.name(), str(directory / "x.npy")]
    args.append(str(directory / "out.npy"))
    subprocess.run([sys.executable, "-c", PREDICT, *args], check=True, cwd=directory)
    return float(np.abs(here - np.load(directory / "out.npy")).max())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--epochs", type=int, default=30)
    args = parser.parse_args()
    model, probabilities, accuracy, x_test = train(args.epochs)
    print(f"mlp (Model way): test accuracy after {args.epochs} epochs: {accuracy:.4f}")
    with tempfile.TemporaryDirectory() as tmp:
        difference = check_saved_model(model, probabilities, x_test, Path(tmp))
    print(
        f"saved model reloaded in a fresh process: predictions differ by at most {difference:.2e}"
    )
    assert accuracy >= 0.97, f"test accuracy {accuracy:.4f} is below 0.97"
    assert difference == 0.0


if __name__ == "__main__":
    main()
