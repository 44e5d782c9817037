// `moetune materialize --from-store`: the tables a tune run wrote, rebuilt from its store alone
// (real tune runs on the cpu backend, a real SQLite store): the same rows, times and digests, the
// latest decision when a bucket was tuned twice, and a clear refusal when the store lacks one.
#include <cstdint>
#include <filesystem>
#include <string>

#include "cli/cli_test_util.hpp"
#include "cli/recipe_fixtures.hpp"
#include "core/table.hpp"

namespace moetune::cli::testing {
namespace {

class CliTablesFromStore : public CliTest {
 protected:
  core::Table load(std::string const& dir) const {
    auto table = core::load_table(path(dir + "/" + kTinyTableName).string());
    EXPECT_TRUE(table.ok()) << table.error().to_string();
    return table.ok() ? std::move(table).value() : core::Table{};
  }
};

TEST_F(CliTablesFromStore, RebuildsTheTunedRowsWithTheirTimesAndDigests) {
  write("recipe.json", tiny_recipe_json());
  RunResult tune = run({"tune", "--recipe", "recipe.json", "--out", "tuned", "--store", "s.db",
                        "--reps", "2", "--warmup", "1"});
  ASSERT_EQ(tune.exit_code, 0) << tune.out << tune.err;
  RunResult r =
      run({"materialize", "--recipe", "recipe.json", "--out", "rebuilt", "--from-store", "s.db"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("(from store s.db)"), std::string::npos) << r.out;
  core::Table const tuned = load("tuned");
  core::Table const rebuilt = load("rebuilt");
  EXPECT_EQ(rebuilt.key, tuned.key);
  ASSERT_EQ(rebuilt.rows.size(), tuned.rows.size());
  EXPECT_EQ(rebuilt.rows.at(1), tuned.rows.at(1));  // the pinned row, source and all
  for (int64_t bucket : {4, 16}) {
    auto const& want = tuned.rows.at(bucket);
    auto const& got = rebuilt.rows.at(bucket);
    EXPECT_EQ(got.config, want.config) << bucket;
    ASSERT_TRUE(got.source.has_value() && want.source.has_value());
    EXPECT_EQ(got.source->kind, "tuned");
    EXPECT_EQ(got.source->digest, want.source->digest) << bucket;
    for (char const* n : {"time_us", "default_us", "tie"}) {
      EXPECT_EQ(got.source->numbers.at(n), want.source->numbers.at(n)) << bucket << " " << n;
    }
    EXPECT_NE(got.source->protocol.find("rebuilt from tune store s.db"), std::string::npos);
  }
  RunResult c = run({"check", "--recipe", "recipe.json", "--tables", "rebuilt"});
  EXPECT_EQ(c.exit_code, 0) << c.out << c.err;
}

TEST_F(CliTablesFromStore, TakesTheLatestDecisionOfABucketTunedTwice) {
  write("recipe.json", tiny_recipe_json());
  ASSERT_EQ(run({"tune", "--recipe", "recipe.json", "--out", "t1", "--store", "s.db", "--reps", "2",
                 "--warmup", "1"})
                .exit_code,
            0);
  // Bucket 4 again, with another margin: a second decision for it, recorded later.
  RunResult again = run({"tune", "--recipe", "recipe.json", "--buckets", "4", "--out", "t2",
                         "--store", "s.db", "--reps", "2", "--warmup", "1", "--margin", "0.5"});
  ASSERT_EQ(again.exit_code, 0) << again.out << again.err;
  ASSERT_EQ(
      run({"materialize", "--recipe", "recipe.json", "--out", "rebuilt", "--from-store", "s.db"})
          .exit_code,
      0);
  core::Table const second = load("t2");
  core::Table const rebuilt = load("rebuilt");
  EXPECT_EQ(rebuilt.rows.at(4).config, second.rows.at(4).config);
  EXPECT_EQ(rebuilt.rows.at(4).source->numbers.at("time_us"),
            second.rows.at(4).source->numbers.at("time_us"));
  EXPECT_NE(rebuilt.rows.at(4).source->protocol.find("(run 2,"), std::string::npos)
      << rebuilt.rows.at(4).source->protocol;
  EXPECT_NE(rebuilt.rows.at(16).source->protocol.find("(run 1,"), std::string::npos);
}

TEST_F(CliTablesFromStore, RefusesAStoreWithoutABucketAndAMissingStoreWritingNothing) {
  write("recipe.json", tiny_recipe_json());
  ASSERT_EQ(run({"tune", "--recipe", "recipe.json", "--buckets", "4", "--out", "t", "--store",
                 "s.db", "--reps", "2", "--warmup", "1"})
                .exit_code,
            0);
  RunResult r =
      run({"materialize", "--recipe", "recipe.json", "--out", "rebuilt", "--from-store", "s.db"});
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find(std::string("the store holds no decision for ") + kTinyTableName +
                       " bucket 16; tune it into this store"),
            std::string::npos)
      << r.err;
  EXPECT_FALSE(std::filesystem::exists(path("rebuilt/" + std::string(kTinyTableName))));
  RunResult missing = run(
      {"materialize", "--recipe", "recipe.json", "--out", "rebuilt", "--from-store", "nope.db"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("--from-store nope.db: no such file"), std::string::npos)
      << missing.err;
  EXPECT_FALSE(std::filesystem::exists(path("nope.db")));  // not created by the refusal
}

}  // namespace
}  // namespace moetune::cli::testing
