// Properties of the cudagraph tree manager (placeholder; see issue 3).
#include <doctest/doctest.h>
