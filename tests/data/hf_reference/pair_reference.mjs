// Reference ids of a preference pair as TRL's DPOTrainer.tokenize_row makes them (decoder-only),
// with Hugging Face's tokenizers (their JavaScript port, @lenml/tokenizers): the prompt without
// special tokens, with the tokenizer's BOS put first where encode(add_special_tokens=true) puts
// one and the prompt does not already start with it; each completion without special tokens,
// then EOS; no truncation. tests/data/preference_test.cpp holds what this printed.
//
// Usage: node pair_reference.mjs --modules DIR <tokenizer dir> <prompt> <chosen> <rejected>
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const args = process.argv.slice(2);
const modules = path.resolve(args[args.indexOf("--modules") + 1]);
args.splice(args.indexOf("--modules"), 2);
const [tokenizerDir, prompt, chosen, rejected] = args;
const require = createRequire(import.meta.url);
const { TokenizerLoader } = require(require.resolve("@lenml/tokenizers", { paths: [modules] }));
const readJSON = (p) => JSON.parse(fs.readFileSync(p, "utf8"));
const config = readJSON(path.join(tokenizerDir, "tokenizer_config.json"));
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: readJSON(path.join(tokenizerDir, "tokenizer.json")),
  tokenizerConfig: config,
});
const plain = (text) => tokenizer.encode(text, { add_special_tokens: false });
const bos = tokenizer.encode("", { add_special_tokens: true });  // what the template puts first
const eos = plain(config.eos_token);
let promptIds = plain(prompt);
if (bos.length > 0 && promptIds[0] !== bos[0]) promptIds = [...bos, ...promptIds];
console.log(JSON.stringify({
  prompt: promptIds,
  chosen: [...plain(chosen), ...eos],
  rejected: [...plain(rejected), ...eos],
}));
