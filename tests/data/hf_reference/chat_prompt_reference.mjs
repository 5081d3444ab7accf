// Reference for `autotrain generate --chat`: what transformers' apply_chat_template(messages,
// add_generation_prompt=True, tokenize=True) gives for a tokenizer folder, computed with
// @huggingface/jinja (the template) and @lenml/tokenizers (the ids), and the text of reply ids.
//
// Usage:
//   node chat_prompt_reference.mjs [--modules DIR] prompt <tokenizer dir> <system> <user> <out.json>
//       Writes {"text": the rendering, "ids": its ids (add_special_tokens false)}. An empty
//       <system> means no system message. The template sees the bos_token and eos_token that
//       tokenizer_config.json sets.
//   node chat_prompt_reference.mjs [--modules DIR] decode <tokenizer dir> <ids.json>
//       Prints the decoding of the ids (skip_special_tokens false), then a newline.
//   node chat_prompt_reference.mjs [--modules DIR] id <tokenizer dir> <spelling>
//       Prints the one id a special token's spelling encodes to.
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
const require = createRequire(import.meta.url);
const load = (name) =>
  require(require.resolve(name, {
    paths: [...(modules ? [modules] : []), ...(require.resolve.paths(name) ?? [])],
  }));
const { TokenizerLoader } = load("@lenml/tokenizers");
const { Template } = load("@huggingface/jinja");

const [command, dir, ...rest] = args;
const readJSON = (p) => JSON.parse(fs.readFileSync(p, "utf8"));
const config = readJSON(path.join(dir, "tokenizer_config.json"));
const tokenizer = TokenizerLoader.fromPreTrained({
  tokenizerJSON: readJSON(path.join(dir, "tokenizer.json")),
  tokenizerConfig: config,
});
// A special token in tokenizer_config.json: a string, or an AddedToken object's content.
const spelling = (token) => (token && typeof token === "object" ? token.content : token);

if (command === "prompt") {
  const [system, user, out] = rest;
  const messages = [];
  if (system !== "") messages.push({ role: "system", content: system });
  messages.push({ role: "user", content: user });
  const variables = { messages, tools: null, documents: null, add_generation_prompt: true };
  for (const key of ["bos_token", "eos_token"]) {
    if (config[key] != null) variables[key] = spelling(config[key]);
  }
  const text = new Template(config.chat_template).render(variables);
  const ids = tokenizer.encode(text, { add_special_tokens: false });
  fs.writeFileSync(out, JSON.stringify({ text, ids }) + "\n");
} else if (command === "decode") {
  const ids = readJSON(rest[0]);
  const text = ids.length === 0 ? "" : tokenizer.decode(ids, {
    skip_special_tokens: false,
    clean_up_tokenization_spaces: false,
  });
  process.stdout.write(text + "\n");
} else if (command === "id") {
  const ids = tokenizer.encode(rest[0], { add_special_tokens: false });
  if (ids.length !== 1) throw new Error(`${rest[0]} encodes to ${ids.length} ids, not one`);
  process.stdout.write(`${ids[0]}\n`);
} else {
  console.error("usage: node chat_prompt_reference.mjs [--modules DIR] prompt|decode|id ...");
  process.exit(2);
}
