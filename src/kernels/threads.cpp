#include "autotrain/kernels/threads.hpp"

#include <cblas.h>
#include <omp.h>

#include "autotrain/core/error.hpp"

namespace autotrain::kernels {

void set_num_threads(int n) {
  AT_CHECK(n >= 1, "threads must be >= 1, got ", n);
  omp_set_num_threads(n);
  openblas_set_num_threads(n);
}

int num_threads() {
  return omp_get_max_threads();
}

const char* blas_threading() {
  switch (openblas_get_parallel()) {
    case 0:
      return "sequential";
    case 1:
      return "pthreads";
    default:
      return "openmp";
  }
}

}  // namespace autotrain::kernels
