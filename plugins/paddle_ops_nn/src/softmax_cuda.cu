// CUDA kernels of softmax and the losses built on it: softmax, log_softmax, cross_entropy,
// softmax_with_cross_entropy, their gradients, and accuracy. Same checks, lane computations
// (softmax.hpp) and dtypes as softmax_cpu.cpp; one thread computes one lane, so results do not
// depend on the launch shape.
//
// Memory contract: as the CPU kernels', all on the CUDA device of the plan's stream. Hard
// labels stay on the device, unchecked on the host (that would synchronize): a label outside
// [0, C) that is not ignore_index gives a NaN loss and NaN gradients there instead of the CPU's
// error, and never an out-of-bounds read.
#include "cuda.cuh"
#include "softmax.hpp"

namespace paddle_ops_nn {
namespace {

// Grid-stride loop over the lanes: f(lane, offset of its first element).
template <class F> __device__ void for_each_lane(const Lanes& l, F&& f) {
  for (int64_t lane = first_index(); lane < l.count(); lane += index_step()) f(lane, l.base(lane));
}

template <bool Log, class T> __global__ void softmax_kernel(const T* x, T* y, Lanes l) {
  for_each_lane(l, [&](int64_t, int64_t b) {
    softmax_or_log_lane<Log>(x + b, y + b, l.classes, l.inner);
  });
}

template <bool Log, class T>
__global__ void softmax_grad_kernel(const T* y, const T* g, T* dx, Lanes l) {
  for_each_lane(l, [&](int64_t, int64_t b) {
    softmax_grad_lane<Log>(y + b, g + b, dx + b, l.classes, l.inner);
  });
}

template <class T>
__global__ void cross_entropy_kernel(const T* x, const T* soft, const int64_t* hard, T* loss,
                                     Lanes l, int64_t ignore_index) {
  for_each_lane(l, [&](int64_t lane, int64_t b) {
    loss[lane] = soft ? cross_entropy_soft(x + b, soft + b, l.classes)
                      : cross_entropy_hard(x + b, l.classes, hard[lane], ignore_index);
  });
}

template <class T>
__global__ void cross_entropy_grad_kernel(const T* x, const T* soft, const int64_t* hard,
                                          const T* g, T* dx, Lanes l, int64_t ignore_index) {
  for_each_lane(l, [&](int64_t lane, int64_t b) {
    if (soft) cross_entropy_grad_soft(x + b, soft + b, g[lane], dx + b, l.classes);
    else cross_entropy_grad_hard(x + b, g[lane], dx + b, l.classes, hard[lane], ignore_index);
  });
}

template <class T>
__global__ void softmax_cross_entropy_kernel(const T* x, const T* soft, const int64_t* hard,
                                             T* sm, T* loss, Lanes l, int64_t ignore_index) {
  for_each_lane(l, [&](int64_t lane, int64_t b) {
    loss[lane] = soft ? softmax_cross_entropy_soft(x + b, soft + b, sm + b, l.classes, l.inner)
                      : softmax_cross_entropy_hard(x + b, sm + b, l.classes, l.inner,
                                                   hard[lane], ignore_index);
  });
}

template <class T>
__global__ void softmax_cross_entropy_grad_kernel(const T* y, const T* soft, const int64_t* hard,
                                                  const T* g, const T* gs, T* dx, Lanes l,
                                                  int64_t ignore_index) {
  for_each_lane(l, [&](int64_t lane, int64_t b) {
    softmax_cross_entropy_grad_lane(y + b, soft ? soft + b : nullptr, hard ? hard + lane : nullptr,
                                    g ? g + lane : nullptr, gs ? gs + b : nullptr, dx + b,
                                    l.classes, l.inner, ignore_index);
  });
}

// correct += the rows whose label is among the k best scores (one row per thread).
template <class T>
__global__ void accuracy_count_kernel(const T* x, const int64_t* label, Lanes l, int64_t k,
                                      unsigned long long* correct) {
  unsigned long long mine = 0;
  for_each_lane(l, [&](int64_t lane, int64_t b) {
    mine += accuracy_hit(x + b, l.classes, label[lane], k);
  });
  if (mine != 0) atomicAdd(correct, mine);
}

// accuracy = correct / total (NaN with no rows), total = rows.
__global__ void accuracy_finish_kernel(const int64_t* correct, int64_t rows, float* accuracy,
                                       int64_t* total) {
  *accuracy = static_cast<float>(static_cast<double>(*correct) / static_cast<double>(rows));
  *total = rows;
}

// The work items of a lanes kernel: its lanes, none when they are empty.
int64_t lane_work(const Lanes& l) { return l.classes == 0 ? 0 : l.count(); }

// Label pointers of a loss kernel: soft (x's dtype) or hard (int64), the other null.
template <class T> const T* soft_labels(const LossAttrs& a, const Slots& in) {
  return a.soft ? in(1).data<T>() : nullptr;
}
inline const int64_t* hard_labels(const LossAttrs& a, const Slots& in) {
  return a.soft ? nullptr : in(1).data<int64_t>();
}

template <bool Log> class SoftmaxCuda {
 public:
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = Floats;
  SoftmaxCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : lanes_(check_softmax(attrs, in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    launch_floats(lane_work(lanes_), in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t s) {
      using T = decltype(t);
      softmax_kernel<Log><<<g.blocks, g.threads, 0, s>>>(
          in(0).data<T>(), out(0).data<T>(), lanes_);
    });
  }

 private:
  Lanes lanes_;
};

template <bool Log> class SoftmaxGradCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  SoftmaxGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : lanes_(check_softmax_grad(attrs, in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    launch_floats(lane_work(lanes_), in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t s) {
      using T = decltype(t);
      softmax_grad_kernel<Log><<<g.blocks, g.threads, 0, s>>>(
          in(0).data<T>(), in(1).data<T>(), out(0).data<T>(), lanes_);
    });
  }

 private:
  Lanes lanes_;
};

class CrossEntropyCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  CrossEntropyCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : a_(attrs), lanes_(check_cross_entropy(a_, in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    launch_floats(lane_work(lanes_), in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t s) {
      using T = decltype(t);
      cross_entropy_kernel<<<g.blocks, g.threads, 0, s>>>(
          in(0).data<T>(), soft_labels<T>(a_, in), hard_labels(a_, in), out(0).data<T>(),
          lanes_, a_.ignore_index);
    });
  }

 private:
  LossAttrs a_;
  Lanes lanes_;
};

class CrossEntropyGradCuda {
 public:
  static constexpr pc::Signature signature{"111", "1"};
  using DTypes = Floats;
  CrossEntropyGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : a_(attrs), lanes_(check_cross_entropy_grad(a_, in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    launch_floats(lane_work(lanes_), in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t s) {
      using T = decltype(t);
      cross_entropy_grad_kernel<<<g.blocks, g.threads, 0, s>>>(
          in(0).data<T>(), soft_labels<T>(a_, in), hard_labels(a_, in), in(2).data<T>(),
          out(0).data<T>(), lanes_, a_.ignore_index);
    });
  }

 private:
  LossAttrs a_;
  Lanes lanes_;
};

class SoftmaxWithCrossEntropyCuda {
 public:
  static constexpr pc::Signature signature{"11", "11"};
  using DTypes = Floats;
  SoftmaxWithCrossEntropyCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : a_(attrs), lanes_(check_softmax_with_cross_entropy(attrs, a_, in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    launch_floats(lane_work(lanes_), in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t s) {
      using T = decltype(t);
      softmax_cross_entropy_kernel<<<g.blocks, g.threads, 0, s>>>(
          in(0).data<T>(), soft_labels<T>(a_, in), hard_labels(a_, in), out(0).data<T>(),
          out(1).data<T>(), lanes_, a_.ignore_index);
    });
  }

 private:
  LossAttrs a_;
  Lanes lanes_;
};

class SoftmaxWithCrossEntropyGradCuda {
 public:
  static constexpr pc::Signature signature{"11??", "1"};
  using DTypes = Floats;
  SoftmaxWithCrossEntropyGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : a_(attrs), p_(check_softmax_with_cross_entropy_grad(attrs, a_, in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    launch_floats(lane_work(p_.lanes), in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t s) {
      using T = decltype(t);
      softmax_cross_entropy_grad_kernel<<<g.blocks, g.threads, 0, s>>>(
          in(0).data<T>(), soft_labels<T>(a_, in), hard_labels(a_, in),
          p_.has_loss_grad ? in(2).data<T>() : nullptr,
          p_.has_softmax_grad ? in(3).data<T>() : nullptr, out(0).data<T>(), p_.lanes,
          a_.ignore_index);
    });
  }

 private:
  LossAttrs a_;
  SwceGradPlan p_;
};

// A label outside [0, C) counts as a miss here (the CPU kernel fails on it).
class AccuracyCuda {
 public:
  static constexpr pc::Signature signature{"11", "111"};
  using DTypes = Floats;
  AccuracyCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : k_(attrs.i("k")), lanes_(check_accuracy(k_, in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const cudaStream_t stream = stream_of(ctx);
    int64_t* correct = out(1).data<int64_t>();
    if (cudaMemsetAsync(correct, 0, sizeof(int64_t), stream) != cudaSuccess)
      fail("CUDA memset failed: %s", cudaGetErrorString(cudaGetLastError()));
    static_assert(sizeof(unsigned long long) == sizeof(int64_t));
    launch_floats(lane_work(lanes_), in(0).dtype(), ctx, [&](auto t, Grid g, cudaStream_t s) {
      using T = decltype(t);
      accuracy_count_kernel<<<g.blocks, g.threads, 0, s>>>(
          in(0).data<T>(), in(1).data<int64_t>(), lanes_, k_,
          reinterpret_cast<unsigned long long*>(correct));
    });
    accuracy_finish_kernel<<<1, 1, 0, stream>>>(correct, lanes_.count(), out(0).data<float>(),
                                                out(2).data<int64_t>());
    check_launch();
  }

 private:
  int64_t k_;
  Lanes lanes_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<SoftmaxCuda<false>>("softmax_cuda"),
    pc::kernel<SoftmaxGradCuda<false>>("softmax_grad_cuda"),
    pc::kernel<SoftmaxCuda<true>>("log_softmax_cuda"),
    pc::kernel<SoftmaxGradCuda<true>>("log_softmax_grad_cuda"),
    pc::kernel<CrossEntropyCuda>("cross_entropy_cuda"),
    pc::kernel<CrossEntropyGradCuda>("cross_entropy_grad_cuda"),
    pc::kernel<SoftmaxWithCrossEntropyCuda>("softmax_with_cross_entropy_cuda"),
    pc::kernel<SoftmaxWithCrossEntropyGradCuda>("softmax_with_cross_entropy_grad_cuda"),
    pc::kernel<AccuracyCuda>("accuracy_cuda"));

}  // namespace paddle_ops_nn
