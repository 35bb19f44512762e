"""Writes moved_ints.onnx: integer and bool values rearranged between
kernels, each copy moving whole elements of their dtype. A comparison's
bool mask transposed (and reshaped, transposed, reshaped) as Where
conditions; i64 token ids sliced and transposed before the embedding
gathers that read them; the transposed ids as an i64 model output.
Usage: make_moved_ints.py OUTDIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

x = h.make_tensor_value_info('x', T.FLOAT, [2, 4])
ids = h.make_tensor_value_info('ids', T.INT64, [2, 6])
inits = [nh.from_array(np.full([2, 4], 0.25, np.float32), 'z'),
         nh.from_array(np.full([4, 2], 0.5, np.float32), 'hf'),
         nh.from_array(np.array([2, 4], np.int64), 'shape'),
         nh.from_array(np.array([4, 2], np.int64), 'shape2'),
         nh.from_array(np.array([1], np.int64), 'starts'),
         nh.from_array(np.array([5], np.int64), 'ends'),
         nh.from_array(np.array([1], np.int64), 'axes'),
         nh.from_array(np.linspace(-1, 1, 30).astype(np.float32).reshape(10, 3), 'table')]
nodes = [h.make_node('Less', ['x', 'z'], ['m1'], name='less_1'),
         h.make_node('Transpose', ['m1'], ['c1'], perm=[1, 0], name='transpose_1'),
         h.make_node('Transpose', ['x'], ['xt'], perm=[1, 0], name='transpose_2'),
         h.make_node('Where', ['c1', 'xt', 'hf'], ['a'], name='where_1'),
         h.make_node('Relu', ['a'], ['b'], name='relu_1'),
         h.make_node('Less', ['b', 'hf'], ['m2'], name='less_2'),
         h.make_node('Reshape', ['m2', 'shape'], ['m3'], name='reshape_1'),
         h.make_node('Transpose', ['m3'], ['m4'], perm=[1, 0], name='transpose_3'),
         h.make_node('Reshape', ['m4', 'shape2'], ['c2'], name='reshape_2'),
         h.make_node('Where', ['c2', 'b', 'hf'], ['y'], name='where_2'),
         h.make_node('Slice', ['ids', 'starts', 'ends', 'axes'], ['mid'], name='slice_ids'),
         h.make_node('Gather', ['table', 'mid'], ['e1'], axis=0, name='embed_1'),
         h.make_node('Transpose', ['ids'], ['idt'], perm=[1, 0], name='transpose_ids'),
         h.make_node('Gather', ['table', 'idt'], ['e2'], axis=0, name='embed_2'),
         h.make_node('Relu', ['e1'], ['y2'], name='relu_2'),
         h.make_node('Relu', ['e2'], ['y3'], name='relu_3')]
outs = [h.make_tensor_value_info('y', T.FLOAT, [4, 2]), h.make_tensor_value_info('y2', T.FLOAT, [2, 4, 3]),
        h.make_tensor_value_info('y3', T.FLOAT, [6, 2, 3]), h.make_tensor_value_info('idt', T.INT64, [6, 2])]
m = h.make_model(h.make_graph(nodes, 'moved_ints', [x, ids], outs, inits), opset_imports=[h.make_opsetid('', 13)])
m.ir_version = 7
onnx.checker.check_model(m)
onnx.save(m, os.path.join(sys.argv[1], 'moved_ints.onnx'))
