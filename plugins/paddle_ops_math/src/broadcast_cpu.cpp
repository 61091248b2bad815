// The iteration drivers of elementwise kernels (see "elementwise loops" in common.hpp): thread
// splitting and dimension walking, compiled once for all ops and dtypes.
#include "common.hpp"

namespace paddle_ops_math {

namespace {
inline const char* at(const void* base, int64_t elements, int size) {
  return static_cast<const char*>(base) + elements * size;
}
inline char* at(void* base, int64_t elements, int size) {
  return static_cast<char*>(base) + elements * size;
}
}  // namespace

void run_broadcast(const Broadcast& p, const void* a, int as, const void* b, int bs, void* out,
                   int os, RowFn row, int32_t threads) {
  switch (p.kind) {
    case Broadcast::kSame:
      parallel_for(p.numel, threads, kGrain, [&](int64_t lo, int64_t hi) {
        row(at(a, lo, as), 1, at(b, lo, bs), 1, at(out, lo, os), hi - lo);
      });
      return;
    case Broadcast::kScalarA:
      parallel_for(p.numel, threads, kGrain, [&](int64_t lo, int64_t hi) {
        row(a, 0, at(b, lo, bs), 1, at(out, lo, os), hi - lo);
      });
      return;
    case Broadcast::kScalarB:
      parallel_for(p.numel, threads, kGrain, [&](int64_t lo, int64_t hi) {
        row(at(a, lo, as), 1, b, 0, at(out, lo, os), hi - lo);
      });
      return;
    case Broadcast::kGeneral:
      break;
  }
  // General: rows along the innermost merged dim; the outer dims walk with an index counter.
  const int32_t nd = static_cast<int32_t>(p.dims.size());
  const int64_t inner = p.dims[nd - 1], ia = p.stride_a[nd - 1], ib = p.stride_b[nd - 1];
  const int64_t rows = p.numel / inner;
  const int64_t grain = std::max<int64_t>(1, kGrain / inner);
  parallel_rows(rows, threads, grain, [&](int64_t lo, int64_t hi) {
    std::vector<int64_t> idx(nd, 0);  // outer coordinates of the current row
    int64_t oa = 0, ob = 0;             // input offsets (elements) of the current row
    int64_t rem = lo;
    for (int32_t k = nd - 2; k >= 0; --k) {
      idx[k] = rem % p.dims[k];
      rem /= p.dims[k];
      oa += idx[k] * p.stride_a[k];
      ob += idx[k] * p.stride_b[k];
    }
    for (int64_t r = lo; r < hi; ++r) {
      row(at(a, oa, as), ia, at(b, ob, bs), ib, at(out, r * inner, os), inner);
      for (int32_t k = nd - 2; k >= 0; --k) {  // advance to the next row
        oa += p.stride_a[k];
        ob += p.stride_b[k];
        if (++idx[k] < p.dims[k]) break;
        oa -= p.stride_a[k] * p.dims[k];
        ob -= p.stride_b[k] * p.dims[k];
        idx[k] = 0;
      }
    }
  });
}

void run_elementwise3(int64_t n, const void* x, const void* y, const void* g, void* out, int size,
                      Row3Fn row, int32_t threads) {
  parallel_for(n, threads, kGrain, [&](int64_t lo, int64_t hi) {
    row(at(x, lo, size), at(y, lo, size), at(g, lo, size), at(out, lo, size), hi - lo);
  });
}

}  // namespace paddle_ops_math
