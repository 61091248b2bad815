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

#include "norm.hpp"
#include "norm_avx2.hpp"

namespace paddle_ops_nn {
namespace {

// The sum of f(i) for i in [0, n), in double, as eight interleaved partial sums: independent
// additions pipeline (with two doubles to a vector, four chains of them hide the adder's
// latency); the order is fixed, so the result is too.
constexpr int kPartials = 8;

template <class F> double sum_of(int64_t n, F&& f) {
  double s[kPartials] = {};
  int64_t i = 0;
  for (; i + kPartials <= n; i += kPartials)
    for (int k = 0; k < kPartials; ++k) s[k] += f(i + k);
  for (; i < n; ++i) s[0] += f(i);
  return ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
}

// -- batch_norm ------------------------------------------------------------------------------

// Calls f(std::integral_constant<int, b>) for a blocked layout's b (8 or 16), so the loops over
// a tile's lanes have a constant trip count and vectorise.
template <class F> void with_block(int block, F&& f) {
  if (block == 8) f(std::integral_constant<int, 8>{});
  else f(std::integral_constant<int, 16>{});
}

// sum_of for each of the B lanes of a blocked tile at once: out[j] is sum_of(n, f(., j)), its
// additions in sum_of's order, so each lane's sum has the plain layout's bits.
template <int B, class F> void lane_sums(int64_t n, F&& f, double* out) {
  double s[kPartials][B] = {};
  int64_t i = 0;
  for (; i + kPartials <= n; i += kPartials)
    for (int k = 0; k < kPartials; ++k)
      for (int j = 0; j < B; ++j) s[k][j] += f(i + k, j);
  for (; i < n; ++i)
    for (int j = 0; j < B; ++j) s[0][j] += f(i, j);
  for (int j = 0; j < B; ++j) {
    const double low = (s[0][j] + s[1][j]) + (s[2][j] + s[3][j]);
    out[j] = low + ((s[4][j] + s[5][j]) + (s[6][j] + s[7][j]));
  }
}

// f(cb, begin) for every tile of a blocked x (channels cb * b .., elements [begin, begin +
// inner * b)), split across threads; none when the planes hold no element.
template <class F> void for_tiles(const Planes& l, int32_t threads, F&& f) {
  if (l.inner == 0) return;
  const int64_t blocks = l.channels / l.block, size = l.inner * l.block;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(size, 1));
  parallel_rows(l.batch * blocks, threads, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) f(t % blocks, t * size);
  });
}

// channel_sums for a blocked x: tile(cb, begin, acc) adds the K sums of each of its lanes j
// (channel cb * b + j, in lane_sums) into acc[j * K + k]; the totals add each channel's planes
// in the order of the batch, as channel_sums does. Planes of no elements sum to zeros (a tile's
// plane index is begin / inner).
template <int K, class F>
std::vector<double> tile_sums(const Planes& l, int32_t threads, F&& tile) {
  const int64_t b = l.block, blocks = l.channels / b;
  if (l.inner == 0) return std::vector<double>(l.channels * K, 0.0);
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
// threads; none when the planes hold no element (x [2^40, C, 0]: 2^40 * C planes of nothing).
template <class F> void for_planes(const Planes& l, int32_t threads, F&& f) {
  if (l.inner == 0) return;
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(l.inner, 1));
  parallel_rows(l.count(), threads, grain, [&](int64_t lo, int64_t hi) {
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
  if (inner == 0) return total;  // planes of no element sum to zeros, however many
  if (inner >= 64) {
    std::vector<double> partial(l.count() * K, 0.0);
    const int64_t grain = std::max<int64_t>(1, kGrain / inner);
    parallel_rows(l.count(), threads, grain, [&](int64_t lo, int64_t hi) {
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
  static constexpr pc::Signature signature{"11111", "11111"};
  using DTypes = Floats;
  BatchNorm(const Attrs& attrs, const Slots& in, const Slots& out)
      : momentum_(attrs.f("momentum")), epsilon_(attrs.f("epsilon")), test_(attrs.b("is_test")),
        l_(check_batch_norm(attrs, in, out)) {
    fn_ = dispatch(in(0).dtype(), Floats{},
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
        mean_out[c] = static_cast<T>(running_update(keep, running_mean[c], mean[c]));
        var_out[c] = static_cast<T>(running_update(keep, running_var[c], var[c]));
      }
    }
    std::vector<Normalize<T>> normalize;
    normalize.reserve(channels);
    for (int64_t c = 0; c < channels; ++c) {
      const double inv_std = inv_std_of(var[c], epsilon_);
      normalize.emplace_back(mean[c], scale[c] * inv_std, bias[c]);
      saved_mean[c] = normalize[c].hi;
      saved_inv_std[c] = static_cast<T>(inv_std);
    }
    if (l.block == 0) {
      for_planes(l, threads, [&](int64_t c, int64_t b) {
        const Normalize<T> n = normalize[c];
        for (int64_t i = b; i < b + inner; ++i) y[i] = n(x[i]);
      });
      return;
    }
    if (l.block != 8 && l.block != 16) {  // channels last: one tile per image
      const int64_t b = l.block;
      for_tiles(l, threads, [&](int64_t, int64_t begin) {
        for (int64_t i = begin; i < begin + inner * b; i += b)
          for (int64_t j = 0; j < b; ++j) y[i + j] = normalize[j](x[i + j]);
      });
      return;
    }
    with_block(l.block, [&](auto B) {
      for_tiles(l, threads, [&](int64_t cb, int64_t b) {
        const Normalize<T>* n = &normalize[cb * B];
        for (int64_t i = b; i < b + inner * B; i += B)
          for (int j = 0; j < B; ++j) y[i + j] = n[j](x[i + j]);
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
  static constexpr pc::Signature signature{"11111", "???"};
  using DTypes = Floats;
  BatchNormGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : test_(attrs.b("is_test")), l_(check_batch_norm_grad(attrs, in, out)) {
    fn_ = dispatch(in(0).dtype(), Floats{},
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
    std::vector<BatchNormGradAt<T>> grad;
    grad.reserve(channels);
    const double count = static_cast<double>(l.per_channel());
    for (int64_t c = 0; c < channels; ++c)
      grad.emplace_back(test_, mean[c], scale[c], inv_std[c], sums[2 * c], sums[2 * c + 1], count);
    if (l.block == 0) {
      for_planes(l, threads, [&](int64_t c, int64_t begin) {
        const BatchNormGradAt<T> at = grad[c];
        for (int64_t i = begin; i < begin + inner; ++i) dx[i] = at(dy[i], x[i]);
      });
      return;
    }
    with_block(l.block, [&](auto B) {
      for_tiles(l, threads, [&](int64_t cb, int64_t begin) {
        const BatchNormGradAt<T>* at = &grad[cb * B];
        for (int64_t i = begin; i < begin + inner * B; i += B)
          for (int j = 0; j < B; ++j) dx[i + j] = at[j](dy[i + j], x[i + j]);
      });
    });
  }

  bool test_;
  Planes l_;
  Fn fn_;
};

// -- layer_norm ------------------------------------------------------------------------------

// f(r, begin) for every row r (elements [begin, begin + cols)), split across threads.
template <class F> void for_rows(const Rows& s, int32_t threads, F&& f) {
  const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(s.cols, 1));
  parallel_rows(s.rows, threads, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) f(r, r * s.cols);
  });
}

// Calls f(std::bool_constant<a>, std::bool_constant<b>): a loop that tests an optional input
// once per element neither vectorises nor unswitches reliably; one instance per case does.
template <class F> void with_flags(bool a, bool b, F&& f) {
  if (a) {
    if (b) f(std::true_type{}, std::true_type{});
    else f(std::true_type{}, std::false_type{});
  } else {
    if (b) f(std::false_type{}, std::true_type{});
    else f(std::false_type{}, std::false_type{});
  }
}

// One row of layer_norm: its mean and variance, then y.
template <class T, bool kScale, bool kBias>
void normalize_row(const T* x, const T* scale, const T* bias, T* y, int64_t cols, double epsilon,
                   T& mean, T& var) {
  if constexpr (std::is_same_v<T, float>)
    if (use_avx2())
      return avx2::layer_norm_row_f32(x, kScale ? scale : nullptr, kBias ? bias : nullptr, y,
                                      cols, epsilon, mean, var);
  const double d = static_cast<double>(cols);
  const double m = sum_of(cols, [&](int64_t j) { return double(x[j]); }) / d;
  const double v = sum_of(cols, [&](int64_t j) { return (x[j] - m) * (x[j] - m); }) / d;
  mean = static_cast<T>(m);
  var = static_cast<T>(v);
  const Normalize<T> n(m, inv_std_of(v, epsilon), T(0));
  for (int64_t j = 0; j < cols; ++j)
    y[j] = layer_norm_at(n, x[j], kScale ? scale : nullptr, kBias ? bias : nullptr, j);
}

// y = (x - mean) / sqrt(variance + epsilon) * scale + bias per row; mean and variance kept.
class LayerNorm {
 public:
  static constexpr pc::Signature signature{"1??", "111"};
  using DTypes = Floats;
  LayerNorm(const Attrs& attrs, const Slots& in, const Slots& out)
      : epsilon_(attrs.f("epsilon")), s_(check_layer_norm(attrs, in, out)) {
    fn_ = dispatch(in(0).dtype(), Floats{},
                   [](auto t) -> Fn { return &LayerNorm::compute<decltype(t)>; });
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    (this->*fn_)(in, out, ctx.num_threads());
  }

 private:
  using Fn = void (LayerNorm::*)(const Slots&, const Slots&, int32_t) const;

  template <class T> void compute(const Slots& in, const Slots& out, int32_t threads) const {
    const T* x = in(0).data<T>();
    const T* scale = in.has(1) ? in(1).data<T>() : nullptr;
    const T* bias = in.has(2) ? in(2).data<T>() : nullptr;
    T* y = out(0).data<T>();
    T* mean = out(1).data<T>();
    T* var = out(2).data<T>();
    with_flags(scale != nullptr, bias != nullptr, [&](auto has_scale, auto has_bias) {
      for_rows(s_, threads, [&](int64_t r, int64_t b) {
        normalize_row<T, decltype(has_scale)::value, decltype(has_bias)::value>(
            x + b, scale, bias, y + b, s_.cols, epsilon_, mean[r], var[r]);
      });
    });
  }

  double epsilon_;
  Rows s_;
  Fn fn_;
};

// One row of layer_norm_grad's x_grad.
template <class T, bool kScale>
void x_grad_row(const T* x, const T* dy, const T* scale, T* dx, int64_t cols, double m,
                double inv) {
  if constexpr (std::is_same_v<T, float>)
    if (use_avx2())
      return avx2::layer_norm_grad_row_f32(x, dy, kScale ? scale : nullptr, dx, cols, m, inv);
  const auto g = [&](int64_t j) { return kScale ? double(dy[j]) * scale[j] : double(dy[j]); };
  const double sum_g = sum_of(cols, g);
  const double sum_gx = sum_of(cols, [&](int64_t j) { return g(j) * (x[j] - m); }) * inv;
  const LayerNormGradAt<T> at(m, inv, sum_g, sum_gx, static_cast<double>(cols));
  for (int64_t j = 0; j < cols; ++j) dx[j] = at(kScale ? dy[j] * scale[j] : dy[j], x[j]);
}

// With xhat = (x - mean) * inv_std per row (inv_std = 1 / sqrt(variance + epsilon)), g =
// y_grad * scale, and D = cols:
//   x_grad = inv_std * (g - sum(g) / D - xhat * sum(g * xhat) / D)   (per row)
//   scale_grad = sum over rows of y_grad * xhat, bias_grad = sum over rows of y_grad.
class LayerNormGrad {
 public:
  static constexpr pc::Signature signature{"1111?", "???"};
  using DTypes = Floats;
  LayerNormGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : epsilon_(attrs.f("epsilon")), s_(check_layer_norm_grad(attrs, in, out)) {
    fn_ = dispatch(in(0).dtype(), Floats{},
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
      with_flags(scale != nullptr, false, [&](auto has_scale, auto) {
        for_rows(s_, threads, [&](int64_t r, int64_t b) {
          x_grad_row<T, decltype(has_scale)::value>(x + b, dy + b, scale, dx + b, cols, mean[r],
                                                    inv_std_of(var[r], eps));
        });
      });
    }
    if (dscale == nullptr && dbias == nullptr) return;
    // Column sums over rows, split by columns.
    const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(rows, 1));
    parallel_for(cols, threads, grain, [&](int64_t lo, int64_t hi) {
      std::vector<double> acc_scale(hi - lo), acc_bias(hi - lo);
      for (int64_t r = 0; r < rows; ++r) {
        const double m = mean[r], inv = inv_std_of(var[r], eps);
        const T* xr = x + r * cols;
        const T* gr = dy + r * cols;
        if constexpr (std::is_same_v<T, float>) {
          if (use_avx2()) {
            avx2::layer_norm_param_grad_row_f32(xr, gr, lo, hi, m, inv, acc_scale.data(),
                                                acc_bias.data());
            continue;
          }
        }
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

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<BatchNorm>("batch_norm"),
    pc::kernel<BatchNormGrad>("batch_norm_grad"),
    pc::kernel<LayerNorm>("layer_norm"),
    pc::kernel<LayerNormGrad>("layer_norm_grad"));

}  // namespace paddle_ops_nn
