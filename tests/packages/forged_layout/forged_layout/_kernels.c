/* A kernel module built against a forged kernel_abi.h (a field inserted into pc_tensor, the
 * ABI version unchanged): it exports KERNEL_LAYOUT like any module built with the SDK, and the
 * core must refuse it instead of reading its tensors at the wrong offsets.
 *
 * forged_layout_twice: out = 2 * x, float64. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "kernel_abi_forged.h"

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

static const pc_kernel twice = {PADDLE_CORE_KERNEL_ABI_VERSION, sizeof(pc_kernel),
                                "forged_layout_twice", NULL, twice_run, NULL};

static PyObject* kernels(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  PyObject* table = PyDict_New();
  PyObject* capsule = PyCapsule_New((void*)&twice, PADDLE_CORE_KERNEL_CAPSULE, NULL);
  if (table == NULL || capsule == NULL ||
      PyDict_SetItemString(table, "forged_layout_twice", capsule) < 0) {
    Py_XDECREF(table);
    Py_XDECREF(capsule);
    return NULL;
  }
  Py_DECREF(capsule);
  return table;
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
