#include "sim/compiled_autograd_collect.hpp"
