// The validating scanner; see json_scan.hpp. One pass, no allocation per value: a 100 MB
// manifest is checked in a fraction of the time the parser takes to build it.
#include "core/json_scan.hpp"

#include <unistd.h>

#include <array>
#include <cerrno>
#include <optional>
#include <string>

#include "core/json_bytes.hpp"
#include "core/names.hpp"

namespace moetune::core {

namespace {

/// Bytes a string may hold as they are: printable ASCII but '"' and '\\'.
constexpr std::array<bool, 256> kPlainStringBytes = [] {
  std::array<bool, 256> plain{};
  for (int c = 0x20; c < 0x80; ++c) plain[c] = c != '"' && c != '\\';
  return plain;
}();

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
bool is_failure(size_t end) { return end == kJsonMalformed || end == kJsonCut; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/// The code unit of the \uXXXX escape whose 'u' is at text[pos]; -1 malformed, -2 cut.
int unicode_escape(std::string_view text, size_t pos) {
  if (pos + 4 >= text.size()) return -2;
  int code = 0;
  for (size_t k = pos + 1; k <= pos + 4; ++k) {
    int const h = hex_value(text[k]);
    if (h < 0) return -1;
    code = code * 16 + h;
  }
  return code;
}

/// The end of the string whose opening quote is at text[pos]; `escaped` is set when it holds a
/// backslash escape.
size_t scan_string(std::string_view text, size_t pos, bool* escaped) {
  auto const* bytes = reinterpret_cast<unsigned char const*>(text.data());
  size_t const n = text.size();
  size_t i = pos + 1;
  while (true) {
    while (i < n && kPlainStringBytes[bytes[i]]) ++i;
    if (i >= n) return kJsonCut;
    unsigned char const c = bytes[i];
    if (c == '"') return i + 1;
    if (c < 0x20) return kJsonMalformed;  // control bytes must be escaped
    if (c >= 0x80) {
      size_t const len = utf8_length(text, i);
      if (len == 0) return n - i < 4 ? kJsonCut : kJsonMalformed;  // a cut character, or a bad one
      i += len;
      continue;
    }
    *escaped = true;  // a backslash
    if (i + 1 >= n) return kJsonCut;
    char const e = text[i + 1];
    if (e == 'u') {
      int const unit = unicode_escape(text, i + 1);
      if (unit < 0) return unit == -2 ? kJsonCut : kJsonMalformed;
      i += 6;
      if (unit >= 0xDC00 && unit <= 0xDFFF) return kJsonMalformed;  // a low surrogate alone
      if (unit >= 0xD800 && unit <= 0xDBFF) {
        // A high surrogate must be followed by the escape of a low one.
        if (i + 1 >= n) return kJsonCut;
        if (text[i] != '\\' || text[i + 1] != 'u') return kJsonMalformed;
        int const low = unicode_escape(text, i + 1);
        if (low == -2) return kJsonCut;
        if (low < 0xDC00 || low > 0xDFFF) return kJsonMalformed;
        i += 6;
      }
      continue;
    }
    if (e != '"' && e != '\\' && e != '/' && e != 'b' && e != 'f' && e != 'n' && e != 'r' &&
        e != 't') {
      return kJsonMalformed;
    }
    i += 2;
  }
}

/// The end of the number at text[pos]: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
size_t scan_number(std::string_view text, size_t pos) {
  size_t const n = text.size();
  size_t i = pos;
  auto digits = [&]() -> size_t {  // one or more digits; kJsonMalformed/kJsonCut when none
    if (i >= n) return kJsonCut;
    if (!is_digit(text[i])) return kJsonMalformed;
    while (i < n && is_digit(text[i])) ++i;
    return i;
  };
  if (i < n && text[i] == '-') ++i;
  if (i < n && text[i] == '0') {
    ++i;
  } else if (size_t const e = digits(); is_failure(e)) {
    return e;
  }
  if (i < n && text[i] == '.') {
    ++i;
    if (size_t const e = digits(); is_failure(e)) return e;
  }
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < n && (text[i] == '+' || text[i] == '-')) ++i;
    if (size_t const e = digits(); is_failure(e)) return e;
  }
  return i;
}

size_t scan_literal(std::string_view text, size_t pos, std::string_view word) {
  std::string_view const have = text.substr(pos, word.size());
  if (have == word) return pos + word.size();
  return word.starts_with(have) ? kJsonCut : kJsonMalformed;
}

/// The end of the array whose '[' is at text[pos] (`depth` levels open around it).
size_t scan_array(std::string_view text, size_t pos, int depth) {
  size_t i = skip_json_space(text, pos + 1);
  if (i < text.size() && text[i] == ']') return i + 1;
  while (true) {
    i = scan_json_value(text, i, depth + 1);
    if (is_failure(i)) return i;
    i = skip_json_space(text, i);
    if (i >= text.size()) return kJsonCut;
    if (text[i] == ']') return i + 1;
    if (text[i] != ',') return kJsonMalformed;
    i = skip_json_space(text, i + 1);
  }
}

/// The end of the object whose '{' is at text[pos] (`depth` levels open around it).
size_t scan_object(std::string_view text, size_t pos, int depth) {
  size_t i = skip_json_space(text, pos + 1);
  if (i < text.size() && text[i] == '}') return i + 1;
  while (true) {
    if (i >= text.size()) return kJsonCut;
    if (text[i] != '"') return kJsonMalformed;
    bool escaped = false;
    i = scan_string(text, i, &escaped);
    if (is_failure(i)) return i;
    i = skip_json_space(text, i);
    if (i >= text.size()) return kJsonCut;
    if (text[i] != ':') return kJsonMalformed;
    i = scan_json_value(text, skip_json_space(text, i + 1), depth + 1);
    if (is_failure(i)) return i;
    i = skip_json_space(text, i);
    if (i >= text.size()) return kJsonCut;
    if (text[i] == '}') return i + 1;
    if (text[i] != ',') return kJsonMalformed;
    i = skip_json_space(text, i + 1);
  }
}

/// A file's text read a block at a time, of which only what the scan has not passed is kept.
class BlockText {
 public:
  explicit BlockText(int fd) : fd_(fd) {}

  /// The text from file offset `pos` to the end of what has been read.
  std::string_view from(uint64_t pos) const {
    return std::string_view(buf_).substr(static_cast<size_t>(pos - base_));
  }
  /// The byte at `pos`, reading on as needed; none at the end of the file or on a read error.
  std::optional<char> peek(uint64_t pos) {
    while (pos >= base_ + buf_.size()) {
      if (!more()) return std::nullopt;
    }
    return buf_[static_cast<size_t>(pos - base_)];
  }
  uint64_t skip_space(uint64_t pos) {
    for (auto c = peek(pos); c && is_space(*c); c = peek(++pos)) {
    }
    return pos;
  }
  /// The end of the value at `pos`, reading on while the text ends inside it: each read doubles
  /// what is held of it, so even a huge value is rescanned only a few times.
  std::optional<uint64_t> value_end(uint64_t pos, int depth) {
    while (true) {
      std::string_view const text = from(pos);
      size_t const end = scan_json_value(text, 0, depth);
      if (end == kJsonMalformed) return std::nullopt;
      if (end != kJsonCut && (end < text.size() || eof_)) return pos + end;
      size_t const want = 2 * text.size() + kBlockBytes;
      while (from(pos).size() < want && more()) {
      }
      if (from(pos).size() == text.size()) {  // nothing more to read
        return end == kJsonCut ? std::nullopt : std::optional<uint64_t>(pos + end);
      }
    }
  }
  /// Forgets the text before `pos`, which the scan has passed for good.
  void drop_before(uint64_t pos) {
    if (pos - base_ < kBlockBytes) return;  // erase rarely: each moves what is kept
    buf_.erase(0, static_cast<size_t>(pos - base_));
    base_ = pos;
  }
  bool failed() const { return failed_; }

 private:
  static constexpr size_t kBlockBytes = size_t{1} << 20;

  bool more() {
    if (eof_ || failed_) return false;
    size_t const used = buf_.size();
    buf_.resize(used + kBlockBytes);
    ssize_t got = 0;
    do {
      got = ::read(fd_, buf_.data() + used, kBlockBytes);
    } while (got < 0 && errno == EINTR);
    buf_.resize(used + static_cast<size_t>(got < 0 ? 0 : got));
    failed_ = got < 0;
    eof_ = got == 0;
    return got > 0;
  }

  int fd_;
  std::string buf_;
  uint64_t base_ = 0;  ///< the file offset of buf_[0]
  bool eof_ = false;
  bool failed_ = false;
};

/// Walks the object whose '{' is at `pos`: for each member, `on_value(key, key_escaped,
/// value_pos)` consumes the value and returns where it ends (none: stop). Returns the object's
/// end.
template <class OnValue>
std::optional<uint64_t> walk_object(BlockText& t, uint64_t pos, OnValue const& on_value) {
  pos = t.skip_space(pos + 1);
  if (t.peek(pos) == '}') return pos + 1;
  while (true) {
    if (t.peek(pos) != '"') return std::nullopt;
    auto const key_end = t.value_end(pos, 0);
    if (!key_end) return std::nullopt;
    std::string const key(t.from(pos).substr(1, static_cast<size_t>(*key_end - pos - 2)));
    pos = t.skip_space(*key_end);
    if (t.peek(pos) != ':') return std::nullopt;
    auto const end = on_value(key, key.find('\\') != std::string::npos, t.skip_space(pos + 1));
    if (!end) return std::nullopt;
    pos = t.skip_space(*end);
    if (t.peek(pos) == '}') return pos + 1;
    if (t.peek(pos) != ',') return std::nullopt;
    pos = t.skip_space(pos + 1);
    t.drop_before(pos);
  }
}

}  // namespace

size_t skip_json_space(std::string_view text, size_t pos) {
  while (pos < text.size() && is_space(text[pos])) ++pos;
  return pos;
}

size_t scan_json_value(std::string_view text, size_t pos, int depth) {
  if (pos >= text.size()) return kJsonCut;
  bool escaped = false;
  switch (text[pos]) {
    case '"': return scan_string(text, pos, &escaped);
    case '{': return depth >= kMaxJsonDepth ? kJsonMalformed : scan_object(text, pos, depth);
    case '[': return depth >= kMaxJsonDepth ? kJsonMalformed : scan_array(text, pos, depth);
    case 't': return scan_literal(text, pos, "true");
    case 'f': return scan_literal(text, pos, "false");
    case 'n': return scan_literal(text, pos, "null");
    default: return scan_number(text, pos);
  }
}

bool scan_json_file(int fd, std::string_view stream_key, JsonFileMemberFn const& on_member,
                    JsonFileMemberFn const& on_streamed) {
  BlockText t(fd);
  // Hands the value at `pos` (`depth` levels open around it) over whole.
  auto hand_over = [&](JsonFileMemberFn const& fn, int depth) {
    return [&t, &fn, depth](std::string const& key, bool escaped,
                            uint64_t pos) -> std::optional<uint64_t> {
      auto const end = t.value_end(pos, depth);
      if (!end) return std::nullopt;
      JsonFileMember const member{key, escaped,
                                  t.from(pos).substr(0, static_cast<size_t>(*end - pos)), pos};
      return fn(member) ? end : std::nullopt;
    };
  };
  auto const streamed = hand_over(on_streamed, 2);
  auto const whole = hand_over(on_member, 1);
  bool seen_stream = false;
  auto const root_member = [&](std::string const& key, bool escaped,
                               uint64_t pos) -> std::optional<uint64_t> {
    if (escaped || key != stream_key) return whole(key, escaped, pos);
    if (seen_stream || t.peek(pos) != '{') return std::nullopt;
    seen_stream = true;
    return walk_object(t, pos, streamed);
  };
  uint64_t const start = t.skip_space(0);
  if (t.peek(start) != '{') return false;
  std::optional<uint64_t> const end = stream_key.empty()
                                          ? walk_object(t, start, hand_over(on_streamed, 1))
                                          : walk_object(t, start, root_member);
  return end && (stream_key.empty() || seen_stream) && !t.peek(t.skip_space(*end)) && !t.failed();
}

}  // namespace moetune::core
