// Issue links of the Store contract (src/issues/): error signatures linked to issues in the script
// collection's tracker, and the claims that keep two issues from being opened for one signature.
import type { ReadTable } from "./reads.ts";

/** An error signature linked to an issue in the script collection's tracker (src/issues/). */
export interface IssueLink {
  /** The error signature id (domain/error-signature.ts). */
  signature: string;
  /** github, gitea or forgejo; and owner/name of the repository. */
  tracker: string;
  repo: string;
  number: number;
  /** The issue's page. */
  url: string;
  title: string;
  /** "created": opened from here; "found": already in the tracker, found by the signature's marker. */
  how: "created" | "found";
  linkedAt: number;
}

/**
 * What opening an issue for a signature writes: a claim before the tracker is asked (so two admins,
 * or two nodes, never open two issues for one signature), then the link or the claim's release.
 */
export type IssueWrite =
  /**
   * Claims `signature` for `owner` until `at + leaseMs`, unless it is linked already (answered with
   * the link) or claimed by someone else whose lease has not ended (answered with its end).
   */
  | { kind: "issue-claim"; signature: string; owner: string; leaseMs: number; at: number }
  /**
   * Settles a claim: with `link`, the signature is linked to it, unless it is linked already (the
   * link stored first stays, and is answered); with null, `owner`'s claim is released.
   */
  | {
      kind: "issue-settle";
      signature: string;
      owner: string;
      link: Omit<IssueLink, "signature" | "linkedAt"> | null;
      at: number;
    }
  /** Forgets the signature's link or claim (the issue was deleted, or linked by mistake). */
  | { kind: "issue-forget"; signature: string; at: number };

export interface IssueResults {
  "issue-claim":
    | { kind: "issue-claimed" }
    | { kind: "issue-linked"; link: IssueLink }
    | { kind: "issue-busy"; until: number };
  /** "issue-released": the claim is gone (or was not `owner`'s, and stays). */
  "issue-settle": { kind: "issue-linked"; link: IssueLink } | { kind: "issue-released" };
  /** `found`: there was a link or a claim. */
  "issue-forget": { kind: "issue-forgotten"; found: boolean };
}

export interface IssueReads {
  /** Links of these signatures to tracker issues (claims not settled are not links), or every link, newest first, when `ids` is omitted. */
  issueLinks(ids?: readonly string[]): Promise<IssueLink[]>;
}

export const ISSUE_READS = { issueLinks: "once" } as const satisfies ReadTable<IssueReads>;
