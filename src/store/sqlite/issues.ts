// Issue links in SQLite (src/issues/ decides; this keeps): claims, links and their release inside
// the batch's transaction like every other op. One writer per file, so a read then a write is atomic.
import { and, desc, eq, inArray, isNotNull, isNull, sql } from "drizzle-orm";
import type { IssueLink } from "../contract/issues.ts";
import { linkOf } from "../common/issue-links.ts";
import type { ResultOf, WriteOp } from "../contract/store.ts";
import type { Db } from "./database.ts";
import { issueLinks } from "./schema.ts";

type IssueOp<K extends WriteOp["kind"]> = Extract<WriteOp, { kind: K }>;

/** Synchronous, inside the caller's transaction (writes.ts). */
export function createIssueWrites(db: Db) {
  const rowOf = (signature: string) => db.select().from(issueLinks).where(eq(issueLinks.signature, signature)).get();
  return {
    claim(op: IssueOp<"issue-claim">): ResultOf["issue-claim"] {
      const row = rowOf(op.signature);
      const link = row ? linkOf(row) : null;
      if (link) return { kind: "issue-linked", link };
      if (row && row.claimedBy !== op.owner && (row.claimedUntil ?? 0) > op.at)
        return { kind: "issue-busy", until: row.claimedUntil! };
      const claim = { claimedBy: op.owner, claimedUntil: op.at + op.leaseMs };
      db.insert(issueLinks)
        .values({ signature: op.signature, ...claim })
        .onConflictDoUpdate({ target: issueLinks.signature, set: claim })
        .run();
      return { kind: "issue-claimed" };
    },

    settle(op: IssueOp<"issue-settle">): ResultOf["issue-settle"] {
      if (op.link === null) {
        db.delete(issueLinks)
          .where(
            and(eq(issueLinks.signature, op.signature), isNull(issueLinks.url), eq(issueLinks.claimedBy, op.owner)),
          )
          .run();
        return { kind: "issue-released" };
      }
      const row = rowOf(op.signature);
      const stored = row ? linkOf(row) : null;
      if (stored) return { kind: "issue-linked", link: stored };
      const link: IssueLink = { ...op.link, signature: op.signature, linkedAt: op.at };
      const values = { ...link, claimedBy: null, claimedUntil: null };
      db.insert(issueLinks).values(values).onConflictDoUpdate({ target: issueLinks.signature, set: values }).run();
      return { kind: "issue-linked", link };
    },

    forget(op: IssueOp<"issue-forget">): ResultOf["issue-forget"] {
      const gone = db
        .delete(issueLinks)
        .where(eq(issueLinks.signature, op.signature))
        .returning({ signature: issueLinks.signature })
        .all();
      return { kind: "issue-forgotten", found: gone.length > 0 };
    },
  };
}

export function createIssueReads(db: Db) {
  const linked = isNotNull(issueLinks.url);
  const order = [desc(issueLinks.linkedAt), issueLinks.signature] as const;
  // Prepared once, the ids as one JSON parameter: a statement made for each list of ids was ~25 % of
  // the error signatures' CPU.
  const every = db
    .select()
    .from(issueLinks)
    .where(linked)
    .orderBy(...order)
    .prepare();
  const some = db
    .select()
    .from(issueLinks)
    .where(and(linked, inArray(issueLinks.signature, sql`(SELECT value FROM json_each(${sql.placeholder("ids")}))`)))
    .orderBy(...order)
    .prepare();
  return {
    issueLinks(ids?: readonly string[]): IssueLink[] {
      if (ids !== undefined && ids.length === 0) return [];
      const rows = ids === undefined ? every.all() : some.all({ ids: JSON.stringify(ids) });
      return rows.map(linkOf).filter((l): l is IssueLink => l !== null);
    },
  };
}
