# Cross-compile for 64-bit ARM Linux (aarch64) with Debian's GNU toolchain
# (apt-get install g++-aarch64-linux-gnu). The C library and libstdc++ come
# from the compiler's own sysroot; executorch from CMAKE_PREFIX_PATH, the
# folder the aarch64 wheel was unpacked into.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)  # build tools run on this machine
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)   # the sysroot and CMAKE_PREFIX_PATH
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
