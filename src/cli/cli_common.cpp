#include "cli/cli_common.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>

#include "cli/commands.hpp"
#include "core/dev_defines.hpp"
#include "core/lint.hpp"
#include "core/names.hpp"
#include "kernels/backend_choice.hpp"
#include "kernels/testbed.hpp"

namespace moetune::cli {

std::string default_backend() { return unwrap(kernels::default_backend()); }

void check_backend_name(std::string const& name, std::string const& where) {
  unwrap(kernels::check_backend_name(name, where));
}

void add_backend_option(CLI::App& app, std::string* backend) {
  app.add_option("--backend", *backend,
                 "kernel backend: cuda, cpu or triton (default: $MOETUNE_BACKEND, else cuda "
                 "when a GPU is visible, else cpu)");
}

std::unique_ptr<core::Backend> backend_or_exit(std::string const& name) {
  auto backend = kernels::make_backend(name);
  if (!backend.ok()) {
    throw CliExit{kExitBadInput, "--backend " + name + ": " + backend.error().to_string()};
  }
  return std::move(backend).value();
}

std::vector<std::string> env_var_names() {
  std::vector<std::string> names;
  for (auto const& v : env_var_table()) names.emplace_back(v.name);
  return names;
}

kernels::FastPaths fast_paths_from_env_or_exit(std::string const& backend) {
  return unwrap(kernels::fast_paths_from_env(backend, env_var_names()));
}

void add_problem_option(CLI::App& app, std::string* spec) {
  app.add_option("--problem", *spec,
                 "the problem, e.g. E=128,K=2048,I=768,topk=8,act=silu,dtype=bf16");
}

core::MoeProblem parse_problem_or_exit(std::string const& spec) {
  auto p = core::parse_problem_spec(spec);
  if (!p.ok()) {
    throw CliExit{kExitBadInput, "--problem: " + p.error().to_string()};
  }
  return std::move(p).value();
}

void check_m(int64_t m, std::string const& option) {
  if (m < 0 || m > core::kMaxTokens) {
    throw CliExit{kExitBadInput, option + " " + std::to_string(m) +
                                     " is out of range; expected a token count in [0, " +
                                     std::to_string(core::kMaxTokens) + "]"};
  }
}

CLI::Validator decimal_integer() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        size_t const digits = text.starts_with('-') ? 1 : 0;
        bool ok = text.size() > digits;
        for (size_t i = digits; i < text.size() && ok; ++i) ok = text[i] >= '0' && text[i] <= '9';
        if (ok) return "";
        return "'" + core::clip(text) + "' is not a decimal integer; write digits, e.g. 16";
      },
      "INT");
}

CLI::Validator finite_number(double lo, double hi, bool lo_inclusive) {
  auto g = [](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", v);
    return std::string(buf);
  };
  std::string const range = std::string(lo_inclusive ? "[" : "(") + g(lo) + ", " + g(hi) + "]";
  return CLI::Validator(
      [lo, hi, lo_inclusive, range](std::string& text) -> std::string {
        char* end = nullptr;
        double const v = std::strtod(text.c_str(), &end);
        bool const parsed = !text.empty() && end == text.c_str() + text.size();
        if (parsed && std::isfinite(v) && (lo_inclusive ? v >= lo : v > lo) && v <= hi) return "";
        return "'" + core::clip(text) + "' is not a finite number in " + range;
      },
      "NUMBER");
}

CLI::Validator dev_defines() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        auto parsed = core::parse_dev_defines(text, "fix the option");
        return parsed.ok() ? "" : parsed.error().message;
      },
      "DEFINES");
}

void check_tables_dir(std::string const& dir, std::string const& option) {
  std::error_code ec;
  if (dir.empty() || std::filesystem::is_directory(dir, ec)) return;
  throw CliExit{kExitBadInput, option + " '" + core::clip(dir) +
                                   "' is not a directory; give the folder that holds the "
                                   "tables (e.g. tables/cpu)"};
}

core::Recipe load_recipe_or_exit(std::string const& path) {
  return unwrap(core::load_recipe(path));
}

core::Table load_table_or_exit(std::string const& path) { return unwrap(core::load_table(path)); }

core::MoeProblem problem_from_key(core::TableKey const& key, int64_t m, std::string const& file) {
  if (key.hidden_size <= 0 || key.top_k <= 0 || !key.activation.has_value()) {
    throw CliExit{kExitBadInput,
                  file +
                      ": the table has no manifest with K, top_k and activation, so the "
                      "backend's default config cannot be chosen; pass --problem "
                      "E=..,K=..,I=..,topk=..,act=..,dtype=.."};
  }
  return core::problem_for_key(key, m);
}

std::string backend_for_family(std::string const& family) {
  if (family == "cpu_tiled") return "cpu";
  return family == "triton_vllm" ? "triton" : "cuda";
}

std::unique_ptr<core::Backend> backend_for_table(core::TableKey const& key,
                                                 std::string const& file) {
  std::string const name = backend_for_family(key.family);
  auto backend = kernels::make_backend(name);
  if (!backend.ok()) {
    throw CliExit{kExitBadInput,
                  file + ": family '" + (key.family.empty() ? "unknown" : key.family) +
                      "' takes its default config from the " + name +
                      " backend, which is unavailable here (" + backend.error().to_string() +
                      "); resolve on a machine with that backend, or use a table with a row for "
                      "this M"};
  }
  return std::move(backend).value();
}

std::string format_us(double us) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), us < 100 ? "%.2f" : "%.1f", us);
  return buf;
}

namespace {

std::string format_source(std::optional<core::Source> const& source) {
  if (!source.has_value()) return "(no source)";
  std::ostringstream out;
  out << source->kind;
  if (!source->date.empty()) out << " " << source->date;
  if (!source->device.empty()) out << " on " << source->device;
  for (auto const& [name, value] : source->numbers) {
    out << " " << name << "="
        << (name.ends_with("_us") ? format_us(value) : std::to_string(int64_t(value)));
  }
  return out.str();
}

std::string format_policy(core::ResolverPolicy const& p, bool file_order) {
  std::string out = file_order
                        ? "the engines' nearest key (ties to the key listed first in the file)"
                        : "the engines' nearest key (ties to the smaller key)";
  if (p.tiny_m_threshold) {
    out += "; M <= " + std::to_string(*p.tiny_m_threshold) + " -> backend default";
  }
  if (p.beyond_range_factor) {
    std::ostringstream f;
    f << *p.beyond_range_factor;
    out += "; M > " + f.str() + " x largest key -> backend default";
  }
  return out;
}

}  // namespace

std::string format_engine_fields(std::map<std::string, std::string> const& fields,
                                 std::vector<std::string> const& absent) {
  std::string out;
  for (auto const& [name, text] : fields) out += (out.empty() ? "" : " ") + name + "=" + text;
  for (auto const& name : absent) {
    int const fallback =
        name == "num_warps" ? core::kTritonDefaultWarps : core::kTritonDefaultStages;
    out += (out.empty() ? "" : "; ") + name + " absent (Triton's default " +
           std::to_string(fallback) + ")";
  }
  return out;
}

std::string format_table_text(core::Table const& table, std::string const& path) {
  core::TableKey const& k = table.key;
  std::ostringstream out;
  out << "table " << path << "\n";
  out << "  key: E=" << k.num_experts << " N=" << k.intermediate_size;
  if (k.hidden_size > 0) out << " K=" << k.hidden_size;
  if (k.top_k > 0) out << " top_k=" << k.top_k;
  if (k.activation) out << " act=" << core::to_string(*k.activation);
  out << " dtype=" << core::to_string(k.dtype) << " device=" << k.device_name;
  if (!k.family.empty()) out << " family=" << k.family << " v" << k.family_version;
  if (!k.toolchain.empty()) out << " toolchain=" << k.toolchain;
  out << (table.has_manifest ? "" : " (no manifest: a plain vLLM file)") << "\n";
  out << "  rule: " << format_policy(table.policy, !table.key_order.empty()) << "\n";
  if (table.rows.empty()) out << "  (no rows)\n";
  size_t width = 6;
  for (auto const& [m, row] : table.rows) {
    width = std::max(width, core::short_string(row.config).size());
  }
  for (int64_t const m : core::keys_in_file_order(table)) {
    core::TableRow const& row = table.rows.at(m);
    std::string cfg = core::short_string(row.config);
    char bucket[32];
    std::snprintf(bucket, sizeof(bucket), "%8lld", static_cast<long long>(m));
    std::string const engine = format_engine_fields(row.vllm_extra, row.absent_fields);
    out << "  " << bucket << "  " << cfg << std::string(width - cfg.size() + 2, ' ')
        << format_source(row.source) << (engine.empty() ? "" : "  engine: " + engine) << "\n";
  }
  return out.str();
}

}  // namespace moetune::cli
