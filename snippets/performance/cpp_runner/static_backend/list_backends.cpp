// Prints the name of every backend registered with the runtime, one a line.
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/platform/runtime.h>

#include <iostream>

int main() {
  executorch::runtime::runtime_init();
  size_t count = executorch::runtime::get_num_registered_backends();
  for (size_t i = 0; i < count; ++i) {
    auto name = executorch::runtime::get_backend_name(i);
    std::cout << (name.ok() ? *name : "?") << "\n";
  }
  std::cout << "registered backends: " << count << "\n";
  return 0;
}
