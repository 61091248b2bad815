// Softmax and the losses built on it: softmax, log_softmax, cross_entropy,
// softmax_with_cross_entropy, accuracy, and the gradients of the first four. The layout,
// checks and per-lane computations are softmax.hpp's (shared with the CUDA kernels).
//
// Memory contract: every tensor is C-contiguous; prepare checks each shape and dtype that run
// indexes, so run only computes (and, for hard labels, checks their values before reading x
// with them: a label outside [0, C) that is not ignore_index is an error, never an out-of-bounds
// read). Lanes are split across the run's threads in contiguous ranges (of rows, for the last
// axis). Float32 lanes along the last axis run softmax_avx2.cpp on CPUs with AVX2 and FMA.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "softmax.hpp"

namespace paddle_ops_nn {
namespace {

// Run-time check of hard labels, before any is used as an index (outside parallel regions:
// fail throws).
void check_labels(const int64_t* label, int64_t n, int64_t classes, bool ignore,
                  int64_t ignore_index) {
  for (int64_t i = 0; i < n; ++i) {
    const int64_t v = label[i];
    if ((ignore && v == ignore_index) || (v >= 0 && v < classes)) continue;
    if (ignore)
      fail("label %lld (at position %lld of label) is out of range: there are %lld classes, so a "
           "label must be in [0, %lld) or be ignore_index (%lld)",
           static_cast<long long>(v), static_cast<long long>(i), static_cast<long long>(classes),
           static_cast<long long>(classes), static_cast<long long>(ignore_index));
    fail("label %lld (at position %lld of label) is out of range: there are %lld classes, so a "
         "label must be in [0, %lld)",
         static_cast<long long>(v), static_cast<long long>(i), static_cast<long long>(classes),
         static_cast<long long>(classes));
  }
}

// Call f(lane, base) for every lane, split across threads (exp-heavy work: a smaller grain than
// the memory-bound loops'). Lanes along the last axis are rows; along another axis, adjacent
// lanes interleave, and the chunks stay aligned.
template <class F> void for_lanes(const Lanes& l, int32_t threads, F&& f) {
  const int64_t grain = std::max<int64_t>(1, kGrain / 8 / std::max<int64_t>(l.classes, 1));
  const int64_t align = l.inner == 1 ? 1 : 64;
  parallel_chunks(l.count(), threads, grain, align, [&](int64_t lo, int64_t hi) {
    for (int64_t lane = lo; lane < hi; ++lane) f(lane, l.base(lane));
  });
}

// -- softmax, log_softmax --------------------------------------------------------------------

// out = softmax(x) (or log_softmax(x)) along axis.
template <bool Log> class Softmax {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = Floats;
  Softmax(const Attrs& attrs, const Slots& in, const Slots& out)
      : lanes_(check_softmax(attrs, in, out)) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* x = in(0).data<T>();
      T* y = out(0).data<T>();
      const int64_t n = lanes_.classes, s = lanes_.inner;
      if (n == 0) return;
      for_lanes(lanes_, ctx.num_threads(),
                [&](int64_t, int64_t b) { softmax_or_log_lane<Log>(x + b, y + b, n, s); });
    });
  }

 private:
  Lanes lanes_;
};

template <bool Log> class SoftmaxGrad {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  SoftmaxGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : lanes_(check_softmax_grad(attrs, in, out)) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* y = in(0).data<T>();
      const T* g = in(1).data<T>();
      T* dx = out(0).data<T>();
      const int64_t n = lanes_.classes, s = lanes_.inner;
      for_lanes(lanes_, ctx.num_threads(), [&](int64_t, int64_t b) {
        softmax_grad_lane<Log>(y + b, g + b, dx + b, n, s);
      });
    });
  }

 private:
  Lanes lanes_;
};

// -- cross_entropy ---------------------------------------------------------------------------

class CrossEntropy {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  CrossEntropy(const Attrs& attrs, const Slots& in, const Slots& out)
      : a_(attrs), lanes_(check_cross_entropy(a_, in, out)) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* x = in(0).data<T>();
      T* loss = out(0).data<T>();
      const int64_t n = lanes_.classes;
      if (a_.soft) {
        const T* label = in(1).data<T>();
        for_lanes(lanes_, ctx.num_threads(), [&](int64_t r, int64_t b) {
          loss[r] = cross_entropy_soft(x + b, label + b, n);
        });
        return;
      }
      const int64_t* label = in(1).data<int64_t>();
      check_labels(label, lanes_.count(), n, true, a_.ignore_index);
      for_lanes(lanes_, ctx.num_threads(), [&](int64_t r, int64_t b) {
        loss[r] = cross_entropy_hard(x + b, n, label[r], a_.ignore_index);
      });
    });
  }

 private:
  LossAttrs a_;
  Lanes lanes_;
};

class CrossEntropyGrad {
 public:
  static constexpr pc::Signature signature{"111", "1"};
  using DTypes = Floats;
  CrossEntropyGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : a_(attrs), lanes_(check_cross_entropy_grad(a_, in, out)) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* x = in(0).data<T>();
      const T* g = in(2).data<T>();
      T* dx = out(0).data<T>();
      const int64_t n = lanes_.classes;
      if (a_.soft) {
        const T* label = in(1).data<T>();
        for_lanes(lanes_, ctx.num_threads(), [&](int64_t r, int64_t b) {
          cross_entropy_grad_soft(x + b, label + b, g[r], dx + b, n);
        });
        return;
      }
      const int64_t* label = in(1).data<int64_t>();
      check_labels(label, lanes_.count(), n, true, a_.ignore_index);
      for_lanes(lanes_, ctx.num_threads(), [&](int64_t r, int64_t b) {
        cross_entropy_grad_hard(x + b, g[r], dx + b, n, label[r], a_.ignore_index);
      });
    });
  }

 private:
  LossAttrs a_;
  Lanes lanes_;
};

// -- softmax_with_cross_entropy --------------------------------------------------------------

class SoftmaxWithCrossEntropy {
 public:
  static constexpr pc::Signature signature{"11", "11"};
  using DTypes = Floats;
  SoftmaxWithCrossEntropy(const Attrs& attrs, const Slots& in, const Slots& out)
      : a_(attrs), lanes_(check_softmax_with_cross_entropy(attrs, a_, in, out)) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* x = in(0).data<T>();
      T* sm = out(0).data<T>();
      T* loss = out(1).data<T>();
      const int64_t n = lanes_.classes, s = lanes_.inner;
      if (a_.soft) {
        const T* label = in(1).data<T>();
        for_lanes(lanes_, ctx.num_threads(), [&](int64_t lane, int64_t b) {
          loss[lane] = softmax_cross_entropy_soft(x + b, label + b, sm + b, n, s);
        });
        return;
      }
      const int64_t* label = in(1).data<int64_t>();
      check_labels(label, lanes_.count(), n, true, a_.ignore_index);
      for_lanes(lanes_, ctx.num_threads(), [&](int64_t lane, int64_t b) {
        loss[lane] = softmax_cross_entropy_hard(x + b, sm + b, n, s, label[lane], a_.ignore_index);
      });
    });
  }

 private:
  LossAttrs a_;
  Lanes lanes_;
};

class SoftmaxWithCrossEntropyGrad {
 public:
  static constexpr pc::Signature signature{"11??", "1"};
  using DTypes = Floats;
  SoftmaxWithCrossEntropyGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : a_(attrs), p_(check_softmax_with_cross_entropy_grad(attrs, a_, in, out)) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    dispatch(in(0).dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* y = in(0).data<T>();
      const T* g = p_.has_loss_grad ? in(2).data<T>() : nullptr;
      const T* gs = p_.has_softmax_grad ? in(3).data<T>() : nullptr;
      T* dx = out(0).data<T>();
      const int64_t n = p_.lanes.classes, s = p_.lanes.inner;
      const T* soft = a_.soft ? in(1).data<T>() : nullptr;
      const int64_t* hard = a_.soft ? nullptr : in(1).data<int64_t>();
      if (hard != nullptr && g != nullptr)
        check_labels(hard, p_.lanes.count(), n, true, a_.ignore_index);
      for_lanes(p_.lanes, ctx.num_threads(), [&](int64_t lane, int64_t b) {
        softmax_cross_entropy_grad_lane(y + b, soft ? soft + b : nullptr,
                                        hard ? hard + lane : nullptr, g ? g + lane : nullptr,
                                        gs ? gs + b : nullptr, dx + b, n, s, a_.ignore_index);
      });
    });
  }

 private:
  LossAttrs a_;
  SwceGradPlan p_;
};

// -- accuracy --------------------------------------------------------------------------------

// correct = rows whose label is among the k best scores (ties broken by the lower class index,
// so k = 1 means argmax == label); total = rows; accuracy = correct / total (NaN with no rows).
class Accuracy {
 public:
  static constexpr pc::Signature signature{"11", "111"};
  using DTypes = Floats;
  Accuracy(const Attrs& attrs, const Slots& in, const Slots& out)
      : k_(attrs.i("k")), lanes_(check_accuracy(k_, in, out)) {
    fn_ = dispatch(in(0).dtype(), Floats{},
                   [](auto t) -> Fn { return &Accuracy::compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    (this->*fn_)(in, out, ctx.num_threads());
  }

 private:
  using Fn = void (Accuracy::*)(const Slots&, const Slots&, int32_t) const;

  template <class T> void compute(const Slots& in, const Slots& out, int32_t threads) const {
    const T* x = in(0).data<T>();
    const int64_t* label = in(1).data<int64_t>();
    const int64_t rows = lanes_.count(), n = lanes_.classes;
    check_labels(label, rows, n, false, 0);
    std::atomic<int64_t> correct{0};
    const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(n, 1));
    parallel_rows(rows, threads, grain, [&](int64_t lo, int64_t hi) {
      int64_t mine = 0;
      for (int64_t r = lo; r < hi; ++r) mine += accuracy_hit(x + r * n, n, label[r], k_);
      correct += mine;
    });
    const int64_t hits = correct.load();
    *out(0).data<float>() =
        static_cast<float>(static_cast<double>(hits) / static_cast<double>(rows));
    *out(1).data<int64_t>() = hits;
    *out(2).data<int64_t>() = rows;
  }

  int64_t k_;
  Lanes lanes_;
  Fn fn_;
};

}  // namespace

// The kernels of this file, by the names the manifest uses.
PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Softmax<false>>("softmax"),
    pc::kernel<SoftmaxGrad<false>>("softmax_grad"),
    pc::kernel<Softmax<true>>("log_softmax"),
    pc::kernel<SoftmaxGrad<true>>("log_softmax_grad"),
    pc::kernel<CrossEntropy>("cross_entropy"),
    pc::kernel<CrossEntropyGrad>("cross_entropy_grad"),
    pc::kernel<SoftmaxWithCrossEntropy>("softmax_with_cross_entropy"),
    pc::kernel<SoftmaxWithCrossEntropyGrad>("softmax_with_cross_entropy_grad"),
    pc::kernel<Accuracy>("accuracy"));

}  // namespace paddle_ops_nn
