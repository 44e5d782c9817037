#include "core/names.hpp"

#include <algorithm>

namespace moetune::core {

int edit_distance(std::string_view a, std::string_view b) {
  // Two-row Levenshtein: insert, delete and substitute each cost 1.
  std::vector<int> prev(b.size() + 1);
  std::vector<int> cur(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    prev[j] = static_cast<int>(j);
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    cur[0] = static_cast<int>(i);
    for (size_t j = 1; j <= b.size(); ++j) {
      int const subst = prev[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, subst});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string closest_name(std::string_view name, std::vector<std::string> const& candidates) {
  int const max_distance = std::max<int>(2, static_cast<int>(name.size()) / 3);
  std::string best;
  int best_distance = max_distance + 1;
  for (auto const& c : candidates) {
    int const d = edit_distance(name, c);
    // Strictly less: the first candidate wins ties, so the answer does not depend on luck.
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string did_you_mean(std::string_view name, std::vector<std::string> const& candidates) {
  std::string const best = closest_name(name, candidates);
  if (best.empty()) {
    return "";
  }
  return "; did you mean '" + best + "'?";
}

std::string clip(std::string_view value, size_t max_bytes) {
  if (value.size() <= max_bytes) return std::string(value);
  size_t cut = max_bytes;
  // Back up over UTF-8 continuation bytes (10xxxxxx) so the cut falls between characters.
  while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80) --cut;
  return std::string(value.substr(0, cut)) + "... (" + std::to_string(value.size()) + " bytes)";
}

std::string clip_middle(std::string_view text, size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  size_t head = max_bytes * 2 / 3;
  size_t tail = text.size() - max_bytes / 3;
  auto continuation = [&](size_t i) {
    return (static_cast<unsigned char>(text[i]) & 0xC0) == 0x80;
  };
  while (head > 0 && continuation(head)) --head;
  while (tail < text.size() && continuation(tail)) ++tail;
  return std::string(text.substr(0, head)) + "... (" + std::to_string(tail - head) +
         " bytes left out) ..." + std::string(text.substr(tail));
}

}  // namespace moetune::core
