#!/usr/bin/env python3
"""Exports the real-model test data (run on a machine with torch,
torchvision and onnxruntime; covenant's CI only reads the results).

    python3 export_models.py OUTDIR [NAME...]

For each model: random weights from a fixed seed (BatchNorm statistics and
affine parameters randomized too, so that BatchNorm folding is exercised),
eval mode, a 1x3x64x64 input (1x16x64 for the transformer block), exported
with torch.onnx (the TorchScript exporter, so that the opset is chosen
here), then run with onnxruntime on CPU. Writes OUTDIR/<name>.onnx, one
OUTDIR/io.npz holding <name>_input and <name>_ort for every model, and
OUTDIR/log.txt (versions, the operators of each model, timings).

Export settings, chosen so that the models exercise the frontend:
  squeezenet1_1        opset 13, do_constant_folding=False (Constant nodes and
                       shape arithmetic left for covenant to fold)
  mobilenet_v2         width 0.5, opset 13 (Clip with min/max inputs, BatchNorm
                       already folded by the exporter's constant folding)
  shufflenet_v2_x0_5   opset 13, dynamic batch dim 'N' (Shape -> Gather ->
                       Reshape chains resolved at run time; channel shuffle)
  encoder              one nn.TransformerEncoderLayer (d_model 64, 4 heads,
                       ReLU MLP), opset 17 (LayerNormalization, MatMul+Softmax)
All classifiers have 10 classes to keep the files small.
"""
import io
import os
import sys
import time
import traceback

import numpy as np
import torch

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
LOG = []


def log(*a):
    line = " ".join(str(x) for x in a)
    print(line, flush=True)
    LOG.append(line)


def randomize(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (torch.nn.BatchNorm2d, torch.nn.LayerNorm)):
                m.weight.copy_(torch.rand(m.weight.shape, generator=g) + 0.5)
                m.bias.copy_(torch.randn(m.bias.shape, generator=g) * 0.1)
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.copy_(torch.randn(m.running_mean.shape, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(m.running_var.shape, generator=g) + 0.5)
    return model.eval()


# ---- fallbacks, used only when torchvision is missing: the same
# architectures as torchvision's definitions, written with torch.nn.

nn = torch.nn


class Fire(nn.Module):
    def __init__(self, cin, sq, e1, e3):
        super().__init__()
        self.squeeze = nn.Sequential(nn.Conv2d(cin, sq, 1), nn.ReLU(inplace=True))
        self.e1 = nn.Sequential(nn.Conv2d(sq, e1, 1), nn.ReLU(inplace=True))
        self.e3 = nn.Sequential(nn.Conv2d(sq, e3, 3, padding=1), nn.ReLU(inplace=True))

    def forward(self, x):
        x = self.squeeze(x)
        return torch.cat([self.e1(x), self.e3(x)], 1)


def squeezenet1_1(num_classes):
    pool = lambda: nn.MaxPool2d(3, 2, ceil_mode=True)  # noqa: E731
    return nn.Sequential(
        nn.Conv2d(3, 64, 3, stride=2), nn.ReLU(inplace=True), pool(),
        Fire(64, 16, 64, 64), Fire(128, 16, 64, 64), pool(),
        Fire(128, 32, 128, 128), Fire(256, 32, 128, 128), pool(),
        Fire(256, 48, 192, 192), Fire(384, 48, 192, 192), Fire(384, 64, 256, 256),
        Fire(512, 64, 256, 256),
        nn.Dropout(0.5), nn.Conv2d(512, num_classes, 1), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(1))


def divisible(v, d=8):
    n = max(d, int(v + d / 2) // d * d)
    return n + d if n < 0.9 * v else n


def conv_bn(cin, cout, k, s, groups=1, act=True):
    layers = [nn.Conv2d(cin, cout, k, s, (k - 1) // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
    return layers + [nn.ReLU6(inplace=True)] if act else layers


class InvertedResidual(nn.Module):
    def __init__(self, cin, cout, stride, expand):
        super().__init__()
        hidden = int(round(cin * expand))
        self.res = stride == 1 and cin == cout
        layers = conv_bn(cin, hidden, 1, 1) if expand != 1 else []
        layers += conv_bn(hidden, hidden, 3, stride, groups=hidden) + conv_bn(hidden, cout, 1, 1, act=False)
        self.conv = nn.Sequential(*layers)

    def forward(self, x):
        return x + self.conv(x) if self.res else self.conv(x)


def mobilenet_v2(width_mult, num_classes):
    cfg = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1],
           [6, 160, 3, 2], [6, 320, 1, 1]]
    cin = divisible(32 * width_mult)
    last = divisible(1280 * max(1.0, width_mult))
    layers = conv_bn(3, cin, 3, 2)
    for t, c, n, s in cfg:
        cout = divisible(c * width_mult)
        for i in range(n):
            layers.append(InvertedResidual(cin, cout, s if i == 0 else 1, t))
            cin = cout
    layers += conv_bn(cin, last, 1, 1)
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d((1, 1)), nn.Flatten(1), nn.Dropout(0.2),
                         nn.Linear(last, num_classes))


def shuffle(x, groups):
    n, c, h, w = x.size()
    x = x.view(n, groups, c // groups, h, w).transpose(1, 2).contiguous()
    return x.view(n, c, h, w)


class ShuffleBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.stride = stride
        b = cout // 2
        if stride > 1:
            self.branch1 = nn.Sequential(*conv_bn(cin, cin, 3, stride, groups=cin, act=False),
                                         nn.Conv2d(cin, b, 1, bias=False), nn.BatchNorm2d(b),
                                         nn.ReLU(inplace=True))
        c2 = cin if stride > 1 else b
        self.branch2 = nn.Sequential(nn.Conv2d(c2, b, 1, bias=False), nn.BatchNorm2d(b), nn.ReLU(inplace=True),
                                     *conv_bn(b, b, 3, stride, groups=b, act=False),
                                     nn.Conv2d(b, b, 1, bias=False), nn.BatchNorm2d(b), nn.ReLU(inplace=True))

    def forward(self, x):
        if self.stride == 1:
            x1, x2 = x.chunk(2, dim=1)
            out = torch.cat((x1, self.branch2(x2)), dim=1)
        else:
            out = torch.cat((self.branch1(x), self.branch2(x)), dim=1)
        return shuffle(out, 2)


class ShuffleNetV2(nn.Module):
    def __init__(self, repeats, channels, num_classes):
        super().__init__()
        self.conv1 = nn.Sequential(nn.Conv2d(3, channels[0], 3, 2, 1, bias=False), nn.BatchNorm2d(channels[0]),
                                   nn.ReLU(inplace=True))
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        stages, cin = [], channels[0]
        for r, cout in zip(repeats, channels[1:4]):
            stages.append(nn.Sequential(ShuffleBlock(cin, cout, 2),
                                        *[ShuffleBlock(cout, cout, 1) for _ in range(r - 1)]))
            cin = cout
        self.stages = nn.Sequential(*stages)
        self.conv5 = nn.Sequential(nn.Conv2d(cin, channels[4], 1, bias=False), nn.BatchNorm2d(channels[4]),
                                   nn.ReLU(inplace=True))
        self.fc = nn.Linear(channels[4], num_classes)

    def forward(self, x):
        x = self.conv5(self.stages(self.maxpool(self.conv1(x))))
        return self.fc(x.mean([2, 3]))


def build(name):
    torch.manual_seed(1234)
    try:
        import torchvision.models as tvm
    except ImportError:
        tvm = None
    if tvm is None and name not in ("encoder", "encoder_b32"):
        log(name, "built with the torch.nn fallback (no torchvision)")
        if name == "squeezenet1_1":
            return randomize(squeezenet1_1(10), 1), (1, 3, 64, 64)
        if name == "mobilenet_v2":
            return randomize(mobilenet_v2(0.5, 10), 2), (1, 3, 64, 64)
        if name == "shufflenet_v2_x0_5":
            return randomize(ShuffleNetV2([4, 8, 4], [24, 48, 96, 192, 1024], 10), 3), (1, 3, 64, 64)
    if name == "squeezenet1_1":
        return randomize(tvm.squeezenet1_1(weights=None, num_classes=10), 1), (1, 3, 64, 64)
    if name == "mobilenet_v2":
        return randomize(tvm.mobilenet_v2(weights=None, width_mult=0.5, num_classes=10), 2), (1, 3, 64, 64)
    if name == "shufflenet_v2_x0_5":
        return randomize(tvm.shufflenet_v2_x0_5(weights=None, num_classes=10), 3), (1, 3, 64, 64)
    if name in ("encoder", "encoder_b32"):
        layer = torch.nn.TransformerEncoderLayer(d_model=64, nhead=4, dim_feedforward=128,
                                                 dropout=0.1, activation="relu", batch_first=True)
        return randomize(layer, 4), (32 if name == "encoder_b32" else 1, 16, 64)
    raise ValueError(name)


SETTINGS = {
    "squeezenet1_1": dict(opset_version=13, do_constant_folding=False),
    "mobilenet_v2": dict(opset_version=13),
    "shufflenet_v2_x0_5": dict(opset_version=13, dynamic_axes={"input": {0: "N"}, "output": {0: "N"}}),
    "encoder": dict(opset_version=17),
    # batch 32 for GPU latency (bench/nvptx): the traced Reshape targets
    # hard-code the batch; only with its name on the command line
    "encoder_b32": dict(opset_version=17),
}


def export(name, arrays):
    import onnx
    import onnxruntime as ort
    model, shape = build(name)
    x = torch.from_numpy(np.random.default_rng(99).standard_normal(shape).astype(np.float32))
    path = os.path.join(OUT, name + ".onnx")
    t0 = time.time()
    kw = dict(input_names=["input"], output_names=["output"], **SETTINGS[name])
    try:
        torch.onnx.export(model, (x,), path, dynamo=False, **kw)
    except TypeError:
        torch.onnx.export(model, (x,), path, **kw)
    m = onnx.load(path)
    ops = sorted({n.op_type for n in m.graph.node})
    log(name, "exported in %.1fs, opset" % (time.time() - t0),
        [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")],
        "nodes", len(m.graph.node), "size", os.path.getsize(path), "ops", ops)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    t0 = time.time()
    y = sess.run(None, {"input": x.numpy()})[0]
    log(name, "onnxruntime %.3fs" % (time.time() - t0), "output", y.shape, y.dtype,
        "max|y| %.4g" % np.abs(y).max())
    with torch.no_grad():
        yt = model(x).numpy()
    log(name, "torch vs onnxruntime max abs diff %.3g" % np.abs(yt - y).max())
    arrays[name + "_input"] = x.numpy()
    arrays[name + "_ort"] = y


def main():
    os.makedirs(OUT, exist_ok=True)
    import onnx
    import onnxruntime
    log("torch", torch.__version__, "onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__)
    try:
        import torchvision
        log("torchvision", torchvision.__version__)
    except ImportError:
        log("torchvision missing")
    arrays = {}
    only = set(sys.argv[2:])
    for name in SETTINGS:
        if (only and name not in only) or (not only and name == "encoder_b32"):
            continue
        try:
            export(name, arrays)
        except Exception:
            log(name, "FAILED\n" + traceback.format_exc())
    np.savez(os.path.join(OUT, "io.npz"), **arrays)
    with open(os.path.join(OUT, "log.txt"), "w") as f:
        f.write("\n".join(LOG) + "\n")


if __name__ == "__main__":
    main()
