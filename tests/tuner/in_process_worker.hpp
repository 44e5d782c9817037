// A WorkerClient that answers in this process with a real cpu testbed (space, feasibility,
// prepare, precompile and checks are the cpu backend's own) but with synthetic timings from a cost
// model, so search tests can know the best config in advance. Every request is recorded. Crash,
// hang and oom faults would act on the test process: tests using this worker inject only
// compile, launch, wrong and nan.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "kernels/testbed.hpp"
#include "tuner/worker.hpp"

namespace moetune::tuner::testing {

/// Microseconds a config takes in the model.
using CostModel = std::function<double(core::MoeConfig const&)>;
/// Microseconds one timing request's config takes (the model may read its reps, and keep state
/// to vary over the run).
using RequestCostModel = std::function<double(Request const&)>;

class InProcessWorker : public WorkerClient {
 public:
  explicit InProcessWorker(CostModel cost, std::unique_ptr<kernels::Testbed> bed = nullptr)
      : InProcessWorker(
            RequestCostModel([cost = std::move(cost)](Request const& r) { return cost(r.config); }),
            std::move(bed)) {}
  explicit InProcessWorker(RequestCostModel cost, std::unique_ptr<kernels::Testbed> bed = nullptr)
      : WorkerClient(WorkerOptions{}), cost_(std::move(cost)), bed_(std::move(bed)) {
    if (!bed_) bed_ = std::move(kernels::make_testbed("cpu")).value();
  }

  core::Result<Response> hello() override { return answer_request(*bed_, Request{.op = "hello"}); }

  Reply call(Request const& request, double /*timeout_s*/) override {
    requests.push_back(request);
    if (request.op == "time" && request.fault != FaultKind::kLaunch) {
      // Deterministic, nearly noise-free samples around the model's time (+-0.05%).
      Response r;
      double const t = cost_(request);
      for (int i = 0; i < request.reps; ++i) r.samples_us.push_back(t * (1 + 5e-4 * (i % 3 - 1)));
      return Reply{.response = r};
    }
    Response r = answer_request(*bed_, request);
    if (!r.ok) return Reply{.outcome = r.outcome, .reason = r.message};
    return Reply{.response = r};
  }

  /// The configs of every request with this op, in order.
  std::vector<core::MoeConfig> configs_of(std::string const& op) const {
    std::vector<core::MoeConfig> out;
    for (Request const& r : requests) {
      if (r.op != op) continue;
      if (op == "precompile" || op == "feasible") {
        out.insert(out.end(), r.configs.begin(), r.configs.end());
      } else {
        out.push_back(r.config);
      }
    }
    return out;
  }

  std::vector<Request> requests;

 private:
  RequestCostModel cost_;
  std::unique_ptr<kernels::Testbed> bed_;
};

}  // namespace moetune::tuner::testing
