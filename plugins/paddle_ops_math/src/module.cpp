// paddle_ops_math._C: the kernel table the core loads (see paddle_core/pybind.hpp), and the
// process-wide threading setup. The only file that includes pybind11; the kernels register
// themselves in their own files.
#include <cblas.h>
#include <dlfcn.h>
#include <link.h>
#include <omp.h>
#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <paddle_core/pybind.hpp>

namespace paddle_ops_math {
#ifdef PADDLE_OPS_MATH_WITH_CUDA
// Why cuBLAS (loaded at run time for the CUDA matmul kernels) cannot be used, or nullptr.
const char* cublas_unavailable_reason();
#endif

namespace {

// OpenBLAS hands us its parallel jobs and we run them on OpenMP's threads, so the process
// has one thread pool. Two pools (OpenBLAS's own and OpenMP's) spin against each other on a
// small machine: we measured 256^2 GEMMs 15-35x slower when BLAS calls and OpenMP loops
// alternate.
//
// Set in a child process made by fork(). GNU OpenMP cannot run a parallel region there once
// the parent has used its threads (the child waits forever for threads fork did not copy).
// The core runs a forked child's kernels on one thread; BLAS calls that still come with
// several jobs (NumPy's, on our pool) get threads of their own.
std::atomic<bool> forked{false};

// The jobs wait on one another, so all of them must run at once: a team with fewer threads
// than jobs would hang. OpenMP promises the full team only outside any parallel region, with
// dynamic adjustment off and within the thread limit (OMP_DYNAMIC, OMP_THREAD_LIMIT and
// OMP_MAX_ACTIVE_LEVELS may say otherwise), and not after fork; failing that, each job gets a
// thread of its own.
void run_blas_jobs(int sync, openblas_dojob_callback dojob, int numjobs, size_t jobdata_elsize,
                   void* jobdata, int dojob_data) {
  (void)sync;
  auto job = [&](int i) {
    dojob(i, static_cast<char*>(jobdata) + static_cast<size_t>(i) * jobdata_elsize, dojob_data);
  };
  if (!forked && !omp_in_parallel() && !omp_get_dynamic() && omp_get_max_active_levels() >= 1 &&
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

// Every other OpenBLAS already loaded in the process (NumPy's own, from its wheels; SciPy's; a
// system one) gets the same callback, so its jobs run on our pool too. Otherwise NumPy's GEMM
// leaves its own threads spinning (for about 0.1 s) after each call, on the cores our next run
// needs, and ours slows to a third when runs and NumPy work alternate. Returns the libraries
// now running on our pool. Setting a callback only swaps where OpenBLAS's jobs run: results
// are the same, and threadpoolctl's limits still apply (they set how many jobs there are).
const char* const kCallbackSetters[] = {
    "scipy_openblas_set_threads_callback_function64_",  // NumPy's wheels (scipy-openblas64)
    "scipy_openblas_set_threads_callback_function",     // SciPy's wheels, scipy-openblas32
    "openblas_set_threads_callback_function64_",        // OpenBLAS builds of other origins
    "openblas_set_threads_callback_function",
};

std::vector<std::string> share_blas_pool() {
  std::vector<std::string> loaded;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* out) {
        if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0')
          static_cast<std::vector<std::string>*>(out)->emplace_back(info->dlpi_name);
        return 0;
      },
      &loaded);
  std::vector<void*> setters;
  std::vector<std::string> shared;
  for (const std::string& path : loaded) {
    void* handle = dlopen(path.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (handle == nullptr) continue;
    for (const char* name : kCallbackSetters) {
      void* setter = dlsym(handle, name);  // (may resolve in a dependency: deduplicated below)
      Dl_info where;
      if (setter == nullptr || std::find(setters.begin(), setters.end(), setter) != setters.end() ||
          dladdr(setter, &where) == 0)
        continue;
      setters.push_back(setter);
      reinterpret_cast<void (*)(openblas_threads_callback)>(setter)(&run_blas_jobs);
      shared.emplace_back(where.dli_fname != nullptr ? where.dli_fname : path);
    }
    dlclose(handle);  // (RTLD_NOLOAD: only drops the reference taken above)
  }
  return shared;
}

}  // namespace
}  // namespace paddle_ops_math

PYBIND11_MODULE(_C, m) {
  m.doc() = "Compiled kernels of paddle-ops-math: CPU, and CUDA when built with a toolkit.";
  scipy_openblas_set_threads_callback_function(&paddle_ops_math::run_blas_jobs);
  pthread_atfork(nullptr, nullptr, [] { paddle_ops_math::forked = true; });
  paddle_core::export_kernels(m);  // every kernel src/*_cpu.cpp and src/*_cuda.cu registered
#ifdef PADDLE_OPS_MATH_WITH_CUDA
  paddle_core::export_cuda_build(m, PADDLE_OPS_MATH_CUDA_ARCHITECTURES);
#else
  paddle_core::export_cuda_build(m, nullptr);
#endif
  m.def(
      "cublas_unavailable_reason",
      []() -> pybind11::object {
#ifdef PADDLE_OPS_MATH_WITH_CUDA
        const char* reason = paddle_ops_math::cublas_unavailable_reason();
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
  m.def("share_blas_pool", [] {
          pybind11::list shared;
          for (const std::string& path : paddle_ops_math::share_blas_pool()) shared.append(path);
          return shared;
        },
        "Hand the jobs of every OpenBLAS loaded in the process (NumPy's, SciPy's) to the OpenMP "
        "pool the kernels use; returns the libraries that now run on it.");
}
