// Writes docs/configuration.md from the table `--help` is printed from (src/config.ts) and the
// commands (src/cli/commands.ts), so the page cannot drift from the binary.
// Usage: bun run docs:config            (rewrite the page)
//        bun run docs:config --check    (exit 1 when the page is out of date; test/unit/docs-true-to-the-repository.test.ts does the same)
import { readFileSync, writeFileSync } from "node:fs";
import { renderConfigurationPage } from "./docs-config-page.ts";

const path = new URL("../docs/configuration.md", import.meta.url).pathname;
const page = renderConfigurationPage();
if (Bun.argv.includes("--check")) {
  const current = readFileSync(path, "utf8");
  if (current !== page) {
    console.error("docs/configuration.md is out of date with src/config.ts and src/cli/; run: bun run docs:config");
    process.exit(1);
  }
  console.log("docs/configuration.md is up to date");
} else {
  writeFileSync(path, page);
  console.log(`wrote ${path}`);
}
// Importing the commands loads modules that keep timers; nothing else is left to do.
process.exit(0);
