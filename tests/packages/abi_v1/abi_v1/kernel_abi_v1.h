/*
 * kernel_abi_v1.h: paddle-core's kernel ABI 1 header as first released, frozen here so that a
 * test can build kernels exactly as plugins built then and check that the core still runs them.
 *
 * This header is the whole contract. It uses plain C types only, so a plugin built against
 * one paddle-core release keeps working with the next as long as
 * PADDLE_CORE_KERNEL_ABI_VERSION is unchanged; plugins never link against a paddle-core
 * library, so an upgrade cannot produce undefined symbols. An incompatible ABI version is
 * refused by the core with a message naming the plugin, its ABI and the core's.
 *
 * Lifecycle of a kernel inside a prepared program:
 *   prepare(attrs, inputs, outputs, ctx, &state)  once per plan: tensors carry shapes and
 *                                                  dtypes but no data; check them, decode
 *                                                  attrs into `state`.
 *   run(state, inputs, outputs, ctx)               on every execution, with data.
 *   release(state)                                 when the plan is dropped.
 *
 * Errors: return PC_ERROR after writing a NUL-terminated reason into ctx->message (at most
 * ctx->message_capacity bytes, including the NUL). Never throw or abort across this
 * boundary; the core turns the reason into a Python exception naming the op.
 *
 * Memory contract (ABI 1): every tensor is C-contiguous (`strides`, in elements, are
 * provided for completeness), in native byte order, and its data is aligned to its element
 * size (the core copies fed arrays that are not). Buffers the core allocates are 64-byte
 * aligned, but fed arrays need not be, so use unaligned vector loads. Outputs are allocated
 * by the core with the shapes its shape inference computed; kernels never allocate them.
 * Inputs are read-only, and no output overlaps any input: for an op that rewrites its own
 * input (w = transpose(w)) the core hands the kernel a scratch output and copies it back.
 * Kernels for CUDA must enqueue work on ctx->stream only.
 */
#ifndef PADDLE_CORE_KERNEL_ABI_H_
#define PADDLE_CORE_KERNEL_ABI_H_

#include <stddef.h>
#include <stdint.h>

#define PADDLE_CORE_KERNEL_ABI_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/* Element types; the values equal VarType.DataType in protos/framework.proto. */
enum {
  PC_BOOL = 1,
  PC_INT8 = 2,
  PC_INT16 = 3,
  PC_INT32 = 4,
  PC_INT64 = 5,
  PC_UINT8 = 6,
  PC_FLOAT16 = 7,
  PC_BFLOAT16 = 8,
  PC_FLOAT32 = 9,
  PC_FLOAT64 = 10
};

/* Device types. */
enum { PC_DEVICE_CPU = 1, PC_DEVICE_CUDA = 2 };

/* Attribute types; the values equal AttrType in protos/framework.proto. */
enum {
  PC_ATTR_INT = 1,
  PC_ATTR_FLOAT = 2,
  PC_ATTR_STRING = 3,
  PC_ATTR_BOOL = 4,
  PC_ATTR_LONG = 5,
  PC_ATTR_INTS = 6,
  PC_ATTR_FLOATS = 7,
  PC_ATTR_STRINGS = 8,
  PC_ATTR_BOOLS = 9,
  PC_ATTR_BLOCK = 10
};

/* Return values of prepare and run. */
typedef int32_t pc_status;
#define PC_OK 0
#define PC_ERROR 1

/* A view of one tensor. */
typedef struct pc_tensor {
  void* data;              /* first element; NULL during prepare */
  const int64_t* shape;    /* `ndim` extents (NULL when ndim == 0) */
  const int64_t* strides;  /* `ndim` strides in elements (C-contiguous in ABI 1) */
  int32_t ndim;
  int32_t dtype;           /* PC_FLOAT32, ... */
  int32_t device_type;     /* PC_DEVICE_CPU, ... */
  int32_t device_index;
} pc_tensor;

/* The tensors bound to an op's input (or output) slots, in OpProto slot order. Slot s holds
 * items[slot_begin[s]] .. items[slot_begin[s + 1] - 1]: one tensor for a plain slot, any
 * number for a duplicable one, none for an unused dispensable one. */
typedef struct pc_tensors {
  const pc_tensor* items;
  const int32_t* slot_begin; /* num_slots + 1 entries */
  int32_t num_slots;
  int32_t num_items;
} pc_tensors;

/* One attribute value, decoded from the OpDesc. Which member is meaningful follows `type`:
 * INT, LONG, BOOL, BLOCK: i (BOOL is 0 or 1); FLOAT: f; STRING: s (UTF-8, NUL-terminated);
 * INTS and BOOLS: ints[count]; FLOATS: floats[count]; STRINGS: strings[count]. */
typedef struct pc_attr {
  const char* name;
  int32_t type;
  int32_t count;
  int64_t i;
  double f;
  const char* s;
  const int64_t* ints;
  const double* floats;
  const char* const* strings;
} pc_attr;

/* Every attribute of an op, in OpProto order (defaults included). */
typedef struct pc_attrs {
  const pc_attr* items;
  int32_t count;
} pc_attrs;

/* Per-call context from the core. */
typedef struct pc_context {
  void* stream;            /* cudaStream_t for CUDA kernels; NULL on CPU */
  int32_t num_threads;     /* CPU threads a kernel may use (>= 1) */
  int32_t reserved;
  char* message;           /* where to write the reason on PC_ERROR */
  size_t message_capacity;
} pc_context;

typedef pc_status (*pc_prepare_fn)(const pc_attrs* attrs, const pc_tensors* inputs,
                                   const pc_tensors* outputs, pc_context* ctx, void** state);
typedef pc_status (*pc_run_fn)(void* state, const pc_tensors* inputs, const pc_tensors* outputs,
                               pc_context* ctx);
typedef void (*pc_release_fn)(void* state);

/* One kernel, as exported by a plugin. `name` is the symbol its manifest refers to
 * (KernelDef.native). prepare and release may be NULL (no checks, no state). */
typedef struct pc_kernel {
  uint32_t abi_version;    /* PADDLE_CORE_KERNEL_ABI_VERSION at compile time */
  uint32_t struct_size;    /* sizeof(pc_kernel) at compile time */
  const char* name;
  pc_prepare_fn prepare;
  pc_run_fn run;
  pc_release_fn release;
} pc_kernel;

/* Name of the PyCapsules through which a plugin's compiled module hands pc_kernel pointers
 * to the core: `_C.kernels()` returns {name: capsule}. */
#define PADDLE_CORE_KERNEL_CAPSULE "paddle_core.kernel"

/* Find an attribute by name; NULL when absent. */
static inline const pc_attr* pc_find_attr(const pc_attrs* attrs, const char* name) {
  for (int32_t k = 0; k < attrs->count; ++k) {
    const char* a = attrs->items[k].name;
    const char* b = name;
    while (*a && *a == *b) {
      ++a;
      ++b;
    }
    if (*a == *b) return &attrs->items[k];
  }
  return NULL;
}

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* PADDLE_CORE_KERNEL_ABI_H_ */
