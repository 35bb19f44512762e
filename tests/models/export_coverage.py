#!/usr/bin/env python3
"""Exports the coverage models: real exports of the shapes users bring that
the first set (export_real.py) does not have — integer and float16 inputs,
several inputs and outputs, ConvTranspose, bilinear resizes, dilated
convolutions, LSTMs, a symbolic batch, detection post-processing with
NonMaxSuppression, a data-dependent Loop, an int8 network with residual
Adds, torch's dynamo exporter. Runs on the GPU machine (torch, torchvision,
transformers, onnxruntime); CI only reads what it wrote.

    python3 tests/models/export_coverage.py OUTDIR [NAME ...]

Weights and BatchNorm statistics are made as export_real.py makes them
(seeded torch initialisation, regenerated large float32 parameters, stored
as skeletons; a tensor that is not a regenerated parameter — float16, int8,
the LSTM's reordered gates — is stored verbatim). Inputs: NAME_input.npy,
or NAME_input0.npy, NAME_input1.npy, ... for several, in the model's input
order; onnxruntime's outputs NAME_ort.npy or NAME_ort0.npy, ...
"""
import os
import sys
import time
import traceback

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import export_real as er  # noqa: E402
import regen  # noqa: E402

OUT = sys.argv[1] if len(sys.argv) > 1 else "."
ONLY = set(sys.argv[2:])
TMP = "/tmp/cov-models"
er.OUT = OUT


def rs_for(name):
    return np.random.RandomState(regen.seed_of(name + ":input"))


def bn_act(cin, cout, k, s=1, d=1, act=nn.ReLU):
    return nn.Sequential(nn.Conv2d(cin, cout, k, s, d * (k // 2), dilation=d, bias=False),
                         nn.BatchNorm2d(cout), act())


class UNetTiny(nn.Module):
    """Two-level U-Net: a ConvTranspose up-step and a bilinear Upsample."""

    def __init__(self, classes=4):
        super().__init__()
        self.e1 = bn_act(3, 16, 3)
        self.e2 = nn.Sequential(nn.MaxPool2d(2), bn_act(16, 32, 3))
        self.e3 = nn.Sequential(nn.MaxPool2d(2), bn_act(32, 64, 3))
        self.up2 = nn.ConvTranspose2d(64, 32, 2, stride=2)
        self.d2 = bn_act(64, 32, 3)
        self.up1 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.d1 = bn_act(48, 16, 3)
        self.head = nn.Conv2d(16, classes, 1)

    def forward(self, x):
        a = self.e1(x)
        b = self.e2(a)
        c = self.e3(b)
        b = self.d2(torch.cat([self.up2(c), b], 1))
        return self.head(self.d1(torch.cat([self.up1(b), a], 1)))


class DeepLabTiny(nn.Module):
    """Output stride 4, an ASPP head (dilations 2 and 4, image pooling), and
    a bilinear resize to the input size computed from the input's shape."""

    def __init__(self, classes=5):
        super().__init__()
        self.body = nn.Sequential(bn_act(3, 16, 3, 2), bn_act(16, 32, 3, 2), bn_act(32, 32, 3, 1, 2))
        self.b0 = bn_act(32, 16, 1)
        self.b1 = bn_act(32, 16, 3, 1, 2)
        self.b2 = bn_act(32, 16, 3, 1, 4)
        self.pool = nn.Sequential(nn.AdaptiveAvgPool2d(1), nn.Conv2d(32, 16, 1), nn.ReLU())
        self.proj = bn_act(64, 32, 1)
        self.cls = nn.Conv2d(32, classes, 1)

    def forward(self, x):
        f = self.body(x)
        p = F.interpolate(self.pool(f), size=f.shape[-2:], mode="bilinear", align_corners=False)
        y = self.cls(self.proj(torch.cat([self.b0(f), self.b1(f), self.b2(f), p], 1)))
        return F.interpolate(y, size=x.shape[-2:], mode="bilinear", align_corners=False)


class KWS(nn.Module):
    """Keyword spotter: Conv1d over 40 MFCC bands, a 2-layer LSTM, a Linear
    head on the last step."""

    def __init__(self, classes=12):
        super().__init__()
        self.conv = nn.Conv1d(40, 64, 3, padding=1)
        self.lstm = nn.LSTM(64, 64, num_layers=2, batch_first=True)
        self.head = nn.Linear(64, classes)

    def forward(self, x):
        h = torch.relu(self.conv(x)).transpose(1, 2)
        y, _ = self.lstm(h)
        return self.head(y[:, -1])


class ResBlock(nn.Module):
    def __init__(self, cin, cout, s):
        super().__init__()
        self.a = bn_act(cin, cout, 3, s)
        self.b = nn.Sequential(nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout))
        self.sc = (nn.Sequential(nn.Conv2d(cin, cout, 1, s, bias=False), nn.BatchNorm2d(cout))
                   if s != 1 or cin != cout else nn.Identity())

    def forward(self, x):
        return torch.relu(self.b(self.a(x)) + self.sc(x))


class ResNetTiny(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.f = nn.Sequential(bn_act(3, 16, 3), ResBlock(16, 16, 1), ResBlock(16, 32, 2), ResBlock(32, 32, 1))
        self.head = nn.Linear(32, classes)

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.f(x), 1), 1))


class Decay(nn.Module):
    """A data-dependent loop: apply a layer until the activation is small
    (at most 16 times)."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x):
        h = x
        i = 0
        while bool(h.abs().mean() > 0.05) and i < 16:
            h = torch.tanh(self.lin(h)) * 0.75
            i += 1
        return h


def save_inputs(name, xs):
    if len(xs) == 1:
        np.save(os.path.join(OUT, name + "_input.npy"), xs[0])
        return
    for i, x in enumerate(xs):
        np.save(os.path.join(OUT, "%s_input%d.npy" % (name, i)), x)


def save_reference(name, path, xs, fallback=None, fused=True):
    """onnxruntime (CPU) on the materialized model; fallback() gives the
    outputs where onnxruntime has no CPU kernel (float16 convolutions)."""
    import onnx
    import onnxruntime as ort
    import materialize
    mpath = materialize.materialize(name, TMP, OUT)
    m = onnx.load(mpath)
    try:
        opts = ort.SessionOptions()
        if not fused:
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
        sess = ort.InferenceSession(mpath, opts, providers=["CPUExecutionProvider"])
        ys = sess.run(None, {i.name: x for i, x in zip(sess.get_inputs(), xs)})
        who = "onnxruntime" + ("" if fused else " (graph optimisations off)")
        if not fused:
            fast = ort.InferenceSession(mpath, providers=["CPUExecutionProvider"])
            zs = fast.run(None, {i.name: x for i, x in zip(fast.get_inputs(), xs)})
            er.log(name, "onnxruntime with its fusions differs by at most",
                   [float(np.abs(y.astype(np.float64) - z).max()) for y, z in zip(ys, zs)])
    except Exception as e:  # noqa: BLE001
        if fallback is None:
            raise
        er.log(name, "onnxruntime cannot run it (%s); reference from torch" % str(e).splitlines()[0])
        ys, who = fallback(), "torch"
    ops = sorted({n.op_type for n in m.graph.node})
    er.log(name, "reference", who, "nodes", len(m.graph.node), "ops", ops,
           "inputs", [(i.name, x.dtype.name, x.shape) for i, x in zip(m.graph.input, xs)])
    for i, y in enumerate(ys):
        y = np.asarray(y)
        er.log(name, "output", i, y.shape, y.dtype,
               "min %.4g max %.4g" % (y.min(), y.max()) if y.size else "empty")
    save_inputs(name, xs)
    if len(ys) == 1:
        np.save(os.path.join(OUT, name + "_ort.npy"), ys[0])
    else:
        for i, y in enumerate(ys):
            np.save(os.path.join(OUT, "%s_ort%d.npy" % (name, i)), y)


def torchscript(name, model, xs, in_names, out_names, opset=17, dynamic=None, fold=False):
    """Seeds, regenerates, estimates BatchNorm (image models), exports with
    the TorchScript exporter, writes the skeleton and the reference."""
    used = er.regen_params(model)
    if xs[0].ndim == 4 and xs[0].dtype == np.float32:
        model = er.estimate_bn(model, xs[0].shape)
    model = model.eval().cpu()
    path = os.path.join(TMP, name + ".export.onnx")
    args = tuple(torch.from_numpy(x) for x in xs)
    torch.onnx.export(model, args, path, dynamo=False, opset_version=opset, input_names=in_names,
                      output_names=out_names, do_constant_folding=fold, dynamic_axes=dynamic,
                      training=torch.onnx.TrainingMode.PRESERVE)
    n = er.skeletonize(path, name, used)
    er.log(name, "exported, regenerated tensors", n, "skeleton size",
           os.path.getsize(os.path.join(OUT, name + ".skel.onnx")))
    return model


def bert_enc():
    from transformers import BertConfig, BertModel
    cfg = BertConfig(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=128, max_position_embeddings=64, type_vocab_size=2,
                     attn_implementation="eager")

    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = BertModel(cfg)

        def forward(self, ids, mask, types):
            o = self.bert(input_ids=ids, attention_mask=mask, token_type_ids=types)
            return o.last_hidden_state, o.pooler_output

    rs = rs_for("bert_enc")
    ids = rs.randint(0, 256, size=(1, 16)).astype(np.int64)
    mask = np.ones((1, 16), np.int64)
    mask[0, 12:] = 0
    types = np.zeros((1, 16), np.int64)
    types[0, 8:] = 1
    xs = [ids, mask, types]
    torchscript("bert_enc", Wrap(), xs, ["input_ids", "attention_mask", "token_type_ids"],
                ["last_hidden_state", "pooler_output"])
    save_reference("bert_enc", None, xs)


def gpt2_dynamo():
    from transformers import GPT2Config, GPT2LMHeadModel
    cfg = GPT2Config(vocab_size=256, n_positions=32, n_embd=64, n_layer=2, n_head=2, use_cache=False,
                     attn_implementation="eager")

    class Wrap(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = GPT2LMHeadModel(cfg)

        def forward(self, ids):
            return self.m(input_ids=ids, use_cache=False).logits

    model = Wrap()
    used = er.regen_params(model)
    model.eval()
    x = rs_for("gpt2_dynamo").randint(0, 256, size=(1, 32)).astype(np.int64)
    path = os.path.join(TMP, "gpt2_dynamo.export.onnx")
    prog = torch.onnx.export(model, (torch.from_numpy(x),), dynamo=True, input_names=["input_ids"],
                             output_names=["logits"], external_data=False)
    prog.save(path, external_data=False)
    er.skeletonize(path, "gpt2_dynamo", used)
    save_reference("gpt2_dynamo", None, [x])


def image(name, build, shape, dynamic=None, batch=None):
    torch.manual_seed(regen.seed_of(name))
    x = rs_for(name).standard_normal(shape).astype(np.float32)
    torchscript(name, build(), [x], ["input"], ["output"], dynamic=dynamic)
    if batch:
        x = rs_for(name + ":run").standard_normal((batch,) + tuple(shape[1:])).astype(np.float32)
    save_reference(name, None, [x])


def cnn_f16():
    torch.manual_seed(regen.seed_of("cnn_f16"))
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    model = er.estimate_bn(er.SmallCNN(), (1, 3, 32, 32)).to(dev).half().eval()
    x = rs_for("cnn_f16").standard_normal((1, 3, 32, 32)).astype(np.float16)
    path = os.path.join(TMP, "cnn_f16.export.onnx")
    torch.onnx.export(model, (torch.from_numpy(x).to(dev),), path, dynamo=False, opset_version=17,
                      input_names=["input"], output_names=["output"], do_constant_folding=False)
    er.skeletonize(path, "cnn_f16", {})

    def by_torch():
        with torch.no_grad():
            return [model(torch.from_numpy(x).to(dev)).float().cpu().numpy().astype(np.float16)]
    save_reference("cnn_f16", None, [x], fallback=by_torch)


def int8_qdq_resnet():
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_static
    torch.manual_seed(regen.seed_of("int8_qdq_resnet"))
    shape = (1, 3, 32, 32)
    model = ResNetTiny()
    er.regen_params(model)
    model = er.estimate_bn(model, shape)
    fp32 = os.path.join(TMP, "int8_resnet_fp32.onnx")
    x = rs_for("int8_qdq_resnet").standard_normal(shape).astype(np.float32)
    torch.onnx.export(model, (torch.from_numpy(x),), fp32, dynamo=False, opset_version=13,
                      input_names=["input"], output_names=["output"], do_constant_folding=True)
    q = os.path.join(TMP, "int8_qdq_resnet.export.onnx")
    quantize_static(fp32, q, er.RandomReader(shape), quant_format=QuantFormat.QDQ,
                    activation_type=QuantType.QInt8, weight_type=QuantType.QInt8, per_channel=True)
    er.skeletonize(q, "int8_qdq_resnet", {})
    # ONNX's meaning of Q/DQ around a float Add, as the reference: onnxruntime's
    # fused QLinearAdd rounds the rescaled sum its own way (1 LSB apart)
    save_reference("int8_qdq_resnet", None, [x], fused=False)


def lstm_kws():
    torch.manual_seed(regen.seed_of("lstm_kws"))
    x = rs_for("lstm_kws").standard_normal((1, 40, 49)).astype(np.float32)
    torchscript("lstm_kws", KWS(), [x], ["input"], ["output"])
    save_reference("lstm_kws", None, [x])


def estimate_detector_bn(model, batches=4):
    """BatchNorm statistics of the backbone and head from random images (a
    detector's train mode wants targets, so its parts are run directly)."""
    for m in model.modules():
        if isinstance(m, nn.modules.batchnorm._BatchNorm):
            m.reset_running_stats()
            m.momentum = None
    g = torch.Generator().manual_seed(7)
    model.backbone.train()
    model.head.train()
    with torch.no_grad():
        for _ in range(batches):
            imgs = list(torch.rand((4, 3, 320, 320), generator=g))
            feats = model.backbone(model.transform(imgs)[0].tensors)
            model.head(list(feats.values()))
    model.eval()


def ssdlite():
    from torchvision.models.detection import ssdlite320_mobilenet_v3_large
    torch.manual_seed(regen.seed_of("ssdlite"))
    model = ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=4,
                                          detections_per_img=20, topk_candidates=50)
    used = er.regen_params(model)
    estimate_detector_bn(model)
    x = rs_for("ssdlite").random_sample((1, 3, 320, 320)).astype(np.float32)
    with torch.no_grad():
        feats = model.backbone(model.transform([torch.from_numpy(x[0])])[0].tensors)
        er.log("ssdlite feature std", [round(float(f.std()), 4) for f in feats.values()],
               "logits std", float(torch.cat([t.flatten() for t in model.head.classification_head(list(feats.values()))]).std()))
    path = os.path.join(TMP, "ssdlite.export.onnx")
    torch.onnx.export(model, ([torch.from_numpy(x[0])],), path, dynamo=False, opset_version=17,
                      input_names=["input"], output_names=["boxes", "scores", "labels"],
                      do_constant_folding=False)
    er.skeletonize(path, "ssdlite", used)
    import onnx
    m = onnx.load(os.path.join(OUT, "ssdlite.skel.onnx"))
    save_reference("ssdlite", None, [x[0]] if len(m.graph.input[0].type.tensor_type.shape.dim) == 3 else [x])


def loop_model():
    torch.manual_seed(regen.seed_of("loop_model"))
    model = torch.jit.script(Decay().eval())
    x = (rs_for("loop_model").standard_normal((1, 16)) * 2).astype(np.float32)
    path = os.path.join(TMP, "loop_model.export.onnx")
    torch.onnx.export(model, (torch.from_numpy(x),), path, dynamo=False, opset_version=17,
                      input_names=["input"], output_names=["output"])
    er.skeletonize(path, "loop_model", {})
    save_reference("loop_model", None, [x])


def mobilenet_v3_small_64():
    image("mobilenet_v3_small_64", lambda: er.tv("mobilenet_v3_small"), (1, 3, 64, 64))


def small_cnn_dyn():
    image("small_cnn_dyn", er.SmallCNN, (1, 3, 32, 32),
          dynamic={"input": {0: "batch"}, "output": {0: "batch"}}, batch=3)


def timm_net(name):
    """A timm architecture with random weights (a ConvNeXt for the GPU speed
    tables; run_models.py builds the same module)."""
    import timm
    return timm.create_model(TIMM[name], pretrained=False)


# the speed-table models from timm: export name -> timm architecture
TIMM = {"convnext_atto": "convnext_atto"}


def convnext_atto():
    """ConvNeXt (7x7 depthwise, channels-last LayerNorm, GELU, layer scale)
    at 224x224, the TorchScript exporter."""
    image("convnext_atto", lambda: timm_net("convnext_atto"), (1, 3, 224, 224))


JOBS = {
    "convnext_atto": convnext_atto,
    "bert_enc": bert_enc,
    "gpt2_dynamo": gpt2_dynamo,
    "mobilenet_v3_small_64": mobilenet_v3_small_64,
    "unet_tiny": lambda: image("unet_tiny", UNetTiny, (1, 3, 32, 32)),
    "deeplab_tiny": lambda: image("deeplab_tiny", DeepLabTiny, (1, 3, 64, 64)),
    "cnn_f16": cnn_f16,
    "int8_qdq_resnet": int8_qdq_resnet,
    "lstm_kws": lstm_kws,
    "small_cnn_dyn": small_cnn_dyn,
    "ssdlite": ssdlite,
    "loop_model": loop_model,
}


def main():
    os.makedirs(OUT, exist_ok=True)
    os.makedirs(TMP, exist_ok=True)
    import onnx
    import onnxruntime
    import torchvision
    import transformers
    er.log("torch", torch.__version__, "torchvision", torchvision.__version__, "transformers",
           transformers.__version__, "onnx", onnx.__version__, "onnxruntime", onnxruntime.__version__)
    for name, job in JOBS.items():
        if ONLY and name not in ONLY:
            continue
        t0 = time.time()
        try:
            job()
            er.log(name, "done in %.1fs" % (time.time() - t0))
        except Exception:  # noqa: BLE001
            er.log(name, "FAILED\n" + traceback.format_exc())
    with open(os.path.join(OUT, "log_coverage.txt"), "w") as f:
        f.write("\n".join(er.LOG) + "\n")


if __name__ == "__main__":
    main()
