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

size_t utf8_length(std::string_view text, size_t i) {
  auto byte = [&](size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char const c = byte(i);
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xBF;  // the allowed range of the second byte
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) n = 2;
  if (c >= 0xE0 && c <= 0xEF) n = 3, lo = c == 0xE0 ? 0xA0 : 0x80, hi = c == 0xED ? 0x9F : 0xBF;
  if (c >= 0xF0 && c <= 0xF4) n = 4, lo = c == 0xF0 ? 0x90 : 0x80, hi = c == 0xF4 ? 0x8F : 0xBF;
  if (n == 0 || i + n > text.size() || byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  }
  return n;
}

std::string one_line(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    unsigned char const c = static_cast<unsigned char>(text[i]);
    size_t const n = utf8_length(text, i);
    if (n > 1 || (n == 1 && c >= 0x20 && c != 0x7F)) {
      out.append(text.substr(i, n));
      i += n;
      continue;
    }
    static char const kHex[] = "0123456789ABCDEF";
    if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else {
      out += {'\\', 'x', kHex[c >> 4], kHex[c & 15]};
    }
    ++i;
  }
  return out;
}

std::string clip_middle(std::string_view raw, size_t max_bytes) {
  std::string const line = one_line(raw);
  std::string_view const text = line;
  if (text.size() <= max_bytes) return line;
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
