/* A kernel module built against kernel ABI 1 as released (kernel_abi_v1.h, frozen). A plain C
 * extension (no pybind11), exporting what the core looks for: KERNEL_ABI_VERSION,
 * KERNEL_LAYOUT (the frozen header's layout) and kernels() -> {name: capsule}.
 *
 * twice: out = 2 * x, float64, shapes checked in prepare. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdio.h>

#include "kernel_abi_v1.h"

static pc_status fail(pc_context* ctx, const char* message) {
  snprintf(ctx->message, ctx->message_capacity, "%s", message);
  return PC_ERROR;
}

static pc_status twice_prepare(const pc_attrs* attrs, const pc_tensors* in, const pc_tensors* out,
                               pc_context* ctx, void** state) {
  (void)attrs;
  *state = NULL;
  if (in->num_items != 1 || out->num_items != 1) return fail(ctx, "twice takes one x, one out");
  const pc_tensor* x = &in->items[0];
  const pc_tensor* o = &out->items[0];
  if (x->dtype != PC_FLOAT64 || o->dtype != PC_FLOAT64) return fail(ctx, "twice is float64");
  if (x->ndim != o->ndim) return fail(ctx, "x and out differ in rank");
  for (int32_t k = 0; k < x->ndim; ++k)
    if (x->shape[k] != o->shape[k]) return fail(ctx, "x and out differ in shape");
  return PC_OK;
}

static pc_status twice_run(void* state, const pc_tensors* in, const pc_tensors* out,
                           pc_context* ctx) {
  (void)state;
  if (ctx->num_threads < 1) return fail(ctx, "no threads");
  const pc_tensor* x = &in->items[0];
  int64_t n = 1;
  for (int32_t k = 0; k < x->ndim; ++k) n *= x->shape[k];
  const double* xs = (const double*)x->data;
  double* os = (double*)out->items[0].data;
  for (int64_t i = 0; i < n; ++i) os[i] = 2 * xs[i];
  return PC_OK;
}

static const int32_t twice_dtypes[] = {PC_FLOAT64, 0};
static const pc_kernel twice = {PADDLE_CORE_KERNEL_ABI_VERSION, sizeof(pc_kernel), "twice",
                                twice_prepare, twice_run, NULL, "1", "1", twice_dtypes};

static PyObject* kernels(PyObject* self, PyObject* unused) {
  (void)self, (void)unused;
  PyObject* table = PyDict_New();
  PyObject* capsule = PyCapsule_New((void*)&twice, PADDLE_CORE_KERNEL_CAPSULE, NULL);
  if (table == NULL || capsule == NULL || PyDict_SetItemString(table, "twice", capsule) < 0) {
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
  pc_kernel_layout(layout, sizeof layout);
  PyObject* m = PyModule_Create(&module);
  if (m == NULL) return NULL;
  if (PyModule_AddIntConstant(m, "KERNEL_ABI_VERSION", PADDLE_CORE_KERNEL_ABI_VERSION) < 0 ||
      PyModule_AddStringConstant(m, "KERNEL_LAYOUT", layout) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  return m;
}
