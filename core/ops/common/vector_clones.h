// PLEXUS_VECTOR_CLONES: compiles an elementwise loop three times, for AVX-512
// (x86-64-v4), AVX2 (x86-64-v3) and the SSE2 baseline, and lets the loader pick the widest
// this CPU runs (GCC's target_clones, an ifunc). The library itself targets the baseline,
// so without this the optimizer and activation loops run 4 floats at a time on machines
// with 16-float vectors.
// Results do not depend on the clone: every clone performs the same correctly rounded IEEE
// operations in the same order (no reassociation, and no contraction into FMA: the core
// builds with -ffp-contract=off, core/CMakeLists.txt), only more of them per instruction.
// No clones where they cannot work, so there the loops build for the baseline only, with
// the same results: under clang (the fuzzers' build and the function-length check's parser),
// which does not take target_clones on function templates, and under ThreadSanitizer, whose
// instrumented ifunc resolvers run before its runtime is set up and crash at load time.
#pragma once

#if defined(__clang__) || defined(__SANITIZE_THREAD__)
#define PLEXUS_VECTOR_CLONES
#else
#define PLEXUS_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
