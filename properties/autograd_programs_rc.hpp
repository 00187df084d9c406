// RapidCheck generators of AutogradPrograms (autograd_programs.hpp).
//
// Header-only, like cudagraph_programs_rc.hpp. Steps shrink towards fewer and
// simpler ones (mul first), leaves towards one.
#pragma once

#include <rapidcheck.h>

#include "properties/autograd_programs.hpp"

namespace capsim::rc_gen {

inline rc::Gen<AutogradProgram> autograd_program() {
  return rc::gen::build<AutogradProgram>(
      rc::gen::set(&AutogradProgram::leaves, rc::gen::inRange(1, 4)),
      rc::gen::set(
          &AutogradProgram::steps,
          rc::gen::container<std::vector<AutogradStep>>(rc::gen::build<AutogradStep>(
              rc::gen::set(&AutogradStep::kind,
                           rc::gen::inRange(0, static_cast<int>(AutogradStepKind::kCount))),
              rc::gen::set(&AutogradStep::a, rc::gen::inRange<std::size_t>(0, 16)),
              rc::gen::set(&AutogradStep::b, rc::gen::inRange<std::size_t>(0, 16))))));
}

// Programs of ops whose backward lowers to a tree-manager function body.
inline rc::Gen<AutogradProgram> autograd_body_program() {
  return rc::gen::build<AutogradProgram>(
      rc::gen::set(&AutogradProgram::leaves, rc::gen::inRange(1, 4)),
      rc::gen::set(&AutogradProgram::steps,
                   rc::gen::container<std::vector<AutogradStep>>(rc::gen::build<AutogradStep>(
                       rc::gen::set(&AutogradStep::kind,
                                    rc::gen::element(static_cast<int>(AutogradStepKind::kMul),
                                                     static_cast<int>(AutogradStepKind::kAdd),
                                                     static_cast<int>(AutogradStepKind::kClone))),
                       rc::gen::set(&AutogradStep::a, rc::gen::inRange<std::size_t>(0, 16)),
                       rc::gen::set(&AutogradStep::b, rc::gen::inRange<std::size_t>(0, 16))))));
}

}  // namespace capsim::rc_gen
