#!/usr/bin/env python3
"""Exports the real-model test data; runs on the GPU machine (torch,
torchvision, onnxruntime), covenant's CI only reads what it wrote.

    python3 tests/models/export_real.py OUTDIR [NAME ...]

For each model: torch's default random initialisation from a fixed seed,
BatchNorm statistics estimated on random batches (train mode, cumulative
average), eval mode, exported with the TorchScript exporter
(torch.onnx.export(..., dynamo=False), no constant folding, so BatchNorm
stays in the graph for covenant to fold). Then the skeleton is
made (regen.py: large float parameters are replaced in torch, before the
BatchNorm statistics are estimated, by values regenerated from seeds +
per-channel statistics, and stored as those),
the model is materialized from it exactly as CI will, and onnxruntime (CPU)
runs the materialized model on a seeded random input. Writes, per model,
OUTDIR/NAME.skel.onnx, NAME.stats.npz, NAME_input.npy, NAME_ort.npy, and
OUTDIR/log.txt (versions, operators, sizes, output statistics).

The int8 models are made from a float CNN by onnxruntime's quantize_static
(calibrated on random batches): NAME=int8_qdq_cnn (QDQ format, per-channel
int8 weights, int8 activations) and int8_qop_cnn (QOperator format:
QLinearConv/QLinearMatMul, uint8 activations, per-tensor).
"""
import os
import sys
import time
import traceback

import numpy as np
import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import regen  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
ONLY = set(sys.argv[2:])
LOG = []
DEV = "cuda" if torch.cuda.is_available() else "cpu"


def log(*a):
    line = " ".join(str(x) for x in a)
    print(line, flush=True)
    LOG.append(line)


def estimate_bn(model, shape, batches=4, batch=8, dtype=torch.float32):
    """BatchNorm running statistics from random inputs (cumulative average)."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if not bns:
        return model.eval()
    for m in bns:
        m.reset_running_stats()
        m.momentum = None
    model.train().to(DEV)
    g = torch.Generator(device="cpu").manual_seed(7)
    with torch.no_grad():
        for _ in range(batches):
            x = torch.randn((batch,) + tuple(shape[1:]), generator=g).to(DEV)
            model(x)
    return model.eval().cpu()


# ---------------------------------------------------------------- models

def conv_bn_act(cin, cout, k, s=1, act=nn.SiLU):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, k // 2, bias=False), nn.BatchNorm2d(cout), act())


class SmallCNN(nn.Module):
    """Two conv blocks and a Linear head."""

    def __init__(self, classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Linear(32 * 8 * 8, classes)

    def forward(self, x):
        return self.head(torch.flatten(self.features(x), 1))


class C2f(nn.Module):
    """YOLOv8's split/bottleneck/concat block, small."""

    def __init__(self, cin, cout, n=1):
        super().__init__()
        self.c = cout // 2
        self.cv1 = conv_bn_act(cin, 2 * self.c, 1)
        self.m = nn.ModuleList(nn.Sequential(conv_bn_act(self.c, self.c, 3), conv_bn_act(self.c, self.c, 3))
                               for _ in range(n))
        self.cv2 = conv_bn_act((2 + n) * self.c, cout, 1)

    def forward(self, x):
        y = list(self.cv1(x).chunk(2, 1))
        for m in self.m:
            y.append(y[-1] + m(y[-1]))
        return self.cv2(torch.cat(y, 1))


class YoloTiny(nn.Module):
    """A YOLO-style detector: SiLU conv blocks, stride-32 backbone, an FPN
    neck with nearest Upsample and Concat, two detection heads."""

    def __init__(self, classes=8, anchors=3):
        super().__init__()
        self.stem = conv_bn_act(3, 16, 3, 2)
        self.d2 = nn.Sequential(conv_bn_act(16, 32, 3, 2), C2f(32, 32))
        self.d3 = nn.Sequential(conv_bn_act(32, 64, 3, 2), C2f(64, 64))
        self.d4 = nn.Sequential(conv_bn_act(64, 128, 3, 2), C2f(128, 128))
        self.d5 = nn.Sequential(conv_bn_act(128, 128, 3, 2), C2f(128, 128))
        self.up = nn.Upsample(scale_factor=2, mode="nearest")
        self.n4 = C2f(256, 128)
        self.n3 = C2f(192, 64)
        out = anchors * (5 + classes)
        self.h3 = nn.Conv2d(64, out, 1)
        self.h4 = nn.Conv2d(128, out, 1)

    def forward(self, x):
        p3 = self.d3(self.d2(self.stem(x)))
        p4 = self.d4(p3)
        p5 = self.d5(p4)
        n4 = self.n4(torch.cat([self.up(p5), p4], 1))
        n3 = self.n3(torch.cat([self.up(n4), p3], 1))
        return torch.sigmoid(self.h3(n3)), torch.sigmoid(self.h4(n4))


class GPTBlock(nn.Module):
    def __init__(self, d, heads, ctx):
        super().__init__()
        self.h = heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc = nn.Linear(d, 4 * d)
        self.act = nn.GELU(approximate="tanh")
        self.out = nn.Linear(4 * d, d)
        self.register_buffer("mask", torch.tril(torch.ones(ctx, ctx)).view(1, 1, ctx, ctx))

    def forward(self, x):
        b, t, c = x.size()
        q, k, v = self.qkv(self.ln1(x)).split(c, dim=2)
        q = q.view(b, t, self.h, c // self.h).transpose(1, 2)
        k = k.view(b, t, self.h, c // self.h).transpose(1, 2)
        v = v.view(b, t, self.h, c // self.h).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / (k.size(-1) ** 0.5))
        att = att.masked_fill(self.mask[:, :, :t, :t] == 0, float("-inf"))
        y = torch.softmax(att, dim=-1) @ v
        x = x + self.proj(y.transpose(1, 2).contiguous().view(b, t, c))
        return x + self.out(self.act(self.fc(self.ln2(x))))


class GPT2Tiny(nn.Module):
    """GPT-2-style decoder: token + position embeddings, causal attention
    (masked_fill -> Where), tanh-GELU MLP, tied-free LM head."""

    def __init__(self, vocab=512, d=128, heads=4, layers=2, ctx=32):
        super().__init__()
        self.wte = nn.Embedding(vocab, d)
        self.wpe = nn.Embedding(ctx, d)
        self.blocks = nn.ModuleList(GPTBlock(d, heads, ctx) for _ in range(layers))
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, idx):
        t = idx.size(1)
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device).unsqueeze(0)
        x = self.wte(idx) + self.wpe(pos)
        for b in self.blocks:
            x = b(x)
        return self.head(self.ln(x))


class ViTTiny(nn.Module):
    """A small ViT from nn.TransformerEncoderLayer (pre-norm, GELU)."""

    def __init__(self, img=64, patch=8, d=96, heads=4, layers=2, classes=10):
        super().__init__()
        self.patch = nn.Conv2d(3, d, patch, patch)
        n = (img // patch) ** 2
        self.cls = nn.Parameter(torch.randn(1, 1, d) * 0.02)
        self.pos = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, heads, 2 * d, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.enc = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, classes)

    def forward(self, x):
        x = self.patch(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.size(0), -1, -1), x], 1) + self.pos
        return self.head(self.ln(self.enc(x))[:, 0])


def tv(name, **kw):
    import torchvision.models as tvm
    return getattr(tvm, name)(weights=None, **kw)


# name: (builder, input shape, input kind, opset)
MODELS = {
    "squeezenet1_1": (lambda: tv("squeezenet1_1"), (1, 3, 224, 224), "image", 17),
    "mobilenet_v2": (lambda: tv("mobilenet_v2"), (1, 3, 224, 224), "image", 17),
    "shufflenet_v2_x1_0": (lambda: tv("shufflenet_v2_x1_0"), (1, 3, 224, 224), "image", 17),
    "resnet18": (lambda: tv("resnet18"), (1, 3, 224, 224), "image", 17),
    "resnet50": (lambda: tv("resnet50"), (1, 3, 224, 224), "image", 17),
    "efficientnet_b0": (lambda: tv("efficientnet_b0"), (1, 3, 224, 224), "image", 17),
    "small_cnn": (SmallCNN, (1, 3, 32, 32), "image", 17),
    "yolo_tiny": (YoloTiny, (1, 3, 128, 128), "image", 17),
    "gpt2_tiny": (GPT2Tiny, (1, 32), "tokens", 17),
    "vit_tiny": (ViTTiny, (1, 3, 64, 64), "image", 17),
}
QUANT = ("int8_qdq_cnn", "int8_qop_cnn")
# batch 32 exported (the transformers' Reshape/Expand targets hard-code the
# traced batch, so make_batch.py cannot set it afterwards)
B32 = ("squeezenet1_1", "mobilenet_v2", "shufflenet_v2_x1_0", "resnet18", "resnet50", "small_cnn", "vit_tiny",
       "gpt2_tiny")


def make_input(name, shape, kind):
    rs = np.random.RandomState(regen.seed_of(name + ":input"))
    if kind == "tokens":
        return rs.randint(0, 512, size=shape).astype(np.int64)
    return rs.standard_normal(shape).astype(np.float32)


def regen_params(model):
    """Replaces every large float parameter by its regenerated version (from
    the stats of torch's initialisation), before BatchNorm statistics are
    estimated, so that the exported model is exactly what CI regenerates.
    Returns {parameter name: (mean, std)}."""
    used = {}
    with torch.no_grad():
        for pname, p in model.named_parameters():
            if p.dtype != torch.float32 or p.numel() <= regen.REGEN_MIN:
                continue
            mean, std = regen.channel_stats(p.detach().cpu().numpy())
            p.copy_(torch.from_numpy(regen.regen(pname, p.shape, mean, std)))
            used[pname] = (mean, std)
    return used


def skeletonize(path, name, used):
    """Replaces the large float initializers that are regenerated parameters
    by their statistics (a tensor that is not, e.g. one the exporter computed,
    stays verbatim); returns how many were replaced."""
    import onnx
    from onnx import numpy_helper
    m = onnx.load(path)
    stats, made, kept = {}, [], 0
    for init in m.graph.initializer:
        if init.data_type != onnx.TensorProto.FLOAT:
            continue
        w = numpy_helper.to_array(init)
        if w.size <= regen.REGEN_MIN:
            continue
        if init.name not in used:
            kept += 1
            continue
        mean, std = used[init.name]
        if not np.array_equal(w, regen.regen(init.name, w.shape, mean, std)):
            kept += 1
            continue
        stats[init.name + "::mean"], stats[init.name + "::std"] = mean, std
        made.append(w)
        name_, dims = init.name, list(init.dims)
        init.Clear()
        init.name, init.data_type = name_, onnx.TensorProto.FLOAT
        init.dims.extend(dims)
    del m.metadata_props[:]
    p = m.metadata_props.add()
    p.key, p.value = regen.SHA_KEY, regen.digest(made)
    onnx.save(m, os.path.join(OUT, name + ".skel.onnx"))
    np.savez(os.path.join(OUT, name + ".stats.npz"), **stats)
    if kept:
        log(name, "kept verbatim: %d large float tensors that are not parameters" % kept)
    return len(made)


def reference(name, x):
    """Materializes the skeleton as CI will, runs onnxruntime on it."""
    import onnx
    import onnxruntime as ort
    import materialize
    path = materialize.materialize(name, "/tmp/cov-models", OUT)
    m = onnx.load(path)
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    t0 = time.time()
    ys = sess.run(None, {sess.get_inputs()[0].name: x})
    dt = time.time() - t0
    ops = sorted({n.op_type for n in m.graph.node})
    log(name, "opset", [o.version for o in m.opset_import if o.domain in ("", "ai.onnx")],
        "nodes", len(m.graph.node), "ops", ops)
    for i, y in enumerate(ys):
        log(name, "output", i, y.shape, y.dtype, "min %.4g max %.4g mean %.4g" % (y.min(), y.max(), y.mean()),
            "ort %.3fs" % dt)
    np.save(os.path.join(OUT, name + "_input.npy"), x)
    if len(ys) == 1:
        np.save(os.path.join(OUT, name + "_ort.npy"), ys[0])
    else:
        for i, y in enumerate(ys):
            np.save(os.path.join(OUT, "%s_ort%d.npy" % (name, i)), y)
    return path


def export(name):
    """Exports each variant of one model: NAME at its real input size, with
    onnxruntime's output; NAME_64 (classifiers at 64x64, the size CI runs)
    with its output; NAME_b32 (batch 32, for GPU latency; no stored output)."""
    build, shape, kind, opset = MODELS[name]
    torch.manual_seed(regen.seed_of(name))
    model = build()
    used = regen_params(model)
    if kind == "image":
        model = estimate_bn(model, shape)
    model = model.eval().cpu()
    variants = [(name, shape, True)]
    if shape[-1] == 224:
        variants.append((name + "_64", shape[:2] + (64, 64), True))
    if name in B32:
        variants.append((name + "_b32", (32,) + shape[1:], False))
    for vname, vshape, ref in variants:
        x = make_input(vname, vshape, kind)
        path = os.path.join("/tmp/cov-models", vname + ".export.onnx")
        t0 = time.time()
        n_out = 2 if name == "yolo_tiny" else 1
        outs = ["output"] if n_out == 1 else ["output%d" % i for i in range(n_out)]
        # No constant folding: BatchNormalization stays a node (covenant folds
        # it), so the initializers are the parameters themselves.
        torch.onnx.export(model, (torch.from_numpy(x),), path, dynamo=False, opset_version=opset,
                          input_names=["input"], output_names=outs, do_constant_folding=False,
                          training=torch.onnx.TrainingMode.PRESERVE)
        n = skeletonize(path, vname, used)
        log(vname, "exported in %.1fs," % (time.time() - t0), "export size", os.path.getsize(path),
            "regenerated tensors", n, "skeleton size", os.path.getsize(os.path.join(OUT, vname + ".skel.onnx")))
        if ref:
            reference(vname, x)
    return model


class RandomReader:
    def __init__(self, shape, n=16):
        rs = np.random.RandomState(11)
        self.batches = [{"input": rs.standard_normal(shape).astype(np.float32)} for _ in range(n)]

    def get_next(self):
        return self.batches.pop() if self.batches else None


def export_quant():
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    torch.manual_seed(regen.seed_of("int8_cnn"))
    shape = (1, 3, 32, 32)
    model = SmallCNN()
    regen_params(model)
    model = estimate_bn(model, shape)
    fp32 = "/tmp/cov-models/int8_cnn_fp32.onnx"
    x = make_input("int8_cnn", shape, "image")
    torch.onnx.export(model, (torch.from_numpy(x),), fp32, dynamo=False, opset_version=13,
                      input_names=["input"], output_names=["output"], do_constant_folding=True)
    for name, fmt, act, per_ch in (("int8_qdq_cnn", QuantFormat.QDQ, QuantType.QInt8, True),
                                   ("int8_qop_cnn", QuantFormat.QOperator, QuantType.QUInt8, False)):
        if ONLY and name not in ONLY:
            continue
        try:
            q = "/tmp/cov-models/%s.export.onnx" % name
            quantize_static(fp32, q, RandomReader(shape), quant_format=fmt, activation_type=act,
                            weight_type=QuantType.QInt8, per_channel=per_ch)
            n = skeletonize(q, name, {})
            log(name, "quantized (%s, act %s, per_channel %s), regenerated tensors %d" % (fmt, act, per_ch, n))
            reference(name, x)
        except Exception:
            log(name, "FAILED\n" + traceback.format_exc())


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs("/tmp/cov-models", exist_ok=True)
    import onnx
    import onnxruntime
    import torchvision
    log("torch", torch.__version__, "torchvision", torchvision.__version__, "onnx", onnx.__version__,
        "onnxruntime", onnxruntime.__version__, "numpy", np.__version__, "device", DEV)
    for name in MODELS:
        if ONLY and name not in ONLY:
            continue
        try:
            export(name)
        except Exception:
            log(name, "FAILED\n" + traceback.format_exc())
    export_quant()
    with open(os.path.join(OUT, "log.txt"), "w") as f:
        f.write("\n".join(LOG) + "\n")


if __name__ == "__main__":
    main()
