// embedding (rows of a table picked by integer ids) and its gradient.
//
// Memory contract: ids are int64 or int32 of any shape; w is [V, D] float32 or float64; out is
// ids' shape + [D] with w's dtype; w_grad has w's shape (checked in prepare). Every id is
// checked against [0, V) before its row is read; padding_idx rows are zeros and get no
// gradient.
#include <algorithm>
#include <cstring>

#include "embedding.hpp"

namespace paddle_ops_nn {
namespace {

// out[..., :] = w[ids[...], :] (zeros for padding_idx).
class Embedding {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;
  Embedding(const Attrs& attrs, const Slots& in, const Slots& out)
      : padding_(attrs.i("padding_idx")), rows_(check_embedding(attrs, in, out)) {}

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Tensor ids = in(0), w = in(1);
    const int64_t n = ids.numel(), width = w.dim(1) * w.element_size();
    const char* table = w.data<char>();
    char* o = out(0).data<char>();
    dispatch(ids.dtype(), IdTypes{}, [&](auto t) {
      const auto* id = ids.data<decltype(t)>();
      for (int64_t i = 0; i < n; ++i) checked_id(id, i, rows_);  // all of them, first
      const int64_t grain = std::max<int64_t>(1, kGrain / std::max<int64_t>(1, w.dim(1)));
      parallel_rows(n, ctx.num_threads(), grain, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) {
          const int64_t row = static_cast<int64_t>(id[i]);
          if (row == padding_) {
            std::memset(o + i * width, 0, static_cast<size_t>(width));
          } else {
            std::memcpy(o + i * width, table + row * width, static_cast<size_t>(width));
          }
        }
      });
    });
  }

 private:
  int64_t padding_, rows_;
};

// w_grad = zeros of w's shape, with out_grad's rows added at their ids (not padding_idx's).
class EmbeddingGrad {
 public:
  static constexpr pc::Signature signature{"111", "1"};
  using DTypes = Floats;
  EmbeddingGrad(const Attrs& attrs, const Slots& in, const Slots& out)
      : padding_(attrs.i("padding_idx")), rows_(check_embedding_grad(attrs, in, out)) {}

  void run(const Slots& in, const Slots& out, const Context&) const {
    const Tensor ids = in(0), w = in(1), g = in(2);
    const int64_t n = ids.numel(), d = w.dim(1);
    dispatch(w.dtype(), Floats{}, [&](auto t) {
      using T = decltype(t);
      const T* grad = g.data<T>();
      T* dw = out(0).data<T>();
      std::fill(dw, dw + w.numel(), T(0));
      dispatch(ids.dtype(), IdTypes{}, [&](auto it) {
        const auto* id = ids.data<decltype(it)>();
        for (int64_t i = 0; i < n; ++i) {
          const int64_t row = checked_id(id, i, rows_);
          if (row == padding_) continue;
          for (int64_t k = 0; k < d; ++k) dw[row * d + k] += grad[i * d + k];
        }
      });
    });
  }

 private:
  int64_t padding_, rows_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<Embedding>("embedding"),
    pc::kernel<EmbeddingGrad>("embedding_grad"));

}  // namespace paddle_ops_nn
