#pragma once
// <immintrin.h> for the optimizers' vector paths, where the build targets AVX-512, AVX2 or F16C.
// GCC 12 warns about the self-initialised `__Y = __Y` of its own _mm512_undefined_*() wherever an
// AVX-512 intrinsic is inlined (a false positive); the warning's location is the header, so the
// pragma around the include silences it there and nowhere else.
#if defined(__AVX512F__) || defined(__AVX2__) || defined(__F16C__)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
#include <immintrin.h>
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
#endif
