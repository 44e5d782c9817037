// libFuzzer target over every reader of a file or argument a user hands moetune (issue 57): the
// first byte picks the reader, the rest is its text. A reader may only return a value or an
// Error; a crash, a sanitizer report, an uncaught exception or a broken round trip aborts.
// Built with clang and ASan/UBSan by tests/fuzz/CMakeLists.txt; ctest runs it for 50 s from the
// checked-in corpus (tests/fuzz/corpus, one file per reader: seed-<n>-<reader>).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "core/flat_json.hpp"
#include "core/json_text.hpp"
#include "core/lever_io.hpp"
#include "core/lint.hpp"
#include "core/problem.hpp"
#include "core/recipe.hpp"
#include "core/routing.hpp"
#include "core/table.hpp"
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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(uint8_t const* data, size_t size) {
  if (size == 0) return 0;
  std::string const text(reinterpret_cast<char const*>(data) + 1, size - 1);
  switch (data[0] % 9) {
    case 0: (void)core::parse_recipe(text, "recipe.json"); break;
    case 1: table(core::parse_vllm_table(text, "E=8,N=128,device_name=cpu.json")); break;
    case 2: table(core::parse_manifest(text, "E=8,N=128,device_name=cpu.json.moetune")); break;
    case 3: (void)core::parse_lever_table_json(text, "levers.json"); break;
    case 4: (void)runtime::parse_knob_cache(text, "knobs.json"); break;
    case 5: problem_spec(text); break;
    case 6: routing_spec(text); break;
    case 7: (void)core::parse_moe_problem_json(text, "problem.json"); break;
    case 8: (void)core::parse_moe_config_json(text, "config.json"); break;
  }
  return 0;
}
