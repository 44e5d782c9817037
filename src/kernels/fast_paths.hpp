// FastPaths: the resolved set of kernel fast paths a launch may take. The lever table
// (core/levers, `moetune levers`) resolves a Deployment + environment into this struct; kernels
// only read it. Every field is a real code path with a check behind its class (docs/levers.md).
#pragma once

#include <string>

namespace moetune::kernels {

struct FastPaths {
  /// cuda: route/align with two parallel launches (count, place) instead of one CTA when
  /// M * top_k > 4096 (kSingleCtaAlignPairs). Class bitwise: the output bits equal the single-CTA
  /// path's.
  bool align_multi_cta = true;
  /// cuda: configs with schedule = cooperative, tma_ws or pingpong run a wgmma main loop; when off,
  /// such configs are refused by can_implement and defaults use the mma.sync main loop. Class
  /// numeric: a different fp32 accumulation order (max relative error recorded by the lever check).
  bool wgmma_mainloop = true;
  /// cpu: cpu_tiled multiplies packed panels with the 4 x 16 register-tiled microkernel; when
  /// off, with the plain row-by-column loop (microkernel_plain). Class bitwise: both add a * b in
  /// the same depth order without FMA (tests/kernels/cpu/cpu_lever_test.cpp).
  bool cpu_register_tiles = true;
  /// cuda: launch every kernel of the layer with programmatic dependent launch, so each one's
  /// launch and prologue overlap the previous kernel's tail (griddepcontrol). Class bitwise: the
  /// same kernels compute the same values; only launch timing changes.
  bool pdl = true;
  /// cpu and cuda: every M runs the backend's batch-invariant config (Backend::
  /// batch_invariant_config: one K order and one instruction family for every output element, no
  /// split-K), and tables, the knob cache and auto are bypassed, so a token's output bits do not
  /// depend on the other tokens of its batch (the combine already sums top_k in a fixed order).
  /// Kernels do not read it; the runner and bench choose configs by it. Class correctness: the
  /// output differs from the lever-off path's wherever that path picks another config.
  bool batch_invariant = false;

  bool operator==(FastPaths const&) const = default;
};

/// The fast paths that are on, joined by '+' in field order ("align_multi_cta+pdl"); "" if none.
inline std::string enabled_names(FastPaths const& fp) {
  std::string out;
  auto add = [&](bool on, char const* name) {
    if (on) out += (out.empty() ? "" : "+") + std::string(name);
  };
  add(fp.align_multi_cta, "align_multi_cta");
  add(fp.wgmma_mainloop, "wgmma_mainloop");
  add(fp.cpu_register_tiles, "cpu_register_tiles");
  add(fp.pdl, "pdl");
  add(fp.batch_invariant, "batch_invariant");
  return out;
}

}  // namespace moetune::kernels
