// Reference renderings of chat templates for autotrain's ChatTemplate, computed with
// @huggingface/jinja (Hugging Face's JavaScript port of the Jinja that transformers'
// apply_chat_template runs, with trim_blocks and lstrip_blocks).
//
// Usage:
//   node chat_reference.mjs [--modules DIR] <expanded.json> <output.json>
//
// <expanded.json> is what tests/data/chat_render writes from chat_cases.json: one object per
// case with name, template, bos_token / eos_token (absent when the tokenizer has none),
// messages, add_generation_prompt and extra.
// @huggingface/jinja is looked up in DIR (a node_modules folder, or the folder holding one; see
// install.sh), then through NODE_PATH and the usual places.
//
// Writes a JSON array with one object per case: name, and text (the rendering) or error (the
// message). The variables are those transformers passes: the special tokens that are set,
// messages, tools and documents (null unless extra gives them), add_generation_prompt, then
// extra's.
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
if (args.length !== 2) {
  console.error("usage: node chat_reference.mjs [--modules DIR] <expanded.json> <output.json>");
  process.exit(2);
}
const [casesPath, outPath] = args;

// ES-module imports ignore NODE_PATH, so resolve with CommonJS require.
const require = createRequire(import.meta.url);
const resolved = require.resolve("@huggingface/jinja", {
  paths: [...(modules ? [modules] : []), ...(require.resolve.paths("@huggingface/jinja") ?? [])],
});
const { Template } = require(resolved);

const variables = (c) => {
  const v = {};
  if ("bos_token" in c) v.bos_token = c.bos_token;
  if ("eos_token" in c) v.eos_token = c.eos_token;
  Object.assign(v, { messages: c.messages, tools: null, documents: null });
  v.add_generation_prompt = c.add_generation_prompt;
  return Object.assign(v, c.extra);
};

const results = JSON.parse(fs.readFileSync(casesPath, "utf8")).map((c) => {
  try {
    return { name: c.name, text: new Template(c.template).render(variables(c)) };
  } catch (e) {
    return { name: c.name, error: String(e.message ?? e) };
  }
});

// One result per line keeps the file diffable.
fs.writeFileSync(outPath, "[\n" + results.map((r) => JSON.stringify(r)).join(",\n") + "\n]\n");
