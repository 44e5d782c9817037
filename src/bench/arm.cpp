// Arm specs and the worker line protocol; see arm.hpp.
#include "bench/arm.hpp"

#include <algorithm>
#include <sstream>

#include "core/build_info.hpp"
#include "core/dev_defines.hpp"
#include "core/flat_json.hpp"
#include "core/names.hpp"

namespace moetune::bench {
namespace {

using core::FlatJson;
using core::json_string;

const std::vector<std::string> kArmItems = {"default", "tables", "levers", "binary", "defines"};

/// "NAME[=VALUE][+...]" as MOETUNE_DEV_NVRTC_DEFINES takes it ("NAME=VALUE NAME2"), or "" when an
/// item is empty or holds a space, or the kernels' JIT would refuse it (core::parse_dev_defines).
std::string defines_of(std::string const& value) {
  if (value.find_first_of(" \t") != std::string::npos) return "";
  std::string out = value;
  std::replace(out.begin(), out.end(), '+', ' ');
  auto tokens = core::parse_dev_defines(out);
  // One token per '+'-separated item: an empty item ("", "A=1+", "A++B") has none.
  const auto items = static_cast<size_t>(std::count(value.begin(), value.end(), '+')) + 1;
  return tokens.ok() && tokens->size() == items ? out : "";
}

core::Error arm_error(std::string const& text, std::string const& message) {
  return core::make_error(core::ErrorCode::kInvalidArgument, "--arm " + text, message);
}

}  // namespace

core::Result<ArmSpec> parse_arm(std::string const& text) {
  auto const eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    return arm_error(text, "expected NAME=SPEC, e.g. A=default or B=tables:tables/cpu");
  }
  ArmSpec arm;
  arm.name = text.substr(0, eq);
  arm.spec = text.substr(eq + 1);
  std::stringstream in(arm.spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    auto const colon = item.find(':');
    std::string const kind = item.substr(0, colon);
    std::string const value = colon == std::string::npos ? "" : item.substr(colon + 1);
    if (kind == "default" && colon == std::string::npos) continue;
    if (colon != std::string::npos && !value.empty()) {
      if (kind == "tables") {
        arm.tables = value;
        continue;
      }
      if (kind == "binary") {
        arm.binary = value;
        continue;
      }
      if (kind == "defines") {
        arm.defines = defines_of(value);
        if (!arm.defines.empty()) continue;
      }
      if (kind == "levers") {
        std::string levers = value;
        for (char& c : levers) c = c == '+' ? ',' : c;
        arm.levers = levers;
        continue;
      }
    }
    return arm_error(text, "item '" + item +
                               "' is not one of default, tables:DIR, levers:NAME=on|off[+...], "
                               "binary:PATH, defines:NAME[=VALUE][+...]" +
                               core::did_you_mean(kind, kArmItems));
  }
  return arm;
}

std::string arm_worker_header(std::string const& backend, std::string const& device) {
  return "{\"worker\": \"moetune-bench\", \"worker_version\": " +
         std::to_string(kArmWorkerVersion) + ", \"commit\": " + json_string(core::git_commit()) +
         ", \"device\": " + json_string(device) + ", \"backend\": " + json_string(backend) + "}";
}

std::string arm_point_json(BenchPoint const& p) {
  return "{\"series\": " + json_string(p.series) +
         ", \"M\": " + std::to_string(p.problem.num_tokens) +
         ", \"digest\": " + json_string(p.digest) +
         ", \"deterministic\": " + (p.deterministic ? "true" : "false") +
         ", \"check_ok\": " + (p.check_ok ? "true" : "false") +
         ", \"rel_err\": " + core::json_double(p.rel_err) +
         ", \"config\": " + json_string(core::short_string(p.config)) +
         ", \"rule\": " + json_string(p.rule) + ", \"fast_paths\": " + json_string(p.fast_paths) +
         ", \"samples_us\": " + core::json_doubles(p.samples_us) + "}";
}

namespace {

/// The worker's first line: `moetune bench --arm-worker` at this build's protocol version; its
/// commit and device go into `report`.
core::Status read_arm_header(core::Result<FlatJson> const& obj, std::string const& line,
                             std::string const& at, ArmReport& report) {
  auto worker = obj.ok() ? obj->string("worker") : core::Result<std::string>(obj.error());
  auto version = obj.ok() ? obj->number("worker_version") : core::Result<double>(obj.error());
  if (!worker.ok() || *worker != "moetune-bench" || !version.ok()) {
    return core::make_error(core::ErrorCode::kParse, at,
                            "not a `moetune bench --arm-worker` header ('" + line.substr(0, 60) +
                                "'); is the arm's binary a moetune build with bench?");
  }
  if (*version != kArmWorkerVersion) {
    return core::make_error(core::ErrorCode::kVersion, at,
                            "worker_version " + std::to_string(int(*version)) +
                                " but this build reads " + std::to_string(kArmWorkerVersion) +
                                "; run arms with builds of the same protocol");
  }
  report.commit = obj->string("commit").ok() ? *obj->string("commit") : "";
  report.device = obj->string("device").ok() ? *obj->string("device") : "";
  return core::Status::Ok();
}

/// One point line: every field present and typed, else an error naming the line.
core::Result<ArmPoint> read_arm_point(FlatJson const& obj, std::string const& line,
                                      std::string const& at) {
  auto series = obj.string("series");
  auto m = obj.number("M");
  auto digest = obj.string("digest");
  auto det = obj.boolean("deterministic");
  auto ok = obj.boolean("check_ok");
  auto err = obj.number("rel_err");
  auto config = obj.string("config");
  auto rule = obj.string("rule");
  auto fp = obj.string("fast_paths");
  if (!series.ok() || !m.ok() || !digest.ok() || !det.ok() || !ok.ok() || !err.ok() ||
      !config.ok() || !rule.ok() || !fp.ok() || !obj.has("samples_us")) {
    return core::make_error(core::ErrorCode::kParse, at,
                            "a point line lacks a field: " + core::clip(line, 200));
  }
  if (!(*m >= 0 && *m <= static_cast<double>(core::kMaxTokens))) {  // then the cast is defined
    return core::make_error(
        core::ErrorCode::kParse, at,
        "a point's M is " + core::clip(obj.raw("M")) + "; expected a token count");
  }
  auto samples = core::parse_doubles(obj.raw("samples_us"), at);
  if (!samples.ok()) return samples.error();
  ArmPoint p;
  p.series = *series;
  p.m = static_cast<int64_t>(*m);
  p.digest = *digest;
  p.deterministic = *det;
  p.check_ok = *ok;
  p.rel_err = *err;
  p.config = *config;
  p.rule = *rule;
  p.fast_paths = *fp;
  p.samples_us = *samples;
  return p;
}

}  // namespace

core::Result<ArmReport> parse_arm_output(std::string const& text, std::string const& where) {
  ArmReport report;
  std::stringstream in(text);
  std::string line;
  int n = 0;
  bool header = false;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    std::string const at = where + ": line " + std::to_string(n);
    auto obj = FlatJson::parse(line, at);
    if (!header) {
      MOETUNE_RETURN_IF_ERROR(read_arm_header(obj, line, at, report));
      header = true;
      continue;
    }
    if (!obj.ok()) return obj.error();
    auto point = read_arm_point(*obj, line, at);
    if (!point.ok()) return point.error();
    report.points.push_back(std::move(*point));
  }
  if (!header) {
    return core::make_error(core::ErrorCode::kParse, where,
                            "the worker printed nothing; see its stderr above");
  }
  return report;
}

}  // namespace moetune::bench
