/*
** dynlib.c — shared libraries opened on first use (see dynlib.h).
*/
#include <dlfcn.h>
#include <stdio.h>
#include "dynlib.h"

void *dyn_open(const char *const *names, char *err, size_t n) {
  for (size_t i = 0; names[i]; i++) {
    void *h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (h) return h;
  }
  const char *why = dlerror();
  snprintf(err, n, "cannot load %s: %s", names[0], why ? why : "not found");
  return NULL;
}

DynFn dyn_sym(void *h, const char *name, char *err, size_t n) {
  /* POSIX guarantees that dlsym's object pointer converts to the
     function's pointer; ISO C has no conversion, hence the union. */
  union { void *p; DynFn f; } u;
  u.p = dlsym(h, name);
  if (!u.p) {
    snprintf(err, n, "the library has no %s", name);
    return NULL;
  }
  return u.f;
}

bool dyn_load(DynLib *l, void (*open)(void)) {
  pthread_once(&l->once, open);
  return l->ok;
}
