// Placeholder: compiled autograd's Phase A (issue 4), being written.
#pragma once
