// The validating scanner behind table lookups: it accepts exactly what the parser accepts (each
// malformation below is a one-byte twin of a text both accept), and it hands over each member
// with its place in the file, also where a value straddles the blocks it reads the file in.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/atomic_file.hpp"
#include "core/json_bytes.hpp"
#include "core/json_io.hpp"
#include "core/json_scan.hpp"
#include "temp_dir.hpp"

namespace moetune::core {
namespace {

/// A file holding `text`, open for reading; closed on destruction.
class TextFile {
 public:
  explicit TextFile(std::string const& text) {
    path_ = moetune::testing::unique_temp_dir("json_scan") + "/f.json";
    EXPECT_TRUE(write_file_atomic(path_, text).ok());
    fd_ = ::open(path_.c_str(), O_RDONLY);
  }
  ~TextFile() { ::close(fd_); }
  int fd() const { return fd_; }

 private:
  std::string path_;
  int fd_ = -1;
};

bool scans(std::string const& text) {
  TextFile file(text);
  return scan_json_file(file.fd(), "", nullptr, [](JsonFileMember const&) { return true; });
}

std::string deep(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

TEST(JsonScan, AcceptsExactlyWhatTheParserAccepts) {
  std::vector<std::string> const texts = {
      R"({})",
      R"( {"a": 1} )",
      R"({"a": 1,})",  // trailing comma
      R"({"a" 1})",
      R"({"a": 1} x)",
      R"({"a": 1}{})",
      R"([1])",  // a root that is not an object: the scanner reads objects only
      "",
      R"({"a": -0.5e+3, "b": 0, "c": 10E2})",
      R"({"a": 01})",
      R"({"a": 1.})",
      R"({"a": -})",
      R"({"a": .5})",
      R"({"a": 1e})",
      R"({"a": true, "b": false, "c": null})",
      R"({"a": tru})",
      R"({"a": nul})",
      R"({"a": True})",
      R"({"a": "x\"\\\/\b\f\n\r\t\u00e9"})",
      R"({"a": "\x"})",
      R"({"a": "\u12G4"})",
      "{\"a\": \"tab\there\"}",  // a raw control byte in a string
      R"({"a": "\ud83d\ude00"})",
      R"({"a": "\ud83d"})",  // a high surrogate alone
      R"({"a": "\ude00"})",  // a low surrogate alone
      R"({"a": "\ud83d\u0041"})",
      "{\"a\": \"\xC3\xA9\"}",
      "{\"a\": \"\xC3\"}",  // a cut character
      "{\"a\": \"\xFF\"}",
      "{\"a\": \"\xED\xA0\x80\"}",  // a UTF-16 surrogate spelt in UTF-8
      "\xEF\xBB\xBF{}",             // a byte order mark
      std::string("{\"a\": 1}\0", 9),
      std::string("{\"a\": \"x\0\"}", 11),
      R"({"a": 1, "a": 2})",  // duplicates are the caller's to find
      R"({"a": [1, [2, {"b": []}], {}]})",
      R"({"a": [1 2]})",
      R"({"a": [1,]})",
      R"({"a": {"b" 1}})",
      R"({"\u0061": 1})",
      "{\"a\": " + deep(kMaxJsonDepth - 1) + "}",
      "{\"a\": " + deep(kMaxJsonDepth) + "}",
  };
  for (std::string const& text : texts) {
    size_t const first = text.find_first_not_of(" \t\r\n");
    bool const object = first != std::string::npos && text[first] == '{';
    bool const parsed = object && parse_json(text, "t.json", DuplicateKeys::kLastWins).ok();
    EXPECT_EQ(scans(text), parsed) << "'" << text.substr(0, 80) << "'";
  }
}

TEST(JsonScan, HandsOverEachMemberWithItsPlaceAcrossBlockBoundaries) {
  // Values that straddle the 1 MiB blocks the file is read in: a 2.5 MB string, then numbers
  // and literals placed so that some end exactly at a block's end.
  std::string const big(2500000, 'x');
  std::string text = "{\"big\": \"" + big + "\"";
  std::vector<std::pair<std::string, std::string>> want = {{"big", "\"" + big + "\""}};
  for (int i = 0; text.size() < 3200000; ++i) {
    std::string const key = "k" + std::to_string(i);
    std::string const value = i % 3 == 0   ? std::to_string(i * 7919)
                              : i % 3 == 1 ? "true"
                                           : "{\"r\":[1,2]}";
    text += ",\n\"" + key + "\":" + value;
    want.emplace_back(key, value);
  }
  text += "}";
  TextFile file(text);
  std::vector<std::pair<std::string, std::string>> seen;
  bool const ok = scan_json_file(file.fd(), "", nullptr, [&](JsonFileMember const& m) {
    EXPECT_EQ(text.substr(m.offset, m.value.size()), m.value);
    seen.emplace_back(std::string(m.key), std::string(m.value));
    return true;
  });
  EXPECT_TRUE(ok);
  EXPECT_EQ(seen, want);
}

TEST(JsonScan, StreamsTheNamedMemberAndFailsWithoutIt) {
  std::string const text = R"({"v": 2, "rows": {"1": {"a": 1}, "16": {"a": [2]}}, "k": "x"})";
  TextFile file(text);
  std::vector<std::string> top, rows;
  ASSERT_TRUE(scan_json_file(
      file.fd(), "rows",
      [&](JsonFileMember const& m) {
        top.emplace_back(m.key);
        return true;
      },
      [&](JsonFileMember const& m) {
        rows.emplace_back(std::string(m.key) + "=" + std::string(m.value));
        return true;
      }));
  EXPECT_EQ(top, (std::vector<std::string>{"v", "k"}));
  EXPECT_EQ(rows, (std::vector<std::string>{"1={\"a\": 1}", "16={\"a\": [2]}"}));
  auto streams = [](std::string const& t) {
    TextFile f(t);
    auto yes = [](JsonFileMember const&) { return true; };
    return scan_json_file(f.fd(), "rows", yes, yes);
  };
  EXPECT_FALSE(streams(R"({"v": 2})"));                  // no "rows"
  EXPECT_FALSE(streams(R"({"rows": {}, "rows": {}})"));  // "rows" twice
  EXPECT_FALSE(streams(R"({"rows": [1]})"));             // not an object
  EXPECT_TRUE(streams(R"({"rows": {}})"));
}

}  // namespace
}  // namespace moetune::core
