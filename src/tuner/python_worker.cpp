// exec of a Python worker; see python_worker.hpp.
#include "tuner/python_worker.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <vector>

namespace moetune::tuner {
namespace {

#if defined(MOETUNE_PYTHON_EXECUTABLE)
constexpr char kPython[] = MOETUNE_PYTHON_EXECUTABLE;
#else
constexpr char kPython[] = "";
#endif
#if defined(MOETUNE_PYTHON_PACKAGE_DIR)
constexpr char kPackageDir[] = MOETUNE_PYTHON_PACKAGE_DIR;
#else
constexpr char kPackageDir[] = "";
#endif

std::string python_executable() {
  std::error_code ec;
  if (*kPython != '\0' && std::filesystem::exists(kPython, ec)) return kPython;
  return "python3";
}

/// PYTHONPATH with the build tree's package first, when this binary's build has one.
void put_package_on_path() {
  std::error_code ec;
  if (*kPackageDir == '\0' ||
      !std::filesystem::exists(std::filesystem::path(kPackageDir) / "moetune" / "__init__.py",
                               ec)) {
    return;
  }
  char const* old = std::getenv("PYTHONPATH");
  std::string path = kPackageDir;
  if (old != nullptr && *old != '\0') path += std::string(":") + old;
  ::setenv("PYTHONPATH", path.c_str(), 1);
}

}  // namespace

bool is_python_backend(std::string const& backend) { return backend == "triton"; }

int exec_python_worker(std::string const& backend, int fd_in, int fd_out) {
  std::string const module = "moetune.tuner." + backend + "_worker";
  std::string const python = python_executable();
  put_package_on_path();
  // The package is entered without running its __init__, which loads the torch ops library the
  // worker never uses: the checkout's python/ on PYTHONPATH is then enough (a device machine).
  size_t const dot = module.rfind('.');
  std::string const launcher =
      "import importlib.util as u, sys\n"
      "spec = u.find_spec('moetune')\n"
      "if spec is None: sys.exit('moetune worker: the Python package moetune is not importable; "
      "put its folder (python/ of the checkout, or build/python) on PYTHONPATH')\n"
      "sys.modules['moetune'] = u.module_from_spec(spec)\n"
      "from " +
      module.substr(0, dot) + " import " + module.substr(dot + 1) + " as worker\n" +
      "sys.exit(worker.main(sys.argv[1:]))\n";
  std::vector<std::string> args = {
      python, "-c", launcher, "--fd-in", std::to_string(fd_in), "--fd-out", std::to_string(fd_out)};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execvp(argv[0], argv.data());
  std::cerr << "moetune worker --backend " << backend << ": cannot run " << python << " for "
            << module << ": " << std::strerror(errno)
            << "; install python3 with torch and triton, or build with MOETUNE_BUILD_PYTHON\n";
  return 127;
}

}  // namespace moetune::tuner
