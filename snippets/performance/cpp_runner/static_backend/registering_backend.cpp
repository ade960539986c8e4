// A stand-in for a backend library: a backend that computes nothing and
// registers itself the way ExecuTorch's XNNPACK backend does, from the
// initializer of a static object. Nothing calls this file; whether its
// registration runs is up to the linker.
#include <executorch/runtime/backend/interface.h>

namespace {

using executorch::runtime::ArrayRef;
using executorch::runtime::Backend;
using executorch::runtime::BackendExecutionContext;
using executorch::runtime::BackendInitContext;
using executorch::runtime::BackendInterface;
using executorch::runtime::CompileSpec;
using executorch::runtime::DelegateHandle;
using executorch::runtime::Error;
using executorch::runtime::EValue;
using executorch::runtime::FreeableBuffer;
using executorch::runtime::Result;
using executorch::runtime::Span;

class StandInBackend final : public BackendInterface {
 public:
  bool is_available() const override { return true; }
  Result<DelegateHandle*> init(BackendInitContext&, FreeableBuffer*,
                               ArrayRef<CompileSpec>) const override {
    return Error::NotSupported;
  }
  Error execute(BackendExecutionContext&, DelegateHandle*,
                Span<EValue*>) const override {
    return Error::NotSupported;
  }
};

StandInBackend backend;
const Backend entry{"StandInBackend", &backend};
const Error registered = executorch::runtime::register_backend(entry);

}  // namespace
