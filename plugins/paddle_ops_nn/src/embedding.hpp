// The prepare-time checks of embedding and embedding_grad and the check of each id, shared by
// the CPU (embedding_cpu.cpp) and CUDA (embedding_cuda.cu) kernels: both devices accept exactly
// the same tensors and refuse the same ids, with the same message.
#ifndef PADDLE_OPS_NN_EMBEDDING_HPP_
#define PADDLE_OPS_NN_EMBEDDING_HPP_

#include "common.hpp"

namespace paddle_ops_nn {

using IdTypes = Types<int64_t, int32_t>;

// Checks common to both kernels: ids integer, w a matrix, padding_idx a row or -1; returns the
// row count V.
inline int64_t embedding_rows(const Tensor& ids, const Tensor& w, int64_t padding_idx) {
  dispatch(ids.dtype(), IdTypes{}, [](auto) {});
  if (w.ndim() != 2) fail("w must be a [V, D] matrix, got %s", w.describe().c_str());
  if (padding_idx < -1 || padding_idx >= w.dim(0))
    fail("padding_idx %lld is outside [0, %lld) (or -1 for none)",
         static_cast<long long>(padding_idx), static_cast<long long>(w.dim(0)));
  return w.dim(0);
}

// embedding(ids, w) -> out, ids' shape + [D]; returns V.
inline int64_t check_embedding(const Attrs& attrs, const Slots& in, const Slots& out) {
  const Tensor ids = in(0), w = in(1), o = out(0);
  const int64_t rows = embedding_rows(ids, w, attrs.i("padding_idx"));
  dispatch(w.dtype(), Floats{}, [](auto) {});
  expect_same_dtype(w, o, "w and out");
  if (o.ndim() != ids.ndim() + 1 || o.numel() != ids.numel() * w.dim(1))
    fail("out %s must be ids' shape + [%lld]", o.describe().c_str(),
         static_cast<long long>(w.dim(1)));
  return rows;
}

// embedding_grad(ids, w, out_grad) -> w_grad, w's shape; returns V.
inline int64_t check_embedding_grad(const Attrs& attrs, const Slots& in, const Slots& out) {
  const Tensor ids = in(0), w = in(1), g = in(2), dw = out(0);
  const int64_t rows = embedding_rows(ids, w, attrs.i("padding_idx"));
  expect_same_shape(w, dw, "w and w_grad");
  expect_same_dtype(w, dw, "w and w_grad");
  expect_same_dtype(w, g, "w and out_grad");
  if (g.numel() != ids.numel() * w.dim(1))
    fail("out_grad %s must be ids' shape + [%lld]", g.describe().c_str(),
         static_cast<long long>(w.dim(1)));
  return rows;
}

// ids[i] as a row of w, failing unless it is in [0, rows).
template <class I> int64_t checked_id(const I* ids, int64_t i, int64_t rows) {
  const int64_t id = static_cast<int64_t>(ids[i]);
  if (id < 0 || id >= rows)
    fail("id %lld (at flat position %lld) is outside [0, %lld), the rows of w",
         static_cast<long long>(id), static_cast<long long>(i), static_cast<long long>(rows));
  return id;
}

}  // namespace paddle_ops_nn

#endif  // PADDLE_OPS_NN_EMBEDDING_HPP_
