"""The digits MLP trained the Program way (examples/train_digits.py) and the Model way
(examples/train_digits_model.py): the same parameters, bit for bit, and the same accuracy."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from conftest import ROOT

pytest.importorskip("sklearn")
pytest.importorskip("rich")


def example(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "examples" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_model_way_trains_exactly_as_the_program_way():
    program_way, model_way = example("train_digits"), example("train_digits_model")
    main, scope, _, program_accuracy, _ = program_way.train("mlp", epochs=2, quiet=True)
    model, _, model_accuracy, _ = model_way.train(epochs=2)
    names = [p.name for p in main.all_parameters()]
    assert [p.name() for p in model.parameters()] == names
    for name in names:
        np.testing.assert_array_equal(model.scope.find_var(name), scope.find_var(name))
    assert model_accuracy == program_accuracy > 0.9
