"""Writes tests/gpu/gpu_unsupported.onnx: x -> Cast f16 (half_1) -> Cast f32
-> Relu (relu_1) -> Cast f16 (half_2) -> Cast f32 -> y. A 16-bit value
inside a model with f32 inputs and outputs is not compiled (its cast is
refused rather than dropped: the GPU model path's results are f32, i64,
i32 and bool): a model compile must fail listing exactly the two casts,
each at its node, and the relu that reads what they make."""
import onnx
from onnx import TensorProto, helper

x = helper.make_tensor_value_info('x', TensorProto.FLOAT, [1, 8])
y = helper.make_tensor_value_info('y', TensorProto.FLOAT, [1, 8])
nodes = [helper.make_node('Cast', ['x'], ['a'], to=TensorProto.FLOAT16, name='half_1'),
         helper.make_node('Cast', ['a'], ['b'], to=TensorProto.FLOAT, name='float_1'),
         helper.make_node('Relu', ['b'], ['c'], name='relu_1'),
         helper.make_node('Cast', ['c'], ['d'], to=TensorProto.FLOAT16, name='half_2'),
         helper.make_node('Cast', ['d'], ['y'], to=TensorProto.FLOAT, name='float_2')]
m = helper.make_model(helper.make_graph(nodes, 'unsupported_gpu', [x], [y]),
                      opset_imports=[helper.make_opsetid('', 13)])
m.ir_version = 7
onnx.save(m, 'gpu_unsupported.onnx')
