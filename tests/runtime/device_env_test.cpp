// Which device's tables a MoeRunner serves (issue 51): a table made on another device serves with
// rule other_device unless RunnerOptions::same_device_tables or MOETUNE_TABLES_SAME_DEVICE=1
// forbids it (then the default serves, with a warning); MOETUNE_DEVICE_NAME sets the device name;
// the shipped cpu tables still serve cpu runners with rule table.
#include "runtime/device_env.hpp"

#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "core/scoped_env.hpp"
#include "core/table.hpp"
#include "core/temp_dir.hpp"
#include "moetune/moe_runner.hpp"

namespace moetune {
namespace {

std::string const kTables = std::string(MOETUNE_SOURCE_DIR) + "/tables/cpu";

core::MoeProblem demo_problem() {
  return *core::parse_problem_spec("E=8,K=256,I=128,topk=2,act=silu,dtype=bf16,arch=cpu");
}

using testing::ScopedEnv;

class RunnerDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("MOETUNE_DEVICE_NAME");
    unsetenv("MOETUNE_TABLES_SAME_DEVICE");
    dir_ = moetune::testing::unique_temp_dir("runner-device");
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  /// The shipped cpu table, relabelled as made on `device`, written into dir_/<sub>.
  std::string relabelled_tables(std::string const& device, std::string const& sub) const {
    auto files = core::list_table_files(kTables);
    EXPECT_TRUE(files.ok() && files->size() == 1u);
    core::Table t = *core::load_table(files->front());
    t.key.device_name = device;
    std::string const out = dir_ + "/" + sub;
    std::filesystem::create_directories(out);
    auto saved = core::save_table(t, out);
    EXPECT_TRUE(saved.ok()) << saved.error().to_string();
    return out;
  }
  RunnerOptions options(std::string const& tables) {
    RunnerOptions o;
    o.tables_dir = tables;
    o.cache_path = dir_ + "/knobs.json";
    o.max_tokens = 256;
    o.warn = [this](std::string const& w) { warnings_.push_back(w); };
    return o;
  }
  std::string dir_;
  std::vector<std::string> warnings_;
};

TEST_F(RunnerDevice, ShippedCpuTablesServeCpuRunnersWithRuleTable) {
  auto r = MoeRunner::create(demo_problem(), "cpu", options(kTables));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  auto c = (*r)->choose(16);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rule, ChoiceRule::kTable);
  EXPECT_EQ(c->explain.find("other_device"), std::string::npos) << c->explain;
  EXPECT_TRUE(warnings_.empty());
}

TEST_F(RunnerDevice, ATableOfAnotherDeviceServesWithRuleOtherDeviceByDefault) {
  std::string const tables = relabelled_tables("NVIDIA_H200", "h200");
  auto r = MoeRunner::create(demo_problem(), "cpu", options(tables));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  auto c = (*r)->choose(16);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->rule, ChoiceRule::kOtherDevice);
  EXPECT_STREQ(to_string(c->rule), "other_device");
  EXPECT_NE(c->explain.find("other_device: made on NVIDIA_H200, this device is cpu"),
            std::string::npos)
      << c->explain;
  EXPECT_NE((*r)->table_path(), "");
  // The row is the table's: the same config the shipped (cpu) table gives.
  auto same = MoeRunner::create(demo_problem(), "cpu", options(kTables));
  ASSERT_TRUE(same.ok());
  EXPECT_EQ(c->config, (*same)->choose(16)->config);
}

TEST_F(RunnerDevice, SameDeviceTablesOptionFallsBackToTheDefaultWithAWarning) {
  std::string const tables = relabelled_tables("NVIDIA_H200", "h200");
  RunnerOptions o = options(tables);
  o.same_device_tables = true;
  auto r = MoeRunner::create(demo_problem(), "cpu", o);
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)->table_path(), "");
  EXPECT_EQ((*r)->choose(16)->rule, ChoiceRule::kDefault);
  ASSERT_EQ(warnings_.size(), 1u);
  EXPECT_NE(warnings_[0].find("was made on NVIDIA_H200, this device is cpu; not used"),
            std::string::npos)
      << warnings_[0];
}

TEST_F(RunnerDevice, SameDeviceTablesEnvironmentVariableForbidsToo) {
  std::string const tables = relabelled_tables("NVIDIA_H200", "h200");
  ScopedEnv env("MOETUNE_TABLES_SAME_DEVICE", "1");
  auto r = MoeRunner::create(demo_problem(), "cpu", options(tables));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_EQ((*r)->choose(16)->rule, ChoiceRule::kDefault);
  // A cpu table still serves a cpu runner under the variable.
  auto cpu = MoeRunner::create(demo_problem(), "cpu", options(kTables));
  ASSERT_TRUE(cpu.ok());
  EXPECT_EQ((*cpu)->choose(16)->rule, ChoiceRule::kTable);
}

TEST_F(RunnerDevice, ATableOfThisDeviceIsPreferredOverAnotherDevicesFoundFirst) {
  // "E=...,device_name=AAA..." sorts before "...device_name=cpu...": the other device's comes
  // first.
  std::string const tables = relabelled_tables("AAA_GPU", "both");
  ASSERT_TRUE(
      core::save_table(*core::load_table(core::list_table_files(kTables)->front()), tables).ok());
  auto r = MoeRunner::create(demo_problem(), "cpu", options(tables));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  EXPECT_NE((*r)->table_path().find("device_name=cpu"), std::string::npos) << (*r)->table_path();
  EXPECT_EQ((*r)->choose(16)->rule, ChoiceRule::kTable);
}

TEST_F(RunnerDevice, DeviceNameVariableSetsTheDeviceTablesAreMatchedAgainst) {
  ScopedEnv env("MOETUNE_DEVICE_NAME", "NVIDIA H200");
  auto r = MoeRunner::create(demo_problem(), "cpu", options(kTables));
  ASSERT_TRUE(r.ok()) << r.error().to_string();
  auto c = (*r)->choose(16);
  EXPECT_EQ(c->rule, ChoiceRule::kOtherDevice);
  EXPECT_NE(c->explain.find("made on cpu, this device is NVIDIA_H200"), std::string::npos)
      << c->explain;
  std::string const h200 = relabelled_tables("NVIDIA_H200", "h200");
  EXPECT_EQ((*MoeRunner::create(demo_problem(), "cpu", options(h200)))->choose(16)->rule,
            ChoiceRule::kTable);
}

TEST_F(RunnerDevice, BadValuesOfTheVariablesFailCreateNamingThem) {
  {
    ScopedEnv env("MOETUNE_TABLES_SAME_DEVICE", "yes");
    auto r = MoeRunner::create(demo_problem(), "cpu", options(kTables));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().to_string(),
              "MOETUNE_TABLES_SAME_DEVICE: 'yes' is not 0 or 1; 1 forbids tables made on another "
              "device, 0 (the default) lets them serve with rule other_device");
  }
  {
    ScopedEnv env("MOETUNE_DEVICE_NAME", "NVIDIA_H200,dtype=fp8");
    auto r = MoeRunner::create(demo_problem(), "cpu", options(kTables));
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().where, "MOETUNE_DEVICE_NAME");
  }
  ScopedEnv zero("MOETUNE_TABLES_SAME_DEVICE", "0");
  auto zero_value = runtime::same_device_tables_from_env();
  ASSERT_TRUE(zero_value.ok());
  EXPECT_FALSE(*zero_value);
}

}  // namespace
}  // namespace moetune
