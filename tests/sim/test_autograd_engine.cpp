// Placeholder: tests of the eager autograd engine (issue 4), being written.
#include <doctest/doctest.h>
