/*
** _fabric_deadlock.c — unit check of the fabric's deadlock guard
** (fabric.c, check_groups), built and run by fabric_deadlock.test.sh.
**
** The checker rejects every program that could reach a collective with
** only part of its group (a collective under a predicate that varies
** along its axes), so no .shm program can show the guard at work: this
** driver calls fab_exec directly with a partly running mesh.
**
** On a 2x2 mesh (i, j), psum over j groups devices {0, 1} (i = 0) and
** {2, 3} (i = 1).  Running {0, 2, 3}: the group of device 0 is split, a
** deadlock.  Running {2, 3}: whole groups only, fine.  psum over (i, j)
** with {0, 2, 3}: one group, split.  pbroadcast moves nothing: no check.
*/
#include <stdio.h>
#include "err.h"
#include "fabric.h"

static Mesh mesh;

static int run(const char *what, int prim, uint32_t axmask, const uint8_t *active) {
  Space sp = {&mesh, mesh.ndev, active};
  Attrs at;
  memset(&at, 0, sizeof at);
  for (int k = 0; k < mesh.naxes; k++)
    if (axmask & (1u << k)) at.axes[at.naxes++] = (uint8_t)k;
  at.axmask = axmask;
  Val *in = val_new(3, 4);
  for (int d = 0; d < 4; d++) in->blk[d] = arr_scalar_f(DT_F32, d);
  Type outt;
  memset(&outt, 0, sizeof outt);
  outt.dt = DT_F32;
  outt.vma = prim == P_PBROADCAST ? 3 : 3 & ~axmask;
  ErrJmp j;
  if (ERR_TRY(&j)) {
    Val *r = fab_exec(&sp, prim, &at, in, &outt, false);
    err_end(&j);
    val_unref(r);
    printf("%s: ran\n", what);
  } else {
    printf("%s: %s\n", what, err_message());
  }
  val_unref(in);
  return 0;
}

int main(void) {
  mesh.naxes = 2;
  mesh.axis[0] = str_c("i");
  mesh.axis[1] = str_c("j");
  mesh.size[0] = mesh.size[1] = 2;
  mesh.ndev = 4;
  static const uint8_t split[4] = {1, 0, 1, 1}, whole[4] = {0, 0, 1, 1};
  run("psum j, devices 0 2 3", P_PSUM, 2, split);
  run("psum j, devices 2 3", P_PSUM, 2, whole);
  run("psum (i, j), devices 0 2 3", P_PSUM, 3, split);
  run("all_gather j, devices 0 2 3", P_ALL_GATHER, 2, split);
  run("pbroadcast j, devices 0 2 3", P_PBROADCAST, 2, split);
  run("psum j, all devices", P_PSUM, 2, NULL);
  if (mem_in_use()) {
    printf("leaked %zu bytes\n", mem_in_use());
    return 1;
  }
  return 0;
}
