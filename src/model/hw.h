/*
** hw.h — hardware descriptions for the cost model (cost.h, timeline.h).
**
** A description gives what one chip can do and how chips are wired:
** peak FLOP/s of its matrix unit per dtype, HBM bandwidth and capacity,
** and either a torus (TPU: chips on a ring, 2-D or 3-D torus, links to the
** nearest neighbours, wraparound links when a dimension of the slice is a
** multiple of `wrap_multiple`) or a switch (GPU: nodes of `node_size`
** chips behind NVLink switches, nodes joined by a network such as
** InfiniBand).  Bandwidths are bytes per second in ONE direction of one
** link (or of one chip's NVLink / network egress); latencies are seconds.
**
** Presets (hw.c) carry public numbers with their sources; a user's own
** description is a small JSON file (docs/cost.md gives its fields),
** read and written with jansson.
**
** The placement maps the axes of a mesh onto the physical dimensions of a
** torus: each mesh axis runs along one or more physical dimensions, and
** mesh axes sharing a dimension are nested (the first one listed major).
** A switch needs no placement: devices are numbered row-major over the
** mesh, so the last mesh axis runs within a node.
*/
#ifndef SHM_HW_H
#define SHM_HW_H

#include <stdio.h>
#include "ir.h"

#define HW_MAXPEAK 8
#define HW_MAXDIMS 3

typedef enum HwTopo { HW_TORUS, HW_SWITCH } HwTopo;

typedef struct HwPeak {
  char dtype[12];             /* a dtype's short name: "bf16", "f32", ... */
  double flops;
} HwPeak;

typedef struct Hw {
  char name[48];
  HwPeak peak[HW_MAXPEAK];    /* matrix-unit peak per dtype */
  int npeak;
  double vector_flops;        /* elementwise peak (0: the matrix peak) */
  double hbm_bw, hbm_bytes;
  HwTopo topo;
  /* torus */
  int ndims;
  int64_t pod[HW_MAXDIMS];    /* the largest slice */
  int64_t wrap_multiple;      /* a dimension wraps around when its size is a multiple of this */
  bool wrap_cubes;            /* ... and only when every dimension is (full cubes: TPU v4, v5p) */
  int links;                  /* links per chip (2 * ndims on a torus) */
  double link_bw;             /* per link, per direction */
  double hop_latency;         /* per hop (torus) or per ring step within a node (switch) */
  /* switch */
  int64_t node_size;          /* chips per NVLink domain */
  double net_bw;              /* per chip egress into the network, per direction */
  double net_latency;         /* per ring step across nodes */
  bool switch_reduce;         /* in-switch all-reduce (NVLink SHARP / NVLS) */
  /* what the peaks leave out (0 / 1 in a description that does not say) */
  double kernel_overhead;     /* seconds a kernel costs beyond its roofline (launch, ramp, tail) */
  double coll_overhead;       /* seconds a collective costs beyond its algorithm (launch, synchronization) */
  double link_eff;            /* the fraction of link bandwidth a collective library achieves */
  double matmul_eff;          /* the fraction of the matrix peak a large matmul achieves */
  double switch_reduce_eff;   /* in-switch reduction: its fraction of the NVLink bandwidth */
} Hw;

/* A preset by name ("tpu-v5e", "h100", ...), or NULL. */
const Hw *hw_preset(const char *name);
/* Print the names of the presets, one a line, with a short description. */
void hw_list(FILE *out);
/* Read a description from a JSON file.  Returns false after printing a
   diagnostic (file:line:col: error: ...) to `err`. */
bool hw_load(const char *path, Hw *out, FILE *err);
/* Parse a description from JSON text (what hw_load does after reading the
   file; the fuzzer's entry point).  `name` names the text in diagnostics. */
bool hw_parse(const char *name, const char *text, size_t len, Hw *out, FILE *err);
/* Write a description as JSON (hw_load reads it back).  false on an I/O error. */
bool hw_save(const Hw *hw, const char *path);
/* The JSON text of a description (mem_free it). */
char *hw_json_text(const Hw *hw);

/* The peak FLOP/s of the matrix unit for a dtype.  A dtype the description
   does not list is modelled at its f32 peak (or its lowest, without one);
   *listed says whether it was listed. */
double hw_peak(const Hw *hw, int dtype, bool *listed);

/* ---- placement --------------------------------------------------------------- */

typedef struct HwPlace {
  int naxes;
  /* per mesh axis: the physical dimensions it runs along (major first),
     and its stride in each: members of a group along the axis are
     `stride` chips apart along that dimension */
  int ndim[SHM_MAXAXES];
  int dim[SHM_MAXAXES][HW_MAXDIMS];
  int64_t extent[SHM_MAXAXES][HW_MAXDIMS];   /* the axis's extent along each */
  int64_t stride[SHM_MAXAXES][HW_MAXDIMS];
  int64_t slice[HW_MAXDIMS];  /* the slice's size along each dimension */
  bool wrap[HW_MAXDIMS];      /* whether it has wraparound links */
} HwPlace;

/* Place `mesh` on the hardware.  `spec` is the user's placement
   ("i=x,j=yz": axis i along dimension x, axis j along y then z) or NULL
   for the default (each axis in mesh order on the dimension with the
   fewest chips placed so far that can take it; an axis too long for any
   dimension spans several).  false with a message in `why` (size `n`) when
   the mesh does not fit. */
bool hw_place(const Hw *hw, const Mesh *mesh, const char *spec, HwPlace *pl, char *why, size_t n);
/* The physical coordinates of mesh device `dev` (torus). */
void hw_coords(const Hw *hw, const Mesh *mesh, const HwPlace *pl, int64_t dev, int64_t *coords);
/* "x" "y" "z": the name of a physical dimension. */
char hw_dim_name(int d);

/* jansson's allocations through mem.c: call before any other use of
   jansson.  A failure throws from inside jansson, so run every jansson
   call between mem_scope_begin and mem_scope_end (mem.h). */
void hw_json_init(void);

#endif
