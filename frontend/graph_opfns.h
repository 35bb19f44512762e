/* frontend/graph_opfns.h: the shape rule, kernel (and, for compute
 * operators, codelet binding) of every supported ONNX operator, declared
 * once: the files that define them (graph_layout.c, graph_index.c,
 * graph_conv.c, graph_pool.c, graph_matmul.c, graph_compute.c) and the
 * operator table (graph_ops.c) that refers to them all include this. */
#ifndef COV_FRONTEND_GRAPH_OPFNS_H
#define COV_FRONTEND_GRAPH_OPFNS_H

#include "frontend/graph.h"

/* graph_layout.c */
GRAPH_DECLARE_OP(identity);
GRAPH_DECLARE_OP(dropout);
GRAPH_DECLARE_OP(reshape);
GRAPH_DECLARE_OP(flatten);
GRAPH_DECLARE_OP(squeeze);
GRAPH_DECLARE_OP(unsqueeze);
GRAPH_DECLARE_OP(transpose);
GRAPH_DECLARE_OP(concat);
GRAPH_DECLARE_OP(split);
GRAPH_DECLARE_OP(expand);
/* graph_index.c */
GRAPH_DECLARE_OP(slice);
GRAPH_DECLARE_OP(gather);
GRAPH_DECLARE_OP(pad);
GRAPH_DECLARE_OP(shape);
GRAPH_DECLARE_OP(cast);
GRAPH_DECLARE_OP(constant);
GRAPH_DECLARE_OP(constant_of_shape);
/* graph_conv.c */
GRAPH_DECLARE_COMPUTE(conv);
GRAPH_DECLARE_COMPUTE(conv_transpose);
/* graph_pool.c */
GRAPH_DECLARE_COMPUTE(maxpool);
GRAPH_DECLARE_COMPUTE(avgpool);
GRAPH_DECLARE_COMPUTE(global_avgpool);
GRAPH_DECLARE_COMPUTE(global_maxpool);
/* graph_matmul.c */
GRAPH_DECLARE_COMPUTE(gemm);
GRAPH_DECLARE_COMPUTE(matmul);
/* graph_compute.c */
GRAPH_DECLARE_COMPUTE(binary);
GRAPH_DECLARE_COMPUTE(pow);
GRAPH_DECLARE_COMPUTE(variadic);
GRAPH_DECLARE_COMPUTE(unary);
GRAPH_DECLARE_COMPUTE(clip);
GRAPH_DECLARE_COMPUTE(leaky_relu);
GRAPH_DECLARE_COMPUTE(gelu);
GRAPH_DECLARE_COMPUTE(softmax);
GRAPH_DECLARE_COMPUTE(layernorm);
GRAPH_DECLARE_COMPUTE(batchnorm);
/* graph_elementwise.c */
GRAPH_DECLARE_COMPUTE(unary_ext);
GRAPH_DECLARE_COMPUTE(binary_ext);
GRAPH_DECLARE_COMPUTE(where);
GRAPH_DECLARE_COMPUTE(sum);
/* graph_reduce.c */
GRAPH_DECLARE_COMPUTE(reduce);
GRAPH_DECLARE_COMPUTE(argmax);
GRAPH_DECLARE_COMPUTE(cumsum);
/* graph_resize.c */
GRAPH_DECLARE_COMPUTE(resize);
/* graph_einsum.c */
GRAPH_DECLARE_COMPUTE(einsum);
/* graph_norm.c */
GRAPH_DECLARE_COMPUTE(instance_norm);
GRAPH_DECLARE_COMPUTE(lp_norm);
/* graph_select.c */
GRAPH_DECLARE_OP(size);
GRAPH_DECLARE_OP(cast_like);
GRAPH_DECLARE_OP(range);
GRAPH_DECLARE_OP(eye_like);
GRAPH_DECLARE_OP(trilu);
GRAPH_DECLARE_OP(tile);
GRAPH_DECLARE_OP(depth_space);
GRAPH_DECLARE_OP(gather_elements);
GRAPH_DECLARE_OP(scatter_elements);
GRAPH_DECLARE_OP(gather_nd);
GRAPH_DECLARE_OP(scatter_nd);
GRAPH_DECLARE_OP(one_hot);
GRAPH_DECLARE_OP(topk);
/* graph_quant.c */
GRAPH_DECLARE_COMPUTE(quantize_linear);
GRAPH_DECLARE_COMPUTE(dequantize_linear);
GRAPH_DECLARE_COMPUTE(dynamic_quantize_linear);
GRAPH_DECLARE_COMPUTE(qconv);
GRAPH_DECLARE_COMPUTE(qmatmul);
GRAPH_DECLARE_COMPUTE(qgemm);
/* graph_localnorm.c */
GRAPH_DECLARE_COMPUTE(lrn);
GRAPH_DECLARE_COMPUTE(mvn);
/* graph_reverse.c */
GRAPH_DECLARE_OP(reverse_sequence);
/* graph_signal.c */
GRAPH_DECLARE_COMPUTE(window);
GRAPH_DECLARE_COMPUTE(dft);
GRAPH_DECLARE_COMPUTE(stft);
/* graph_melweight.c */
GRAPH_DECLARE_COMPUTE(mel_weight);
/* graph_unpool.c */
GRAPH_DECLARE_OP(max_unpool);
/* graph_gridsample.c */
GRAPH_DECLARE_COMPUTE(grid_sample);
/* graph_roialign.c */
GRAPH_DECLARE_COMPUTE(roi_align);
/* graph_det.c */
GRAPH_DECLARE_COMPUTE(det);
/* graph_control.c, graph_loop.c */
GRAPH_DECLARE_OP(if);
GRAPH_DECLARE_OP(loop);
GRAPH_DECLARE_OP(scan);
/* graph_dynamic.c, graph_unique.c, graph_nms.c */
GRAPH_DECLARE_OP(nonzero);
GRAPH_DECLARE_OP(compress);
GRAPH_DECLARE_OP(unique);
GRAPH_DECLARE_OP(nms);
/* graph_tfidf.c */
GRAPH_DECLARE_OP(tfidf);
/* graph_sequence.c */
GRAPH_DECLARE_OP(sequence);
GRAPH_DECLARE_OP(seqmap);
/* graph_loss.c */
GRAPH_DECLARE_COMPUTE(loss);
/* graph_rnn.c */
GRAPH_DECLARE_COMPUTE(rnn);

#endif
