/*
** fuzz_hw.c — libFuzzer harness: a hardware description (--hardware
** FILE.json) from arbitrary bytes.  It is parsed (hw_parse, through
** jansson); one that parses is written back as JSON and read again, which
** must give the same description, and is placed a mesh on (hw_place) and
** costs a collective formula, which must not crash whatever its numbers.
** As fuzz_common.h says: each input starts from nothing and ends with
** nothing, and one in four has an allocation fail.  The seed corpus is
** fuzz/corpus/hw/ (the presets, saved, and descriptions with mistakes).
*/
#include "cost.h"
#include "fuzz_common.h"
#include "hw.h"

/* Write hw out and read it back: the same description. */
static void round_trip(const Hw *hw) {
  char *text = hw_json_text(hw);
  err_defer(mem_free, text);
  Hw again;
  if (!hw_parse("again.json", text, strlen(text), &again, fuzz_sink)) {
    fprintf(stderr, "fuzz_hw: a description written by hw_json_text does not parse:\n%s\n", text);
    abort();
  }
  char *text2 = hw_json_text(&again);
  if (strcmp(text, text2)) {
    fprintf(stderr, "fuzz_hw: written twice, two texts:\n%s\n%s\n", text, text2);
    abort();
  }
  mem_free(text2);
  err_undefer(text);
  mem_free(text);
}

/* Place a few meshes and cost each collective's formula. */
static void exercise(const Hw *hw) {
  Mesh m = {0};
  m.name = str_c("m");
  m.naxes = 2;
  m.axis[0] = str_c("i");
  m.axis[1] = str_c("j");
  int64_t sizes[][2] = {{4, 4}, {16, 16}, {2, 8}, {1, 3}};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    m.size[0] = sizes[k][0];
    m.size[1] = sizes[k][1];
    m.ndev = sizes[k][0] * sizes[k][1];
    HwPlace pl;
    char why[200];
    if (!hw_place(hw, &m, k == 3 ? "i=x,j=x" : NULL, &pl, why, sizeof why)) continue;
    int64_t ext[HW_MAXDIMS] = {4, 2, 1}, stride[HW_MAXDIMS] = {1, 4, 1};
    bool ring[HW_MAXDIMS] = {true, false, false};
    int prims[] = {P_PSUM, P_ALL_GATHER, P_PSUM_SCATTER, P_ALL_TO_ALL};
    for (size_t p = 0; p < sizeof prims / sizeof prims[0]; p++) {
      Cost c = hw->topo == HW_TORUS ? cost_torus_formula(hw, prims[p], hw->ndims, ext, stride, ring, 4096, 16384)
                                    : cost_switch_formula(hw, prims[p], m.ndev, 2, 4096, 16384);
      if (!(c.time >= 0)) {
        fprintf(stderr, "fuzz_hw: a cost is not a time: %g\n", c.time);
        abort();
      }
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  hw_json_init();
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < size; i++) h = (h ^ data[i]) * 16777619u;
  if ((h & 3) == 0) mem_fail_after(1 + (long)((h >> 2) % 200));
  ErrJmp j;
  if (ERR_TRY(&j)) {
    Hw hw;
    if (hw_parse("fuzz.json", (const char *)data, size, &hw, fuzz_sink)) {
      round_trip(&hw);
      exercise(&hw);
    }
    err_end(&j);
  }
  diag_reset();
  mem_fail_after(0);
  hw_json_init();
  if (mem_in_use() != 0) {
    fprintf(stderr, "fuzz_hw: %zu bytes still allocated after the input was released\n", mem_in_use());
    abort();
  }
  return 0;
}
