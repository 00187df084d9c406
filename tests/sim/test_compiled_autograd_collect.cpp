// Placeholder: tests of compiled autograd's Phase A (issue 4), being written.
#include <doctest/doctest.h>
