// What both engines store of an issue link: one row per signature, a claim until it is a link.
import type { IssueLink } from "../contract/issues.ts";

/** A row of issue_links as either engine reads it. */
export interface IssueLinkRow {
  signature: string;
  tracker: string | null;
  repo: string | null;
  number: number | null;
  url: string | null;
  title: string | null;
  how: IssueLink["how"] | null;
  linkedAt: number | null;
  claimedBy: string | null;
  claimedUntil: number | null;
}

/** A row as a link; null while it is a claim. */
export function linkOf(r: IssueLinkRow): IssueLink | null {
  if (
    r.url === null ||
    r.tracker === null ||
    r.repo === null ||
    r.number === null ||
    r.title === null ||
    r.how === null ||
    r.linkedAt === null
  )
    return null;
  return {
    signature: r.signature,
    tracker: r.tracker,
    repo: r.repo,
    number: r.number,
    url: r.url,
    title: r.title,
    how: r.how,
    linkedAt: r.linkedAt,
  };
}
