"""Writes one-node Resize and ConvTranspose models into OUTDIR: Resize in
every mode (nearest with each rounding, linear, cubic with and without
exclude_outside) and every coordinate transformation mode, upsampling and
downsampling, by scales and by sizes; ConvTranspose with strides,
dilations, groups, pads (some larger than the kernel's reach, which crop),
output_padding, auto_pad and 1-D. Each model's input feeds a Conv first
when `conv` is set, so the resize or transposed convolution also reads a
computed value. Usage: make_resize_convt.py OUTDIR"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper as nh

out_dir = sys.argv[1]
os.makedirs(out_dir, exist_ok=True)
rng = np.random.default_rng(7)
X = [1, 3, 6, 5]


def save(name, nodes, inits, y_shape, x_shape=X, opset=19):
    g = h.make_graph(nodes, name, [h.make_tensor_value_info("x", T.FLOAT, x_shape)],
                     [h.make_tensor_value_info("y", T.FLOAT, y_shape)], inits)
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    onnx.checker.check_model(m)
    onnx.save(m, os.path.join(out_dir, name + ".onnx"))


def resize_model(name, mode, ctm, scales=None, sizes=None, opset=19, **attrs):
    # a 1x1 Conv first, so the Resize reads a value a group computed
    w = nh.from_array(rng.standard_normal((3, 3, 1, 1)).astype(np.float32), "w")
    inits = [w, nh.from_array(np.array([0, 0, 0, 0, 1, 1, 1, 1], np.float32), "roi")]
    ins = ["c", "roi"]
    if scales is not None:
        inits.append(nh.from_array(np.array(scales, np.float32), "scales"))
        ins.append("scales")
        y = [int(np.floor(d * s)) for d, s in zip(X, scales)]
    else:
        inits.append(nh.from_array(np.array(sizes, np.int64), "sizes"))
        # Resize-11's scales input is not optional: an empty one
        inits.append(nh.from_array(np.zeros([0], np.float32), "no_scales"))
        ins += ["no_scales" if opset < 13 else "", "sizes"]
        y = list(sizes)
    if ctm == "tf_crop_and_resize":
        inits[1] = nh.from_array(np.array([0, 0, -0.2, 0.2, 1, 1, 0.9, 1.3], np.float32), "roi")
    nodes = [h.make_node("Conv", ["x", "w"], ["c"], name="conv"),
             h.make_node("Resize", ins, ["y"], name="resize", mode=mode,
                         coordinate_transformation_mode=ctm, **attrs)]
    save(name, nodes, inits, y, opset=opset)


CTMS = ["half_pixel", "half_pixel_symmetric", "pytorch_half_pixel", "align_corners", "asymmetric",
        "tf_crop_and_resize"]
for ctm in CTMS:
    extra = {"extrapolation_value": 0.5} if ctm == "tf_crop_and_resize" else {}
    for mode in ["linear", "cubic"]:
        resize_model(f"resize_{mode}_{ctm}_up", mode, ctm, scales=[1, 1, 2, 1.5], **extra)
        resize_model(f"resize_{mode}_{ctm}_down", mode, ctm, sizes=[1, 3, 4, 3], **extra)
    resize_model(f"resize_cubic_{ctm}_excl", "cubic", ctm, scales=[1, 1, 1.5, 2], exclude_outside=1,
                 cubic_coeff_a=-0.5, **extra)
    for nm in ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]:
        resize_model(f"resize_nearest_{nm}_{ctm}", "nearest", ctm, scales=[1, 1, 2, 1.5],
                     nearest_mode=nm, **extra)
# defined in Resize-11 only
for mode in ["nearest", "linear", "cubic"]:
    resize_model(f"resize_{mode}_tf_half_pixel_for_nearest", mode, "tf_half_pixel_for_nearest",
                 sizes=[1, 3, 9, 8], opset=11)


def convt_model(name, x_shape, w_shape, y_shape, **attrs):
    w = nh.from_array(rng.standard_normal(w_shape).astype(np.float32), "w")
    b = nh.from_array(rng.standard_normal(w_shape[1] * attrs.get("group", 1)).astype(np.float32), "b")
    nodes = [h.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="convt", **attrs)]
    save(name, nodes, [w, b], y_shape, x_shape)


convt_model("convt_s2", X, [3, 4, 2, 2], [1, 4, 12, 10], strides=[2, 2])
convt_model("convt_s2_p1_op1", X, [3, 4, 3, 3], [1, 4, 12, 10], strides=[2, 2], pads=[1, 1, 1, 1],
            output_padding=[1, 1])
convt_model("convt_s3x2_d2", X, [3, 2, 3, 2], [1, 2, 20, 10], strides=[3, 2], dilations=[2, 2])
convt_model("convt_group3", X, [3, 2, 3, 3], [1, 6, 13, 11], strides=[2, 2], group=3)
# pads past the kernel's reach crop the zero-inserted input
convt_model("convt_crop", X, [3, 4, 2, 2], [1, 4, 6, 4], strides=[2, 2], pads=[3, 2, 3, 4])
convt_model("convt_same_upper", X, [3, 4, 3, 3], [1, 4, 12, 10], strides=[2, 2],
            auto_pad="SAME_UPPER")
convt_model("convt_1d", [1, 3, 7], [3, 4, 3], [1, 4, 15], strides=[2])
