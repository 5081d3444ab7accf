// autotrain: the command line lives in src/cli; main only hands over.
#include "autotrain/cli/app.hpp"

int main(int argc, char** argv) {
  return autotrain::cli::run(argc, argv);
}
