#pragma once
// One thread count for our OpenMP loops and OpenBLAS. With the openblas-openmp build both use
// the same OpenMP pool; with the pthread build OpenBLAS keeps its own pool of the same size.

namespace autotrain::kernels {

// Sets the threads used by every kernel (OpenMP) and by BLAS. n must be >= 1.
void set_num_threads(int n);
int num_threads();

// "openmp", "pthreads" or "sequential": how the OpenBLAS loaded at run time was built.
const char* blas_threading();

}  // namespace autotrain::kernels
