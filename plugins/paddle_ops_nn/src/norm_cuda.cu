// CUDA kernels of batch_norm, layer_norm and their gradients. Same checks, views of x and
// formulas (norm.hpp) and dtypes as norm_cpu.cpp.
//
// Memory contract: as the CPU kernels' (mean_out and variance_out may share mean's and
// variance's buffers, updated in place: each element is read before it is written) with
// batch_norm's channel_block 0 (the blocked layout is the CPU's: refused in prepare), all on the
// CUDA device of the plan's stream. One block per channel (batch_norm) or row (layer_norm) takes
// its statistics two-pass (the mean, then the mean of squared deviations), each thread summing a
// strided part in double and the block joining the parts in a fixed tree (cuda.cuh's
// block_sums), then normalises its elements. layer_norm's scale and bias gradients sum each
// column over the rows, in a fixed order too. No atomics: every run gives the same bits.
#include "cuda.cuh"
#include "norm.hpp"

namespace paddle_ops_nn {
namespace {

// -- batch_norm ------------------------------------------------------------------------------

template <class T> struct BatchNormArgs {
  const T *x, *scale, *bias, *running_mean, *running_var;
  T *y, *mean_out, *var_out, *saved_mean, *saved_inv_std;
};

template <class T>
__global__ void batch_norm_kernel(BatchNormArgs<T> a, Planes l, double keep, double epsilon,
                                  bool test) {
  const int64_t n = l.per_channel();
  for (int64_t c = blockIdx.x; c < l.channels; c += gridDim.x) {
    double mean, var;
    if (test) {
      mean = a.running_mean[c];
      var = a.running_var[c];
    } else {
      double s[1] = {0};
      for (int64_t k = threadIdx.x; k < n; k += kBlock) s[0] += double(a.x[l.at(c, k)]);
      block_sums(s);
      mean = s[0] / static_cast<double>(n);
      double q[1] = {0};
      for (int64_t k = threadIdx.x; k < n; k += kBlock) {
        const double d = a.x[l.at(c, k)] - mean;
        q[0] += d * d;
      }
      block_sums(q);
      var = q[0] / static_cast<double>(n);
    }
    const double inv_std = inv_std_of(var, epsilon);
    const Normalize<T> norm(mean, double(a.scale[c]) * inv_std, a.bias[c]);
    if (threadIdx.x == 0) {
      // Only this thread reads the running statistics while training: it reads them before it
      // writes the outputs that may share their buffers. At inference they are copied where
      // the buffers differ (every thread read them above, and they stay as they are).
      if (!test) {
        const double running_mean = a.running_mean[c], running_var = a.running_var[c];
        a.mean_out[c] = static_cast<T>(running_update(keep, running_mean, mean));
        a.var_out[c] = static_cast<T>(running_update(keep, running_var, var));
      } else {
        if (a.mean_out != a.running_mean) a.mean_out[c] = a.running_mean[c];
        if (a.var_out != a.running_var) a.var_out[c] = a.running_var[c];
      }
      a.saved_mean[c] = norm.hi;
      a.saved_inv_std[c] = static_cast<T>(inv_std);
    }
    for (int64_t k = threadIdx.x; k < n; k += kBlock) {
      const int64_t i = l.at(c, k);
      a.y[i] = norm(a.x[i]);
    }
  }
}

class BatchNormCuda {
 public:
  static constexpr pc::Signature signature{"11111", "11111"};
  using DTypes = Floats;
  BatchNormCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : momentum_(attrs.f("momentum")), epsilon_(attrs.f("epsilon")), test_(attrs.b("is_test")),
        l_(check_batch_norm(plain_only(attrs), in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (l_.channels == 0) return;
    dispatch(in(0).dtype(), DTypes{}, [&](auto t) {
      using T = decltype(t);
      const BatchNormArgs<T> a{in(0).data<T>(),  in(1).data<T>(),  in(2).data<T>(),
                               in(3).data<T>(),  in(4).data<T>(),  out(0).data<T>(),
                               out(1).data<T>(), out(2).data<T>(), out(3).data<T>(),
                               out(4).data<T>()};
      batch_norm_kernel<<<blocks_for(l_.channels), kBlock, 0, stream_of(ctx)>>>(
          a, l_, momentum_, epsilon_, test_);
    });
    check_launch();
  }

 private:
  double momentum_, epsilon_;
  bool test_;
  Planes l_;
};

template <class T> struct BatchNormGradArgs {
  const T *x, *scale, *mean, *inv_std, *dy;
  T *dx, *dscale, *dbias;  // each may be null (not asked for)
};

// Per channel: the sums of y_grad and of y_grad * (x - mean), then x_grad (norm.hpp's
// BatchNormGradAt).
template <class T> __global__ void batch_norm_grad_kernel(BatchNormGradArgs<T> a, Planes l, bool test) {
  const int64_t n = l.per_channel();
  const bool sums = !test || a.dscale != nullptr || a.dbias != nullptr;
  for (int64_t c = blockIdx.x; c < l.channels; c += gridDim.x) {
    double s[2] = {0, 0};
    if (sums) {
      const double m = a.mean[c];
      for (int64_t k = threadIdx.x; k < n; k += kBlock) {
        const int64_t i = l.at(c, k);
        s[0] += double(a.dy[i]);
        s[1] += double(a.dy[i]) * (double(a.x[i]) - m);
      }
      block_sums(s);
    }
    if (threadIdx.x == 0) {
      if (a.dbias != nullptr) a.dbias[c] = static_cast<T>(s[0]);
      if (a.dscale != nullptr) a.dscale[c] = static_cast<T>(s[1] * double(a.inv_std[c]));
    }
    if (a.dx == nullptr) continue;
    const BatchNormGradAt<T> at(test, a.mean[c], a.scale[c], a.inv_std[c], s[0], s[1],
                                static_cast<double>(n));
    for (int64_t k = threadIdx.x; k < n; k += kBlock) {
      const int64_t i = l.at(c, k);
      a.dx[i] = at(a.dy[i], a.x[i]);
    }
  }
}

class BatchNormGradCuda {
 public:
  static constexpr pc::Signature signature{"11111", "???"};
  using DTypes = Floats;
  BatchNormGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : test_(attrs.b("is_test")), l_(check_batch_norm_grad(plain_only(attrs), in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (l_.channels == 0 || !(out.has(0) || out.has(1) || out.has(2))) return;
    dispatch(in(0).dtype(), DTypes{}, [&](auto t) {
      using T = decltype(t);
      const BatchNormGradArgs<T> a{in(0).data<T>(),
                                   in(1).data<T>(),
                                   in(2).data<T>(),
                                   in(3).data<T>(),
                                   in(4).data<T>(),
                                   out.has(0) ? out(0).data<T>() : nullptr,
                                   out.has(1) ? out(1).data<T>() : nullptr,
                                   out.has(2) ? out(2).data<T>() : nullptr};
      batch_norm_grad_kernel<<<blocks_for(l_.channels), kBlock, 0, stream_of(ctx)>>>(a, l_,
                                                                                      test_);
    });
    check_launch();
  }

 private:
  bool test_;
  Planes l_;
};

// -- layer_norm ------------------------------------------------------------------------------

template <class T>
__global__ void layer_norm_kernel(const T* x, const T* scale, const T* bias, T* y, T* mean,
                                  T* var, Rows s, double epsilon) {
  const double d = static_cast<double>(s.cols);
  for (int64_t r = blockIdx.x; r < s.rows; r += gridDim.x) {
    const int64_t b = r * s.cols;
    double sum[1] = {0};
    for (int64_t j = threadIdx.x; j < s.cols; j += kBlock) sum[0] += double(x[b + j]);
    block_sums(sum);
    const double m = sum[0] / d;
    double squares[1] = {0};
    for (int64_t j = threadIdx.x; j < s.cols; j += kBlock) {
      const double e = x[b + j] - m;
      squares[0] += e * e;
    }
    block_sums(squares);
    const double v = squares[0] / d;
    if (threadIdx.x == 0) {
      mean[r] = static_cast<T>(m);
      var[r] = static_cast<T>(v);
    }
    const Normalize<T> n(m, inv_std_of(v, epsilon), T(0));
    for (int64_t j = threadIdx.x; j < s.cols; j += kBlock)
      y[b + j] = layer_norm_at(n, x[b + j], scale, bias, j);
  }
}

class LayerNormCuda {
 public:
  static constexpr pc::Signature signature{"1??", "111"};
  using DTypes = Floats;
  LayerNormCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : epsilon_(attrs.f("epsilon")), s_(check_layer_norm(attrs, in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    if (s_.rows == 0) return;
    dispatch(in(0).dtype(), DTypes{}, [&](auto t) {
      using T = decltype(t);
      layer_norm_kernel<<<blocks_for(s_.rows), kBlock, 0, stream_of(ctx)>>>(
          in(0).data<T>(), in.has(1) ? in(1).data<T>() : nullptr,
          in.has(2) ? in(2).data<T>() : nullptr, out(0).data<T>(), out(1).data<T>(),
          out(2).data<T>(), s_, epsilon_);
    });
    check_launch();
  }

 private:
  double epsilon_;
  Rows s_;
};

// x_grad per row, from the row's sums of g = y_grad * scale and of g * (x - mean) (norm.hpp's
// LayerNormGradAt).
template <class T>
__global__ void layer_norm_grad_kernel(const T* x, const T* mean, const T* var, const T* dy,
                                       const T* scale, T* dx, Rows s, double epsilon) {
  const double d = static_cast<double>(s.cols);
  for (int64_t r = blockIdx.x; r < s.rows; r += gridDim.x) {
    const int64_t b = r * s.cols;
    const double m = mean[r], inv = inv_std_of(var[r], epsilon);
    double sums[2] = {0, 0};
    for (int64_t j = threadIdx.x; j < s.cols; j += kBlock) {
      const double g = scale != nullptr ? double(dy[b + j]) * scale[j] : double(dy[b + j]);
      sums[0] += g;
      sums[1] += g * (x[b + j] - m);
    }
    block_sums(sums);
    const LayerNormGradAt<T> at(m, inv, sums[0], sums[1] * inv, d);
    for (int64_t j = threadIdx.x; j < s.cols; j += kBlock)
      dx[b + j] = at(scale != nullptr ? dy[b + j] * scale[j] : dy[b + j], x[b + j]);
  }
}

// scale_grad and bias_grad: each column summed over the rows. A block takes 32 columns (its
// threads' x, adjacent in memory) and splits the rows among 8 lanes (y); lane 0 then adds the
// 8 lanes' sums in order.
constexpr int kColumns = 32, kLanes = kBlock / kColumns;

template <class T>
__global__ void layer_norm_columns_kernel(const T* x, const T* mean, const T* var, const T* dy,
                                          T* dscale, T* dbias, Rows s, double epsilon) {
  __shared__ double parts[2][kLanes][kColumns];
  const int column = static_cast<int>(threadIdx.x), lane = static_cast<int>(threadIdx.y);
  for (int64_t tile = blockIdx.x; tile * kColumns < s.cols; tile += gridDim.x) {
    const int64_t j = tile * kColumns + column;
    double acc_scale = 0, acc_bias = 0;
    if (j < s.cols)
      for (int64_t r = lane; r < s.rows; r += kLanes) {
        const double m = mean[r], inv = inv_std_of(var[r], epsilon);
        const T g = dy[r * s.cols + j];
        acc_bias += g;
        acc_scale += g * ((x[r * s.cols + j] - m) * inv);
      }
    parts[0][lane][column] = acc_scale;
    parts[1][lane][column] = acc_bias;
    __syncthreads();
    if (lane == 0 && j < s.cols) {
      for (int k = 1; k < kLanes; ++k) {
        acc_scale += parts[0][k][column];
        acc_bias += parts[1][k][column];
      }
      if (dscale != nullptr) dscale[j] = static_cast<T>(acc_scale);
      if (dbias != nullptr) dbias[j] = static_cast<T>(acc_bias);
    }
    __syncthreads();  // the parts are read before the next tile writes them
  }
}

class LayerNormGradCuda {
 public:
  static constexpr pc::Signature signature{"1111?", "???"};
  using DTypes = Floats;
  LayerNormGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : epsilon_(attrs.f("epsilon")), s_(check_layer_norm_grad(attrs, in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const cudaStream_t stream = stream_of(ctx);
    dispatch(in(0).dtype(), DTypes{}, [&](auto t) {
      using T = decltype(t);
      const T *x = in(0).data<T>(), *mean = in(1).data<T>(), *var = in(2).data<T>();
      const T* dy = in(3).data<T>();
      if (out.has(0) && s_.rows > 0) {
        layer_norm_grad_kernel<<<blocks_for(s_.rows), kBlock, 0, stream>>>(
            x, mean, var, dy, in.has(4) ? in(4).data<T>() : nullptr, out(0).data<T>(), s_,
            epsilon_);
        check_launch();
      }
      if ((out.has(1) || out.has(2)) && s_.cols > 0) {
        layer_norm_columns_kernel<<<blocks_for((s_.cols + kColumns - 1) / kColumns),
                                    dim3(kColumns, kLanes), 0, stream>>>(
            x, mean, var, dy, out.has(1) ? out(1).data<T>() : nullptr,
            out.has(2) ? out(2).data<T>() : nullptr, s_, epsilon_);
        check_launch();
      }
    });
  }

 private:
  double epsilon_;
  Rows s_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<BatchNormCuda>("batch_norm_cuda"),
    pc::kernel<BatchNormGradCuda>("batch_norm_grad_cuda"),
    pc::kernel<LayerNormCuda>("layer_norm_cuda"),
    pc::kernel<LayerNormGradCuda>("layer_norm_grad_cuda"));

}  // namespace paddle_ops_nn
