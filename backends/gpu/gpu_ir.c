/* backends/gpu/gpu_ir.c: what every kernel lowering shares: constants,
 * intrinsic calls, the builder state's types, and kernel creation. */
#include <string.h>

#include "backends/gpu/gpu_ir.h"

LLVMValueRef gpu_i32(gpu_gen *g, long long v) { return LLVMConstInt(g->i32, (unsigned long long)v, 1); }

LLVMValueRef gpu_call_intrinsic(gpu_gen *g, const char *name, LLVMTypeRef *overloads, int n_over,
                                LLVMValueRef *args, int n_args) {
  unsigned id = LLVMLookupIntrinsicID(name, strlen(name));
  LLVMValueRef f = LLVMGetIntrinsicDeclaration(g->mod, id, overloads, (size_t)n_over);
  return LLVMBuildCall2(g->b, LLVMGlobalGetValueType(f), f, args, (unsigned)n_args, "");
}

cov_status gpu_gen_init(gpu_gen *g, const gpu_plan *plan, const gpu_target_ops *target, LLVMModuleRef mod) {
  g->ctx = LLVMGetModuleContext(mod);
  g->mod = mod;
  g->plan = plan;
  g->target = target;
  g->i1 = LLVMInt1TypeInContext(g->ctx);
  g->i8 = LLVMInt8TypeInContext(g->ctx);
  g->i16 = LLVMInt16TypeInContext(g->ctx);
  g->i32 = LLVMInt32TypeInContext(g->ctx);
  g->i64 = LLVMInt64TypeInContext(g->ctx);
  g->f16 = LLVMHalfTypeInContext(g->ctx);
  g->bf16 = LLVMBFloatTypeInContext(g->ctx);
  g->f32 = LLVMFloatTypeInContext(g->ctx);
  g->gptr = LLVMPointerTypeInContext(g->ctx, target->global_as);
  g->sptr = LLVMPointerTypeInContext(g->ctx, target->shared_as);
  switch (plan->prob.in_dtype) {
  case COV_F16: g->in_t = g->f16; break;
  case COV_BF16: g->in_t = g->bf16; break;
  case COV_F32: g->in_t = g->f32; break;
  default: return cov_error(COV_UNSUPPORTED, GPU_PROB_LOC(&plan->prob), "GPU lowering: input dtype %s is not supported",
                            cov_dtype_name(plan->prob.in_dtype));
  }
  return NULL;
}

void gpu_add_kernel(gpu_gen *g, const char *name) { gpu_add_kernel_n(g, name, 4); }

void gpu_add_kernel_n(gpu_gen *g, const char *name, int n) {
  LLVMTypeRef params[GPU_KERNEL_MAX_PARAMS];
  if (n > GPU_KERNEL_MAX_PARAMS) n = GPU_KERNEL_MAX_PARAMS;
  for (int i = 0; i < n; i++) params[i] = g->gptr;
  g->fn = LLVMAddFunction(g->mod, name, LLVMFunctionType(LLVMVoidTypeInContext(g->ctx), params, (unsigned)n, 0));
  for (unsigned i = 0; i < (unsigned)n; i++) {
    const char *attr = "noalias";
    LLVMAddAttributeAtIndex(g->fn, i + 1, LLVMCreateEnumAttribute(g->ctx, LLVMGetEnumAttributeKindForName(attr, strlen(attr)), 0));
  }
  g->target->mark_kernel(g, g->fn);
  g->b = LLVMCreateBuilderInContext(g->ctx);
  LLVMPositionBuilderAtEnd(g->b, LLVMAppendBasicBlockInContext(g->ctx, g->fn, "entry"));
}

