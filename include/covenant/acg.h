/* covenant/acg.h: Architecture Covenant Graphs, hardware targets as data.
 *
 * An ACG describes an accelerator as compute units (with the operations they
 * can run), storage (capacities, banks, widths) and the data paths between
 * them. The schema is documented in acg/README.md. A loaded ACG is immutable
 * and owned by the caller (cov_acg_free). */
#ifndef COVENANT_ACG_H
#define COVENANT_ACG_H

#include <stddef.h>
#include <stdio.h>

#include "covenant/api.h"
#include "covenant/status.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cov_acg cov_acg;

/* Largest ACG file accepted, so a runaway input cannot exhaust memory. */
#define COV_ACG_MAX_FILE_BYTES (16u << 20)

/* Parses and validates. On failure *out is NULL and the status chain holds
 * every error found, each located by file, line:col and JSON path. */
COV_API cov_status cov_acg_load_file(const char *path, cov_acg **out);
/* `name` is used as the file name in diagnostics. */
COV_API cov_status cov_acg_load_buffer(const char *data, size_t size, const char *name, cov_acg **out);
/* Accepts a path or the name of a shipped target ("npu-16x16"); see
 * acg/README.md for where names are looked up. */
COV_API cov_status cov_acg_load_target(const char *name_or_path, cov_acg **out);
/* A shipped target by name only, looked up like cov_acg_load_target's names;
 * anything else (a path, a control byte) is refused without opening it. For
 * names read from files, such as the ACG an NPU program was compiled for. */
COV_API cov_status cov_acg_load_named(const char *name, cov_acg **out);
COV_API void cov_acg_free(cov_acg *acg);

COV_API const char *cov_acg_name(const cov_acg *acg);
COV_API const char *cov_acg_file(const cov_acg *acg);
/* The backend that generates code for this target: "npu-sim", "amdgpu",
 * "nvptx" (the ACG's backend.name), or NULL when the ACG names none. The
 * loader checks it is a name; which names are backends, and which backend
 * fields each takes, the backend registry checks where a target opens
 * (covenant acg check, --target). */
COV_API const char *cov_acg_backend(const cov_acg *acg);

/* Canonical JSON: fixed member order, every default spelled out. Loading the
 * output gives an equal ACG, and writing that again gives the same bytes. */
COV_API cov_status cov_acg_write_json(const cov_acg *acg, FILE *out);
/* Human summary: levels, capacities, peak MACs/cycle per dtype, bandwidths,
 * roofline ridge point. */
COV_API cov_status cov_acg_print_summary(const cov_acg *acg, FILE *out);
/* Graphviz DOT of units and data paths. */
COV_API cov_status cov_acg_print_dot(const cov_acg *acg, FILE *out);

/* The canonical JSON of cov_acg_write_json as a NUL-terminated string
 * (*out malloc'ed, released with cov_free; *size may be NULL). */
COV_API cov_status cov_acg_to_json(const cov_acg *acg, char **out, size_t *size);

#ifdef __cplusplus
}
#endif
#endif
