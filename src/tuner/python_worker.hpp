// Workers of kernel families that live in Python. `moetune worker --backend triton` (what
// WorkerClient starts, worker.hpp) replaces itself by exec with python3 running
// moetune.tuner.triton_worker's main: same process, same pipes on fds 3 and 4, same PDEATHSIG and
// core limit, so the parent's isolation, timeouts and outcomes (a SIGSEGV in Triton is
// crashed(SIGSEGV)) hold unchanged. The interpreter is the one this build's Python package was
// built with (else python3 on PATH); the build tree's package (build/python) goes first on
// PYTHONPATH when it is there. The package's __init__ (it loads the torch ops library) is not run.
#pragma once

#include <string>

namespace moetune::tuner {

/// True for backends whose worker is Python ("triton").
bool is_python_backend(std::string const& backend);

/// Execs the Python worker of `backend` answering on `fd_in` / `fd_out`. Returns only when the
/// exec failed, after printing why to stderr: the exit code (127) to end with.
int exec_python_worker(std::string const& backend, int fd_in, int fd_out);

}  // namespace moetune::tuner
