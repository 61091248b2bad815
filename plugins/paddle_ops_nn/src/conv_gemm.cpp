// The im2col + OpenBLAS convolution engine: float64 (which oneDNN does not compute), and
// float32 where oneDNN is not built or switched off (engine.hpp). Per image and group, the
// input is unrolled into a [taps, OH * OW] matrix (zeros for padding), so each pass is one GEMM:
//   forward           y_g  = w_g [K/g, taps] @ col
//   backward_data     col  = w_g^T @ dy_g, folded back onto dx (col2im, summing overlaps)
//   backward_weights  dw_g += dy_g @ col^T
#include <algorithm>
#include <climits>
#include <type_traits>

#include "blas.hpp"
#include "conv.hpp"

namespace paddle_ops_nn {
namespace {


// Few output positions per image (ResNet's last stage at 32x32: one): the filter gradient
// takes the images' unrolled matrices side by side, [taps, N * OH * OW], and dy's planes
// likewise, so that one product with inner size N * OH * OW gives dw, where a product per
// image (inner size OH * OW) rewrites all of dw each time: 10x slower. While both matrices stay
// small (kWideElements). Returns N * OH * OW then, else 0 (a product per image).
constexpr int64_t kWideElements = int64_t{1} << 22;
int64_t wide_columns(const ConvShape& s) {
  const int64_t wide = s.batch * s.out_plane();
  const bool fits = s.batch > 1 && wide <= INT_MAX &&
                    wide * (s.taps() + s.filters / s.groups) <= kWideElements;
  return fits ? wide : 0;
}

template <class T> class GemmConv final : public ConvEngine {
 public:
  GemmConv(const ConvShape& s, const ConvEpilogue& e, unsigned passes)
      : s_(s), epilogue_(e) {
    for (int64_t v : {s.taps(), s.out_plane(), s.filters / s.groups})
      if (v > INT_MAX) fail("the convolution is too large for OpenBLAS's 32-bit sizes");
    if (passes & kBackwardWeights) wide_ = wide_columns(s);
  }

  // The unrolled matrix of one image and group; with wide_weights, the batch's and dy's.
  size_t workspace_bytes() const override {
    const int64_t col = s_.taps() * s_.out_plane();
    return static_cast<size_t>(col + wide_ * (s_.taps() + group_filters())) * sizeof(T);
  }

  // (same_filter: nothing to reuse, the products read the filter as it is)
  void forward(const void* x, const void* w, const void* b, const void* residual, void* y,
               char* ws, int threads, bool /*same_filter*/) const override {
    BlasOneThread blas;  // (each product split among our threads: in_parts)
    const T* xs = static_cast<const T*>(x);
    T* ys = static_cast<T*>(y);
    T* col_ws = reinterpret_cast<T*>(ws);
    const int64_t gf = group_filters(), plane = s_.out_plane(), taps = s_.taps();
    for (int64_t n = 0; n < s_.batch; ++n)
      for (int64_t g = 0; g < s_.groups; ++g) {
        const T* col =
            unrolled(xs + (n * s_.channels + g * group_channels()) * s_.in_plane(), col_ws,
                     threads);
        const T* wg = static_cast<const T*>(w) + g * gf * taps;
        T* yg = ys + (n * s_.filters + g * gf) * plane;
        if (gf >= plane)  // y_g's rows (filters) split, else its columns (positions)
          in_parts(gf, threads, [&](int64_t first, int64_t last) {
            gemm<T>(false, false, last - first, plane, taps, T(1), wg + first * taps, taps, col,
                    plane, T(0), yg + first * plane, plane);
          });
        else
          in_parts(plane, threads, [&](int64_t first, int64_t last) {
            gemm<T>(false, false, gf, last - first, taps, T(1), wg, taps, col + first, plane,
                    T(0), yg + first, plane);
          });
      }
    if (b != nullptr)
      add_channel_bias(pc::DType<T>::value, b, y, s_.batch, s_.filters, s_.out_plane(), threads);
    if (epilogue_.activation != ConvEpilogue::kNone || epilogue_.residual)
      apply_epilogue(pc::DType<T>::value, epilogue_, residual, y,
                     s_.batch * s_.filters * s_.out_plane(), threads);
  }

  void backward_data(const void* dy, const void* w, void* dx, char* ws,
                     int threads) const override {
    BlasOneThread blas;  // (each product split among our threads: in_parts)
    T* dxs = static_cast<T*>(dx);
    T* col = reinterpret_cast<T*>(ws);
    const int64_t gf = group_filters(), plane = s_.out_plane(), taps = s_.taps();
    std::fill(dxs, dxs + s_.batch * s_.channels * s_.in_plane(), T(0));
    for (int64_t n = 0; n < s_.batch; ++n)
      for (int64_t g = 0; g < s_.groups; ++g) {
        const T* wg = static_cast<const T*>(w) + g * gf * taps;
        const T* dyg = static_cast<const T*>(dy) + (n * s_.filters + g * gf) * plane;
        if (taps >= 64 * threads)  // col's rows (taps) split, else its columns (positions)
          in_parts(taps, threads, [&](int64_t first, int64_t last) {
            gemm<T>(true, false, last - first, plane, gf, T(1), wg + first, taps, dyg, plane,
                    T(0), col + first * plane, plane);
          });
        else
          in_parts(plane, threads, [&](int64_t first, int64_t last) {
            gemm<T>(true, false, taps, last - first, gf, T(1), wg, taps, dyg + first, plane, T(0),
                    col + first, plane);
          });
        fold(col, dxs + (n * s_.channels + g * group_channels()) * s_.in_plane());
      }
  }

  void backward_weights(const void* x, const void* dy, void* dw, void* db, char* ws,
                        int threads) const override {
    BlasOneThread blas;  // (filter_product splits each product among our threads)
    if (dw != nullptr && wide_ > 0) {
      wide_weights(static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dw),
                   reinterpret_cast<T*>(ws), threads);
    } else if (dw != nullptr) {
      for (int64_t n = 0; n < s_.batch; ++n)
        for (int64_t g = 0; g < s_.groups; ++g) {
          const T* col = unrolled(static_cast<const T*>(x) +
                                      (n * s_.channels + g * group_channels()) * s_.in_plane(),
                                  reinterpret_cast<T*>(ws), threads);
          filter_product(
              static_cast<const T*>(dy) + (n * s_.filters + g * group_filters()) * s_.out_plane(),
              col, s_.out_plane(), n == 0 ? T(0) : T(1),
              static_cast<T*>(dw) + g * group_filters() * s_.taps(), threads);
        }
      if (s_.batch == 0) std::fill_n(static_cast<T*>(dw), s_.filters * s_.taps(), T(0));
    }
    if (db != nullptr)
      channel_bias_grad(pc::DType<T>::value, dy, db, s_.batch, s_.filters, s_.out_plane(), threads);
  }

 private:
  // dw in one product over the batch (wide_columns); ws: one image's unrolled matrix, then
  // the wide ones (workspace_bytes).
  void wide_weights(const T* x, const T* dy, T* dw, T* ws, int threads) const {
    const int64_t plane = s_.out_plane(), wide = wide_, gf = group_filters();
    T* wide_col = ws + s_.taps() * plane;
    T* wide_dy = wide_col + s_.taps() * wide;
    for (int64_t g = 0; g < s_.groups; ++g) {
      for (int64_t n = 0; n < s_.batch; ++n) {
        const T* col =
            unrolled(x + (n * s_.channels + g * group_channels()) * s_.in_plane(), ws, threads);
        for (int64_t row = 0; row < s_.taps(); ++row)
          std::copy_n(col + row * plane, plane, wide_col + row * wide + n * plane);
        const T* planes = dy + (n * s_.filters + g * gf) * plane;
        for (int64_t k = 0; k < gf; ++k)
          std::copy_n(planes + k * plane, plane, wide_dy + k * wide + n * plane);
      }
      filter_product(wide_dy, wide_col, wide, T(0), dw + g * gf * s_.taps(), threads);
    }
  }

  // dw_g = beta dw_g + dy_g [gf, inner] @ col [taps, inner]^T, the taps split among our
  // threads (in_parts).
  void filter_product(const T* dy, const T* col, int64_t inner, T beta, T* dw,
                      int threads) const {
    const int64_t gf = group_filters(), taps = s_.taps();
    in_parts(taps, threads, [&](int64_t first, int64_t last) {
      gemm<T>(false, true, gf, last - first, inner, T(1), dy, inner, col + first * inner, inner,
              beta, dw + first, taps);
    });
  }

  // f(first, last) for slices of [0, rows) (at least 64 rows each), one per thread, each a
  // single-threaded OpenBLAS product (the caller holds a BlasOneThread): OpenBLAS's own
  // threads (where paddle-ops-math has not handed its jobs to our pool) would spin beside ours
  // and beside another library's pool: bench_conv's step took 1.7x as long at 2 threads.
  template <class F> static void in_parts(int64_t rows, int threads, F&& f) {
    const int64_t parts = std::clamp<int64_t>(rows / 64, 1, std::max(threads, 1));
    parallel_rows(parts, static_cast<int32_t>(parts), 1, [&](int64_t lo, int64_t hi) {
      for (int64_t part = lo; part < hi; ++part) f(rows * part / parts, rows * (part + 1) / parts);
    });
  }

  int64_t group_channels() const { return s_.channels / s_.groups; }
  int64_t group_filters() const { return s_.filters / s_.groups; }

  // Calls f(row, c, i, j) for each row of the unrolled matrix: channel c, kernel tap (i, j).
  template <class F> void for_rows(F&& f) const {
    for (int64_t c = 0; c < group_channels(); ++c)
      for (int64_t i = 0; i < s_.h.kernel; ++i)
        for (int64_t j = 0; j < s_.w.kernel; ++j) f((c * s_.h.kernel + i) * s_.w.kernel + j, c, i, j);
  }

  // The unrolled [taps, OH * OW] matrix of one group of one image, in `col` (the image itself
  // for a 1x1 kernel with stride 1 and no padding). Its rows in parallel; in each output row,
  // the stretch that reads inside the image is one copy (stride 1) or one gather, and the
  // padding on either side of it zeros.
  const T* unrolled(const T* image, T* col, int threads) const {
    const Axis &h = s_.h, &w = s_.w;
    if (h.kernel == 1 && w.kernel == 1 && h.stride == 1 && w.stride == 1 && h.pad_before == 0 &&
        w.pad_before == 0 && h.out == h.in && w.out == w.in)
      return image;
    const int64_t taps = h.kernel * w.kernel, plane = s_.out_plane();
    // ceil(a / b) for b > 0, and 0 for a <= 0 (no output column before 0).
    auto ceil_div = [](int64_t a, int64_t b) { return a <= 0 ? int64_t{0} : (a + b - 1) / b; };
    const int64_t grain = std::max<int64_t>(kGrain / std::max<int64_t>(plane, 1), 1);
    parallel_rows(group_channels() * taps, threads, grain, [&](int64_t lo, int64_t hi) {
      for (int64_t row = lo; row < hi; ++row) {
        const int64_t c = row / taps, i = row / w.kernel % h.kernel, j = row % w.kernel;
        const T* in = image + c * s_.in_plane();
        T* dst = col + row * plane;
        // Output column ow reads input column ow * stride + shift; those in [first, last)
        // are inside the image.
        const int64_t shift = j * w.dilation - w.pad_before;
        const int64_t first = std::min(ceil_div(-shift, w.stride), w.out);
        const int64_t last = std::max(first, std::min(ceil_div(w.in - shift, w.stride), w.out));
        for (int64_t oh = 0; oh < h.out; ++oh) {
          T* out = dst + oh * w.out;
          const int64_t ih = oh * h.stride - h.pad_before + i * h.dilation;
          if (ih < 0 || ih >= h.in) {
            std::fill_n(out, w.out, T(0));
            continue;
          }
          std::fill_n(out, first, T(0));
          const int64_t at = ih * w.in + shift;  // input column ow is in[at + ow * stride]
          if (w.stride == 1) {
            std::copy(in + at + first, in + at + last, out + first);
          } else {
            for (int64_t ow = first; ow < last; ++ow) out[ow] = in[at + ow * w.stride];
          }
          std::fill(out + last, out + w.out, T(0));
        }
      }
    });
    return col;
  }

  // col2im: add the unrolled matrix `col` back onto the image it came from.
  void fold(const T* col, T* image) const {
    const Axis &h = s_.h, &w = s_.w;
    for_rows([&](int64_t row, int64_t c, int64_t i, int64_t j) {
      const T* src = col + row * s_.out_plane();
      T* plane = image + c * s_.in_plane();
      for (int64_t oh = 0; oh < h.out; ++oh) {
        const int64_t ih = oh * h.stride - h.pad_before + i * h.dilation;
        if (ih < 0 || ih >= h.in) continue;
        for (int64_t ow = 0; ow < w.out; ++ow) {
          const int64_t iw = ow * w.stride - w.pad_before + j * w.dilation;
          if (iw >= 0 && iw < w.in) plane[ih * w.in + iw] += src[oh * w.out + ow];
        }
      }
    });
  }

  ConvShape s_;
  ConvEpilogue epilogue_;
  int64_t wide_ = 0;  // the columns of wide_weights' matrices (0: a product per image)
};

template <class T>
void bias_loop(const T* b, T* y, int64_t batch, int64_t channels, int64_t plane, int threads) {
  const int64_t grain = std::max<int64_t>(kGrain / std::max<int64_t>(plane, 1), 1);
  parallel_rows(batch * channels, threads, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t p = lo; p < hi; ++p) {
      const T v = b[p % channels];
      T* row = y + p * plane;
      for (int64_t k = 0; k < plane; ++k) row[k] += v;
    }
  });
}

template <class T>
void bias_grad_loop(const T* dy, T* db, int64_t batch, int64_t channels, int64_t plane, int threads) {
  parallel_rows(channels, threads, 1, [&](int64_t lo, int64_t hi) {
    for (int64_t c = lo; c < hi; ++c) {
      double sum = 0;
      for (int64_t n = 0; n < batch; ++n) {
        const T* row = dy + (n * channels + c) * plane;
        for (int64_t k = 0; k < plane; ++k) sum += row[k];
      }
      db[c] = static_cast<T>(sum);
    }
  });
}

}  // namespace

// The filter gradient's product is dy [filters, inner] x the unrolled input [taps, inner]^T,
// inner being OH * OW, or N * OH * OW over the batch at once (wide_columns). OpenBLAS runs it
// near this core's peak where it is large on every side; oneDNN's jit kernel for the filter
// gradient ran at 38-48 GFLOP/s a thread on AVX2. Each bound below is where a shape lost
// (AVX2, 1 and 2 threads): 147 taps, a 7x7 stem over 3 channels (1.1-1.2x oneDNN's time for a
// training step of the one convolution); 32 filters, a 3x3 convolution of 32 channels over
// 28x28 (1.3x); and products per image of ResNet-18's layers on 32x32 images at batch 32, 32 of
// them each of inner size 1024 down to 64, which made its training step 1.1-1.4x as long.
bool gemm_filter_gradient_pays(const ConvShape& s) {
  const int64_t filters = s.filters / s.groups;
  const bool large = s.batch == 1 || (wide_columns(s) == 0 && s.out_plane() >= 2048);
  return s.groups == 1 && s.taps() >= 256 && filters >= 64 && large;
}

// The forward pass of a training step, where oneDNN converts the filter to its layout at every
// call: for a filter many times the size of the image that costs more than the product, which
// here reads the filter as it is. Measured on ResNet-18's last stage at batch 1 (2.4M weights
// a convolution, over 7x7 maps; in a training step, 1 and 2 threads): 0.74-0.84x oneDNN's
// time for its 3x3 convolutions of stride 1, 0.86-0.95x for the one of stride 2; 1.14x for a
// 1x1 (excluded: 512 taps). Its input gradient measured no faster (1.03-1.15x), so it stays
// oneDNN's.
bool gemm_forward_pays(const ConvShape& s) {
  return s.groups == 1 && s.batch == 1 && s.out_plane() <= 64 && s.taps() >= 1024 &&
         s.filters >= 64;
}

std::unique_ptr<ConvEngine> make_gemm_conv(const ConvShape& shape, int32_t dtype, unsigned passes,
                                           const ConvEpilogue& epilogue) {
  return dispatch(dtype, Floats{}, [&](auto t) -> std::unique_ptr<ConvEngine> {
    return std::make_unique<GemmConv<decltype(t)>>(shape, epilogue, passes);
  });
}

void apply_epilogue(int32_t dtype, const ConvEpilogue& e, const void* r, void* y, int64_t n,
                    int threads) {
  dispatch(dtype, Floats{}, [&](auto t) {
    using T = decltype(t);
    const T* rs = static_cast<const T*>(r);
    T* ys = static_cast<T*>(y);
    const T alpha = static_cast<T>(e.alpha), beta = static_cast<T>(e.beta);
    parallel_rows(n, threads, kGrain, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) {
        T v = rs != nullptr ? ys[i] + rs[i] : ys[i];
        switch (e.activation) {
          case ConvEpilogue::kRelu: v = v > T(0) ? v : T(0); break;
          case ConvEpilogue::kLeakyRelu: v = v > T(0) ? v : alpha * v; break;
          case ConvEpilogue::kClip: v = std::min(std::max(v, alpha), beta); break;
          case ConvEpilogue::kNone: break;
        }
        ys[i] = v;
      }
    });
  });
}

void add_channel_bias(int32_t dtype, const void* b, void* y, int64_t batch, int64_t channels,
                      int64_t plane, int threads) {
  dispatch(dtype, Floats{}, [&](auto t) {
    using T = decltype(t);
    bias_loop(static_cast<const T*>(b), static_cast<T*>(y), batch, channels, plane, threads);
  });
}

void channel_bias_grad(int32_t dtype, const void* dy, void* db, int64_t batch, int64_t channels,
                       int64_t plane, int threads) {
  dispatch(dtype, Floats{}, [&](auto t) {
    using T = decltype(t);
    bias_grad_loop(static_cast<const T*>(dy), static_cast<T*>(db), batch, channels, plane, threads);
  });
}

}  // namespace paddle_ops_nn
