"""Writes tests/gpu/gpu_unsupported.onnx: x -> Floor -> Relu -> Sin -> y, two
groups (floor, sin) without GPU kernels around one (relu) with one; a model
compile must fail listing exactly those two, each at its node."""
import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 8])
y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 8])
nodes = [helper.make_node('Floor', ['x'], ['a'], name='floor_1'),
         helper.make_node('Relu', ['a'], ['b'], name='relu_1'),
         helper.make_node('Sin', ['b'], ['y'], name='sin_1')]
m = helper.make_model(helper.make_graph(nodes, 'unsupported_gpu', [x], [y]),
                      opset_imports=[helper.make_opsetid('', 13)])
m.ir_version = 7
onnx.save(m, 'gpu_unsupported.onnx')
