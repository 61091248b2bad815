// paddle_core/parallel.hpp: splitting a kernel's loop across the threads the core allows it.
//
// Needs OpenMP (link OpenMP::OpenMP_CXX, as paddle_coreConfig.cmake's users do); kernel.hpp
// does not include it, so kernels that never thread do not need OpenMP. The thread count comes
// from the run's context (Context::num_threads), which the core sets from
// Executor(num_threads=...) / PADDLE_CORE_NUM_THREADS.
#ifndef PADDLE_CORE_PARALLEL_HPP_
#define PADDLE_CORE_PARALLEL_HPP_

#include <omp.h>

#include <algorithm>
#include <cstdint>

namespace paddle_core {

// Below this many elements per thread, splitting a memory-bound loop costs more than it saves.
constexpr int64_t kGrain = 1 << 15;

// Run f(begin, end) over [0, n) split into contiguous chunks across up to `threads` OpenMP
// threads (inline when the work is too small to split). Chunk bounds are multiples of 64
// elements, so even with 1-byte outputs threads never share a cache line of the output, and a
// chunk's bounds depend only on n and the thread count (deterministic results per count).
template <class F> void parallel_for(int64_t n, int32_t threads, int64_t grain, F&& f) {
  int64_t chunks = std::min<int64_t>(threads, n / std::max<int64_t>(grain, 1));
  if (chunks <= 1) {
    if (n > 0) f(int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(static_cast<int>(chunks))
  {
    int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    int64_t per = ((n + nt - 1) / nt + 63) / 64 * 64;
    int64_t begin = std::min(n, t * per), end = std::min(n, begin + per);
    if (begin < end) f(begin, end);
  }
}

}  // namespace paddle_core

#endif  // PADDLE_CORE_PARALLEL_HPP_
