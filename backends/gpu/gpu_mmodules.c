/* backends/gpu/gpu_mmodules.c: a compiled model's code (gpu_mplan.h):
 * every launch's kernel built once, launches of equal kernels (repeated
 * blocks of a network) sharing its module and name; a copy's grid and
 * shared memory set from its final form (the plan's passes fuse work into
 * copies, which changes how a transposing copy is scheduled). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "backends/gpu/gpu_driver.h"
#include "backends/gpu/gpu_manifest.h"
#include "backends/gpu/gpu_mplan.h"
#include "backends/gpu/gpu_vendor.h"
#include "common/grow.h"

static int ew_equal(const gpu_ew *a, const gpu_ew *b) {
  if (a->kind == GPU_EW_CODELET || b->kind == GPU_EW_CODELET)
    return a->kind == b->kind && !memcmp(&a->cdl, &b->cdl, sizeof a->cdl);
  const int64_t va[] = {a->kind, a->out_dtype, a->in_dtype, a->n, a->s0, a->d0, a->run, a->rep[0], a->rep[1], a->rep[2],
                        a->ss[0], a->ss[1], a->ss[2], a->ds[0], a->ds[1], a->ds[2], a->N, a->C, a->H,
                        a->W, a->K, a->R, a->S, a->P, a->Q, a->sh, a->sw, a->pt, a->pl, a->dh, a->dw, a->groups,
                        a->bias, a->also, a->scale_hw, a->post, a->V, a->D, a->mul_c, a->mul_hw, a->mul_img, a->mul_fn,
                        a->rq, a->r0, a->r1, a->dual};
  const int64_t vb[] = {b->kind, b->out_dtype, b->in_dtype, b->n, b->s0, b->d0, b->run, b->rep[0], b->rep[1], b->rep[2],
                        b->ss[0], b->ss[1], b->ss[2], b->ds[0], b->ds[1], b->ds[2], b->N, b->C, b->H,
                        b->W, b->K, b->R, b->S, b->P, b->Q, b->sh, b->sw, b->pt, b->pl, b->dh, b->dw, b->groups,
                        b->bias, b->also, b->scale_hw, b->post, b->V, b->D, b->mul_c, b->mul_hw, b->mul_img, b->mul_fn,
                        b->rq, b->r0, b->r1, b->dual};
  return !memcmp(va, vb, sizeof va) && a->post0 == b->post0 && a->post1 == b->post1 &&
         a->mul0 == b->mul0 && a->mul1 == b->mul1;
}

/* the plan's description (problem, tile, copies, layout, launch): equal
 * descriptions build equal kernels */
static char *plan_key(const gpu_plan *p) {
  json_t *j = gpu_plan_json(p);
  char *s = json_dumps(j, JSON_COMPACT | JSON_SORT_KEYS);
  json_decref(j);
  return s;
}

/* Every launch's code: matrix kernels through gpu_build_kernel (their
 * NHWC transform in the same module), generic ones through
 * gpu_build_ew_kernel, one module each; launches of an equal kernel share
 * its module and name (repeated blocks of a network). */
cov_status gpu_model_build_modules(gpu_model_plan *p, const gpu_target *t) {
  char **keys = calloc((size_t)p->n_steps + 1, sizeof *keys);
  if (!keys) return cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
  cov_status st = NULL;
  for (int i = 0; i < p->n_steps && !st; i++) {
    gpu_mstep *s = &p->steps[i];
    if (s->op != GPU_STEP_LAUNCH || s->pre) continue;
    if (s->kkind == GPU_KERNEL_EW && s->ew.kind == GPU_EW_COPY) { /* the schedule of the copy as fused */
      gpu_ew_grid(&s->ew, s->grid);
      s->shared_bytes = gpu_ew_shared_bytes(&s->ew);
    }
    int same = -1;
    if (s->kkind == GPU_KERNEL_MATRIX) {
      keys[i] = plan_key(&s->plan);
      if (!keys[i]) {
        st = cov_error(COV_OUT_OF_MEMORY, NULL, "out of memory");
        break;
      }
    }
    for (int j = 0; j < i && same < 0; j++) {
      const gpu_mstep *o = &p->steps[j];
      if (o->op != GPU_STEP_LAUNCH || o->pre || o->kkind != s->kkind) continue;
      if (s->kkind == GPU_KERNEL_EW     ? ew_equal(&o->ew, &s->ew)
          : s->kkind == GPU_KERNEL_ATTN ? !memcmp(&o->attn, &s->attn, sizeof s->attn) /* planned from zeroed bytes */
                                        : !strcmp(keys[i], keys[j]))
        same = j;
    }
    if (same >= 0) {
      s->module = p->steps[same].module;
      memcpy(s->kernel, p->steps[same].kernel, sizeof s->kernel);
      if (i > 0 && s[-1].pre) {
        s[-1].module = s->module;
        memcpy(s[-1].kernel, p->steps[same - 1].kernel, sizeof s->kernel);
      }
      continue;
    }
    st = common_grow((void **)&p->mods, &p->cap_mods, p->n_mods + 1, sizeof *p->mods, 8, "building the model's kernels");
    if (st) break;
    gpu_mmodule *md = &p->mods[p->n_mods];
    snprintf(md->name, sizeof md->name, "%s", s->kernel + strlen("covenant_"));
    gpu_kernel_info info = {-1, -1, -1, -1};
    if (s->kkind == GPU_KERNEL_MATRIX)
      st = gpu_build_kernel(t, &s->plan, s->kernel, 0, &md->code, &md->size, &info);
    else if (s->kkind == GPU_KERNEL_ATTN)
      st = gpu_build_attn_kernel(t, &s->attn, s->kernel, &md->code, &md->size, &info);
    else
      st = gpu_build_ew_kernel(t, &s->ew, s->kernel, &md->code, &md->size, &info);
    if (st) {
      st = cov_status_annotate(st, "layer group %d (node '%s'), kernel %s: ", s->group, s->label, s->kernel);
      break;
    }
    md->vgprs = info.vgprs, md->agprs = info.agprs, md->lds_bytes = info.lds_bytes, md->scratch_bytes = info.scratch_bytes;
    s->module = p->n_mods++;
    if (i > 0 && s[-1].pre) s[-1].module = s->module; /* its NHWC transform, in the same module */
  }
  for (int i = 0; i < p->n_steps; i++) free(keys[i]);
  free(keys);
  return st;
}
