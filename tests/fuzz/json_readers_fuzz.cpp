// libFuzzer target over every reader of a file or argument a user hands moetune (issue 57): the
// first byte picks the reader, the rest is its text. A reader may only return a value or an
// Error; a crash, a sanitizer report, an uncaught exception or a broken round trip aborts. The
// scanner behind table lookups must never accept a text the parser refuses, and a lookup must
// answer as the whole table does, or fail with load_table's error.
// Built with clang and ASan/UBSan by tests/fuzz/CMakeLists.txt; ctest runs it for 50 s from the
// checked-in corpus (tests/fuzz/corpus, one file per reader: seed-<n>-<reader>).
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/flat_json.hpp"
#include "core/json_io.hpp"
#include "core/json_scan.hpp"
#include "core/json_text.hpp"
#include "core/lever_io.hpp"
#include "core/lint.hpp"
#include "core/problem.hpp"
#include "core/recipe.hpp"
#include "core/resolver.hpp"
#include "core/routing.hpp"
#include "core/table.hpp"
#include "core/table_lookup.hpp"
#include "runtime/knob_cache.hpp"

namespace {

using namespace moetune;

void require(bool ok) {
  if (!ok) std::abort();  // a property broke: libFuzzer keeps the input as a crash
}

/// A spec that parses must print and parse back to itself; a routing that parses must generate
/// valid ids (the zipf sampler's heap corruption was here).
void problem_spec(std::string const& text) {
  auto p = core::parse_problem_spec(text);
  if (!p.ok()) return;
  auto back = core::parse_problem_spec(core::format_problem_spec(*p));
  require(back.ok() && *back == *p);
}

void routing_spec(std::string const& text) {
  auto r = core::parse_routing(text);
  if (!r.ok() || r->kind == core::RoutingKind::kTrace) return;  // a trace names a file
  auto back = core::parse_routing(core::format_routing(*r));
  require(back.ok() && *back == *r);
  auto routing = core::generate_routing(*r, 16, 8, 3);
  require(routing.ok());
  for (int32_t id : routing->topk_ids) require(id >= 0 && id < 8);
}

/// A table that parses must print as both files, and each must parse back.
void table(core::Result<core::Table> const& t) {
  if (!t.ok()) return;
  std::string const name = "E=8,N=128,device_name=cpu.json";
  require(core::parse_vllm_table(core::format_vllm_table(*t), name).ok());
  require(core::parse_manifest(core::format_manifest(*t), name + ".moetune").ok());
  (void)core::unreachable_keys(*t, 0);
}

/// The scanner accepts only what the parser accepts.
void scan(std::string const& text) {
  int const fd = memfd_create("scan", 0);
  if (fd < 0) return;
  bool const written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  bool const scanned =
      written &&
      core::scan_json_file(fd, "", nullptr, [](core::JsonFileMember const&) { return true; });
  ::close(fd);
  if (scanned) require(core::parse_json(text, "scan.json", core::DuplicateKeys::kLastWins).ok());
}

/// A lookup of the table whose rows file is `rows` and whose manifest is `manifest` (none when
/// empty) gives the whole table's answer at every M tried, or load_table's error.
void lookup(std::string const& rows, std::string const& manifest) {
  static std::string const dir = [] {
    std::string tmpl = "/tmp/moetune_fuzz_lookup_XXXXXX";
    return ::mkdtemp(tmpl.data()) != nullptr ? tmpl : std::string();
  }();
  if (dir.empty()) return;
  std::string const path = dir + "/E=8,N=128,device_name=cpu.json";
  auto put = [](std::string const& file, std::string const& text) {  // no fsync: a scratch dir
    FILE* f = std::fopen(file.c_str(), "wb");
    bool const ok = f != nullptr && std::fwrite(text.data(), 1, text.size(), f) == text.size();
    return f != nullptr && std::fclose(f) == 0 && ok;
  };
  ::unlink(core::manifest_path(path).c_str());
  if (!put(path, rows) || (!manifest.empty() && !put(core::manifest_path(path), manifest))) {
    return;
  }
  auto const whole = core::load_table(path);
  auto looked = core::TableLookup::open(path);
  auto const default_config = [](int64_t m) {
    core::MoeConfig c;
    c.gemm1.tile.block_m = static_cast<int>(m % 1000 + 1);
    return c;
  };
  if (!looked.ok()) {
    require(!whole.ok() && looked.error().to_string() == whole.error().to_string());
    return;
  }
  for (int64_t const m : {0, 1, 15, 16, 40, 64, 1000}) {
    auto r = core::resolve(*looked, m, default_config);
    if (!r.ok()) {
      require(!whole.ok() && r.error().to_string() == whole.error().to_string());
      return;
    }
    // A row the lookup did not serve is checked only as JSON: the whole table may fail on it.
    if (whole.ok()) {
      require(core::to_json_text(*r) ==
              core::to_json_text(core::resolve(*whole, m, default_config)));
    }
  }
}

/// The rows file the fuzzed manifests sit beside (E=8,N=128,device_name=cpu.json).
constexpr char const* kLookupRows = R"({"1": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 32,
  "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 2},
  "16": {"BLOCK_SIZE_M": 16, "BLOCK_SIZE_N": 64, "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1,
  "num_warps": 4, "num_stages": 2}, "64": {"BLOCK_SIZE_M": 64, "BLOCK_SIZE_N": 64,
  "BLOCK_SIZE_K": 64, "GROUP_SIZE_M": 1, "num_warps": 4, "num_stages": 2}})";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(uint8_t const* data, size_t size) {
  if (size == 0) return 0;
  std::string const text(reinterpret_cast<char const*>(data) + 1, size - 1);
  switch (data[0] % 12) {
    case 0: (void)core::parse_recipe(text, "recipe.json"); break;
    case 1: table(core::parse_vllm_table(text, "E=8,N=128,device_name=cpu.json")); break;
    case 2: table(core::parse_manifest(text, "E=8,N=128,device_name=cpu.json.moetune")); break;
    case 3: (void)core::parse_lever_table_json(text, "levers.json"); break;
    case 4: (void)runtime::parse_knob_cache(text, "knobs.json"); break;
    case 5: problem_spec(text); break;
    case 6: routing_spec(text); break;
    case 7: (void)core::parse_moe_problem_json(text, "problem.json"); break;
    case 8: (void)core::parse_moe_config_json(text, "config.json"); break;
    case 9: scan(text); break;
    case 10: lookup(kLookupRows, text); break;
    case 11: lookup(text, ""); break;
  }
  return 0;
}
