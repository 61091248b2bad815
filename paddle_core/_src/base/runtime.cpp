// paddle_core._src.base._runtime: kernel capsule checks and the run loop of a prepared program.
//
// The executor (Python) decides everything once per plan: which kernel runs each op, the
// concrete shape of every variable, which buffers are planned (allocated once, reused across
// runs) and which are bound per run (feeds, values from the scope, outputs that escape to
// the caller). This module keeps those decisions in flat arrays and runs them: native
// kernels are called through their function pointers with the GIL released; Python kernels
// are called back with the GIL held. Nothing is looked up or allocated per op. Buffers are
// NumPy arrays (devices whose memory is the host's) or device arrays exposing
// `__cuda_array_interface__` (CuPy's, for CUDA); each native step says which device its
// kernel runs as (the plan's, or the host's for a CPU kernel the device falls back to), and
// the plan gives every kernel the stream of the device that prepared it. Copy steps and
// run_while's condition and run_scan's slices read memory here, so they take host buffers
// only (the executor plans none of them for device memory).
//
// run_profiled is run taking a steady_clock reading before and after each op (its kernel and
// the copy steps after it), for paddle_core.profiler: a separate instantiation of the loop,
// so run's loop is what it would be without a profiler (the choice is made once per run).
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_set>
#include <vector>

#include "paddle_core/kernel_abi.h"
#include "paddle_core/pybind.hpp"

namespace py = pybind11;

namespace {

// The pc_kernel behind a capsule, refusing capsules of any other kind.
const pc_kernel* kernel_of(const py::capsule& capsule) {
  const char* name = capsule.name();
  if (name == nullptr || std::strcmp(name, PADDLE_CORE_KERNEL_CAPSULE) != 0)
    throw std::invalid_argument(std::string("not a paddle-core kernel capsule: ") +
                                (name ? name : "(unnamed)"));
  return capsule.get_pointer<const pc_kernel>();
}

// The most slots or dtypes a kernel's declaration may hold: more means a text that does not
// end where it should (a forged table), refused instead of read on.
constexpr size_t kMaxDeclared = 256;

// A declared slot text, refusing one that does not end within kMaxDeclared characters.
std::string bounded(const char* text) {
  const size_t n = strnlen(text, kMaxDeclared + 1);
  if (n > kMaxDeclared) throw std::invalid_argument("its slot declaration does not end");
  return std::string(text, n);
}

// Raised to Python as paddle_core._runtime.KernelFailure(op index, message).
struct KernelFailure {
  int op;
  std::string message;
};

// Nanoseconds on the clock the profiler reads: steady (monotonic), from an unspecified start.
int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// One op's time in a profiled run: its index in the plan, and now_ns() before and after it.
using OpTime = std::array<int64_t, 3>;
static_assert(sizeof(OpTime) == 3 * sizeof(int64_t), "OpTimes are rows of an int64 array");

// One variable's storage: its shape/strides (stable for the plan's life) and current data.
struct Buffer {
  std::vector<int64_t> shape, strides;
  int32_t dtype = 0;
  void* data = nullptr;
  bool host = true;            // `data` is host memory (a NumPy array), not a device's
  py::object array;            // the array owning `data`
  std::vector<void**> places;  // step tensors that point at `data`, patched on rebinding
};

struct Step {
  bool native = false;
  // The op this step belongs to: its index among the plan's native and Python steps (a copy
  // step belongs to the op before it, whose output it copies back; -1 when there is none).
  int32_t op = -1;
  // A copy step (native == false, copy_from >= 0): buffer copy_from -> copy_to, byte for byte.
  int32_t copy_from = -1, copy_to = -1;
  const pc_kernel* kernel = nullptr;
  void* state = nullptr;
  uint64_t random_key = 0;  // pc_context.random_key while this step runs
  // Native: the scratch memory its kernel asked for in prepare (pc_context.workspace_size),
  // and where it is now (a buffer's data: use_workspace); what its state keeps, as it says.
  size_t workspace_size = 0, state_bytes = 0;
  void* workspace = nullptr;
  // Native: every tensor of the step holds no element (and it has outputs), so its kernel has
  // nothing to read, check or write: run is not called. Such a tensor may still have a huge
  // dimension ([2^40, 0]) that a kernel's loops would walk for nothing.
  bool empty = false;
  // Native: the pc_tensors handed to the kernel, and storage they point into.
  std::vector<pc_tensor> in_items, out_items;
  std::vector<int32_t> in_begin, out_begin;
  pc_tensors ins{}, outs{};
  // Attribute storage for prepare (kept for the plan's life).
  std::vector<pc_attr> attr_items;
  std::vector<std::string> attr_names, attr_strings;
  std::vector<std::vector<int64_t>> attr_ints;
  std::vector<std::vector<double>> attr_floats;
  std::vector<std::vector<std::string>> attr_string_lists;
  std::vector<std::vector<const char*>> attr_string_ptrs;
  // Python: fn(inputs) -> list of output arrays, where inputs is a list per slot.
  py::object fn;
  std::vector<std::vector<int32_t>> py_in_slots;  // buffer indices per input slot
  std::vector<int32_t> py_outs;                    // buffer index per output item

  ~Step() {
    if (native && state != nullptr && kernel->release != nullptr) kernel->release(state);
  }
};

class Plan {
 public:
  Plan(int32_t num_threads, uintptr_t stream) {
    ctx_.num_threads = num_threads;
    ctx_.struct_size = static_cast<int32_t>(sizeof(pc_context));
    ctx_.stream = reinterpret_cast<void*>(stream);
    ctx_.message = message_;
    ctx_.message_capacity = sizeof message_;
  }

  // A buffer with a fixed shape and dtype; returns its index.
  int32_t add_buffer(const std::vector<int64_t>& shape, int32_t dtype) {
    auto b = std::make_unique<Buffer>();
    b->shape = shape;
    b->strides.resize(shape.size());
    int64_t stride = 1;
    for (size_t k = shape.size(); k-- > 0;) {
      b->strides[k] = stride;
      stride *= shape[k];
    }
    b->dtype = dtype;
    buffers_.push_back(std::move(b));
    return static_cast<int32_t>(buffers_.size() - 1);
  }

  // A native step: `kernel` is a capsule from a plugin's kernels(); slots hold buffer indices;
  // attrs are (name, type, value) tuples; the kernel's tensors say device (type, index);
  // random_key is the op's key for random numbers (0 for ops that draw none).
  void add_native(py::capsule kernel, const std::vector<std::vector<int32_t>>& in_slots,
                  const std::vector<std::vector<int32_t>>& out_slots, const py::list& attrs,
                  int32_t device_type, int32_t device_index, uint64_t random_key) {
    auto step = std::make_unique<Step>();
    step->native = true;
    step->op = ops_++;
    step->kernel = kernel_of(kernel);
    step->random_key = random_key;
    fill_tensors(in_slots, device_type, device_index, step->in_items, step->in_begin, step->ins);
    fill_tensors(out_slots, device_type, device_index, step->out_items, step->out_begin,
                 step->outs);
    fill_attrs(*step, attrs);
    step->empty = !step->out_items.empty();
    for (const auto* slots : {&in_slots, &out_slots})
      for (const auto& slot : *slots)
        for (int32_t index : slot) step->empty = step->empty && holds_none(*buffers_[index]);
    steps_.push_back(std::move(step));
  }

  void add_python(py::object fn, const std::vector<std::vector<int32_t>>& in_slots,
                  const std::vector<int32_t>& outs) {
    auto step = std::make_unique<Step>();
    step->op = ops_++;
    step->fn = std::move(fn);
    step->py_in_slots = in_slots;
    step->py_outs = outs;
    steps_.push_back(std::move(step));
  }

  // Give a buffer its data: a NumPy array, or a device array (`__cuda_array_interface__`).
  // The caller has checked the array, but a kernel would read or write out of bounds if it
  // were wrong, so its size and layout are checked again here.
  void bind(int32_t index, py::object array) {
    Buffer& b = *buffers_.at(index);
    if (!py::isinstance<py::array>(array) && py::hasattr(array, "__cuda_array_interface__")) {
      b.data = device_data(b, array, index);
      b.host = false;
    } else {
      auto host = array.cast<py::array>();
      check_fits(b, host, index);
      b.data = const_cast<void*>(host.data());
      b.host = true;
      array = std::move(host);
    }
    b.array = std::move(array);
    for (void** place : b.places) *place = b.data;
  }

  // A step copying buffer `from` into buffer `to` (same byte size): an op whose output is also
  // one of its inputs writes a separate buffer, copied back after it, because kernels may
  // assume that their outputs do not overlap their inputs (see kernel_abi.h).
  void add_copy(int32_t from, int32_t to) {
    if (bytes_of(*buffers_.at(from)) != bytes_of(*buffers_.at(to)))
      throw std::invalid_argument("copy between buffers of different sizes");
    auto step = std::make_unique<Step>();
    step->op = ops_ - 1;
    step->copy_from = from;
    step->copy_to = to;
    steps_.push_back(std::move(step));
    has_copies_ = true;
  }

  py::object array(int32_t index) const { return buffers_.at(index)->array; }

  // The counter random ops see in the next runs (how many runs drew random numbers before).
  void set_random_counter(uint64_t counter) { ctx_.random_counter = counter; }

  // Run every native kernel's prepare (data-less tensors). Raises KernelFailure.
  void prepare() {
    with_workspace_.clear();
    for (size_t s = 0; s < steps_.size(); ++s) {
      Step& step = *steps_[s];
      if (!step.native || step.kernel->prepare == nullptr) continue;
      std::vector<void*> saved;
      for (auto* items : {&step.in_items, &step.out_items})
        for (pc_tensor& t : *items) saved.push_back(std::exchange(t.data, nullptr));
      pc_attrs attrs{step.attr_items.data(), static_cast<int32_t>(step.attr_items.size())};
      message_[0] = '\0';
      ctx_.workspace_size = ctx_.state_bytes = 0;
      ctx_.workspace = nullptr;
      pc_status status = step.kernel->prepare(&attrs, &step.ins, &step.outs, &ctx_, &step.state);
      step.workspace_size = std::exchange(ctx_.workspace_size, 0);
      if (step.workspace_size > 0) with_workspace_.push_back(&step);
      step.state_bytes = std::exchange(ctx_.state_bytes, 0);
      size_t k = 0;
      for (auto* items : {&step.in_items, &step.out_items})
        for (pc_tensor& t : *items) t.data = saved[k++];
      if (status != PC_OK) throw KernelFailure{step.op, message()};
    }
  }

  // (op, workspace bytes, state bytes) of each native step whose kernel asked for scratch
  // memory or said its state keeps some, after prepare.
  std::vector<std::array<int64_t, 3>> kernel_memory() const {
    std::vector<std::array<int64_t, 3>> found;
    for (const auto& step : steps_)
      if (step->native && (step->workspace_size > 0 || step->state_bytes > 0))
        found.push_back({step->op, static_cast<int64_t>(step->workspace_size),
                         static_cast<int64_t>(step->state_bytes)});
    return found;
  }

  // Op `op`'s kernel gets buffer `index`'s memory as its workspace (the buffer holds at least
  // the bytes it asked for), wherever the buffer is bound.
  void use_workspace(int32_t op, int32_t index) {
    Buffer& b = *buffers_.at(index);
    for (auto& step : steps_) {
      if (!step->native || step->op != op) continue;
      if (bytes_of(b) < step->workspace_size)
        throw std::invalid_argument("a workspace buffer smaller than its kernel asked for");
      step->workspace = b.data;
      b.places.push_back(&step->workspace);
      return;
    }
    throw std::invalid_argument("use_workspace: no native op " + std::to_string(op));
  }

  // Bind `arrays` to buffers `indices`, then run all steps in order.
  void run(const std::vector<int32_t>& indices, const py::list& arrays) {
    for (size_t k = 0; k < indices.size(); ++k) bind(indices[k], arrays[k]);
    check_runnable();
    run_steps<false>(nullptr, py::none());
  }

  // run, timing each op: returns an int64 array of (op, start, end) rows, one per op in the
  // order they ran. `sync` (None for host plans) is called before the first step and after
  // each, with the GIL, to wait for a device's queued work, so that each op's time is its work
  // and not its launch.
  py::array_t<int64_t> run_profiled(const std::vector<int32_t>& indices, const py::list& arrays,
                                    const py::object& sync) {
    for (size_t k = 0; k < indices.size(); ++k) bind(indices[k], arrays[k]);
    check_runnable();
    if (!sync.is_none()) sync();
    std::vector<OpTime> times;
    times.reserve(static_cast<size_t>(ops_));
    run_steps<true>(&times, sync);
    py::array_t<int64_t> rows({static_cast<py::ssize_t>(times.size()), py::ssize_t{3}});
    if (!times.empty())
      std::memcpy(rows.mutable_data(), times.data(), times.size() * sizeof(OpTime));
    return rows;
  }

  // A loop's body: run every step (native and copy steps only) again and again while the
  // one-byte bool buffer `condition` holds true, with no Python between runs. Returns how many
  // times the steps ran, or -1 when the condition still held after `max_iters` runs.
  // Buffers must be bound first (bind); the steps update them in place.
  int64_t run_while(int32_t condition, int64_t max_iters) {
    for (const auto& step : steps_)
      if (step->fn) throw std::invalid_argument("run_while runs plans of native steps only");
    const Buffer& cond = *buffers_.at(condition);
    if (pc_dtype_size(cond.dtype) != 1 || cond.data == nullptr || !cond.host)
      throw std::invalid_argument("run_while's condition must be a bound one-byte host bool buffer");
    check_runnable();
    py::gil_scoped_release release;
    int64_t n = 0;
    while (*static_cast<const uint8_t*>(cond.data) != 0) {
      if (n == max_iters) return -1;
      run_native_steps();
      ++n;
    }
    return n;
  }

  // A scan over a time axis: run every step (native and copy steps only) `n` times with no
  // Python between runs. Run k works on time index t = k (n - 1 - k with `reverse`): first
  // each `load` copies slice t of its array into its buffer and each `save_before` copies its
  // buffer into slice t of its array; the steps run; then each `save` copies its buffer into
  // slice t of its array, and each pair of `swaps` exchanges its two buffers' memory (a run's
  // new state, or new running sum, becomes what the next run reads, with no copy). Items are
  // (array, buffer, outer, outer_stride, time_stride): a slice is `outer` equal chunks of the
  // buffer's bytes, `outer_stride` bytes apart, from byte t * `time_stride` of a C-contiguous
  // host array (a [B, T, ...] array's slice t is B chunks). Buffers must be bound first.
  void run_scan(int64_t n, bool reverse, const py::list& load, const py::list& save_before,
                const py::list& save, const std::vector<std::pair<int32_t, int32_t>>& swaps) {
    for (const auto& step : steps_)
      if (step->fn) throw std::invalid_argument("run_scan runs plans of native steps only");
    if (n < 0) throw std::invalid_argument("run_scan: a negative number of steps");
    std::vector<py::array> keep;  // the arrays sliced, alive for the call
    const auto loads = slices(load, n, false, keep);
    const auto before = slices(save_before, n, true, keep);
    const auto after = slices(save, n, true, keep);
    std::unordered_set<int32_t> swapped;  // each pair a transposition of its own (swap_owners)
    for (const auto& [a, b] : swaps) {
      const Buffer &x = *buffers_.at(a), &y = *buffers_.at(b);
      if (a == b || bytes_of(x) != bytes_of(y) || !x.host || !y.host ||
          (bytes_of(x) > 0 && (x.data == nullptr || y.data == nullptr)))
        throw std::invalid_argument("run_scan swaps two distinct bound host buffers of one size");
      if (!swapped.insert(a).second || !swapped.insert(b).second)
        throw std::invalid_argument("run_scan: a buffer is in more than one pair of swaps");
    }
    check_runnable();
    int64_t done = 0;
    try {
      py::gil_scoped_release release;
      for (; done < n; ++done) {
        const int64_t t = reverse ? n - 1 - done : done;
        for (const Slice& s : loads) copy_slice(s, t, true);
        for (const Slice& s : before) copy_slice(s, t, false);
        run_native_steps();
        for (const Slice& s : after) copy_slice(s, t, false);
        for (const auto& [a, b] : swaps) swap_data(*buffers_[a], *buffers_[b]);
      }
    } catch (...) {
      swap_owners(swaps, done);
      throw;
    }
    swap_owners(swaps, done);
  }

 private:
  struct Slice {
    char* base;
    Buffer* buffer;  // read at each copy: swaps move its memory
    int64_t outer, outer_stride, time_stride;
    size_t chunk;
  };

  // run_scan's items as Slices, refusing any that would reach outside its array.
  std::vector<Slice> slices(const py::list& items, int64_t n, bool write,
                            std::vector<py::array>& keep) {
    std::vector<Slice> out;
    for (const py::handle item : items) {
      auto t = item.cast<py::tuple>();
      auto array = t[0].cast<py::array>();
      Buffer& b = *buffers_.at(t[1].cast<int32_t>());
      Slice s{nullptr, &b, t[2].cast<int64_t>(), t[3].cast<int64_t>(), t[4].cast<int64_t>(), 0};
      const size_t bytes = bytes_of(b);
      bool ok = (array.flags() & py::array::c_style) != 0 && (!write || array.writeable()) &&
                b.host && s.outer >= 0 && s.outer_stride >= 0 && s.time_stride >= 0;
      if (ok && bytes > 0) {
        ok = b.data != nullptr && s.outer > 0 && bytes % static_cast<size_t>(s.outer) == 0;
        s.chunk = ok ? bytes / static_cast<size_t>(s.outer) : 0;
        // The last byte a copy touches: (outer - 1) * outer_stride + (n - 1) * time_stride + chunk.
        uint64_t a = 0, c = 0, end = 0;
        ok = ok && !__builtin_mul_overflow(static_cast<uint64_t>(s.outer - 1),
                                           static_cast<uint64_t>(s.outer_stride), &a);
        ok = ok && !__builtin_mul_overflow(static_cast<uint64_t>(n > 0 ? n - 1 : 0),
                                           static_cast<uint64_t>(s.time_stride), &c);
        ok = ok && !__builtin_add_overflow(a, c, &end) &&
             !__builtin_add_overflow(end, static_cast<uint64_t>(s.chunk), &end);
        ok = ok && (n == 0 || end <= static_cast<uint64_t>(array.nbytes()));
      }
      if (!ok)
        throw std::invalid_argument("run_scan: a slice does not fit its array or buffer");
      s.base = static_cast<char*>(write ? array.mutable_data() : const_cast<void*>(array.data()));
      keep.push_back(std::move(array));
      out.push_back(s);
    }
    return out;
  }

  static void copy_slice(const Slice& s, int64_t t, bool into_buffer) {
    if (s.chunk == 0) return;
    char* buffer = static_cast<char*>(s.buffer->data);
    char* at = s.base + t * s.time_stride;
    for (int64_t o = 0; o < s.outer; ++o) {
      char* array = at + o * s.outer_stride;
      char* own = buffer + static_cast<size_t>(o) * s.chunk;
      if (into_buffer)
        std::memcpy(own, array, s.chunk);
      else
        std::memcpy(array, own, s.chunk);
    }
  }

  // Every step once, in order (native and copy steps only; the GIL released by the caller).
  void run_native_steps() {
    for (size_t s = 0; s < steps_.size(); ++s) {
      Step& step = *steps_[s];
      if (!step.native) {
        const Buffer& from = *buffers_[step.copy_from];
        if (size_t bytes = bytes_of(from)) std::memcpy(buffers_[step.copy_to]->data, from.data, bytes);
        continue;
      }
      if (!step.empty) call(step);
    }
  }

  // A native step's kernel, run.
  void call(Step& step) {
    message_[0] = '\0';
    ctx_.random_key = step.random_key;
    ctx_.workspace_size = step.workspace_size;
    ctx_.workspace = step.workspace;
    pc_status status = step.kernel->run(step.state, &step.ins, &step.outs, &ctx_);
    if (status != PC_OK) throw KernelFailure{step.op, message()};
  }

  // Every step once, in order: native and copy steps without the GIL, Python steps with it.
  // kProfile: append each op's (op, start, end) to `times`, calling `sync` after each step.
  template <bool kProfile>
  void run_steps(std::vector<OpTime>* times, const py::object& sync) {
    size_t s = 0;
    while (s < steps_.size()) {
      if (steps_[s]->fn) {
        const int64_t start = kProfile ? now_ns() : 0;
        run_python(s);
        if constexpr (kProfile) times->push_back({steps_[s]->op, start, now_ns()});
        ++s;
        continue;
      }
      py::gil_scoped_release release;  // a run of native (and copy) steps goes without the GIL
      for (; s < steps_.size() && !steps_[s]->fn; ++s) {
        Step& step = *steps_[s];
        const int64_t start = kProfile ? now_ns() : 0;
        if (!step.native) {
          const Buffer& from = *buffers_[step.copy_from];
          if (size_t n = bytes_of(from)) std::memcpy(buffers_[step.copy_to]->data, from.data, n);
        } else if (!step.empty) {
          call(step);
        }
        if constexpr (kProfile) {
          if (!sync.is_none()) {
            py::gil_scoped_acquire gil;
            sync();
          }
          const int64_t end = now_ns();
          if (!step.native && !times->empty() && times->back()[0] == step.op)
            times->back()[2] = end;  // a copy step: part of its op's time
          else
            times->push_back({step.op, start, end});
        }
      }
    }
  }

  // Exchange two buffers' memory (not their owners: swap_owners does that with the GIL).
  static void swap_data(Buffer& x, Buffer& y) {
    std::swap(x.data, y.data);
    for (void** place : x.places) *place = x.data;
    for (void** place : y.places) *place = y.data;
  }

  // After `done` swaps of each pair, each buffer's owning array follows its memory.
  void swap_owners(const std::vector<std::pair<int32_t, int32_t>>& swaps, int64_t done) {
    if (done % 2 == 0) return;
    for (const auto& [a, b] : swaps) std::swap(buffers_[a]->array, buffers_[b]->array);
  }

  // The kernel's reason, read with a bound (a kernel may not terminate it).
  std::string message() const {
    size_t n = strnlen(message_, sizeof message_);
    return n ? std::string(message_, n) : std::string("the kernel reported an error without a message");
  }

  // Whether a buffer holds no element (a dimension is 0), however large its other dimensions.
  static bool holds_none(const Buffer& b) {
    for (int64_t d : b.shape)
      if (d == 0) return true;
    return false;
  }

  static size_t bytes_of(const Buffer& b) {
    size_t n = pc_dtype_size(b.dtype);
    for (int64_t d : b.shape) n *= static_cast<size_t>(d);
    return n;
  }

  static void check_fits(const Buffer& b, const py::array& a, int32_t index) {
    const auto flags = a.flags();
    bool ok = static_cast<size_t>(a.itemsize()) == pc_dtype_size(b.dtype) &&
              static_cast<size_t>(a.ndim()) == b.shape.size() &&
              (flags & py::array::c_style) != 0 &&
              (flags & py::detail::npy_api::NPY_ARRAY_ALIGNED_) != 0;
    for (size_t k = 0; ok && k < b.shape.size(); ++k) ok = a.shape(k) == b.shape[k];
    if (!ok) {
      std::string planned;
      for (int64_t d : b.shape) planned += (planned.empty() ? "" : ", ") + std::to_string(d);
      throw std::invalid_argument("buffer " + std::to_string(index) + " is planned as [" + planned +
                                  "] of " + std::to_string(pc_dtype_size(b.dtype)) +
                                  "-byte elements, C-contiguous and aligned; the array given is not");
    }
  }

  // Copy steps copy with memcpy: refuse to run them on device memory. A kernel that asked for
  // a workspace gets one.
  void check_runnable() const {
    for (const Step* step : with_workspace_)
      if (step->workspace == nullptr)
        throw std::invalid_argument("op " + std::to_string(step->op) +
                                    "'s kernel asked for a workspace, and none is bound");
    if (!has_copies_) return;
    for (const auto& step : steps_) {
      if (step->copy_from >= 0 && !(buffers_[step->copy_from]->host && buffers_[step->copy_to]->host))
        throw std::invalid_argument("a copy step needs host buffers; device buffers are bound");
    }
  }

  // The device pointer of a `__cuda_array_interface__` array, after checking it has the
  // buffer's shape, element size and C-contiguous layout, and is aligned to its element size.
  // (Read-only arrays are bound like read-only NumPy ones: planning decides who writes.)
  static void* device_data(const Buffer& b, const py::object& array, int32_t index) {
    std::vector<int64_t> shape, strides;
    std::string typestr;
    uintptr_t ptr = 0;
    bool has_strides = false;
    try {  // a device type's arrays could get the protocol wrong: say so, do not crash
      auto cai = array.attr("__cuda_array_interface__").cast<py::dict>();
      shape = cai["shape"].cast<std::vector<int64_t>>();
      typestr = cai["typestr"].cast<std::string>();
      ptr = cai["data"].cast<py::tuple>()[0].cast<uintptr_t>();
      has_strides = cai.contains("strides") && !cai["strides"].is_none();
      if (has_strides) strides = cai["strides"].cast<std::vector<int64_t>>();
    } catch (const std::exception& e) {
      throw std::invalid_argument("buffer " + std::to_string(index) +
                                  ": the array's __cuda_array_interface__ is malformed (" +
                                  e.what() + ")");
    }
    const size_t itemsize = typestr.size() > 2 ? std::strtoul(typestr.c_str() + 2, nullptr, 10) : 0;
    bool ok = itemsize == pc_dtype_size(b.dtype) && shape == b.shape;
    if (ok && has_strides) {
      ok = strides.size() == b.shape.size();
      for (size_t k = 0; ok && k < strides.size(); ++k)
        ok = b.shape[k] == 1 || strides[k] == b.strides[k] * static_cast<int64_t>(itemsize);
    }
    if (ok && bytes_of(b) > 0) ok = ptr != 0 && ptr % itemsize == 0;
    if (!ok) {
      std::string planned;
      for (int64_t d : b.shape) planned += (planned.empty() ? "" : ", ") + std::to_string(d);
      throw std::invalid_argument("buffer " + std::to_string(index) + " is planned as [" + planned +
                                  "] of " + std::to_string(pc_dtype_size(b.dtype)) +
                                  "-byte elements, C-contiguous and aligned; the device array "
                                  "given is not");
    }
    return reinterpret_cast<void*>(ptr);
  }

  // Build the pc_tensors of one side of a step, and record where each buffer's data pointer
  // now lives so that rebinding the buffer patches it. The item vector is complete before any
  // address is taken, so the addresses stay valid.
  void fill_tensors(const std::vector<std::vector<int32_t>>& slots, int32_t device_type,
                    int32_t device_index, std::vector<pc_tensor>& items,
                    std::vector<int32_t>& begin, pc_tensors& out) {
    std::vector<int32_t> owners;
    begin.push_back(0);
    for (const auto& slot : slots) {
      for (int32_t index : slot) {
        const Buffer& b = *buffers_.at(index);
        items.push_back(pc_tensor{b.data, b.shape.data(), b.strides.data(),
                                  static_cast<int32_t>(b.shape.size()), b.dtype, device_type,
                                  device_index});
        owners.push_back(index);
      }
      begin.push_back(static_cast<int32_t>(items.size()));
    }
    for (size_t i = 0; i < items.size(); ++i) buffers_[owners[i]]->places.push_back(&items[i].data);
    out = pc_tensors{items.data(), begin.data(), static_cast<int32_t>(slots.size()),
                     static_cast<int32_t>(items.size())};
  }

  void fill_attrs(Step& step, const py::list& attrs) {
    size_t n = attrs.size();
    // Reserve so that pointers into these vectors stay valid while we fill them.
    step.attr_names.reserve(n);
    step.attr_strings.reserve(n);
    step.attr_ints.reserve(n);
    step.attr_floats.reserve(n);
    step.attr_string_lists.reserve(n);
    step.attr_string_ptrs.reserve(n);
    for (const py::handle item : attrs) {
      auto tuple = item.cast<py::tuple>();
      pc_attr a{};
      step.attr_names.push_back(tuple[0].cast<std::string>());
      a.name = step.attr_names.back().c_str();
      a.type = tuple[1].cast<int32_t>();
      py::handle value = tuple[2];
      a.count = 1;
      switch (a.type) {
        case PC_ATTR_INT:
        case PC_ATTR_LONG:
        case PC_ATTR_BLOCK:
          a.i = value.cast<int64_t>();
          break;
        case PC_ATTR_BOOL:
          a.i = value.cast<bool>() ? 1 : 0;
          break;
        case PC_ATTR_FLOAT:
          a.f = value.cast<double>();
          break;
        case PC_ATTR_STRING:
          step.attr_strings.push_back(value.cast<std::string>());
          a.s = step.attr_strings.back().c_str();
          break;
        case PC_ATTR_INTS:
        case PC_ATTR_LONGS:
        case PC_ATTR_BOOLS: {
          std::vector<int64_t> v;
          for (auto x : value) v.push_back(a.type == PC_ATTR_BOOLS ? x.cast<bool>() : x.cast<int64_t>());
          step.attr_ints.push_back(std::move(v));
          a.ints = step.attr_ints.back().data();
          a.count = static_cast<int32_t>(step.attr_ints.back().size());
          break;
        }
        case PC_ATTR_FLOATS: {
          step.attr_floats.push_back(value.cast<std::vector<double>>());
          a.floats = step.attr_floats.back().data();
          a.count = static_cast<int32_t>(step.attr_floats.back().size());
          break;
        }
        case PC_ATTR_STRINGS: {
          step.attr_string_lists.push_back(value.cast<std::vector<std::string>>());
          std::vector<const char*> ptrs;
          for (const auto& s : step.attr_string_lists.back()) ptrs.push_back(s.c_str());
          step.attr_string_ptrs.push_back(std::move(ptrs));
          a.strings = step.attr_string_ptrs.back().data();
          a.count = static_cast<int32_t>(step.attr_string_ptrs.back().size());
          break;
        }
        default:
          throw std::invalid_argument("unknown attr type " + std::to_string(a.type));
      }
      step.attr_items.push_back(a);
    }
  }

  void run_python(size_t s) {
    Step& step = *steps_[s];
    py::list inputs;
    for (const auto& slot : step.py_in_slots) {
      py::list arrays;
      for (int32_t index : slot) arrays.append(buffers_[index]->array);
      inputs.append(arrays);
    }
    // The callback checks and normalises the kernel's results (see run/prepared.py).
    py::list results = step.fn(inputs);
    for (size_t k = 0; k < step.py_outs.size(); ++k)
      bind(step.py_outs[k], results[k]);
  }

  std::vector<std::unique_ptr<Buffer>> buffers_;
  std::vector<std::unique_ptr<Step>> steps_;
  bool has_copies_ = false;
  std::vector<const Step*> with_workspace_;  // native steps whose kernel asked for one
  int32_t ops_ = 0;  // native and Python steps added so far (copy steps are part of one)
  pc_context ctx_{};
  char message_[1024] = {0};
};

}  // namespace

PYBIND11_MODULE(_runtime, m) {
  m.doc() = "paddle-core's compiled half: kernel capsule checks and the executor's run loop.";
  // The core's own kernels (add_n, fill_like: every backward uses them; builtin_kernels.cpp
  // registers them), exported like any plugin's (this sets KERNEL_ABI_VERSION and
  // KERNEL_LAYOUT, the core's own, too); builtin/ops.pbtxt declares them.
  paddle_core::export_kernels(m);
  m.attr("KERNEL_BASE_SIZE") = PC_KERNEL_BASE_SIZE;
  PYBIND11_CONSTINIT static py::gil_safe_call_once_and_store<py::object> failure;
  failure.call_once_and_store_result(
      [&]() { return py::exception<KernelFailure>(m, "KernelFailure"); });
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const KernelFailure& e) {
      py::set_error(failure.get_stored(), py::make_tuple(e.op, e.message));
    }
  });
  m.def("now_ns", &now_ns,
        "Nanoseconds on the clock run_profiled reads (steady, from an unspecified start).");
  m.def(
      "kernel_info",
      [](py::capsule capsule) {
        const pc_kernel* k = kernel_of(capsule);
        return py::make_tuple(k->abi_version, k->struct_size,
                              k->name ? std::string(k->name) : std::string(), k->run != nullptr);
      },
      py::arg("capsule"),
      "(abi_version, struct_size, name, has_run) of a kernel capsule, checked before use.");
  m.def(
      "kernel_signature",
      [](py::capsule capsule) {
        const pc_kernel* k = kernel_of(capsule);
        if (k->struct_size < PC_KERNEL_BASE_SIZE)  // (loading refuses it before, by kernel_info)
          throw std::invalid_argument("its pc_kernel is smaller than ABI 1's");
        // None where a kernel declares nothing.
        py::object inputs = py::none(), outputs = py::none(), dtypes = py::none();
        if (k->inputs != nullptr) inputs = py::str(bounded(k->inputs));
        if (k->outputs != nullptr) outputs = py::str(bounded(k->outputs));
        if (k->dtypes != nullptr) {
          py::list list;
          for (size_t n = 0; k->dtypes[n] != 0; ++n) {
            if (n == kMaxDeclared) throw std::invalid_argument("its dtypes list does not end");
            list.append(k->dtypes[n]);
          }
          dtypes = std::move(list);
        }
        return py::make_tuple(inputs, outputs, dtypes);
      },
      py::arg("capsule"),
      "(inputs, outputs, dtypes) a kernel declares it fits (kernel_abi.h, pc_kernel), each "
      "None when not declared; checked against the manifest at load.");
  py::class_<Plan>(m, "Plan")
      .def(py::init<int32_t, uintptr_t>(), py::arg("num_threads"), py::arg("stream"))
      .def("add_buffer", &Plan::add_buffer, py::arg("shape"), py::arg("dtype"))
      .def("add_native", &Plan::add_native, py::arg("kernel"), py::arg("inputs"),
           py::arg("outputs"), py::arg("attrs"), py::arg("device_type"), py::arg("device_index"),
           py::arg("random_key"))
      .def("set_random_counter", &Plan::set_random_counter, py::arg("counter"))
      .def("add_python", &Plan::add_python, py::arg("fn"), py::arg("inputs"), py::arg("outputs"))
      .def("add_copy", &Plan::add_copy, py::arg("source"), py::arg("target"))
      .def("bind", &Plan::bind, py::arg("index"), py::arg("array"))
      .def("array", &Plan::array, py::arg("index"))
      .def("prepare", &Plan::prepare)
      .def("kernel_memory", &Plan::kernel_memory)
      .def("use_workspace", &Plan::use_workspace, py::arg("op"), py::arg("index"))
      .def("run", &Plan::run, py::arg("indices"), py::arg("arrays"))
      .def("run_profiled", &Plan::run_profiled, py::arg("indices"), py::arg("arrays"),
           py::arg("sync") = py::none())
      .def("run_while", &Plan::run_while, py::arg("condition"), py::arg("max_iters"))
      .def("run_scan", &Plan::run_scan, py::arg("n"), py::arg("reverse"), py::arg("load"),
           py::arg("save_before"), py::arg("save"), py::arg("swaps"));
}
