// What the CPU (norm_cpu.cpp) and CUDA (norm_cuda.cu) kernels of batch_norm, layer_norm and
// their gradients share: the prepare-time checks (so both devices accept exactly the same
// tensors), the views of x they index with, and the formulas applied once the statistics are
// known (PADDLE_CORE_HD: the CPU tests check the arithmetic the GPU runs). Statistics are summed
// in double on both devices, each in one fixed order. batch_norm's x may be in oneDNN's blocked
// layout (channel_block, layout.hpp), which only the CPU kernels take: the CUDA kernels refuse
// it first (plain_only), so both devices accept exactly the same tensors with channel_block 0.
#ifndef PADDLE_OPS_NN_NORM_HPP_
#define PADDLE_OPS_NN_NORM_HPP_

#include <cmath>

#include "layout.hpp"

namespace paddle_ops_nn {

// Fail unless t is a vector [n] of x's dtype.
inline void expect_vector(const Tensor& t, const Tensor& x, int64_t n, const char* what,
                          const char* of) {
  if (t.dtype() != x.dtype() || t.ndim() != 1 || t.dim(0) != n)
    fail("%s must be %s[%lld] (%s), got %s", what, pc::dtype_name(x.dtype()),
         static_cast<long long>(n), of, t.describe().c_str());
}

inline void expect_epsilon(double epsilon) {
  if (!(epsilon > 0)) fail("epsilon must be above 0, got %g", epsilon);
}

// 1 / sqrt(variance + epsilon), in double (correctly rounded on both devices).
PADDLE_CORE_HD inline double inv_std_of(double variance, double epsilon) {
  return 1 / std::sqrt(variance + epsilon);
}

// y = ((x - hi) - lo) * factor + shift: the mean as a sum of two T (hi + lo), so x - hi is
// exact near the mean and y keeps T's precision where the mean is large against the spread.
template <class T> struct Normalize {
  T hi, lo, factor, shift;

  PADDLE_CORE_HD Normalize(double mean, double factor_, T shift_)
      : hi(static_cast<T>(mean)), lo(static_cast<T>(mean - static_cast<T>(mean))),
        factor(static_cast<T>(factor_)), shift(shift_) {}
  PADDLE_CORE_HD T operator()(T x) const { return ((x - hi) - lo) * factor + shift; }
};

// -- batch_norm ------------------------------------------------------------------------------

// x [N, C, ...] as N * C planes of `inner` elements (plane p = (n, c) starts at p * inner), or
// with channel_block b blocked as [N, C / b, ..., b]: N * C / b tiles of inner * b elements,
// plane (n, c) being lane c % b of tile (n, c / b).
struct Planes {
  int64_t batch = 1, channels = 1, inner = 1;
  int block = 0;  // channels per tile of a blocked x; 0: plain

  PADDLE_CORE_HD int64_t count() const { return batch * channels; }
  PADDLE_CORE_HD int64_t per_channel() const { return batch * inner; }
  // Where element k (in [0, per_channel())) of channel c is, in a plain x.
  PADDLE_CORE_HD int64_t at(int64_t c, int64_t k) const {
    return (k / inner * channels + c) * inner + k % inner;
  }
};

// x's planes; fails unless x is [N, C, ...] of a float dtype, or with channel_block b,
// [N, C / b, ..., b], or channels last (-1) [N, 1, ..., C].
inline Planes planes_of(const Tensor& x, int block) {
  dispatch(x.dtype(), Floats{}, [](auto) {});
  if (x.ndim() < 2) fail("x must be [N, C, ...] (rank >= 2), got %s", x.describe().c_str());
  Planes l;
  l.batch = x.dim(0);
  l.channels = x.dim(1);
  for (int32_t k = 2; k < x.ndim(); ++k) l.inner *= x.dim(k);
  if (block == kChannelsLast) {
    if (x.ndim() < 3 || x.dim(1) != 1)
      fail("x must be channels last with channel_block -1, [N, 1, ..., C], got %s",
           x.describe().c_str());
    block = stored_block(block, x.dim(-1));
  }
  if (block != 0) {
    if (x.ndim() < 3 || x.dim(-1) != block)
      fail("x must be blocked with channel_block %d, [N, C / %d, ..., %d], got %s", block, block,
           block, x.describe().c_str());
    l.block = block;
    l.channels *= block;
    l.inner /= block;
  }
  return l;
}

// batch_norm(x, scale, bias, mean, variance) -> y, mean_out, variance_out, saved_mean,
// saved_inv_std; y in x's layout.
inline Planes check_batch_norm(const Attrs& attrs, const Slots& in, const Slots& out) {
  const double momentum = attrs.f("momentum"), epsilon = attrs.f("epsilon");
  const Tensor x = in(0);
  const Planes l = planes_of(x, channel_block_of(attrs));
  const int64_t c = l.channels;
  static const char* const kInputs[] = {"x", "scale", "bias", "mean", "variance"};
  for (int32_t k = 1; k < 5; ++k) expect_vector(in(k), x, c, kInputs[k], "x's channels");
  expect_same_shape(x, out(0), "x and y");
  expect_same_dtype(x, out(0), "x and y");
  static const char* const kOutputs[] = {"y", "mean_out", "variance_out", "saved_mean",
                                         "saved_inv_std"};
  for (int32_t k = 1; k < 5; ++k) expect_vector(out(k), x, c, kOutputs[k], "x's channels");
  expect_epsilon(epsilon);
  if (!(momentum >= 0 && momentum <= 1)) fail("momentum must be in [0, 1], got %g", momentum);
  if (channel_block_of(attrs) == kChannelsLast && !attrs.b("is_test"))
    fail("channel_block -1 (channels last) is for inference (is_test) only; the batch's "
         "statistics are taken in blocks of 8 or 16");
  if (!attrs.b("is_test") && c > 0 && l.per_channel() == 0)
    fail("x %s has no elements per channel to take the batch's statistics from (is_test is "
         "false)",
         x.describe().c_str());
  return l;
}

// batch_norm_grad(x, scale, saved_mean, saved_inv_std, y_grad) -> x_grad?, scale_grad?,
// bias_grad?; y_grad and x_grad in x's layout.
inline Planes check_batch_norm_grad(const Attrs& attrs, const Slots& in, const Slots& out) {
  const Tensor x = in(0);
  if (channel_block_of(attrs) == kChannelsLast)
    fail("channel_block -1 (channels last) is for inference only: batch_norm_grad takes 0, 8 "
         "or 16");
  const Planes l = planes_of(x, channel_block_of(attrs));
  const int64_t c = l.channels;
  expect_vector(in(1), x, c, "scale", "x's channels");
  expect_vector(in(2), x, c, "saved_mean", "x's channels");
  expect_vector(in(3), x, c, "saved_inv_std", "x's channels");
  expect_same_shape(x, in(4), "x and y_grad");
  expect_same_dtype(x, in(4), "x and y_grad");
  if (out.has(0)) {
    expect_same_shape(x, out(0), "x and x_grad");
    expect_same_dtype(x, out(0), "x and x_grad");
  }
  if (out.has(1)) expect_vector(out(1), x, c, "scale_grad", "x's channels");
  if (out.has(2)) expect_vector(out(2), x, c, "bias_grad", "x's channels");
  return l;
}

// A running statistic moved towards the batch's: keep * running + (1 - keep) * batch.
PADDLE_CORE_HD inline double running_update(double keep, double running, double batch) {
  return keep * running + (1 - keep) * batch;
}

// x_grad = a * y_grad + b * (x - mean) + d per channel, from the channel's sums of y_grad
// (sum_g) and of y_grad * (x - mean) (sum_gx) over its `count` elements: with xhat = (x - mean)
// * inv_std, x_grad = scale * inv_std * (y_grad - sum_g / count - xhat * sum_gx * inv_std /
// count); at inference (is_test: the statistics are constants) x_grad = y_grad * scale * inv_std.
template <class T> struct BatchNormGradAt {
  T mean, a, b, d;

  PADDLE_CORE_HD BatchNormGradAt(bool test, T mean_, T scale, T inv_std, double sum_g,
                                 double sum_gx, double count)
      : mean(mean_) {
    const double inv = inv_std, ai = double(scale) * inv;
    a = static_cast<T>(ai);
    b = static_cast<T>(test ? 0.0 : -ai * sum_gx * inv * inv / count);
    d = static_cast<T>(test ? 0.0 : -ai * sum_g / count);
  }
  PADDLE_CORE_HD T operator()(T dy, T x) const { return a * dy + b * (x - mean) + d; }
};

// -- layer_norm ------------------------------------------------------------------------------

// x as [rows, cols], split at begin_norm_axis.
struct Rows {
  int64_t rows = 1, cols = 1;
};

// Fails unless begin_norm_axis is in [1, rank) (negative: counted from the end) and x is of
// a float dtype.
inline Rows rows_of(const Tensor& x, int64_t given) {
  dispatch(x.dtype(), Floats{}, [](auto) {});
  const int64_t axis = given < 0 ? given + x.ndim() : given;
  if (axis < 1 || axis >= x.ndim())
    fail("begin_norm_axis %lld is out of range for x %s: it must be in [1, %d), or in [%d, 0)",
         static_cast<long long>(given), x.describe().c_str(), x.ndim(), 1 - x.ndim());
  Rows r;
  for (int32_t k = 0; k < x.ndim(); ++k) (k < axis ? r.rows : r.cols) *= x.dim(k);
  return r;
}

// layer_norm(x, scale?, bias?) -> y, mean, variance.
inline Rows check_layer_norm(const Attrs& attrs, const Slots& in, const Slots& out) {
  const Tensor x = in(0);
  const Rows s = rows_of(x, attrs.i("begin_norm_axis"));
  expect_epsilon(attrs.f("epsilon"));
  if (in.has(1)) expect_vector(in(1), x, s.cols, "scale", "a row's size");
  if (in.has(2)) expect_vector(in(2), x, s.cols, "bias", "a row's size");
  expect_same_shape(x, out(0), "x and y");
  expect_same_dtype(x, out(0), "x and y");
  expect_vector(out(1), x, s.rows, "mean", "the number of rows");
  expect_vector(out(2), x, s.rows, "variance", "the number of rows");
  return s;
}

// layer_norm_grad(x, mean, variance, y_grad, scale?) -> x_grad?, scale_grad?, bias_grad?.
inline Rows check_layer_norm_grad(const Attrs& attrs, const Slots& in, const Slots& out) {
  const Tensor x = in(0);
  const Rows s = rows_of(x, attrs.i("begin_norm_axis"));
  expect_epsilon(attrs.f("epsilon"));
  expect_vector(in(1), x, s.rows, "mean", "the number of rows");
  expect_vector(in(2), x, s.rows, "variance", "the number of rows");
  expect_same_shape(x, in(3), "x and y_grad");
  expect_same_dtype(x, in(3), "x and y_grad");
  if (in.has(4)) expect_vector(in(4), x, s.cols, "scale", "a row's size");
  if (out.has(0)) {
    expect_same_shape(x, out(0), "x and x_grad");
    expect_same_dtype(x, out(0), "x and x_grad");
  }
  if (out.has(1)) expect_vector(out(1), x, s.cols, "scale_grad", "a row's size");
  if (out.has(2)) expect_vector(out(2), x, s.cols, "bias_grad", "a row's size");
  return s;
}

// y[j] of a row normalised by Normalize (factor = inv_std, shift 0), then scaled and shifted
// per column where scale and bias are given.
template <class T>
PADDLE_CORE_HD T layer_norm_at(const Normalize<T>& n, T x, const T* scale, const T* bias,
                               int64_t j) {
  T h = n(x);
  if (scale != nullptr) h *= scale[j];
  if (bias != nullptr) h += bias[j];
  return h;
}

// One row's x_grad from the row's sums of g = y_grad * scale (sum_g) and of g * (x - mean)
// (sum_gx, times inv_std) over its D = cols elements:
//   x_grad = inv_std * g - inv_std * sum_g / D - xhat * inv_std * sum_gx / D.
template <class T> struct LayerNormGradAt {
  T mean, inv, shift, tilt;

  PADDLE_CORE_HD LayerNormGradAt(double mean_, double inv_, double sum_g, double sum_gx,
                                 double cols)
      : mean(static_cast<T>(mean_)), inv(static_cast<T>(inv_)),
        shift(static_cast<T>(-inv_ * sum_g / cols)),
        tilt(static_cast<T>(-inv_ * inv_ * sum_gx / cols)) {}
  // g: y_grad * scale (or y_grad without a scale), in T.
  PADDLE_CORE_HD T operator()(T g, T x) const { return inv * g + shift + tilt * (x - mean); }
};

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_NORM_HPP_
