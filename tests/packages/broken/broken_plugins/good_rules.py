"""Working rules shared by the broken test plugins (their faults are elsewhere)."""


def identity_cpu(x, **attrs):
    return x.copy()
