// Softmax and the losses built on it: softmax, log_softmax, cross_entropy,
// softmax_with_cross_entropy, accuracy, and the gradients of the first four.
//
// Memory contract: every tensor is C-contiguous; prepare checks each shape and dtype that run
// indexes, so run only computes (and, for hard labels, checks their values before reading x
// with them: a label outside [0, C) that is not ignore_index is an error, never an out-of-bounds
// read).
//
// Layout: around the class axis, x is viewed as [outer, C, inner]. A "lane" is the vector of
// the C elements of one (outer, inner) position, at stride `inner` (contiguous when the class
// axis is the last one); there are outer * inner lanes, and a per-lane value (a loss, a hard
// label) is at position `lane` of its tensor, whose shape is x's with the class axis as 1 (or
// without it). Lanes are split across the run's threads in contiguous ranges (of rows, for the
// last axis); each lane is computed alone, so results do not depend on the thread count.
//
// Numerics: every softmax subtracts its lane's maximum first, so exp never overflows, and
// log-softmax is (x - max) - log(sum): extreme logits (±1000) give finite results. Sums over a
// lane are carried in double. A NaN in a lane makes its softmax NaN, like NumPy's.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <string>
#include <vector>

#include "common.hpp"

namespace pon {
namespace {

// -- layout and the checks of prepare --------------------------------------------------------

struct Lanes {
  int64_t outer = 1, classes = 1, inner = 1;

  int64_t count() const { return outer * inner; }
  // The offset of lane's first element; its elements are `inner` apart.
  int64_t base(int64_t lane) const { return lane / inner * classes * inner + lane % inner; }
};

// `axis` (negative: from the end) as an axis of x; fails if x has no such axis.
int32_t class_axis(const Tensor& x, int64_t axis, const char* what) {
  const int32_t nd = x.ndim();
  if (nd == 0)
    fail("%s %s is 0-d: it has no class axis (axis %lld)", what, x.describe().c_str(),
         static_cast<long long>(axis));
  if (axis < -nd || axis >= nd)
    fail("axis %lld is out of range for %s %s (valid: %d..%d)", static_cast<long long>(axis), what,
         x.describe().c_str(), -nd, nd - 1);
  return static_cast<int32_t>(axis < 0 ? axis + nd : axis);
}

Lanes lanes_of(const Tensor& x, int32_t axis) {
  Lanes l;
  for (int32_t k = 0; k < x.ndim(); ++k) {
    if (k < axis) l.outer *= x.dim(k);
    else if (k == axis) l.classes = x.dim(k);
    else l.inner *= x.dim(k);
  }
  return l;
}

// x's shape with the class axis as 1 (`keep`), or without it.
std::vector<int64_t> lane_shape(const Tensor& x, int32_t axis, bool keep) {
  std::vector<int64_t> dims(x.shape(), x.shape() + x.ndim());
  if (keep) dims[axis] = 1;
  else dims.erase(dims.begin() + axis);
  return dims;
}

bool has_shape(const Tensor& t, const std::vector<int64_t>& dims) {
  if (t.ndim() != static_cast<int32_t>(dims.size())) return false;
  for (int32_t k = 0; k < t.ndim(); ++k)
    if (t.dim(k) != dims[k]) return false;
  return true;
}

std::string format_dims(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + "]";
}

// Fail unless t is a float tensor of x's dtype with x's shape, the class axis as 1: a loss.
void expect_lane_values(const Tensor& t, const Tensor& x, int32_t axis, const char* what) {
  expect_same_dtype(x, t, what);
  const std::vector<int64_t> want = lane_shape(x, axis, true);
  if (!has_shape(t, want))
    fail("%s must have the shape %s (x's with the class axis as 1), got %s", what,
         format_dims(want).c_str(), t.describe().c_str());
}

// Fail unless `label` fits x: soft labels have x's shape and dtype; hard ones are int64 class
// indices with x's shape, the class axis as 1 or dropped.
void expect_label(const Tensor& label, const Tensor& x, int32_t axis, bool soft,
                  const char* xname) {
  if (soft) {
    std::string what = std::string(xname) + " and label (soft_label=true)";
    expect_same_dtype(x, label, what.c_str());
    expect_same_shape(x, label, what.c_str());
    return;
  }
  if (label.dtype() != PC_INT64)
    fail("label must be int64 class indices (soft_label=false), got %s",
         label.describe().c_str());
  const std::vector<int64_t> keep = lane_shape(x, axis, true), drop = lane_shape(x, axis, false);
  if (!has_shape(label, keep) && !has_shape(label, drop))
    fail("label %s does not fit %s %s: hard labels have the shape %s or %s",
         label.describe().c_str(), xname, x.describe().c_str(), format_dims(keep).c_str(),
         format_dims(drop).c_str());
}

// The class count of a loss's x, which must have classes.
void expect_classes(const Lanes& l, const Tensor& x, const char* xname) {
  if (l.classes == 0)
    fail("%s %s has no classes (its class axis is empty)", xname, x.describe().c_str());
}

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
// the memory-bound loops').
template <class F> void for_lanes(const Lanes& l, int32_t threads, F&& f) {
  const int64_t grain = std::max<int64_t>(1, kGrain / 8 / std::max<int64_t>(l.classes, 1));
  parallel_for(l.count(), threads, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t lane = lo; lane < hi; ++lane) f(lane, l.base(lane));
  });
}

template <class T> T lane_max(const T* x, int64_t n, int64_t s) {
  T m = x[0];
  for (int64_t c = 1; c < n; ++c) m = std::max(m, x[c * s]);
  return m;
}

// y = softmax of one lane of x; returns (max, log of the sum of exp(x - max)).
template <class T>
void softmax_lane(const T* x, T* y, int64_t n, int64_t s, T& m, double& log_sum) {
  m = lane_max(x, n, s);
  double sum = 0;
  for (int64_t c = 0; c < n; ++c) {
    const T e = std::exp(x[c * s] - m);
    y[c * s] = e;
    sum += e;
  }
  const double inv = 1 / sum;
  for (int64_t c = 0; c < n; ++c) y[c * s] = static_cast<T>(y[c * s] * inv);
  log_sum = std::log(sum);
}

// -- softmax, log_softmax --------------------------------------------------------------------

// out = softmax(x) (or log_softmax(x)) along axis.
template <bool Log> class Softmax {
 public:
  Softmax(const Attrs& attrs, const Slots& in, const Slots& out) {
    Tensor x = in(0), o = out(0);
    lanes_ = lanes_of(x, class_axis(x, attrs.i("axis"), "x"));
    expect_same_shape(x, o, "x and out");
    expect_same_dtype(x, o, "x and out");
    fn_ = dispatch(x.dtype(), Floats{},
                   [](auto t) -> Fn { return &Softmax::compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    (this->*fn_)(in, out, ctx.num_threads());
  }

 private:
  using Fn = void (Softmax::*)(const Slots&, const Slots&, int32_t) const;

  template <class T> void compute(const Slots& in, const Slots& out, int32_t threads) const {
    if (lanes_.classes == 0) return;
    const T* x = in(0).data<T>();
    T* y = out(0).data<T>();
    const int64_t n = lanes_.classes, s = lanes_.inner;
    for_lanes(lanes_, threads, [&](int64_t, int64_t b) {
      if (Log) {
        const T m = lane_max(x + b, n, s);
        double sum = 0;
        for (int64_t c = 0; c < n; ++c) {
          const T shifted = x[b + c * s] - m;
          y[b + c * s] = shifted;
          sum += std::exp(shifted);
        }
        const T log_sum = static_cast<T>(std::log(sum));
        for (int64_t c = 0; c < n; ++c) y[b + c * s] -= log_sum;
      } else {
        T m;
        double log_sum;
        softmax_lane(x + b, y + b, n, s, m, log_sum);
      }
    });
  }

  Lanes lanes_;
  Fn fn_;
};

// softmax_grad:     x_grad = out * (g - sum(g * out))
// log_softmax_grad: x_grad = g - exp(out) * sum(g)
template <bool Log> class SoftmaxGrad {
 public:
  SoftmaxGrad(const Attrs& attrs, const Slots& in, const Slots& out) {
    Tensor o = in(0), g = in(1), dx = out(0);
    lanes_ = lanes_of(o, class_axis(o, attrs.i("axis"), "out"));
    expect_same_shape(o, g, "out and out_grad");
    expect_same_shape(o, dx, "out and x_grad");
    expect_same_dtype(o, g, "out and out_grad");
    expect_same_dtype(o, dx, "out and x_grad");
    fn_ = dispatch(o.dtype(), Floats{},
                   [](auto t) -> Fn { return &SoftmaxGrad::compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    (this->*fn_)(in, out, ctx.num_threads());
  }

 private:
  using Fn = void (SoftmaxGrad::*)(const Slots&, const Slots&, int32_t) const;

  template <class T> void compute(const Slots& in, const Slots& out, int32_t threads) const {
    const T* y = in(0).data<T>();
    const T* g = in(1).data<T>();
    T* dx = out(0).data<T>();
    const int64_t n = lanes_.classes, s = lanes_.inner;
    for_lanes(lanes_, threads, [&](int64_t, int64_t b) {
      double acc = 0;
      for (int64_t c = 0; c < n; ++c)
        acc += Log ? double(g[b + c * s]) : double(g[b + c * s]) * y[b + c * s];
      const T sum = static_cast<T>(acc);
      for (int64_t c = 0; c < n; ++c) {
        const int64_t i = b + c * s;
        dx[i] = Log ? g[i] - std::exp(y[i]) * sum : y[i] * (g[i] - sum);
      }
    });
  }

  Lanes lanes_;
  Fn fn_;
};

// -- cross_entropy ---------------------------------------------------------------------------

// The loss attrs shared by cross_entropy and softmax_with_cross_entropy (and their gradients).
struct LossAttrs {
  explicit LossAttrs(const Attrs& attrs)
      : soft(attrs.b("soft_label")), ignore_index(attrs.i("ignore_index")) {}
  bool soft;
  int64_t ignore_index;
};

// out = -log(x[label]) per row (0 where label == ignore_index), or -sum(label * log(x)) with
// soft labels (terms whose label is 0 count 0, even where x is 0). x: probabilities [..., C].
class CrossEntropy {
 public:
  CrossEntropy(const Attrs& attrs, const Slots& in, const Slots& out) : a_(attrs) {
    Tensor x = in(0), label = in(1), o = out(0);
    const int32_t axis = class_axis(x, -1, "x");
    lanes_ = lanes_of(x, axis);
    expect_classes(lanes_, x, "x");
    expect_label(label, x, axis, a_.soft, "x");
    expect_lane_values(o, x, axis, "out");
    fn_ = dispatch(x.dtype(), Floats{},
                   [](auto t) -> Fn { return &CrossEntropy::compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    (this->*fn_)(in, out, ctx.num_threads());
  }

 private:
  using Fn = void (CrossEntropy::*)(const Slots&, const Slots&, int32_t) const;

  template <class T> void compute(const Slots& in, const Slots& out, int32_t threads) const {
    const T* x = in(0).data<T>();
    T* loss = out(0).data<T>();
    const int64_t n = lanes_.classes;
    if (a_.soft) {
      const T* label = in(1).data<T>();
      for_lanes(lanes_, threads, [&](int64_t r, int64_t b) {
        double acc = 0;
        for (int64_t c = 0; c < n; ++c)
          if (label[b + c] != T(0)) acc -= double(label[b + c]) * std::log(double(x[b + c]));
        loss[r] = static_cast<T>(acc);
      });
      return;
    }
    const int64_t* label = in(1).data<int64_t>();
    check_labels(label, lanes_.count(), n, true, a_.ignore_index);
    for_lanes(lanes_, threads, [&](int64_t r, int64_t b) {
      loss[r] = label[r] == a_.ignore_index ? T(0) : -std::log(x[b + label[r]]);
    });
  }

  LossAttrs a_;
  Lanes lanes_;
  Fn fn_;
};

// x_grad = -out_grad / x[label] at the label (0 elsewhere and in ignored rows), or
// -out_grad * label / x with soft labels (0 where the label is 0).
class CrossEntropyGrad {
 public:
  CrossEntropyGrad(const Attrs& attrs, const Slots& in, const Slots& out) : a_(attrs) {
    Tensor x = in(0), label = in(1), g = in(2), dx = out(0);
    const int32_t axis = class_axis(x, -1, "x");
    lanes_ = lanes_of(x, axis);
    expect_classes(lanes_, x, "x");
    expect_label(label, x, axis, a_.soft, "x");
    expect_lane_values(g, x, axis, "out_grad");
    expect_same_shape(x, dx, "x and x_grad");
    expect_same_dtype(x, dx, "x and x_grad");
    fn_ = dispatch(x.dtype(), Floats{},
                   [](auto t) -> Fn { return &CrossEntropyGrad::compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    (this->*fn_)(in, out, ctx.num_threads());
  }

 private:
  using Fn = void (CrossEntropyGrad::*)(const Slots&, const Slots&, int32_t) const;

  template <class T> void compute(const Slots& in, const Slots& out, int32_t threads) const {
    const T* x = in(0).data<T>();
    const T* g = in(2).data<T>();
    T* dx = out(0).data<T>();
    const int64_t n = lanes_.classes;
    if (a_.soft) {
      const T* label = in(1).data<T>();
      for_lanes(lanes_, threads, [&](int64_t r, int64_t b) {
        for (int64_t c = 0; c < n; ++c)
          dx[b + c] = label[b + c] == T(0) ? T(0) : -g[r] * label[b + c] / x[b + c];
      });
      return;
    }
    const int64_t* label = in(1).data<int64_t>();
    check_labels(label, lanes_.count(), n, true, a_.ignore_index);
    for_lanes(lanes_, threads, [&](int64_t r, int64_t b) {
      std::fill(dx + b, dx + b + n, T(0));
      if (label[r] != a_.ignore_index) dx[b + label[r]] = -g[r] / x[b + label[r]];
    });
  }

  LossAttrs a_;
  Lanes lanes_;
  Fn fn_;
};

// -- softmax_with_cross_entropy --------------------------------------------------------------

// softmax = softmax(logits) along axis; loss = logsumexp - logits[label] per lane (0 where
// label == ignore_index), or sum(label * (logsumexp - logits)) with soft labels.
class SoftmaxWithCrossEntropy {
 public:
  SoftmaxWithCrossEntropy(const Attrs& attrs, const Slots& in, const Slots& out) : a_(attrs) {
    Tensor x = in(0), label = in(1), sm = out(0), loss = out(1);
    const int32_t axis = class_axis(x, attrs.i("axis"), "logits");
    lanes_ = lanes_of(x, axis);
    expect_classes(lanes_, x, "logits");
    expect_label(label, x, axis, a_.soft, "logits");
    expect_same_shape(x, sm, "logits and softmax");
    expect_same_dtype(x, sm, "logits and softmax");
    expect_lane_values(loss, x, axis, "loss");
    fn_ = dispatch(x.dtype(), Floats{},
                   [](auto t) -> Fn { return &SoftmaxWithCrossEntropy::compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    (this->*fn_)(in, out, ctx.num_threads());
  }

 private:
  using Fn = void (SoftmaxWithCrossEntropy::*)(const Slots&, const Slots&, int32_t) const;

  template <class T> void compute(const Slots& in, const Slots& out, int32_t threads) const {
    const T* x = in(0).data<T>();
    T* sm = out(0).data<T>();
    T* loss = out(1).data<T>();
    const int64_t n = lanes_.classes, s = lanes_.inner;
    if (a_.soft) {
      const T* label = in(1).data<T>();
      for_lanes(lanes_, threads, [&](int64_t lane, int64_t b) {
        T m;
        double log_sum, acc = 0;
        softmax_lane(x + b, sm + b, n, s, m, log_sum);
        for (int64_t c = 0; c < n; ++c) {
          const int64_t i = b + c * s;
          if (label[i] != T(0)) acc += double(label[i]) * (log_sum - double(x[i] - m));
        }
        loss[lane] = static_cast<T>(acc);
      });
      return;
    }
    const int64_t* label = in(1).data<int64_t>();
    check_labels(label, lanes_.count(), n, true, a_.ignore_index);
    for_lanes(lanes_, threads, [&](int64_t lane, int64_t b) {
      T m;
      double log_sum;
      softmax_lane(x + b, sm + b, n, s, m, log_sum);
      const int64_t k = label[lane];
      loss[lane] = k == a_.ignore_index ? T(0)
                                        : static_cast<T>(log_sum - double(x[b + k * s] - m));
    });
  }

  LossAttrs a_;
  Lanes lanes_;
  Fn fn_;
};

// logits_grad = (softmax - onehot(label)) * loss_grad per lane (0 in ignored lanes), or
// (softmax * sum(label) - label) * loss_grad with soft labels (softmax - label when the labels
// sum to 1); plus softmax * (softmax_grad - sum(softmax_grad * softmax)) when a gradient also
// flows back through the softmax output. Either gradient input may be absent.
class SoftmaxWithCrossEntropyGrad {
 public:
  SoftmaxWithCrossEntropyGrad(const Attrs& attrs, const Slots& in, const Slots& out) : a_(attrs) {
    Tensor sm = in(0), label = in(1), dx = out(0);
    const int32_t axis = class_axis(sm, attrs.i("axis"), "softmax");
    lanes_ = lanes_of(sm, axis);
    expect_classes(lanes_, sm, "softmax");
    expect_label(label, sm, axis, a_.soft, "softmax");
    has_loss_grad_ = in.has(2);
    has_softmax_grad_ = in.has(3);
    if (!has_loss_grad_ && !has_softmax_grad_) fail("neither loss_grad nor softmax_grad is given");
    if (has_loss_grad_) expect_lane_values(in(2), sm, axis, "loss_grad");
    if (has_softmax_grad_) {
      expect_same_shape(sm, in(3), "softmax and softmax_grad");
      expect_same_dtype(sm, in(3), "softmax and softmax_grad");
    }
    expect_same_shape(sm, dx, "softmax and logits_grad");
    expect_same_dtype(sm, dx, "softmax and logits_grad");
    fn_ = dispatch(sm.dtype(), Floats{},
                   [](auto t) -> Fn { return &SoftmaxWithCrossEntropyGrad::compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    (this->*fn_)(in, out, ctx.num_threads());
  }

 private:
  using Fn = void (SoftmaxWithCrossEntropyGrad::*)(const Slots&, const Slots&, int32_t) const;

  template <class T> void compute(const Slots& in, const Slots& out, int32_t threads) const {
    const T* y = in(0).data<T>();
    const T* g = has_loss_grad_ ? in(2).data<T>() : nullptr;
    const T* gs = has_softmax_grad_ ? in(3).data<T>() : nullptr;
    T* dx = out(0).data<T>();
    const int64_t n = lanes_.classes, s = lanes_.inner;
    const T* soft = a_.soft ? in(1).data<T>() : nullptr;
    const int64_t* hard = a_.soft ? nullptr : in(1).data<int64_t>();
    if (hard != nullptr && g != nullptr)
      check_labels(hard, lanes_.count(), n, true, a_.ignore_index);
    for_lanes(lanes_, threads, [&](int64_t lane, int64_t b) {
      // The loss's part.
      if (g == nullptr) {
        for (int64_t c = 0; c < n; ++c) dx[b + c * s] = T(0);
      } else if (soft != nullptr) {
        double total = 0;
        for (int64_t c = 0; c < n; ++c) total += soft[b + c * s];
        const T sum = static_cast<T>(total), gl = g[lane];
        for (int64_t c = 0; c < n; ++c) {
          const int64_t i = b + c * s;
          dx[i] = (y[i] * sum - soft[i]) * gl;
        }
      } else if (hard[lane] == a_.ignore_index) {
        for (int64_t c = 0; c < n; ++c) dx[b + c * s] = T(0);
      } else {
        const T gl = g[lane];
        for (int64_t c = 0; c < n; ++c) dx[b + c * s] = y[b + c * s] * gl;
        dx[b + hard[lane] * s] -= gl;
      }
      // The softmax output's part.
      if (gs != nullptr) {
        double acc = 0;
        for (int64_t c = 0; c < n; ++c) acc += double(gs[b + c * s]) * y[b + c * s];
        const T dot = static_cast<T>(acc);
        for (int64_t c = 0; c < n; ++c) {
          const int64_t i = b + c * s;
          dx[i] += y[i] * (gs[i] - dot);
        }
      }
    });
  }

  LossAttrs a_;
  Lanes lanes_;
  bool has_loss_grad_ = false, has_softmax_grad_ = false;
  Fn fn_;
};

// -- accuracy --------------------------------------------------------------------------------

// Whether score a ranks above b: larger, and NaN above every number (like argmax).
template <class T> bool above(T a, T b) { return a > b || (a != a && b == b); }
template <class T> bool ties(T a, T b) { return a == b || (a != a && b != b); }

// correct = rows whose label is among the k best scores (ties broken by the lower class index,
// so k = 1 means argmax == label); total = rows; accuracy = correct / total (NaN with no rows).
class Accuracy {
 public:
  Accuracy(const Attrs& attrs, const Slots& in, const Slots& out) : k_(attrs.i("k")) {
    Tensor x = in(0), label = in(1);
    const int32_t axis = class_axis(x, -1, "x");
    lanes_ = lanes_of(x, axis);
    expect_label(label, x, axis, false, "x");
    if (k_ < 1 || k_ > lanes_.classes)
      fail("k=%lld is out of range for x %s: it must be in [1, %lld], the number of classes",
           static_cast<long long>(k_), x.describe().c_str(),
           static_cast<long long>(lanes_.classes));
    if (out(0).ndim() != 0) fail("accuracy must be 0-d, got %s", out(0).describe().c_str());
    out(0).expect_dtype(PC_FLOAT32, "accuracy");
    for (int32_t slot : {1, 2}) {
      const char* what = slot == 1 ? "correct" : "total";
      if (out(slot).ndim() != 0) fail("%s must be 0-d, got %s", what, out(slot).describe().c_str());
      out(slot).expect_dtype(PC_INT64, what);
    }
    fn_ = dispatch(x.dtype(), Floats{},
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
    parallel_for(rows, threads, grain, [&](int64_t lo, int64_t hi) {
      int64_t mine = 0;
      for (int64_t r = lo; r < hi; ++r) {
        const T* row = x + r * n;
        const int64_t want = label[r];
        const T score = row[want];
        int64_t rank = 0;  // classes ranked above the label
        for (int64_t c = 0; c < n && rank < k_; ++c)
          rank += above(row[c], score) || (c < want && ties(row[c], score));
        mine += rank < k_;
      }
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
const pc::Family& softmax_kernels() {
  static const pc::Family family = {
      pc::kernel<Softmax<false>>("softmax"),
      pc::kernel<SoftmaxGrad<false>>("softmax_grad"),
      pc::kernel<Softmax<true>>("log_softmax"),
      pc::kernel<SoftmaxGrad<true>>("log_softmax_grad"),
      pc::kernel<CrossEntropy>("cross_entropy"),
      pc::kernel<CrossEntropyGrad>("cross_entropy_grad"),
      pc::kernel<SoftmaxWithCrossEntropy>("softmax_with_cross_entropy"),
      pc::kernel<SoftmaxWithCrossEntropyGrad>("softmax_with_cross_entropy_grad"),
      pc::kernel<Accuracy>("accuracy"),
  };
  return family;
}

}  // namespace pon
