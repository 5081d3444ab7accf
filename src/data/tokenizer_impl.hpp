#pragma once
// Constructors behind make_tokenizer() (src/data/tokenizer.cpp).
#include <filesystem>
#include <memory>

#include "autotrain/data/tokenizer.hpp"

namespace autotrain::data {

std::unique_ptr<Tokenizer> make_gpt2_tokenizer(const std::filesystem::path& dir);
std::unique_ptr<Tokenizer> make_byte_tokenizer();

}  // namespace autotrain::data
