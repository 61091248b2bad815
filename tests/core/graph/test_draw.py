"""Programs drawn: DOT text always, SVG and PNG laid out by the Graphviz that the pygraphviz
wheel bundles. One node per op (its type, its non-default attrs), variables as nodes with
dtype and shape, parameters styled apart, sub-blocks as clusters, and the same bytes for the
same program. (`paddle-ops draw` is tested with the other commands, in test_cli.py.)"""

from __future__ import annotations

import importlib.util
import re
import sys
import xml.etree.ElementTree as ET

import pytest
from conftest import ROOT

import paddle_core as pc
from paddle_core import ops

SVG = "{http://www.w3.org/2000/svg}"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def digits_cnn() -> pc.Program:
    """The evaluation program of the digits CNN (examples/train_digits.py)."""
    pytest.importorskip("sklearn")  # the example loads scikit-learn's digits
    spec = importlib.util.spec_from_file_location(
        "train_digits", ROOT / "examples" / "train_digits.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    _, _, test, *_ = module.build("cnn")
    return test


def resnet_like(stages: int = 4) -> pc.Program:
    """ResNet-18's shape at CIFAR size: a 7x7 stem, two basic blocks per stage (3x3 convs,
    batch norm, a shortcut projected by a 1x1 conv where the shape changes), global pooling,
    a classifier. The evaluation program: about 70 ops, 100 parameters."""
    L = pc.layers

    def conv_bn(x, filters, size, stride=1, act="relu"):
        x = L.conv2d(x, filters, size, stride=stride, padding=size // 2, bias_attr=False)
        return L.batch_norm(x, act=act)

    def basic(x, filters, stride):
        y = conv_bn(conv_bn(x, filters, 3, stride), filters, 3, act=None)
        changes = stride != 1 or x.shape[1] != filters
        return L.relu(y + (conv_bn(x, filters, 1, stride, act=None) if changes else x))

    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = L.data("image", [3, 32, 32])
        x = L.pool2d(conv_bn(x, 16, 7, 2), 3, pool_stride=2, pool_padding=1)
        for filters, stride in ((16, 1), (32, 2), (64, 2), (128, 2))[:stages]:
            x = basic(basic(x, filters, stride), filters, 1)
        L.fc(L.pool2d(x, pool_type="avg", global_pooling=True), 10)
    return main.clone(for_test=True)


def loop_and_cond() -> pc.Program:
    """A while_loop (block 1) and a cond whose false branch has no ops (blocks 2 and 3)."""
    main = pc.Program()
    with pc.program_guard(main):
        x = pc.data("x", [3], "float32")
        n = pc.data("n", [1], "int64")
        i = ops.fill_constant(shape=[1], dtype="int64", value=0)
        s = ops.fill_constant(shape=[3], dtype="float32", value=0.0)
        one = ops.fill_constant(shape=[1], dtype="int64", value=1)
        _, s_out = pc.layers.while_loop(
            lambda i, s: ops.less(i, n), lambda i, s: (ops.add(i, one), ops.add(s, x)), [i, s]
        )
        big = ops.greater(ops.sum(s_out), ops.fill_constant(shape=[], dtype="float32", value=9.0))
        pc.layers.cond(big, lambda: ops.scale(s_out, scale=0.5), lambda: s_out)
    return main


class Drawing:
    """An SVG drawing read back: its nodes (title, classes, texts, fill, box) and edges."""

    def __init__(self, svg: bytes) -> None:
        self.root = ET.fromstring(svg)
        self.nodes, self.edges, self.clusters = {}, [], {}
        for g in self.root.iter(f"{SVG}g"):
            classes = g.get("class", "").split()
            title = g.findtext(f"{SVG}title")
            if "node" in classes:
                shapes = [e for e in g.iter() if e.tag in (f"{SVG}path", f"{SVG}polygon")]
                self.nodes[title] = {
                    "classes": classes[1:],
                    "texts": [t.text for t in g.iter(f"{SVG}text")],
                    "fill": shapes[0].get("fill") if shapes else None,
                    "box": _box(g),
                }
            elif "edge" in classes:
                self.edges.append(title)
            elif "cluster" in classes:
                self.clusters[title] = {
                    "texts": [t.text for t in g.iter(f"{SVG}text")],
                    "box": _box(g),
                }

    def of_class(self, name: str) -> dict[str, dict]:
        return {k: v for k, v in self.nodes.items() if name in v["classes"]}


def _box(g: ET.Element) -> tuple[float, float, float, float]:
    """The bounding box of a group's shapes (their coordinates, whatever the element)."""
    numbers = []
    for e in g.iter():
        for attr in ("points", "d"):
            if e.get(attr):
                numbers += [float(v) for v in re.findall(r"-?\d+(?:\.\d+)?", e.get(attr))]
        for x, y in (("cx", "cy"), ("x", "y")):  # an ellipse's centre, a text's anchor
            if e.get(x):
                numbers += [float(e.get(x)), float(e.get(y))]
    xs, ys = numbers[0::2], numbers[1::2]
    return min(xs), min(ys), max(xs), max(ys)


def _inside(inner: tuple, outer: tuple) -> bool:
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and inner[2] <= outer[2]
        and inner[3] <= outer[3]
    )


def test_the_digits_cnn_drawn_one_node_per_op_and_parameters_apart() -> None:
    program = digits_cnn()
    block = program.global_block()
    drawing = Drawing(pc.render_program(program, "svg"))
    op_nodes = drawing.of_class("op")
    assert len(op_nodes) == len(block.ops)
    for i, op in enumerate(block.ops):  # each box names its op first
        assert op_nodes[f"op:0:{i}"]["texts"][0] == op.type
    params = drawing.of_class("param")
    names = {p.name for p in program.all_parameters()}
    assert {node["texts"][0] for node in params.values()} == names
    plain = drawing.of_class("var")
    assert plain and {n["fill"] for n in params.values()}.isdisjoint(
        n["fill"] for n in plain.values()
    )
    assert [n["texts"] for n in drawing.of_class("data").values()] == [
        ["image", "float32 [?, 1, 8, 8]"],
        ["label", "int64 [?, 1]"],
    ]
    # One edge per variable an op reads, one per variable it writes (written again: a new node).
    expected = sum(len(set(op.input_names)) + len(op.output_names) for op in block.ops)
    assert len(drawing.edges) == expected
    conv = op_nodes["op:0:0"]["texts"]
    assert conv == ["conv2d", "paddings=[1, 1, 1, 1]"]  # strides, dilations, groups: defaults


def test_a_resnet_like_program_reads_as_its_layers() -> None:
    program = resnet_like()
    drawing = Drawing(pc.render_program(program, "svg"))
    types = [op.type for op in program.global_block().ops]
    assert len(drawing.of_class("op")) == len(types) > 60
    assert len(drawing.of_class("param")) >= len(program.all_parameters()) == 102
    boxes = [node["texts"] for node in drawing.of_class("op").values()]
    assert ["conv2d", "strides=[2, 2]", "paddings=[3, 3, 3, 3]"] in boxes  # the stem
    # Each residual add joins two paths: two edges come in.
    adds = [f"op:0:{i}" for i, t in enumerate(types) if t == "add"][:-1]  # (the last: fc's bias)
    assert len(adds) == 8
    for add in adds:
        assert (
            sum(edge.endswith("&gt;" + add) or edge.endswith("->" + add) for edge in drawing.edges)
            == 2
        )


def test_the_same_program_gives_the_same_bytes(tmp_path) -> None:
    program = loop_and_cond()
    svg, dot = pc.render_program(program, "svg"), pc.render_program(program, "dot")
    assert pc.render_program(program, "svg") == svg and pc.render_program(program, "dot") == dot
    for name in ("saved.pb", "saved.pbtxt", "saved.json"):
        pc.save_program(program, tmp_path / name)
        loaded = pc.load_program(tmp_path / name)
        assert pc.render_program(loaded, "dot") == dot, name
        assert pc.render_program(loaded, "svg") == svg, name
    assert program._repr_svg_() == svg.decode("utf-8")  # what a notebook shows
    # Names come from blocks, op positions and variable names: nothing per process or object.
    assert not re.search(rb"0x[0-9a-f]{6,}|\d{4}-\d\d-\d\d", dot)


def test_sub_blocks_are_clusters_framed_with_the_op_holding_them() -> None:
    program = loop_and_cond()
    drawing = Drawing(pc.render_program(program, "svg"))
    clusters = drawing.clusters
    assert clusters["cluster_b1"]["texts"] == ["block 1 (while_block.sub_block)"]
    assert clusters["cluster_b2"]["texts"] == ["block 2 (cond_block.true_block)"]
    assert clusters["cluster_b3"]["texts"][0] == "block 3 (cond_block.false_block)"
    assert drawing.nodes["empty:3"]["texts"] == ["(no ops)"]  # an empty block still shows
    ops_of = {b.idx: len(b.ops) for b in program.blocks}
    assert ops_of == {0: 12, 1: 3, 2: 1, 3: 0}
    for idx in (1, 2):
        for i in range(ops_of[idx]):
            node = drawing.nodes[f"op:{idx}:{i}"]
            assert _inside(node["box"], clusters[f"cluster_b{idx}"]["box"])
            assert not _inside(node["box"], clusters["cluster_b3"]["box"])
    types = [op.type for op in program.global_block().ops]
    while_op, cond_op = types.index("while_block"), types.index("cond_block")
    frame = clusters[f"cluster_op:0:{while_op}"]["box"]
    assert _inside(drawing.nodes[f"op:0:{while_op}"]["box"], frame)
    assert _inside(clusters["cluster_b1"]["box"], frame)
    assert _inside(clusters["cluster_b3"]["box"], clusters[f"cluster_op:0:{cond_op}"]["box"])
    # The body reads the loop's inputs from outside its cluster: edges cross into it.
    assert any("-&gt;op:1:" in e or "->op:1:" in e for e in drawing.edges)


def test_an_rnn_step_block_is_a_cluster() -> None:
    main, startup = pc.Program(), pc.Program()
    with pc.program_guard(main, startup):
        x = pc.data("x", [2, 5, 3], "float32")
        h0 = pc.layers.fill_constant_batch_size_like(x, [2, 4], "float32", 0.0)

        def cell(x_t, h):
            h = pc.layers.tanh(ops.add(pc.layers.linear(x_t, 4), pc.layers.linear(h, 4)))
            return h, h

        pc.layers.rnn(cell, x, h0)
        for param in main.all_parameters():  # read after the step block too: the same node
            ops.scale(param, scale=2.0)
    dot = pc.render_program(main, "dot").decode()
    (holder,) = [op for op in main.global_block().ops if op.type == "recurrent_block"]
    attr = next(a for a, v in holder.attrs.items() if v == 1 and a.endswith("block"))
    assert f'label="block 1 (recurrent_block.{attr})"' in dot
    drawing = Drawing(pc.render_program(main, "svg"))
    step_ops = [t for t in drawing.nodes if t.startswith("op:1:")]
    assert len(step_ops) == len(main.block(1).ops) > 0
    params = sorted(n["texts"][0] for n in drawing.of_class("param").values())
    assert params == sorted(p.name for p in main.all_parameters())  # made in the step, drawn once


def test_dot_text_needs_no_renderer(monkeypatch) -> None:
    program = loop_and_cond()
    monkeypatch.setitem(sys.modules, "pygraphviz", None)  # as if it could not be imported
    dot = pc.render_program(program, "dot").decode()
    assert dot.startswith('digraph "program" {') and dot.endswith("}\n")
    assert 'subgraph "cluster_b1"' in dot and '"op:0:0" [label="fill_constant\\n' in dot
    with pytest.raises(pc.PaddleCoreError, match=r"needs pygraphviz.*`pip install pygraphviz`"):
        pc.render_program(program, "svg")


def test_png_and_the_formats_by_suffix(tmp_path) -> None:
    program = loop_and_cond()
    png = pc.render_program(program, "png")
    assert png.startswith(PNG_SIGNATURE) and len(png) > 1000
    for suffix, start in (
        (".svg", b"<?xml"),
        (".png", PNG_SIGNATURE),
        (".dot", b"digraph"),
        (".gv", b"digraph"),
    ):
        pc.draw_program(program, tmp_path / f"drawn{suffix}")
        assert (tmp_path / f"drawn{suffix}").read_bytes().startswith(start), suffix
    assert (tmp_path / "drawn.dot").read_bytes() == (tmp_path / "drawn.gv").read_bytes()


@pytest.mark.parametrize("name", ["drawn.jpg", "drawn", "drawn.svg.txt"])
def test_a_suffix_naming_no_format_is_refused(tmp_path, name) -> None:
    with pytest.raises(
        pc.ProgramError,
        match=r"cannot draw the program to .*names no format; use one of \.svg, \.png, \.dot, \.gv",
    ):
        pc.draw_program(loop_and_cond(), tmp_path / name)
    assert not (tmp_path / name).exists()
    with pytest.raises(pc.ProgramError, match='formats are "svg", "png", "dot"'):
        pc.render_program(loop_and_cond(), "jpeg")
    with pytest.raises(pc.ProgramError, match="drawing expects a Program, got Block"):
        pc.render_program(loop_and_cond().global_block(), "dot")


def test_labels_show_non_default_attrs_briefly() -> None:
    main = pc.Program()
    with pc.program_guard(main):
        ops.fill_constant(shape=[1, 2, 3, 4, 5, 6], dtype="float32", value=0.1 + 0.2)
        ops.scale(pc.data("x" * 40, [2], "float32"), scale=1.0, bias=0.5)
    dot = pc.render_program(main, "dot").decode()
    fill, scale = [
        line for line in dot.splitlines() if line.strip().startswith('"op:') and "[" in line
    ]
    # A long list and a long float elided; the whole is the tooltip.
    assert 'label="fill_constant\\nshape=[1, 2, 3, 4, … +2]\\lvalue=0.3\\l' in fill
    assert 'tooltip="fill_constant\\nshape=[1, 2, 3, 4, 5, 6]\\nvalue=0.30000000000000004"' in fill
    assert 'label="scale\\nbias=0.5\\l"' in scale and "tooltip" not in scale  # scale=1.0: default
    (var,) = [
        line for line in dot.splitlines() if line.strip().startswith('"var:0:0:xxx') and "[" in line
    ]
    assert 'label="xxxxxxxxxxxxxxxxxxx…xxxxxxxxxxxx\\nfloat32 [2]"' in var
    assert f'tooltip="{"x" * 40}"' in var


def test_an_op_no_plugin_provides_is_drawn_with_all_its_attrs(tmp_path) -> None:
    main = pc.Program()
    with pc.program_guard(main):
        ops.scale(pc.data("x", [2], "float32"), scale=3.0)
    desc = main.to_desc()
    desc.blocks[0].ops[0].type = "nowhere_scale"
    (tmp_path / "model.pb").write_bytes(desc.SerializeToString())
    with pytest.raises(pc.OpNotFoundError, match="nowhere_scale"):
        pc.load_program(tmp_path / "model.pb")
    program = pc.load_program(tmp_path / "model.pb", check_ops=False)
    drawing = Drawing(pc.render_program(program, "svg"))
    assert drawing.nodes["op:0:0"]["texts"] == [
        "nowhere_scale",
        "scale=3",
        "bias=0",
        "bias_after_scale=True",
    ]
