// Compiles the single executable: dist/installstats, with migrations and every web asset inside.
// Usage: bun run build [--outfile path] [--target bun-linux-arm64] [--stamp "commit date"]
// (scripts/release.ts passes --target and --stamp: the stamp is what --version prints after the version.)
import { parseArgs } from "node:util";

const { values } = parseArgs({
  args: Bun.argv.slice(2),
  options: { outfile: { type: "string" }, target: { type: "string" }, stamp: { type: "string" } },
});
const outfile = values.outfile ?? "dist/installstats";
const root = new URL("..", import.meta.url).pathname;

const cmd = [
  // The checkpoint thread and the read threads are more entry points: Workers inside the executable.
  "bun",
  "build",
  "--compile",
  "src/main.ts",
  "src/store/sqlite/checkpointer.ts",
  "src/store/sqlite/scanner.ts",
  "--outfile",
  outfile,
  // Migrations are read from /$bunfs/root/drizzle/<engine> at start-up (src/store/<engine>/database.ts).
  "--asset",
  "drizzle",
  // ESM bytecode halves start-up; plain --bytecode would default to CJS and reject top-level await.
  "--format=esm",
  "--bytecode",
  "--minify",
  // A deployed binary must not pick up whatever .env or bunfig.toml sits in its working directory.
  "--no-compile-autoload-dotenv",
  "--no-compile-autoload-bunfig",
  // Another platform's runtime is downloaded once by bun; the default build needs none.
  ...(values.target ? [`--target=${values.target}`] : []),
  ...(values.stamp ? ["--define", `INSTALLSTATS_BUILD=${JSON.stringify(values.stamp)}`] : []),
];
const started = performance.now();
const proc = Bun.spawnSync(cmd, { cwd: root, stdout: "inherit", stderr: "inherit" });
if (proc.exitCode !== 0) process.exit(proc.exitCode ?? 1);
console.log(`built ${outfile} in ${((performance.now() - started) / 1000).toFixed(1)} s`);
