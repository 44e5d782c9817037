// Name helpers shared by every parser: edit distance, "did you mean", and clipping a value a
// message echoes.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace moetune::core {

/// Levenshtein distance between a and b.
int edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `name` by edit distance when it is close enough to be a plausible
/// typo (distance <= max(2, |name|/3)), else "".
std::string closest_name(std::string_view name, std::vector<std::string> const& candidates);

/// "; did you mean 'x'?" when closest_name finds one, else "". Meant to be appended to a message.
std::string did_you_mean(std::string_view name, std::vector<std::string> const& candidates);

/// `value` as a message may echo it: unchanged up to `max_bytes`, else its first bytes (never
/// half a UTF-8 character) and "... (N bytes)", so a 100 KB argument costs a message one line.
std::string clip(std::string_view value, size_t max_bytes = 64);
/// Length (1-4) of the valid UTF-8 sequence starting at text[i] (i < text.size()), or 0 when the
/// bytes there are not one (a stray 0xFF, a cut or overlong sequence, a UTF-16 surrogate).
size_t utf8_length(std::string_view text, size_t i);
/// `text` as one printable line: control bytes written as \n, \r, \t or \xHH, and bytes that are
/// not valid UTF-8 as \xHH; valid UTF-8 text without control bytes is returned unchanged.
std::string one_line(std::string_view text);
/// A whole message as one_line, cut to about `max_bytes` in its middle ("... (N bytes left out)
/// ..."), so its start (where) and end (what to do) survive: the CLI's last guard against echoing
/// a 100 KB argument, or one holding a newline or binary bytes, that no reader clipped.
std::string clip_middle(std::string_view text, size_t max_bytes = 1000);

}  // namespace moetune::core
