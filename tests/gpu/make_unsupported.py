"""Writes tests/gpu/gpu_unsupported.onnx: two Where groups (where_1, where_2)
whose bool condition is a comparison's result transposed (x < z, then a
Transpose: bool elements rearranged, which the GPU model path does not copy;
it reads integer and bool values only where they are, whole), around
groups it compiles (the comparisons, a relu); a model compile must fail
listing exactly those two, each at its node."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [2, 4])
y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [4, 2])
z = numpy_helper.from_array(np.full([2, 4], 0.25, np.float32), 'z')
h = numpy_helper.from_array(np.full([4, 2], 0.5, np.float32), 'h')
nodes = [helper.make_node('Less', ['x', 'z'], ['m1'], name='less_1'),
         helper.make_node('Transpose', ['m1'], ['c1'], perm=[1, 0], name='transpose_1'),
         helper.make_node('Transpose', ['x'], ['xt'], perm=[1, 0], name='transpose_2'),
         helper.make_node('Where', ['c1', 'xt', 'h'], ['a'], name='where_1'),
         helper.make_node('Relu', ['a'], ['b'], name='relu_1'),
         helper.make_node('Less', ['b', 'h'], ['m2'], name='less_2'),
         helper.make_node('Reshape', ['m2', 'shape'], ['m3'], name='reshape_1'),
         helper.make_node('Transpose', ['m3'], ['m4'], perm=[1, 0], name='transpose_3'),
         helper.make_node('Reshape', ['m4', 'shape2'], ['c2'], name='reshape_2'),
         helper.make_node('Where', ['c2', 'b', 'h'], ['y'], name='where_2')]
shape = numpy_helper.from_array(np.array([2, 4], np.int64), 'shape')
shape2 = numpy_helper.from_array(np.array([4, 2], np.int64), 'shape2')
m = helper.make_model(helper.make_graph(nodes, 'unsupported_gpu', [x], [y], [z, h, shape, shape2]),
                      opset_imports=[helper.make_opsetid('', 13)])
m.ir_version = 7
onnx.save(m, 'gpu_unsupported.onnx')
