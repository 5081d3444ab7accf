#pragma once
// Normalizers of tokenizer.json ("normalizer"): NFC, Prepend, Replace and Sequence of them.
// A normalizer rewrites each stretch of text between added tokens before pre-tokenization,
// as Hugging Face's tokenizers do (so Prepend prepends to every such stretch).
#include <memory>
#include <string>

#include "tokenizer_json.hpp"

namespace autotrain::data {

class Normalizer {
 public:
  virtual ~Normalizer() = default;
  // `continues_cut`: the text continues a document that prepare cut at a safe point, so
  // rules for the start of a text (Prepend) do not apply.
  virtual void normalize(std::string& text, bool continues_cut) const = 0;
  // Whether the normalizer can change text across a line break: prepare's cuts after a
  // newline are then not safe.
  virtual bool touches_newlines() const = 0;
  // Likewise across a space (prepare's cuts before a space).
  virtual bool touches_spaces() const = 0;
};

// nullptr for a null normalizer. `where` is the JSON path ("tokenizer.json: normalizer").
std::unique_ptr<Normalizer> make_normalizer(const tokenizer_json::Json& json,
                                            const std::string& where);

}  // namespace autotrain::data
