// Reference token ids for the C++ tokenizer.json reader, computed with
// @lenml/tokenizers (a packaging of the transformers.js tokenizers).
//
// Usage:
//   node reference.mjs [--modules DIR] <tokenizer dir> <texts.json> <output.json>
//
// <tokenizer dir> holds tokenizer.json and tokenizer_config.json.
// <texts.json> is a JSON array of strings.
// @lenml/tokenizers is looked up in DIR (a node_modules folder, or the folder
// holding one; see install.sh), then through NODE_PATH and the usual places.
//
// Writes a JSON array with one object per text:
//   text        the input string
//   ids         encode(text, add_special_tokens=false)
//   ids_special encode(text, add_special_tokens=true)
//   decoded     decode(ids_special, skip_special_tokens=false), with no
//               clean_up_tokenization_spaces (the raw decoder output, as in
//               the Python `tokenizers` library).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const args = process.argv.slice(2);
let modules = null;
const i = args.indexOf("--modules");
if (i >= 0) {
  modules = path.resolve(args[i + 1]);
  args.splice(i, 2);
}
if (args.length !== 3) {
  console.error(
    "usage: node reference.mjs [--modules DIR] <tokenizer dir> <texts.json> <output.json>"
  );
  process.exit(2);
}
const [tokenizerDir, textsPath, outPath] = args;

// ES-module imports ignore NODE_PATH, so resolve with CommonJS require.
const require = createRequire(import.meta.url);
const resolved = require.resolve("@lenml/tokenizers", {
  paths: [...(modules ? [modules] : []), ...(require.resolve.paths("@lenml/tokenizers") ?? [])],
});
const { TokenizerLoader } = require(resolved);

const readJSON = (p) => JSON.parse(fs.readFileSync(p, "utf8"));
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: readJSON(path.join(tokenizerDir, "tokenizer.json")),
  tokenizerConfig: readJSON(path.join(tokenizerDir, "tokenizer_config.json")),
});

const results = readJSON(textsPath).map((text) => {
  const ids = tokenizer.encode(text, { add_special_tokens: false });
  const ids_special = tokenizer.encode(text, { add_special_tokens: true });
  // decode() throws on an empty id list.
  const decoded = ids_special.length === 0 ? "" : tokenizer.decode(ids_special, {
    skip_special_tokens: false,
    clean_up_tokenization_spaces: false,
  });
  return { text, ids, ids_special, decoded };
});

// One result per line keeps the file diffable.
fs.writeFileSync(outPath, "[\n" + results.map((r) => JSON.stringify(r)).join(",\n") + "\n]\n");
