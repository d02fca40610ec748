# Every dependency is a Debian package, found through its CMake config or pkg-config.
find_package(PkgConfig REQUIRED)
find_package(Threads REQUIRED)

pkg_check_modules(LIBUV REQUIRED IMPORTED_TARGET libuv)
pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
pkg_check_modules(LMDB REQUIRED IMPORTED_TARGET lmdb)
pkg_check_modules(SODIUM REQUIRED IMPORTED_TARGET libsodium)
pkg_check_modules(CURL REQUIRED IMPORTED_TARGET libcurl)
find_package(OpenSSL REQUIRED)  # the API's TLS (libssl-dev)
find_package(CapnProto REQUIRED)
find_package(tomlplusplus REQUIRED)
find_package(date REQUIRED)
find_package(nlohmann_json REQUIRED)
find_package(CLI11 CONFIG REQUIRED)  # header-only; Debian's is 2.1
if(CAESIUM_MIMALLOC)
  find_package(mimalloc 2 CONFIG REQUIRED)  # libmimalloc-dev: target `mimalloc`
endif()
if(CAESIUM_TESTS)
  find_package(Catch2 2 REQUIRED)
  include(Catch)
endif()
