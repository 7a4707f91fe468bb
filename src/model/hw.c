/*
** hw.c — hardware presets, their JSON form, and the placement of a mesh.
*/
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include "buf.h"
#include "diag.h"
#include "err.h"
#include "hw.h"
#include "value.h"

/* ---- presets ------------------------------------------------------------------------
** Sources, cited per number:
**   [GC-v4]  Google Cloud TPU docs, "TPU v4" (cloud.google.com/tpu/docs/v4)
**   [GC-v5e] Google Cloud TPU docs, "TPU v5e" (cloud.google.com/tpu/docs/v5e)
**   [GC-v5p] Google Cloud TPU docs, "TPU v5p" (cloud.google.com/tpu/docs/v5p)
**   [GC-v6e] Google Cloud TPU docs, "TPU v6e" (cloud.google.com/tpu/docs/v6e)
**   [SB-tpu] "How to Scale Your Model" (the JAX team's scaling book), part 2
**            "How to Think About TPUs", the tables of chip specs and of ICI
**            bandwidth, and its note that an ICI hop costs about 1 us
**   [SB-gpu] the scaling book, part 12 "How to Think About GPUs": NVLink 4.0
**            links of 25 GB/s each way, 18 per H100; 12 per A100 (NVLink
**            3.0); 400 GB/s of InfiniBand egress per 8-GPU H100 node; SHARP
**            in-network reductions since Hopper
**   [NV-A100] NVIDIA A100 Tensor Core GPU datasheet (SXM4 80GB)
**   [NV-H100] NVIDIA H100 Tensor Core GPU datasheet (H100 SXM); its tensor
**            figures are quoted "with sparsity": the dense peak is half
**   [NV-DGX]  NVIDIA DGX A100 / DGX H100 user guides: one 200 Gb/s HDR
**            (A100) or 400 Gb/s NDR (H100) InfiniBand port per GPU
**   [NCCL]   NCCL src/graph/tuning.cc, hwLat, ring/Simple protocol: 3.4 us
**            per ring step over NVLink, 9.6 us over the network
**   [SB-meas] the scaling book, part 3 "Sharded matrices": a latency-bound
**            AllGather of bf16[256, 256] over 4 v5e chips measured about
**            8 us against its 3 hops of 1 us: the 5 us left, one
**            calibration, is a TPU collective's fixed cost (launch and
**            synchronization)
**   [TPU-prof] JAX's shard_map notebook, its TPU profiles: consecutive XLA
**            ops (fusions) of one device start about 1 us apart beyond
**            their own time
**   [CUDA-G] NVIDIA Technical Blog, "Getting Started with CUDA Graphs": a
**            2.9 us kernel launched back to back on a stream takes 3.8 us a
**            kernel: about 1 us a kernel beyond its own time
**   [NCCL-b] NCCL src/graph/tuning.cc: baseLat of ring/Simple 8.4 us (a
**            collective's fixed cost); the tuner caps the bus bandwidth of
**            an A100 (compCap 80) at 235 GB/s, 78.3% of its 300 GB/s of
**            NVLink: the one calibration of NVLink efficiency, used for the
**            H100 too; src/tuning nvlsEfficiency 0.85 on Hopper
**   [JAX-mg] JAX's docs/pallas/gpu/collective_matmul.md: an f16
**            1024x4096 @ 4096x4096 matmul takes about 43 us on one H100,
**            7.99e14 FLOP/s, 80.8% of the dense peak: the one calibration
**            of a GPU's matmul efficiency, used for the A100 too (the TPUs
**            have none: 1, their peak)
**   [JAX-p]  JAX's jax.lax.Precision: on TPU the DEFAULT precision of an f32
**            matmul is one bf16 pass, so f32 matmuls run at the bf16 peak;
**            on NVIDIA GPUs XLA's default precision lets f32 matmuls use
**            TF32 tensor cores
*/
static const Hw presets[] = {
  {.name = "tpu-v4",
   .peak = {{"bf16", 2.75e14},     /* [GC-v4] 275 TFLOPs; [SB-tpu] 2.75e14 */
            {"f32", 2.75e14},      /* [JAX-p] */
            {"i8", 2.75e14}},      /* [SB-tpu] int8 2.75e14 */
   .npeak = 3,
   .hbm_bw = 1.2e12,               /* [SB-tpu] 1.2e12 B/s; [GC-v4] 1200 GBps */
   .hbm_bytes = 32e9,              /* [GC-v4] 32 GiB; [SB-tpu] 32GB */
   .topo = HW_TORUS, .ndims = 3,
   .pod = {16, 16, 16},            /* [SB-tpu] superpod 16x16x16 */
   .wrap_multiple = 4,             /* [SB-tpu] full 4x4x4 cubes have wraparounds */
   .wrap_cubes = true,             /* [SB-tpu] a 2x2x4 has none */
   .links = 6,                     /* [SB-tpu] 3-D torus, 6 nearest neighbours */
   .link_bw = 4.5e10,              /* [SB-tpu] v4p ICI 4.5e10 B/s one way */
   .hop_latency = 1e-6,            /* [SB-tpu] */
   .kernel_overhead = 1e-6,        /* [TPU-prof] */
   .coll_overhead = 5e-6,          /* [SB-meas] */
   .link_eff = 1, .matmul_eff = 1, .switch_reduce_eff = 1},
  {.name = "tpu-v5e",
   .peak = {{"bf16", 1.97e14},     /* [GC-v5e] 197 TFLOPs; [SB-tpu] 1.97e14 */
            {"f32", 1.97e14},      /* [JAX-p] */
            {"i8", 3.94e14}},      /* [GC-v5e] 393 TOPs; [SB-tpu] 3.94e14 */
   .npeak = 3,
   .hbm_bw = 8.1e11,               /* [SB-tpu] 8.1e11 B/s; [GC-v5e] 819 GBps */
   .hbm_bytes = 16e9,              /* [GC-v5e] 16 GB */
   .topo = HW_TORUS, .ndims = 2,
   .pod = {16, 16},                /* [GC-v5e] 256 chips, 2D torus */
   .wrap_multiple = 16,            /* [SB-tpu] wraparound only on a full axis of 16 */
   .links = 4,                     /* [GC-v5e] 4 ICI ports per chip */
   .link_bw = 4.5e10,              /* [SB-tpu] 4.5e10 B/s one way */
   .hop_latency = 1e-6,            /* [SB-tpu] */
   .kernel_overhead = 1e-6,        /* [TPU-prof] */
   .coll_overhead = 5e-6,          /* [SB-meas] */
   .link_eff = 1, .matmul_eff = 1, .switch_reduce_eff = 1},
  {.name = "tpu-v5p",
   .peak = {{"bf16", 4.59e14},     /* [GC-v5p] 459 TFLOPs; [SB-tpu] 4.59e14 */
            {"f32", 4.59e14},      /* [JAX-p] */
            {"i8", 9.18e14}},      /* [GC-v5p] 918 TOPs; [SB-tpu] 9.18e14 */
   .npeak = 3,
   .hbm_bw = 2.8e12,               /* [SB-tpu] 2.8e12 B/s; [GC-v5p] 2765 GBps */
   .hbm_bytes = 95e9,              /* [GC-v5p] 95 GiB; [SB-tpu] 96GB */
   .topo = HW_TORUS, .ndims = 3,
   .pod = {16, 20, 28},            /* [SB-tpu] 8960 chips, 16x20x28 */
   .wrap_multiple = 4,             /* [SB-tpu] */
   .wrap_cubes = true,             /* [SB-tpu] */
   .links = 6,                     /* [SB-tpu] */
   .link_bw = 9e10,                /* [SB-tpu] 9e10 B/s one way */
   .hop_latency = 1e-6,            /* [SB-tpu] */
   .kernel_overhead = 1e-6,        /* [TPU-prof] */
   .coll_overhead = 5e-6,          /* [SB-meas] */
   .link_eff = 1, .matmul_eff = 1, .switch_reduce_eff = 1},
  {.name = "tpu-v6e",
   .peak = {{"bf16", 9.2e14},      /* [GC-v6e] 918 TFLOPs; [SB-tpu] 9.20e14 */
            {"f32", 9.2e14},       /* [JAX-p] */
            {"i8", 1.84e15}},      /* [GC-v6e] 1836 TOPs; [SB-tpu] 1.84e15 */
   .npeak = 3,
   .hbm_bw = 1.64e12,              /* [GC-v6e] 1640 GBps; [SB-tpu] 1.6e12 */
   .hbm_bytes = 32e9,              /* [GC-v6e] 32 GB */
   .topo = HW_TORUS, .ndims = 2,
   .pod = {16, 16},                /* [GC-v6e] 256 chips, 2D torus */
   .wrap_multiple = 16,            /* [SB-tpu] */
   .links = 4,                     /* [SB-tpu] 4 nearest neighbours */
   .link_bw = 9e10,                /* [SB-tpu] 9e10 B/s one way */
   .hop_latency = 1e-6,            /* [SB-tpu] */
   .kernel_overhead = 1e-6,        /* [TPU-prof] */
   .coll_overhead = 5e-6,          /* [SB-meas] */
   .link_eff = 1, .matmul_eff = 1, .switch_reduce_eff = 1},
  {.name = "a100",
   .peak = {{"bf16", 3.12e14},     /* [NV-A100] 312 TFLOPS dense */
            {"f16", 3.12e14},      /* [NV-A100] */
            {"f32", 1.56e14},      /* [NV-A100] TF32 156 TFLOPS dense; [JAX-p] */
            {"f64", 1.95e13},      /* [NV-A100] FP64 tensor core 19.5 TFLOPS */
            {"i8", 6.24e14}},      /* [NV-A100] INT8 624 TOPS dense */
   .npeak = 5,
   .vector_flops = 1.95e13,        /* [NV-A100] FP32 19.5 TFLOPS (CUDA cores) */
   .hbm_bw = 2.039e12,             /* [NV-A100] 2,039 GB/s */
   .hbm_bytes = 80e9,              /* [NV-A100] 80GB HBM2e */
   .topo = HW_SWITCH,
   .node_size = 8,                 /* [SB-gpu] 8 GPUs per NVLink domain */
   .links = 12,                    /* [SB-gpu] NVLink 3.0, 12 ports per GPU */
   .link_bw = 2.5e10,              /* [SB-gpu] 25 GB/s each way; [NV-A100] 600 GB/s in all */
   .hop_latency = 3.4e-6,          /* [NCCL] */
   .net_bw = 2.5e10,               /* [NV-DGX] 200 Gb/s HDR per GPU */
   .net_latency = 9.6e-6,          /* [NCCL] */
   .switch_reduce = false,         /* [SB-gpu] SHARP only from Hopper on */
   .kernel_overhead = 1e-6,        /* [CUDA-G] */
   .coll_overhead = 8.4e-6,        /* [NCCL-b] */
   .link_eff = 0.783,              /* [NCCL-b] 235 / 300 */
   .matmul_eff = 0.808,            /* [JAX-mg] the H100's calibration */
   .switch_reduce_eff = 1},
  {.name = "h100",
   .peak = {{"bf16", 9.895e14},    /* [NV-H100] 1,979 TFLOPS with sparsity */
            {"f16", 9.895e14},     /* [NV-H100] */
            {"f32", 4.945e14},     /* [NV-H100] TF32 989 TFLOPS with sparsity; [JAX-p] */
            {"f64", 6.7e13},       /* [NV-H100] FP64 tensor core 67 TFLOPS */
            {"i8", 1.979e15}},     /* [NV-H100] INT8 3,958 TOPS with sparsity */
   .npeak = 5,
   .vector_flops = 6.7e13,         /* [NV-H100] FP32 67 TFLOPS (CUDA cores) */
   .hbm_bw = 3.35e12,              /* [NV-H100] 3.35 TB/s */
   .hbm_bytes = 80e9,              /* [NV-H100] 80GB */
   .topo = HW_SWITCH,
   .node_size = 8,                 /* [SB-gpu] */
   .links = 18,                    /* [SB-gpu] 18 NVLink 4.0 links per GPU */
   .link_bw = 2.5e10,              /* [SB-gpu] 25 GB/s each way; [NV-H100] 900 GB/s in all */
   .hop_latency = 3.4e-6,          /* [NCCL] */
   .net_bw = 5e10,                 /* [NV-DGX] 400 Gb/s NDR per GPU; [SB-gpu] 400 GB/s per node */
   .net_latency = 9.6e-6,          /* [NCCL] */
   .switch_reduce = true,          /* [SB-gpu] NVLink SHARP */
   .kernel_overhead = 1e-6,        /* [CUDA-G] */
   .coll_overhead = 8.4e-6,        /* [NCCL-b] */
   .link_eff = 0.783,              /* [NCCL-b] the A100's calibration */
   .matmul_eff = 0.808,            /* [JAX-mg] */
   .switch_reduce_eff = 0.85},     /* [NCCL-b] nvlsEfficiency */
};

#define NPRESETS ((int)(sizeof presets / sizeof presets[0]))

const Hw *hw_preset(const char *name) {
  for (int i = 0; i < NPRESETS; i++)
    if (!strcmp(presets[i].name, name)) return &presets[i];
  if (!strcmp(name, "h100-sxm")) return hw_preset("h100");
  if (!strcmp(name, "a100-sxm")) return hw_preset("a100");
  return NULL;
}

void hw_list(FILE *out) {
  for (int i = 0; i < NPRESETS; i++) {
    const Hw *h = &presets[i];
    char topo[64];
    if (h->topo == HW_TORUS) {
      int n = snprintf(topo, sizeof topo, "%dD torus, pod %lld", h->ndims, (long long)h->pod[0]);
      for (int d = 1; d < h->ndims; d++) n += snprintf(topo + n, sizeof topo - (size_t)n, "x%lld", (long long)h->pod[d]);
    } else {
      snprintf(topo, sizeof topo, "NVLink nodes of %lld, InfiniBand between", (long long)h->node_size);
    }
    fprintf(out, "%-8s  %s peak %.3g FLOP/s, HBM %.3g B/s, %.0f GB; %s\n", h->name, h->peak[0].dtype,
            h->peak[0].flops, h->hbm_bw, h->hbm_bytes / 1e9, topo);
  }
}

double hw_peak(const Hw *hw, int dtype, bool *listed) {
  const char *name = dtype_names[dtype];
  double f32 = 0, lowest = 0;
  for (int i = 0; i < hw->npeak; i++) {
    if (!strcmp(hw->peak[i].dtype, name)) {
      if (listed) *listed = true;
      return hw->peak[i].flops;
    }
    if (!strcmp(hw->peak[i].dtype, "f32")) f32 = hw->peak[i].flops;
    if (!lowest || hw->peak[i].flops < lowest) lowest = hw->peak[i].flops;
  }
  if (listed) *listed = false;
  return f32 ? f32 : lowest;
}

char hw_dim_name(int d) { return (char)('x' + d); }

/* ---- jansson through mem.c ---------------------------------------------------------- */

/* jansson allocates through mem.c: a failure is a runtime error thrown
   from inside jansson, so every jansson call runs in a memory scope
   (mem.h) that frees what the call had allocated when that happens. */
static void *json_mem_alloc(size_t n) { return mem_alloc(n); }

void hw_json_init(void) { json_set_alloc_funcs(json_mem_alloc, mem_free); }

/* ---- reading ------------------------------------------------------------------------ */

/* What a reading of one description knows: the text (for positions) and
   the diagnostics' destination. */
typedef struct Reader {
  int file;
  const char *text;
  size_t len;
  FILE *err;
  bool failed;
} Reader;

/* The offset of a key's first occurrence as "key" in the text, or of the
   first '{' when it does not occur (a missing key). */
static uint32_t key_offset(const Reader *r, const char *key) {
  size_t k = strlen(key);
  for (size_t i = 0; i + k + 2 <= r->len; i++)
    if (r->text[i] == '"' && !memcmp(r->text + i + 1, key, k) && r->text[i + 1 + k] == '"') return (uint32_t)i;
  for (size_t i = 0; i < r->len; i++)
    if (r->text[i] == '{') return (uint32_t)i;
  return 0;
}

static void complain(Reader *r, uint32_t off, uint32_t n, const char *fmt, ...) SHM_PRINTF(4, 5);
static void complain(Reader *r, uint32_t off, uint32_t n, const char *fmt, ...) {
  if (r->failed) return;      /* the first problem only: one is enough to fix */
  r->failed = true;
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  Span sp = {r->file, off, n ? n : 1};
  diag_print(r->err, sp, "error", msg);
}

static void complain_key(Reader *r, const char *key, const char *fmt, const char *arg) {
  uint32_t off = key_offset(r, key);
  bool found = off < r->len && r->text[off] == '"';
  complain(r, off, found ? (uint32_t)strlen(key) + 2 : 1, fmt, arg);
}

/* A positive finite number under `key`; `need`: an error when absent. */
static double number(Reader *r, json_t *o, const char *key, bool need) {
  json_t *v = json_object_get(o, key);
  if (!v) {
    if (need) complain_key(r, key, "the hardware description needs \"%s\"", key);
    return 0;
  }
  double x = json_is_number(v) ? json_number_value(v) : -1;
  if (!(x > 0) || x > 1e30) complain_key(r, key, "\"%s\" must be a positive number", key);
  return x > 0 ? x : 0;
}

static int64_t count(Reader *r, json_t *o, const char *key, bool need, int64_t max) {
  json_t *v = json_object_get(o, key);
  if (!v) {
    if (need) complain_key(r, key, "the hardware description needs \"%s\"", key);
    return 0;
  }
  if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > max) {
    complain_key(r, key, "\"%s\" must be a positive integer", key);
    return 0;
  }
  return (int64_t)json_integer_value(v);
}

static const char *const known_keys[] = {
  "name", "peak_flops", "vector_flops", "hbm_bandwidth", "hbm_capacity", "topology", "pod",
  "wraparound_multiple", "wraparound_cubes", "links_per_chip", "link_bandwidth", "hop_latency", "node_size",
  "network_bandwidth", "network_latency", "switch_reduce", "source", "kernel_overhead", "collective_overhead",
  "link_efficiency", "matmul_efficiency", "switch_reduce_efficiency", NULL};

/* An optional field: seconds (0 or more; `dflt` when absent) or a
   fraction (above 0, at most 1). */
static double optional(Reader *r, json_t *o, const char *key, double dflt, bool fraction) {
  json_t *v = json_object_get(o, key);
  if (!v) return dflt;
  double x = json_is_number(v) ? json_number_value(v) : -1;
  if (fraction ? !(x > 0 && x <= 1) : !(x >= 0 && x <= 1)) {
    complain_key(r, key, fraction ? "\"%s\" must be a fraction above 0, at most 1"
                                  : "\"%s\" must be a number of seconds from 0 to 1", key);
    return dflt;
  }
  return x;
}

static void read_peaks(Reader *r, json_t *o, Hw *hw) {
  json_t *p = json_object_get(o, "peak_flops");
  if (!p || !json_is_object(p) || json_object_size(p) == 0) {
    complain_key(r, "peak_flops", "%s", "\"peak_flops\" must be an object of dtype names and FLOP/s, "
                 "such as {\"bf16\": 1.97e14}");
    return;
  }
  const char *k;
  json_t *v;
  json_object_foreach(p, k, v) {
    if (hw->npeak == HW_MAXPEAK) {
      complain_key(r, k, "%s", "at most 8 dtypes in \"peak_flops\"");
      return;
    }
    if (strlen(k) >= sizeof hw->peak[0].dtype ||
        (dtype_lookup(str_c(k)) < 0 && strcmp(k, "bf16") && strcmp(k, "f16") && strcmp(k, "i8"))) {
      complain_key(r, k, "unknown dtype '%s' in \"peak_flops\"", k);
      return;
    }
    double x = json_is_number(v) ? json_number_value(v) : -1;
    if (!(x > 0) || x > 1e30) {
      complain_key(r, k, "the peak of '%s' must be a positive number", k);
      return;
    }
    snprintf(hw->peak[hw->npeak].dtype, sizeof hw->peak[0].dtype, "%s", k);
    hw->peak[hw->npeak++].flops = x;
  }
}

static void read_torus(Reader *r, json_t *o, Hw *hw) {
  json_t *pod = json_object_get(o, "pod");
  if (!pod || !json_is_array(pod) || json_array_size(pod) < 1 || json_array_size(pod) > HW_MAXDIMS) {
    complain_key(r, "pod", "%s", "a torus needs \"pod\": the largest slice, 1 to 3 dimensions, such as [16, 16]");
    return;
  }
  hw->ndims = (int)json_array_size(pod);
  for (int d = 0; d < hw->ndims; d++) {
    json_t *v = json_array_get(pod, (size_t)d);
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 4096) {
      complain_key(r, "pod", "%s", "the sizes in \"pod\" must be integers from 1 to 4096");
      return;
    }
    hw->pod[d] = (int64_t)json_integer_value(v);
  }
  hw->wrap_multiple = count(r, o, "wraparound_multiple", true, 4096);
  json_t *wc = json_object_get(o, "wraparound_cubes");
  if (wc && !json_is_boolean(wc))
    complain_key(r, "wraparound_cubes", "%s", "\"wraparound_cubes\" must be true or false");
  hw->wrap_cubes = wc && json_is_true(wc);
  hw->links = (int)count(r, o, "links_per_chip", true, 64);
  if (!r->failed && hw->links != 2 * hw->ndims)
    complain_key(r, "links_per_chip", "%s", "a torus has 2 links per chip and dimension (\"links_per_chip\")");
  for (const char *const *k = (const char *const[]){"node_size", "network_bandwidth", "network_latency",
                                                     "switch_reduce", NULL}; *k; k++)
    if (json_object_get(o, *k)) complain_key(r, *k, "\"%s\" belongs to a switch, not a torus", *k);
}

static void read_switch(Reader *r, json_t *o, Hw *hw) {
  hw->node_size = count(r, o, "node_size", true, 1 << 20);
  hw->links = (int)count(r, o, "links_per_chip", true, 1024);
  hw->net_bw = number(r, o, "network_bandwidth", true);
  hw->net_latency = number(r, o, "network_latency", true);
  json_t *sr = json_object_get(o, "switch_reduce");
  if (sr && !json_is_boolean(sr)) complain_key(r, "switch_reduce", "%s", "\"switch_reduce\" must be true or false");
  hw->switch_reduce = sr && json_is_true(sr);
  for (const char *const *k = (const char *const[]){"pod", "wraparound_multiple", "wraparound_cubes", NULL}; *k; k++)
    if (json_object_get(o, *k)) complain_key(r, *k, "\"%s\" belongs to a torus, not a switch", *k);
}

static void read_hw(Reader *r, json_t *o, Hw *hw) {
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v) {
    bool known = false;
    for (int i = 0; known_keys[i] && !known; i++) known = !strcmp(k, known_keys[i]);
    if (!known) complain_key(r, k, "unknown field \"%s\" in a hardware description", k);
  }
  json_t *name = json_object_get(o, "name");
  if (!name || !json_is_string(name) || !*json_string_value(name) || strlen(json_string_value(name)) >= sizeof hw->name)
    complain_key(r, "name", "%s", "the hardware description needs a \"name\" (a short string)");
  else
    snprintf(hw->name, sizeof hw->name, "%s", json_string_value(name));
  json_t *src = json_object_get(o, "source");
  if (src && !json_is_string(src)) complain_key(r, "source", "%s", "\"source\" must be a string");
  read_peaks(r, o, hw);
  if (json_object_get(o, "vector_flops")) hw->vector_flops = number(r, o, "vector_flops", true);
  hw->hbm_bw = number(r, o, "hbm_bandwidth", true);
  hw->hbm_bytes = number(r, o, "hbm_capacity", true);
  hw->link_bw = number(r, o, "link_bandwidth", true);
  hw->hop_latency = number(r, o, "hop_latency", true);
  hw->kernel_overhead = optional(r, o, "kernel_overhead", 0, false);
  hw->coll_overhead = optional(r, o, "collective_overhead", 0, false);
  hw->link_eff = optional(r, o, "link_efficiency", 1, true);
  hw->matmul_eff = optional(r, o, "matmul_efficiency", 1, true);
  hw->switch_reduce_eff = optional(r, o, "switch_reduce_efficiency", 1, true);
  json_t *topo = json_object_get(o, "topology");
  const char *t = topo && json_is_string(topo) ? json_string_value(topo) : "";
  if (!strcmp(t, "torus")) {
    hw->topo = HW_TORUS;
    read_torus(r, o, hw);
  } else if (!strcmp(t, "switch")) {
    hw->topo = HW_SWITCH;
    read_switch(r, o, hw);
  } else {
    complain_key(r, "topology", "%s", "\"topology\" must be \"torus\" or \"switch\"");
  }
}

bool hw_parse(const char *name, const char *text, size_t len, Hw *out, FILE *err) {
  char *copy = mem_alloc(len + 1);
  memcpy(copy, text, len);
  copy[len] = 0;
  Reader r = {diag_add_file(name, copy, len), NULL, len, err, false};
  r.text = diag_file_text(r.file, NULL);
  memset(out, 0, sizeof *out);
  json_error_t je;
  mem_scope_begin();
  json_t *root = json_loadb(r.text, len, JSON_REJECT_DUPLICATES, &je);
  mem_scope_end();
  if (!root) {
    uint32_t off = je.position > 0 && (size_t)je.position <= len ? (uint32_t)je.position - 1 : 0;
    complain(&r, off, 1, "bad JSON: %s", je.text);
    return false;
  }
  err_defer((void (*)(void *))json_decref, root);
  if (!json_is_object(root)) complain(&r, 0, 1, "%s", "a hardware description is a JSON object");
  else read_hw(&r, root, out);
  err_undefer(root);
  json_decref(root);
  return !r.failed;
}

bool hw_load(const char *path, Hw *out, FILE *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(err, "shmapi: cannot read hardware description '%s'\n", path);
    return false;
  }
  Buf b = {0};
  char chunk[4096];
  size_t n;
  err_defer(buf_release, &b);
  while ((n = fread(chunk, 1, sizeof chunk, f)) > 0 && b.n < ((size_t)1 << 20)) buf_put(&b, chunk, n);
  fclose(f);
  bool ok = b.n < ((size_t)1 << 20);
  if (!ok) fprintf(err, "shmapi: hardware description '%s' is larger than 1 MiB\n", path);
  else ok = hw_parse(path, b.p ? b.p : "", b.n, out, err);
  err_undefer(&b);
  buf_free(&b);
  return ok;
}

/* ---- writing ------------------------------------------------------------------------ */

/* Set o[key] = v, taking v; false when out of memory. */
static bool put(json_t *o, const char *key, json_t *v) { return v && json_object_set_new(o, key, v) == 0; }

static json_t *hw_json(const Hw *hw) {
  json_t *o = json_object(), *peaks = json_object();
  bool ok = o && peaks && put(o, "name", json_string(hw->name)) && put(o, "peak_flops", json_incref(peaks));
  for (int i = 0; ok && i < hw->npeak; i++) ok = put(peaks, hw->peak[i].dtype, json_real(hw->peak[i].flops));
  if (ok && hw->vector_flops) ok = put(o, "vector_flops", json_real(hw->vector_flops));
  ok = ok && put(o, "hbm_bandwidth", json_real(hw->hbm_bw)) && put(o, "hbm_capacity", json_real(hw->hbm_bytes)) &&
       put(o, "topology", json_string(hw->topo == HW_TORUS ? "torus" : "switch")) &&
       put(o, "links_per_chip", json_integer(hw->links)) && put(o, "link_bandwidth", json_real(hw->link_bw)) &&
       put(o, "hop_latency", json_real(hw->hop_latency)) &&
       put(o, "kernel_overhead", json_real(hw->kernel_overhead)) &&
       put(o, "collective_overhead", json_real(hw->coll_overhead)) &&
       put(o, "link_efficiency", json_real(hw->link_eff)) && put(o, "matmul_efficiency", json_real(hw->matmul_eff));
  if (ok && hw->topo == HW_TORUS) {
    json_t *pod = json_array();
    ok = put(o, "pod", pod) && put(o, "wraparound_multiple", json_integer(hw->wrap_multiple)) &&
         put(o, "wraparound_cubes", json_boolean(hw->wrap_cubes));
    for (int d = 0; ok && d < hw->ndims; d++) ok = json_array_append_new(pod, json_integer(hw->pod[d])) == 0;
  } else if (ok) {
    ok = put(o, "node_size", json_integer(hw->node_size)) && put(o, "network_bandwidth", json_real(hw->net_bw)) &&
         put(o, "network_latency", json_real(hw->net_latency)) &&
         put(o, "switch_reduce", json_boolean(hw->switch_reduce)) &&
         put(o, "switch_reduce_efficiency", json_real(hw->switch_reduce_eff));
  }
  json_decref(peaks);
  if (!ok) {                   /* not for memory: that throws */
    json_decref(o);
    err_throw("internal error: a hardware description that jansson cannot write");
  }
  return o;
}

char *hw_json_text(const Hw *hw) {
  mem_scope_begin();
  json_t *o = hw_json(hw);
  char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
  json_decref(o);
  mem_scope_end();
  if (!s) err_throw("internal error: jansson could not write a hardware description");
  return s;
}

bool hw_save(const Hw *hw, const char *path) {
  char *s = hw_json_text(hw);
  FILE *f = fopen(path, "w");
  bool ok = f && fputs(s, f) >= 0 && fputc('\n', f) != EOF;
  if (f && fclose(f) != 0) ok = false;
  mem_free(s);
  return ok;
}

/* ---- placement ---------------------------------------------------------------------- */

static int dim_of(char c) { return c >= 'x' && c <= 'z' ? c - 'x' : -1; }

/* Put mesh axis a (of size s) along the dimensions listed in dims (major
   first), splitting s into the largest factors that fit what is left. */
static bool place_axis(const Hw *hw, HwPlace *pl, int a, int64_t s, const int *dims, int nd) {
  int64_t rest = s;
  for (int k = 0; k < nd && rest > 1; k++) {
    int d = dims[k];
    int64_t room = hw->pod[d] / pl->slice[d];
    int64_t f = k == nd - 1 ? rest : 1;
    if (k < nd - 1)
      for (int64_t c = room < rest ? room : rest; c > 1; c--)
        if (rest % c == 0) { f = c; break; }
    if (f > room) return false;
    if (f > 1 || nd == 1) {
      pl->dim[a][pl->ndim[a]] = d;
      pl->extent[a][pl->ndim[a]++] = f;
      pl->slice[d] *= f;
      rest /= f;
    }
  }
  if (s == 1 && pl->ndim[a] == 0) {       /* an axis of size 1 lies anywhere */
    pl->dim[a][0] = dims[0];
    pl->extent[a][0] = 1;
    pl->ndim[a] = 1;
  }
  return rest == 1;
}

/* The default: the dimension with the fewest chips placed that can take
   the whole axis, else every dimension that has room, in order. */
static bool place_default(const Hw *hw, HwPlace *pl, int a, int64_t s) {
  int best = -1;
  for (int d = 0; d < hw->ndims; d++)
    if (pl->slice[d] * s <= hw->pod[d] && (best < 0 || pl->slice[d] < pl->slice[best])) best = d;
  if (best >= 0) return place_axis(hw, pl, a, s, &best, 1);
  int dims[HW_MAXDIMS], nd = 0;
  for (int d = 0; d < hw->ndims; d++)
    if (pl->slice[d] < hw->pod[d]) dims[nd++] = d;
  return nd > 0 && place_axis(hw, pl, a, s, dims, nd);
}

/* The dimensions the user's spec gives mesh axis `name`: 0 if none. */
static int spec_dims(const Hw *hw, const char *spec, Str name, int *dims, char *why, size_t n) {
  for (const char *p = spec; p && *p;) {
    const char *eq = strchr(p, '='), *end = strchr(p, ',');
    if (!end) end = p + strlen(p);
    if (!eq || eq > end) {
      snprintf(why, n, "bad placement '%.*s': write AXIS=DIMS, such as i=x,j=y", (int)(end - p), p);
      return -1;
    }
    if ((size_t)(eq - p) == (size_t)name.n && !memcmp(p, name.p, (size_t)name.n)) {
      int nd = 0;
      for (const char *c = eq + 1; c < end; c++) {
        int d = dim_of(*c);
        if (d < 0 || d >= hw->ndims || nd == HW_MAXDIMS) {
          snprintf(why, n, "bad placement of '%.*s': %s has dimensions %s", name.n, name.p, hw->name,
                   hw->ndims == 1 ? "x" : hw->ndims == 2 ? "x and y" : "x, y and z");
          return -1;
        }
        dims[nd++] = d;
      }
      return nd;
    }
    p = *end ? end + 1 : end;
  }
  return 0;
}

/* Strides: axes sharing a dimension nest, the first placed major. */
static void set_strides(const Hw *hw, HwPlace *pl, const int *order, int norder) {
  for (int d = 0; d < hw->ndims; d++) {
    int64_t inner = 1;
    for (int k = norder - 1; k >= 0; k--) {
      int a = order[k];
      for (int j = pl->ndim[a] - 1; j >= 0; j--)
        if (pl->dim[a][j] == d) {
          pl->stride[a][j] = inner;
          inner *= pl->extent[a][j];
        }
    }
  }
}

bool hw_place(const Hw *hw, const Mesh *mesh, const char *spec, HwPlace *pl, char *why, size_t n) {
  memset(pl, 0, sizeof *pl);
  pl->naxes = mesh->naxes;
  if (hw->topo != HW_TORUS) return true;
  for (int d = 0; d < HW_MAXDIMS; d++) pl->slice[d] = 1;
  int order[SHM_MAXAXES], norder = 0;
  /* the axes the user placed first, in mesh order, then the others */
  for (int pass = 0; pass < 2; pass++)
    for (int a = 0; a < mesh->naxes; a++) {
      int dims[HW_MAXDIMS];
      int nd = spec_dims(hw, spec, mesh->axis[a], dims, why, n);
      if (nd < 0) return false;
      if ((pass == 0) != (nd > 0)) continue;
      bool ok = nd ? place_axis(hw, pl, a, mesh->size[a], dims, nd) : place_default(hw, pl, a, mesh->size[a]);
      if (!ok) {
        snprintf(why, n, "%s%.*s%s does not fit on %s: axis '%.*s' of %lld devices has no room%s",
                 mesh->name.n ? "mesh '" : "the mesh", mesh->name.n, mesh->name.p, mesh->name.n ? "'" : "", hw->name,
                 mesh->axis[a].n, mesh->axis[a].p, (long long)mesh->size[a], nd ? " along the dimensions given" : "");
        return false;
      }
      order[norder++] = a;
    }
  set_strides(hw, pl, order, norder);
  bool cubes = true;
  for (int d = 0; d < hw->ndims; d++) cubes &= pl->slice[d] % hw->wrap_multiple == 0;
  for (int d = 0; d < hw->ndims; d++)
    pl->wrap[d] = pl->slice[d] > 2 && pl->slice[d] % hw->wrap_multiple == 0 && (cubes || !hw->wrap_cubes);
  return true;
}

void hw_coords(const Hw *hw, const Mesh *mesh, const HwPlace *pl, int64_t dev, int64_t *coords) {
  int64_t mc[SHM_MAXAXES];
  til_coords(mesh, dev, mc);
  for (int d = 0; d < HW_MAXDIMS; d++) coords[d] = 0;
  for (int a = 0; a < mesh->naxes && hw->topo == HW_TORUS; a++) {
    int64_t c = mc[a];
    for (int j = pl->ndim[a] - 1; j >= 0; j--) {
      coords[pl->dim[a][j]] += (c % pl->extent[a][j]) * pl->stride[a][j];
      c /= pl->extent[a][j];
    }
  }
}
