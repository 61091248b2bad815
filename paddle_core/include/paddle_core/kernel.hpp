// paddle_core/kernel.hpp: a thin, header-only C++ layer over kernel_abi.h.
//
// A kernel is a class K with
//   K(const Attrs& attrs, const Slots& in, const Slots& out);   // prepare: check, decode
//   void run(const Slots& in, const Slots& out, const Context& ctx) const;
// registered as `paddle_core::kernel<K>("symbol")` (see "registration" at the end). The
// constructor runs once per plan with data-less tensors (shapes and dtypes only): validate
// there with `fail(...)`, keep decoded attrs as members. `run` then only computes. A
// constructor that also takes a `const Context&` gets the plan's (its thread count and
// stream), for kernels that size work per thread in prepare or want a `Workspace` (scratch
// memory for their runs, planned by the core with its buffers). Exceptions never cross the
// ABI: the trampolines below turn them into PC_ERROR plus a message.
//
// What most kernels need besides: `dispatch` over a type list (Floats, Ints, Numbers, ...,
// AllTypes) to pick the template instance for a runtime dtype, the checks `expect_same_dtype` and
// `expect_same_shape` for prepare, and element sizes (`pc_dtype_size`, Tensor::nbytes).
//
// A kernel class also says, once, which ops it fits: `static constexpr Signature signature`
// (its input and output slots) and `using DTypes = ...` (the type list it dispatches over);
// `kernel<K>` exports them and the core checks every manifest entry naming the kernel against
// them at load (see "what a kernel fits" below).
//
// Includes only the C header, half.hpp and a few standard headers, so a kernel file compiles in
// seconds.
#ifndef PADDLE_CORE_KERNEL_HPP_
#define PADDLE_CORE_KERNEL_HPP_

#include <cstdarg>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "paddle_core/kernel_abi.h"

// Marks a function that both compilers build, for the host and, under nvcc, for the device:
// an op's formula written once, called by its CPU kernel and by its CUDA kernel.
#if defined(__CUDACC__)
#define PADDLE_CORE_HD __host__ __device__
#else
#define PADDLE_CORE_HD
#endif

#include "paddle_core/half.hpp"  // float16, bfloat16

namespace paddle_core {

// Raised by kernel code; carries the message shown to the user (with the op name prefixed).
class KernelError : public std::exception {
 public:
  explicit KernelError(std::string message) : message_(std::move(message)) {}
  const char* what() const noexcept override { return message_.c_str(); }

 private:
  std::string message_;
};

// Throw a KernelError with a printf-style message: fail("got %lld", (long long)n). The
// format attribute makes the compiler check the arguments against the format.
[[noreturn]] __attribute__((format(printf, 1, 2))) inline void fail(const char* format, ...) {
  char buffer[512];
  va_list args;
  va_start(args, format);
  std::vsnprintf(buffer, sizeof buffer, format, args);
  va_end(args);
  throw KernelError(buffer);
}

// C++ type -> PC_* dtype. float16 and bfloat16 are half.hpp's storage types.
template <class T> struct DType;
template <> struct DType<bool> { static constexpr int32_t value = PC_BOOL; };
template <> struct DType<int8_t> { static constexpr int32_t value = PC_INT8; };
template <> struct DType<int16_t> { static constexpr int32_t value = PC_INT16; };
template <> struct DType<int32_t> { static constexpr int32_t value = PC_INT32; };
template <> struct DType<int64_t> { static constexpr int32_t value = PC_INT64; };
template <> struct DType<uint8_t> { static constexpr int32_t value = PC_UINT8; };
template <> struct DType<uint16_t> { static constexpr int32_t value = PC_UINT16; };
template <> struct DType<uint32_t> { static constexpr int32_t value = PC_UINT32; };
template <> struct DType<uint64_t> { static constexpr int32_t value = PC_UINT64; };
template <> struct DType<float16> { static constexpr int32_t value = PC_FLOAT16; };
template <> struct DType<bfloat16> { static constexpr int32_t value = PC_BFLOAT16; };
template <> struct DType<float> { static constexpr int32_t value = PC_FLOAT32; };
template <> struct DType<double> { static constexpr int32_t value = PC_FLOAT64; };

// The name of a PC_* dtype (NumPy's), "?" for any other value.
inline const char* dtype_name(int32_t dtype) {
  static const char* const names[] = {"?",       "bool",    "int8",     "int16",   "int32",
                                      "int64",   "uint8",   "float16",  "bfloat16", "float32",
                                      "float64", "uint16",  "uint32",   "uint64"};
  constexpr int32_t count = static_cast<int32_t>(sizeof names / sizeof names[0]);
  return dtype >= 1 && dtype < count ? names[dtype] : "?";
}

// -- dtype dispatch ----------------------------------------------------------------------------

// A list of element types a kernel supports; the type lists below are the common ones.
template <class... Ts> struct Types {};

// The types of two lists, in order.
template <class A, class B> struct JoinTypes;
template <class... A, class... B> struct JoinTypes<Types<A...>, Types<B...>> {
  using type = Types<A..., B...>;
};
template <class A, class B> using Join = typename JoinTypes<A, B>::type;

using Floats = Types<float, double>;                    // float32, float64
using Ints = Types<int32_t, int64_t>;                   // int32, int64
using Numbers = Types<float, double, int32_t, int64_t>;  // Floats and Ints
using Floats16 = Types<float16, bfloat16>;              // computed in float32 (half.hpp)
using AllFloats = Join<Floats, Floats16>;                // every floating dtype
using AllInts = Types<int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, uint32_t, uint64_t>;
using AllNumbers = Join<AllFloats, AllInts>;             // every dtype but bool
using AllTypes = Join<AllNumbers, Types<bool>>;          // every dtype

// Call f(T{}) for the type T of the list whose dtype is `dtype` and return its result (so
// every branch must return the same type); fail for a dtype not in the list. Typically in
// prepare, to pick once the instance run() calls:
//   fn_ = dispatch(x.dtype(), Floats{}, [](auto t) -> Fn { return &compute<decltype(t)>; });
template <class F, class T, class... Ts>
auto dispatch(int32_t dtype, Types<T, Ts...>, F&& f) -> decltype(f(T{})) {
  if (dtype == DType<T>::value) return f(T{});
  if constexpr (sizeof...(Ts) > 0) {
    return dispatch(dtype, Types<Ts...>{}, std::forward<F>(f));
  } else {
    fail("dtype %s is not supported by this kernel", dtype_name(dtype));
  }
}

// A tensor view.
class Tensor {
 public:
  explicit Tensor(const pc_tensor& t) : t_(&t) {}

  int32_t ndim() const { return t_->ndim; }
  int64_t dim(int32_t axis) const { return t_->shape[axis < 0 ? axis + t_->ndim : axis]; }
  int32_t dtype() const { return t_->dtype; }
  int64_t numel() const {
    int64_t n = 1;
    for (int32_t k = 0; k < t_->ndim; ++k) n *= t_->shape[k];
    return n;
  }
  const int64_t* shape() const { return t_->shape; }
  // Bytes per element (pc_dtype_size), and of the whole tensor; 0 for an unknown dtype.
  int64_t element_size() const { return static_cast<int64_t>(pc_dtype_size(t_->dtype)); }
  int64_t nbytes() const { return numel() * element_size(); }
  template <class T> T* data() const { return static_cast<T*>(t_->data); }
  const pc_tensor& raw() const { return *t_; }

  bool same_shape(const Tensor& other) const {
    if (ndim() != other.ndim()) return false;
    for (int32_t k = 0; k < ndim(); ++k)
      if (t_->shape[k] != other.t_->shape[k]) return false;
    return true;
  }
  // "float32[2, 3]", for messages.
  std::string describe() const {
    std::string s = std::string(dtype_name(dtype())) + "[";
    for (int32_t k = 0; k < ndim(); ++k) s += (k ? ", " : "") + std::to_string(t_->shape[k]);
    return s + "]";
  }
  // Fail unless the dtype is `expected`.
  void expect_dtype(int32_t expected, const char* what) const {
    if (dtype() != expected)
      fail("%s must be %s, got %s", what, dtype_name(expected), describe().c_str());
  }

 private:
  const pc_tensor* t_;
};

// Fail unless a and b have one dtype (or one shape); `what` names them: "x and out".
inline void expect_same_dtype(const Tensor& a, const Tensor& b, const char* what) {
  if (a.dtype() != b.dtype())
    fail("%s: dtypes differ: %s vs %s", what, a.describe().c_str(), b.describe().c_str());
}
inline void expect_same_shape(const Tensor& a, const Tensor& b, const char* what) {
  if (!a.same_shape(b))
    fail("%s: shapes differ: %s vs %s", what, a.describe().c_str(), b.describe().c_str());
}

// The tensors of an op's input or output slots (see pc_tensors).
class Slots {
 public:
  explicit Slots(const pc_tensors* t) : t_(t) {}

  int32_t num_slots() const { return t_->num_slots; }
  // Tensors in `slot`; 0 for a slot the op does not have (a trailing optional one, see
  // Signature).
  int32_t size(int32_t slot) const {
    if (slot < 0 || slot >= t_->num_slots) return 0;
    return t_->slot_begin[slot + 1] - t_->slot_begin[slot];
  }
  bool has(int32_t slot) const { return slot < t_->num_slots && size(slot) > 0; }
  // The k-th tensor of `slot` (k = 0 for plain slots). Checked: a kernel bound (by a wrong
  // manifest) to an op with fewer slots, or reading an unused dispensable slot, gets an error
  // naming the slot instead of reading past the core's arrays.
  Tensor operator()(int32_t slot, int32_t k = 0) const {
    if (slot < 0 || slot >= t_->num_slots)
      fail("the kernel reads slot %d, but the op has %d slot(s) here: is the manifest binding "
           "this kernel to an op of another arity?", static_cast<int>(slot),
           static_cast<int>(t_->num_slots));
    if (k < 0 || k >= size(slot))
      fail("the kernel reads tensor %d of slot %d, which holds %d", static_cast<int>(k),
           static_cast<int>(slot), static_cast<int>(size(slot)));
    return Tensor(t_->items[t_->slot_begin[slot] + k]);
  }
  const pc_tensors* raw() const { return t_; }

 private:
  const pc_tensors* t_;
};

// Attribute access by name, checked against the declared type. Integers read as int64 at either
// width: i() and l() take INT and LONG attrs, ints() INTS and LONGS, so a kernel keeps working
// when its op widens an attr, and with a program that stores the narrower type.
class Attrs {
 public:
  explicit Attrs(const pc_attrs* a) : a_(a) {}

  // The attr `name`, of type `type` or of the other width `alias` of the same integers.
  const pc_attr& get(const char* name, int32_t type, int32_t alias = 0) const {
    const pc_attr* attr = pc_find_attr(a_, name);
    if (attr == nullptr) fail("the op has no attr '%s'", name);
    if (attr->type != type && (alias == 0 || attr->type != alias))
      fail("attr '%s' is %s, but the kernel reads it as %s", name, attr_type_name(attr->type),
           attr_type_name(type));
    return *attr;
  }
  static const char* attr_type_name(int32_t type) {
    static const char* const names[] = {"?",      "INT",    "FLOAT",   "STRING", "BOOL",  "LONG",
                                        "INTS",   "FLOATS", "STRINGS", "BOOLS",  "BLOCK", "LONGS"};
    return type >= 1 && type <= 11 ? names[type] : "?";
  }
  bool has(const char* name) const { return pc_find_attr(a_, name) != nullptr; }
  double f(const char* name) const { return get(name, PC_ATTR_FLOAT).f; }
  int64_t i(const char* name) const { return get(name, PC_ATTR_INT, PC_ATTR_LONG).i; }
  int64_t l(const char* name) const { return get(name, PC_ATTR_LONG, PC_ATTR_INT).i; }
  bool b(const char* name) const { return get(name, PC_ATTR_BOOL).i != 0; }
  std::string s(const char* name) const { return get(name, PC_ATTR_STRING).s; }
  std::vector<int64_t> ints(const char* name) const {
    const pc_attr& a = get(name, PC_ATTR_INTS, PC_ATTR_LONGS);
    return std::vector<int64_t>(a.ints, a.ints + a.count);
  }
  std::vector<double> floats(const char* name) const {
    const pc_attr& a = get(name, PC_ATTR_FLOATS);
    return std::vector<double>(a.floats, a.floats + a.count);
  }

 private:
  const pc_attrs* a_;
};

// The per-call context. Its fields are ABI 1's (PC_CONTEXT_BASE_SIZE), which every core fills.
// A field added later gets a getter that checks ctx->struct_size covers it, and reads as 0
// from a core that does not fill it.
class Context {
 public:
  explicit Context(pc_context* c) : c_(c) {}
  int32_t num_threads() const { return c_->num_threads > 0 ? c_->num_threads : 1; }
  void* stream() const { return c_->stream; }
  // For ops declared `random`: the op's key and the run's counter (see kernel_abi.h).
  uint64_t random_key() const { return c_->random_key; }
  uint64_t random_counter() const { return c_->random_counter; }

  // In prepare: ask for `bytes` of scratch memory on every run (the most asked for counts);
  // false where the core offers none (an older one): the kernel then keeps its own (Workspace,
  // below, does either).
  bool request_workspace(size_t bytes) const {
    if (!covers(offsetof(pc_context, workspace_size), sizeof c_->workspace_size)) return false;
    if (bytes > c_->workspace_size) c_->workspace_size = bytes;
    return true;
  }
  // In run: the scratch memory asked for in prepare (64-byte aligned); null when none.
  void* workspace() const {
    return covers(offsetof(pc_context, workspace), sizeof c_->workspace) ? c_->workspace : nullptr;
  }
  // In prepare: add `bytes` to what the kernel's state keeps for the plan's life, for the
  // core's memory reports (ignored by a core that makes none).
  void add_state_bytes(size_t bytes) const {
    if (covers(offsetof(pc_context, state_bytes), sizeof c_->state_bytes))
      c_->state_bytes += bytes;
  }

 private:
  // Whether the core filled the field at `offset` (its struct_size covers it).
  bool covers(size_t offset, size_t size) const {
    return c_->struct_size >= 0 && static_cast<size_t>(c_->struct_size) >= offset + size;
  }

  pc_context* c_;
};

// Scratch memory a kernel uses while it runs: asked for in prepare (its constructor), where
// the core plans it with its other buffers (kernels run one at a time share it); kept by the
// kernel itself where the core offers none. A kernel holds one as a member:
//   ws_ = Workspace(ctx, bytes);        // in the constructor
//   char* scratch = ws_.data(ctx);      // in run: `bytes` bytes, 64-byte aligned
class Workspace {
 public:
  Workspace() = default;
  Workspace(const Context& ctx, size_t bytes) : bytes_(bytes) {
    if (bytes == 0 || ctx.request_workspace(bytes)) return;
    own_.reset(new char[bytes + kAlignment]);  // (not zeroed: untouched pages cost nothing)
    ctx.add_state_bytes(bytes + kAlignment);
  }
  size_t bytes() const { return bytes_; }
  char* data(const Context& ctx) const {
    if (bytes_ == 0) return nullptr;
    if (!own_) return static_cast<char*>(ctx.workspace());
    const auto at = reinterpret_cast<uintptr_t>(own_.get());
    return own_.get() + (kAlignment - at % kAlignment) % kAlignment;
  }

 private:
  static constexpr size_t kAlignment = 64;
  size_t bytes_ = 0;
  std::unique_ptr<char[]> own_;  // where the core offers no workspace
};

namespace detail {

inline pc_status report(pc_context* ctx, const char* message) {
  if (ctx != nullptr && ctx->message != nullptr && ctx->message_capacity > 0) {
    std::strncpy(ctx->message, message, ctx->message_capacity - 1);
    ctx->message[ctx->message_capacity - 1] = '\0';
  }
  return PC_ERROR;
}

template <class K>
pc_status prepare(const pc_attrs* attrs, const pc_tensors* in, const pc_tensors* out,
                  pc_context* ctx, void** state) {
  try {
    if constexpr (std::is_constructible_v<K, Attrs, Slots, Slots, Context>)
      *state = new K(Attrs(attrs), Slots(in), Slots(out), Context(ctx));
    else
      *state = new K(Attrs(attrs), Slots(in), Slots(out));
    return PC_OK;
  } catch (const std::exception& e) {
    return report(ctx, e.what());
  } catch (...) {
    return report(ctx, "unknown C++ exception in prepare");
  }
}

template <class K>
pc_status run(void* state, const pc_tensors* in, const pc_tensors* out, pc_context* ctx) {
  try {
    static_cast<const K*>(state)->run(Slots(in), Slots(out), Context(ctx));
    return PC_OK;
  } catch (const std::exception& e) {
    return report(ctx, e.what());
  } catch (...) {
    return report(ctx, "unknown C++ exception in run");
  }
}

template <class K> void release(void* state) { delete static_cast<K*>(state); }

}  // namespace detail

// -- what a kernel fits ----------------------------------------------------------------------
//
// Declared once per kernel class (or class template), as static members that `kernel<K>`
// exports in the pc_kernel (kernel_abi.h says what the core checks):
//   static constexpr pc::Signature signature{"11", "?"};  // a character per input, output slot
//   using DTypes = List;                                  // the dtypes it dispatches over
// Slot characters: '1' one tensor, '?' none or one, '+' one or more, '*' any number. Take
// DTypes from the type list the class dispatches over (its template parameter, or a member
// passed to dispatch), so that the declaration cannot drift from the code. A class declaring
// neither exports none, and is not checked.
struct Signature {
  const char* inputs;
  const char* outputs;
};

namespace detail {

template <class K, class = void> struct SignatureOf {
  static constexpr Signature value{nullptr, nullptr};
};
template <class K> struct SignatureOf<K, std::void_t<decltype(K::signature)>> {
  static constexpr Signature value = K::signature;
};

// The PC_* dtypes of a type list, ending with 0 (static storage: the pc_kernel points at it).
template <class List> struct DTypeList;
template <class... Ts> struct DTypeList<Types<Ts...>> {
  static constexpr int32_t values[] = {DType<Ts>::value..., 0};
};
template <class K, class = void> struct DTypesOf {
  static constexpr const int32_t* value = nullptr;
};
template <class K> struct DTypesOf<K, std::void_t<typename K::DTypes>> {
  static constexpr const int32_t* value = DTypeList<typename K::DTypes>::values;
};

}  // namespace detail

// The table entry for kernel class K under `name` (the manifest's KernelDef.native).
template <class K> constexpr pc_kernel kernel(const char* name) {
  return pc_kernel{PADDLE_CORE_KERNEL_ABI_VERSION,
                   sizeof(pc_kernel),
                   name,
                   &detail::prepare<K>,
                   &detail::run<K>,
                   &detail::release<K>,
                   detail::SignatureOf<K>::value.inputs,
                   detail::SignatureOf<K>::value.outputs,
                   detail::DTypesOf<K>::value};
}

// -- registration ------------------------------------------------------------------------------
//
// Each kernel source file registers its own kernels, at its bottom, under the names its
// manifest gives them (KernelDef.native):
//
//   PADDLE_CORE_REGISTER_KERNELS(pc::kernel<Scale>("scale"), pc::kernel<Cast>("cast"));
//
// The registration runs when the module is loaded, into a table private to the module (hidden
// visibility: two plugins' tables never mix), and the module's one `export_kernels(m)`
// (paddle_core/pybind.hpp) exports whatever its files registered, with the devices they were
// compiled for: "cuda" for a file nvcc compiled, "cpu" for the others. So a new kernel touches
// its own file only, and a CUDA file's kernels exist exactly in the builds that compile it.
// Link kernel files as object files (an OBJECT library, or the module's own sources), never
// from a static archive: the linker drops an archive member nothing refers to, registration
// and all.

namespace detail {

struct Registered {
  std::vector<const pc_kernel*> kernels;
  std::vector<std::string> devices;  // each once
};

__attribute__((visibility("hidden"))) inline Registered& registered() {
  static Registered table;
  return table;
}

// A file's kernels, kept for the life of the module (the exported capsules point at them).
class Registration {
 public:
  Registration(const char* device, std::initializer_list<pc_kernel> kernels) : kernels_(kernels) {
    Registered& table = registered();
    for (const pc_kernel& k : kernels_) table.kernels.push_back(&k);
    for (const std::string& known : table.devices)
      if (known == device) return;
    table.devices.emplace_back(device);
  }

 private:
  std::vector<pc_kernel> kernels_;
};

}  // namespace detail

// Every kernel the module's files registered, in no particular order.
inline const std::vector<const pc_kernel*>& registered_kernels() {
  return detail::registered().kernels;
}
// The devices those files were compiled for ("cpu", "cuda").
inline const std::vector<std::string>& registered_devices() {
  return detail::registered().devices;
}

// The device of the file being compiled: a macro, so each file gets its compiler's answer.
#if defined(__CUDACC__)
#define PADDLE_CORE_FILE_DEVICE_ "cuda"
#else
#define PADDLE_CORE_FILE_DEVICE_ "cpu"
#endif
#define PADDLE_CORE_CONCAT_(a, b) a##b
#define PADDLE_CORE_NAME_(prefix, n) PADDLE_CORE_CONCAT_(prefix, n)
#define PADDLE_CORE_REGISTER_KERNELS(...)                                                   \
  static const ::paddle_core::detail::Registration PADDLE_CORE_NAME_(paddle_core_kernels_, \
                                                                     __COUNTER__) {         \
    PADDLE_CORE_FILE_DEVICE_, { __VA_ARGS__ }                                               \
  }

}  // namespace paddle_core

#endif  // PADDLE_CORE_KERNEL_HPP_
