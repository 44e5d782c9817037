// Lever table JSON io (lever_io.hpp). Uses json_io's strict ObjectReader; keys are the C++ field
// names (STYLE 8).
#include "core/lever_io.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/json_io.hpp"

namespace moetune::core {
namespace {

Status read_strings(Json const& j, JsonAt const& at, std::vector<std::string>* out) {
  if (!j.is_array()) {
    return json_error(ErrorCode::kParse, at,
                      "expected an array of strings, got " + describe_json(j));
  }
  out->clear();
  for (size_t i = 0; i < j.size(); ++i) {
    std::string s;
    MOETUNE_RETURN_IF_ERROR(from_json(j[i], at.index(static_cast<int64_t>(i)), &s));
    out->push_back(std::move(s));
  }
  return Status::Ok();
}

Status read_condition(Json const& j, JsonAt const& at, LeverCondition* out) {
  if (!j.is_array()) {
    return json_error(
        ErrorCode::kParse, at,
        "expected an array of clauses ({\"key\": [\"value\", ...]}), got " + describe_json(j));
  }
  out->clear();
  for (size_t i = 0; i < j.size(); ++i) {
    JsonAt const ci = at.index(static_cast<int64_t>(i));
    if (!j[i].is_object()) {
      return json_error(ErrorCode::kParse, ci, "expected an object, got " + describe_json(j[i]));
    }
    LeverClause clause;
    for (auto const& [key, value] : j[i].items()) {
      MOETUNE_RETURN_IF_ERROR(read_strings(value, ci.field(key), &clause[key]));
    }
    out->push_back(std::move(clause));
  }
  return Status::Ok();
}

Json condition_json(LeverCondition const& c) {
  Json out = Json::array();
  for (auto const& clause : c) {
    Json o = Json::object();
    for (auto const& key : deployment_keys()) {
      if (auto it = clause.find(key); it != clause.end()) o[key] = it->second;
    }
    out.push_back(o);
  }
  return out;
}

Json deployment_json(Deployment const& d) {
  return Json{{"backend", d.backend}, {"arch", d.arch},   {"tp", d.tp},
              {"ep", d.ep},           {"dtype", d.dtype}, {"role", d.role}};
}

Status read_deployment(Json const& j, JsonAt const& at, Deployment* d) {
  auto r = ObjectReader::open(j, at, deployment_keys());
  if (!r.ok()) return r.error();
  for (auto const& key : deployment_keys()) {
    if (!r->has(key.c_str())) return r->missing(key.c_str());
  }
  MOETUNE_RETURN_IF_ERROR(r->required("backend", &d->backend));
  MOETUNE_RETURN_IF_ERROR(r->required("arch", &d->arch));
  MOETUNE_RETURN_IF_ERROR(r->required("tp", &d->tp));
  MOETUNE_RETURN_IF_ERROR(r->required("ep", &d->ep));
  MOETUNE_RETURN_IF_ERROR(r->required("dtype", &d->dtype));
  return r->required("role", &d->role);
}

Status read_lever(Json const& j, JsonAt const& at, Lever* l) {
  auto r = ObjectReader::open(j, at,
                              {"name", "description", "lever_class", "served_at", "default_on",
                               "depends_on", "exclusive_with", "evidence"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->required("name", &l->name));
  MOETUNE_RETURN_IF_ERROR(r->required("description", &l->description));
  std::string cls;
  MOETUNE_RETURN_IF_ERROR(r->required("lever_class", &cls));
  auto parsed = parse_lever_class(cls);
  if (!parsed.ok()) {
    return json_error(ErrorCode::kParse, at.field("lever_class"), parsed.error().message);
  }
  l->lever_class = *parsed;
  for (char const* key : {"served_at", "default_on"}) {
    if (!r->has(key)) return r->missing(key);
    MOETUNE_RETURN_IF_ERROR(
        read_condition(j[key], at.field(key), key[0] == 's' ? &l->served_at : &l->default_on));
  }
  if (r->has("depends_on")) {
    MOETUNE_RETURN_IF_ERROR(read_strings(j["depends_on"], at.field("depends_on"), &l->depends_on));
  }
  if (r->has("exclusive_with")) {
    MOETUNE_RETURN_IF_ERROR(
        read_strings(j["exclusive_with"], at.field("exclusive_with"), &l->exclusive_with));
  }
  if (!r->has("evidence")) return r->missing("evidence");
  auto e = ObjectReader::open(j["evidence"], at.field("evidence"),
                              {"check", "runs_on", "claim", "result"});
  if (!e.ok()) return e.error();
  MOETUNE_RETURN_IF_ERROR(e->required("check", &l->evidence.check));
  MOETUNE_RETURN_IF_ERROR(e->required("runs_on", &l->evidence.runs_on));
  MOETUNE_RETURN_IF_ERROR(e->required("claim", &l->evidence.claim));
  return e->optional("result", &l->evidence.result);
}

Status read_table(Json const& j, JsonAt const& at, LeverTable* t) {
  auto r = ObjectReader::open(j, at, {"lever_table_version", "deployments", "levers", "retired"});
  if (!r.ok()) return r.error();
  MOETUNE_RETURN_IF_ERROR(r->required("lever_table_version", &t->lever_table_version));
  if (t->lever_table_version < LeverTable::kOldestSupported ||
      t->lever_table_version > LeverTable::kSchemaVersion) {
    return json_error(ErrorCode::kVersion, at.field("lever_table_version"),
                      "version " + std::to_string(t->lever_table_version) +
                          " is outside the supported [" +
                          std::to_string(LeverTable::kOldestSupported) + ", " +
                          std::to_string(LeverTable::kSchemaVersion) +
                          "]; write it with this moetune (moetune levers list --json)");
  }
  for (char const* key : {"deployments", "levers", "retired"}) {
    if (!r->has(key)) return r->missing(key);
    if (!j[key].is_array()) {
      return json_error(ErrorCode::kParse, at.field(key),
                        "expected an array, got " + describe_json(j[key]));
    }
  }
  for (size_t i = 0; i < j["deployments"].size(); ++i) {
    Deployment d;
    MOETUNE_RETURN_IF_ERROR(
        read_deployment(j["deployments"][i], at.field("deployments").index(int64_t(i)), &d));
    t->deployments.push_back(d);
  }
  for (size_t i = 0; i < j["levers"].size(); ++i) {
    Lever l;
    MOETUNE_RETURN_IF_ERROR(read_lever(j["levers"][i], at.field("levers").index(int64_t(i)), &l));
    t->levers.push_back(std::move(l));
  }
  for (size_t i = 0; i < j["retired"].size(); ++i) {
    JsonAt const ri = at.field("retired").index(int64_t(i));
    auto rr = ObjectReader::open(j["retired"][i], ri, {"name", "replacement", "reason"});
    if (!rr.ok()) return rr.error();
    RetiredName n;
    MOETUNE_RETURN_IF_ERROR(rr->required("name", &n.name));
    MOETUNE_RETURN_IF_ERROR(rr->optional("replacement", &n.replacement));
    MOETUNE_RETURN_IF_ERROR(rr->required("reason", &n.reason));
    t->retired.push_back(std::move(n));
  }
  return Status::Ok();
}

}  // namespace

Result<LeverTable> parse_lever_table_json(std::string_view text, std::string const& file) {
  auto j = parse_json(text, file);
  if (!j.ok()) return j.error();
  LeverTable t;
  MOETUNE_RETURN_IF_ERROR(read_table(*j, JsonAt{file, ""}, &t));
  MOETUNE_RETURN_IF_ERROR(validate(t, file));
  return t;
}

Result<LeverTable> load_lever_table(std::string const& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return make_error(ErrorCode::kNotFound, path,
                      "no such lever table file; write one with moetune levers list --json");
  }
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  if (!in.good() && !in.eof()) {
    return make_error(ErrorCode::kIo, path, "cannot read the file");
  }
  return parse_lever_table_json(s.str(), path);
}

std::string to_json_text(LeverTable const& t) {
  Json levers = Json::array();
  for (auto const& l : t.levers) {
    levers.push_back(Json{{"name", l.name},
                          {"description", l.description},
                          {"lever_class", std::string(to_string(l.lever_class))},
                          {"served_at", condition_json(l.served_at)},
                          {"default_on", condition_json(l.default_on)},
                          {"depends_on", l.depends_on},
                          {"exclusive_with", l.exclusive_with},
                          {"evidence", Json{{"check", l.evidence.check},
                                            {"runs_on", l.evidence.runs_on},
                                            {"claim", l.evidence.claim},
                                            {"result", l.evidence.result}}}});
  }
  Json deployments = Json::array();
  for (auto const& d : t.deployments) deployments.push_back(deployment_json(d));
  Json retired = Json::array();
  for (auto const& r : t.retired) {
    retired.push_back(Json{{"name", r.name}, {"replacement", r.replacement}, {"reason", r.reason}});
  }
  return print_json(Json{{"lever_table_version", t.lever_table_version},
                         {"deployments", deployments},
                         {"levers", levers},
                         {"retired", retired}},
                    2);
}

Result<LeverTable> const& builtin_lever_table() {
  static Result<LeverTable> const table =
      parse_lever_table_json(builtin_lever_table_text(), kLeverTablePath);
  return table;
}

std::string to_json_text(LeverResolution const& r, int indent) {
  Json levers = Json::array();
  for (auto const& l : r.levers) {
    levers.push_back(Json{{"name", l.name},
                          {"on", l.on},
                          {"decided_by", std::string(to_string(l.decided_by))},
                          {"rule", l.rule}});
  }
  Json const j{{"deployment", deployment_json(r.deployment)}, {"levers", levers}};
  return indent < 0 ? j.dump() + "\n" : print_json(j, indent);
}

}  // namespace moetune::core
