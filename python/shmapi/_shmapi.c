/*
** _shmapi.c — the CPython extension under the `shmapi` package: one
** Python object per shmapi_State (include/shmapi.h), NumPy arrays in and
** out.
**
** What it adds to the C API is only what Python needs:
**   - a lock per state, so that two Python threads may share one; the GIL
**     is released while shm code runs, so that different states run in
**     parallel;
**   - print and warning output handed to Python callables (the package
**     passes sys.stdout.write), called with the GIL held;
**   - errors raised as shmapi.Error carrying the diagnostics;
**   - arrays handed out become NumPy arrays over the state's own buffers
**     (no copy): each keeps a small owner object alive that holds the
**     shmapi_Array and a reference to the state, so the state outlives it.
**     Arrays passed in are read in place when C-contiguous and of a dtype
**     shmapi has (shmapi_call copies them into the state).
**
** The Python-level API (load, run_jaxpr, the notebook magic) is in
** python/shmapi/__init__.py; this module is its private base.
*/
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>
#include <pythread.h>
#include <stdbool.h>
#include <string.h>
#include "shmapi.h"

static PyObject *Error;            /* shmapi.Error, set by the package (set_error_class) */
static PyObject *bf16_dtype;       /* ml_dtypes.bfloat16's dtype, or NULL (set_bf16) */

/* ---- the state object ---------------------------------------------------------- */

typedef struct {
  PyObject_HEAD
  shmapi_State *S;
  PyThread_type_lock lock;
  PyObject *print_cb, *warn_cb;    /* callables taking a str, or NULL */
  PyObject *pic_cb;                /* a callable taking (text, svg), or NULL */
  PyObject *pending;               /* an exception a callback raised, re-raised after the call */
  PyObject *borrowed;              /* arrays bound without a copy: kept until the state closes */
} StateObject;

static PyTypeObject StateType;

/* The callbacks run on the thread running the state, with the GIL
   released around the C call: take it back for Python. */
static void write_to(StateObject *so, PyObject *cb, const char *text, size_t n) {
  if (!cb) return;
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject *s = PyUnicode_DecodeUTF8(text, (Py_ssize_t)n, "backslashreplace");
  PyObject *r = s ? PyObject_CallOneArg(cb, s) : NULL;
  if (!r && !so->pending) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    so->pending = v;
    Py_XDECREF(t);
    Py_XDECREF(tb);
  }
  PyErr_Clear();
  Py_XDECREF(r);
  Py_XDECREF(s);
  PyGILState_Release(g);
}

static void print_writer(void *ud, const char *text, size_t n) {
  StateObject *so = ud;
  write_to(so, so->print_cb, text, n);
}

static void warn_writer(void *ud, const char *text, size_t n) {
  StateObject *so = ud;
  write_to(so, so->warn_cb, text, n);
}

/* A visualize statement's picture: pic_cb(text, svg), or its text printed. */
static void picture_writer(void *ud, const char *text, const char *svg) {
  StateObject *so = ud;
  PyGILState_STATE g = PyGILState_Ensure();
  PyObject *cb = so->pic_cb;
  if (!cb) {
    PyGILState_Release(g);
    write_to(so, so->print_cb, text, strlen(text));
    return;
  }
  PyObject *r = PyObject_CallFunction(cb, "ss", text, svg);
  if (!r && !so->pending) {
    PyObject *t, *v, *tb;
    PyErr_Fetch(&t, &v, &tb);
    PyErr_NormalizeException(&t, &v, &tb);
    so->pending = v;
    Py_XDECREF(t);
    Py_XDECREF(tb);
  }
  PyErr_Clear();
  Py_XDECREF(r);
  PyGILState_Release(g);
}

static PyObject *State_new(PyTypeObject *type, PyObject *args, PyObject *kw) {
  static char *kws[] = {"max_memory", "max_steps", NULL};
  unsigned long long max_memory = 0;
  long long max_steps = 0;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|KL", kws, &max_memory, &max_steps)) return NULL;
  StateObject *so = (StateObject *)type->tp_alloc(type, 0);
  if (!so) return NULL;
  shmapi_Limits lim = {(size_t)max_memory, max_steps, 0};
  so->S = shmapi_open(&lim);
  so->lock = PyThread_allocate_lock();
  so->borrowed = PyList_New(0);
  if (!so->S || !so->lock || !so->borrowed) {
    Py_DECREF(so);
    return PyErr_NoMemory();
  }
  shmapi_set_print(so->S, print_writer, so);
  shmapi_set_warnings(so->S, warn_writer, so);
  shmapi_set_pictures(so->S, picture_writer, so);
  return (PyObject *)so;
}

static void State_dealloc(StateObject *so) {
  if (so->S) shmapi_close(so->S);
  if (so->lock) PyThread_free_lock(so->lock);
  Py_XDECREF(so->borrowed);
  Py_XDECREF(so->print_cb);
  Py_XDECREF(so->warn_cb);
  Py_XDECREF(so->pic_cb);
  Py_XDECREF(so->pending);
  Py_TYPE(so)->tp_free((PyObject *)so);
}

/* Run `body` on the state with its lock held and the GIL released. */
#define UNLOCKED(so, body)                              \
  do {                                                  \
    Py_BEGIN_ALLOW_THREADS                              \
    PyThread_acquire_lock((so)->lock, WAIT_LOCK);       \
    body;                                               \
    PyThread_release_lock((so)->lock);                  \
    Py_END_ALLOW_THREADS                                \
  } while (0)

/* shmapi.Error(message, diagnostics): each diagnostic a tuple
   (file, line, col, kind, message, text). */
static PyObject *raise_diags(StateObject *so, int rc) {
  if (so->pending) {               /* a callback failed: that comes first */
    PyObject *p = so->pending;
    so->pending = NULL;
    PyErr_SetObject((PyObject *)Py_TYPE(p), p);
    Py_DECREF(p);
    return NULL;
  }
  int n = shmapi_ndiags(so->S);
  PyObject *list = PyList_New(0);
  if (!list) return NULL;
  PyObject *text = PyUnicode_FromString("");
  for (int i = 0; i < n && text; i++) {
    const shmapi_Diag *d = shmapi_diag(so->S, i);
    PyObject *t = Py_BuildValue("(OiisNN)", d->file ? PyUnicode_DecodeFSDefault(d->file) : (Py_INCREF(Py_None), Py_None),
                                d->line, d->col, d->kind,
                                PyUnicode_DecodeUTF8(d->message, (Py_ssize_t)strlen(d->message), "backslashreplace"),
                                PyUnicode_DecodeUTF8(d->text, (Py_ssize_t)strlen(d->text), "backslashreplace"));
    if (!t || PyList_Append(list, t) < 0) {
      Py_XDECREF(t);
      Py_CLEAR(text);
      break;
    }
    Py_DECREF(t);
  }
  if (text) {
    PyObject *msg = PyUnicode_FromFormat("%s", n ? "" : (rc == SHMAPI_MISUSE ? "misuse of the shmapi API" : "shmapi failed"));
    PyObject *exc = msg ? PyObject_CallFunctionObjArgs(Error ? Error : PyExc_RuntimeError, msg, list, NULL) : NULL;
    if (exc) {
      PyErr_SetObject((PyObject *)Py_TYPE(exc), exc);
      Py_DECREF(exc);
    }
    Py_XDECREF(msg);
    Py_DECREF(text);
  }
  Py_DECREF(list);
  return NULL;
}

static PyObject *done(StateObject *so, int rc) {
  if (rc != SHMAPI_OK || so->pending) return raise_diags(so, rc);
  Py_RETURN_NONE;
}

/* ---- arrays: NumPy <-> shmapi_Array -------------------------------------------- */

static int npy_of(int dt) {
  static const int map[SHMAPI_NDTYPES] = {
    [SHMAPI_BOOL] = NPY_BOOL, [SHMAPI_I8] = NPY_INT8, [SHMAPI_I16] = NPY_INT16, [SHMAPI_I32] = NPY_INT32,
    [SHMAPI_I64] = NPY_INT64, [SHMAPI_U8] = NPY_UINT8, [SHMAPI_U16] = NPY_UINT16, [SHMAPI_U32] = NPY_UINT32,
    [SHMAPI_U64] = NPY_UINT64, [SHMAPI_F32] = NPY_FLOAT32, [SHMAPI_F64] = NPY_FLOAT64, [SHMAPI_BF16] = -1,
    [SHMAPI_F16] = NPY_FLOAT16, [SHMAPI_C64] = NPY_COMPLEX64, [SHMAPI_C128] = NPY_COMPLEX128};
  return map[dt];
}

/* shmapi's dtype of a NumPy dtype, or -1 (an exception set). */
static int dtype_of(PyArray_Descr *d) {
  if (bf16_dtype && PyArray_EquivTypes(d, (PyArray_Descr *)bf16_dtype)) return SHMAPI_BF16;
  if (d->byteorder == '>') {
    PyErr_Format(PyExc_TypeError, "shmapi takes arrays in the machine's byte order, not big-endian %R", (PyObject *)d);
    return -1;
  }
  for (int k = 0; k < SHMAPI_NDTYPES; k++)
    if (npy_of(k) >= 0 && d->type_num == npy_of(k) && d->elsize == (int)shmapi_dtype_size(k)) return k;
  /* C long vs long long: same width, other type number */
  if (PyDataType_ISINTEGER(d)) {
    bool s = PyDataType_ISSIGNED(d);
    switch (d->elsize) {
    case 1: return s ? SHMAPI_I8 : SHMAPI_U8;
    case 2: return s ? SHMAPI_I16 : SHMAPI_U16;
    case 4: return s ? SHMAPI_I32 : SHMAPI_U32;
    case 8: return s ? SHMAPI_I64 : SHMAPI_U64;
    }
  }
  if (d->kind == 'V' && d->elsize == 2 && !bf16_dtype) {
    PyErr_SetString(PyExc_TypeError, "bfloat16 arrays need the ml_dtypes package (pip install ml_dtypes)");
    return -1;
  }
  PyErr_Format(PyExc_TypeError, "shmapi has no dtype for %R", (PyObject *)d);
  return -1;
}

/* An argument: a NumPy array (or anything np.asarray takes) read in place
   when it is C-contiguous, aligned and of a dtype shmapi has; the array
   object is kept in *keep for as long as `a` is used. */
static int array_in(PyObject *o, shmapi_Array *a, PyObject **keep) {
  PyArrayObject *arr;
  if (PyArray_Check(o)) {
    Py_INCREF(o);
    arr = (PyArrayObject *)o;
  } else {
    arr = (PyArrayObject *)PyArray_FROM_OF(o, 0);
    if (!arr) return -1;
    /* Python scalars: JAX's defaults (f32, i32), as shm's literals */
    if (PyArray_NDIM(arr) == 0 && (PyFloat_CheckExact(o) || PyLong_CheckExact(o))) {
      PyArrayObject *c = (PyArrayObject *)PyArray_Cast(arr, PyFloat_CheckExact(o) ? NPY_FLOAT32 : NPY_INT32);
      Py_DECREF(arr);
      if (!c) return -1;
      arr = c;
    }
  }
  if (PyArray_NDIM(arr) > SHMAPI_MAX_NDIM) {
    PyErr_Format(PyExc_ValueError, "shmapi arrays have at most %d dimensions, got %d", SHMAPI_MAX_NDIM,
                 PyArray_NDIM(arr));
    Py_DECREF(arr);
    return -1;
  }
  int dt = dtype_of(PyArray_DESCR(arr));
  if (dt < 0) {
    Py_DECREF(arr);
    return -1;
  }
  if (!PyArray_IS_C_CONTIGUOUS(arr) || !PyArray_ISALIGNED(arr)) {
    PyArrayObject *c = (PyArrayObject *)PyArray_NewCopy(arr, NPY_CORDER);
    Py_DECREF(arr);
    if (!c) return -1;
    arr = c;
  }
  a->dtype = dt;
  a->ndim = PyArray_NDIM(arr);
  for (int k = 0; k < a->ndim; k++) a->shape[k] = PyArray_DIM(arr, k);
  a->data = PyArray_DATA(arr);
  *keep = (PyObject *)arr;
  return 0;
}

/* The owner of a handed-out array's buffer: frees it with the state alive. */
typedef struct {
  PyObject_HEAD
  shmapi_Array *a;                 /* freed with the owner, or NULL */
  StateObject *so;
  PyObject *keep;                  /* what else owns the buffer (a devices' owner), or NULL */
} OwnerObject;

static void Owner_dealloc(OwnerObject *o) {
  if (o->a) UNLOCKED(o->so, shmapi_array_free(o->a));
  Py_XDECREF(o->keep);
  Py_XDECREF(o->so);
  Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyTypeObject OwnerType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "shmapi._shmapi._Owner",
  .tp_basicsize = sizeof(OwnerObject),
  .tp_dealloc = (destructor)Owner_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "keeps an array's buffer (owned by a shmapi state) alive",
};

static PyArray_Descr *descr_of(int dt) {
  if (dt == SHMAPI_BF16) {
    if (!bf16_dtype) {
      PyErr_SetString(PyExc_TypeError, "this result is bfloat16: install the ml_dtypes package to receive it "
                                       "(pip install ml_dtypes), or convert it in shm (convert_element_type)");
      return NULL;
    }
    Py_INCREF(bf16_dtype);
    return (PyArray_Descr *)bf16_dtype;
  }
  return PyArray_DescrFromType(npy_of(dt));
}

/* A read-only NumPy array over a's buffer.  With `own`, a is released
   with it (owned by the returned array from here on, even on failure);
   otherwise `keep` owns the buffer and is kept alive by the array. */
static PyObject *array_out(StateObject *so, shmapi_Array *a, bool own, PyObject *keep) {
  PyArray_Descr *d = descr_of(a->dtype);
  if (!d) {
    if (own) shmapi_array_free(a);
    return NULL;
  }
  npy_intp dims[SHMAPI_MAX_NDIM];
  for (int k = 0; k < a->ndim; k++) dims[k] = (npy_intp)a->shape[k];
  PyObject *arr = PyArray_NewFromDescr(&PyArray_Type, d, a->ndim, dims, NULL, a->data, 0, NULL);
  if (!arr) {
    if (own) shmapi_array_free(a);
    return NULL;
  }
  OwnerObject *o = PyObject_New(OwnerObject, &OwnerType);
  if (!o) {
    if (own) shmapi_array_free(a);
    Py_DECREF(arr);
    return NULL;
  }
  o->a = own ? a : NULL;
  Py_INCREF(so);
  o->so = so;
  Py_XINCREF(keep);
  o->keep = keep;
  if (PyArray_SetBaseObject((PyArrayObject *)arr, (PyObject *)o) < 0) {
    Py_DECREF(arr);
    return NULL;
  }
  return arr;
}

/* The arguments of a call, read into args[] (kept alive by *keeps). */
static int args_in(PyObject *seq, shmapi_Array **args, PyObject **keeps, int *n) {
  PyObject *fast = PySequence_Fast(seq, "the arguments must be a sequence");
  if (!fast) return -1;
  Py_ssize_t m = PySequence_Fast_GET_SIZE(fast);
  *n = (int)m;
  *args = PyMem_Calloc(m ? (size_t)m : 1, sizeof(shmapi_Array));
  *keeps = PyTuple_New(m);
  if (!*args || !*keeps) {
    Py_DECREF(fast);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < m; i++) {
    PyObject *keep = NULL;
    if (array_in(PySequence_Fast_GET_ITEM(fast, i), &(*args)[i], &keep) < 0) {
      Py_DECREF(fast);
      return -1;
    }
    PyTuple_SET_ITEM(*keeps, i, keep);
  }
  Py_DECREF(fast);
  return 0;
}

/* ---- methods -------------------------------------------------------------------- */

static PyObject *State_set_output(StateObject *so, PyObject *args) {
  PyObject *p, *w;
  if (!PyArg_ParseTuple(args, "OO", &p, &w)) return NULL;
  Py_XSETREF(so->print_cb, p == Py_None ? NULL : (Py_INCREF(p), p));
  Py_XSETREF(so->warn_cb, w == Py_None ? NULL : (Py_INCREF(w), w));
  Py_RETURN_NONE;
}

static PyObject *State_set_pictures(StateObject *so, PyObject *cb) {
  Py_XSETREF(so->pic_cb, cb == Py_None ? NULL : (Py_INCREF(cb), cb));
  Py_RETURN_NONE;
}

static PyObject *State_load_string(StateObject *so, PyObject *args) {
  const char *name, *text;
  Py_ssize_t len;
  if (!PyArg_ParseTuple(args, "ss#", &name, &text, &len)) return NULL;
  int rc;
  UNLOCKED(so, rc = shmapi_load_string(so->S, name, text, (size_t)len));
  return done(so, rc);
}

static PyObject *State_load_file(StateObject *so, PyObject *args) {
  PyObject *path;
  if (!PyArg_ParseTuple(args, "O&", PyUnicode_FSConverter, &path)) return NULL;
  int rc;
  const char *p = PyBytes_AS_STRING(path);
  UNLOCKED(so, rc = shmapi_load_file(so->S, p));
  Py_DECREF(path);
  return done(so, rc);
}

static PyObject *State_run(StateObject *so, PyObject *noargs) {
  (void)noargs;
  int rc;
  UNLOCKED(so, rc = shmapi_run(so->S));
  return done(so, rc);
}

static PyObject *State_interrupt(StateObject *so, PyObject *noargs) {
  (void)noargs;
  shmapi_interrupt(so->S);
  Py_RETURN_NONE;
}

static PyObject *State_has_function(StateObject *so, PyObject *args) {
  const char *name;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
  int r;
  UNLOCKED(so, r = shmapi_has_function(so->S, name));
  return PyBool_FromLong(r);
}

/* set_global(name, value, copy): with copy false, an array read in place
   is bound without a copy (SHMAPI_BORROW) and kept alive by the state. */
static PyObject *State_set_global(StateObject *so, PyObject *args) {
  const char *name;
  PyObject *value;
  int copy = 1;
  if (!PyArg_ParseTuple(args, "sO|p", &name, &value, &copy)) return NULL;
  shmapi_Array a;
  PyObject *keep = NULL;
  if (array_in(value, &a, &keep) < 0) return NULL;
  bool borrow = !copy && keep == value;          /* not a converted or contiguous copy */
  int rc;
  UNLOCKED(so, rc = shmapi_set_global(so->S, name, &a, borrow ? SHMAPI_BORROW : SHMAPI_COPY));
  if (rc == SHMAPI_OK && borrow && PyList_Append(so->borrowed, keep) < 0) {
    Py_DECREF(keep);
    return NULL;
  }
  Py_DECREF(keep);
  return done(so, rc);
}

static PyObject *State_get_global(StateObject *so, PyObject *args) {
  const char *name;
  if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
  shmapi_Array *out = NULL;
  int rc;
  UNLOCKED(so, rc = shmapi_get_global(so->S, name, &out));
  if (rc != SHMAPI_OK) return raise_diags(so, rc);
  return array_out(so, out, true, NULL);
}

static PyObject *State_call(StateObject *so, PyObject *args) {
  const char *name;
  PyObject *seq;
  if (!PyArg_ParseTuple(args, "sO", &name, &seq)) return NULL;
  shmapi_Array *in = NULL;
  PyObject *keeps = NULL;
  int n = 0, nouts = 0, rc;
  enum { MAXOUTS = 256 };
  shmapi_Array *outs[MAXOUTS];
  PyObject *res = NULL;
  if (args_in(seq, &in, &keeps, &n) == 0) {
    UNLOCKED(so, rc = shmapi_call(so->S, name, in, n, outs, MAXOUTS, &nouts));
    if (rc != SHMAPI_OK || so->pending) {
      UNLOCKED(so, for (int k = 0; k < nouts; k++) shmapi_array_free(outs[k]));
      raise_diags(so, rc);
    } else if ((res = PyTuple_New(nouts))) {
      for (int k = 0; k < nouts; k++) {
        PyObject *o = res ? array_out(so, outs[k], true, NULL) : NULL;
        if (!res) UNLOCKED(so, shmapi_array_free(outs[k]));
        if (!o) Py_CLEAR(res);
        else PyTuple_SET_ITEM(res, k, o);
      }
    }
  }
  PyMem_Free(in);
  Py_XDECREF(keeps);
  return res;
}

/* The owner of a shmapi_Devices: its arrays live as long as it. */
typedef struct {
  PyObject_HEAD
  shmapi_Devices *d;
  StateObject *so;
} DevOwnerObject;

static void DevOwner_dealloc(DevOwnerObject *o) {
  if (o->d) UNLOCKED(o->so, shmapi_devices_free(o->d));
  Py_XDECREF(o->so);
  Py_TYPE(o)->tp_free((PyObject *)o);
}

static PyTypeObject DevOwnerType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "shmapi._shmapi._DevicesOwner",
  .tp_basicsize = sizeof(DevOwnerObject),
  .tp_dealloc = (destructor)DevOwner_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "keeps a per-device description (owned by a shmapi state) alive",
};

static PyObject *State_call_devices(StateObject *so, PyObject *args) {
  const char *name;
  PyObject *seq;
  if (!PyArg_ParseTuple(args, "sO", &name, &seq)) return NULL;
  shmapi_Array *in = NULL;
  PyObject *keeps = NULL, *res = NULL;
  int n = 0, rc;
  shmapi_Devices *d = NULL;
  if (args_in(seq, &in, &keeps, &n) < 0) goto out;
  UNLOCKED(so, rc = shmapi_call_devices(so->S, name, in, n, &d));
  if (rc != SHMAPI_OK || so->pending) {
    if (d) UNLOCKED(so, shmapi_devices_free(d));
    raise_diags(so, rc);
    goto out;
  }
  DevOwnerObject *owner = PyObject_New(DevOwnerObject, &DevOwnerType);
  if (!owner) {
    UNLOCKED(so, shmapi_devices_free(d));
    goto out;
  }
  owner->d = d;
  Py_INCREF(so);
  owner->so = so;
  PyObject *axes = PyList_New(d->naxes), *outs = PyList_New(d->nouts), *blocks = PyList_New(d->nblocks);
  bool ok = axes && outs && blocks;
  for (int k = 0; ok && k < d->naxes; k++)
    PyList_SET_ITEM(axes, k, Py_BuildValue("(sL)", d->axis[k], (long long)d->axis_size[k]));
  for (int k = 0; ok && k < d->nouts; k++) {
    PyObject *a = array_out(so, d->outs[k], false, (PyObject *)owner);
    if (!a) ok = false;
    else PyList_SET_ITEM(outs, k, a);
  }
  for (int64_t k = 0; ok && k < d->nblocks; k++) {
    shmapi_Block *bl = &d->blocks[k];
    PyObject *coords = PyTuple_New(d->naxes);
    for (int j = 0; coords && j < d->naxes; j++) PyTuple_SET_ITEM(coords, j, PyLong_FromLongLong(bl->coords[j]));
    PyObject *a = coords ? array_out(so, bl->array, false, (PyObject *)owner) : NULL;
    PyObject *t = a ? Py_BuildValue("(iLNN)", bl->output, (long long)bl->device, coords, a) : NULL;
    if (!t) ok = false;
    else PyList_SET_ITEM(blocks, k, t);
  }
  if (ok) res = Py_BuildValue("(NNNN)", axes, outs, blocks, (PyObject *)owner);   /* owner: kept by the arrays too */
  else {
    Py_XDECREF(axes);
    Py_XDECREF(outs);
    Py_XDECREF(blocks);
    Py_DECREF(owner);
  }
out:
  PyMem_Free(in);
  Py_XDECREF(keeps);
  return res;
}

/* A line of the report as a dict (shmapi.CostLine's fields). */
static PyObject *cost_line_dict(const shmapi_CostLine *l) {
  return Py_BuildValue("{s:N,s:i,s:O,s:s,s:N,s:L,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:d,s:s,s:s}", "file",
                       PyUnicode_DecodeFSDefault(l->file), "line", l->line, "backward", l->backward ? Py_True : Py_False,
                       "primitive", l->primitive, "source",
                       PyUnicode_DecodeUTF8(l->source, (Py_ssize_t)strlen(l->source), "backslashreplace"), "runs",
                       l->runs, "time", l->time, "compute", l->compute, "comm", l->comm, "waited", l->waited, "share",
                       l->share, "flops", l->flops, "hbm_bytes", l->hbm_bytes, "coll_bytes", l->coll_bytes, "limit",
                       l->limit, "how", l->how);
}

static PyObject *cost_dict(const shmapi_Cost *c) {
  PyObject *devs = PyList_New(c->devices), *lines = PyList_New(c->nlines), *notes = PyList_New(c->nnotes);
  bool ok = devs && lines && notes;
  for (int64_t d = 0; ok && d < c->devices; d++) {
    const shmapi_CostDevice *v = &c->device[d];
    PyObject *t = Py_BuildValue("{s:d,s:d,s:d,s:d,s:d}", "compute", v->compute, "comm", v->comm, "exposed",
                                v->exposed, "idle", v->idle, "peak_hbm", v->peak_hbm);
    if (!t) ok = false;
    else PyList_SET_ITEM(devs, d, t);
  }
  for (int i = 0; ok && i < c->nlines; i++) {
    PyObject *t = cost_line_dict(&c->lines[i]);
    if (!t) ok = false;
    else PyList_SET_ITEM(lines, i, t);
  }
  for (int i = 0; ok && i < c->nnotes; i++) {
    PyObject *t = PyUnicode_DecodeUTF8(c->notes[i], (Py_ssize_t)strlen(c->notes[i]), "backslashreplace");
    if (!t) ok = false;
    else PyList_SET_ITEM(notes, i, t);
  }
  if (!ok) {
    Py_XDECREF(devs);
    Py_XDECREF(lines);
    Py_XDECREF(notes);
    return NULL;
  }
  PyObject *peak_at = c->peak_at ? PyUnicode_DecodeUTF8(c->peak_at, (Py_ssize_t)strlen(c->peak_at), "backslashreplace")
                                 : (Py_INCREF(Py_None), Py_None);
  return Py_BuildValue("{s:N,s:s,s:d,s:d,s:d,s:d,s:d,s:d,s:L,s:N,s:N,s:L,s:N,s:L,s:N}", "report",
                       PyUnicode_DecodeUTF8(c->report, (Py_ssize_t)strlen(c->report), "backslashreplace"), "hardware",
                       c->hardware, "makespan", c->makespan, "compute", c->compute, "comm", c->comm, "exposed",
                       c->exposed, "peak_hbm", c->peak_hbm, "bytes_sent", c->bytes_sent, "devices",
                       (long long)c->devices, "device", devs, "lines", lines, "peak_device", (long long)c->peak_device,
                       "peak_at", peak_at, "outside", c->outside, "notes", notes);
}

static PyObject *State_run_cost(StateObject *so, PyObject *args) {
  const char *hw = NULL, *place = NULL, *trace = NULL;
  int abstract = 0;
  if (!PyArg_ParseTuple(args, "z|zpz", &hw, &place, &abstract, &trace)) return NULL;
  shmapi_CostOptions o = {hw, trace, place, abstract};
  shmapi_Cost *c = NULL;
  int rc;
  UNLOCKED(so, rc = shmapi_run_cost_with(so->S, &o, &c));
  if (rc != SHMAPI_OK || so->pending) {
    if (c) UNLOCKED(so, shmapi_cost_free(c));
    return raise_diags(so, rc);
  }
  PyObject *r = cost_dict(c);
  UNLOCKED(so, shmapi_cost_free(c));
  return r;
}

/* The arguments of an abstract call: (shape, dtype) pairs, the dtype
   shmapi's number; no data. */
static int types_in(PyObject *seq, shmapi_Array **args, int *n) {
  PyObject *fast = PySequence_Fast(seq, "the arguments must be a sequence");
  if (!fast) return -1;
  Py_ssize_t m = PySequence_Fast_GET_SIZE(fast);
  *n = (int)m;
  *args = PyMem_Calloc(m ? (size_t)m : 1, sizeof(shmapi_Array));
  if (!*args) {
    Py_DECREF(fast);
    PyErr_NoMemory();
    return -1;
  }
  for (Py_ssize_t i = 0; i < m; i++) {
    PyObject *shape;
    int dt;
    if (!PyArg_ParseTuple(PySequence_Fast_GET_ITEM(fast, i), "Oi", &shape, &dt)) break;
    PyObject *sf = PySequence_Fast(shape, "a shape is a sequence of ints");
    if (!sf) break;
    Py_ssize_t nd = PySequence_Fast_GET_SIZE(sf);
    if (nd > SHMAPI_MAX_NDIM) {
      PyErr_Format(PyExc_ValueError, "shmapi arrays have at most %d dimensions, got %zd", SHMAPI_MAX_NDIM, nd);
      Py_DECREF(sf);
      break;
    }
    shmapi_Array *a = &(*args)[i];
    a->dtype = dt;
    a->ndim = (int)nd;
    for (Py_ssize_t k = 0; k < nd; k++) a->shape[k] = PyLong_AsLongLong(PySequence_Fast_GET_ITEM(sf, k));
    Py_DECREF(sf);
    if (PyErr_Occurred()) break;
  }
  Py_DECREF(fast);
  return PyErr_Occurred() ? -1 : 0;
}

static PyObject *State_call_cost(StateObject *so, PyObject *args) {
  const char *name, *hw = NULL, *trace = NULL, *place = NULL;
  PyObject *seq;
  int abstract = 0;
  if (!PyArg_ParseTuple(args, "sOzz|zp", &name, &seq, &hw, &trace, &place, &abstract)) return NULL;
  shmapi_Array *in = NULL;
  PyObject *keeps = NULL, *res = NULL;
  int n = 0, rc;
  if ((abstract ? types_in(seq, &in, &n) : args_in(seq, &in, &keeps, &n)) == 0) {
    shmapi_CostOptions o = {hw, trace, place, abstract};
    shmapi_Cost *c = NULL;
    UNLOCKED(so, rc = shmapi_call_cost_with(so->S, name, in, n, &o, &c));
    if (rc != SHMAPI_OK || so->pending) {
      if (c) UNLOCKED(so, shmapi_cost_free(c));
      raise_diags(so, rc);
    } else {
      res = cost_dict(c);
      UNLOCKED(so, shmapi_cost_free(c));
    }
  }
  PyMem_Free(in);
  Py_XDECREF(keeps);
  return res;
}

static void stats_to_file(void *ud, const char *text, size_t n) { fwrite(text, 1, n, (FILE *)ud); }

static void append_text(void *ud, const char *text, size_t n) {
  PyObject **s = ud;
  *s = PyUnicode_DecodeUTF8(text, (Py_ssize_t)n, "backslashreplace");
}

static PyObject *State_stats(StateObject *so, PyObject *args) {
  int reset = 0;
  if (!PyArg_ParseTuple(args, "|p", &reset)) return NULL;
  PyObject *text = NULL;
  int rc;
  /* the writer runs in this thread with the lock held: it makes the str
     after the GIL is back */
  char *copy = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&copy, &len);
  if (!f) return PyErr_NoMemory();
  UNLOCKED(so, rc = shmapi_stats(so->S, stats_to_file, f); if (rc == SHMAPI_OK && reset) shmapi_stats_reset(so->S));
  fclose(f);
  if (rc == SHMAPI_OK) append_text(&text, copy, len);
  free(copy);
  if (rc != SHMAPI_OK) return raise_diags(so, rc);
  return text;
}

static PyObject *State_memory_in_use(StateObject *so, PyObject *noargs) {
  (void)noargs;
  size_t n;
  UNLOCKED(so, n = shmapi_memory_in_use(so->S));
  return PyLong_FromSize_t(n);
}

static PyMethodDef State_methods[] = {
  {"set_output", (PyCFunction)State_set_output, METH_VARARGS, "set_output(print, warn): callables taking text, or None"},
  {"set_pictures", (PyCFunction)State_set_pictures, METH_O,
   "set_pictures(fn): visualize's pictures go to fn(text, svg) (None: their text is printed)"},
  {"load_string", (PyCFunction)State_load_string, METH_VARARGS, "load_string(name, text): parse and check shm text"},
  {"load_file", (PyCFunction)State_load_file, METH_VARARGS, "load_file(path): parse and check a .shm file"},
  {"run", (PyCFunction)State_run, METH_NOARGS, "run(): run the top-level statements not yet run"},
  {"interrupt", (PyCFunction)State_interrupt, METH_NOARGS, "interrupt(): stop what runs at its next loop step"},
  {"has_function", (PyCFunction)State_has_function, METH_VARARGS, "has_function(name) -> bool"},
  {"set_global", (PyCFunction)State_set_global, METH_VARARGS, "set_global(name, array): bind a top-level variable"},
  {"get_global", (PyCFunction)State_get_global, METH_VARARGS, "get_global(name) -> ndarray"},
  {"call", (PyCFunction)State_call, METH_VARARGS, "call(name, args) -> tuple of ndarrays"},
  {"call_devices", (PyCFunction)State_call_devices, METH_VARARGS,
   "call_devices(name, args) -> (axes, outs, blocks, owner): blocks are (output, device, coords, array)"},
  {"run_cost", (PyCFunction)State_run_cost, METH_VARARGS,
   "run_cost(hardware, place=None, abstract=False, trace=None) -> dict: run (or, abstract, model) under the cost "
   "model"},
  {"call_cost", (PyCFunction)State_call_cost, METH_VARARGS,
   "call_cost(name, args, hardware, trace, place=None, abstract=False) -> dict: one call under the cost model "
   "(abstract: args are (shape, dtype number) pairs)"},
  {"stats", (PyCFunction)State_stats, METH_VARARGS, "stats(reset=False) -> str: the table of --stats"},
  {"memory_in_use", (PyCFunction)State_memory_in_use, METH_NOARGS, "bytes the state holds"},
  {NULL, NULL, 0, NULL}};

static PyTypeObject StateType = {
  PyVarObject_HEAD_INIT(NULL, 0)
  .tp_name = "shmapi._shmapi.State",
  .tp_basicsize = sizeof(StateObject),
  .tp_dealloc = (destructor)State_dealloc,
  .tp_flags = Py_TPFLAGS_DEFAULT,
  .tp_doc = "State(max_memory=0, max_steps=0): one shmapi interpreter (shmapi_State)",
  .tp_methods = State_methods,
  .tp_new = State_new,
};

/* ---- the module ------------------------------------------------------------------ */

static PyObject *set_error_class(PyObject *self, PyObject *cls) {
  (void)self;
  Py_XSETREF(Error, (Py_INCREF(cls), cls));
  Py_RETURN_NONE;
}

static PyObject *set_bf16(PyObject *self, PyObject *dt) {
  (void)self;
  if (dt != Py_None && !PyArray_DescrCheck(dt)) {
    PyErr_SetString(PyExc_TypeError, "set_bf16 takes a numpy dtype or None");
    return NULL;
  }
  Py_XSETREF(bf16_dtype, dt == Py_None ? NULL : (Py_INCREF(dt), dt));
  Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
  {"set_error_class", set_error_class, METH_O, "the exception class errors raise"},
  {"set_bf16", set_bf16, METH_O, "the dtype bfloat16 arrays have (ml_dtypes.bfloat16), or None"},
  {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_shmapi", "shmapi's C extension (use the shmapi package)",
                                    -1, module_methods, NULL, NULL, NULL, NULL};

/* dtype_names: shmapi's dtype names ("f32") in its numbering. */
static int add_dtype_names(PyObject *m) {
  PyObject *t = PyTuple_New(SHMAPI_NDTYPES);
  if (!t) return -1;
  for (int k = 0; k < SHMAPI_NDTYPES; k++) {
    PyObject *n = PyUnicode_FromString(shmapi_dtype_name(k));
    if (!n) {
      Py_DECREF(t);
      return -1;
    }
    PyTuple_SET_ITEM(t, k, n);
  }
  return PyModule_AddObject(m, "dtype_names", t) < 0 ? (Py_DECREF(t), -1) : 0;
}

PyMODINIT_FUNC PyInit__shmapi(void) {
  import_array();
  if (PyType_Ready(&StateType) < 0 || PyType_Ready(&OwnerType) < 0 || PyType_Ready(&DevOwnerType) < 0) return NULL;
  PyObject *m = PyModule_Create(&module);
  if (!m) return NULL;
  Py_INCREF(&StateType);
  if (PyModule_AddObject(m, "State", (PyObject *)&StateType) < 0 ||
      PyModule_AddStringConstant(m, "version", shmapi_version()) < 0 || add_dtype_names(m) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
