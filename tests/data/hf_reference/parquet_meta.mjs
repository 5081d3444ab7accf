// Prints what a Parquet file holds, read with hyparquet (another reader we did not write):
// {"rows": N, "row_groups": N, "encodings": [...], "codecs": [...], "page_types": [...]}.
//
// Usage: node parquet_meta.mjs [--modules DIR] <file.parquet>
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
const { parquetMetadata } = await import(require.resolve("hyparquet"));
const bytes = fs.readFileSync(args[0]);
const metadata = parquetMetadata(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
const encodings = new Set(), codecs = new Set();
for (const group of metadata.row_groups) {
  for (const column of group.columns) {
    column.meta_data.encodings.forEach((e) => encodings.add(e));
    codecs.add(column.meta_data.codec);
  }
}
console.log(JSON.stringify({rows: Number(metadata.num_rows), row_groups: metadata.row_groups.length,
                            encodings: [...encodings].sort(), codecs: [...codecs].sort()}));
