// moetune worker (hidden): the device side of `moetune tune`. The tuner starts one per device with
// fork + exec of this binary and speaks the line protocol of tuner/protocol.hpp on two inherited
// file descriptors; people never run it by hand. A backend whose worker is Python (triton) is
// exec'd into it here (tuner/python_worker.hpp).
#include <memory>

#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "tuner/python_worker.hpp"
#include "tuner/worker.hpp"

namespace moetune::cli {
namespace {

struct WorkerArgs {
  std::string backend = "cpu";
  int fd_in = 0;
  int fd_out = 1;
};

}  // namespace

void setup_worker(CLI::App& app, int& exit_code) {
  auto args = std::make_shared<WorkerArgs>();
  app.add_option("--backend", args->backend, "cpu, cuda or triton")->capture_default_str();
  app.add_option("--fd-in", args->fd_in, "file descriptor requests arrive on")
      ->capture_default_str();
  app.add_option("--fd-out", args->fd_out, "file descriptor answers go to")->capture_default_str();
  app.callback([args, &exit_code] {
    check_backend_name(args->backend, "--backend");
    if (tuner::is_python_backend(args->backend)) {
      exit_code = tuner::exec_python_worker(args->backend, args->fd_in, args->fd_out);
      return;
    }
    // The worker inherits the tuner's environment, so MOETUNE_LEVER_* knobs reach the kernels.
    exit_code = tuner::run_worker(args->backend, args->fd_in, args->fd_out,
                                  fast_paths_from_env_or_exit(args->backend));
  });
}

}  // namespace moetune::cli
