// example_cos and example_cos_grad on CPU.
//
// A kernel class is built once per prepared program, from the op's attrs and its tensors'
// shapes and dtypes (no data yet): check everything there, so run() only computes. Failed
// checks (pc::expect_*, pc::fail) become a KernelError naming the op.
#include "cos.hpp"

namespace pc = paddle_core;

namespace {

class Cos {
 public:
  // The ops this kernel fits, checked against the manifest when the module loads: one
  // input and one output slot of a tensor each ('1'), float32 or float64.
  static constexpr pc::Signature signature{"1", "1"};
  using DTypes = pc::Floats;
  Cos(const pc::Attrs& attrs, const pc::Slots& in, const pc::Slots& out)
      : scale_(attrs.f("scale")) {
    pc::expect_same_dtype(in(0), out(0), "x and out");
    pc::expect_same_shape(in(0), out(0), "x and out");
    // compute<float> or compute<double>; any other dtype fails here, naming it.
    fn_ = pc::dispatch(in(0).dtype(), DTypes{},
                       [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const pc::Slots& in, const pc::Slots& out, const pc::Context&) const {
    fn_(in(0), out(0), scale_);
  }

 private:
  using Fn = void (*)(const pc::Tensor& x, const pc::Tensor& out, double scale);
  template <class T> static void compute(const pc::Tensor& x, const pc::Tensor& out, double scale) {
    const T* xs = x.data<T>();
    T* ys = out.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      ys[i] = paddle_ops_example::cos(xs[i], static_cast<T>(scale));
  }
  double scale_;
  Fn fn_;
};

class CosGrad {
 public:
  static constexpr pc::Signature signature{"11", "1"};  // x, out_grad; x_grad
  using DTypes = pc::Floats;
  CosGrad(const pc::Attrs& attrs, const pc::Slots& in, const pc::Slots& out)
      : scale_(attrs.f("scale")) {
    pc::expect_same_dtype(in(0), in(1), "x and out_grad");
    pc::expect_same_dtype(in(0), out(0), "x and x_grad");
    pc::expect_same_shape(in(0), in(1), "x and out_grad");
    pc::expect_same_shape(in(0), out(0), "x and x_grad");
    fn_ = pc::dispatch(in(0).dtype(), DTypes{},
                       [](auto t) -> Fn { return &compute<decltype(t)>; });
  }

  void run(const pc::Slots& in, const pc::Slots& out, const pc::Context&) const {
    fn_(in(0), in(1), out(0), scale_);
  }

 private:
  using Fn = void (*)(const pc::Tensor& x, const pc::Tensor& g, const pc::Tensor& dx,
                      double scale);
  template <class T>
  static void compute(const pc::Tensor& x, const pc::Tensor& g, const pc::Tensor& dx,
                      double scale) {
    const T* xs = x.data<T>();
    const T* gs = g.data<T>();
    T* dxs = dx.data<T>();
    for (int64_t i = 0, n = x.numel(); i < n; ++i)
      dxs[i] = paddle_ops_example::cos_grad(xs[i], gs[i], static_cast<T>(scale));
  }
  double scale_;
  Fn fn_;
};

}  // namespace

// The kernels of this file, under the names the manifest gives them.
PADDLE_CORE_REGISTER_KERNELS(pc::kernel<Cos>("example_cos"),
                             pc::kernel<CosGrad>("example_cos_grad"));
