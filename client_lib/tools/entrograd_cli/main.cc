// entrograd-cli: offline tools for entrograd. See cli.h.
#include <iostream>
#include <string>
#include <vector>

#include "entrograd_cli/cli.h"

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  return entrograd::cli::RunCli(args, std::cout, std::cerr);
}
