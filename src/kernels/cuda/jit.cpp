#include "kernels/cuda/jit.hpp"

#include <nvrtc.h>

#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "core/atomic_file.hpp"
#include "core/dev_defines.hpp"
#include "kernels/cuda/jit_sources.hpp"

namespace moetune::kernels::cuda {
namespace {

constexpr const char* kCacheMagic = "MOETUNE-CUBIN v1";

// compile_module runs on several threads at once (the tuner worker's parallel precompile). NVRTC
// programs are independent and the cache file is published by rename, but write_file_atomic
// reads the process umask by setting and restoring it, which races between threads (a lost
// restore leaves umask 0). Cache writes are therefore serialised; compiles stay concurrent.
std::mutex g_cache_write_mutex;

// One lock per module key: threads compiling the same module (configs that share a GEMM or the
// align + combine module, compiled by a pool at once) wait for the first, then read its cache
// file, instead of each running NVRTC on it. Different modules still compile concurrently.
std::mutex g_key_locks_mutex;
std::map<std::string, std::shared_ptr<std::mutex>> g_key_locks;

std::shared_ptr<std::mutex> key_lock(std::string const& key) {
  std::lock_guard<std::mutex> lock(g_key_locks_mutex);
  auto& m = g_key_locks[key];
  if (!m) m = std::make_shared<std::mutex>();
  return m;
}

uint64_t fnv1a(std::string_view s, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}

std::vector<std::string> compile_options(std::string const& arch) {
  return {"--gpu-architecture=" + arch, "--std=c++17",    "-DNDEBUG", "--use_fast_math",
          "--ptxas-options=-v",         "-default-device"};
}

std::string hex64(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// Cache file: magic line, count line, "expr\tlowered" lines, then the cubin bytes.
std::string serialise(JitModule const& m) {
  std::ostringstream os;
  os << kCacheMagic << "\n" << m.lowered.size() << "\n";
  for (auto const& [expr, low] : m.lowered) os << expr << "\t" << low << "\n";
  os << m.cubin;
  return os.str();
}

bool deserialise(std::string const& text, JitModule& m) {
  std::istringstream is(text);
  std::string line;
  if (!std::getline(is, line) || line != kCacheMagic) return false;
  size_t count = 0;
  if (!std::getline(is, line)) return false;
  count = std::strtoul(line.c_str(), nullptr, 10);
  for (size_t i = 0; i < count; ++i) {
    if (!std::getline(is, line)) return false;
    auto tab = line.find('\t');
    if (tab == std::string::npos) return false;
    m.lowered[line.substr(0, tab)] = line.substr(tab + 1);
  }
  auto pos = static_cast<size_t>(is.tellg());
  m.cubin = text.substr(pos);
  return !m.cubin.empty();
}

}  // namespace

core::Result<std::vector<std::string>> dev_nvrtc_defines(const char* value) {
  auto tokens = core::parse_dev_defines(value == nullptr ? "" : value);
  if (!tokens.ok()) return tokens.error();
  for (auto& t : *tokens) t = "-D" + t;
  return tokens;
}

std::string nvrtc_version() {
  int major = 0, minor = 0;
  nvrtcVersion(&major, &minor);
  return std::to_string(major) + "." + std::to_string(minor);
}

std::string cubin_cache_dir() {
  if (const char* d = std::getenv("MOETUNE_CACHE_DIR"); d && *d) return std::string(d) + "/cubin";
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::string(x) + "/moetune/cubin";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/moetune/cubin";
  return "/tmp/moetune-cache/cubin";
}

namespace {

/// The cached module at `path` when it holds every name expression (read into `m`).
bool read_cached_module(std::string const& path, std::vector<std::string> const& name_exprs,
                        JitModule& m) {
  auto cached = core::read_file(path);
  if (!cached.ok() || !deserialise(*cached, m)) return false;
  for (auto const& e : name_exprs) {
    if (m.lowered.count(e) == 0) {
      m = JitModule{};
      return false;
    }
  }
  return true;
}

/// NVRTC over the embedded sources: one translation unit that includes the kernel files (the fp8
/// ones only where a name expression asks for an fp8 kernel, so that the bf16 modules' front end
/// stays as it was), the instantiations from `name_exprs`; fills m.cubin, m.lowered and
/// m.ptxas_log.
core::Status nvrtc_compile(std::vector<std::string> const& name_exprs,
                           std::vector<std::string> const& opts, JitModule& m) {
  std::string main_src =
      "#include \"sm90_gather_kernel.cuh\"\n#include \"sm90_ws_kernel.cuh\"\n"
      "#include \"sm90_swap_kernel.cuh\"\n"
      "#include \"sm90_align_kernel.cuh\"\n#include \"sm90_decode_kernel.cuh\"\n"
      "#include \"sm90_reference_kernel.cuh\"\n";
  for (auto const& e : name_exprs) {
    if (e.find("_fp8_") == std::string::npos) continue;
    main_src +=
        "#include \"sm90_fp8_gemm_kernel.cuh\"\n#include \"sm90_fp8_ws_kernel.cuh\"\n"
        "#include \"sm90_fp8_quant_kernel.cuh\"\n#include \"sm90_fp8_reference_kernel.cuh\"\n"
        "#include \"sm90_fp8_decode_kernel.cuh\"\n";
    break;
  }
  std::vector<const char*> hdr_text, hdr_name;
  for (auto const& [name, text] : jit_sources()) {
    hdr_name.push_back(name.c_str());
    hdr_text.push_back(text.c_str());
  }
  nvrtcProgram prog;
  nvrtcResult rc =
      nvrtcCreateProgram(&prog, main_src.c_str(), "moetune_jit.cu",
                         static_cast<int>(hdr_text.size()), hdr_text.data(), hdr_name.data());
  if (rc != NVRTC_SUCCESS) {
    return core::make_error(core::ErrorCode::kInternal, "jit",
                            std::string("nvrtcCreateProgram failed: ") + nvrtcGetErrorString(rc));
  }
  for (auto const& e : name_exprs) nvrtcAddNameExpression(prog, e.c_str());
  std::vector<const char*> copts;
  for (auto const& o : opts) copts.push_back(o.c_str());
  rc = nvrtcCompileProgram(prog, static_cast<int>(copts.size()), copts.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 0) nvrtcGetProgramLog(prog, log.data());
  if (auto nul = log.find('\0'); nul != std::string::npos) log.resize(nul);
  if (rc != NVRTC_SUCCESS) {
    nvrtcDestroyProgram(&prog);
    std::string first = log.substr(0, std::min<size_t>(log.size(), 2000));
    for (auto& c : first)
      if (c == '\n') c = ' ';
    return core::make_error(core::ErrorCode::kUnsupported, "jit",
                            std::string("NVRTC could not compile ") +
                                (name_exprs.empty() ? "" : name_exprs.front()) + ": " + first);
  }
  size_t cubin_size = 0;
  nvrtcGetCUBINSize(prog, &cubin_size);
  m.cubin.resize(cubin_size);
  nvrtcGetCUBIN(prog, m.cubin.data());
  for (auto const& e : name_exprs) {
    const char* lowered = nullptr;
    nvrtcGetLoweredName(prog, e.c_str(), &lowered);
    m.lowered[e] = lowered ? lowered : "";
  }
  nvrtcDestroyProgram(&prog);
  m.ptxas_log = log;
  return core::Status::Ok();
}

}  // namespace

core::Result<JitModule> compile_module(std::vector<std::string> const& name_exprs,
                                       std::string const& arch) {
  auto const& sources = jit_sources();
  auto opts = compile_options(arch);
  auto defines = dev_nvrtc_defines(std::getenv("MOETUNE_DEV_NVRTC_DEFINES"));
  if (!defines.ok()) return defines.error();
  opts.insert(opts.end(), defines->begin(), defines->end());
  // The embedded sources (~100 KB) and the NVRTC version are fixed for the process: hashed once,
  // not on every call (loading a config looks up three modules).
  static const uint64_t sources_hash = [&] {
    uint64_t v = fnv1a(nvrtc_version());
    for (auto const& [name, text] : sources) v = fnv1a(text, fnv1a(name, v));
    return v;
  }();
  uint64_t h = sources_hash;
  for (auto const& o : opts) h = fnv1a(o, h);
  for (auto const& e : name_exprs) h = fnv1a(e, h);
  const std::string dir = cubin_cache_dir();
  const std::string path = dir + "/" + hex64(h) + ".cubin";
  auto const module_lock = key_lock(path);
  std::lock_guard<std::mutex> one_compile(*module_lock);

  JitModule m;
  if (read_cached_module(path, name_exprs, m)) {
    m.cache_path = path;
    m.from_cache = true;
    return m;
  }
  auto t0 = std::chrono::steady_clock::now();
  MOETUNE_RETURN_IF_ERROR(nvrtc_compile(name_exprs, opts, m));
  m.compile_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::lock_guard<std::mutex> lock(g_cache_write_mutex);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (!ec) {
    // A cache write failure only costs a recompile next time; it never fails the compile.
    (void)core::write_file_atomic(path, serialise(m));
  }
  m.cache_path = path;
  return m;
}

}  // namespace moetune::kernels::cuda
