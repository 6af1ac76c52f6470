// rig-asm: assembles the text form of rig.program into a binary the agent's `image` loads.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "rig/program/program.h"

int main(int argc, char** argv) {
  CLI::App app{
      "rig-asm: assemble a rig.program text file (.rasm) into a binary (.rigp).\n"
      "The output is checked by the same verifier the agent runs when it loads an image."};
  std::string input;
  std::string output;
  app.add_option("input", input, "assembly text to read")->required()->check(CLI::ExistingFile);
  app.add_option("-o,--output", output, "binary to write")->required();
  CLI11_PARSE(app, argc, argv);

  std::ifstream in(input, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    std::cerr << "rig-asm: cannot read " << input << "\n";
    return 1;
  }

  auto result = rig::program::assemble(text.str());
  if (auto* reason = std::get_if<std::string>(&result)) {
    std::cerr << input << ": " << *reason << "\n";
    return 1;
  }
  const auto& binary = std::get<std::vector<std::byte>>(result);
  std::ofstream out(output, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(binary.data()),
            static_cast<std::streamsize>(binary.size()));
  out.close();
  if (!out) {
    std::cerr << "rig-asm: cannot write " << output << "\n";
    return 1;
  }
  return 0;
}
