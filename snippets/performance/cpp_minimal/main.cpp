// run_pte MODEL.pte: load a program with ExecuTorch's Module, run its
// "forward" method on a 1x3x224x224 tensor of ones, print the first output.
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>

#include <iostream>

using executorch::extension::Module;
using executorch::extension::ones;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: run_pte MODEL.pte\n";
    return 2;
  }
  Module module(argv[1]);  // opens the file when forward first needs it
  auto outputs = module.forward(ones({1, 3, 224, 224}));
  if (!outputs.ok()) {
    std::cerr << "error: cannot run " << argv[1] << " (error code "
              << static_cast<int>(outputs.error()) << ")\n";
    return 1;
  }
  const auto& scores = outputs->at(0).toTensor();
  std::cout.precision(9);
  for (ssize_t i = 0; i < scores.numel(); ++i) {
    std::cout << scores.const_data_ptr<float>()[i] << "\n";
  }
  return 0;
}
