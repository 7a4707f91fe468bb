/*
** dynlib.h — shared libraries opened on first use.
**
** Every library shmapi links at start-up is paid for by every run, even
** `shmapi -c 'print 1'`: the dynamic loader maps it and resolves its
** symbols (OpenBLAS alone took several milliseconds; libzip with the
** libcrypto it pulls in, and FFTW, about a millisecond together).  The
** libraries only some programs need are therefore opened with dlopen the
** first time they are needed: OpenBLAS (blas.c) for a float matrix
** product, libzip (npy.c) for an .npz archive, FFTW (fft.c) for an fft.
** Only their headers are used at build time.
**
** A user of a library keeps a struct of function pointers, one per entry
** point, typed with __typeof__ from the library's own header, filled by
** an opening function (dyn_open, DYN_SYM) that dyn_load runs once.
*/
#ifndef SHM_DYNLIB_H
#define SHM_DYNLIB_H
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

/* A library opened at most once: whether it was, and if not why. */
typedef struct DynLib {
  pthread_once_t once;
  bool ok;
  char why[256];
} DynLib;
#define DYN_LIB_INIT {PTHREAD_ONCE_INIT, false, ""}

/* Run open (which sets l->ok, or l->why) the first time, from any thread;
   then whether the library is there. */
bool dyn_load(DynLib *l, void (*open)(void));

typedef void (*DynFn)(void);

/* Open the first of `names` (sonames, a NULL-terminated list) that loads.
   Returns the handle, or NULL with why in err[0..n). */
void *dyn_open(const char *const *names, char *err, size_t n);
/* The entry point `name` of library h, or NULL with why in err[0..n). */
DynFn dyn_sym(void *h, const char *name, char *err, size_t n);
/* Fill the pointer `fn` of struct s with the entry point of that name;
   on failure set ok to false (err says why). */
#define DYN_SYM(s, h, fn, ok, err, n)                               \
  do {                                                              \
    DynFn f_ = (ok) ? dyn_sym((h), #fn, (err), (n)) : NULL;         \
    if (!f_) (ok) = false;                                          \
    (s).fn = (__typeof__((s).fn))f_;                                \
  } while (0)

#endif
