// moetune bench, ab and report end to end on the cpu backend (tiny problems, few repeats): the
// archive's contents, a digest mismatch caught point by point, identical arms refused as a win,
// and a report rendered from fixtures and from the committed kernel-benchmark CSV.
#include <gtest/gtest.h>

#include <filesystem>

#include "cli/cli_test_util.hpp"
#include "core/table.hpp"

namespace moetune::cli::testing {
namespace {

namespace fs = std::filesystem;

const std::string kProblem = "E=8,K=256,I=128,topk=2,act=silu,dtype=fp32";

/// The one folder directly under `dir` (a run's dated folder).
fs::path only_subdir(fs::path const& dir) {
  std::vector<fs::path> found;
  for (auto const& e : fs::directory_iterator(dir)) found.push_back(e.path());
  EXPECT_EQ(found.size(), 1u);
  return found.empty() ? dir : found.front();
}

/// A cpu table for kProblem whose one row splits both reductions in two: the same problem in a
/// different summation order, so its outputs differ in the last bits from the default's.
void write_split_k_table(fs::path const& dir) {
  core::Table t;
  t.key = {.num_experts = 8,
           .intermediate_size = 128,
           .hidden_size = 256,
           .top_k = 2,
           .activation = core::Activation::kSiluGated,
           .dtype = core::DType::kFp32,
           .device_name = "cpu",
           .family = "cpu_tiled",
           .family_version = 1};
  t.has_manifest = true;
  core::KernelConfig k;
  k.tile = {.block_m = 8, .block_n = 32, .block_k = 64, .group_m = 1};
  k.pipeline.split_k = 2;
  k.launch.num_threads = 1;
  t.rows[1].config = core::uniform_config(k);
  t.rows[1].source = core::Source{.kind = "measured", .date = "2026-11-29", .device = "cpu"};
  fs::create_directories(dir);
  auto saved = core::save_table(t, dir.string());
  ASSERT_TRUE(saved.ok()) << saved.error().to_string();
}

using BenchCli = CliTest;

TEST_F(BenchCli, BenchWritesADatedFolderWithEnvJsonAndOneCsvRowPerPoint) {
  auto r = run({"bench", "--backend", "cpu", "--problem", kProblem, "--m", "1,16", "--repeats", "3",
                "--warmup", "1", "--out", "runs", "--ceiling-mib", "8"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  fs::path const run_dir = only_subdir(path("runs"));
  EXPECT_TRUE(run_dir.filename().string().starts_with("20")) << run_dir;
  std::string const env = read_text(run_dir / "env.json");
  auto keys = top_level_keys(env);
  for (char const* k : {"env_version", "date", "command", "backend", "device", "driver",
                        "toolchain", "commit", "clocks", "ceilings", "options"}) {
    EXPECT_NE(std::find(keys.begin(), keys.end(), k), keys.end()) << k << " in " << env;
  }
  EXPECT_NE(env.find("plain blocked fp32 loop"), std::string::npos) << env;
  std::string const csv = read_text(run_dir / "bench.csv");
  EXPECT_EQ(count_lines(csv), 3) << csv;
  EXPECT_TRUE(csv.starts_with("bench_csv_version,series,backend,device,E,K,I,top_k,act,dtype,"));
  for (char const* col :
       {",time_us,p10_us,p90_us,ci_low_us,ci_high_us,floor_us,bound,ratio,",
        ",digest,deterministic,", ",g1_block_m,", ",g2_block_k,", ",sm_clock_mhz,power_w,"}) {
    EXPECT_NE(csv.find(col), std::string::npos) << col;
  }
  EXPECT_NE(csv.find(",ok,default,"), std::string::npos) << csv;  // check ok, default config
  EXPECT_NE(r.out.find("t/floor"), std::string::npos) << r.out;
}

TEST_F(BenchCli, BenchResolvesConfigsFromTables) {
  write_split_k_table(path("split"));
  auto r = run({"bench", "--backend", "cpu", "--problem", kProblem, "--m", "1,4", "--repeats", "2",
                "--out", "runs", "--ceiling-mib", "8", "--tables", "split"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string const csv = read_text(only_subdir(path("runs")) / "bench.csv");
  EXPECT_NE(csv.find(",exact_key,1,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",nearest_key,1,"), std::string::npos) << csv;
  EXPECT_NE(csv.find("m8n32k64g1w4s2sk2t1"), std::string::npos) << csv;
}

TEST_F(BenchCli, BenchUnderLeverBatchInvariantBypassesTablesAndSaysSo) {
  // The table's split_k 2 row would serve M = 1 and 4; the lever serves its own config instead,
  // as MoeRunner does (so `moetune ab` of the lever measures what serving it costs).
  write_split_k_table(path("split"));
  auto r = run({"bench", "--backend", "cpu", "--problem", kProblem, "--m", "1,4", "--repeats", "2",
                "--out", "runs", "--ceiling-mib", "8", "--tables", "split", "--levers",
                "batch_invariant=on"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::string const csv = read_text(only_subdir(path("runs")) / "bench.csv");
  EXPECT_EQ(count_lines(csv), 3) << csv;
  EXPECT_NE(csv.find(",batch_invariant,"), std::string::npos) << csv;
  EXPECT_EQ(csv.find(",exact_key,"), std::string::npos) << csv;
  EXPECT_EQ(csv.find("sk2"), std::string::npos) << csv;
}

TEST_F(BenchCli, BenchRefusesALeverNotServedHereBeforeWritingAnything) {
  auto r = run({"bench", "--backend", "cpu", "--problem", kProblem, "--m", "1", "--out", "runs",
                "--levers", "pdl=on"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("MOETUNE_LEVER_PDL=on is refused at backend=cpu"), std::string::npos)
      << r.err;
  EXPECT_FALSE(fs::exists(path("runs")));
  auto bad = run({"bench", "--backend", "cpu", "--problem", kProblem, "--m", "1,x"});
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("--m '1,x': 'x' is not a token count"), std::string::npos) << bad.err;
}

TEST_F(BenchCli, AbCatchesADigestMismatchPointByPoint) {
  write_split_k_table(path("split"));
  std::vector<std::string> args = {"ab",    "--backend",     "cpu",       "--problem", kProblem,
                                   "--m",   "1,16",          "--repeats", "2",         "--rounds",
                                   "2",     "--out",         "runs",      "--arm",     "A=default",
                                   "--arm", "B=tables:split"};
  auto r = run(args);
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("problem        M=1 "), std::string::npos) << r.out;
  int mismatches = 0;
  for (size_t at = r.out.find("DIGEST MISMATCH"); at != std::string::npos;
       at = r.out.find("DIGEST MISMATCH", at + 1)) {
    ++mismatches;
  }
  EXPECT_EQ(mismatches, 2) << r.out;  // both points, each named
  EXPECT_NE(r.out.find("2 point(s) where arms expected bitwise-equal differ"), std::string::npos);
  std::string const ab = read_text(only_subdir(path("runs")) / "ab.csv");
  EXPECT_NE(ab.find(",0,1,m8n"), std::string::npos) << ab;  // digests_equal 0, expected 1

  args.insert(args.end(), {"--digests", "any"});
  fs::remove_all(path("runs"));
  auto any = run(args);
  EXPECT_EQ(any.exit_code, 0) << any.out << any.err;
  EXPECT_NE(any.out.find("differs (allowed by --digests any)"), std::string::npos) << any.out;
}

// The arms' CPU timings share the machine with the other tests (ctest -j2 on 2 cores in CI): a
// burst of load during one arm's rounds can fake a difference (seen once: B 1123 vs A 581 us, CI
// [+21%, +111%]), so up to three A/Bs run and the first that finds no difference, or the last, is
// checked. An A/B that calls identical arms different every time still fails.
TEST_F(BenchCli, AbRefusesToCallIdenticalArmsAWin) {
  RunResult r;
  for (int attempt = 0; attempt < 3; ++attempt) {
    fs::remove_all(path("runs"));
    r = run({"ab", "--backend", "cpu", "--problem", kProblem, "--m", "4", "--repeats", "5",
             "--rounds", "4", "--margin", "0.1", "--out", "runs", "--arm", "A=default", "--arm",
             "B=default"});
    if (r.exit_code != 0 || r.out.find("no difference") != std::string::npos) break;
  }
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("no difference"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("faster"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("DIGEST"), std::string::npos) << r.out;
  fs::path const dir = only_subdir(path("runs"));
  EXPECT_TRUE(dir.string().ends_with("-ab")) << dir;
  std::string const ab = read_text(dir / "ab.csv");
  EXPECT_NE(ab.find(",no_difference,"), std::string::npos) << ab;
  std::string const samples = read_text(dir / "ab_samples.csv");
  EXPECT_EQ(count_lines(samples), 1 + 2 * 4) << samples;  // header + arms x rounds
}

TEST_F(BenchCli, AbRejectsBadArmsBeforeRunningAny) {
  auto one =
      run({"ab", "--backend", "cpu", "--problem", kProblem, "--m", "1", "--arm", "A=default"});
  EXPECT_EQ(one.exit_code, 2);
  EXPECT_NE(one.err.find("give at least two arms"), std::string::npos) << one.err;
  auto dup = run({"ab", "--backend", "cpu", "--problem", kProblem, "--m", "1", "--arm", "A=default",
                  "--arm", "A=levers:cpu_register_tiles=off"});
  EXPECT_EQ(dup.exit_code, 2);
  EXPECT_NE(dup.err.find("the name 'A' is used twice"), std::string::npos) << dup.err;
  auto lever = run({"ab", "--backend", "cpu", "--problem", kProblem, "--m", "1", "--arm",
                    "A=default", "--arm", "B=levers:cpu_register_tiles=maybe"});
  EXPECT_EQ(lever.exit_code, 2);
  EXPECT_NE(lever.err.find("is not NAME=on or NAME=off"), std::string::npos) << lever.err;
}

// Whose fault an arm's failure is decides the exit: a binary that is no moetune build (its
// --help fails or says nothing of moetune) is bad input, refused in one line before any arm runs;
// an arm process that refuses its input (exit 2) is bad input too; one that crashes is exit 3.
TEST_F(BenchCli, AbStopsWhenAnArmsProcessFailsOrIsNotMoetune) {
  std::vector<std::string> base = {"ab",   "--backend", "cpu",       "--problem", kProblem,
                                   "--m",  "1",         "--rounds",  "1",         "--out",
                                   "runs", "--arm",     "A=default", "--arm"};
  auto with_arm = [&](std::string const& arm) {
    auto args = base;
    args.push_back(arm);
    return run(args);
  };
  auto failed = with_arm("B=binary:/bin/false");
  EXPECT_EQ(failed.exit_code, 2) << failed.out << failed.err;
  EXPECT_EQ(failed.err,
            "moetune ab: --arm B=binary:/bin/false: '/bin/false --help' ended with exit status 1, "
            "so it is not a moetune build; give the path of a moetune binary (it runs the arm as "
            "`bench --arm-worker`)\n");
  auto foreign = with_arm("B=binary:/bin/echo");
  EXPECT_EQ(foreign.exit_code, 2) << foreign.out << foreign.err;
  EXPECT_NE(foreign.err.find("ended with exit status 0 and no moetune help, so it is not a "
                             "moetune build"),
            std::string::npos)
      << foreign.err;
  // Stand-ins that pass the --help probe and then refuse their input or crash.
  auto stand_in = [&](char const* name, char const* body) {
    write(name, std::string("#!/bin/sh\n[ \"$1\" = --help ] && echo moetune bench && exit 0\n") +
                    body + "\n");
    fs::permissions(path(name), fs::perms::owner_all);
    return with_arm(std::string("B=binary:") + path(name).string());
  };
  auto refused = stand_in("refuses.sh", "echo 'moetune bench: bad input' >&2; exit 2");
  EXPECT_EQ(refused.exit_code, 2) << refused.err;
  EXPECT_NE(refused.err.find("arm B round 1: the arm's process ended with exit status 2"),
            std::string::npos)
      << refused.err;
  auto crashed = stand_in("crashes.sh", "kill -SEGV $$");
  EXPECT_EQ(crashed.exit_code, 3) << crashed.err;
  EXPECT_NE(crashed.err.find("arm B round 1: the arm's process ended with signal 11"),
            std::string::npos)
      << crashed.err;
  EXPECT_FALSE(fs::exists(path("runs")) && !fs::is_empty(path("runs")));  // no result made up
}

// An arm's defines: item reaches its process as `bench --nvrtc-defines` (the kernels' compile
// options there), and the A/B's env.json names the arm with it; `moetune bench` records the
// defines it ran with. The cpu backend compiles nothing, so the arms give the same bits.
TEST_F(BenchCli, AbPassesAnArmsDefinesToItsProcessAndBenchRecordsThem) {
  write("rec.sh", "#!/bin/sh\necho \"$@\" >> " + path("args.txt").string() + "\nexec " +
                      std::string(MOETUNE_BINARY_DIR) + "/moetune \"$@\"\n");
  fs::permissions(path("rec.sh"), fs::perms::owner_all);
  std::string const arm_b = "B=binary:" + path("rec.sh").string() + ",defines:MY_FLAG=1+OTHER";
  auto r = run({"ab", "--backend", "cpu", "--problem", kProblem, "--m", "4", "--repeats", "2",
                "--rounds", "1", "--out", "runs", "--arm", "A=default", "--arm", arm_b});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string const args = read_text(path("args.txt"));
  EXPECT_NE(args.find("bench --arm-worker"), std::string::npos) << args;
  EXPECT_NE(args.find("--nvrtc-defines MY_FLAG=1 OTHER"), std::string::npos) << args;
  EXPECT_NE(read_text(only_subdir(path("runs")) / "env.json").find("defines:MY_FLAG=1+OTHER"),
            std::string::npos);
  auto b = run({"bench", "--backend", "cpu", "--problem", kProblem, "--m", "1", "--repeats", "2",
                "--out", "bench", "--ceiling-mib", "8", "--nvrtc-defines", "MY_FLAG=1"});
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_NE(
      read_text(only_subdir(path("bench")) / "env.json").find("\"nvrtc_defines\": \"MY_FLAG=1\""),
      std::string::npos);
}

TEST_F(BenchCli, ReportRendersOneSelfContainedPageFromFixtures) {
  write("run/bench.csv",
        "bench_csv_version,series,E,K,I,top_k,act,M,time_us,p10_us,p90_us,floor_us,bound,ratio,"
        "config,digest\n"
        "1,demo,8,256,128,2,silu,1,110,105,112,33,compute,3.33,m8n64k128g1w4s2t1,aa\n"
        "1,demo,8,256,128,2,silu,16,580,560,590,525,compute,1.10,m8n64k128g1w4s2t1,bb\n"
        "1,demo,8,256,128,2,silu,64,1380,1360,1400,2100,compute,0.66,m16n64k128g1w4s2,cc\n");
  write("run/ab.csv",
        "ab_csv_version,series,M,arm_a,arm_b,rounds,a_median_us,b_median_us,delta,ci_low,ci_high,"
        "margin,verdict,digest_a,digest_b,digests_equal,expected_equal,config_a,config_b\n"
        "1,demo,1,A,B,4,100,80,-0.2,-0.25,-0.15,0.01,b_faster,aa,aa,1,1,x,y\n"
        "1,demo,16,A,B,4,100,101,0.01,-0.02,0.04,0.01,no_difference,bb,bc,0,1,x,y\n");
  write("run/env.json", "{\"env_version\": 1}\n");
  auto r = run({"report", "run"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote run/report.html (3 points, 4 arm points, 2 A/B comparisons)\n");
  std::string const html = read("run/report.html");
  EXPECT_TRUE(html.starts_with("<!DOCTYPE html>"));
  EXPECT_EQ(html.find("<script"), std::string::npos);  // self-contained: no scripts ...
  EXPECT_EQ(html.find("<link"), std::string::npos);    // ... no stylesheets ...
  EXPECT_EQ(html.find("src="), std::string::npos);     // ... no external images
  int svgs = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    ++svgs;
  }
  EXPECT_EQ(svgs, 4);  // roofline, time per M, config heatmap, A/B deltas
  EXPECT_NE(html.find("t/floor per M"), std::string::npos);
  EXPECT_NE(html.find("m16n64k128"), std::string::npos);
  EXPECT_NE(html.find("no difference"), std::string::npos);
  EXPECT_NE(html.find("&#8800;"), std::string::npos);
  EXPECT_NE(html.find("&quot;env_version&quot;"), std::string::npos);
}

/// A bench folder of `series` at M = 1, 16 (time `us`, floor 100 us) with env.json.
void write_bench_fixture(fs::path const& dir, std::string const& series, double us,
                         std::string const& config) {
  auto row = [&](int m, double time) {
    return "1," + series + ",8,256,128,2,silu," + std::to_string(m) + "," + std::to_string(time) +
           "," + std::to_string(time * 0.95) + "," + std::to_string(time * 1.05) + ",100,bw," +
           std::to_string(time / 100) + "," + config + ",d" + std::to_string(m) + "\n";
  };
  write_text(
      dir / "bench.csv",
      "bench_csv_version,series,E,K,I,top_k,act,M,time_us,p10_us,p90_us,floor_us,bound,ratio,"
      "config,digest\n" +
          row(1, us) + row(16, us * 2));
  write_text(dir / "env.json",
             "{\"env_version\": 1, \"device\": \"" + dir.filename().string() + "\"}\n");
}

TEST_F(BenchCli, ReportDrawsSeveralFoldersOnOnePageWithASeriesPerFolderAndArm) {
  write_bench_fixture(path("before"), "demo", 150, "m8n64k128g1w4s2t1");
  write_bench_fixture(path("after"), "demo", 120, "m16n32k64g1w4s2t1");
  write(
      "ab/ab.csv",
      "ab_csv_version,series,M,arm_a,arm_b,rounds,a_median_us,b_median_us,delta,ci_low,ci_high,"
      "margin,verdict,digest_a,digest_b,digests_equal,expected_equal,config_a,config_b\n"
      "1,demo,1,tiles,plain,4,100,120,0.2,0.15,0.25,0.01,b_slower,aa,aa,1,1,cfgA,cfgA\n"
      "1,demo,16,tiles,plain,4,300,301,0.003,-0.02,0.03,0.01,no_difference,bb,bb,1,1,cfgA,cfgB\n");
  auto r = run({"report", "before", "after", "ab", "--out", "all.html"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote all.html (4 points, 4 arm points, 2 A/B comparisons)\n");
  std::string const html = read("all.html");
  EXPECT_NE(html.find("moetune report: 3 runs: before, after, ab"), std::string::npos);
  // A series per folder (t/floor and time) and per arm (time, configs); deltas name the folder.
  for (char const* s :
       {"before | demo E=8 K=256 I=128 top_k=2 silu", "after | demo E=8 K=256 I=128 top_k=2 silu",
        "ab | tiles | demo", "ab | plain | demo", "ab | demo M=1: plain vs tiles"}) {
    EXPECT_NE(html.find(s), std::string::npos) << s;
  }
  EXPECT_NE(html.find("m16n32k64"), std::string::npos);  // the heatmap has both folders' tiles
  EXPECT_NE(html.find("cfgB"), std::string::npos);       // ... and each arm's config
  EXPECT_NE(html.find("plain slower"), std::string::npos);
  EXPECT_NE(html.find("env.json of before"), std::string::npos);
  EXPECT_NE(html.find("env.json of after"), std::string::npos);
  int svgs = 0;
  for (size_t at = html.find("<svg"); at != std::string::npos; at = html.find("<svg", at + 1)) {
    ++svgs;
  }
  EXPECT_EQ(svgs, 4);
  // The same folder twice: the second copy is told apart, never merged.
  auto twice = run({"report", "before", "before", "--out", "twice.html"});
  ASSERT_EQ(twice.exit_code, 0) << twice.err;
  EXPECT_NE(read("twice.html").find("before (2) | demo"), std::string::npos);
}

TEST_F(BenchCli, ReportOfSeveralInputsNeedsOutAndStopsAtABadOne) {
  write_bench_fixture(path("a"), "demo", 150, "m8n64k128g1w4s2t1");
  auto no_out = run({"report", "a", "a"});
  EXPECT_EQ(no_out.exit_code, 2);
  EXPECT_NE(no_out.err.find("2 inputs make one page: say where it goes with --out FILE"),
            std::string::npos)
      << no_out.err;
  auto missing = run({"report", "a", "nope", "--out", "x.html"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_FALSE(fs::exists(path("x.html")));
}

TEST_F(BenchCli, ReportReadsTheKernelBenchmarksCsv) {
  std::string const csv = std::string(MOETUNE_SOURCE_DIR) + "/bench/results/h200-protocol-s1s3.csv";
  auto r = run({"report", csv, "--out", "k.html"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "wrote k.html (36 points, 0 arm points, 0 A/B comparisons)\n");
  std::string const html = read("k.html");
  EXPECT_NE(html.find("S1 E=128 K=2688 I=1856 top_k=6 relu2"), std::string::npos);
  EXPECT_NE(html.find("m16n64k128"), std::string::npos);
}

TEST_F(BenchCli, ReportRefusesACsvItCannotRead) {
  write("x.csv", "a,b\n1,2\n");
  auto r = run({"report", "x.csv"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("x.csv: not a bench CSV: the header lacks"), std::string::npos) << r.err;
  auto none = run({"report", "."});
  EXPECT_EQ(none.exit_code, 2);
  EXPECT_NE(none.err.find("holds neither bench.csv nor ab.csv"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace moetune::cli::testing
