// CUDA kernels of embedding and embedding_grad. Same checks (embedding.hpp) and dtypes as
// embedding_cpu.cpp.
//
// Memory contract: as the CPU kernels', all on the CUDA device of the plan's stream. Every id
// is checked before a row is read: run copies ids to the host, waits for them and checks each
// there (the CPU's KernelError, naming the first id out of range), at the cost of one wait on
// the stream. embedding_grad then groups the positions of each id on the host (a stable sort),
// copies that grouping to scratch memory, and gives each (id, column) of w_grad one thread that
// adds up out_grad's rows in the order of their positions: the CPU's additions in the CPU's
// order, without atomics.
#include <algorithm>
#include <vector>

#include "cuda.cuh"
#include "embedding.hpp"

namespace paddle_ops_nn {
namespace {

// ids as int64 on the host, each checked against [0, rows).
std::vector<int64_t> host_ids(const Tensor& ids, int64_t rows, cudaStream_t stream) {
  const int64_t n = ids.numel();
  std::vector<int64_t> host(static_cast<size_t>(n));
  if (n == 0) return host;
  std::vector<char> raw(static_cast<size_t>(ids.nbytes()));
  check_cuda(cudaMemcpyAsync(raw.data(), ids.data<void>(), raw.size(), cudaMemcpyDeviceToHost,
                             stream),
             "copy");
  check_cuda(cudaStreamSynchronize(stream), "copy");
  dispatch(ids.dtype(), IdTypes{}, [&](auto t) {
    using I = decltype(t);
    const I* id = reinterpret_cast<const I*>(raw.data());
    for (int64_t i = 0; i < n; ++i) host[i] = checked_id(id, i, rows);
  });
  return host;
}

template <class T, class I>
__global__ void embedding_kernel(const I* ids, const T* w, T* out, int64_t n, int64_t width,
                                 int64_t padding) {
  for (int64_t e = first_index(); e < n; e += index_step()) {
    const int64_t row = static_cast<int64_t>(ids[e / width]);
    out[e] = row == padding ? T(0) : w[row * width + e % width];
  }
}

// out[..., :] = w[ids[...], :] (zeros for padding_idx), one thread per element of out.
class EmbeddingCuda {
 public:
  static constexpr pc::Signature signature{"11", "1"};
  using DTypes = Floats;  // w's (kernel_dtype_input), launch_floats
  EmbeddingCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : padding_(attrs.i("padding_idx")), rows_(check_embedding(attrs, in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const Tensor ids = in(0), w = in(1);
    host_ids(ids, rows_, stream_of(ctx));  // all of them, before any row is read
    const int64_t n = out(0).numel(), width = w.dim(1);
    launch_floats(n, w.dtype(), ctx, [&](auto t, Grid g, cudaStream_t stream) {
      using T = decltype(t);
      dispatch(ids.dtype(), IdTypes{}, [&](auto it) {
        using I = decltype(it);
        embedding_kernel<<<g.blocks, g.threads, 0, stream>>>(
            ids.data<I>(), w.data<T>(), out(0).data<T>(), n, width, padding_);
      });
    });
  }

 private:
  int64_t padding_, rows_;
};

// w_grad[rows[s], k] = the sum of out_grad[order[p], k] over p in [starts[s], starts[s + 1]).
template <class T>
__global__ void embedding_grad_kernel(const T* g, const int64_t* order, const int64_t* starts,
                                      const int64_t* rows, T* dw, int64_t n, int64_t width) {
  for (int64_t e = first_index(); e < n; e += index_step()) {
    const int64_t s = e / width, k = e % width;
    T sum = 0;
    for (int64_t p = starts[s]; p < starts[s + 1]; ++p) sum += g[order[p] * width + k];
    dw[rows[s] * width + k] = sum;
  }
}

// w_grad = zeros of w's shape, with out_grad's rows added at their ids (not padding_idx's).
class EmbeddingGradCuda {
 public:
  static constexpr pc::Signature signature{"111", "1"};
  using DTypes = Floats;  // w's (kernel_dtype_input), launch_floats
  EmbeddingGradCuda(const Attrs& attrs, const Slots& in, const Slots& out)
      : padding_(attrs.i("padding_idx")), rows_(check_embedding_grad(attrs, in, out)) {
    expect_cuda(in, out);
  }

  void run(const Slots& in, const Slots& out, const Context& ctx) const {
    const cudaStream_t stream = stream_of(ctx);
    const Tensor w = in(1), dw = out(0);
    const std::vector<int64_t> ids = host_ids(in(0), rows_, stream);
    zero_async(dw.data<void>(), dw.nbytes(), stream);
    const int64_t width = w.dim(1);
    if (width == 0) return;
    // The positions of each id, ids in increasing order and each id's positions in theirs;
    // padding_idx's left out. Uploaded as one buffer: order, then starts, then rows.
    std::vector<int64_t> order;
    order.reserve(ids.size());
    for (int64_t i = 0; i < static_cast<int64_t>(ids.size()); ++i)
      if (ids[i] != padding_) order.push_back(i);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return ids[a] < ids[b]; });
    std::vector<int64_t> starts, rows;
    for (size_t p = 0; p < order.size(); ++p)
      if (p == 0 || ids[order[p]] != ids[order[p - 1]]) {
        starts.push_back(static_cast<int64_t>(p));
        rows.push_back(ids[order[p]]);
      }
    if (rows.empty()) return;
    starts.push_back(static_cast<int64_t>(order.size()));
    std::vector<int64_t> grouping(order);
    grouping.insert(grouping.end(), starts.begin(), starts.end());
    grouping.insert(grouping.end(), rows.begin(), rows.end());
    const Scratch scratch(grouping.size() * sizeof(int64_t), stream);
    int64_t* device = scratch.get<int64_t>();
    check_cuda(cudaMemcpyAsync(device, grouping.data(), grouping.size() * sizeof(int64_t),
                               cudaMemcpyHostToDevice, stream),
               "copy");
    const int64_t n = static_cast<int64_t>(rows.size()) * width;
    const int64_t* d_starts = device + order.size();
    const int64_t* d_rows = d_starts + starts.size();
    launch_floats(n, w.dtype(), ctx, [&](auto t, Grid g, cudaStream_t s) {
      using T = decltype(t);
      embedding_grad_kernel<<<g.blocks, g.threads, 0, s>>>(in(2).data<T>(), device, d_starts,
                                                            d_rows, dw.data<T>(), n, width);
    });
  }

 private:
  int64_t padding_, rows_;
};

}  // namespace

PADDLE_CORE_REGISTER_KERNELS(
    pc::kernel<EmbeddingCuda>("embedding_cuda"),
    pc::kernel<EmbeddingGradCuda>("embedding_grad_cuda"));

}  // namespace paddle_ops_nn
