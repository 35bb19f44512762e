/* frontend/onnx/onnx_order.c: the nodes of a graph read from ONNX, sorted
 * topologically (Kahn's algorithm over a min-heap of file positions, so that
 * ties keep the file's order and every printout and diagnostic is the same
 * on every run), or the one error naming the nodes on or behind a cycle. */
#include <stdlib.h>
#include <string.h>

#include "frontend/onnx/onnx_internal.h"

/* A min-heap of node slots (onnx_sort_nodes): push x; pop the smallest. */
static void swap_slots(size_t *a, size_t *b) { size_t t = *a; *a = *b, *b = t; }

static void heap_push(size_t *heap, size_t *nh, size_t x) {
  size_t c = (*nh)++;
  heap[c] = x;
  while (c && heap[(c - 1) / 2] > heap[c]) {
    swap_slots(&heap[c], &heap[(c - 1) / 2]);
    c = (c - 1) / 2;
  }
}

static size_t heap_pop(size_t *heap, size_t *nh) {
  size_t top = heap[0];
  heap[0] = heap[--*nh];
  for (size_t c = 0;;) {
    size_t l = 2 * c + 1, r = l + 1, m = c;
    if (l < *nh && heap[l] < heap[m]) m = l;
    if (r < *nh && heap[r] < heap[m]) m = r;
    if (m == c) break;
    swap_slots(&heap[c], &heap[m]);
    c = m;
  }
  return top;
}

/* The error for a graph with a cycle: every node left over (pending
 * inputs) lies on or behind one; name them all (the first 20). */
static void cycle_error(reader *R, const size_t *pending, size_t n_left) {
  graph *g = R->g;
  char *list = NULL;
  size_t shown = 0;
  for (size_t i = 0; i < g->n_nodes; i++) {
    if (!pending[i]) continue;
    graph_node *n = g->nodes[i];
    if (shown == 20) {
      list = cov_arena_printf(g->arena, "%s, ...", list);
      break;
    }
    list = cov_arena_printf(g->arena, "%s%s'%s' (%s)", list ? list : "", list ? ", " : "", n->name, n->op_type);
    shown++;
  }
  cov_loc loc = {.file = g->file};
  onnx_add_error(R, cov_error(COV_INVALID_INPUT, &loc, "the graph has a cycle: %zu nodes depend on their own outputs: %s",
                              n_left, list ? list : "?"));
}

/* Kahn's algorithm, stable (ties keep the file's order), so the printed
 * graph and every diagnostic come out the same on every run. */
void onnx_sort_nodes(reader *R) {
  graph *g = R->g;
  size_t nn = g->n_nodes;
  if (nn == 0) return;
  size_t *pending = calloc(nn, sizeof *pending);
  size_t *order = malloc(nn * sizeof *order);
  /* Consumers of each node, as a CSR list built from the inputs. */
  size_t *count = calloc(nn + 1, sizeof *count);
  size_t edges = 0;
  for (size_t i = 0; i < nn; i++) edges += (size_t)g->nodes[i]->n_in;
  size_t *adj = malloc((edges ? edges : 1) * sizeof *adj);
  size_t *heap = malloc(nn * sizeof *heap);
  if (!pending || !order || !count || !adj || !heap) {
    onnx_add_error(R, cov_error(COV_OUT_OF_MEMORY, &(cov_loc){.file = g->file}, "out of memory sorting the graph"));
    goto done;
  }
  for (size_t i = 0; i < nn; i++) g->nodes[i]->index = (int)i; /* temporarily the slot */
  for (size_t i = 0; i < nn; i++) {
    graph_node *n = g->nodes[i];
    for (int j = 0; j < n->n_in; j++)
      if (n->in[j] && n->in[j]->producer) count[n->in[j]->producer->index + 1]++;
  }
  for (size_t i = 0; i < nn; i++) count[i + 1] += count[i];
  size_t *fill = calloc(nn, sizeof *fill);
  if (!fill) {
    onnx_add_error(R, cov_error(COV_OUT_OF_MEMORY, &(cov_loc){.file = g->file}, "out of memory sorting the graph"));
    goto done;
  }
  for (size_t i = 0; i < nn; i++) {
    graph_node *n = g->nodes[i];
    for (int j = 0; j < n->n_in; j++) {
      if (!n->in[j] || !n->in[j]->producer) continue;
      size_t p = (size_t)n->in[j]->producer->index;
      adj[count[p] + fill[p]++] = i;
      pending[i]++;
    }
  }
  free(fill);
  /* A min-heap on the original position keeps the order stable. */
  size_t nh = 0, no = 0;
  for (size_t i = 0; i < nn; i++)
    if (!pending[i]) heap_push(heap, &nh, i);
  while (nh) {
    size_t top = heap_pop(heap, &nh);
    order[no++] = top;
    for (size_t e = count[top]; e < count[top + 1]; e++)
      if (--pending[adj[e]] == 0) heap_push(heap, &nh, adj[e]);
  }
  if (no < nn) {
    cycle_error(R, pending, nn - no);
    goto done;
  }
  graph_node **sorted = cov_arena_array(g->arena, nn, sizeof *sorted);
  if (!sorted) {
    onnx_add_error(R, cov_error(COV_OUT_OF_MEMORY, &(cov_loc){.file = g->file}, "out of memory sorting the graph"));
    goto done;
  }
  for (size_t i = 0; i < nn; i++) sorted[i] = g->nodes[order[i]];
  memcpy(g->nodes, sorted, nn * sizeof *sorted);
done:
  for (size_t i = 0; i < nn; i++) g->nodes[i]->index = -1;
  free(pending);
  free(order);
  free(count);
  free(adj);
  free(heap);
}
