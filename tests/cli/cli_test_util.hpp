// Helpers for CLI tests: run the built `moetune` binary in a fresh temp dir and capture its exit
// code, stdout and stderr; read and write files; list the top-level keys of a JSON object.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace moetune::cli::testing {

/// What one run of the binary left behind.
struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

inline std::string read_text(std::filesystem::path const& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline void write_text(std::filesystem::path const& p, std::string const& text) {
  std::filesystem::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << text;
}

/// Quotes an argument for /bin/sh.
inline std::string shell_quote(std::string const& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

/// A temp dir, removed at the end of the test; commands run with it as the working directory.
class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "moetune-cli-XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  /// Runs `moetune args...` in dir_ with MOETUNE_BACKEND unset (so defaults are the machine's).
  RunResult run(std::vector<std::string> const& args, std::string const& env = "") const {
    std::string cmd = "cd " + shell_quote(dir_.string()) + " && env -u MOETUNE_BACKEND " + env +
                      " " + shell_quote(std::string(MOETUNE_BINARY_DIR) + "/moetune");
    for (auto const& a : args) cmd += " " + shell_quote(a);
    cmd += " >stdout.txt 2>stderr.txt";
    int status = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.out = read_text(dir_ / "stdout.txt");
    r.err = read_text(dir_ / "stderr.txt");
    std::filesystem::remove(dir_ / "stdout.txt");
    std::filesystem::remove(dir_ / "stderr.txt");
    return r;
  }

  std::filesystem::path path(std::string const& rel) const { return dir_ / rel; }
  void write(std::string const& rel, std::string const& text) const {
    write_text(dir_ / rel, text);
  }
  std::string read(std::string const& rel) const { return read_text(dir_ / rel); }

  std::filesystem::path dir_;
};

/// Number of lines in `s` (a final line without '\n' counts).
inline int count_lines(std::string const& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n + (!s.empty() && s.back() != '\n');
}

/// The keys of the top-level JSON object in `text`, in order (a small scanner; the tests stay
/// free of the JSON library, which only core/json_io sees).
inline std::vector<std::string> top_level_keys(std::string const& text) {
  std::vector<std::string> keys;
  int depth = 0;
  bool in_string = false;
  std::string current;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (c == '\\') {
        current += text[++i];
      } else if (c == '"') {
        in_string = false;
        size_t j = text.find_first_not_of(" \t\r\n", i + 1);
        if (depth == 1 && j != std::string::npos && text[j] == ':') keys.push_back(current);
      } else {
        current += c;
      }
    } else if (c == '"') {
      in_string = true;
      current.clear();
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  return keys;
}

}  // namespace moetune::cli::testing
