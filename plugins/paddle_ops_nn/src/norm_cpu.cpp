// Normalisation: batch_norm, layer_norm and their gradients.
//
// Memory contract: every tensor is C-contiguous with x's float dtype; prepare checks each shape
// run indexes. batch_norm: x is [N, C, ...], viewed as N * C planes of `inner` elements (plane
// p = (n, c) starts at p * inner), or with channel_block b blocked (layout.hpp) as
// [N, C / b, ..., b]: N * C / b tiles of inner * b elements, plane (n, c) being lane c % b of
// tile (n, c / b); scale, bias, the running and saved statistics are [C]; y, y_grad and x_grad
// are x's shape (and layout). mean_out and variance_out may share mean's and variance's buffers
// (declared inplace): each element is read before it is written. layer_norm: x is viewed as
// [rows, cols], split at begin_norm_axis; scale and bias (either may be absent) are [cols],
// mean and variance [rows]. Grad outputs are each optional (only those the backward needs).
//
// Numerics: statistics are two-pass (the mean, then the mean of squared deviations), summed in
// double, so float32 keeps its precision when the mean is large against the spread. Work is
// split by channels or planes (batch_norm), rows (layer_norm) or columns (layer_norm's scale
// and bias gradients); every sum is taken in one fixed order, so results do not depend on the
// thread count, nor (batch_norm) on the layout: a blocked x gives the plain one's bits.
#include <algorithm>
#include <cmath>
#include <type_traits>
#include <vector>

#include "layout.hpp"

namespace pon {
namespace {

// Fail unless t is a vector [n] of x's dtype.
void expect_vector(const Tensor& t, const Tensor& x, int64_t n, const char* what,
                   const char* of) {
  if (t.dtype() != x.dtype() || t.ndim() != 1 || t.dim(0) != n)
    fail("%s must be %s[%lld] (%s), got %s", what, pc::dtype_name(x.dtype()),
         static_cast<long long>(n), of, t.describe().c_str());
}

// The sum of f(i) for i in [0, n), in double, as four interleaved partial sums (independent
// additions pipeline; the order is fixed, so the result is too).
template <class F> double sum_of(int64_t n, F&& f) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    s0 += f(i);
    s1 += f(i + 1);
    s2 += f(i + 2);
    s3 += f(i + 3);
  }
  for (; i < n; ++i) s0 += f(i);
  return (s0 + s1) + (s2 + s3);
}

void expect_epsilon(double epsilon) {
  if (!(epsilon > 0)) fail("epsilon must be above 0, got %g", epsilon);
}

// -- batch_norm ------------------------------------------------------------------------------

struct Planes {
  int64_t batch = 1, channels = 1, inner = 1;
  int block = 0;  // channels per tile of a blocked x; 0: plain

  int64_t count() const { return batch * channels; }
  int64_t per_channel() const { return batch * inner; }
};

// x's planes; fails unless x is [N, C, ...] of a float dtype, or with channel_block b,
// [N, C / b, ..., b].
Planes planes_of(const Tensor& x, int block) {
  dispatch(x.dtype(), Floats{}, [](auto) {});
  if (x.ndim() < 2) fail("x must be [N, C, ...] (rank >= 2), got %s", x.describe().c_str());
  Planes l;
  l.batch = x.dim(0);
  l.channels = x.dim(1);
  for (int32_t k = 2; k < x.ndim(); ++k) l.inner *= x.dim(k);
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

// Calls f(std::integral_constant<int, b>) for a blocked layout's b (8 or 16), so the loops over
// a tile's lanes have a constant trip count and vectorise.
template <class F> void with_block(int block, F&& f) {
  if (block == 8) f(std::integral_constant<int, 8>{});
  else f(std::integral_constant<int, 16>{});
}

// sum_of for each of the B lanes of a blocked tile at once: out[j] is sum_of(n, f(., j)), its
// additions in sum_of's order, so each lane's sum has the plain layout's bits.
template <int B, class F> void lane_sums(int64_t n, F&& f, double* out) {
  double s0[B] = {}, s1[B] = {}, s2[B] = {}, s3[B] = {};
  int64_t i = 0;
  for (; i + 4 <= n; i += 4)
    for (int j = 0; j < B; ++j) {
      s0[j] += f(i, j);
      s1[j] += f(i + 1, j);
      s2[j] += f(i + 2, j);
      s3[j] += f(i + 3, j);
    }
  for (; i < n; ++i)
    for (int j = 0; j < B; ++j) s0[j] += f(i, j);
  for (int j = 0; j < B; ++j) out[j] = (s0[j] + s1[j]) + (s2[j] + s3[j]);
}

// f(cb, begin) for every tile of a blocked x (channels cb * b .., elements [begin, begin +
// inner * b)), split across threads.
template <class F> void for_tiles(const Planes& l, int32_t threads, F&& f) {
  const int64_t blocks = l.channels / l.block, size = l.inner * l.block;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(size, 1));
  parallel_for(l.batch * blocks, threads, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) f(t % blocks, t * size);
  });
}

// channel_sums for a blocked x: tile(cb, begin, acc) adds the K sums of each of its lanes j
// (channel cb * b + j, in lane_sums) into acc[j * K + k]; the totals add each channel's planes
// in the order of the batch, as channel_sums does.
template <int K, class F>
std::vector<double> tile_sums(const Planes& l, int32_t threads, F&& tile) {
  const int64_t b = l.block, blocks = l.channels / b;
  std::vector<double> partial(l.count() * K, 0.0);  // per plane, tile by tile
  for_tiles(l, threads, [&](int64_t cb, int64_t begin) {
    tile(cb, begin, &partial[begin / l.inner * K]);
  });
  std::vector<double> total(l.channels * K, 0.0);
  for (int64_t t = 0; t < l.batch * blocks; ++t)
    for (int64_t j = 0; j < b * K; ++j) total[(t % blocks) * b * K + j] += partial[t * b * K + j];
  return total;
}

// f(c, begin) for every plane (channel c, elements [begin, begin + inner)), split across
// threads.
template <class F> void for_planes(const Planes& l, int32_t threads, F&& f) {
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(l.inner, 1));
  parallel_for(l.count(), threads, grain, [&](int64_t lo, int64_t hi) {
    int64_t c = lo % l.channels;
    for (int64_t p = lo; p < hi; ++p) {
      f(c, p * l.inner);
      if (++c == l.channels) c = 0;
    }
  });
}

// Per-channel totals of K sums over a channel's planes: plane(c, begin, acc) adds one plane's
// K sums (taken in double) into acc[0..K). Each channel's planes are added in the order of the
// batch however the work is split, so results do not depend on the thread count. The split is
// by channels (each thread adds up its channels' planes, sample by sample: no buffer), or, for
// planes large enough that one partial per plane is a small buffer, by planes (which also
// shares out few channels).
template <int K, class F>
std::vector<double> channel_sums(const Planes& l, int32_t threads, F&& plane) {
  const int64_t channels = l.channels, inner = l.inner;
  std::vector<double> total(channels * K, 0.0);
  if (inner >= 64) {
    std::vector<double> partial(l.count() * K, 0.0);
    const int64_t grain = std::max<int64_t>(1, kGrain / inner);
    parallel_for(l.count(), threads, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) plane(p % channels, p * inner, &partial[p * K]);
    });
    for (int64_t p = 0; p < l.count(); ++p)
      for (int k = 0; k < K; ++k) total[p % channels * K + k] += partial[p * K + k];
    return total;
  }
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(l.per_channel(), 1));
  parallel_for(channels, threads, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t n = 0; n < l.batch; ++n)
      for (int64_t c = lo; c < hi; ++c) plane(c, (n * channels + c) * inner, &total[c * K]);
  });
  return total;
}

// Training: y = (x - batch mean) * scale / sqrt(batch variance + epsilon) + bias, the running
// statistics moved towards the batch's by (1 - momentum). is_test: the running statistics
// normalise and stay as they are. saved_mean and saved_inv_std: the statistics used.
class BatchNorm {
 public:
  BatchNorm(const Attrs& attrs, const Slots& in, const Slots& out)
      : momentum_(attrs.f("momentum")), epsilon_(attrs.f("epsilon")), test_(attrs.b("is_test")) {
    const Tensor x = in(0);
    l_ = planes_of(x, channel_block_of(attrs));
    const int64_t c = l_.channels;
    static const char* const kInputs[] = {"x", "scale", "bias", "mean", "variance"};
    for (int32_t k = 1; k < 5; ++k) expect_vector(in(k), x, c, kInputs[k], "x's channels");
    expect_same_shape(x, out(0), "x and y");
    expect_same_dtype(x, out(0), "x and y");
    static const char* const kOutputs[] = {"y", "mean_out", "variance_out", "saved_mean",
                                           "saved_inv_std"};
    for (int32_t k = 1; k < 5; ++k) expect_vector(out(k), x, c, kOutputs[k], "x's channels");
    expect_epsilon(epsilon_);
    if (!(momentum_ >= 0 && momentum_ <= 1))
      fail("momentum must be in [0, 1], got %g", momentum_);
    if (!test_ && c > 0 && l_.per_channel() == 0)
      fail("x %s has no elements per channel to take the batch's statistics from (is_test is "
           "false)",
           x.describe().c_str());
    fn_ = dispatch(x.dtype(), Floats{},
                   [](auto t) -> Fn { return &BatchNorm::compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    (this->*fn_)(in, out, ctx.num_threads());
  }

 private:
  using Fn = void (BatchNorm::*)(const Slots&, const Slots&, int32_t) const;

  template <class T> void compute(const Slots& in, const Slots& out, int32_t threads) const {
    const Planes& l = l_;
    const int64_t channels = l.channels, inner = l.inner;
    const T* x = in(0).data<T>();
    const T* scale = in(1).data<T>();
    const T* bias = in(2).data<T>();
    const T* running_mean = in(3).data<T>();
    const T* running_var = in(4).data<T>();
    T* y = out(0).data<T>();
    T* mean_out = out(1).data<T>();
    T* var_out = out(2).data<T>();
    T* saved_mean = out(3).data<T>();
    T* saved_inv_std = out(4).data<T>();

    std::vector<double> mean(channels), var(channels);
    if (test_) {
      for (int64_t c = 0; c < channels; ++c) {
        mean[c] = running_mean[c];
        var[c] = running_var[c];
        if (mean_out != running_mean) mean_out[c] = running_mean[c];
        if (var_out != running_var) var_out[c] = running_var[c];
      }
    } else {
      const double count = static_cast<double>(l.per_channel());
      std::vector<double> sums, squares;
      if (l.block == 0) {
        sums = channel_sums<1>(l, threads, [&](int64_t, int64_t b, double* acc) {
          *acc += sum_of(inner, [&](int64_t i) { return double(x[b + i]); });
        });
      } else {
        with_block(l.block, [&](auto B) {
          sums = tile_sums<1>(l, threads, [&](int64_t, int64_t b, double* acc) {
            lane_sums<B>(inner, [&](int64_t i, int j) { return double(x[b + i * B + j]); }, acc);
          });
        });
      }
      for (int64_t c = 0; c < channels; ++c) mean[c] = sums[c] / count;
      if (l.block == 0) {
        squares = channel_sums<1>(l, threads, [&](int64_t c, int64_t b, double* acc) {
          const double m = mean[c];
          *acc += sum_of(inner, [&](int64_t i) { return (x[b + i] - m) * (x[b + i] - m); });
        });
      } else {
        with_block(l.block, [&](auto B) {
          squares = tile_sums<1>(l, threads, [&](int64_t cb, int64_t b, double* acc) {
            const double* m = &mean[cb * B];
            lane_sums<B>(
                inner,
                [&](int64_t i, int j) {
                  return (x[b + i * B + j] - m[j]) * (x[b + i * B + j] - m[j]);
                },
                acc);
          });
        });
      }
      const double keep = momentum_;
      for (int64_t c = 0; c < channels; ++c) {
        var[c] = squares[c] / count;
        mean_out[c] = static_cast<T>(keep * running_mean[c] + (1 - keep) * mean[c]);
        var_out[c] = static_cast<T>(keep * running_var[c] + (1 - keep) * var[c]);
      }
    }
    // The mean as a sum of two T (hi + lo): x - hi is exact near the mean, so y keeps T's
    // precision even where the mean is large against the spread.
    std::vector<T> hi(channels), lo(channels), factor(channels);
    for (int64_t c = 0; c < channels; ++c) {
      const double inv_std = 1 / std::sqrt(var[c] + epsilon_);
      saved_mean[c] = hi[c] = static_cast<T>(mean[c]);
      lo[c] = static_cast<T>(mean[c] - hi[c]);
      saved_inv_std[c] = static_cast<T>(inv_std);
      factor[c] = static_cast<T>(scale[c] * inv_std);
    }
    if (l.block == 0) {
      for_planes(l, threads, [&](int64_t c, int64_t b) {
        const T mh = hi[c], ml = lo[c], f = factor[c], beta = bias[c];
        for (int64_t i = b; i < b + inner; ++i) y[i] = ((x[i] - mh) - ml) * f + beta;
      });
      return;
    }
    with_block(l.block, [&](auto B) {
      for_tiles(l, threads, [&](int64_t cb, int64_t b) {
        const T *mh = &hi[cb * B], *ml = &lo[cb * B], *f = &factor[cb * B];
        const T* beta = bias + cb * B;
        for (int64_t i = b; i < b + inner * B; i += B)
          for (int j = 0; j < B; ++j) y[i + j] = ((x[i + j] - mh[j]) - ml[j]) * f[j] + beta[j];
      });
    });
  }

  double momentum_, epsilon_;
  bool test_;
  Planes l_;
  Fn fn_;
};

// With xhat = (x - saved_mean) * saved_inv_std and M elements per channel:
//   bias_grad = sum(y_grad), scale_grad = sum(y_grad * xhat) (per channel);
//   x_grad = scale * saved_inv_std * (y_grad - bias_grad / M - xhat * scale_grad / M)
//   (is_test, where the statistics are constants: x_grad = y_grad * scale * saved_inv_std).
class BatchNormGrad {
 public:
  BatchNormGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : test_(attrs.b("is_test")) {
    const Tensor x = in(0);
    l_ = planes_of(x, channel_block_of(attrs));
    const int64_t c = l_.channels;
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
    fn_ = dispatch(x.dtype(), Floats{},
                   [](auto t) -> Fn { return &BatchNormGrad::compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    (this->*fn_)(in, out, ctx.num_threads());
  }

 private:
  using Fn = void (BatchNormGrad::*)(const Slots&, const Slots&, int32_t) const;

  template <class T> void compute(const Slots& in, const Slots& out, int32_t threads) const {
    const Planes& l = l_;
    const int64_t channels = l.channels, inner = l.inner;
    const T* x = in(0).data<T>();
    const T* scale = in(1).data<T>();
    const T* mean = in(2).data<T>();
    const T* inv_std = in(3).data<T>();
    const T* dy = in(4).data<T>();
    T* dx = out.has(0) ? out(0).data<T>() : nullptr;
    T* dscale = out.has(1) ? out(1).data<T>() : nullptr;
    T* dbias = out.has(2) ? out(2).data<T>() : nullptr;

    // Per channel: sum(y_grad) and sum(y_grad * (x - mean)).
    std::vector<double> sums(channels * 2);
    if (!test_ || dscale != nullptr || dbias != nullptr) {
      if (l.block == 0) {
        sums = channel_sums<2>(l, threads, [&](int64_t c, int64_t b, double* acc) {
          const double m = mean[c];
          acc[0] += sum_of(inner, [&](int64_t i) { return double(dy[b + i]); });
          acc[1] += sum_of(inner, [&](int64_t i) { return dy[b + i] * (x[b + i] - m); });
        });
      } else {
        with_block(l.block, [&](auto B) {
          sums = tile_sums<2>(l, threads, [&](int64_t cb, int64_t b, double* acc) {
            double m[B], s[B], sx[B];
            for (int j = 0; j < B; ++j) m[j] = mean[cb * B + j];
            lane_sums<B>(inner, [&](int64_t i, int j) { return double(dy[b + i * B + j]); }, s);
            lane_sums<B>(
                inner,
                [&](int64_t i, int j) { return dy[b + i * B + j] * (x[b + i * B + j] - m[j]); },
                sx);
            for (int j = 0; j < B; ++j) acc[2 * j] += s[j], acc[2 * j + 1] += sx[j];
          });
        });
      }
      for (int64_t c = 0; c < channels; ++c) {
        if (dbias != nullptr) dbias[c] = static_cast<T>(sums[2 * c]);
        if (dscale != nullptr) dscale[c] = static_cast<T>(sums[2 * c + 1] * inv_std[c]);
      }
    }
    if (dx == nullptr) return;
    // x_grad = a * y_grad + b * (x - mean) + d per channel.
    std::vector<T> a(channels), b(channels), d(channels);
    const double count = static_cast<double>(l.per_channel());
    for (int64_t c = 0; c < channels; ++c) {
      const double inv = inv_std[c], ai = double(scale[c]) * inv;
      a[c] = static_cast<T>(ai);
      b[c] = static_cast<T>(test_ ? 0.0 : -ai * sums[2 * c + 1] * inv * inv / count);
      d[c] = static_cast<T>(test_ ? 0.0 : -ai * sums[2 * c] / count);
    }
    if (l.block == 0) {
      for_planes(l, threads, [&](int64_t c, int64_t begin) {
        const T m = mean[c], ac = a[c], bc = b[c], dc = d[c];
        for (int64_t i = begin; i < begin + inner; ++i) dx[i] = ac * dy[i] + bc * (x[i] - m) + dc;
      });
      return;
    }
    with_block(l.block, [&](auto B) {
      for_tiles(l, threads, [&](int64_t cb, int64_t begin) {
        const T* m = mean + cb * B;
        const T *ac = &a[cb * B], *bc = &b[cb * B], *dc = &d[cb * B];
        for (int64_t i = begin; i < begin + inner * B; i += B)
          for (int j = 0; j < B; ++j)
            dx[i + j] = ac[j] * dy[i + j] + bc[j] * (x[i + j] - m[j]) + dc[j];
      });
    });
  }

  bool test_;
  Planes l_;
  Fn fn_;
};

// -- layer_norm ------------------------------------------------------------------------------

struct Rows {
  int64_t rows = 1, cols = 1;
};

// x as [rows, cols], split at begin_norm_axis; fails unless the axis is in [1, rank).
Rows rows_of(const Tensor& x, int64_t axis) {
  dispatch(x.dtype(), Floats{}, [](auto) {});
  if (axis < 1 || axis >= x.ndim())
    fail("begin_norm_axis %lld is out of range for x %s: it must be in [1, %d)",
         static_cast<long long>(axis), x.describe().c_str(), x.ndim());
  Rows r;
  for (int32_t k = 0; k < x.ndim(); ++k) (k < axis ? r.rows : r.cols) *= x.dim(k);
  return r;
}

// f(r, begin) for every row r (elements [begin, begin + cols)), split across threads.
template <class F> void for_rows(const Rows& s, int32_t threads, F&& f) {
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(s.cols, 1));
  parallel_for(s.rows, threads, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) f(r, r * s.cols);
  });
}

// y = (x - mean) / sqrt(variance + epsilon) * scale + bias per row; mean and variance kept.
class LayerNorm {
 public:
  LayerNorm(const Attrs& attrs, const Slots& in, const Slots& out)
      : epsilon_(attrs.f("epsilon")) {
    const Tensor x = in(0);
    s_ = rows_of(x, attrs.i("begin_norm_axis"));
    expect_epsilon(epsilon_);
    if (in.has(1)) expect_vector(in(1), x, s_.cols, "scale", "a row's size");
    if (in.has(2)) expect_vector(in(2), x, s_.cols, "bias", "a row's size");
    expect_same_shape(x, out(0), "x and y");
    expect_same_dtype(x, out(0), "x and y");
    expect_vector(out(1), x, s_.rows, "mean", "the number of rows");
    expect_vector(out(2), x, s_.rows, "variance", "the number of rows");
    fn_ = dispatch(x.dtype(), Floats{},
                   [](auto t) -> Fn { return &LayerNorm::compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    (this->*fn_)(in, out, ctx.num_threads());
  }

 private:
  using Fn = void (LayerNorm::*)(const Slots&, const Slots&, int32_t) const;

  template <class T> void compute(const Slots& in, const Slots& out, int32_t threads) const {
    const int64_t cols = s_.cols;
    const T* x = in(0).data<T>();
    const T* scale = in.has(1) ? in(1).data<T>() : nullptr;
    const T* bias = in.has(2) ? in(2).data<T>() : nullptr;
    T* y = out(0).data<T>();
    T* mean = out(1).data<T>();
    T* var = out(2).data<T>();
    for_rows(s_, threads, [&](int64_t r, int64_t b) {
      const double d = static_cast<double>(cols);
      const double m = sum_of(cols, [&](int64_t j) { return double(x[b + j]); }) / d;
      const double v = sum_of(cols, [&](int64_t j) { return (x[b + j] - m) * (x[b + j] - m); }) / d;
      mean[r] = static_cast<T>(m);
      var[r] = static_cast<T>(v);
      // The mean as hi + lo, as in batch_norm.
      const T mh = static_cast<T>(m), ml = static_cast<T>(m - mh);
      const T inv = static_cast<T>(1 / std::sqrt(v + epsilon_));
      for (int64_t j = 0; j < cols; ++j) {
        T h = ((x[b + j] - mh) - ml) * inv;
        if (scale != nullptr) h *= scale[j];
        if (bias != nullptr) h += bias[j];
        y[b + j] = h;
      }
    });
  }

  double epsilon_;
  Rows s_;
  Fn fn_;
};

// With xhat = (x - mean) * inv_std per row (inv_std = 1 / sqrt(variance + epsilon)), g =
// y_grad * scale, and D = cols:
//   x_grad = inv_std * (g - sum(g) / D - xhat * sum(g * xhat) / D)   (per row)
//   scale_grad = sum over rows of y_grad * xhat, bias_grad = sum over rows of y_grad.
class LayerNormGrad {
 public:
  LayerNormGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : epsilon_(attrs.f("epsilon")) {
    const Tensor x = in(0);
    s_ = rows_of(x, attrs.i("begin_norm_axis"));
    expect_epsilon(epsilon_);
    expect_vector(in(1), x, s_.rows, "mean", "the number of rows");
    expect_vector(in(2), x, s_.rows, "variance", "the number of rows");
    expect_same_shape(x, in(3), "x and y_grad");
    expect_same_dtype(x, in(3), "x and y_grad");
    if (in.has(4)) expect_vector(in(4), x, s_.cols, "scale", "a row's size");
    if (out.has(0)) {
      expect_same_shape(x, out(0), "x and x_grad");
      expect_same_dtype(x, out(0), "x and x_grad");
    }
    if (out.has(1)) expect_vector(out(1), x, s_.cols, "scale_grad", "a row's size");
    if (out.has(2)) expect_vector(out(2), x, s_.cols, "bias_grad", "a row's size");
    fn_ = dispatch(x.dtype(), Floats{},
                   [](auto t) -> Fn { return &LayerNormGrad::compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    (this->*fn_)(in, out, ctx.num_threads());
  }

 private:
  using Fn = void (LayerNormGrad::*)(const Slots&, const Slots&, int32_t) const;

  template <class T> void compute(const Slots& in, const Slots& out, int32_t threads) const {
    const int64_t rows = s_.rows, cols = s_.cols;
    const T* x = in(0).data<T>();
    const T* mean = in(1).data<T>();
    const T* var = in(2).data<T>();
    const T* dy = in(3).data<T>();
    const T* scale = in.has(4) ? in(4).data<T>() : nullptr;
    T* dx = out.has(0) ? out(0).data<T>() : nullptr;
    T* dscale = out.has(1) ? out(1).data<T>() : nullptr;
    T* dbias = out.has(2) ? out(2).data<T>() : nullptr;
    const double eps = epsilon_;
    if (dx != nullptr) {
      const double d = static_cast<double>(cols);
      for_rows(s_, threads, [&](int64_t r, int64_t b) {
        const double m = mean[r], inv = 1 / std::sqrt(double(var[r]) + eps);
        const auto g = [&](int64_t j) {
          return scale != nullptr ? double(dy[b + j]) * scale[j] : double(dy[b + j]);
        };
        const double sum_g = sum_of(cols, g);
        const double sum_gx = sum_of(cols, [&](int64_t j) { return g(j) * (x[b + j] - m); }) * inv;
        // x_grad = inv * g - inv * sum_g / D - xhat * inv * sum_gx / D.
        const T mt = static_cast<T>(m), it = static_cast<T>(inv);
        const T shift = static_cast<T>(-inv * sum_g / d);
        const T tilt = static_cast<T>(-inv * inv * sum_gx / d);
        for (int64_t j = 0; j < cols; ++j) {
          const T gj = scale != nullptr ? dy[b + j] * scale[j] : dy[b + j];
          dx[b + j] = it * gj + shift + tilt * (x[b + j] - mt);
        }
      });
    }
    if (dscale == nullptr && dbias == nullptr) return;
    // Column sums over rows, split by columns.
    const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(rows, 1));
    parallel_for(cols, threads, grain, [&](int64_t lo, int64_t hi) {
      std::vector<double> acc_scale(hi - lo), acc_bias(hi - lo);
      for (int64_t r = 0; r < rows; ++r) {
        const double m = mean[r], inv = 1 / std::sqrt(double(var[r]) + eps);
        const T* xr = x + r * cols;
        const T* gr = dy + r * cols;
        for (int64_t j = lo; j < hi; ++j) {
          acc_bias[j - lo] += gr[j];
          acc_scale[j - lo] += gr[j] * ((xr[j] - m) * inv);
        }
      }
      for (int64_t j = lo; j < hi; ++j) {
        if (dscale != nullptr) dscale[j] = static_cast<T>(acc_scale[j - lo]);
        if (dbias != nullptr) dbias[j] = static_cast<T>(acc_bias[j - lo]);
      }
    });
  }

  double epsilon_;
  Rows s_;
  Fn fn_;
};

}  // namespace

const pc::Family& norm_kernels() {
  static const pc::Family family = {
      pc::kernel<BatchNorm>("batch_norm"),
      pc::kernel<BatchNormGrad>("batch_norm_grad"),
      pc::kernel<LayerNorm>("layer_norm"),
      pc::kernel<LayerNormGrad>("layer_norm_grad"),
  };
  return family;
}

}  // namespace pon
