// MoeRunner: knob resolution (explicit | cache | table | default | auto | batch_invariant), the
// lock-free memo that makes hot lookups one atomic load, and run(). See
// include/moetune/moe_runner.hpp.
#include "moetune/moe_runner.hpp"

#include "runtime/runner_impl.hpp"

namespace moetune {

char const* to_string(ChoiceRule r) {
  switch (r) {
    case ChoiceRule::kExplicit: return "explicit";
    case ChoiceRule::kCache: return "cache";
    case ChoiceRule::kTable: return "table";
    case ChoiceRule::kDefault: return "default";
    case ChoiceRule::kAuto: return "auto";
    case ChoiceRule::kOtherDevice: return "other_device";
    case ChoiceRule::kBatchInvariant: return "batch_invariant";
  }
  return "?";
}

int64_t runtime_bucket(int64_t m) {
  int64_t b = m > 0 ? 1 : 0;
  while (b < m) b *= 2;
  return b;
}

core::Result<Choice> RunnerImpl::batch_invariant_choice(int64_t m, KnobMode mode) const {
  auto c = backend->batch_invariant_config(at(m));
  if (!c.ok()) return c.error();
  return Choice{.m = m,
                .bucket = runtime_bucket(m),
                .config = *c,
                .rule = ChoiceRule::kBatchInvariant,
                .source = std::nullopt,
                .explain = "M=" + std::to_string(m) + " -> " + backend->family() +
                           " batch-invariant config (lever batch_invariant: one K order and one "
                           "instruction family at every M, no split-K; " +
                           (mode == KnobMode::kAuto ? "auto does not tune, " : "") +
                           "the knob cache and tables are not consulted)"};
}

MoeRunner::MoeRunner(std::unique_ptr<RunnerImpl> impl) : impl_(std::move(impl)) {}
MoeRunner::~MoeRunner() = default;

core::Result<std::unique_ptr<MoeRunner>> MoeRunner::create(core::MoeProblem problem,
                                                           std::string const& backend,
                                                           RunnerOptions options) {
  auto impl = std::make_unique<RunnerImpl>();
  MOETUNE_RETURN_IF_ERROR(impl->setup(std::move(problem), backend, std::move(options)));
  impl->memo_size = std::min(impl->options.max_tokens + 1, kMaxMemo);
  for (auto& m : impl->memo) {
    m = std::make_unique<std::atomic<Slot const*>[]>(impl->memo_size);
    for (int64_t i = 0; i < impl->memo_size; ++i) m[i].store(nullptr);
  }
  return std::unique_ptr<MoeRunner>(new MoeRunner(std::move(impl)));
}

core::Result<Choice> MoeRunner::choose(int64_t m, Knobs const& knobs) {
  MOETUNE_RETURN_IF_ERROR(impl_->check_m(m));
  if (knobs.mode == KnobMode::kExplicit) return impl_->explicit_choice(m, knobs.config);
  auto s = impl_->lookup(m, knobs.mode, nullptr);
  if (!s.ok()) return s.error();
  return (*s)->choice;
}

core::Result<Choice const*> MoeRunner::lookup(int64_t m, Knobs const& knobs) {
  MOETUNE_RETURN_IF_ERROR(impl_->check_m(m));
  if (knobs.mode == KnobMode::kExplicit) {
    return core::make_error(core::ErrorCode::kInvalidArgument, "MoeRunner::lookup",
                            "lookup serves knobs none and auto; pass explicit configs to choose() "
                            "or run(), which validate them");
  }
  auto s = impl_->lookup(m, knobs.mode, nullptr);
  if (!s.ok()) return s.error();
  return &(*s)->choice;
}

core::Status MoeRunner::run(void* stream, void const* x, int32_t const* topk_ids,
                            float const* topk_weights, void const* w1, void const* w2, void* out,
                            int64_t m, Knobs const& knobs, Choice* chosen) {
  return run(RunArgs{.stream = stream,
                     .x = x,
                     .topk_ids = topk_ids,
                     .topk_weights = topk_weights,
                     .w1 = w1,
                     .w2 = w2,
                     .out = out,
                     .m = m,
                     .workspace = {}},
             knobs, chosen);
}

core::Status MoeRunner::run(RunArgs const& a, Knobs const& knobs, Choice* chosen) {
  int64_t const m = a.m;
  MOETUNE_RETURN_IF_ERROR(impl_->check_m(m));
  runtime::LayerArgs const args{.x = a.x,
                                .topk_ids = a.topk_ids,
                                .topk_weights = a.topk_weights,
                                .w1 = a.w1,
                                .w2 = a.w2,
                                .out = a.out,
                                .b1 = a.b1,
                                .b2 = a.b2,
                                .w1_scale = a.w1_scale,
                                .w2_scale = a.w2_scale,
                                .a1_scale = a.a1_scale,
                                .a2_scale = a.a2_scale,
                                .workspace = a.workspace};
  MOETUNE_RETURN_IF_ERROR(impl_->check_biases(a.b1, a.b2));
  MOETUNE_RETURN_IF_ERROR(impl_->check_scales(a));
  if (knobs.mode == KnobMode::kExplicit) {
    auto c = impl_->explicit_choice(m, knobs.config);
    if (!c.ok()) return c.error();
    if (chosen) *chosen = *c;
    if (m == 0) return core::Status::Ok();
    auto l = impl_->explicit_launchable(knobs.config, m, a.stream);
    if (!l.ok()) return l.error();
    return impl_->ops->launch(impl_->at(m), knobs.config, *l, args, a.stream);
  }
  auto s = impl_->lookup(m, knobs.mode, a.stream);
  if (!s.ok()) return s.error();
  if (chosen) *chosen = (*s)->choice;
  if (m == 0) return core::Status::Ok();
  return impl_->ops->launch(impl_->at(m), (*s)->choice.config, (*s)->launchable, args, a.stream);
}

void MoeRunner::set_capturing(bool c) { impl_->capturing.store(c); }
bool MoeRunner::capturing() const { return impl_->capturing.load(); }
core::MoeProblem const& MoeRunner::problem() const { return impl_->problem; }
std::string const& MoeRunner::backend_name() const { return impl_->backend_name; }
std::string const& MoeRunner::cache_path() const { return impl_->cache_path; }
std::string const& MoeRunner::table_path() const { return impl_->table_path; }
RunnerLevers const& MoeRunner::levers() const { return impl_->levers; }
size_t MoeRunner::workspace_bytes() const { return impl_->ops->workspace_bytes(); }
std::vector<std::string> MoeRunner::warnings() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->warnings;
}

}  // namespace moetune
