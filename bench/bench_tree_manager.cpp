// Tree-manager benchmarks (placeholder; see issue 3).
#include <benchmark/benchmark.h>
