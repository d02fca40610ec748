// caesium: the one binary (node/cli/commands.h lists its commands).
#include <chrono>
#include <iostream>
#include <string>
#include <vector>

#include "node/cli/allocator.h"
#include "node/cli/commands.h"

int main(int argc, char** argv) {
  caesium::cli::Io io{std::cout,
                      std::cerr,
                      caesium::cli::process_env(),
                      caesium::cli::curl_transport,
                      [] {
                        return std::chrono::duration_cast<std::chrono::milliseconds>(
                                   std::chrono::system_clock::now().time_since_epoch())
                            .count();
                      },
                      argc,
                      argv,
                      caesium::cli::allocator_name()};
  return caesium::cli::run_caesium(std::vector<std::string>(argv + 1, argv + argc), io);
}
