// Issue links in PostgreSQL, as in the SQLite engine (its issues.ts): the writes run in the batch's
// transaction. Nodes share the table, so a claim is an insert that only one of them can make, and
// a row that exists is locked (FOR UPDATE) before it is judged.
import type { Sql } from "postgres";
import type { IssueLink } from "../contract/issues.ts";
import { linkOf, type IssueLinkRow } from "../common/issue-links.ts";
import type { ResultOf, WriteOp } from "../contract/store.ts";

type IssueOp<K extends WriteOp["kind"]> = Extract<WriteOp, { kind: K }>;
/** A connection inside a transaction (transaction.ts). */
type Tx = Sql;

type Row = IssueLinkRow;
const COLUMNS = `signature, tracker, repo, number, url, title, how, linked_at AS "linkedAt", claimed_by AS "claimedBy", claimed_until AS "claimedUntil"`;

const lockedRow = async (tx: Tx, signature: string): Promise<Row | undefined> =>
  (await tx.unsafe<Row[]>(`SELECT ${COLUMNS} FROM issue_links WHERE signature = $1 FOR UPDATE`, [signature]))[0];

/** Applies an issue op inside the batch's transaction (writes.ts). */
export async function applyIssueOp(
  tx: Tx,
  op: IssueOp<"issue-claim" | "issue-settle" | "issue-forget">,
): Promise<ResultOf[typeof op.kind]> {
  switch (op.kind) {
    case "issue-claim": {
      const until = op.at + op.leaseMs;
      const made =
        await tx`INSERT INTO issue_links (signature, claimed_by, claimed_until) VALUES (${op.signature}, ${op.owner}, ${until}) ON CONFLICT (signature) DO NOTHING RETURNING signature`;
      if (made.length > 0) return { kind: "issue-claimed" };
      const row = (await lockedRow(tx, op.signature))!;
      const link = linkOf(row);
      if (link) return { kind: "issue-linked", link };
      if (row.claimedBy !== op.owner && (row.claimedUntil ?? 0) > op.at)
        return { kind: "issue-busy", until: row.claimedUntil! };
      await tx`UPDATE issue_links SET claimed_by = ${op.owner}, claimed_until = ${until} WHERE signature = ${op.signature}`;
      return { kind: "issue-claimed" };
    }
    case "issue-settle": {
      if (op.link === null) {
        await tx`DELETE FROM issue_links WHERE signature = ${op.signature} AND url IS NULL AND claimed_by = ${op.owner}`;
        return { kind: "issue-released" };
      }
      const row = await lockedRow(tx, op.signature);
      const stored = row ? linkOf(row) : null;
      if (stored) return { kind: "issue-linked", link: stored };
      const l = op.link;
      await tx`
        INSERT INTO issue_links (signature, tracker, repo, number, url, title, how, linked_at, claimed_by, claimed_until)
        VALUES (${op.signature}, ${l.tracker}, ${l.repo}, ${l.number}, ${l.url}, ${l.title}, ${l.how}, ${op.at}, NULL, NULL)
        ON CONFLICT (signature) DO UPDATE SET tracker = excluded.tracker, repo = excluded.repo, number = excluded.number, url = excluded.url,
          title = excluded.title, how = excluded.how, linked_at = excluded.linked_at, claimed_by = NULL, claimed_until = NULL`;
      return { kind: "issue-linked", link: { ...l, signature: op.signature, linkedAt: op.at } };
    }
    case "issue-forget": {
      const gone = await tx`DELETE FROM issue_links WHERE signature = ${op.signature} RETURNING signature`;
      return { kind: "issue-forgotten", found: gone.length > 0 };
    }
  }
}

export function createIssueReads(pg: Sql) {
  return {
    async issueLinks(ids?: readonly string[]): Promise<IssueLink[]> {
      if (ids !== undefined && ids.length === 0) return [];
      const rows = await pg.unsafe<Row[]>(
        `SELECT ${COLUMNS} FROM issue_links WHERE url IS NOT NULL ${ids === undefined ? "" : "AND signature = ANY($1::text[])"} ORDER BY linked_at DESC, signature`,
        ids === undefined ? [] : [[...ids]],
      );
      return rows.map(linkOf).filter((l): l is IssueLink => l !== null);
    },
  };
}
