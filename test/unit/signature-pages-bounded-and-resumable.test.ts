// signaturePage over an in-memory list: exact pages, bounded reads, cursors that resume.
import { describe, expect, test } from "bun:test";
import { errorSignature, signatureId } from "../../src/domain/error-signature.ts";
import { signaturePage, type PageReader } from "../../src/read/signature-filter.ts";
import type { ListCursor } from "../../src/store/contract/executions.ts";
import type { Execution } from "../../src/domain/execution.ts";
import { execution } from "../helpers/reports.ts";

const row = (i: number, error: string): Execution =>
  execution(`r${i}`, {
    status: "failed",
    outcome: "failed",
    error,
    exitCode: 1,
    createdAt: 1_000 + i,
    updatedAt: 1_000 + i,
  });

/** A store listing over `rows` (already newest first), counting the rows it reads. */
function reader(rows: Execution[]) {
  const stats = { read: 0 };
  const read: PageReader = async (after, limit) => {
    const start = after ? rows.findIndex((r) => r.createdAt === after.createdAt) + 1 : 0;
    const page = rows.slice(start, start + limit);
    stats.read += page.length;
    const last = page.at(-1);
    const next: ListCursor | null = start + limit < rows.length && last ? { createdAt: last.createdAt, seq: 0 } : null;
    return { rows: page, next };
  };
  return { read, stats };
}

const rare = signatureId(errorSignature("exit code 7")!);
// Every 10th row has the rare error; newest first.
const rows = Array.from({ length: 1000 }, (_, k) =>
  row(999 - k, k % 10 === 3 ? `exit code 7` : `curl: (6) Could not resolve host ${k}.example`),
);

describe("signaturePage", () => {
  test("pages hold exactly the matching rows, and the pages together hold all of them once", async () => {
    const { read } = reader(rows);
    const seen: string[] = [];
    let after: ListCursor | undefined;
    for (;;) {
      const page = await signaturePage(read, rare, 7, after, 100_000);
      expect(page.rows.length).toBeLessThanOrEqual(7);
      seen.push(...page.rows.map((r) => r.randomId));
      if (!page.next) break;
      after = page.next;
    }
    expect(seen).toEqual(rows.filter((r) => r.error === "exit code 7").map((r) => r.randomId));
  });

  test("a read cap bounds one call; the cursor resumes where it stopped", async () => {
    const { read, stats } = reader(rows);
    const first = await signaturePage(read, signatureId("no such signature"), 50, undefined, 300);
    expect(first.rows).toEqual([]);
    expect(stats.read).toBeGreaterThanOrEqual(300);
    expect(stats.read).toBeLessThan(400);
    expect(first.next).not.toBeNull();
    const rest = await signaturePage(read, signatureId("no such signature"), 50, first.next!, 100_000);
    expect(rest.next).toBeNull();
    expect(stats.read).toBe(rows.length);
  });
});
