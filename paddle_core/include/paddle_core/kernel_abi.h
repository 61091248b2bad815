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
 *                                                  attrs into `state`; say what scratch
 *                                                  memory each run needs
 *                                                  (ctx->workspace_size).
 *   run(state, inputs, outputs, ctx)               on every execution, with data; not
 *                                                  called when every input and output
 *                                                  holds no element (nothing to read, check
 *                                                  or write), however large their other
 *                                                  dimensions ([2^40, 0]). Called when
 *                                                  some do (a scale [C] beside x
 *                                                  [2^40, C, 0]): its loops then go by
 *                                                  the elements tensors hold, never by
 *                                                  the dimensions of an empty one.
 *   release(state)                                 when the plan is dropped.
 *
 * What a kernel fits: besides its functions, a pc_kernel may declare the slots and dtypes of
 * the ops it can be bound to (inputs, outputs, dtypes); the core checks them against the
 * manifest when the module loads, so a manifest binding a kernel to an op of another arity
 * or dtype is refused there, naming plugin, op and kernel, instead of failing (or reading out
 * of bounds) at run time.
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
 * Scratch memory a kernel needs while it runs is better asked for in prepare
 * (ctx->workspace_size) than kept in its state: the core places it among the values not live
 * at the kernel's step, so a plan's kernels share the bytes instead of each holding its own.
 *
 * Growing compatibly: within ABI 1, structs gain fields only at their end, and only the two
 * that carry their size. pc_kernel: the core accepts any struct_size from ABI 1's
 * (PC_KERNEL_BASE_SIZE) on, and reads a field added later only when the kernel's struct_size
 * covers it. pc_context: a kernel reads a field added later only when ctx->struct_size covers
 * it (PC_CONTEXT_BASE_SIZE is ABI 1's; kernel.hpp's Context gives each such field a getter
 * that checks it).
 *
 * Layout fingerprint: the ABI version says what the structs mean; the fingerprint says how the
 * compiler laid them out, so that a plugin built with an edited or mismatched header (or for
 * another pointer size) is refused at load instead of reading fields at the wrong offsets. A
 * plugin's module exports KERNEL_LAYOUT, pc_kernel_layout()'s text for the header it was built
 * with (pybind.hpp's export_kernels does it); the core's runtime exports its own. The text
 * lists every struct that crosses the boundary (PC_KERNEL_LAYOUT below) with its growth rule,
 * size and each field's offset+size, e.g. "pc_attrs:core:16=0+8,8+4;...". Field names are not
 * part of it (renaming a field is compatible), and the core compares struct by struct, by its
 * own rule for each, so a plugin built against an older header of the same ABI still loads:
 *   array  (pc_tensor, pc_attr): handed to kernels in arrays, so the size is the stride: the
 *          layouts must be equal. These structs cannot grow within an ABI version.
 *   core   (pc_tensors, pc_attrs): written by the core, read by kernels: the plugin's fields
 *          must be the first fields of the core's (an older plugin reads fewer of them).
 *   sized  (pc_context, pc_kernel): they carry struct_size, checked before a newer field is
 *          read: either side's fields must be the first fields of the other's.
 * A struct the plugin's text lacks is one it was built before (it does not use it); one the
 * core lacks is ignored. A module exporting no KERNEL_LAYOUT, or a mismatch, is refused with a
 * message naming the plugin, both layouts, the struct that differs and the command that
 * rebuilds the plugin against the installed paddle-core.
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
  PC_FLOAT64 = 10,
  PC_UINT16 = 11,
  PC_UINT32 = 12,
  PC_UINT64 = 13
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
    case PC_UINT16:
    case PC_FLOAT16:
    case PC_BFLOAT16:
      return 2;
    case PC_INT32:
    case PC_UINT32:
    case PC_FLOAT32:
      return 4;
    case PC_INT64:
    case PC_UINT64:
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
  PC_ATTR_BLOCK = 10,
  PC_ATTR_LONGS = 11
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
 * INTS, LONGS and BOOLS: ints[count]; FLOATS: floats[count]; STRINGS: strings[count]. Integers
 * arrive as int64 whatever their declared width (INT and INTS values fit 32 bits, LONG and
 * LONGS values need not), so an attr an op widens from INT to LONG reads the same. */
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
  int32_t struct_size;     /* sizeof(pc_context) as the core filled it: a kernel reads a field
                              added after ABI 1's only when this covers it */
  char* message;           /* where to write the reason on PC_ERROR */
  size_t message_capacity;
  /* For ops declared `random` in their manifest, a key for the op (stable across runs of a
   * program: from its random seed and the op's place) and a counter for the run (how many
   * runs drew random numbers on the scope before this one). A counter-based generator
   * (paddle_core/random.hpp) turns (key, counter, element index) into numbers independent of
   * thread count and device. 0 for other ops. */
  uint64_t random_key;
  uint64_t random_counter;
  /* Fields added within ABI 1: read or write them only when struct_size covers them.
   *
   * Scratch memory for the kernel while it runs (library workspaces, buffers converting an
   * operand to the layout a library wants): memory the core plans with its other buffers, so
   * that kernels run one at a time share it instead of each keeping its own. In prepare,
   * workspace_size is 0 on entry and the kernel sets the bytes it needs on every run (0: none)
   * and workspace is NULL. In run, workspace points at workspace_size bytes, 64-byte aligned,
   * that are the kernel's until it returns (NULL when it asked for none); their content is
   * undefined on entry, and other values may occupy them between its runs. */
  size_t workspace_size;
  void* workspace;
  /* In prepare, 0 on entry: the kernel may set the bytes its state keeps for the plan's life
   * (primitives' buffers, converted weights, caches), which the core adds up in its reports of
   * what a plan holds. Read once, after prepare. */
  size_t state_bytes;
} pc_context;

/* The size of ABI 1's pc_context (it ends at random_counter): every core of ABI 1 fills at
 * least this much. Fields added later are read only when ctx->struct_size covers them. */
#define PC_CONTEXT_BASE_SIZE (offsetof(pc_context, random_counter) + sizeof(uint64_t))

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
  /* The ops the kernel can be bound to. When its module loads, the core checks them against
   * every op the manifest binds the kernel to, and refuses the kernel for an op that does not
   * fit (the op is then unavailable, with a message naming plugin, op and kernel) instead of
   * letting it read slots or dtypes it does not have. NULL: not declared, not checked.
   *
   * inputs, outputs: one character per slot, in OpProto order, saying how many tensors the
   * kernel handles there: '1' exactly one (a plain slot), '?' none or one (dispensable), '+'
   * one or more (duplicable), '*' any number (duplicable and dispensable). An op's slot fits
   * when every count it allows is one the kernel handles ('1' fits '?', '+' and '*'); the op
   * may lack trailing slots the kernel declares '?' or '*' (they read as empty), but must not
   * have slots the kernel does not declare. */
  const char* inputs;
  const char* outputs;
  /* The PC_* dtypes the kernel handles as its op's kernel dtype (the first input's, or that of
   * OpDef.kernel_dtype_input), ending with 0: every dtype the manifest lists for the kernel
   * (KernelDef.dtypes) must be one of them. */
  const int32_t* dtypes;
} pc_kernel;

/* The size of ABI 1's pc_kernel (it ends at `dtypes`): the least struct_size the core
 * accepts. Fields added later are read only when a kernel's struct_size covers them. */
#define PC_KERNEL_BASE_SIZE (offsetof(pc_kernel, dtypes) + sizeof(const int32_t*))

/* The structs that cross the boundary, for the layout fingerprint (see the top of this file):
 * STRUCT(type, growth rule) then FIELD(type, field) per field, in declaration order. A field
 * added to a struct is added here too. */
#define PC_KERNEL_LAYOUT(STRUCT, FIELD)                                                        \
  STRUCT(pc_tensor, "array")                                                                   \
  FIELD(pc_tensor, data) FIELD(pc_tensor, shape) FIELD(pc_tensor, strides)                     \
  FIELD(pc_tensor, ndim) FIELD(pc_tensor, dtype) FIELD(pc_tensor, device_type)                 \
  FIELD(pc_tensor, device_index)                                                               \
  STRUCT(pc_tensors, "core")                                                                   \
  FIELD(pc_tensors, items) FIELD(pc_tensors, slot_begin) FIELD(pc_tensors, num_slots)          \
  FIELD(pc_tensors, num_items)                                                                 \
  STRUCT(pc_attr, "array")                                                                     \
  FIELD(pc_attr, name) FIELD(pc_attr, type) FIELD(pc_attr, count) FIELD(pc_attr, i)            \
  FIELD(pc_attr, f) FIELD(pc_attr, s) FIELD(pc_attr, ints) FIELD(pc_attr, floats)              \
  FIELD(pc_attr, strings)                                                                      \
  STRUCT(pc_attrs, "core")                                                                     \
  FIELD(pc_attrs, items) FIELD(pc_attrs, count)                                                \
  STRUCT(pc_context, "sized")                                                                  \
  FIELD(pc_context, stream) FIELD(pc_context, num_threads) FIELD(pc_context, struct_size)      \
  FIELD(pc_context, message) FIELD(pc_context, message_capacity)                               \
  FIELD(pc_context, random_key) FIELD(pc_context, random_counter)                              \
  FIELD(pc_context, workspace_size) FIELD(pc_context, workspace)                               \
  FIELD(pc_context, state_bytes)                                                               \
  STRUCT(pc_kernel, "sized")                                                                   \
  FIELD(pc_kernel, abi_version) FIELD(pc_kernel, struct_size) FIELD(pc_kernel, name)           \
  FIELD(pc_kernel, prepare) FIELD(pc_kernel, run) FIELD(pc_kernel, release)                  \
  FIELD(pc_kernel, inputs) FIELD(pc_kernel, outputs) FIELD(pc_kernel, dtypes)

static inline size_t pc_layout_put_(char* out, size_t capacity, size_t n, const char* text) {
  for (; *text; ++text, ++n)
    if (n + 1 < capacity) out[n] = *text;
  return n;
}

static inline size_t pc_layout_number_(char* out, size_t capacity, size_t n, size_t value) {
  char digits[24];
  int count = 0;
  do {
    digits[count++] = (char)('0' + value % 10);
    value /= 10;
  } while (value);
  while (count--) {
    if (n + 1 < capacity) out[n] = digits[count];
    ++n;
  }
  return n;
}

/* Write the layout fingerprint of this header, as compiled, into out (NUL-terminated, cut at
 * capacity); return its length without the NUL (call with capacity 0 to size the buffer). */
static inline size_t pc_kernel_layout(char* out, size_t capacity) {
  size_t n = 0;
  const char* separator = "";
#define PC_LAYOUT_STRUCT_(type, growth)                                                        \
  n = pc_layout_put_(out, capacity, n, n ? ";" #type ":" growth ":" : #type ":" growth ":");   \
  n = pc_layout_number_(out, capacity, n, sizeof(type));                                       \
  separator = "=";
#define PC_LAYOUT_FIELD_(type, field)                                                          \
  n = pc_layout_put_(out, capacity, n, separator);                                             \
  n = pc_layout_number_(out, capacity, n, offsetof(type, field));                              \
  n = pc_layout_put_(out, capacity, n, "+");                                                   \
  n = pc_layout_number_(out, capacity, n, sizeof(((type*)0)->field));                          \
  separator = ",";
  PC_KERNEL_LAYOUT(PC_LAYOUT_STRUCT_, PC_LAYOUT_FIELD_)
#undef PC_LAYOUT_STRUCT_
#undef PC_LAYOUT_FIELD_
  (void)separator;
  if (capacity) out[n < capacity ? n : capacity - 1] = '\0';
  return n;
}

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
