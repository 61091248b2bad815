"""Shape and grad rules of paddle-ops-math, one module per op family: each family's manifest
(manifest/<family>.pbtxt) names its module as its rules_module, so a bare rule name there
resolves in that module.

Most grad rules are the core's ``paddle_core.rules:default_grad``: each op ``T`` has a
``T_grad`` op, declared beside it in the manifest, with its own kernel.
"""
