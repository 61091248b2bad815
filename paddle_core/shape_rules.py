"""The old name of ``paddle_core.rules``, kept so that installed plugins go on working
(manifests naming ``paddle_core.shape_rules:unary``, code importing from here). New code names
``paddle_core.rules``; ``paddle-ops doctor`` notes manifests that still use this spelling."""

from .rules import broadcast_shapes, elementwise, unary

__all__ = ["broadcast_shapes", "elementwise", "unary"]
