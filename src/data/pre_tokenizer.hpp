#pragma once
// Pre-tokenizers of tokenizer.json ("pre_tokenizer"): ByteLevel, Split, Metaspace and Sequence.
// They cut normalized text into pieces that the BPE model encodes one at a time.
//
// Pieces are spans of one buffer, so a splitting step copies no text. ByteLevel's mapping of
// bytes to visible characters is not done here: the model of a byte-level tokenizer keys its
// vocabulary by bytes instead (bpe.hpp), so ByteLevel must be the last step.
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "tokenizer_json.hpp"

namespace autotrain::data {

struct Pieces {
  std::string text;
  std::vector<std::pair<size_t, size_t>> spans;  // [begin, end) into text, in order
};

// Where the text being pre-tokenized sits in its document.
struct TextPlace {
  bool document_start = true;  // it begins the document (Metaspace's prepend_scheme "first")
  bool continues_cut = false;  // it continues a document prepare cut: no start-of-text rules
};

class PreTokenizer {
 public:
  virtual ~PreTokenizer() = default;
  // Replaces `pieces` by their pieces; `scratch` is reusable working space.
  virtual void split(Pieces& pieces, Pieces& scratch, TextPlace place) const = 0;
  virtual bool is_byte_level() const { return false; }
  // The split patterns, for prepare's check that cutting after a newline is safe.
  virtual std::vector<std::string> patterns() const { return {}; }
};

// nullptr for a null pre-tokenizer. `where` is its JSON path.
std::unique_ptr<PreTokenizer> make_pre_tokenizer(const tokenizer_json::Json& json,
                                                 const std::string& where);

// GPT-2's own: ByteLevel with its regex and no prefix space.
std::unique_ptr<PreTokenizer> make_gpt2_pre_tokenizer();

}  // namespace autotrain::data
