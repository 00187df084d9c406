// Placeholder: the eager autograd engine (issue 4), being written.
#pragma once
