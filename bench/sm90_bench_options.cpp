// moetune_sm90_bench's command line; see sm90_bench_options.hpp.
#include "sm90_bench_options.hpp"

#include <algorithm>
#include <sstream>

namespace moetune::bench {

std::vector<Shape> all_shapes() {
  auto mk = [](const char* n, int64_t e, int64_t k, int64_t i, int64_t topk, core::Activation a) {
    core::MoeProblem p;
    p.num_experts = e;
    p.hidden_size = k;
    p.intermediate_size = i;
    p.top_k = topk;
    p.activation = a;
    return Shape{n, p};
  };
  return {mk("S1", 128, 2688, 1856, 6, core::Activation::kRelu2),
          mk("S2", 128, 2048, 768, 8, core::Activation::kSiluGated),
          mk("S3", 8, 4096, 14336, 2, core::Activation::kSiluGated)};
}

std::vector<std::string> split(std::string const& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

[[noreturn]] void die(std::string const& what) {
  std::fprintf(stderr, "moetune_sm90_bench: %s\n", what.c_str());
  std::exit(1);
}

Shape parse_shape(std::string const& text) {
  const std::string form =
      "--shape " + text + ": expected NAME=E,K,I,TOPK,ACT (e.g. H1=128,4096,1536,8,silu)";
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0) die(form);
  const auto fields = split(text.substr(eq + 1), ',');
  if (fields.size() != 5) die(form);
  Shape s;
  s.name = text.substr(0, eq);
  try {
    s.p.num_experts = std::stoll(fields[0]);
    s.p.hidden_size = std::stoll(fields[1]);
    s.p.intermediate_size = std::stoll(fields[2]);
    s.p.top_k = std::stoll(fields[3]);
  } catch (std::exception const&) {
    die(form);
  }
  s.p.activation = must(core::parse_activation(fields[4]), "--shape " + text);
  if (s.p.num_experts < 1 || s.p.hidden_size < 1 || s.p.intermediate_size < 1 || s.p.top_k < 1 ||
      s.p.top_k > s.p.num_experts)
    die(form + "; sizes >= 1 and TOPK <= E");
  return s;
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) die(a + " needs a value");
      return argv[++i];
    };
    if (a == "--out")
      o.out_dir = next();
    else if (a == "--shapes")
      o.shapes = next();
    else if (a == "--m")
      o.ms = next();
    else if (a == "--no-sweep")
      o.sweep = false;
    else if (a == "--sweep-reps")
      o.sweep_reps = std::stoi(next());
    else if (a == "--schedule-override")
      o.schedule_override = must(core::parse_schedule(next()), "--schedule-override");
    else if (a == "--sweep-schedule")
      o.sweep_schedule = must(core::parse_schedule(next()), "--sweep-schedule");
    else if (a == "--sweep-decode-only")
      o.sweep_decode_only = true;
    else if (a == "--recipe")
      o.recipe = next();
    else if (a == "--sweep-log")
      o.sweep_log = next();
    else if (a == "--shape")
      o.extra_shapes.push_back(parse_shape(next()));
    else if (a == "--dense")
      o.dense = true;
    else
      die("unknown option " + a +
          " (options: --out DIR --shapes S1,S2,S3 --shape NAME=E,K,I,TOPK,ACT --m LIST --no-sweep "
          "--sweep-reps N --sweep-log FILE --recipe R --schedule-override S --sweep-schedule S "
          "--sweep-decode-only --dense)");
  }
  return o;
}

std::vector<Shape> selected_shapes(Options const& opt) {
  std::vector<Shape> shapes;
  auto const known = all_shapes();
  for (auto const& name : split(opt.shapes, ',')) {
    if (name == "none") continue;
    auto it =
        std::find_if(known.begin(), known.end(), [&](Shape const& s) { return s.name == name; });
    if (it == known.end())
      die("--shapes " + opt.shapes + ": unknown shape " + name +
          " (S1, S2, S3, or none; other shapes with --shape)");
    shapes.push_back(*it);
  }
  shapes.insert(shapes.end(), opt.extra_shapes.begin(), opt.extra_shapes.end());
  return shapes;
}

}  // namespace moetune::bench
