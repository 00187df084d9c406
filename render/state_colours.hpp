// The light fills that drawings give a node's state.
//
// One table for every renderer, so that a colour means one thing across the
// tree, the step programs and the pool: yellow is "trusted as it was recorded"
// (a recorded graph, a static buffer), blue "in use and as expected" (a
// replayed graph, a live block), orange "moved or gone" (a re-recording, a
// block whose storage died), grey "not part of the graph" (a warmup, a free
// block). They are light tints of Okabe-Ito's colours, which stay apart for
// colour-blind readers, and every drawing also says the state in a row, so a
// colour is never the only cue. Diffs use their own, stronger colours
// (dot_writer.cpp).
#pragma once

#include <string_view>

namespace capsim::state_fill {

inline constexpr std::string_view kInert = "#e6e6e6";       // warmup
inline constexpr std::string_view kFree = "#f2f2f2";        // a free block
inline constexpr std::string_view kTrusted = "#fdf1c7";     // recorded; a static buffer
inline constexpr std::string_view kInUse = "#d7eaf7";       // replayed; a live block
inline constexpr std::string_view kMoved = "#fce0b8";       // re-recorded; a dead owner
inline constexpr std::string_view kError = "#f6cfc4";       // raised an error; read metadata
inline constexpr std::string_view kCheckpoint = "#e8dff2";  // a checkpoint marker
inline constexpr std::string_view kPlain = "#ffffff";       // a tree's root, a segment

}  // namespace capsim::state_fill
