"""Bad input for control flow (If, Loop, Scan) and the operators whose
output size depends on the data (NonZero, Compress, Unique,
NonMaxSuppression): subgraphs of the wrong arity, a body reading its own
node's output, nesting and size bombs, trip counts and conditions that
never end, each refused with a located error (test_bad_ops.py runs them).
"""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def vi(name, t, shape):
    return helper.make_tensor_value_info(name, t, shape)


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def graph(nodes, ins, outs, name="g"):
    return helper.make_graph(nodes, name, ins, outs)


def loop_body(extra_nodes=(), carried_out="v_out", n_carried=1, scan=None):
    """iter, cond, v -> cond, v + 1 [, scan]."""
    nodes = [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
             helper.make_node("Add", ["v_in", "one"], ["v_out"])] + list(extra_nodes)
    ins = [vi("i", I64, []), vi("cond_in", B, [])] + [vi("v_in", F, [2])][:n_carried]
    outs = [vi("cond_out", B, []), vi(carried_out, F, None)] + ([vi(scan, F, None)] if scan else [])
    return graph(nodes, ins, outs, "body")


def nested_loops(depth):
    body = loop_body()
    for _ in range(depth):
        inner = helper.make_node("Loop", ["M", "", "v_in"], ["v_out"], name="bad", body=body)
        body = graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]), inner],
                     [vi("i", I64, []), vi("cond_in", B, []), vi("v_in", F, [2])],
                     [vi("cond_out", B, []), vi("v_out", F, None)], "body")
    return body


def map_type():
    """map(int64, tensor(float)) (onnx 1.12's helper has no maker for it)."""
    t = onnx.TypeProto()
    t.map_type.key_type = TensorProto.INT64
    t.map_type.value_type.CopyFrom(helper.make_tensor_type_proto(F, None))
    return t


def make_case(cases):
    """case(name, op, inputs, text, ...) for test_bad_ops.py's table: the
    node 'bad' reads `inputs` (graph inputs (name, type, shape),
    initializers, or "" for an omitted one); `outer` are further graph
    inputs and `inits` initializers that only its subgraphs read."""
    def case(name, op, inputs, text, attrs=None, inits=(), outer=(), opset=16, n_out=1, feed=None,
             pre=(), post=()):
        names = [i.name if isinstance(i, onnx.TensorProto) else (i[0] if i else "") for i in inputs]
        names = [p.output[0] for p in pre] + names  # the sequence first
        node = helper.make_node(op, names, ["y%d" % k for k in range(n_out)], name="bad", **(attrs or {}))
        g_in = [vi(*i) for i in list(inputs) + list(outer) if i and not isinstance(i, onnx.TensorProto)]
        g_init = [i for i in list(inputs) + list(inits) if isinstance(i, onnx.TensorProto)]
        outs = [p.output[0] for p in post] or ["y%d" % k for k in range(n_out)]
        g = helper.make_graph(list(pre) + [node] + list(post), name, g_in,
                              [helper.make_tensor_value_info(o, 0, None) for o in outs],
                              initializer=g_init)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        cases.append((name, op, m, text, feed))
    return case


def add_cases(cases):
    case = make_case(cases)
    one = const("one", np.float32(1))
    M = lambda m: const("M", np.int64(m))  # noqa: E731
    then_g = graph([helper.make_node("Identity", ["x"], ["t"])], [], [vi("t", F, None)], "then")
    two_out = graph([helper.make_node("Identity", ["x"], ["a"]), helper.make_node("Identity", ["x"], ["b"])],
                    [], [vi("a", F, None), vi("b", F, None)], "else")
    with_in = graph([helper.make_node("Identity", ["z"], ["e"])], [vi("z", F, [2])], [vi("e", F, None)], "else")
    x = [("x", F, [2])]
    case("if_branch_outputs", "If", [("c", B, [])], "its then branch makes 1 and its else branch 2",
         attrs={"then_branch": then_g, "else_branch": two_out}, outer=x)
    case("if_branch_inputs", "If", [("c", B, [])], "takes 1 inputs; a branch of If takes 0",
         attrs={"then_branch": then_g, "else_branch": with_in}, outer=x)
    case("if_cond_float", "If", [("c", F, [])], "cond must be one bool element",
         attrs={"then_branch": then_g, "else_branch": then_g}, outer=x)
    case("if_no_branch", "If", [("c", B, [])], "needs the graph attribute 'else_branch'",
         attrs={"then_branch": then_g}, outer=x)
    v0 = ("v0", F, [2])
    case("loop_body_arity", "Loop", [M(3), ("c", B, []), v0, ("v1", F, [2])],
         "with this node's loop-carried values its body", attrs={"body": loop_body()}, inits=[one],
         n_out=2)
    case("loop_body_outputs", "Loop", [M(3), ("c", B, []), v0], "but its body makes 3 outputs",
         attrs={"body": loop_body([helper.make_node("Identity", ["v_in"], ["s"])], scan="s")}, inits=[one],
         n_out=3)
    bad_dtype = loop_body([helper.make_node("Cast", ["v_out"], ["v_i"], to=I64)], carried_out="v_i")
    case("loop_carried_dtype", "Loop", [M(3), ("c", B, []), v0], "loop-carried value 0 is f32, but the body makes i64",
         attrs={"body": bad_dtype}, inits=[one])
    case("loop_trip_bomb", "Loop", [M(10 ** 12), "", v0],
         "trip count 1000000000000 is more than the limit of 100000 iterations",
         attrs={"body": loop_body()}, inits=[one])
    case("loop_cond_bomb", "Loop", ["", ("c", B, []), v0],
         "ran 100000 iterations and its condition is still true",
         attrs={"body": loop_body()}, inits=[one],
         feed=[np.array(True), np.zeros(2, np.float32)])
    case("loop_nesting_bomb", "Loop", [M(1), "", v0], "subgraphs nest deeper than 8 levels",
         attrs={"body": nested_loops(12)}, inits=[one])
    wide = loop_body([helper.make_node("Identity", ["v_in"], ["w%d" % k]) for k in range(100001)])
    case("loop_size_bomb", "Loop", [M(1), "", v0], "the model's subgraphs would hold more than 100000 nodes",
         attrs={"body": wide}, inits=[one])
    own = loop_body([helper.make_node("Add", ["v_in", "y0"], ["z"])])
    case("loop_reads_own_output", "Loop", [M(2), "", v0], "reads 'y0', an output of its own node",
         attrs={"body": own}, inits=[one])
    grow = loop_body([helper.make_node("Concat", ["v_in", "v_in"], ["g"], axis=0),
                      helper.make_node("Identity", ["g"], ["s"])], carried_out="g", scan="s")
    case("loop_scan_shape_changes", "Loop", [M(3), "", v0], "scan output 0 is f32[8] in iteration 1 but f32[4]",
         attrs={"body": grow}, inits=[one], n_out=2,
         feed=[np.zeros(2, np.float32)])
    sbody = graph([helper.make_node("Add", ["s_in", "a"], ["s_out"]),
                   helper.make_node("Identity", ["b"], ["o"])],
                  [vi("s_in", F, [2]), vi("a", F, [2]), vi("b", F, [2])],
                  [vi("s_out", F, [2]), vi("o", F, [2])], "body")
    case("scan_num_inputs", "Scan", [("s", F, [2]), ("a", F, [3, 2])],
         "num_scan_inputs is 3; it must be 1 to the node's 2 inputs",
         attrs={"body": sbody, "num_scan_inputs": 3}, n_out=2)
    case("scan_body_arity", "Scan", [("s", F, [2]), ("a", F, [3, 2])], "takes 3 inputs; the node takes 2",
         attrs={"body": sbody, "num_scan_inputs": 1}, n_out=2)
    case("scan_lengths", "Scan", [("s", F, [2]), ("a", F, [3, 2]), ("b", F, [4, 2])],
         "scanned inputs have 3 and 4 slices", attrs={"body": sbody, "num_scan_inputs": 2}, n_out=2,
         feed=[np.zeros(2, np.float32), np.zeros((3, 2), np.float32), np.zeros((4, 2), np.float32)])
    case("nonzero_arity", "NonZero", [("x", F, [3]), ("y", F, [3])], "has 2 inputs; NonZero takes 1")
    case("compress_cond_float", "Compress", [("x", F, [4]), ("c", F, [4])], "condition must be bool")
    case("compress_cond_2d", "Compress", [("x", F, [4]), ("c", B, [2, 2])], "condition must be 1-D")
    case("compress_cond_long", "Compress", [("x", F, [2, 3]), ("c", B, [5])],
         "condition has 5 entries, more than the 3", attrs={"axis": 1})
    case("compress_axis", "Compress", [("x", F, [2, 3]), ("c", B, [2])], "axis 2 is out of range",
         attrs={"axis": 2})
    case("unique_axis", "Unique", [("x", F, [2, 3])], "axis 3 is out of range", attrs={"axis": 3}, opset=11)
    nb = [("boxes", F, [1, 3, 4]), ("scores", F, [1, 2, 3])]
    case("nms_boxes_rank", "NonMaxSuppression", [("boxes", F, [3, 4]), ("scores", F, [1, 2, 3])],
         "boxes must be [batches, boxes, 4]")
    case("nms_center", "NonMaxSuppression", nb, "center_point_box is 2", attrs={"center_point_box": 2})
    case("nms_scores_shape", "NonMaxSuppression", [("boxes", F, [1, 3, 4]), ("scores", F, [1, 2, 5])],
         "scores are [1, 2, 5] for boxes [1, 3, 4]", feed=[np.zeros((1, 3, 4), np.float32), np.zeros((1, 2, 5), np.float32)])
    case("nms_iou", "NonMaxSuppression", nb + [const("m", np.int64(2)), const("iou", np.float32(1.5))],
         "iou_threshold 1.5 is not within [0, 1]",
         feed=[np.zeros((1, 3, 4), np.float32), np.zeros((1, 2, 3), np.float32)])
    many = 65537
    case("nms_box_bomb", "NonMaxSuppression", [("boxes", F, [1, many, 4]), ("scores", F, [1, 1, many])],
         "65537 boxes per batch, more than the limit of 65536",
         feed=[np.zeros((1, many, 4), np.float32), np.zeros((1, 1, many), np.float32)])


def add_sequence_cases(cases):
    """Sequence and optional operators: each node 'bad' reads a sequence a
    node before it makes (`pre`, appended to its inputs) and, where it
    makes one, a node after it stacks it into a tensor output (`post`)."""
    case = make_case(cases)
    x = ("x", F, [2, 3])
    mk = lambda *names: helper.make_node("SequenceConstruct", list(names), ["s"])  # noqa: E731
    stack = [helper.make_node("ConcatFromSequence", ["y0"], ["out"], axis=0)]
    z = np.zeros((2, 3), np.float32)
    case("seq_at_range", "SequenceAt", [const("p", np.int64(5))], "position 5 is outside a sequence of 1",
         outer=[x], pre=[mk("x")], feed=[z])
    case("seq_insert_dtype", "SequenceInsert", [("i", I64, [2])], "inserts a i64 tensor into a sequence of f32",
         outer=[x], pre=[mk("x")], post=stack)
    case("seq_construct_dtypes", "SequenceConstruct", [x, ("i", I64, [2])], "takes tensors of one dtype",
         post=stack)
    case("seq_erase_range", "SequenceErase", [const("p", np.int64(-3))], "position -3 is outside a sequence of 1",
         outer=[x], pre=[mk("x")], post=stack, feed=[z])
    case("seq_length_tensor", "SequenceLength", [x], "input 'x' is not a sequence")
    case("seq_empty_dtype", "SequenceEmpty", [], "dtype 8 is not supported", attrs={"dtype": 8}, post=stack)
    case("split_to_seq_sum", "SplitToSequence", [x, const("sp", np.array([1, 1], np.int64))],
         "splits sum to 2, not the axis' 3", attrs={"axis": 1}, post=stack, feed=[z])
    case("split_to_seq_bomb", "SplitToSequence", [("big", F, [70000])], "more than 65536 pieces", post=stack,
         feed=[np.zeros(70000, np.float32)])
    case("concat_seq_shapes", "ConcatFromSequence", [], outer=[("a", F, [2, 3]), ("b", F, [3, 3])], text=(
         "element 1's shape does not match element 0's"), attrs={"axis": 1},
         pre=[helper.make_node("SequenceConstruct", ["a", "b"], ["s"])],
         feed=[z, np.zeros((3, 3), np.float32)])
    case("optional_no_type", "Optional", [], "has no input and no 'type' attribute",
         post=[helper.make_node("OptionalGetElement", ["y0"], ["out"])])
    case("optional_type_map", "Optional", [], "attribute 'type' is not a tensor or a sequence",
         attrs={"type": map_type()},
         post=[helper.make_node("OptionalGetElement", ["y0"], ["out"])])
    case("optional_type_nested", "Optional", [], "attribute 'type' is not a tensor or a sequence",
         attrs={"type": helper.make_sequence_type_proto(
             helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None)))},
         post=[helper.make_node("OptionalGetElement", ["y0"], ["out"])])
    case("optional_of_optional", "Optional", [], "an optional of an optional is not supported",
         outer=[x], pre=[helper.make_node("Optional", ["x"], ["s"])],
         post=[helper.make_node("OptionalGetElement", ["y0"], ["out"])])
    seq_t = helper.make_sequence_type_proto(helper.make_tensor_type_proto(F, None))
    case("optional_seq_insert", "SequenceInsert", [x], "it is an optional sequence",
         pre=[helper.make_node("Optional", [], ["os"], type=seq_t)], post=stack)
    case("optional_seq_get_none", "OptionalGetElement", [], "the optional is empty",
         pre=[helper.make_node("Optional", [], ["os"], type=seq_t)], post=stack, feed=[])
    case("optional_has_arity", "OptionalHasElement", [x, ("x2", F, [2])],
         "has 2 inputs; OptionalHasElement takes 0 to 1")
    ident = graph([helper.make_node("Identity", ["e"], ["f"])], [vi("e", F, None), vi("e2", F, None)],
                  [vi("f", F, None)], "map")
    case("seqmap_arity", "SequenceMap", [], "takes 2 inputs; the node takes 1", attrs={"body": ident},
         outer=[x], pre=[mk("x")], post=stack, opset=17)
    one_in = graph([helper.make_node("Identity", ["e"], ["f"])], [vi("e", F, None)], [vi("f", F, None)], "map")
    case("seqmap_tensor", "SequenceMap", [x], "input 'x' is not a sequence", attrs={"body": one_in},
         post=stack, opset=17)
    case("seqmap_lengths", "SequenceMap", [], "input 1 has 2 elements, input 0 1: they must agree",
         attrs={"body": graph([helper.make_node("Add", ["e", "e2"], ["f"])], [vi("e", F, None), vi("e2", F, None)],
                              [vi("f", F, None)], "map")},
         outer=[x], pre=[mk("x"), helper.make_node("SequenceConstruct", ["x", "x"], ["s2"])], post=stack,
         feed=[z], opset=17)
