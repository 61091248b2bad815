"""einsum: its equation, its shape rule, its gradient (more einsums) and its CPU kernel.

The equation is NumPy's: operands' subscripts separated by commas, letters a-z and A-Z, at most
one ``...`` per operand standing for its remaining dims (right-aligned across operands), an
explicit output after ``->`` or, without one, the implicit output (the ``...`` dims, then the
letters used once, in sorted order). A letter repeated in an operand takes its diagonal; a
letter missing from the output is summed over; a dim of size 1 broadcasts against the same
letter's other sizes. The kernel is ``numpy.einsum`` itself (its contractions run on BLAS), so
the forward pass is NumPy's by construction; this module only has to agree on shapes, and the
tests check that it does.
"""

from __future__ import annotations

import string
from collections import Counter

from paddle_core import ProgramError

_LETTERS = string.ascii_letters


def parse(equation: str, ranks: list[int]) -> tuple[list[str], str]:
    """The operands' subscripts and the output's, every ``...`` spelled out as letters the
    equation does not use; raises ValueError saying what is wrong."""
    eq = equation.replace(" ", "")
    lhs, arrow, out = eq.partition("->")
    terms = lhs.split(",")
    if len(terms) != len(ranks):
        raise ValueError(f"the equation has {len(terms)} operand(s) but {len(ranks)} were given")
    for term in [*terms, out]:
        bare = term.replace("...", "", 1)
        if any(c not in _LETTERS for c in bare):
            raise ValueError(
                f"subscripts {term!r}: only letters a-z, A-Z and one '...' per operand"
            )
    free = [c for c in _LETTERS if c not in eq]
    widths = [r - (len(t) - 3) if "..." in t else 0 for t, r in zip(terms, ranks)]
    ellipsis = "".join(free[: max(widths, default=0)])
    specs = []
    for k, (term, rank, width) in enumerate(zip(terms, ranks, widths)):
        if "..." in term:
            if width < 0:
                raise ValueError(f"operand {k} has {rank} dims, fewer than {term!r} names")
            term = term.replace("...", ellipsis[len(ellipsis) - width :])
        elif len(term) != rank:
            raise ValueError(
                f"operand {k} has {rank} dims but its subscripts {term!r} name {len(term)}"
            )
        specs.append(term)
    if not arrow:
        counts = Counter("".join(t.replace("...", "") for t in terms))
        return specs, ellipsis + "".join(sorted(c for c, n in counts.items() if n == 1))
    if "..." in out:
        out = out.replace("...", ellipsis)
    elif ellipsis:
        raise ValueError("the output must keep the '...' dims of the operands (write '...')")
    used = set("".join(specs))
    for c in out:
        if c not in used:
            raise ValueError(f"output letter {c!r} is in no operand")
        if out.count(c) > 1:
            raise ValueError(f"output letter {c!r} is repeated")
    return specs, out


def sizes(specs: list[str], shapes: list[tuple]) -> dict[str, int | None]:
    """Each letter's size: the same wherever it appears, or 1 (which broadcasts, as in
    numpy.einsum); None while unknown. Raises ValueError naming a letter whose sizes differ."""
    known: dict[str, set[int]] = {}
    unknown: set[str] = set()
    for spec, shape in zip(specs, shapes):
        within: dict[str, int | None] = {}
        for c, d in zip(spec, shape):
            if c in within and None not in (d, within[c]) and d != within[c]:
                raise ValueError(f"letter {c!r} repeats in {spec!r} over sizes {within[c]} and {d}")
            within[c] = d
            if d is None:
                unknown.add(c)
                continue
            known.setdefault(c, set()).add(d)
            if len(known[c] - {1}) > 1:
                raise ValueError(f"letter {c!r} has sizes {sorted(known[c])}")
    letters = {c for spec in specs for c in spec}
    found: dict[str, int | None] = {}
    for c in letters:
        big = known.get(c, set()) - {1}
        found[c] = big.pop() if big else (None if c in unknown else 1)
    return found


def einsum_shape(ctx):
    """The output letters' sizes; the operands share one dtype."""
    xs = ctx.input_list("xs")
    if any(x.dtype != xs[0].dtype for x in xs):
        ctx.fail(f"xs must share one dtype, got {', '.join(x.dtype for x in xs)}")
    try:
        specs, out = parse(ctx.attrs["equation"], [x.ndim for x in xs])
        found = sizes(specs, [x.shape for x in xs])
    except ValueError as e:
        ctx.fail(f"equation {ctx.attrs['equation']!r}: {e}")
    ctx.set_output("out", [found[c] for c in out], xs[0].dtype)


def einsum_cpu(xs, *, equation):
    """numpy.einsum, in the operands' dtype; float16 and bfloat16 (which NumPy's einsum does not
    take) computed in float32 and rounded once, as the other kernels compute them."""
    import numpy as np  # (kernels load on first use; the rules above need no NumPy)

    dtype = xs[0].dtype
    if dtype.name in ("float16", "bfloat16"):
        xs = [np.asarray(x, np.float32) for x in xs]
    return np.asarray(np.einsum(equation, *xs, optimize=len(xs) > 1)).astype(dtype, copy=False)


def einsum_grad(ctx):
    """Each operand's gradient is an einsum of out_grad with the other operands onto the
    operand's own letters, then made its shape: summed over the letters it broadcast (size 1
    here, larger elsewhere), repeated along letters only it has (which out summed over), and
    put on the diagonal for letters it repeats."""
    g = ctx.output_grad("out")
    names = ctx.inputs("xs")
    targets = ctx.input_grads("xs")
    if g is None or all(t is None for t in targets):
        return
    block = ctx.op.block
    shapes = [block.var(n).shape for n in names]
    if any(None in s for s in shapes):
        raise _unknown(ctx, names, shapes)
    specs, out = parse(ctx.attrs["equation"], [len(s) for s in shapes])
    found = sizes(specs, shapes)
    for i, target in enumerate(targets):
        if target is not None:
            _operand_grad(ctx, g, out, names, specs, shapes, found, i, target)


def _operand_grad(ctx, g, out, names, specs, shapes, found, i, target):
    spec, shape = specs[i], shapes[i]
    unique = "".join(dict.fromkeys(spec))
    own = dict(zip(spec, shape))  # this operand's size of each of its letters
    others = [j for j in range(len(names)) if j != i]
    available = set(out).union(*(specs[j] for j in others))
    kept = "".join(c for c in unique if c in available)
    terms = [out, *(specs[j] for j in others)]
    t = _einsum(ctx, [g, *(names[j] for j in others)], ",".join(terms) + "->" + kept)
    # t's size of each letter: the largest the grad einsum's operands give it.
    made = sizes(terms, [[found[c] for c in out], *(shapes[j] for j in others)])
    broadcast = [k for k, c in enumerate(kept) if own[c] == 1 and made[c] != 1]
    if broadcast:  # this operand's size 1 met larger sizes: sum those back
        t = _op(ctx, "sum", {"x": t}, {"axes": broadcast, "keepdim": True})
    if kept != unique:  # letters only this operand has: out summed them, so repeat the grad
        missing = [k for k, c in enumerate(unique) if c not in kept]
        t = _op(ctx, "unsqueeze", {"x": t}, {"axes": missing})
    if kept != unique or any(made[c] == 1 != own[c] for c in kept):  # and along broadcast ones
        t = _op(ctx, "broadcast_to", {"x": t}, {"shape": [own[c] for c in unique]})
    if unique != spec:  # repeated letters: the gradient sits on their diagonal, zeros elsewhere
        t = _diagonal(ctx, t, unique, spec, own, _dtype(ctx, names[i]))
    ctx.append_op("assign", {"x": t}, {"out": target})


def _diagonal(ctx, t, unique, spec, own, dtype):
    """t (letters `unique`) spread over `spec`, whose repeats of a letter each get a fresh
    letter tied to the first by an identity matrix (one_hot of range)."""
    free = iter(c for c in _LETTERS if c not in spec)
    renamed, eyes, seen = [], [], set()
    for c in spec:
        if c in seen:
            fresh = next(free)
            n = own[c]
            count = _op(ctx, "range", {}, {"limit": float(n), "dtype": "int64"})
            eyes.append(
                (c + fresh, _op(ctx, "one_hot", {"index": count}, {"depth": n, "dtype": dtype}))
            )
            renamed.append(fresh)
        else:
            seen.add(c)
            renamed.append(c)
    equation = ",".join([unique, *(s for s, _ in eyes)]) + "->" + "".join(renamed)
    return _einsum(ctx, [t, *(e for _, e in eyes)], equation)


def _dtype(ctx, name):
    return ctx.op.block.var(name).dtype


def _einsum(ctx, xs, equation):
    return _op(ctx, "einsum", {"xs": list(xs)}, {"equation": equation})


def _op(ctx, op, inputs, attrs):
    return ctx.append_op(op, inputs, {}, attrs).outputs["out"][0]


def _unknown(ctx, names, shapes):
    return ProgramError(
        f"op 'einsum' ({ctx.attrs['equation']!r} of {names}, shapes {[list(s) for s in shapes]}): "
        "its gradient needs every operand's shape; declare them"
    )
