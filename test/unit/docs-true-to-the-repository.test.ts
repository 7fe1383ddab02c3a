// The documentation points into the repository and stays true to the code:
// - every document path named in src/, test/ and scripts/ (docs/…, README.md, …) exists, with
//   the section its #anchor names;
// - every link of the README, CONTRIBUTING.md and the manual (docs/) resolves, anchors too, and
//   every repository path they name in backticks exists;
// - nothing cites a file outside the repository (the lead's working notes);
// - docs/configuration.md is what `bun run docs:config` writes from the settings table, and the
//   field tables of docs/protocol.md and docs/api.md what `bun run docs:fields` writes from the
//   fields table;
// - the README stays a front door (at most 12 KB), and the compose examples match the image.
import { describe, expect, test } from "bun:test";
import { existsSync, readFileSync, readdirSync, statSync } from "node:fs";
import { dirname, join, normalize, relative } from "node:path";
import { ROOT } from "../helpers/tmp.ts";
import { renderConfigurationPage } from "../../scripts/docs-config-page.ts";
import { FIELD_PAGES, renderFieldBlocks } from "../../scripts/docs-fields-page.ts";

const read = (path: string) => readFileSync(join(ROOT, path), "utf8");

/** Files under `dir` (relative to the root) whose names end in one of `exts`. */
function files(dir: string, exts: string[], skip: (path: string) => boolean = () => false): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const name of readdirSync(join(ROOT, d))) {
      const path = join(d, name);
      if (skip(path)) continue;
      if (statSync(join(ROOT, path)).isDirectory()) walk(path);
      else if (exts.some((e) => name.endsWith(e))) out.push(path);
    }
  };
  walk(dir);
  return out.sort();
}

/** GitHub's anchor for a heading: lowercase, punctuation dropped, spaces to hyphens. */
function slug(heading: string): string {
  return heading
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .trim()
    .replace(/\s/g, "-");
}

/** The anchors a markdown file has: its headings (outside code fences), numbered as GitHub numbers repeats. */
function anchorsOf(markdown: string): Set<string> {
  const seen = new Map<string, number>();
  const anchors = new Set<string>();
  let fence: string | null = null;
  for (const line of markdown.split("\n")) {
    const f = /^\s*(```|~~~)/.exec(line);
    if (f) {
      fence = fence === null ? f[1]! : fence === f[1] ? null : fence;
      continue;
    }
    if (fence !== null) continue;
    const h = /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!h) continue;
    const base = slug(h[1]!);
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.add(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Markdown text without its fenced code blocks (links and paths there are examples). */
const prose = (markdown: string) => markdown.replace(/^\s*(```|~~~)[\s\S]*?^\s*\1\s*$/gm, "");

/** Problems with a reference to `target` (a path relative to the root, maybe with #anchor), or null. */
function checkTarget(target: string): string | null {
  const [path, anchor] = target.split("#") as [string, string | undefined];
  if (!existsSync(join(ROOT, path))) return `${path} does not exist`;
  if (anchor !== undefined && path.endsWith(".md") && !anchorsOf(read(path)).has(anchor))
    return `${path} has no section #${anchor}`;
  return null;
}

// Documents as code names them: docs/…, packaging/…, README.md, CONTRIBUTING.md, CHANGELOG.md, with an optional #anchor.
const DOC_REF =
  /(?<![\w./-])((?:docs|packaging)\/[\w./-]*[\w-]\.(?:md|toml|png|yaml|service)|(?:README|CONTRIBUTING|CHANGELOG)\.md)(#[\w-]+)?/g;
const CODE_FILES = [
  ...files("src", [".ts", ".html", ".css"]),
  ...files("test", [".ts"]),
  ...files("scripts", [".ts", ".sh", ".lua", ".md"]),
];
const MANUAL = [
  "README.md",
  "CONTRIBUTING.md",
  "CHANGELOG.md",
  ...files("docs", [".md"], (p) => p === join("docs", "notes")),
];

describe("references in code", () => {
  test("every document a source, test or script file names exists, with the section its anchor names", () => {
    const problems: string[] = [];
    let count = 0;
    for (const file of CODE_FILES) {
      if (file === "test/unit/docs-true-to-the-repository.test.ts") continue; // its own patterns and examples
      for (const m of read(file).matchAll(DOC_REF)) {
        count += 1;
        const problem = checkTarget(`${m[1]}${m[2] ?? ""}`);
        if (problem) problems.push(`${file}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
    expect(count).toBeGreaterThan(40);
  });

  test("no file cites a document outside the repository, or a README section the README no longer has", () => {
    const outside = /DESIGN\.md|STACK-NOTES|\.\.\/shared\/(?![\w-]+\.ts)|README[ ,]+"/;
    const found = [
      ...CODE_FILES,
      ...MANUAL,
      ".ci/run",
      "packaging/Containerfile",
      "packaging/installstats.service",
      "packaging/debian/env",
    ]
      .filter((f) => f !== "test/unit/docs-true-to-the-repository.test.ts")
      .flatMap((f) =>
        read(f)
          .split("\n")
          .map((line, i) => ({ f, i, line })),
      )
      .filter(({ line }) => outside.test(line))
      .map(({ f, i, line }) => `${f}:${i + 1}: ${line.trim()}`);
    expect(found).toEqual([]);
  });
});

describe("the manual", () => {
  test("every link resolves, anchors included", () => {
    const problems: string[] = [];
    let count = 0;
    for (const file of MANUAL) {
      const text = prose(read(file));
      for (const m of text.matchAll(/!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) {
        const href = m[1]!;
        if (/^[a-z]+:/i.test(href)) continue; // https:, mailto:
        count += 1;
        const target = href.startsWith("#") ? `${file}${href}` : normalize(join(dirname(file), href));
        if (relative(ROOT, join(ROOT, target)).startsWith("..")) {
          problems.push(`${file}: ${href} points outside the repository`);
          continue;
        }
        const problem = checkTarget(target);
        if (problem) problems.push(`${file}: ${href}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
    expect(count).toBeGreaterThan(100);
  });

  test("every repository path named in backticks exists, with the section its anchor names", () => {
    const problems: string[] = [];
    for (const file of MANUAL) {
      if (file === "CHANGELOG.md") continue; // history: what a release had
      for (const m of prose(read(file)).matchAll(/`((?:src|test|scripts|docs|packaging|drizzle|\.ci)\/[^`\s<>*]*)`/g)) {
        const problem = checkTarget(m[1]!.replace(/[:,]$/, ""));
        if (problem) problems.push(`${file}: ${problem}`);
      }
    }
    expect(problems).toEqual([]);
  });

  test("docs/configuration.md is generated from the settings table (bun run docs:config)", () => {
    expect(read("docs/configuration.md")).toBe(renderConfigurationPage());
  });

  test.each(FIELD_PAGES)("%s: its field tables are generated from the fields table (bun run docs:fields)", (page) => {
    const text = read(page);
    expect(text).toContain("<!-- fields:");
    expect(text).toBe(renderFieldBlocks(text));
  });

  test("the README is a front door: at most 12 KB, naming the release's files", () => {
    const readme = read("README.md");
    expect(Buffer.byteLength(readme)).toBeLessThanOrEqual(12 * 1024);
    const version = (JSON.parse(read("package.json")) as { version: string }).version;
    for (const name of [
      `installstats-${version}-linux-x64`,
      `installstats_${version}_amd64.deb`,
      `installstats-${version}-oci-amd64.tar`,
      "SHA256SUMS",
    ]) {
      expect(readme).toContain(name);
    }
  });

  test("the compose examples are packaging/compose.yaml: this version's image with the image's own health check", () => {
    const version = (JSON.parse(read("package.json")) as { version: string }).version;
    const compose = Bun.YAML.parse(read("packaging/compose.yaml")) as {
      services: { installstats: { image: string; healthcheck: { test: string[] } } };
    };
    expect(compose.services.installstats.image).toBe(`localhost/installstats:${version}`);
    const containerfile = read("packaging/Containerfile");
    const cmd = /^\s*CMD (\[.*\])\s*$/m.exec(containerfile.slice(containerfile.indexOf("HEALTHCHECK")))![1]!;
    expect(compose.services.installstats.healthcheck.test).toEqual(["CMD", ...(JSON.parse(cmd) as string[])]);
    for (const doc of ["README.md", "docs/install.md"]) {
      const block = /```yaml\n([\s\S]*?)```/.exec(read(doc))?.[1];
      expect(block, doc).toBeDefined();
      expect(Bun.YAML.parse(block!)).toEqual(compose);
    }
  });
});
