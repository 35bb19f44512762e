"""Writes tests/gpu/gpu_unsupported.onnx: x -> Where(c1) -> Relu -> Where(c2)
-> y with c1, c2 constant bool masks: two groups (where_1, where_2) whose
calls read a bool constant, which the GPU model path does not lower, around
one (relu) it compiles; a model compile must fail listing exactly those
two, each at its node."""
import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 8])
y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 8])
c1 = numpy_helper.from_array(np.array([[1, 0, 1, 0, 1, 1, 0, 0]], bool), 'c1')
c2 = numpy_helper.from_array(np.array([[0, 1, 1, 0, 0, 1, 1, 0]], bool), 'c2')
z = numpy_helper.from_array(np.full([1, 8], 0.5, np.float32), 'z')
nodes = [helper.make_node('Where', ['c1', 'x', 'z'], ['a'], name='where_1'),
         helper.make_node('Relu', ['a'], ['b'], name='relu_1'),
         helper.make_node('Where', ['c2', 'b', 'z'], ['y'], name='where_2')]
m = helper.make_model(helper.make_graph(nodes, 'unsupported_gpu', [x], [y], [c1, c2, z]),
                      opset_imports=[helper.make_opsetid('', 13)])
m.ir_version = 7
onnx.save(m, 'gpu_unsupported.onnx')
