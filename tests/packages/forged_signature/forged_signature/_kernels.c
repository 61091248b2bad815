/* A kernel module whose kernels declare what they fit (pc_kernel.inputs, outputs, dtypes),
 * some of them not what ops.pbtxt binds them to. Every kernel computes out = 2 * x on float64
 * and reads slot 0 only, so a kernel the core wrongly let through would still run. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "kernel_abi.h"

static pc_status twice_run(void* state, const pc_tensors* in, const pc_tensors* out,
                           pc_context* ctx) {
  (void)state, (void)ctx;
  const pc_tensor* x = &in->items[0];
  int64_t n = 1;
  for (int32_t k = 0; k < x->ndim; ++k) n *= x->shape[k];
  const double* xs = (const double*)x->data;
  double* os = (double*)out->items[0].data;
  for (int64_t i = 0; i < n; ++i) os[i] = 2 * xs[i];
  return PC_OK;
}

static const int32_t floats[] = {PC_FLOAT64, 0};
static const int32_t ints[] = {PC_INT32, 0};

#define KERNEL(name, inputs, outputs, dtypes)                                                  \
  {PADDLE_CORE_KERNEL_ABI_VERSION, sizeof(pc_kernel), name, NULL, twice_run, NULL, inputs,     \
   outputs, dtypes}

static const pc_kernel table[] = {
    KERNEL("twice", "1", "1", floats),
    KERNEL("pair", "11", "1", floats),
    KERNEL("ints", "1", "1", ints),
    KERNEL("garbled", "1x", "1", floats),
    KERNEL("undeclared", NULL, NULL, NULL), /* declares nothing: not checked */
};

static PyObject* kernels(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  PyObject* dict = PyDict_New();
  if (dict == NULL) return NULL;
  for (size_t k = 0; k < sizeof table / sizeof table[0]; ++k) {
    PyObject* capsule = PyCapsule_New((void*)&table[k], PADDLE_CORE_KERNEL_CAPSULE, NULL);
    if (capsule == NULL || PyDict_SetItemString(dict, table[k].name, capsule) < 0) {
      Py_XDECREF(capsule);
      Py_DECREF(dict);
      return NULL;
    }
    Py_DECREF(capsule);
  }
  return dict;
}

static PyMethodDef methods[] = {
    {"kernels", kernels, METH_NOARGS, "The kernel table: symbol name -> capsule of a pc_kernel."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_kernels", NULL, -1, methods};

PyMODINIT_FUNC PyInit__kernels(void) {
  char layout[2048];
  PyObject* m = PyModule_Create(&module);
  if (m == NULL) return NULL;
  pc_kernel_layout(layout, sizeof layout);
  if (PyModule_AddIntConstant(m, "KERNEL_ABI_VERSION", PADDLE_CORE_KERNEL_ABI_VERSION) < 0 ||
      PyModule_AddStringConstant(m, "KERNEL_LAYOUT", layout) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
