/*
** npy.h — NumPy's .npy files and .npz archives (npy.c).
**
** A .npy file is a magic string, a version, a header — a Python dict
** literal {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }
** padded with spaces to a newline — and the elements.  Every dtype of
** shmapi reads and writes (bfloat16 as the 2-byte void '<V2' NumPy writes
** for ml_dtypes.bfloat16), in either byte order and in C or Fortran
** order; header versions 1.0, 2.0 and 3.0.  An .npz archive is a zip of
** .npy files, `name.npy` each, stored or deflated (np.savez,
** np.savez_compressed), read with libzip.
**
** Nothing here prints: a failure returns NULL (false) with a message for
** the caller's diagnostic in `err`.  Arrays come from arr_new; running out
** of memory unwinds as everywhere (err.h), releasing what was taken.
*/
#ifndef SHM_NPY_H
#define SHM_NPY_H

#include "array.h"

#define NPY_ERRLEN 512

/* The array a .npy file holds; with `key`, the member key.npy (or key) of
   the .npz archive at path.  NULL with a message in err. */
Array *npy_load(const char *path, const char *key, char *err);
/* The array in n bytes of .npy data; `what` names them in messages. */
Array *npy_parse(const unsigned char *buf, size_t n, const char *what, char *err);
/* The member key of an .npz archive held in n bytes. */
Array *npy_parse_npz(const unsigned char *data, size_t n, const char *key, char *err);
/* Write a as a .npy file (version 1.0, little-endian, C order). */
bool npy_save(const char *path, const Array *a, char *err);
/* The .npy bytes of a (as npy_save writes them) appended to *out, *n. */
void npy_encode(const Array *a, unsigned char **out, size_t *n);

#endif
