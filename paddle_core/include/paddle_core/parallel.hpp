// paddle_core/parallel.hpp: splitting a kernel's loop across the threads the core allows it.
//
// Needs OpenMP (link OpenMP::OpenMP_CXX, as paddle_coreConfig.cmake's users do); kernel.hpp
// does not include it, so kernels that never thread do not need OpenMP. The thread count comes
// from the run's context (Context::num_threads), which the core sets from
// Executor(num_threads=...) / PADDLE_CORE_NUM_THREADS.
#ifndef PADDLE_CORE_PARALLEL_HPP_
#define PADDLE_CORE_PARALLEL_HPP_

// nvcc compiles the host side of .cu files without OpenMP; they include this header only
// through headers shared with the CPU kernels, and call none of it.
#if !defined(_OPENMP) && !defined(__CUDACC__)
#error "paddle_core/parallel.hpp needs OpenMP: find_package(OpenMP) and link OpenMP::OpenMP_CXX"
#endif

#include <omp.h>

#include <algorithm>
#include <cstdint>
#include <utility>

namespace paddle_core {

// Below this many elements per thread, splitting a memory-bound loop costs more than it saves.
constexpr int64_t kGrain = 1 << 15;

// Run f(begin, end) over [0, n) split into contiguous chunks across up to `threads` OpenMP
// threads (inline when the work is too small to split). Chunk bounds are multiples of `align`
// items, and depend only on n and the thread count (deterministic results per count).
// The single-chunk path calls f through a function of its own, as OpenMP's outlined region
// does on the threaded path: inlined into the kernel's body instead, GCC left some loops
// scalar that it vectorises there (clip ran 4x slower on one thread than its half on two).
template <class F> [[gnu::noinline]] void run_chunk(F& f, int64_t begin, int64_t end) {
  f(begin, end);
}

template <class F>
void parallel_chunks(int64_t n, int32_t threads, int64_t grain, int64_t align, F&& f) {
  int64_t chunks = std::min<int64_t>(threads, n / std::max<int64_t>(grain, 1));
  if (chunks <= 1) {
    if (n > 0) run_chunk(f, int64_t{0}, n);
    return;
  }
#pragma omp parallel num_threads(static_cast<int>(chunks))
  {
    const int64_t t = omp_get_thread_num(), nt = omp_get_num_threads();
    // The t-th of nt near-equal shares of [0, n), rounded down to `align` (no overflow: n * t
    // is never formed).
    auto bound = [&](int64_t k) {
      if (k >= nt) return n;
      return (n / nt * k + n % nt * k / nt) / align * align;
    };
    const int64_t begin = bound(t), end = bound(t + 1);
    if (begin < end) f(begin, end);
  }
}

// Items that are elements, or columns that every step of a loop writes across: chunk bounds
// are multiples of 64 items, so even with 1-byte outputs threads never share a cache line of
// the output (false sharing).
template <class F> void parallel_for(int64_t n, int32_t threads, int64_t grain, F&& f) {
  parallel_chunks(n, threads, grain, 64, std::forward<F>(f));
}

// Items that are rows: each writes a stretch of the output of its own (a row, a plane, one
// value written once), so two threads meet at most on the line between their chunks, once.
// The chunks need no alignment, and a loop over a few large rows (softmax's 48 lanes of 16K
// classes, a pooling's 32 planes) still splits evenly across the threads.
template <class F> void parallel_rows(int64_t n, int32_t threads, int64_t grain, F&& f) {
  parallel_chunks(n, threads, grain, 1, std::forward<F>(f));
}

}  // namespace paddle_core

#endif  // PADDLE_CORE_PARALLEL_HPP_
