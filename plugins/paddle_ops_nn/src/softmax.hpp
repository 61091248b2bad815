// Softmax and the losses built on it, for every device: the layout around the class axis, the
// checks of prepare (the CPU kernels, softmax_cpu.cpp, and the CUDA ones, softmax_cuda.cu, run
// the same), and the computation of one lane, which the CPU runs lane by lane on its threads
// and the GPU one lane per thread. Under nvcc the lane functions are __host__ __device__.
//
// Layout: around the class axis, x is viewed as [outer, C, inner]. A "lane" is the vector of
// the C elements of one (outer, inner) position, at stride `inner` (contiguous when the class
// axis is the last one); there are outer * inner lanes, and a per-lane value (a loss, a hard
// label) is at position `lane` of its tensor, whose shape is x's with the class axis as 1 (or
// without it). Each lane is computed alone, so results do not depend on the thread count.
//
// Numerics: every softmax subtracts its lane's maximum first, so exp never overflows, and
// log-softmax is (x - max) - log(sum): extreme logits (±1000) give finite results. Sums over a
// lane are carried in double. A NaN in a lane makes its softmax NaN, like NumPy's. On the CPU,
// float32 lanes along the last axis run softmax_avx2.cpp where the CPU has AVX2 and FMA: the
// same arithmetic, eight elements at a time.
//
// Hard labels: the CPU kernels check every label before using it (check_labels); the lane
// functions also guard, so a label outside [0, C) that is not ignore_index never reads out of
// bounds on the GPU either (where nothing is checked on the host): its loss and gradient are NaN.
#ifndef PADDLE_OPS_NN_SOFTMAX_HPP_
#define PADDLE_OPS_NN_SOFTMAX_HPP_

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "common.hpp"
#if !defined(__CUDACC__)
#include <type_traits>

#include "softmax_avx2.hpp"
#endif

namespace paddle_ops_nn {

// -- layout and the checks of prepare --------------------------------------------------------

struct Lanes {
  int64_t outer = 1, classes = 1, inner = 1;

  PADDLE_CORE_HD int64_t count() const { return outer * inner; }
  // The offset of lane's first element; its elements are `inner` apart.
  PADDLE_CORE_HD int64_t base(int64_t lane) const {
    return lane / inner * classes * inner + lane % inner;
  }
};

// `axis` (negative: from the end) as an axis of x; fails if x has no such axis.
inline int32_t class_axis(const Tensor& x, int64_t axis, const char* what) {
  const int32_t nd = x.ndim();
  if (nd == 0)
    fail("%s %s is 0-d: it has no class axis (axis %lld)", what, x.describe().c_str(),
         static_cast<long long>(axis));
  if (axis < -nd || axis >= nd)
    fail("axis %lld is out of range for %s %s (valid: %d..%d)", static_cast<long long>(axis), what,
         x.describe().c_str(), -nd, nd - 1);
  return static_cast<int32_t>(axis < 0 ? axis + nd : axis);
}

inline Lanes lanes_of(const Tensor& x, int32_t axis) {
  Lanes l;
  for (int32_t k = 0; k < x.ndim(); ++k) {
    if (k < axis) l.outer *= x.dim(k);
    else if (k == axis) l.classes = x.dim(k);
    else l.inner *= x.dim(k);
  }
  return l;
}

// x's shape with the class axis as 1 (`keep`), or without it.
inline std::vector<int64_t> lane_shape(const Tensor& x, int32_t axis, bool keep) {
  std::vector<int64_t> dims(x.shape(), x.shape() + x.ndim());
  if (keep) dims[axis] = 1;
  else dims.erase(dims.begin() + axis);
  return dims;
}

inline bool has_shape(const Tensor& t, const std::vector<int64_t>& dims) {
  if (t.ndim() != static_cast<int32_t>(dims.size())) return false;
  for (int32_t k = 0; k < t.ndim(); ++k)
    if (t.dim(k) != dims[k]) return false;
  return true;
}

inline std::string format_dims(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t k = 0; k < dims.size(); ++k) s += (k ? ", " : "") + std::to_string(dims[k]);
  return s + "]";
}

// Fail unless t is a float tensor of x's dtype with x's shape, the class axis as 1: a loss.
inline void expect_lane_values(const Tensor& t, const Tensor& x, int32_t axis, const char* what) {
  expect_same_dtype(x, t, what);
  const std::vector<int64_t> want = lane_shape(x, axis, true);
  if (!has_shape(t, want))
    fail("%s must have the shape %s (x's with the class axis as 1), got %s", what,
         format_dims(want).c_str(), t.describe().c_str());
}

// Fail unless `label` fits x: soft labels have x's shape and dtype; hard ones are int64 class
// indices with x's shape, the class axis as 1 or dropped.
inline void expect_label(const Tensor& label, const Tensor& x, int32_t axis, bool soft,
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
inline void expect_classes(const Lanes& l, const Tensor& x, const char* xname) {
  if (l.classes == 0)
    fail("%s %s has no classes (its class axis is empty)", xname, x.describe().c_str());
}

// The loss attrs shared by cross_entropy and softmax_with_cross_entropy (and their gradients).
struct LossAttrs {
  explicit LossAttrs(const Attrs& attrs)
      : soft(attrs.b("soft_label")), ignore_index(attrs.i("ignore_index")) {}
  bool soft;
  int64_t ignore_index;
};

// softmax, log_softmax: out = f(x) along axis.
inline Lanes check_softmax(const Attrs& attrs, const Slots& in, const Slots& out) {
  Tensor x = in(0), o = out(0);
  const Lanes lanes = lanes_of(x, class_axis(x, attrs.i("axis"), "x"));
  expect_same_shape(x, o, "x and out");
  expect_same_dtype(x, o, "x and out");
  dispatch(x.dtype(), Floats{}, [](auto) {});
  return lanes;
}

// softmax_grad, log_softmax_grad: (out, out_grad) -> x_grad.
inline Lanes check_softmax_grad(const Attrs& attrs, const Slots& in, const Slots& out) {
  Tensor o = in(0), g = in(1), dx = out(0);
  const Lanes lanes = lanes_of(o, class_axis(o, attrs.i("axis"), "out"));
  expect_same_shape(o, g, "out and out_grad");
  expect_same_shape(o, dx, "out and x_grad");
  expect_same_dtype(o, g, "out and out_grad");
  expect_same_dtype(o, dx, "out and x_grad");
  dispatch(o.dtype(), Floats{}, [](auto) {});
  return lanes;
}

// cross_entropy: (x, label) -> out, classes on the last axis.
inline Lanes check_cross_entropy(const LossAttrs& a, const Slots& in, const Slots& out) {
  Tensor x = in(0), label = in(1), o = out(0);
  const int32_t axis = class_axis(x, -1, "x");
  const Lanes lanes = lanes_of(x, axis);
  expect_classes(lanes, x, "x");
  expect_label(label, x, axis, a.soft, "x");
  expect_lane_values(o, x, axis, "out");
  dispatch(x.dtype(), Floats{}, [](auto) {});
  return lanes;
}

// cross_entropy_grad: (x, label, out_grad) -> x_grad.
inline Lanes check_cross_entropy_grad(const LossAttrs& a, const Slots& in, const Slots& out) {
  Tensor x = in(0), label = in(1), g = in(2), dx = out(0);
  const int32_t axis = class_axis(x, -1, "x");
  const Lanes lanes = lanes_of(x, axis);
  expect_classes(lanes, x, "x");
  expect_label(label, x, axis, a.soft, "x");
  expect_lane_values(g, x, axis, "out_grad");
  expect_same_shape(x, dx, "x and x_grad");
  expect_same_dtype(x, dx, "x and x_grad");
  dispatch(x.dtype(), Floats{}, [](auto) {});
  return lanes;
}

// softmax_with_cross_entropy: (logits, label) -> (softmax, loss).
inline Lanes check_softmax_with_cross_entropy(const Attrs& attrs, const LossAttrs& a,
                                              const Slots& in, const Slots& out) {
  Tensor x = in(0), label = in(1), sm = out(0), loss = out(1);
  const int32_t axis = class_axis(x, attrs.i("axis"), "logits");
  const Lanes lanes = lanes_of(x, axis);
  expect_classes(lanes, x, "logits");
  expect_label(label, x, axis, a.soft, "logits");
  expect_same_shape(x, sm, "logits and softmax");
  expect_same_dtype(x, sm, "logits and softmax");
  expect_lane_values(loss, x, axis, "loss");
  dispatch(x.dtype(), Floats{}, [](auto) {});
  return lanes;
}

// softmax_with_cross_entropy_grad: (softmax, label, loss_grad?, softmax_grad?) -> logits_grad.
struct SwceGradPlan {
  Lanes lanes;
  bool has_loss_grad = false, has_softmax_grad = false;
};
inline SwceGradPlan check_softmax_with_cross_entropy_grad(const Attrs& attrs, const LossAttrs& a,
                                                          const Slots& in, const Slots& out) {
  Tensor sm = in(0), label = in(1), dx = out(0);
  const int32_t axis = class_axis(sm, attrs.i("axis"), "softmax");
  SwceGradPlan p;
  p.lanes = lanes_of(sm, axis);
  expect_classes(p.lanes, sm, "softmax");
  expect_label(label, sm, axis, a.soft, "softmax");
  p.has_loss_grad = in.has(2);
  p.has_softmax_grad = in.has(3);
  if (!p.has_loss_grad && !p.has_softmax_grad) fail("neither loss_grad nor softmax_grad is given");
  if (p.has_loss_grad) expect_lane_values(in(2), sm, axis, "loss_grad");
  if (p.has_softmax_grad) {
    expect_same_shape(sm, in(3), "softmax and softmax_grad");
    expect_same_dtype(sm, in(3), "softmax and softmax_grad");
  }
  expect_same_shape(sm, dx, "softmax and logits_grad");
  expect_same_dtype(sm, dx, "softmax and logits_grad");
  dispatch(sm.dtype(), Floats{}, [](auto) {});
  return p;
}

// accuracy: (x, label) -> (accuracy, correct, total), classes on the last axis, 1 <= k <= C.
inline Lanes check_accuracy(int64_t k, const Slots& in, const Slots& out) {
  Tensor x = in(0), label = in(1);
  const int32_t axis = class_axis(x, -1, "x");
  const Lanes lanes = lanes_of(x, axis);
  expect_label(label, x, axis, false, "x");
  if (k < 1 || k > lanes.classes)
    fail("k=%lld is out of range for x %s: it must be in [1, %lld], the number of classes",
         static_cast<long long>(k), x.describe().c_str(), static_cast<long long>(lanes.classes));
  if (out(0).ndim() != 0) fail("accuracy must be 0-d, got %s", out(0).describe().c_str());
  out(0).expect_dtype(PC_FLOAT32, "accuracy");
  for (int32_t slot : {1, 2}) {
    const char* what = slot == 1 ? "correct" : "total";
    if (out(slot).ndim() != 0) fail("%s must be 0-d, got %s", what, out(slot).describe().c_str());
    out(slot).expect_dtype(PC_INT64, what);
  }
  dispatch(x.dtype(), Floats{}, [](auto) {});
  return lanes;
}

// -- one lane --------------------------------------------------------------------------------
// x, y, ... point at the lane's first element; its n elements are s apart.

// Whether hard label k may index a lane of n classes (ignored labels are handled before).
PADDLE_CORE_HD inline bool label_in_range(int64_t k, int64_t n) { return k >= 0 && k < n; }

template <class T> PADDLE_CORE_HD T quiet_nan() { return std::numeric_limits<T>::quiet_NaN(); }

template <class T> PADDLE_CORE_HD T lane_max(const T* x, int64_t n, int64_t s) {
  T m = x[0];
  for (int64_t c = 1; c < n; ++c) m = std::max(m, x[c * s]);
  return m;
}

// y = softmax of one lane of x; returns (max, log of the sum of exp(x - max)).
template <class T>
PADDLE_CORE_HD void softmax_lane(const T* x, T* y, int64_t n, int64_t s, T& m, double& log_sum) {
#if !defined(__CUDACC__)
  if constexpr (std::is_same_v<T, float>) {
    if (s == 1 && n > 0 && use_avx2()) {
      m = avx2::softmax_f32(x, y, n, log_sum);
      return;
    }
  }
#endif
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

// y = softmax (or log_softmax) of one lane of x; nothing for an empty lane.
template <bool Log, class T>
PADDLE_CORE_HD void softmax_or_log_lane(const T* x, T* y, int64_t n, int64_t s) {
  if (n == 0) return;
  if (Log) {
#if !defined(__CUDACC__)
    if constexpr (std::is_same_v<T, float>) {
      if (s == 1 && use_avx2()) return avx2::log_softmax_f32(x, y, n);
    }
#endif
    const T m = lane_max(x, n, s);
    double sum = 0;
    for (int64_t c = 0; c < n; ++c) {
      const T shifted = x[c * s] - m;
      y[c * s] = shifted;
      sum += std::exp(shifted);
    }
    const T log_sum = static_cast<T>(std::log(sum));
    for (int64_t c = 0; c < n; ++c) y[c * s] -= log_sum;
  } else {
    T m;
    double log_sum;
    softmax_lane(x, y, n, s, m, log_sum);
  }
}

// softmax_grad:     x_grad = out * (g - sum(g * out))
// log_softmax_grad: x_grad = g - exp(out) * sum(g)
template <bool Log, class T>
PADDLE_CORE_HD void softmax_grad_lane(const T* y, const T* g, T* dx, int64_t n, int64_t s) {
  double acc = 0;
  for (int64_t c = 0; c < n; ++c)
    acc += Log ? double(g[c * s]) : double(g[c * s]) * y[c * s];
  const T sum = static_cast<T>(acc);
  for (int64_t c = 0; c < n; ++c) {
    const int64_t i = c * s;
    dx[i] = Log ? g[i] - std::exp(y[i]) * sum : y[i] * (g[i] - sum);
  }
}

// cross_entropy of one row x of n probabilities: -log(x[k]) (0 where k == ignore_index), or
// -sum(label * log(x)) with soft labels (terms whose label is 0 count 0, even where x is 0).
template <class T>
PADDLE_CORE_HD T cross_entropy_hard(const T* x, int64_t n, int64_t k, int64_t ignore_index) {
  if (k == ignore_index) return T(0);
  return label_in_range(k, n) ? -std::log(x[k]) : quiet_nan<T>();
}
template <class T> PADDLE_CORE_HD T cross_entropy_soft(const T* x, const T* label, int64_t n) {
  double acc = 0;
  for (int64_t c = 0; c < n; ++c)
    if (label[c] != T(0)) acc -= double(label[c]) * std::log(double(x[c]));
  return static_cast<T>(acc);
}

// cross_entropy_grad of one row: -g / x[k] at the label (0 elsewhere and in ignored rows), or
// -g * label / x with soft labels (0 where the label is 0).
template <class T>
PADDLE_CORE_HD void cross_entropy_grad_hard(const T* x, T g, T* dx, int64_t n, int64_t k,
                                            int64_t ignore_index) {
  const bool bad = k != ignore_index && !label_in_range(k, n);
  for (int64_t c = 0; c < n; ++c) dx[c] = bad ? quiet_nan<T>() : T(0);
  if (k != ignore_index && !bad) dx[k] = -g / x[k];
}
template <class T>
PADDLE_CORE_HD void cross_entropy_grad_soft(const T* x, const T* label, T g, T* dx, int64_t n) {
  for (int64_t c = 0; c < n; ++c) dx[c] = label[c] == T(0) ? T(0) : -g * label[c] / x[c];
}

// softmax_with_cross_entropy of one lane: softmax into sm, and returns the loss:
// logsumexp - x[k] (0 where k == ignore_index), or sum(label * (logsumexp - x)) with soft labels.
template <class T>
PADDLE_CORE_HD T softmax_cross_entropy_hard(const T* x, T* sm, int64_t n, int64_t s, int64_t k,
                                            int64_t ignore_index) {
  T m;
  double log_sum;
  softmax_lane(x, sm, n, s, m, log_sum);
  if (k == ignore_index) return T(0);
  return label_in_range(k, n) ? static_cast<T>(log_sum - double(x[k * s] - m)) : quiet_nan<T>();
}
template <class T>
PADDLE_CORE_HD T softmax_cross_entropy_soft(const T* x, const T* label, T* sm, int64_t n,
                                            int64_t s) {
  T m;
  double log_sum, acc = 0;
  softmax_lane(x, sm, n, s, m, log_sum);
  for (int64_t c = 0; c < n; ++c) {
    const int64_t i = c * s;
    if (label[i] != T(0)) acc += double(label[i]) * (log_sum - double(x[i] - m));
  }
  return static_cast<T>(acc);
}

// softmax_with_cross_entropy_grad of one lane: logits_grad = (softmax - onehot(k)) * g (0 in
// ignored lanes), or (softmax * sum(label) - label) * g with soft labels (softmax - label when
// the labels sum to 1); plus softmax * (gs - sum(gs * softmax)) when a gradient gs also flows
// back through the softmax output. g (loss_grad, one value) and gs may be absent (nullptr);
// exactly one of soft and hard (the lane's label) is given.
template <class T>
PADDLE_CORE_HD void softmax_cross_entropy_grad_lane(const T* y, const T* soft, const int64_t* hard,
                                                    const T* g, const T* gs, T* dx, int64_t n,
                                                    int64_t s, int64_t ignore_index) {
  // The loss's part.
  if (g == nullptr) {
    for (int64_t c = 0; c < n; ++c) dx[c * s] = T(0);
  } else if (soft != nullptr) {
    double total = 0;
    for (int64_t c = 0; c < n; ++c) total += soft[c * s];
    const T sum = static_cast<T>(total), gl = *g;
    for (int64_t c = 0; c < n; ++c) {
      const int64_t i = c * s;
      dx[i] = (y[i] * sum - soft[i]) * gl;
    }
  } else if (*hard == ignore_index) {
    for (int64_t c = 0; c < n; ++c) dx[c * s] = T(0);
  } else if (!label_in_range(*hard, n)) {
    for (int64_t c = 0; c < n; ++c) dx[c * s] = quiet_nan<T>();
  } else {
    const T gl = *g;
    for (int64_t c = 0; c < n; ++c) dx[c * s] = y[c * s] * gl;
    dx[*hard * s] -= gl;
  }
  // The softmax output's part.
  if (gs != nullptr) {
    double acc = 0;
    for (int64_t c = 0; c < n; ++c) acc += double(gs[c * s]) * y[c * s];
    const T dot = static_cast<T>(acc);
    for (int64_t c = 0; c < n; ++c) {
      const int64_t i = c * s;
      dx[i] += y[i] * (gs[i] - dot);
    }
  }
}

// Whether score a ranks above b: larger, and NaN above every number (like argmax).
template <class T> PADDLE_CORE_HD bool above(T a, T b) { return a > b || (a != a && b == b); }
template <class T> PADDLE_CORE_HD bool ties(T a, T b) { return a == b || (a != a && b != b); }

// Whether label `want` is among the k best scores of one row of n (ties broken by the lower
// class index, so k = 1 means argmax == label). A label outside [0, n) is a miss.
template <class T>
PADDLE_CORE_HD bool accuracy_hit(const T* row, int64_t n, int64_t want, int64_t k) {
  if (!label_in_range(want, n)) return false;
  const T score = row[want];
  int64_t rank = 0;  // classes ranked above the label
  for (int64_t c = 0; c < n && rank < k; ++c)
    rank += above(row[c], score) || (c < want && ties(row[c], score));
  return rank < k;
}

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_SOFTMAX_HPP_
