// runner MODEL.pte [--input FILE.bin ...] [--iterations N] [--threads T]
//        [--copies K] [--weight-cache on|off] [--workspace-sharing 0|1|2]
//        [--etdump FILE.etdp]
//
// Loads MODEL.pte with ExecuTorch's Module API, runs its "forward" method
// once and prints every output: a line "output I: DTYPE [D0, D1, ...]", then
// one value per line at full precision. Without --input, every input is a
// tensor of ones, its shape and dtype read from the method's metadata; each
// --input gives the raw bytes of one input, in order. --iterations N then
// times N more runs and prints their median latency. --threads T sizes the
// thread pool XNNPACK runs on. --copies K loads the program K times, as K
// independent programs, and reports each load's time and the process's
// resident memory; --weight-cache and --workspace-sharing set the XNNPACK
// backend's runtime options before anything is loaded. --etdump writes the
// runtime's profile of the runs to FILE.etdp. Errors are one line on stderr,
// exit status 1 (2 for bad usage).

// [start cpp-includes]
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/core/exec_aten/util/scalar_type_util.h>
// [end cpp-includes]
// [start cpp-option-includes]
#include <executorch/devtools/etdump/etdump_flatcc.h>
#include <executorch/runtime/backend/interface.h>
#include <executorch/runtime/backend/options.h>
// [end cpp-option-includes]

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <iterator>
#include <limits>
#include <memory>
#include <string>
#include <vector>

// [start cpp-threadpool]
// The wheel ships the thread pool library (executorch::threadpool) but not
// its header, extension/threadpool/threadpool.h; these are the two functions
// of it the runner calls, declared as that header declares them.
namespace executorch::extension::threadpool {
class ThreadPool final {
 public:
  size_t get_thread_count() const;
  bool _unsafe_reset_threadpool(uint32_t num_threads);
};
ThreadPool* get_threadpool();
}  // namespace executorch::extension::threadpool
// [end cpp-threadpool]

using executorch::aten::ScalarType;
using executorch::extension::TensorPtr;
using executorch::extension::module::Module;
using executorch::runtime::BackendOption;
using executorch::runtime::BackendOptions;
using executorch::runtime::Error;
using executorch::runtime::EValue;

namespace {

[[noreturn]] void fail(const std::string& message, int status = 1) {
  std::cerr << "runner: error: " << message << "\n";
  std::exit(status);
}

struct Options {
  std::string model;
  std::vector<std::string> inputs;
  long iterations = 0;
  long threads = 0;  // 0: leave the pool as the runtime sized it
  long copies = 1;
  int weight_cache = -1;       // -1: the backend's default
  int workspace_sharing = -1;  // -1: the backend's default
  std::string etdump;
};

long positive(const std::string& flag, const char* text) {
  char* end = nullptr;
  long value = std::strtol(text, &end, 10);
  if (*text == '\0' || *end != '\0' || value < 1) {
    fail(flag + " needs a positive integer, got '" + text + "'", 2);
  }
  return value;
}

Options parse(int argc, char** argv) {
  const std::string usage =
      "usage: runner MODEL.pte [--input FILE.bin ...] [--iterations N] [--threads T] "
      "[--copies K] [--weight-cache on|off] [--workspace-sharing 0|1|2] "
      "[--etdump FILE.etdp]";
  Options options;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    bool has_value = i + 1 < argc;
    if (arg == "--input" && has_value) {
      options.inputs.push_back(argv[++i]);
    } else if (arg == "--iterations" && has_value) {
      options.iterations = positive(arg, argv[++i]);
    } else if (arg == "--threads" && has_value) {
      options.threads = positive(arg, argv[++i]);
    } else if (arg == "--copies" && has_value) {
      options.copies = positive(arg, argv[++i]);
    } else if (arg == "--weight-cache" && has_value) {
      std::string value = argv[++i];
      if (value != "on" && value != "off") {
        fail("--weight-cache needs on or off, got '" + value + "'", 2);
      }
      options.weight_cache = value == "on";
    } else if (arg == "--workspace-sharing" && has_value) {
      std::string value = argv[++i];
      if (value != "0" && value != "1" && value != "2") {
        fail("--workspace-sharing needs 0, 1 or 2, got '" + value + "'", 2);
      }
      options.workspace_sharing = std::stoi(value);
    } else if (arg == "--etdump" && has_value) {
      options.etdump = argv[++i];
    } else if (arg == "-h" || arg == "--help") {
      std::cout << usage << "\n";
      std::exit(0);
    } else if (arg.rfind("--", 0) == 0 || !options.model.empty()) {
      fail("unexpected argument '" + arg + "'; " + usage, 2);
    } else {
      options.model = arg;
    }
  }
  if (options.model.empty()) {
    fail("no model given; " + usage, 2);
  }
  return options;
}

std::vector<char> read_file(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  if (!file) {
    fail("cannot open " + path + ": " + std::strerror(errno));
  }
  return {std::istreambuf_iterator<char>(file), std::istreambuf_iterator<char>()};
}

std::string shape_of(const executorch::aten::Tensor& tensor) {
  std::string text = "[";
  for (size_t d = 0; d < tensor.sizes().size(); ++d) {
    text += (d ? ", " : "") + std::to_string(tensor.sizes()[d]);
  }
  return text + "]";
}

// [start cpp-print]
// Values are printed with as many digits as it takes to read the same
// number back: max_digits10 of the output's element type.
template <typename T>
void print_values(const executorch::aten::Tensor& tensor) {
  std::cout.precision(std::numeric_limits<T>::max_digits10);
  const T* data = tensor.const_data_ptr<T>();
  for (ssize_t i = 0; i < tensor.numel(); ++i) {
    std::cout << +data[i] << "\n";
  }
}

void print_output(size_t index, const EValue& value) {
  if (!value.isTensor()) {
    fail("output " + std::to_string(index) + " is not a tensor");
  }
  const auto& tensor = value.toTensor();
  std::cout << "output " << index << ": "
            << executorch::runtime::toString(tensor.scalar_type()) << " "
            << shape_of(tensor) << "\n";
  switch (tensor.scalar_type()) {
    case ScalarType::Float: print_values<float>(tensor); break;
    case ScalarType::Double: print_values<double>(tensor); break;
    case ScalarType::Long: print_values<int64_t>(tensor); break;
    case ScalarType::Int: print_values<int32_t>(tensor); break;
    case ScalarType::Char: print_values<int8_t>(tensor); break;
    case ScalarType::Byte: print_values<uint8_t>(tensor); break;
    case ScalarType::Bool: print_values<bool>(tensor); break;
    default:
      fail("output " + std::to_string(index) + " has a dtype the runner cannot print");
  }
}
// [end cpp-print]

// Resident memory of this process in MiB, as Linux reports it.
double resident_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stod(line.substr(6)) / 1024.0;  // the line is "VmRSS:  N kB"
    }
  }
  return -1;
}

// [start cpp-backend-options]
// The XNNPACK backend's runtime options, by the keys its library defines.
// They are process-wide and apply to programs loaded after they are set.
void set_xnnpack_options(const Options& options) {
  BackendOptions<2> xnnpack;
  if (options.weight_cache >= 0) {
    xnnpack.set_option("weight_cache_enabled", options.weight_cache == 1);
  }
  if (options.workspace_sharing >= 0) {
    xnnpack.set_option("workspace_sharing_mode", options.workspace_sharing);
  }
  if (executorch::runtime::set_option("XnnpackBackend", xnnpack.view()) != Error::Ok) {
    fail("the XNNPACK backend refused its options (is it linked?)");
  }
}

void print_xnnpack_options() {
  BackendOptions<2> xnnpack;
  xnnpack.set_option("weight_cache_enabled", false);   // the values are
  xnnpack.set_option("workspace_sharing_mode", -1);    // filled in below
  auto view = xnnpack.view();
  if (executorch::runtime::get_option("XnnpackBackend", view) != Error::Ok) {
    std::cout << "xnnpack: backend not registered\n";
    return;
  }
  std::cout << "xnnpack weight_cache_enabled: " << std::get<bool>(view[0].value)
            << "\nxnnpack workspace_sharing_mode: " << std::get<int>(view[1].value)
            << "\n";
}
// [end cpp-backend-options]

// [start cpp-etdump]
// Writes what the ETDump event tracer recorded to a file that
// executorch.devtools.Inspector reads.
void write_etdump(Module& module, const std::string& path) {
  auto* tracer = static_cast<executorch::etdump::ETDumpGen*>(module.event_tracer());
  executorch::etdump::ETDumpResult dump = tracer->get_etdump_data();
  if (dump.buf == nullptr) {
    fail("the event tracer recorded nothing");
  }
  std::ofstream file(path, std::ios::binary);
  file.write(static_cast<const char*>(dump.buf),
             static_cast<std::streamsize>(dump.size));
  std::free(dump.buf);
  if (!file) {
    fail("cannot write " + path);
  }
}
// [end cpp-etdump]

}  // namespace

int main(int argc, char** argv) {
  Options options = parse(argc, argv);

  // [start cpp-threads]
  if (options.threads > 0) {
    executorch::extension::threadpool::get_threadpool()->_unsafe_reset_threadpool(
        static_cast<uint32_t>(options.threads));
  }
  // [end cpp-threads]

  // [start cpp-set-options]
  if (options.weight_cache >= 0 || options.workspace_sharing >= 0) {
    set_xnnpack_options(options);
  }
  // [end cpp-set-options]

  // [start cpp-load]
  // Module opens the file itself; a missing file is reported here first, in
  // one line, instead of by the runtime's log.
  if (!std::ifstream(options.model, std::ios::binary)) {
    fail("cannot open " + options.model + ": " + std::strerror(errno));
  }
  std::unique_ptr<executorch::runtime::EventTracer> tracer;
  if (!options.etdump.empty()) {
    tracer = std::make_unique<executorch::etdump::ETDumpGen>();
  }
  auto module = std::make_unique<Module>(options.model, Module::LoadMode::File,
                                         std::move(tracer));
  if (module->load() != Error::Ok) {
    fail(options.model + " is not a program ExecuTorch can load");
  }
  auto meta = module->method_meta("forward");
  if (!meta.ok()) {
    fail(options.model + " has no method 'forward'");
  }
  print_xnnpack_options();
  // [end cpp-load]

  // [start cpp-copies]
  // Each copy is a program of its own: a Module loads the file and its
  // forward method, which initialises the XNNPACK delegates (packing weights).
  std::vector<std::unique_ptr<Module>> modules;
  modules.push_back(std::move(module));
  for (long copy = 0; copy < options.copies; ++copy) {
    if (copy > 0) {
      modules.push_back(std::make_unique<Module>(options.model));
    }
    auto start = std::chrono::steady_clock::now();
    if (modules.back()->load_method("forward") != Error::Ok) {
      fail("loading forward of copy " + std::to_string(copy) + " failed");
    }
    std::chrono::duration<double, std::milli> took =
        std::chrono::steady_clock::now() - start;
    std::cout << "load " << copy << ": " << took.count() << " ms, resident "
              << resident_mib() << " MiB\n";
  }
  // [end cpp-copies]
  // [end cpp-load]

  // [start cpp-inputs]
  size_t num_inputs = meta->num_inputs();
  if (!options.inputs.empty() && options.inputs.size() != num_inputs) {
    fail("forward takes " + std::to_string(num_inputs) + " inputs, got " +
             std::to_string(options.inputs.size()) + " --input files", 2);
  }
  std::vector<TensorPtr> tensors;
  std::vector<EValue> inputs;
  for (size_t i = 0; i < num_inputs; ++i) {
    auto info = meta->input_tensor_meta(i);
    if (!info.ok()) {
      fail("input " + std::to_string(i) + " is not a tensor");
    }
    std::vector<executorch::aten::SizesType> sizes(info->sizes().begin(),
                                                   info->sizes().end());
    if (options.inputs.empty()) {
      tensors.push_back(executorch::extension::ones(sizes, info->scalar_type()));
    } else {
      std::vector<char> bytes = read_file(options.inputs[i]);
      if (bytes.size() != info->nbytes()) {
        fail(options.inputs[i] + " holds " + std::to_string(bytes.size()) +
             " bytes, input " + std::to_string(i) + " needs " +
             std::to_string(info->nbytes()));
      }
      std::vector<uint8_t> data(bytes.begin(), bytes.end());
      tensors.push_back(
          executorch::extension::make_tensor_ptr(sizes, std::move(data), {}, {},
                                                 info->scalar_type()));
    }
    inputs.emplace_back(tensors.back());
  }
  // [end cpp-inputs]

  // [start cpp-run]
  auto outputs = modules[0]->forward(inputs);
  if (!outputs.ok()) {
    fail("forward failed with error code " +
         std::to_string(static_cast<int>(outputs.error())));
  }
  for (size_t i = 0; i < outputs->size(); ++i) {
    print_output(i, (*outputs)[i]);
  }
  // [end cpp-run]

  // [start cpp-time]
  if (options.iterations > 0) {
    std::vector<double> milliseconds;
    for (long i = 0; i < options.iterations; ++i) {
      auto start = std::chrono::steady_clock::now();
      if (!modules[i % modules.size()]->forward(inputs).ok()) {
        fail("forward failed in timed run " + std::to_string(i));
      }
      std::chrono::duration<double, std::milli> took =
          std::chrono::steady_clock::now() - start;
      milliseconds.push_back(took.count());
    }
    std::sort(milliseconds.begin(), milliseconds.end());
    size_t n = milliseconds.size();
    double median = n % 2 ? milliseconds[n / 2]
                          : (milliseconds[n / 2 - 1] + milliseconds[n / 2]) / 2;
    std::cout.precision(4);
    std::cout << "median latency: " << median << " ms over " << n << " runs, "
              << executorch::extension::threadpool::get_threadpool()->get_thread_count()
              << " threads\n";
  }
  // [end cpp-time]
  std::cout << "resident after running: " << resident_mib() << " MiB\n";

  if (!options.etdump.empty()) {
    write_etdump(*modules[0], options.etdump);
  }
  return 0;
}
