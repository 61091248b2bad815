"""The old home of the backward API, kept so that installed plugins go on working (manifests
naming ``paddle_core.backward:default_grad``, code importing from here). New code uses
``paddle_core.rules:default_grad`` and ``paddle_core.gradients`` / ``append_backward`` /
``GradContext``; ``paddle-ops doctor`` notes manifests that still use this spelling."""

from ._src.graph.backward import GradContext, append_backward, default_grad, gradients

__all__ = ["GradContext", "append_backward", "default_grad", "gradients"]
