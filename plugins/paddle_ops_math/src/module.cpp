// paddle_ops_math._C: the kernel table the core loads (see paddle_core/pybind.hpp), and the
// process-wide threading setup. The only file that includes pybind11.
#include <cblas.h>
#include <omp.h>

#include <string>
#include <thread>
#include <vector>

#include <paddle_core/pybind.hpp>

namespace pom {
// One family per source file (src/<family>_cpu.cpp).
const paddle_core::Family& binary_kernels();
const paddle_core::Family& binary_grad_kernels();
const paddle_core::Family& compare_kernels();
const paddle_core::Family& fill_kernels();
const paddle_core::Family& index_kernels();
const paddle_core::Family& logic_kernels();
const paddle_core::Family& matmul_kernels();
const paddle_core::Family& pad_kernels();
const paddle_core::Family& argreduce_kernels();
const paddle_core::Family& extreme_kernels();
const paddle_core::Family& reduce_kernels();
const paddle_core::Family& reduce_grad_kernels();
const paddle_core::Family& scan_kernels();
const paddle_core::Family& scatter_kernels();
const paddle_core::Family& shape_kernels();
const paddle_core::Family& sort_kernels();
const paddle_core::Family& unary_kernels();
#ifdef PADDLE_OPS_MATH_WITH_CUDA
// One family per CUDA kernel source file (src/<family>_cuda.cu; cublas_cuda.cu loads cuBLAS).
const paddle_core::Family& binary_cuda_kernels();
const paddle_core::Family& binary_grad_cuda_kernels();
const paddle_core::Family& compare_cuda_kernels();
const paddle_core::Family& fill_cuda_kernels();
const paddle_core::Family& index_cuda_kernels();
const paddle_core::Family& logic_cuda_kernels();
const paddle_core::Family& matmul_cuda_kernels();
const paddle_core::Family& pad_cuda_kernels();
const paddle_core::Family& reduce_cuda_kernels();
const paddle_core::Family& scan_cuda_kernels();
const paddle_core::Family& scatter_cuda_kernels();
const paddle_core::Family& shape_cuda_kernels();
const paddle_core::Family& unary_cuda_kernels();
const paddle_core::Family& unary_grad_cuda_kernels();
// Why cuBLAS (loaded at run time for the CUDA matmul kernels) cannot be used, or nullptr.
const char* cublas_unavailable_reason();
#endif

namespace {

// OpenBLAS hands us its parallel jobs and we run them on OpenMP's threads, so the process
// has one thread pool. Two pools (OpenBLAS's own and OpenMP's) spin against each other on a
// small machine: we measured 256^2 GEMMs 15-35x slower when BLAS calls and OpenMP loops
// alternate.
//
// The jobs wait on one another, so all of them must run at once: a team with fewer threads
// than jobs would hang. OpenMP promises the full team only outside any parallel region, with
// dynamic adjustment off and within the thread limit (OMP_DYNAMIC, OMP_THREAD_LIMIT and
// OMP_MAX_ACTIVE_LEVELS may say otherwise); failing that, each job gets a thread of its own.
void run_blas_jobs(int sync, openblas_dojob_callback dojob, int numjobs, size_t jobdata_elsize,
                   void* jobdata, int dojob_data) {
  (void)sync;
  auto job = [&](int i) {
    dojob(i, static_cast<char*>(jobdata) + static_cast<size_t>(i) * jobdata_elsize, dojob_data);
  };
  if (!omp_in_parallel() && !omp_get_dynamic() && omp_get_max_active_levels() >= 1 &&
      numjobs <= omp_get_thread_limit()) {
#pragma omp parallel for num_threads(numjobs) schedule(static)
    for (int i = 0; i < numjobs; ++i) job(i);
    return;
  }
  std::vector<std::thread> threads;
  threads.reserve(static_cast<size_t>(numjobs));
  for (int i = 1; i < numjobs; ++i) threads.emplace_back(job, i);
  job(0);
  for (std::thread& t : threads) t.join();
}

}  // namespace
}  // namespace pom

PYBIND11_MODULE(_C, m) {
  m.doc() = "Compiled kernels of paddle-ops-math: CPU, and CUDA when built with a toolkit.";
  scipy_openblas_set_threads_callback_function(&pom::run_blas_jobs);
  paddle_core::export_kernels(
      m, {&pom::argreduce_kernels(), &pom::binary_kernels(), &pom::binary_grad_kernels(),
          &pom::compare_kernels(), &pom::extreme_kernels(), &pom::fill_kernels(),
          &pom::index_kernels(), &pom::logic_kernels(), &pom::matmul_kernels(),
          &pom::pad_kernels(), &pom::reduce_kernels(), &pom::reduce_grad_kernels(),
          &pom::scan_kernels(), &pom::scatter_kernels(), &pom::shape_kernels(),
          &pom::sort_kernels(), &pom::unary_kernels(),
#ifdef PADDLE_OPS_MATH_WITH_CUDA
          &pom::binary_cuda_kernels(), &pom::binary_grad_cuda_kernels(),
          &pom::compare_cuda_kernels(), &pom::fill_cuda_kernels(), &pom::index_cuda_kernels(),
          &pom::logic_cuda_kernels(), &pom::matmul_cuda_kernels(), &pom::pad_cuda_kernels(),
          &pom::reduce_cuda_kernels(), &pom::scan_cuda_kernels(), &pom::scatter_cuda_kernels(),
          &pom::shape_cuda_kernels(), &pom::unary_cuda_kernels(), &pom::unary_grad_cuda_kernels(),
#endif
      });
#ifdef PADDLE_OPS_MATH_WITH_CUDA
  paddle_core::export_cuda_build(m, PADDLE_OPS_MATH_CUDA_ARCHITECTURES);
#else
  paddle_core::export_cuda_build(m, nullptr);
#endif
  m.def(
      "cublas_unavailable_reason",
      []() -> pybind11::object {
#ifdef PADDLE_OPS_MATH_WITH_CUDA
        const char* reason = pom::cublas_unavailable_reason();
        if (reason == nullptr) return pybind11::none();
        return pybind11::str(reason);
#else
        return pybind11::str("paddle-ops-math was built without CUDA kernels");
#endif
      },
      "Why the CUDA matmul kernels cannot load cuBLAS (what to install), or None when they can. "
      "Loads it on the first call.");
  m.def(
      "threading_info",
      []() {
        pybind11::dict info;
        info["openmp_max_threads"] = omp_get_max_threads();
        info["openblas_threads"] = scipy_openblas_get_num_threads();
        info["openblas_config"] = scipy_openblas_get_config();
        info["blas_runs_on_openmp"] = true;
        return info;
      },
      "How the kernels thread: one OpenMP pool, which OpenBLAS runs its jobs on.");
}
