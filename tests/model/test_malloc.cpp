// The executables' allocator (CMakeLists.txt, capsim_malloc): when the build
// found mimalloc, malloc and operator new of this binary must come from it,
// not from glibc. Linking the shared library overrides them only when it
// comes before the C library in the lookup order, so this is checked, not
// assumed.
#include <doctest/doctest.h>

#include <cstdlib>
#include <memory>

#ifdef CAPSIM_MIMALLOC
#include <mimalloc.h>
#endif

TEST_CASE("malloc: the executables allocate through mimalloc when the build links it") {
#ifdef CAPSIM_MIMALLOC
  void* p = std::malloc(64);
  REQUIRE(p != nullptr);
  CHECK(mi_is_in_heap_region(p));
  std::free(p);
  const auto q = std::make_unique<int[]>(1000);
  CHECK(mi_is_in_heap_region(q.get()));
#else
  MESSAGE("built without mimalloc (a sanitizer build, CAPSIM_MIMALLOC=OFF or no libmimalloc-dev)");
#endif
}
