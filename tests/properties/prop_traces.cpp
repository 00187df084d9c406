// Properties of traces over random programs (issue 5): for every generated
// program, record -> write -> read -> replay finds no divergence and no
// violation, and writing is deterministic. Negative control: a trace recorded
// from a deliberately broken World (one that copies no inputs at replay) must
// diverge when the correct model replays it.
#include <doctest/doctest.h>

#include "properties/cudagraph_programs_rc.hpp"
#include "properties/trace_checks.hpp"
#include "tests/support/rc_doctest.hpp"

using namespace capsim;
using capsim::testing::rc_expect_failure;
using capsim::testing::rc_prop;
using capsim::testing::rc_require;

TEST_CASE("traces: record, write, read and replay match with no divergence") {
  rc_prop("round trip", [] {
    rc_require(check_trace_round_trip(within_contract(lower(*rc_gen::program())), Fault::kNone));
  });
  rc_expect_failure("a trace of a World that copies no inputs diverges from the model", [] {
    rc_require(
        check_trace_round_trip(within_contract(lower(*rc_gen::program())), Fault::kSkipCopyIn));
  });
}

TEST_CASE("traces: writing is deterministic") {
  rc_prop("two recordings give identical bytes",
          [] { rc_require(check_trace_bytes_deterministic(lower(*rc_gen::program()))); });
}
