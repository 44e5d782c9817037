// prewarm and pack; see bundle.hpp. The cuda compile step is in bundle_cuda.cpp.
#include "runtime/bundle.hpp"

#include <filesystem>
#include <set>

#include "core/atomic_file.hpp"
#include "core/build_info.hpp"
#include "core/config.hpp"
#include "core/flat_json.hpp"
#include "core/lint.hpp"
#include "core/names.hpp"
#include "core/table.hpp"
#include "kernels/cpu/cpu_backend.hpp"

namespace moetune::runtime {

#if defined(MOETUNE_HAVE_CUDA)
/// Compiles (or finds in the cubin cache) one config's kernels; fills outcome/cubins/compile_ms.
core::Status prewarm_cuda_config(core::MoeProblem const& p, core::MoeConfig const& c,
                                 PrewarmItem& item);
/// The cuda backend's default config (the default rule under the default fast paths).
core::MoeConfig cuda_default_config(core::MoeProblem const& p);
#endif

namespace {

namespace fs = std::filesystem;

core::Error bad(std::string where, std::string message) {
  return core::make_error(core::ErrorCode::kInvalidArgument, std::move(where), std::move(message));
}

core::Result<core::MoeProblem> problem_of(core::TableKey const& key, std::string const& file) {
  if (key.hidden_size <= 0 || key.top_k <= 0 || !key.activation) {
    return bad(file,
               "the table has no manifest with K, top_k and activation, so its configs "
               "cannot be checked or compiled; regenerate it with `moetune materialize` "
               "or `moetune tune`");
  }
  return core::problem_for_key(key, 0);
}

core::Status prewarm_row(core::Table const& t, std::string const& file, int64_t bucket,
                         core::MoeConfig const& c, PrewarmItem& item) {
  auto p = problem_of(t.key, file);
  if (!p.ok()) return p.error();
  p->num_tokens = bucket;
  std::string const where = file + ": rows[" + std::to_string(bucket) + "]";
  if (t.key.family == kernels::cpu::kCpuFamily) {
    core::Status s = kernels::cpu::cpu_tiled_can_implement(*p, c);
    if (!s.ok()) return bad(where, s.error().message);
    item.outcome = "validated";
    return core::Status::Ok();
  }
#if defined(MOETUNE_HAVE_CUDA)
  core::Status s = prewarm_cuda_config(*p, c, item);
  if (!s.ok()) return core::make_error(s.error().code, where, s.error().message);
  return core::Status::Ok();
#else
  return core::make_error(core::ErrorCode::kUnsupported, where,
                          "family '" + t.key.family + "' needs the cuda backend, which this " +
                              "moetune was built without; rebuild with nvcc on PATH");
#endif
}

}  // namespace

core::Result<PrewarmReport> prewarm_tables(std::string const& tables_dir,
                                           PrewarmProgress const& progress) {
  auto files = core::list_table_files(tables_dir);
  if (!files.ok()) return files.error();
  // Every table loads before anything compiles: a broken one fails in a second, not after minutes.
  std::vector<std::pair<std::string, core::Table>> tables;
  size_t total = 0;
  for (std::string const& f : *files) {
    auto t = core::load_table(f);
    if (!t.ok()) return t.error();
    if (t->rows.empty()) {
      // A .json that is not a table (a recipe, a bench result) loads as rows of nothing: say so
      // rather than prewarm nothing and report success.
      std::string keys;
      for (auto const& [name, value] : t->extra) keys += (keys.empty() ? "" : ", ") + name;
      return core::make_error(
          core::ErrorCode::kInvalidArgument, f,
          "holds no rows keyed by M" +
              (keys.empty() ? std::string() : " (its keys: " + core::clip(keys, 120) + ")") +
              "; expected a table, {\"<M>\": {\"BLOCK_SIZE_M\": .., ...}, ...}, as `moetune tune` "
              "or `materialize` writes: move other files out of the tables directory");
    }
    total += t->rows.size();
    tables.emplace_back(f, std::move(*t));
  }
  PrewarmReport report;
  for (auto const& [f, t] : tables) {
    ++report.tables;
    for (auto const& [bucket, row] : t.rows) {
      PrewarmItem item{.table = f,
                       .bucket = bucket,
                       .config = core::short_string(row.config),
                       .outcome = "",
                       .cubins = {},
                       .compile_ms = 0};
      MOETUNE_RETURN_IF_ERROR(prewarm_row(t, f, bucket, row.config, item));
      report.items.push_back(std::move(item));
      if (progress) progress(report.items.back(), report.items.size(), total);
    }
  }
  return report;
}

core::Result<PrewarmReport> prewarm_defaults(core::MoeProblem problem,
                                             std::vector<int64_t> const& ms,
                                             PrewarmProgress const& progress) {
  MOETUNE_RETURN_IF_ERROR(core::validate(problem));
  PrewarmReport report;
  bool const cpu = problem.arch == "cpu";
  for (int64_t m : ms) {
    problem.num_tokens = m;
    std::string const where = "--problem at M=" + std::to_string(m);
    core::MoeConfig config;
    if (cpu) {
      config = kernels::cpu::CpuBackend{}.default_config(problem);
    } else {
#if defined(MOETUNE_HAVE_CUDA)
      config = cuda_default_config(problem);
#else
      return core::make_error(core::ErrorCode::kUnsupported, where,
                              "arch " + problem.arch + " needs the cuda backend, which this " +
                                  "moetune was built without; rebuild with nvcc on PATH");
#endif
    }
    PrewarmItem item{.table = "default",
                     .bucket = m,
                     .config = core::short_string(config),
                     .outcome = "",
                     .cubins = {},
                     .compile_ms = 0};
    if (cpu) {
      core::Status s = kernels::cpu::cpu_tiled_can_implement(problem, config);
      if (!s.ok()) return bad(where, s.error().message);
      item.outcome = "validated";
    } else {
#if defined(MOETUNE_HAVE_CUDA)
      core::Status s = prewarm_cuda_config(problem, config, item);
      if (!s.ok()) return core::make_error(s.error().code, where, s.error().message);
#endif
    }
    report.items.push_back(std::move(item));
    if (progress) progress(report.items.back(), report.items.size(), ms.size());
  }
  return report;
}

/// "\"cubin/a.cubin\", \"cubin/b.cubin\"": a config's cubins as the bundle names them.
std::string cubin_list(std::vector<std::string> const& cubins) {
  std::string out;
  for (size_t i = 0; i < cubins.size(); ++i) {
    out += (i ? ", " : "") + core::json_string("cubin/" + fs::path(cubins[i]).filename().string());
  }
  return out;
}

std::string format_bundle_manifest(PrewarmReport const& report, std::string const& tables_dir) {
  using core::json_string;
  std::string out = "{\n  \"bundle_version\": " + std::to_string(kBundleVersion) +
                    ",\n  \"commit\": " + json_string(core::git_commit()) +
                    ",\n  \"tables_from\": " + json_string(tables_dir) + ",\n  \"configs\": [";
  for (size_t i = 0; i < report.items.size(); ++i) {
    PrewarmItem const& it = report.items[i];
    out += std::string(i ? "," : "") +
           "\n    {\"table\": " + json_string(fs::path(it.table).filename().string()) +
           ", \"bucket\": " + std::to_string(it.bucket) +
           ", \"config\": " + json_string(it.config) + ", \"outcome\": " + json_string(it.outcome) +
           ", \"cubins\": [" + cubin_list(it.cubins) + "]}";
  }
  return out + (report.items.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

core::Result<PrewarmReport> pack_bundle(std::string const& tables_dir, std::string const& out_dir,
                                        PrewarmProgress const& progress) {
  auto report = prewarm_tables(tables_dir, progress);
  if (!report.ok()) return report.error();
  MOETUNE_RETURN_IF_ERROR(core::ensure_writable_dir(out_dir + "/tables"));
  auto files = core::list_table_files(tables_dir);
  if (!files.ok()) return files.error();
  for (std::string const& f : *files) {
    for (std::string const& src : {f, core::manifest_path(f)}) {
      auto text = core::read_file(src);
      if (!text.ok() && text.error().code == core::ErrorCode::kNotFound) continue;
      if (!text.ok()) return text.error();
      MOETUNE_RETURN_IF_ERROR(
          core::write_file_atomic(out_dir + "/tables/" + fs::path(src).filename().string(), *text));
    }
  }
  std::set<std::string> written;  // a module several configs share is copied once
  for (PrewarmItem const& it : report->items) {
    for (std::string const& cubin : it.cubins) {
      if (!written.insert(cubin).second) continue;
      MOETUNE_RETURN_IF_ERROR(core::ensure_writable_dir(out_dir + "/cubin"));
      auto bytes = core::read_file(cubin);
      if (!bytes.ok()) return bytes.error();
      MOETUNE_RETURN_IF_ERROR(core::write_file_atomic(
          out_dir + "/cubin/" + fs::path(cubin).filename().string(), *bytes));
    }
  }
  MOETUNE_RETURN_IF_ERROR(core::write_file_atomic(out_dir + "/bundle.json",
                                                  format_bundle_manifest(*report, tables_dir)));
  return report;
}

}  // namespace moetune::runtime
