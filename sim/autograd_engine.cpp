#include "sim/autograd_engine.hpp"
