"""Stands in for a compiled module whose import fails, as one linked against a missing symbol
does."""

raise ImportError("failing_C.so: undefined symbol: _ZN11paddle_core8internalEv")
