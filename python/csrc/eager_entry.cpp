// _moetune_eager: moetune.fused_moe's eager fast path, one CPython call straight into the op's
// body (torch_ops.hpp) instead of torch's boxed dispatcher (2.0-2.4 us of host time per call on
// an H200's host for these seven arguments). Built per Python version (it uses the C API and
// libtorch_python); the package falls back to the dispatcher op when it is missing.
//
// It serves only what the op would serve with nothing in between: plain strided CPU or CUDA
// tensors, no Python-dispatch or functional wrappers, no active TorchDispatchMode, no autograd
// graph to record. Otherwise it returns None and the caller dispatches the op (so
// torch.compile, FakeTensor, vmap and dispatch modes see moetune::fused_moe as always).
// Covered by tests/python/test_eager_entry.py.
#include <Python.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/autograd/python_variable.h>

#include <ATen/core/grad_mode.h>
#include <c10/core/impl/TorchDispatchModeTLS.h>

#include <string>

#include "torch_ops.hpp"

namespace {

/// Keys that mean something other than this op's CPU/CUDA kernel would run on the tensor.
c10::DispatchKeySet const kDeclined{c10::DispatchKey::Python,
                                    c10::DispatchKey::PythonTLSSnapshot,
                                    c10::DispatchKey::Functionalize,
                                    c10::DispatchKey::FuncTorchBatched,
                                    c10::DispatchKey::FuncTorchGradWrapper,
                                    c10::DispatchKey::Conjugate,
                                    c10::DispatchKey::Negative,
                                    c10::DispatchKey::ZeroTensor};

bool plain(at::Tensor const& t, bool grad_mode) {
  return t.defined() && (t.is_cuda() || t.is_cpu()) && t.layout() == at::kStrided &&
         !t.key_set().has_any(kDeclined) && !(grad_mode && t.requires_grad());
}

bool as_string(PyObject* o, std::string& out) {
  if (!PyUnicode_Check(o)) return false;
  Py_ssize_t n = 0;
  char const* s = PyUnicode_AsUTF8AndSize(o, &n);
  if (s == nullptr) return false;
  out.assign(s, static_cast<size_t>(n));
  return true;
}

/// fused_moe(hidden_states, w1, w2, topk_weights, topk_ids, activation, config
///           [, batch_invariant]) -> Tensor | None
PyObject* fused_moe(PyObject*, PyObject* const* args, Py_ssize_t nargs) {
  HANDLE_TH_ERRORS
  if (nargs != 7 && nargs != 8) {
    PyErr_SetString(PyExc_TypeError, "_moetune_eager.fused_moe takes 7 or 8 positional arguments");
    return nullptr;
  }
  if (nargs == 8 && !PyBool_Check(args[7])) Py_RETURN_NONE;  // not a bool: the op says why
  bool const batch_invariant = nargs == 8 && args[7] == Py_True;
  if (c10::impl::dispatch_mode_enabled()) Py_RETURN_NONE;
  bool const grad_mode = at::GradMode::is_enabled();
  at::Tensor const* t[5];
  for (int i = 0; i < 5; ++i) {
    if (!THPVariable_Check(args[i])) Py_RETURN_NONE;
    t[i] = &THPVariable_Unpack(args[i]);
    if (!plain(*t[i], grad_mode)) Py_RETURN_NONE;
  }
  std::string activation, config;
  if (!as_string(args[5], activation) || !as_string(args[6], config)) Py_RETURN_NONE;
  return THPVariable_Wrap(moetune::python::fused_moe_out_of_place(*t[0], *t[1], *t[2], *t[3], *t[4],
                                                                  activation, config, std::nullopt,
                                                                  std::nullopt, batch_invariant));
  END_HANDLE_TH_ERRORS
}

PyMethodDef methods[] = {
    {"fused_moe", reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)()>(&fused_moe)),
     METH_FASTCALL, "moetune.fused_moe's eager fast path; None where the op must dispatch"},
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT,
                      "_moetune_eager",
                      nullptr,
                      -1,
                      methods,
                      nullptr,
                      nullptr,
                      nullptr,
                      nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__moetune_eager() { return PyModule_Create(&module); }
