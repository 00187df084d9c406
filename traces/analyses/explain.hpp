// Explanations in words: for each decision in a trace that a user asks about
// (a recording, a re-recording, a skip, an eager fallback, a copy, an error,
// a warning, a recompile, a compiled-autograd cache miss), one paragraph:
// what happened, the rule and the PyTorch function that applies it, the
// tensors involved by the program's own names, and the usual fix.
//
// It reads what a trace observed: capsim's own traces, the CUDA backend's,
// real PyTorch recordings (whatever kinds they observed), and programs
// without events, which it simulates first (traces/analyses/observed_run.hpp). The
// words follow docs/cudagraph-trees.md and docs/compiled-autograd.md; the
// rules' texts are the decisions table's (sim/core/decisions.def).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "model/result.hpp"
#include "sim/core/decisions.hpp"
#include "sim/core/events.hpp"
#include "sim/program/program.hpp"
#include "traces/analyses/observed_run.hpp"
#include "traces/format/json_fields.hpp"
#include "traces/format/trace_format.hpp"

namespace capsim {

struct Explanation {
  std::size_t action = 0;  // the action that caused it
  std::size_t line = 0;    // the event's line in the file; 0 when simulated
  std::string event;  // the event kind, with its id or reason: "record:static_input_idx_mismatch"
  // The decision explained, for readers to switch on; nullopt for an id or
  // reason of a newer release than this table's (explained without a rule).
  std::optional<Decision> decision;
  EventKind kind = EventKind::kRecord;  // the kind of the event explained
  std::string function;                 // the compiled function, when the event names one
  std::string title;                    // one line
  std::string what;                     // what happened, with names
  std::string rule;                     // the rule, and the PyTorch function that applies it
  std::vector<std::string> inputs;      // the tensors involved, by the program's names
  std::string fix;                      // the usual fix; empty when nothing needs fixing
  // Simulated on past a raise (OnRaise::kKeepGoing): a real run died before
  // this decision, at the first uncaught RuntimeError.
  bool beyond_real_run = false;
};

// Every decision worth a paragraph, in event order; only those of action
// `only` when given.
std::vector<Explanation> explain(const ObservedRun& run, std::optional<std::size_t> only);

// A re-record of a moved input, in the program's own terms: which argument
// the input is and the last action before the re-record that bound its
// name (gave it storage), when one did.
struct MovedInput {
  std::size_t input = 0;
  std::string name;                     // the call's argument
  std::optional<std::size_t> bound_at;  // the action that last bound `name`
  std::string bound_by;                 // that action's kind, e.g. reassign_data
};
// Nothing when `event` is no such re-record or no call argument names the
// input.
std::optional<MovedInput> explain_rerecord(const std::vector<Action>& actions, const Event& event);
// "input 1 is 'bias'; it last got storage at action 10 (reassign_data)".
std::string moved_input_text(const MovedInput& moved);

// An action for people, without the line's envelope: `call {"function":...}`.
std::string action_summary(std::size_t index, const Action& action);

// Text for people: a title line, then indented "what", "rule", "inputs", "fix".
// Every field is escaped as stderr's lines are (printable_message): a tensor's
// name, a function's or a stack trace from the input can neither start a line
// of the report (a newline is \x0a) nor reach the terminal as an escape
// sequence.
std::string explanation_text(const Explanation& e);

// Explanations that say the same thing (all but action and line equal),
// folded into the first, with the actions of the others: a loop's identical
// paragraphs read once, with a count.
struct FoldedExplanation {
  Explanation first;
  std::vector<std::size_t> again;  // the actions of the ones folded into it
};
std::vector<FoldedExplanation> fold_explanations(const std::vector<Explanation>& all);
// How many of the folded actions the text and the page name (the rest are
// counted): a bound on what one paragraph costs, whatever the run's length.
inline constexpr std::size_t kFoldedActionsNamed = 8;
// explanation_text, and an "again" line when others were folded in.
std::string folded_explanation_text(const FoldedExplanation& f);
// "again:  3 more times, the same, at actions 4, 7, 9": the line of
// folded_explanation_text, without its indent; "" when nothing was folded.
std::string again_text(const FoldedExplanation& f);
Json explanation_json(const Explanation& e);
// explanation_json, with "again": the actions of every explanation folded
// into it (all of them; absent when none).
Json folded_explanation_json(const FoldedExplanation& f);

}  // namespace capsim
