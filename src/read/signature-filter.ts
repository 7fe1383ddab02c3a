// Installs of one error signature. Signatures are computed from the error text, not stored per
// install, so a page is found by reading failed installs in keyset order and keeping the matches.
import type { ListCursor } from "../store/contract/executions.ts";
import { failureSignatureId } from "../domain/error-signature.ts";
import type { Execution } from "../domain/execution.ts";

export type PageReader = (
  after: ListCursor | undefined,
  limit: number,
) => Promise<{ rows: Execution[]; next: ListCursor | null }>;

/**
 * Up to `limit` installs with signature `id`, continuing after `after`. Reads at most about
 * `maxScan` installs per call, so a rare signature in a long window answers in bounded time:
 * the page may then hold fewer rows, and `next` says where to go on.
 */
export async function signaturePage(
  read: PageReader,
  id: string,
  limit: number,
  after: ListCursor | undefined,
  maxScan: number,
): Promise<{ rows: Execution[]; next: ListCursor | null }> {
  const rows: Execution[] = [];
  let cursor = after;
  let scanned = 0;
  while (rows.length < limit) {
    // Never more rows than matches still wanted, so the page never overshoots its cursor.
    const page = await read(cursor, limit - rows.length);
    scanned += page.rows.length;
    for (const row of page.rows) if (failureSignatureId(row.outcome, row.error) === id) rows.push(row);
    if (page.next === null) return { rows, next: null };
    cursor = page.next;
    if (scanned >= maxScan) break;
  }
  return { rows, next: cursor ?? null };
}
