/*
 * paddle_core/kernel_abi.h: the C ABI between paddle-core and compiled kernels.
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
 * An output's memory may hold what another value left there (values not live at the same
 * time share memory), so a kernel writes every element of its outputs and reads none it has
 * not written. Inputs are read-only, and no output overlaps any input: for an op that
 * rewrites its own input (w = transpose(w)) the core hands the kernel a scratch output and
 * copies it back. The one exception is declared per op in its manifest: an output marked
 * `inplace` with an input (an optimizer's param_out with param) gets exactly that input's
 * buffer when a program binds both to one variable, or when both have one shape and dtype
 * and no later op reads the input, so the kernel must read each element before writing it.
 *
 * Growing compatibly: structs gain fields only at their end. pc_kernel carries its size, and
 * the core reads a field added after ABI 1's first layout (PC_KERNEL_V1_SIZE) only when the
 * kernel's struct_size covers it. pc_context carries its size too: a kernel reads a newer
 * field only when ctx->struct_size covers it (kernel.hpp's Context does the check).
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

/* Bytes per element of a PC_* dtype; 0 for a value that is none of them. This is the one
 * table of element sizes: the core and kernels use it instead of keeping their own. */
static inline size_t pc_dtype_size(int32_t dtype) {
  switch (dtype) {
    case PC_BOOL:
    case PC_INT8:
    case PC_UINT8:
      return 1;
    case PC_INT16:
    case PC_FLOAT16:
    case PC_BFLOAT16:
      return 2;
    case PC_INT32:
    case PC_FLOAT32:
      return 4;
    case PC_INT64:
    case PC_FLOAT64:
      return 8;
    default:
      return 0;
  }
}

/* Device types, as pc_tensor.device_type. A device type registered by a plugin (through the
 * paddle_core_device_types hook) hands its kernels a value of its own choosing, from
 * PC_DEVICE_FIRST_PLUGIN on (its Device class's kernel_device_type). */
enum { PC_DEVICE_CPU = 1, PC_DEVICE_CUDA = 2, PC_DEVICE_FIRST_PLUGIN = 64 };

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
  int32_t struct_size;     /* sizeof(pc_context) as the core filled it (0 from the first cores
                              of ABI 1, whose context ends at message_capacity) */
  char* message;           /* where to write the reason on PC_ERROR */
  size_t message_capacity;
  /* Since struct_size covers them: for ops declared `random` in their manifest, a key for
   * the op (stable across runs of a program: from its random seed and the op's place) and a
   * counter for the run (how many runs drew random numbers on the scope before this one).
   * A counter-based generator (paddle_core/random.hpp) turns (key, counter, element index)
   * into numbers independent of thread count and device. 0 for other ops. */
  uint64_t random_key;
  uint64_t random_counter;
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

/* The size of ABI 1's first pc_kernel layout (it ends at `release`): the least struct_size the
 * core accepts. Fields added later are read only when a kernel's struct_size covers them. */
#define PC_KERNEL_V1_SIZE (offsetof(pc_kernel, release) + sizeof(pc_release_fn))

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
