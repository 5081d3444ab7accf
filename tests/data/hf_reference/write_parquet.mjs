// Writes rows as a Parquet file with arrow-rs's writer (the parquet-wasm package; apache-arrow
// builds the table), for checking autotrain's Parquet reader against a writer we did not write.
//
// Usage:
//   node write_parquet.mjs [--modules DIR] <rows.json> <out.parquet> [<options.json>]
//
// rows.json is a JSON list of objects with these columns (each may be null):
//   text      string
//   messages  list<struct<role: string, content: string>>  (a conversation)
//   tags      list<string>
//   meta      struct<source: string, n: int32>
//   score     float64
//   id        int64
//   flag      bool
//   prompt    string; chosen, rejected: conversations as messages (preference pairs)
// options (all optional): compression (UNCOMPRESSED, SNAPPY, GZIP, ZSTD, ...), dictionary
// (true/false), v2 (data pages v2), page (data page size limit in bytes), group (rows per row
// group), columnEncoding ({column: ENCODING}, with dictionary false).
// meta.mjs prints a file's encodings and codecs, read back with hyparquet.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";

const args = process.argv.slice(2);
let modules = null;
const at = args.indexOf("--modules");
if (at >= 0) {
  modules = path.resolve(args[at + 1]);
  args.splice(at, 2);
}
const require = createRequire(modules ? path.join(modules, "node_modules", "x.js") : import.meta.url);
const arrow = require("apache-arrow");
const pw = require("parquet-wasm");

const [rowsFile, out, optionsJson] = args;
const rows = JSON.parse(fs.readFileSync(rowsFile, "utf8"));
const options = optionsJson ? JSON.parse(optionsJson) : {};
const utf8 = () => new arrow.Utf8();
const field = (name, type) => new arrow.Field(name, type, true);
const message = new arrow.Struct([field("role", utf8()), field("content", utf8())]);
const columns = {
  text: utf8(),
  messages: new arrow.List(field("element", message)),
  tags: new arrow.List(field("element", utf8())),
  meta: new arrow.Struct([field("source", utf8()), field("n", new arrow.Int32())]),
  score: new arrow.Float64(),
  id: new arrow.Int64(),
  flag: new arrow.Bool(),
  prompt: utf8(),
  chosen: new arrow.List(field("element", message)),
  rejected: new arrow.List(field("element", message)),
};
const vectors = {};
for (const [name, type] of Object.entries(columns)) {
  const values = rows.map((r) => (r[name] === undefined ? null : r[name]));
  vectors[name] = arrow.vectorFromArray(
    name === "id" ? values.map((v) => (v === null ? null : BigInt(v))) : values, type);
}
const table = new arrow.Table(vectors);
let props = new pw.WriterPropertiesBuilder();
if (options.compression !== undefined) props = props.setCompression(pw.Compression[options.compression]);
if (options.dictionary !== undefined) props = props.setDictionaryEnabled(options.dictionary);
if (options.v2) props = props.setWriterVersion(pw.WriterVersion.V2);
if (options.page) props = props.setDataPageSizeLimit(options.page);
if (options.group) props = props.setMaxRowGroupSize(options.group);
for (const [name, encoding] of Object.entries(options.columnEncoding || {})) {
  props = props.setColumnEncoding(name, pw.Encoding[encoding]);
}
const wasmTable = pw.Table.fromIPCStream(arrow.tableToIPC(table, "stream"));
fs.writeFileSync(out, pw.writeParquet(wasmTable, props.build()));
