// moetune_ptxas_report: registers, shared memory and spills of every GEMM kernel a tables directory
// names, from ptxas -v through NVRTC (no GPU needed), as a markdown table for docs/kernels.md.
// Compiles into a fresh temporary cubin cache: cached modules carry no ptxas report.
// Usage: moetune_ptxas_report TABLES_DIR
// Exit codes: 0 every kernel compiled; 1 one or more did not (their rows say "compile failed",
// stderr has each one's name expression and NVRTC's error); 2 bad usage or an unreadable table.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <regex>
#include <set>
#include <string>

#include "core/config.hpp"
#include "core/lint.hpp"
#include "core/table.hpp"
#include "kernels/cuda/jit.hpp"
#include "kernels/cuda/sm90_gather_geometry.hpp"

namespace {

using namespace moetune;

struct Usage {
  std::string regs = "?", static_smem = "0", spills = "?";
};

// Per mangled kernel name: "Used N registers, ..., S bytes smem" and the spill line before it.
std::map<std::string, Usage> parse_ptxas(std::string const& log) {
  std::map<std::string, Usage> out;
  const std::regex entry(R"(Compiling entry function '([^']+)')");
  const std::regex spill(R"((\d+) bytes spill stores, (\d+) bytes spill loads)");
  const std::regex used(R"(Used (\d+) registers(?:.*?, (\d+) bytes smem)?)");
  std::string current;
  size_t pos = 0;
  while (pos < log.size()) {
    size_t end = log.find('\n', pos);
    if (end == std::string::npos) end = log.size();
    const std::string line = log.substr(pos, end - pos);
    std::smatch m;
    if (std::regex_search(line, m, entry)) {
      current = m[1];
    } else if (!current.empty() && std::regex_search(line, m, spill)) {
      out[current].spills =
          m[1].str() == "0" && m[2].str() == "0" ? "0" : m[1].str() + "/" + m[2].str();
    } else if (!current.empty() && std::regex_search(line, m, used)) {
      out[current].regs = m[1];
      if (m[2].matched) out[current].static_smem = m[2];
    }
    pos = end + 1;
  }
  return out;
}

/// Rows of the report: (gemm, config) -> the M buckets that use it and its table cells.
using ReportRows =
    std::map<std::pair<std::string, std::string>, std::pair<std::set<int64_t>, std::string>>;

/// Adds the GEMM1 and GEMM2 configs of one table's rows to `rows`, compiling each kernel once
/// (usage kept per name expression in `by_expr`: GEMM2 kernels recur across activations and a
/// cached module carries no ptxas report).
/// Returns the number of kernels that failed to compile (each reported on stderr).
int add_table(core::Table const& t, ReportRows& rows, std::map<std::string, Usage>& by_expr) {
  int failed = 0;
  const std::string shape =
      "E" + std::to_string(t.key.num_experts) + " N" + std::to_string(t.key.intermediate_size);
  for (auto const& [m, row] : t.rows) {
    const core::MoeProblem p = core::problem_for_key(t.key, m);
    for (bool is_g1 : {true, false}) {
      auto const& k = is_g1 ? row.config.gemm1 : row.config.gemm2;
      auto g = kernels::cuda::gemm_geometry(p, k, is_g1);
      if (!g.ok()) continue;
      const std::string gemm = is_g1 ? "gemm1 (" + shape + ")" : "gemm2 (" + shape + ")";
      auto& entry = rows[{gemm, core::short_string(k)}];
      entry.first.insert(m);
      if (!entry.second.empty()) continue;
      const std::string expr =
          kernels::cuda::gemm_name_expr(*g, kernels::cuda::act_id(p.activation), is_g1);
      auto known = by_expr.find(expr);
      if (known == by_expr.end()) {
        auto mod = kernels::cuda::compile_module({expr});
        if (!mod.ok()) {
          entry.second = "| compile failed | | | | |";
          std::fprintf(stderr, "moetune_ptxas_report: %s (%s, %s): %s\n", expr.c_str(),
                       gemm.c_str(), core::short_string(k).c_str(),
                       mod.error().to_string().c_str());
          ++failed;
          continue;
        }
        known = by_expr.emplace(expr, parse_ptxas(mod->ptxas_log)[mod->lowered[expr]]).first;
      }
      Usage const& usage = known->second;
      entry.second = "| " + usage.regs + " | " + usage.static_smem + " | " +
                     std::to_string(g->smem_bytes()) + " | " + std::to_string(g->threads()) +
                     " | " + usage.spills + " |";
    }
  }
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: moetune_ptxas_report TABLES_DIR\n");
    return 2;
  }
  auto files = core::list_table_files(argv[1]);
  if (!files.ok()) {
    std::fprintf(stderr, "moetune_ptxas_report: %s\n", files.error().to_string().c_str());
    return 2;
  }
  char tmpl[] = "/tmp/moetune_ptxas_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  setenv("MOETUNE_CACHE_DIR", tmpl, 1);
  ReportRows rows;
  std::map<std::string, Usage> by_expr;
  int failed = 0;
  for (auto const& f : *files) {
    auto t = core::load_table(f);
    if (!t.ok()) {
      std::fprintf(stderr, "moetune_ptxas_report: %s\n", t.error().to_string().c_str());
      return 2;
    }
    failed += add_table(*t, rows, by_expr);
  }
  std::printf(
      "| GEMM | config | used at | registers | static smem (B) | dynamic smem (B) | threads "
      "| spills |\n|---|---|---|---|---|---|---|---|\n");
  for (auto const& [key, val] : rows) {
    std::string at;
    for (int64_t m : val.first) at += (at.empty() ? "M=" : ", ") + std::to_string(m);
    std::printf("| %s | %s | %s %s\n", key.first.c_str(), key.second.c_str(), at.c_str(),
                val.second.c_str());
  }
  std::error_code ec;
  std::filesystem::remove_all(tmpl, ec);
  if (failed > 0) {
    std::fprintf(stderr, "moetune_ptxas_report: %d kernel(s) failed to compile (above)\n", failed);
    return 1;
  }
  return 0;
}
