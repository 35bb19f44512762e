"""Bad input for the computation and data-movement operators LRN, Celu,
MeanVarianceNormalization, BitShift, ReverseSequence, the window functions,
DFT, STFT, MelWeightMatrix, MaxUnpool, GridSample, RoiAlign, Det,
MaxPool's Indices, TfIdfVectorizer, and the training modes of
BatchNormalization and Dropout: cases for test_bad_ops.py (its `case`
helper adds each). Sizes read from inputs (window size, dft_length,
frame_step, num_mel_bins) are refused past their bound before anything is
allocated."""
import numpy as np
from onnx import TensorProto, numpy_helper

F, I32, I64, B = TensorProto.FLOAT, TensorProto.INT32, TensorProto.INT64, TensorProto.BOOL
U8, U16 = TensorProto.UINT8, TensorProto.UINT16


def const(name, arr):
    return numpy_helper.from_array(np.asarray(arr), name)


def norm_cases(case):
    case("celu_int", "Celu", [("x", I32, [3])], "f32, f16, bf16 or f64", opset=12)
    case("celu_alpha_zero", "Celu", [("x", F, [3])], "alpha 0 must not be 0",
         attrs={"alpha": 0.0}, opset=12)
    case("lrn_no_size", "LRN", [("x", F, [1, 3, 2, 2])], "attribute 'size' is required")
    case("lrn_size_zero", "LRN", [("x", F, [1, 3, 2, 2])], "size 0 must be positive",
         attrs={"size": 0})
    case("lrn_size_huge", "LRN", [("x", F, [1, 3, 2, 2])], "wider than twice the 3 channels",
         attrs={"size": 1 << 40})
    case("lrn_rank", "LRN", [("x", F, [3, 4])], "expected [N, C, D1, ...]", attrs={"size": 3})
    case("lrn_int", "LRN", [("x", I32, [1, 3, 2])], "f32, f16, bf16 or f64", attrs={"size": 3})
    case("mvn_axis", "MeanVarianceNormalization", [("x", F, [1, 3, 2])], "axis 3 is out of range",
         attrs={"axes": [0, 3]})
    case("mvn_axis_twice", "MeanVarianceNormalization", [("x", F, [1, 3, 2])],
         "axis 1 is given twice", attrs={"axes": [1, -2]})
    case("mvn_int", "MeanVarianceNormalization", [("x", I64, [1, 3, 2, 2])], "f32, f16, bf16 or f64")
    case("mvn_default_rank", "MeanVarianceNormalization", [("x", F, [3, 2])], "3 axes")


def training_mode_cases(case):
    """BatchNormalization's training mode (opset 14 on) and Dropout's
    (ratio 0 only: above it the output is a random draw)."""
    x = ("x", F, [2, 3, 4])
    stats = [const(k, np.ones(3, np.float32)) for k in ("s", "b", "m", "v")]
    case("batchnorm_training_mode_2", "BatchNormalization", [x] + stats,
         "training_mode is 2; it must be 0 or 1", attrs={"training_mode": 2}, opset=15)
    case("batchnorm_running_outputs_inference", "BatchNormalization", [x] + stats,
         "output 1 (running_mean) exists only in training mode", n_out=3, opset=15)
    case("batchnorm_four_outputs", "BatchNormalization", [x] + stats, "at most 3",
         attrs={"training_mode": 1}, n_out=4, opset=15)
    case("batchnorm_old_training_outputs", "BatchNormalization", [x] + stats,
         "opsets before 14 (training mode) are not supported", n_out=3, opset=9)
    case("batchnorm_training_int", "BatchNormalization", [("x", I32, [2, 3, 4])] + stats,
         "f32, f16, bf16 or f64", attrs={"training_mode": 1}, n_out=3, opset=15)
    case("batchnorm_training_stats_shape", "BatchNormalization",
         [x] + stats[:2] + [const("m", np.ones(4, np.float32)), stats[3]],
         "must be 1-D with one value per channel", attrs={"training_mode": 1}, n_out=3, opset=15)
    case("batchnorm_training_empty_batch", "BatchNormalization", [("x", F, [0, 3, 4])] + stats,
         "cannot average over an empty batch", attrs={"training_mode": 1}, n_out=3, opset=15,
         feed=[np.zeros((0, 3, 4), np.float32)])
    r, t = ("r", F, []), ("t", B, [])
    true = const("t", np.array(True))
    case("dropout_training_random", "Dropout", [x, const("r", np.array(0.5, np.float32)), true],
         "training_mode is true and ratio is 0.5: the output and mask depend on a random draw",
         n_out=2)
    case("dropout_training_default_ratio", "Dropout", [x, "", true], "ratio is 0.5", n_out=2)
    case("dropout_ratio_one", "Dropout", [x, const("r", np.array(1.0, np.float32)), true],
         "ratio is 1; it must be in [0, 1)")
    case("dropout_ratio_negative", "Dropout", [x, const("r", np.array(-0.25, np.float32))],
         "ratio is -0.25; it must be in [0, 1)")
    case("dropout_ratio_nan", "Dropout", [x, const("r", np.array(np.nan, np.float32))],
         "must be in [0, 1)")
    case("dropout_ratio_int", "Dropout", [x, const("r", np.array(0, np.int64)), true],
         "ratio must be a float scalar")
    case("dropout_ratio_two", "Dropout", [x, const("r", np.zeros(2, np.float32)), true],
         "ratio 'r' must hold exactly one element")
    case("dropout_training_two", "Dropout", [x, const("r", np.array(0, np.float32)),
                                             const("t", np.array([True, False]))],
         "training_mode must hold exactly one element")
    case("dropout_training_float", "Dropout", [x, const("r", np.array(0, np.float32)),
                                               const("t", np.array(1.0, np.float32))],
         "training_mode must be bool")
    # Fed at run time: decided by the run's own check of the values.
    case("dropout_training_fed", "Dropout", [x, r, t], "ratio is 0.25: the output and mask",
         n_out=2, feed=[np.ones((2, 3, 4), np.float32), np.array(0.25, np.float32),
                        np.array(True)])
    case("dropout_ratio_fed", "Dropout", [x, r, t], "ratio is 1.5; it must be in [0, 1)",
         feed=[np.ones((2, 3, 4), np.float32), np.array(1.5, np.float32), np.array(False)])


def tfidf_cases(case):
    x = ("x", I64, [2, 6])
    ok = dict(mode="TF", min_gram_length=1, max_gram_length=2, max_skip_count=0,
              ngram_counts=[0, 2], ngram_indexes=[0, 1, 2], pool_int64s=[5, 6, 5, 6])

    def tf(name, text, inputs=(x,), feed=None, drop=(), **over):
        attrs = {k: v for k, v in dict(ok, **over).items() if k not in drop}
        case("tfidf_" + name, "TfIdfVectorizer", list(inputs), text, attrs=attrs, opset=9, feed=feed)
    tf("no_mode", "attribute 'mode' is required", drop=("mode",))
    tf("mode", "mode 'BM25' is not TF, IDF or TFIDF", mode="BM25")
    tf("strings", "pool_strings (string n-grams) is not supported", drop=("pool_int64s",),
       pool_strings=["a", "b"])
    tf("no_pool", "attribute 'pool_int64s' is required", drop=("pool_int64s",))
    tf("min_max", "must be given with 1 <= min <= max", min_gram_length=3)
    tf("skip", "must be given with 1 <= min <= max and skip >= 0", max_skip_count=-1)
    tf("gram_huge", "max_gram_length 65 is more than 64", max_gram_length=65)
    tf("counts_short", "ngram_counts has 1 entries; max_gram_length 2 needs", ngram_counts=[0])
    tf("counts_split", "ngram_counts[1] = 1 does not start a whole number of 2-grams",
       ngram_counts=[0, 1])
    tf("counts_past", "within the pool of 4 tokens", ngram_counts=[0, 9])
    tf("index_count", "the pool holds 3 n-grams but ngram_indexes has 2", ngram_indexes=[0, 1])
    tf("index_negative", "ngram_indexes[1] is -1; it must be in [0, 268435456)",
       ngram_indexes=[0, -1, 2])
    tf("index_huge", "ngram_indexes[2] is 1099511627776", ngram_indexes=[0, 1, 1 << 40])
    tf("weights", "weights has 1 entries; there are 3 n-grams", weights=[1.0])
    tf("float_x", "it must be int32 or int64 tokens", inputs=[("x", F, [2, 6])])
    tf("rank3", "X has rank 3; it must be [C] or [N, C]", inputs=[("x", I64, [1, 2, 6])])
    big = ("x", I32, [1, 70000])
    tf("work_bomb", "would take more than 4294967296 lookups", inputs=[big],
       feed=[np.zeros((1, 70000), np.int32)], max_skip_count=70000, max_gram_length=2)


def bits_cases(case):
    case("bitshift_float", "BitShift", [("a", F, [3]), ("b", F, [3])], "takes u8, u16, u32 or u64",
         attrs={"direction": "LEFT"}, opset=11)
    case("bitshift_signed", "BitShift", [("a", I32, [3]), ("b", I32, [3])],
         "takes u8, u16, u32 or u64", attrs={"direction": "LEFT"}, opset=11)
    case("bitshift_direction", "BitShift", [("a", U8, [3]), ("b", U8, [3])],
         "direction 'UP' is not LEFT or RIGHT", attrs={"direction": "UP"}, opset=11)
    case("bitshift_no_direction", "BitShift", [("a", U8, [3]), ("b", U8, [3])],
         "attribute 'direction' is required", opset=11)
    case("bitshift_dtypes", "BitShift", [("a", U8, [3]), ("b", U16, [3])], "differ in dtype",
         attrs={"direction": "RIGHT"}, opset=11)
    case("bitshift_shapes", "BitShift", [("a", U8, [2, 3]), ("b", U8, [4])], "cannot be broadcast",
         attrs={"direction": "RIGHT"}, opset=11)
    case("revseq_axes", "ReverseSequence", [("x", F, [4, 2]), ("l", I64, [2])],
         "must be 0 and 1 in some order", attrs={"batch_axis": 0, "time_axis": 0}, opset=10)
    case("revseq_count", "ReverseSequence", [("x", F, [4, 2]), ("l", I64, [3])],
         "has 3 lengths for a batch of 2", opset=10)
    case("revseq_lens_dtype", "ReverseSequence", [("x", F, [4, 2]), ("l", I32, [2])],
         "must be int64", opset=10)
    case("revseq_rank", "ReverseSequence", [("x", F, [4]), ("l", I64, [4])], "expected >= 2",
         opset=10)
    case("revseq_too_long", "ReverseSequence", [("x", F, [4, 2]), ("l", I64, [2])],
         "sequence length 5 (element 1 of 'l') is outside 0..4", opset=10,
         feed=[np.zeros((4, 2), np.float32), np.array([1, 5], np.int64)])
    case("revseq_negative", "ReverseSequence", [("x", F, [4, 2]), const("l", np.array([-1, 2]))],
         "sequence length -1 (element 0 of 'l') is outside 0..4", opset=10)


def signal_cases(case):
    for op in ("HannWindow", "HammingWindow", "BlackmanWindow"):
        case(op.lower() + "_huge", op, [("n", I64, [])], "size 1099511627776 is outside 1..1048576",
             opset=17, feed=[np.array(1 << 40, np.int64)])
    case("hannwindow_zero", "HannWindow", [const("n", np.array(0, np.int32))],
         "size 0 is outside 1..", opset=17)
    case("hannwindow_symmetric_one", "HannWindow", [const("n", np.array(1, np.int32))],
         "needs size >= 2", attrs={"periodic": 0}, opset=17)
    case("hannwindow_dtype", "HannWindow", [const("n", np.array(4, np.int32))],
         "output_datatype 6 is not supported", attrs={"output_datatype": 6}, opset=17)
    case("hannwindow_float_size", "HannWindow", [("n", F, [])], "must be int32 or int64", opset=17)
    case("hannwindow_not_scalar", "HannWindow", [("n", I64, [2])], "must be a scalar", opset=17)
    x = ("x", F, [1, 8, 1])
    case("dft_last_axis", "DFT", [x], "the signal axis must come before it", attrs={"axis": 2},
         opset=17)
    case("dft_complex_axis", "DFT", [("x", F, [1, 8, 3])], "expected 1 (real) or 2 (complex)",
         opset=17)
    case("dft_length_huge", "DFT", [x, const("n", np.array(1 << 40))],
         "dft_length 1099511627776 is outside 1..1048576", opset=17)
    case("dft_length_run", "DFT", [x, ("n", I64, [])], "dft_length 0 is outside 1..", opset=17,
         feed=[np.zeros((1, 8, 1), np.float32), np.array(0, np.int64)])
    case("dft_work_bound", "DFT", [x, const("n", np.array(1 << 20))], "would execute more than",
         opset=17, feed=[np.ones((1, 8, 1), np.float32)])
    case("dft_onesided_inverse", "DFT", [x], "onesided=1 needs a real input and a forward",
         attrs={"onesided": 1, "inverse": 1}, opset=17)
    case("dft_int", "DFT", [("x", I32, [1, 8, 1])], "f32, f16, bf16 or f64", opset=17)
    case("dft_rank", "DFT", [("x", F, [8])], "expected [..., signal, 1 or 2]", opset=17)
    case("dft_axis_input", "DFT", [x, const("n", np.array(8)), ("a", I64, [2])],
         "must be an int32 or int64 scalar", opset=20)
    case("dft_axis_input_last", "DFT", [x, const("n", np.array(8)), ("a", I64, [])],
         "the signal axis must come before it", opset=20, feed=[np.zeros((1, 8, 1), np.float32),
                                                              np.array(-1, np.int64)])
    s = ("s", F, [1, 64, 1])
    case("stft_no_frame", "STFT", [s, const("step", np.array(4))],
         "needs a window or a frame_length", opset=17)
    case("stft_frame_too_long", "STFT", [s, const("step", np.array(4)), "",
                                         const("len", np.array(65))],
         "frames of 65 points do not fit in the 64 samples", opset=17)
    case("stft_step_zero", "STFT", [s, const("step", np.array(0)), const("w", np.ones(8, np.float32))],
         "frame_step 0 is outside 1..", opset=17)
    case("stft_step_huge", "STFT", [s, ("step", I64, []), const("w", np.ones(8, np.float32))],
         "frame_step 1099511627776 is outside", opset=17,
         feed=[np.zeros((1, 64, 1), np.float32), np.array(1 << 40, np.int64)])
    case("stft_window_length", "STFT", [s, const("step", np.array(4)),
                                        const("w", np.ones(8, np.float32)),
                                        const("len", np.array(16))],
         "frame_length 16 differs from the window's 8 points", opset=17)
    case("stft_signal_rank", "STFT", [("s", F, [64]), const("step", np.array(4)),
                                      const("w", np.ones(8, np.float32))],
         "must be [batch, length, 1 or 2]", opset=17)

    def mel(name, vals, text, attrs=None, feed=None):
        names = ["bins", "dft", "rate", "lo", "hi"]
        ins = [const(nm, v) if v is not None else (nm, I64, []) for nm, v in zip(names, vals)]
        case("melweight_" + name, "MelWeightMatrix", ins, text, attrs=attrs, opset=17, feed=feed)
    f32 = np.float32
    mel("bins_huge", [np.array(1 << 40), np.array(16), np.array(8000), f32(0), f32(4000)],
        "num_mel_bins 1099511627776 is outside 1..65536")
    mel("dft_huge", [np.array(8), None, np.array(8000), f32(0), f32(4000)],
        "dft_length 1099511627776 is outside 1..1048576", feed=[np.array(1 << 40, np.int64)])
    mel("rate_zero", [np.array(8), np.array(16), np.array(0), f32(0), f32(4000)],
        "sample_rate 0 is outside 1..")
    mel("edges", [np.array(8), np.array(16), np.array(8000), f32(3000), f32(1000)],
        "must satisfy 0 <= lower < upper <= sample_rate / 2")
    mel("nyquist", [np.array(8), np.array(16), np.array(8000), f32(0), f32(5000)],
        "must satisfy 0 <= lower < upper <= sample_rate / 2")
    mel("dtype", [np.array(8), np.array(16), np.array(8000), f32(0), f32(4000)],
        "output_datatype 7 is not supported", attrs={"output_datatype": 7})
    mel("float_bins", [f32(8), np.array(16), np.array(8000), f32(0), f32(4000)],
        "must be int32 or int64")


def compute_op_cases(case):
    norm_cases(case)
    training_mode_cases(case)
    tfidf_cases(case)
    bits_cases(case)
    signal_cases(case)
    unpool_cases(case)
    sampling_cases(case)


def unpool_cases(case):
    x, i = ("x", F, [1, 1, 2, 2]), ("i", I64, [1, 1, 2, 2])
    case("maxunpool_no_kernel", "MaxUnpool", [x, i], "attribute 'kernel_shape' is required",
         opset=11)
    case("maxunpool_kernel_len", "MaxUnpool", [x, i], "must have 2, 2 and 4 values",
         attrs={"kernel_shape": [2]}, opset=11)
    case("maxunpool_stride", "MaxUnpool", [x, i], "must be positive",
         attrs={"kernel_shape": [2, 2], "strides": [0, 2]}, opset=11)
    case("maxunpool_huge_kernel", "MaxUnpool", [x, i], "each at most 2^20",
         attrs={"kernel_shape": [1 << 40, 2]}, opset=11)
    case("maxunpool_index_dtype", "MaxUnpool", [x, ("i", I32, [1, 1, 2, 2])], "must be int64",
         attrs={"kernel_shape": [2, 2]}, opset=11)
    case("maxunpool_index_shape", "MaxUnpool", [x, ("i", I64, [1, 1, 4])],
         "must have the shape of 'x'", attrs={"kernel_shape": [2, 2]}, opset=11)
    case("maxunpool_output_shape", "MaxUnpool", [x, i, const("s", np.array([1, 1, 2, 2]))],
         "output_shape dim 2 is 2; expected at least 3", attrs={"kernel_shape": [2, 2]}, opset=11)
    case("maxunpool_index_range", "MaxUnpool", [x, i],
         "index 9 (element 3 of 'i') is outside the 9 elements", attrs={"kernel_shape": [2, 2]},
         opset=11, feed=[np.ones((1, 1, 2, 2), np.float32),
                         np.array([0, 1, 2, 9], np.int64).reshape(1, 1, 2, 2)])


def sampling_cases(case):
    x, grid = ("x", F, [1, 1, 4, 4]), ("g", F, [1, 3, 3, 2])
    case("gridsample_mode", "GridSample", [x, grid], "mode 'area' is not one of nearest, bilinear",
         attrs={"mode": "area"}, opset=16)
    case("gridsample_linear_16", "GridSample", [x, grid], "mode 'linear' is not one of",
         attrs={"mode": "linear"}, opset=16)
    case("gridsample_padding", "GridSample", [x, grid], "padding_mode 'wrap' is not zeros",
         attrs={"padding_mode": "wrap"}, opset=16)
    case("gridsample_align", "GridSample", [x, grid], "align_corners 2 is not 0 or 1",
         attrs={"align_corners": 2}, opset=16)
    case("gridsample_3d", "GridSample", [("x", F, [1, 1, 2, 4, 4]), ("g", F, [1, 2, 3, 3, 3])],
         "covenant samples 2-D images", opset=20)
    case("gridsample_grid_last", "GridSample", [x, ("g", F, [1, 3, 3, 3])],
         "must be [N, H_out, W_out, 2]", opset=16)
    case("gridsample_batch", "GridSample", [x, ("g", F, [2, 3, 3, 2])], "has batch 2, the input 1",
         opset=16)
    case("gridsample_grid_dtype", "GridSample", [x, ("g", TensorProto.DOUBLE, [1, 3, 3, 2])],
         "is f64 but the input is f32", opset=16)
    case("gridsample_int", "GridSample", [("x", I32, [1, 1, 4, 4]), ("g", I32, [1, 3, 3, 2])],
         "f32, f16, bf16 or f64", opset=16)
    r, b = ("r", F, [2, 4]), ("b", I64, [2])
    case("roialign_mode", "RoiAlign", [x, r, b], "mode 'sum' is not avg or max",
         attrs={"mode": "sum"}, opset=16)
    case("roialign_ctm", "RoiAlign", [x, r, b], "coordinate_transformation_mode 'x' is not",
         attrs={"coordinate_transformation_mode": "x"}, opset=16)
    case("roialign_output", "RoiAlign", [x, r, b], "must be in 1..65536",
         attrs={"output_height": 0}, opset=16)
    case("roialign_huge_output", "RoiAlign", [x, r, b], "must be in 1..65536",
         attrs={"output_width": 1 << 40}, opset=16)
    case("roialign_rois_shape", "RoiAlign", [x, ("r", F, [2, 5]), b], "must be [num_rois, 4]",
         opset=16)
    case("roialign_count", "RoiAlign", [x, r, ("b", I64, [3])], "one per row of 'r'", opset=16)
    case("roialign_index_dtype", "RoiAlign", [x, r, ("b", I32, [2])], "must be int64", opset=16)
    case("roialign_batch_index", "RoiAlign", [x, r, b], "batch index 3 (element 1 of 'b') is outside 0..0",
         opset=16, feed=[np.zeros((1, 1, 4, 4), np.float32), np.zeros((2, 4), np.float32),
                         np.array([0, 3], np.int64)])
    case("roialign_nan", "RoiAlign", [x, r, b], "region 0 of 'r' is not finite", opset=16,
         feed=[np.zeros((1, 1, 4, 4), np.float32),
               np.array([[0, 0, np.nan, 1], [0, 0, 1, 1]], np.float32), np.zeros(2, np.int64)])
    case("roialign_adaptive_huge", "RoiAlign", [x, r, b], "sampling grid per bin; at most 1024",
         opset=16, feed=[np.zeros((1, 1, 4, 4), np.float32),
                         np.array([[0, 0, 1e9, 1e9], [0, 0, 1, 1]], np.float32),
                         np.zeros(2, np.int64)])
    case("det_square", "Det", [("x", F, [2, 3])], "ends in 2 x 3 matrices", opset=11)
    case("det_rank", "Det", [("x", F, [3])], "expected [..., M, M]", opset=11)
    case("det_int", "Det", [("x", I64, [2, 2])], "f32, f16, bf16 or f64", opset=11)
    case("maxpool_storage_order", "MaxPool", [("x", F, [1, 1, 4, 4])], "storage_order 2 is not 0 or 1",
         attrs={"kernel_shape": [2, 2], "storage_order": 2}, opset=12, n_out=2)
    case("maxpool_indices_3d", "MaxPool", [("x", F, [1, 1, 4, 4, 4])],
         "Indices output of a 3-D MaxPool", attrs={"kernel_shape": [2, 2, 2]}, opset=12, n_out=2)
