"""Plugin manifests (the spec layer's manifest module): parsing, and one check per kind of problem."""

from __future__ import annotations

import pytest
from conftest import TEST_PACKAGES
from google.protobuf import text_format

import paddle_core as pc
from paddle_core._src.spec import attrs as A
from paddle_core._src.spec import manifest as M
from paddle_core.proto import framework_pb2 as pb

TOY_MANIFEST = TEST_PACKAGES / "paddle_ops_toy" / "paddle_ops_toy" / "ops.pbtxt"
HEADER = 'rules_module: "my_ops.rules"'
SLOTS = 'inputs { name: "x" comment: "In." } outputs { name: "out" comment: "Out." }'
KERNEL = 'kernels { device: "cpu" dtypes: [FLOAT32, FLOAT64] python: "t_cpu" }'
RULES = 'shape_rule: "t_shape"'


def op(
    type: str = "t",
    *,
    comment: str = "An op.",
    slots: str = SLOTS,
    attrs: str = "",
    kernels: str = KERNEL,
    rules: str = RULES,
) -> str:
    """One `ops` entry, valid unless a part is replaced."""
    comment_field = f'comment: "{comment}"' if comment else ""
    return (
        f'ops {{ proto {{ type: "{type}" {comment_field} {slots} {attrs} }} {kernels} {rules} }}\n'
    )


def check(*ops: str, header: str = HEADER) -> tuple[list[str], list[str]]:
    text = header + "\n" + "".join(ops or [op()])
    manifest = M.parse(text, plugin="mine", source="mine.pbtxt")
    return M.check(manifest, core_version=pc.__version__)


def problems(*ops: str, header: str = HEADER) -> list[str]:
    return check(*ops, header=header)[0]


def attr_problems(attrs: str) -> list[str]:
    return problems(op(attrs=attrs))


# -- valid manifests --------------------------------------------------------------------------


def test_valid_manifest():
    attrs = """
        attrs { name: "alpha" type: FLOAT comment: "Slope." default { f: 0.5 }
                min { value: 0 } max { value: 1 exclusive: true } }
        attrs { name: "mode" type: STRING default { s: "b" } choices { strings: ["a", "b"] } }
        attrs { name: "k" type: INT choices { ints: [1, 2, 3] } min { value: 1 } }
        attrs { name: "axes" type: INTS default { ints: [0, 1] } min { value: 0 } }
        attrs { name: "seed" type: LONG default { l: 12345678901234 } }
        attrs { name: "flags" type: BOOLS default { bools: [true, false] } }
    """
    slots = (
        SLOTS
        + ' inputs { name: "bias" dispensable: true } outputs { name: "parts" duplicable: true }'
    )
    kernels = KERNEL + ' kernels { device: "cuda" dtypes: [FLOAT32] python: "my_ops.cuda:t_cuda" }'
    rules = RULES + ' grad_rule: "t_grad"'
    assert check(
        op(slots=slots, attrs=attrs, kernels=kernels, rules=rules),
        op("u"),
        header=HEADER + ' requires_core: ">=0.1" comment: "My ops."',
    ) == ([], [])


def test_toy_manifest_is_valid():
    text = TOY_MANIFEST.read_text(encoding="utf-8")
    manifest = M.parse(text, plugin="toy", source=str(TOY_MANIFEST))
    assert M.check(manifest, core_version=pc.__version__) == ([], [])
    assert len(manifest.ops) == 11


def test_missing_comment_is_a_warning():
    assert check(op(comment="")) == ([], ["op 't' has no comment (its docstring will be empty)"])


def test_check_fills_in_value_types():
    text = HEADER + op(
        attrs='attrs { name: "mode" type: STRING default { s: "a" } choices { strings: ["a"] } }'
    )
    manifest = M.parse(text, plugin="mine", source="mine.pbtxt")
    ap = manifest.ops[0].proto.attrs[0]
    assert (ap.default.type, ap.choices.type) == (0, 0)
    M.check(manifest, core_version=pc.__version__)
    assert (ap.default.type, ap.choices.type) == (pb.STRING, pb.STRINGS)


def test_syntax_error_names_the_source_and_position():
    with pytest.raises(pc.ManifestError) as info:
        M.parse("ops { proto { type: 3 } }", plugin="mine", source="mine.pbtxt")
    assert info.value.plugin == "mine"
    assert str(info.value).startswith("mine.pbtxt: 1:21 : ")
    assert "Expected string" in str(info.value)
    with pytest.raises(pc.ManifestError) as info:
        M.parse('comment: "x"\nopz {}', plugin="mine", source="mine.pbtxt")
    assert str(info.value).startswith("mine.pbtxt: 2:1 : ")
    assert 'no field named "opz"' in str(info.value)


# -- identifiers ------------------------------------------------------------------------------


@pytest.mark.parametrize("op_type", ["Scale", "2x", "my-op", "class", "_info", ""])
def test_invalid_op_type(op_type):
    where = f"op {op_type!r}" if op_type else "an op with no type"
    assert problems(op(op_type)) == [
        f"{where}: type must be a lowercase Python identifier starting with a letter"
    ]


@pytest.mark.parametrize(
    ("slots", "problem"),
    [
        ('inputs { name: "X" } outputs { name: "out" }', "input 'X'"),
        ('inputs { name: "x" } outputs { name: "out-1" }', "output 'out-1'"),
        ('inputs { name: "lambda" } outputs { name: "out" }', "input 'lambda'"),
        ('inputs { name: "_info" } outputs { name: "out" }', "input '_info'"),
    ],
)
def test_invalid_slot_name(slots, problem):
    assert problems(op(slots=slots)) == [
        f"op 't': {problem} must be a lowercase Python identifier starting with a letter"
    ]


@pytest.mark.parametrize("name", ["Alpha", "alpha beta", "for", "_attrs"])
def test_invalid_attr_name(name):
    assert attr_problems(f'attrs {{ name: "{name}" type: FLOAT }}') == [
        f"op 't': attr {name!r} must be a lowercase Python identifier starting with a letter"
    ]


def test_reserved_name():
    assert attr_problems('attrs { name: "name" type: STRING }') == [
        "op 't': attr 'name' is reserved by the generated API"
    ]
    slots = 'inputs { name: "name" } outputs { name: "out" }'
    assert problems(op(slots=slots)) == ["op 't': input 'name' is reserved by the generated API"]


def test_names_declared_twice():
    assert attr_problems('attrs { name: "a" type: FLOAT } attrs { name: "a" type: INT }') == [
        "op 't': attr 'a' is declared twice"
    ]
    # An attr and an input would both be parameters of the generated function.
    assert attr_problems('attrs { name: "x" type: FLOAT }') == [
        "op 't': attr 'x' has the name of an input"
    ]
    slots = 'inputs { name: "x" } inputs { name: "x" } outputs { name: "out" }'
    assert problems(op(slots=slots)) == ["op 't': input 'x' is declared twice"]
    # An output may share an input's name (outputs are not parameters).
    assert problems(op(slots='inputs { name: "x" } outputs { name: "x" }')) == []


def test_op_declared_twice():
    assert problems(op(), op("u"), op()) == ["op 't' is declared twice"]


def test_op_without_outputs():
    assert problems(op(slots='inputs { name: "x" }')) == ["op 't': declares no outputs"]


# -- attrs ------------------------------------------------------------------------------------


def test_attr_without_type():
    assert attr_problems('attrs { name: "a" }') == ["op 't': attr 'a': has no valid type"]


@pytest.mark.parametrize(
    ("attr", "field"),
    [
        ("type: FLOAT default { i: 1 }", "f"),
        ('type: FLOAT default { f: 1 s: "x" }', "f"),
        ("type: INTS default { floats: [1.0] }", "ints"),
        ("type: LONG default { type: INT l: 1 }", "l"),
    ],
)
def test_default_of_the_wrong_field(attr, field):
    assert attr_problems(f'attrs {{ name: "alpha" {attr} }}') == [
        f"op 't': attr 'alpha': default must set only `{field}`"
    ]


@pytest.mark.parametrize(
    ("attr", "problem"),
    [
        ("default { f: 2 } min { value: 0 } max { value: 1 }", "default 2.0 is outside [0, 1]"),
        ("default { f: -1 } min { value: 0 }", "default -1.0 is outside [0, inf)"),
        ("default { f: 1 } max { value: 1 exclusive: true }", "default 1.0 is outside (-inf, 1)"),
        ("default { f: 0 } min { value: 0 exclusive: true }", "default 0.0 is outside (0, inf)"),
    ],
)
def test_default_out_of_range(attr, problem):
    assert attr_problems(f'attrs {{ name: "alpha" type: FLOAT {attr} }}') == [
        f"op 't': attr 'alpha': {problem}"
    ]


def test_list_default_out_of_range():
    attrs = 'attrs { name: "axes" type: INTS default { ints: [1, -1] } min { value: 0 } }'
    assert attr_problems(attrs) == ["op 't': attr 'axes': default [1, -1] is outside [0, inf)"]


def test_default_not_among_choices():
    attrs = 'attrs { name: "mode" type: STRING default { s: "c" } choices { strings: ["a", "b"] } }'
    assert attr_problems(attrs) == ["op 't': attr 'mode': default 'c' is not one of 'a', 'b'"]


def test_choices_on_a_bool():
    assert attr_problems('attrs { name: "flag" type: BOOL choices { bools: [true] } }') == [
        "op 't': attr 'flag': choices are not allowed on BOOL"
    ]


@pytest.mark.parametrize(
    "choices", ['choices { strings: ["1"] }', "choices { }", 'choices { ints: [1] s: "x" }']
)
def test_choices_in_the_wrong_field(choices):
    assert attr_problems(f'attrs {{ name: "k" type: INT {choices} }}') == [
        "op 't': attr 'k': choices must be a non-empty `ints` list"
    ]


def test_choice_out_of_range():
    attrs = 'attrs { name: "k" type: INT choices { ints: [1, 5, -2] } '
    attrs += "min { value: 0 } max { value: 3 } }"
    assert attr_problems(attrs) == [
        "op 't': attr 'k': choice 5 is outside [0, 3]",
        "op 't': attr 'k': choice -2 is outside [0, 3]",
    ]


def test_min_greater_than_max():
    assert attr_problems('attrs { name: "k" type: INT min { value: 3 } max { value: 1 } }') == [
        "op 't': attr 'k': min 3.0 is greater than max 1.0"
    ]


@pytest.mark.parametrize(
    ("attr_type", "side"), [("STRING", "min"), ("BOOL", "max"), ("BOOLS", "min")]
)
def test_bounds_on_a_non_numeric_type(attr_type, side):
    assert attr_problems(f'attrs {{ name: "s" type: {attr_type} {side} {{ value: 0 }} }}') == [
        f"op 't': attr 's': {side} is only allowed on numeric types, not {attr_type}"
    ]


# -- kernels ----------------------------------------------------------------------------------


def test_kernel_without_dtypes():
    kernels = 'kernels { device: "cpu" python: "t_cpu" }'
    assert problems(op(kernels=kernels)) == ["op 't': cpu kernel: lists no dtypes"]


def test_kernel_without_implementation():
    kernels = 'kernels { device: "cpu" dtypes: [FLOAT32] }'
    assert problems(op(kernels=kernels)) == [
        "op 't': cpu kernel: sets neither `python` nor `native`"
    ]


def test_kernel_with_a_bad_device():
    kernels = 'kernels { device: "GPU" dtypes: [FLOAT32] python: "t_cpu" }'
    assert problems(op(kernels=kernels)) == [
        "op 't': GPU kernel: device must be a lowercase identifier like 'cpu'"
    ]


def test_duplicate_kernel_for_a_device_and_dtype():
    kernels = KERNEL + ' kernels { device: "cpu" dtypes: [INT32, FLOAT32] python: "t_cpu2" }'
    assert problems(op(kernels=kernels)) == ["op 't': cpu kernel: dtype FLOAT32 declared twice"]
    # The same dtype on another device is a different kernel.
    other = KERNEL + ' kernels { device: "cuda" dtypes: [FLOAT32] python: "t_cuda" }'
    assert problems(op(kernels=other)) == []


NATIVE = 'kernels { device: "cpu" dtypes: [FLOAT32] native: "t_cpu" }'


def resolved(kernels: str, recorded: dict | None, pack: str = "", devices=("cpu",)) -> tuple:
    """A manifest of op 't' with ``kernels`` (and a ``pack``), its dtypes resolved against a
    build record of ``recorded`` dtypes and ``devices``: (kernels per op as (device, symbol,
    dtype names), unbuilt, faults, clashes)."""
    manifest = M.parse(op(kernels=kernels) + pack, plugin="mine", source="mine.pbtxt")
    record = None if recorded is None else {"kernels": recorded, "devices": list(devices)}
    unbuilt, faults, clashes = M.resolve_dtypes(manifest, record)
    kernels_of = {
        decl.op if hasattr(decl, "op") else decl.proto.type: [
            (k.device, k.native or k.python, [pb.VarType.DataType.Name(d) for d in k.dtypes])
            for k in decl.kernels
        ]
        for decl in [*manifest.ops, *manifest.kernel_packs]
    }
    return kernels_of, unbuilt, faults, clashes


F32, F64, I32 = pb.VarType.FLOAT32, pb.VarType.FLOAT64, pb.VarType.INT32
TWINS = 'kernels { device: "cpu" native: "t" } kernels { device: "cuda" native: "t_cuda" }'


def test_a_native_kernel_takes_the_dtypes_its_build_recorded():
    kernels = 'kernels { device: "cpu" native: "t" }'
    assert resolved(kernels, {"t": [F32, F64]}) == (
        {"t": [("cpu", "t", ["FLOAT32", "FLOAT64"])]},
        [],
        [],
        [],
    )
    # Listed dtypes win: a kernel shared by an op of fewer dtypes says so.
    listed = 'kernels { device: "cpu" dtypes: [FLOAT32] native: "t" }'
    assert resolved(listed, {"t": [F32, F64]})[0] == {"t": [("cpu", "t", ["FLOAT32"])]}


def test_a_cuda_kernel_takes_its_cpu_twins_dtypes_and_is_not_built_without_its_toolkit():
    built = {"t": [F32, F64], "t_cuda": [F32, F64, I32]}
    assert resolved(TWINS, built, devices=("cpu", "cuda"))[0] == {
        "t": [("cpu", "t", ["FLOAT32", "FLOAT64"]), ("cuda", "t_cuda", ["FLOAT32", "FLOAT64"])]
    }
    # A build without a CUDA toolkit compiled no cuda kernel: taken out, said not to be built,
    # which is no problem of the plugin.
    declared, unbuilt, faults, clashes = resolved(TWINS, {"t": [F32, F64]})
    assert declared == {"t": [("cpu", "t", ["FLOAT32", "FLOAT64"])]} and faults == clashes == []
    assert unbuilt == [
        [
            "t",
            "cuda",
            "t_cuda",
            "not built: the plugin's build compiled no cuda kernels (for cuda: no CUDA toolkit "
            "where it was built)",
        ]
    ]


def test_a_kernel_of_a_compiled_device_that_the_build_lacks_stays_for_loading_to_report():
    """The build compiled cuda kernels but not this one (a file that forgot to register it):
    not 'not built', but declared with its CPU twin's dtypes, so that loading the module names
    it missing and the plugin is partial."""
    declared, unbuilt, faults, _ = resolved(
        TWINS, {"t": [F32], "u_cuda": [F32]}, devices=("cpu", "cuda")
    )
    assert declared == {"t": [("cpu", "t", ["FLOAT32"]), ("cuda", "t_cuda", ["FLOAT32"])]}
    assert unbuilt == faults == []


def test_a_cuda_kernel_whose_class_does_not_handle_its_cpu_twins_dtypes_is_a_fault():
    built = {"t": [F32, F64], "t_cuda": [F32]}
    declared, _, faults, _ = resolved(TWINS, built, devices=("cpu", "cuda"))
    assert declared == {"t": [("cpu", "t", ["FLOAT32", "FLOAT64"])]}
    assert faults == [
        [
            "t",
            "cuda",
            "t_cuda",
            "it takes its op's CPU dtypes, but its class does not handle FLOAT64: list the dtypes "
            "it takes in the manifest",
        ]
    ]


def test_a_kernel_pack_without_a_cpu_kernel_takes_its_own_classs_dtypes():
    pack = 'kernel_packs { op: "other" kernels { device: "cuda" native: "other_cuda" } }'
    built = {"t_cpu": [F32], "other_cuda": [I32]}
    declared, unbuilt, faults, _ = resolved(NATIVE, built, pack, devices=("cpu", "cuda"))
    assert declared["other"] == [("cuda", "other_cuda", ["INT32"])] and unbuilt == faults == []


def test_a_native_kernel_whose_dtypes_are_unknown_is_taken_out_naming_why():
    kernels = 'kernels { device: "cpu" native: "t" }'
    declared, unbuilt, faults, _ = resolved(kernels, None)
    assert declared == {"t": []} and unbuilt == []
    assert faults == [
        [
            "t",
            "cpu",
            "t",
            "its dtypes are unknown: the manifest lists none, and the plugin's build recorded "
            "none (no kernels.json beside its kernel module: the SDK's "
            "paddle_core_record_kernels writes it)",
        ]
    ]
    assert resolved(kernels, {})[2][0][3] == (
        "its dtypes are unknown: the manifest lists none, and the plugin's build recorded no "
        "kernel 't' (is it registered with PADDLE_CORE_REGISTER_KERNELS?)"
    )
    assert resolved(kernels, {"t": None})[2][0][3] == (
        "its dtypes are unknown: the manifest lists none, and its class declares no DTypes"
    )


def test_two_kernels_of_a_device_taking_one_dtype_clash_once_resolved():
    kernels = 'kernels { device: "cpu" native: "t" } kernels { device: "cpu" native: "u" }'
    assert resolved(kernels, {"t": [F32, F64], "u": [F64]})[3] == [
        "op 't': cpu kernels 't' and 'u' both take FLOAT64"
    ]
    inherited = TWINS + ' kernels { device: "cuda" native: "v_cuda" }'
    built = {"t": [F32], "t_cuda": [F32], "v_cuda": [F32]}
    assert resolved(inherited, built, devices=("cpu", "cuda"))[3] == [
        "op 't': cuda kernels 't_cuda' and 'v_cuda' both take FLOAT32 (taken from its CPU kernels)"
    ]


def test_a_python_kernel_of_another_device_may_take_its_cpu_twins_dtypes():
    kernels = KERNEL + ' kernels { device: "cuda" python: "t_cuda" }'
    assert problems(op(kernels=kernels)) == []
    assert resolved(kernels, None)[0] == {
        "t": [("cpu", "t_cpu", ["FLOAT32", "FLOAT64"]), ("cuda", "t_cuda", ["FLOAT32", "FLOAT64"])]
    }
    alone = 'kernels { device: "cuda" python: "t_cuda" }'
    assert problems(op(kernels=alone)) == ["op 't': cuda kernel: lists no dtypes"]


def test_a_files_rules_module_is_spelt_into_its_bare_names():
    text = 'rules_module: "fam.rules"\n' + op(
        kernels=KERNEL, rules='shape_rule: "t_shape" grad_rule: "other.mod:t_grad"'
    )
    manifest = M.parse(text, plugin="mine", source="mine.pbtxt")
    M.qualify(manifest)
    (opdef,) = manifest.ops
    assert (opdef.shape_rule, opdef.grad_rule, opdef.kernels[0].python) == (
        "fam.rules:t_shape",
        "other.mod:t_grad",
        "fam.rules:t_cpu",
    )
    assert not manifest.rules_module


def test_native_kernels_without_kernel_module():
    assert problems(op(kernels=NATIVE), header=HEADER + " kernel_abi: 1") == [
        "declares native kernels but no kernel_module"
    ]


def test_kernel_abi_mismatch():
    header = HEADER + ' kernel_module: "my_ops._C" kernel_abi: 7'
    assert problems(op(kernels=NATIVE), header=header) == [
        f"its kernels were built for kernel ABI 7, but paddle-core {pc.__version__} speaks "
        f"kernel ABI {M.KERNEL_ABI_VERSION}"
    ]
    good = HEADER + f' kernel_module: "my_ops._C" kernel_abi: {M.KERNEL_ABI_VERSION}'
    assert problems(op(kernels=NATIVE), header=good) == []


def test_native_symbol_must_be_an_identifier():
    kernels = 'kernels { device: "cpu" dtypes: [FLOAT32] native: "t::cpu" }'
    header = HEADER + f' kernel_module: "my_ops._C" kernel_abi: {M.KERNEL_ABI_VERSION}'
    assert problems(op(kernels=kernels), header=header) == [
        "op 't': cpu kernel: native symbol 't::cpu' is not an identifier"
    ]


def test_kernel_pack_for_an_invalid_op():
    pack = 'kernel_packs { op: "Other" kernels { device: "cuda" python: "other_cuda" } }'
    assert problems(op() + pack) == [
        "kernel pack for 'Other': op is not a valid op type",
        "kernels for 'Other': cuda kernel: lists no dtypes",
    ]


# -- compatibility ----------------------------------------------------------------------------


def test_requires_core_not_satisfied():
    assert problems(header=HEADER + ' requires_core: ">=99"') == [
        f"requires paddle-core >=99, but paddle-core {pc.__version__} is installed"
    ]
    assert problems(header=HEADER + f' requires_core: "=={pc.__version__}"') == []


def test_requires_core_not_parseable():
    assert problems(header=HEADER + ' requires_core: "at least 0.1"') == [
        "requires_core 'at least 0.1' is not a version specifier"
    ]


# -- rules ------------------------------------------------------------------------------------


def test_missing_shape_rule():
    assert problems(op(rules='grad_rule: "t_grad"')) == ["op 't': has no shape_rule"]


def test_a_random_rule_needs_a_random_op():
    assert problems(op(rules=RULES + ' random_rule: "t_draws"')) == [
        "op 't': names a random_rule but is not random: true"
    ]
    assert problems(op(rules=RULES + ' random: true random_rule: "t_draws"')) == []


def test_bare_names_need_a_rules_module():
    assert problems(op(rules=RULES + ' grad_rule: "t_grad"'), header="") == [
        "op 't': cpu kernel python 't_cpu' names a function but the manifest sets no rules_module",
        "op 't': shape_rule 't_shape' names a function but the manifest sets no rules_module",
        "op 't': grad_rule 't_grad' names a function but the manifest sets no rules_module",
    ]
    qualified = op(
        kernels='kernels { device: "cpu" dtypes: [FLOAT32] python: "my_ops.rules:t_cpu" }',
        rules='shape_rule: "paddle_core.rules:unary"',
    )
    assert problems(qualified, header="") == []


@pytest.mark.parametrize("ref", ["a:b:c", "my ops:f", "mod:", "1f"])
def test_malformed_rule_reference(ref):
    assert problems(op(rules=f'shape_rule: "{ref}"')) == [
        f"op 't': shape_rule {ref!r} must be 'function' or 'module:function'"
    ]


# -- describe_range ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bounds", "text"),
    [
        ("min { value: 0 } max { value: 1 exclusive: true }", "[0, 1)"),
        ("min { value: 0 exclusive: true }", "(0, inf)"),
        ("max { value: 10 }", "(-inf, 10]"),
        ("min { value: -0.5 } max { value: 2.5 }", "[-0.5, 2.5]"),
        ("min { value: 1 exclusive: true } max { value: 2 exclusive: true }", "(1, 2)"),
        ("", ""),
    ],
)
def test_describe_range(bounds, text):
    ap = pb.AttrProto()
    text_format.Parse(f'name: "a" type: FLOAT {bounds}', ap)
    assert A.describe_range(ap) == text


# -- in-place outputs and the kernel's dtype -------------------------------------------------


def test_an_inplace_output_names_an_input_of_its_kind():
    two_in = (
        'inputs { name: "param" comment: "P." } inputs { name: "grads" comment: "G." '
        "duplicable: true }"
    )
    good = two_in + ' outputs { name: "param_out" comment: "P." inplace: "param" }'
    assert problems(op(slots=good)) == []
    assert problems(op(slots=two_in + ' outputs { name: "o" comment: "O." inplace: "w" }')) == [
        "op 't': output 'o': inplace 'w' is not one of its inputs (param, grads)"
    ]
    assert problems(op(slots=two_in + ' outputs { name: "o" comment: "O." inplace: "grads" }')) == [
        "op 't': output 'o': inplace 'grads' must be a list exactly when 'o' is (duplicable)"
    ]
    slots = 'inputs { name: "x" comment: "X." inplace: "x" } outputs { name: "o" comment: "O." }'
    assert problems(op(slots=slots)) == ["op 't': input 'x' sets inplace (only outputs may)"]


def test_the_kernel_dtype_input_is_an_input():
    assert problems(op(rules=RULES + ' kernel_dtype_input: "x"')) == []
    assert problems(op(rules=RULES + ' kernel_dtype_input: "ids"')) == [
        "op 't': kernel_dtype_input 'ids' is not one of its inputs (x)"
    ]


def test_dispensable_inputs_come_last():
    """A required input after a dispensable one would make the op's generated function
    uncallable (a required parameter after a defaulted one)."""
    last = (
        'inputs { name: "x" comment: "X." } inputs { name: "b" comment: "B." dispensable: true }'
        ' outputs { name: "out" comment: "O." }'
    )
    assert problems(op(slots=last)) == []
    middle = (
        'inputs { name: "b" comment: "B." dispensable: true } inputs { name: "x" comment: "X." }'
        ' outputs { name: "out" comment: "O." }'
    )
    assert problems(op(slots=middle)) == [
        "op 't': input 'x' is required but follows the dispensable input 'b': declare "
        "dispensable inputs last"
    ]


# -- ONNX mappings ----------------------------------------------------------------------------

ATTR_SLOTS = SLOTS + ' attrs { name: "axis" type: INT comment: "An axis." default { i: 0 } }'
ATTR_SLOTS += ' attrs { name: "keep" type: BOOL comment: "Keep." default { b: false } }'


def onnx_problems(mapping: str) -> list[str]:
    return problems(op(slots=ATTR_SLOTS, rules=f"{RULES} onnx {{ {mapping} }}"))


def test_a_valid_onnx_mapping():
    mapping = (
        'op_type: "Foo" since_version: 13 attrs { name: "axis" } '
        'attrs { name: "keepdims" attr: "keep" default { b: true } } '
        'attrs { name: "mode" only: "\'a\'" only: "\'b\'" } '
        'attrs { name: "kernel_shape" ignore: true } attrs { name: "pads" rule: "pads" } '
        'inputs { index: 1 attr: "axis" } fixed { attr: "keep" value { b: true } } '
        'outputs: "out" export_ignores: "axis"'
    )
    assert onnx_problems(mapping) == []
    assert onnx_problems(f'{mapping} import_rule: "foo" export_rule: "foo_out"') == []
    manifest = M.parse(
        HEADER + "\n" + op(slots=ATTR_SLOTS, rules=f"{RULES} onnx {{ {mapping} }}"),
        plugin="mine",
        source="mine.pbtxt",
    )
    M.check(manifest, core_version=pc.__version__)
    M.qualify(manifest)  # bare rule names are spelled in full, like the op's other rules
    assert manifest.ops[0].onnx[0].attrs[4].rule == "my_ops.rules:pads"
    assert manifest.ops[0].onnx[0].attrs[1].default.type == pb.BOOL


@pytest.mark.parametrize(
    ("mapping", "problem"),
    [
        ('op_type: "not an op" since_version: 1', "op_type 'not an op' is not an ONNX operator"),
        ('op_type: "Foo"', "since_version must be 1 or more"),
        ('op_type: "Foo" since_version: 13 until_version: 11', "until_version 11 is before"),
        (
            'op_type: "Foo" since_version: 1 attrs { name: "axes" }',
            "'axes' is not an attr of the op",
        ),
        (
            'op_type: "Foo" since_version: 1 attrs { name: "axis" default { f: 1.5 } }',
            "default must set only `i` (the attr is INT)",
        ),
        (
            'op_type: "Foo" since_version: 1 attrs { name: "mode" only: "NOTSET" }',
            "only 'NOTSET' is not a Python literal",
        ),
        ('op_type: "Foo" since_version: 1 inputs { index: 1 }', "exactly one of input, attr"),
        (
            'op_type: "Foo" since_version: 1 inputs { index: 1 input: "y" }',
            "'y' is not an input of the op",
        ),
        (
            'op_type: "Foo" since_version: 1 inputs { index: 1 attr: "size" }',
            "'size' is not an attr of the op",
        ),
        (
            'op_type: "Foo" since_version: 1 fixed { attr: "nope" value { i: 1 } }',
            "fixed attr 'nope': sets no attr of the op",
        ),
        ('op_type: "Foo" since_version: 1 outputs: "y"', "output 'y' is not an output of the op"),
        (
            'op_type: "Foo" since_version: 1 import_rule: "bad name!"',
            "import_rule 'bad name!' must be 'function' or 'module:function'",
        ),
        (
            'op_type: "Foo" since_version: 1 export_only: true',
            "export_only but names no export_rule",
        ),
        (
            'op_type: "Foo" since_version: 1 export_ignores: "size"',
            "export_ignores 'size' is not an attr of the op",
        ),
        (
            'op_type: "Foo" since_version: 1 attrs { name: "pads" rule: "p" export_rule: "a b" }',
            "export_rule 'a b' must be 'function' or 'module:function'",
        ),
    ],
)
def test_onnx_mapping_problems(mapping, problem):
    found = onnx_problems(mapping)
    assert any(problem in p for p in found), found
    assert all(p.startswith("op 't': onnx mapping ") for p in found)
