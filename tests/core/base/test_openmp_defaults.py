"""The OpenMP settings in force while a plugin's compiled module loads (base/threads.py)."""

from __future__ import annotations

import os

import pytest

from paddle_core._src.base import threads
from paddle_core._src.plugins import loading


def test_a_short_spin_is_asked_for_only_while_the_block_runs(monkeypatch):
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    with threads.openmp_defaults():
        assert os.environ["GOMP_SPINCOUNT"] == threads.SPIN_COUNT
    assert "GOMP_SPINCOUNT" not in os.environ  # processes started later do not inherit it


@pytest.mark.parametrize(("var", "value"), [("OMP_WAIT_POLICY", "active"), ("GOMP_SPINCOUNT", "7")])
def test_the_users_own_setting_wins(monkeypatch, var, value):
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.setenv(var, value)
    with threads.openmp_defaults():
        assert os.environ.get("GOMP_SPINCOUNT") == (value if var == "GOMP_SPINCOUNT" else None)
    assert os.environ[var] == value


def test_a_kernel_module_imports_under_those_settings(monkeypatch):
    monkeypatch.delenv("GOMP_SPINCOUNT", raising=False)
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    seen = []

    def import_module(name):
        seen.append((name, os.environ.get("GOMP_SPINCOUNT")))
        raise ImportError("not built")

    monkeypatch.setattr(loading.importlib, "import_module", import_module)
    record = loading.PluginRecord("fake")
    record.kernel_module = "fake_ops._C"
    table, problem, _ = loading.check_module(record)
    assert seen == [("fake_ops._C", threads.SPIN_COUNT)]
    assert table == {} and "failed to import" in problem
