// Rewrites the field tables of docs/protocol.md and docs/api.md from the fields table
// (src/domain/fields.ts), so the manual cannot drift from what the service reads and writes.
// Usage: bun run docs:fields            (rewrite the tables)
//        bun run docs:fields --check    (exit 1 when a table is out of date; test/docs.test.ts does the same)
import { readFileSync, writeFileSync } from "node:fs";
import { FIELD_PAGES, renderFieldBlocks } from "./docs-fields-page.ts";

let stale = false;
for (const page of FIELD_PAGES) {
  const path = new URL(`../${page}`, import.meta.url).pathname;
  const current = readFileSync(path, "utf8");
  const rendered = renderFieldBlocks(current);
  if (rendered === current) continue;
  if (Bun.argv.includes("--check")) {
    console.error(`${page}: its field tables are out of date with src/domain/fields.ts; run: bun run docs:fields`);
    stale = true;
  } else {
    writeFileSync(path, rendered);
    console.log(`wrote ${page}`);
  }
}
process.exit(stale ? 1 : 0);
