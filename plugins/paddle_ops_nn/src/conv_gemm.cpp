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


template <class T> class GemmConv final : public ConvEngine {
 public:
  explicit GemmConv(const ConvShape& s) : s_(s) {
    for (int64_t v : {s.taps(), s.out_plane(), s.filters / s.groups})
      if (v > INT_MAX) fail("the convolution is too large for OpenBLAS's 32-bit sizes");
  }

  // The unrolled matrix of one image and group.
  size_t workspace_bytes() const override {
    return static_cast<size_t>(s_.taps() * s_.out_plane()) * sizeof(T);
  }

  void forward(const void* x, const void* w, const void* b, void* y, char* ws,
               int threads) const override {
    set_blas_threads(threads);
    const T* xs = static_cast<const T*>(x);
    T* ys = static_cast<T*>(y);
    T* col_ws = reinterpret_cast<T*>(ws);
    for (int64_t n = 0; n < s_.batch; ++n)
      for (int64_t g = 0; g < s_.groups; ++g) {
        const T* col =
            unrolled(xs + (n * s_.channels + g * group_channels()) * s_.in_plane(), col_ws);
        gemm<T>(false, false, group_filters(), s_.out_plane(), s_.taps(), T(0),
                static_cast<const T*>(w) + g * group_filters() * s_.taps(), col,
                ys + (n * s_.filters + g * group_filters()) * s_.out_plane());
      }
    if (b != nullptr)
      add_channel_bias(pc::DType<T>::value, b, y, s_.batch, s_.filters, s_.out_plane(), threads);
  }

  void backward_data(const void* dy, const void* w, void* dx, char* ws,
                     int threads) const override {
    set_blas_threads(threads);
    T* dxs = static_cast<T*>(dx);
    T* col = reinterpret_cast<T*>(ws);
    std::fill(dxs, dxs + s_.batch * s_.channels * s_.in_plane(), T(0));
    for (int64_t n = 0; n < s_.batch; ++n)
      for (int64_t g = 0; g < s_.groups; ++g) {
        gemm<T>(true, false, s_.taps(), s_.out_plane(), group_filters(), T(0),
                static_cast<const T*>(w) + g * group_filters() * s_.taps(),
                static_cast<const T*>(dy) + (n * s_.filters + g * group_filters()) * s_.out_plane(),
                col);
        fold(col, dxs + (n * s_.channels + g * group_channels()) * s_.in_plane());
      }
  }

  void backward_weights(const void* x, const void* dy, void* dw, void* db, char* ws,
                        int threads) const override {
    set_blas_threads(threads);
    if (dw != nullptr) {
      for (int64_t n = 0; n < s_.batch; ++n)
        for (int64_t g = 0; g < s_.groups; ++g) {
          const T* col = unrolled(static_cast<const T*>(x) +
                                      (n * s_.channels + g * group_channels()) * s_.in_plane(),
                                  reinterpret_cast<T*>(ws));
          gemm<T>(false, true, group_filters(), s_.taps(), s_.out_plane(), n == 0 ? T(0) : T(1),
                  static_cast<const T*>(dy) + (n * s_.filters + g * group_filters()) * s_.out_plane(),
                  col, static_cast<T*>(dw) + g * group_filters() * s_.taps());
        }
      if (s_.batch == 0) std::fill_n(static_cast<T*>(dw), s_.filters * s_.taps(), T(0));
    }
    if (db != nullptr)
      channel_bias_grad(pc::DType<T>::value, dy, db, s_.batch, s_.filters, s_.out_plane(), threads);
  }

 private:
  int64_t group_channels() const { return s_.channels / s_.groups; }
  int64_t group_filters() const { return s_.filters / s_.groups; }

  // Calls f(row, c, i, j) for each row of the unrolled matrix: channel c, kernel tap (i, j).
  template <class F> void for_rows(F&& f) const {
    for (int64_t c = 0; c < group_channels(); ++c)
      for (int64_t i = 0; i < s_.h.kernel; ++i)
        for (int64_t j = 0; j < s_.w.kernel; ++j) f((c * s_.h.kernel + i) * s_.w.kernel + j, c, i, j);
  }

  // The unrolled [taps, OH * OW] matrix of one group of one image, in `col` (the image itself
  // for a 1x1 kernel with stride 1 and no padding).
  const T* unrolled(const T* image, T* col) const {
    const Axis &h = s_.h, &w = s_.w;
    if (h.kernel == 1 && w.kernel == 1 && h.stride == 1 && w.stride == 1 && h.pad_before == 0 &&
        w.pad_before == 0 && h.out == h.in && w.out == w.in)
      return image;
    for_rows([&](int64_t row, int64_t c, int64_t i, int64_t j) {
      T* dst = col + row * s_.out_plane();
      const T* plane = image + c * s_.in_plane();
      for (int64_t oh = 0; oh < h.out; ++oh) {
        const int64_t ih = oh * h.stride - h.pad_before + i * h.dilation;
        for (int64_t ow = 0; ow < w.out; ++ow) {
          const int64_t iw = ow * w.stride - w.pad_before + j * w.dilation;
          const bool inside = ih >= 0 && ih < h.in && iw >= 0 && iw < w.in;
          dst[oh * w.out + ow] = inside ? plane[ih * w.in + iw] : T(0);
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

std::unique_ptr<ConvEngine> make_gemm_conv(const ConvShape& shape, int32_t dtype, unsigned) {
  return dispatch(dtype, Floats{}, [&](auto t) -> std::unique_ptr<ConvEngine> {
    return std::make_unique<GemmConv<decltype(t)>>(shape);
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
