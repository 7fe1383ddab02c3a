// Acting on a failure: from an error signature, the issue to open in the script collection's
// tracker (previewed), and sending it: the link stored before anything else is asked, the
// tracker searched for an issue already naming the signature, and only then one opened. A claim
// in the store (Store contract: issue-claim) keeps a second send, on this node or another, from
// opening a second issue while one is under way.
import { randomUUID } from "node:crypto";
import { failureSignatureId, type KnownSignature } from "../domain/error-signature.ts";
import type { Execution } from "../domain/execution.ts";
import { issueBody, issueTitle, withMarker, type IssueFacts, type Tally } from "../domain/issue-text.ts";
import type { Logger } from "../log.ts";
import type { Window } from "../read/aggregate.ts";
import { createStats, type Stats } from "../read/stats.ts";
import type { ExecutionFilter, StoreReads } from "../store/contract/executions.ts";
import type { IssueLink } from "../store/contract/issues.ts";
import type { ResultFor, WriteOp } from "../store/contract/store.ts";
import type { Tracker, TrackerIssue } from "./tracker.ts";

/** Failed executions read for the spread (newest first), and the matches kept, at most. */
const SAMPLE_READ = 5000;
const SAMPLE_KEEP = 500;
/** How long a claim holds: longer than a send's three requests to the tracker can take. */
const CLAIM_MS = 120_000;
const TOP = 5;
const DRIVERS = 3;

/** Thrown for a signature the store has never seen. */
export class UnknownSignatureError extends Error {}
/** Another send for the signature is under way (until `until`). */
export class SendBusyError extends Error {
  constructor(readonly until: number) {
    super(
      `another send for this signature is under way (its claim holds until ${new Date(until).toISOString()}); its link will show when it is done`,
    );
  }
}
/** No tracker is configured. */
export class TrackerOffError extends Error {}

export const TRACKER_OFF =
  "the issue tracker is off: start the server with INSTALLSTATS_TRACKER (github, gitea or forgejo), INSTALLSTATS_TRACKER_REPO and a token (INSTALLSTATS_TRACKER_TOKEN or INSTALLSTATS_TRACKER_TOKEN_FILE)";

export interface IssueEdits {
  title?: string;
  body?: string;
  labels?: readonly string[];
}

type Submit = <Op extends WriteOp>(op: Op) => Promise<ResultFor<Op>>;

function tallies<T>(items: readonly T[], key: (x: T) => string | null): Tally[] {
  const m = new Map<string | null, number>();
  for (const x of items) m.set(key(x), (m.get(key(x)) ?? 0) + 1);
  return [...m].sort((a, b) => b[1] - a[1] || String(a[0]).localeCompare(String(b[0]))).slice(0, TOP);
}

/** Filters that describe the outcome: the drivers compare all runs, so they go without them. */
function withoutOutcome(f: ExecutionFilter): ExecutionFilter {
  const { outcome: _o, status: _s, exitCode: _e, errorCategory: _c, ...rest } = f;
  return rest;
}

interface IssuesDeps {
  store: StoreReads;
  submit: Submit;
  clock: () => number;
  log: Logger;
  tracker: Tracker | null;
  labels: readonly string[];
  dashboardUrl: () => string;
}

/** What the steps of a preview or a send work with: the deps, the aggregates, and this node's send counter. */
interface IssuesContext extends IssuesDeps {
  stats: Stats;
  /** This process, in claim owners. */
  node: string;
  sends: number;
}

/** The newest failures of the window with the signature, read in pages of the filter's failures. */
async function sample(
  { store }: IssuesContext,
  id: string,
  f: ExecutionFilter,
): Promise<{ read: number; rows: Execution[] }> {
  const rows: Execution[] = [];
  let read = 0;
  let after: Parameters<StoreReads["listExecutions"]>[1]["after"];
  while (read < SAMPLE_READ && rows.length < SAMPLE_KEEP) {
    const page = await store.listExecutions({ ...f, outcome: "failed" }, { limit: 500, after, order: "newest" });
    read += page.rows.length;
    for (const r of page.rows)
      if (rows.length < SAMPLE_KEEP && failureSignatureId(r.outcome, r.error) === id) rows.push(r);
    if (page.next === null) break;
    after = page.next;
  }
  return { read, rows };
}

function dashboardLink(ctx: IssuesContext, id: string, f: ExecutionFilter, w: Window): string {
  const p = new URLSearchParams({
    signature: id,
    from: new Date(w.from).toISOString().slice(0, 10),
    to: new Date(w.to - 1).toISOString().slice(0, 10),
  });
  if (f.nsapp !== undefined) p.set("nsapp", f.nsapp);
  return `${ctx.dashboardUrl()}/installs?${p}`;
}

async function knownSignature({ store }: IssuesContext, id: string): Promise<KnownSignature> {
  const [known] = await store.signatures([id]);
  if (!known) throw new UnknownSignatureError(`no error signature ${id}: take one from /api/stats/errors`);
  return known;
}

/** Exit codes and categories of the sampled failures, most frequent first. */
function exitCodesOf(rows: readonly Execution[]): [number | null, string | null, number][] {
  const codes = new Map<string, [number | null, string | null, number]>();
  for (const r of rows) {
    const key = `${r.exitCode}|${r.errorCategory}`;
    const c = codes.get(key);
    if (c) c[2]++;
    else codes.set(key, [r.exitCode, r.errorCategory, 1]);
  }
  return [...codes.values()].sort((a, b) => b[2] - a[2]).slice(0, TOP);
}

/** What the issue says: the signature, its counts in the window, its spread over the newest failures, the drivers. */
async function facts(ctx: IssuesContext, known: KnownSignature, f: ExecutionFilter, w: Window): Promise<IssueFacts> {
  const id = known.id;
  const [counted, s, d] = await Promise.all([
    ctx.stats.signatureCount(f, w, id),
    sample(ctx, id, f),
    ctx.stats.drivers(withoutOutcome(f), w, 20),
  ]);
  return {
    signature: { id, text: known.signature, firstSeen: known.firstSeen, lastSeen: known.lastSeen, apps: known.apps },
    scope: { app: f.nsapp ?? null, from: w.from, to: w.to },
    failed: counted.count,
    failedInScope: counted.totalFailed,
    sample: {
      read: s.read,
      matched: s.rows.length,
      apps: tallies(s.rows, (r) => r.nsapp),
      exitCodes: exitCodesOf(s.rows),
      pve: tallies(s.rows, (r) => r.pveVersion),
      os: tallies(s.rows, (r) => [r.osType, r.osVersion].filter((v) => v !== null).join(" ") || null),
      kernel: tallies(s.rows, (r) => r.kernelVersion),
      error: s.rows[0]?.error ?? null,
    },
    drivers: d.drivers.slice(0, DRIVERS).map((x) => ({
      dimension: x.dimension,
      value: x.value,
      shareOfFailed: x.shareOfFailed,
      shareOfRuns: x.shareOfRuns,
      failureRate: x.failureRate,
      elsewhereRate: x.elsewhere.failureRate,
    })),
    dashboardUrl: dashboardLink(ctx, id, f, w),
  };
}

/** What would be sent, and whether it need be: the stored link, or an issue the tracker already has. */
async function preview(ctx: IssuesContext, id: string, f: ExecutionFilter, w: Window) {
  const { store, tracker } = ctx;
  const x = await facts(ctx, await knownSignature(ctx, id), f, w);
  const [link] = await store.issueLinks([id]);
  const existing: TrackerIssue | null = link === undefined && tracker !== null ? await tracker.find(id) : null;
  return {
    link: link ?? null,
    existing,
    issue: { title: issueTitle(x), body: issueBody(x), labels: [...ctx.labels] },
  };
}

type SendResult = { result: "linked" | "found" | "created"; link: IssueLink; labelsLeftOut: string[] };

/**
 * Links the signature to its issue: the stored link if there is one ("linked"), else an issue
 * of the tracker naming it ("found"), else a new one, as previewed or as edited ("created").
 */
async function send(
  ctx: IssuesContext,
  id: string,
  f: ExecutionFilter,
  w: Window,
  edits: IssueEdits = {},
): Promise<SendResult> {
  const { store, submit, clock, tracker } = ctx;
  if (tracker === null) throw new TrackerOffError(TRACKER_OFF);
  const known = await knownSignature(ctx, id);
  const [stored] = await store.issueLinks([id]);
  if (stored) return { result: "linked", link: stored, labelsLeftOut: [] };
  // Each send its own owner: two sends in this process must not share a claim.
  const owner = `${ctx.node}-${++ctx.sends}`;
  const claim = await submit({ kind: "issue-claim", signature: id, owner, leaseMs: CLAIM_MS, at: clock() });
  if (claim.kind === "issue-linked") return { result: "linked", link: claim.link, labelsLeftOut: [] };
  if (claim.kind === "issue-busy") throw new SendBusyError(claim.until);
  try {
    return await sendClaimed(ctx, tracker, known, owner, f, w, edits);
  } catch (e) {
    await submit({ kind: "issue-settle", signature: id, owner, link: null, at: clock() }).catch(() => undefined);
    throw e;
  }
}

/** With the claim held: the tracker searched, an issue opened if it has none, and the link settled. */
async function sendClaimed(
  ctx: IssuesContext,
  tracker: Tracker,
  known: KnownSignature,
  owner: string,
  f: ExecutionFilter,
  w: Window,
  edits: IssueEdits,
): Promise<SendResult> {
  const id = known.id;
  const found = await tracker.find(id);
  let issue = found;
  let labelsLeftOut: string[] = [];
  if (issue === null) {
    // The text as previewed, unless the admin gave both parts of it.
    let x: IssueFacts | null = null;
    const text = async () => (x ??= await facts(ctx, known, f, w));
    const title = edits.title ?? issueTitle(await text());
    const body = withMarker(edits.body ?? issueBody(await text()), id);
    const made = await tracker.create({ title, body, labels: edits.labels ?? ctx.labels });
    issue = made.issue;
    labelsLeftOut = made.labelsLeftOut;
    ctx.log.info("issue opened", {
      signature: id,
      tracker: tracker.kind,
      repo: tracker.repo,
      number: issue.number,
      url: issue.url,
    });
  }
  const how = found ? "found" : "created";
  const settled = await ctx.submit({
    kind: "issue-settle",
    signature: id,
    owner,
    link: { tracker: tracker.kind, repo: tracker.repo, number: issue.number, url: issue.url, title: issue.title, how },
    at: ctx.clock(),
  });
  if (settled.kind !== "issue-linked") throw new Error("a settle with a link answered without one");
  return { result: settled.link.url === issue.url ? how : "linked", link: settled.link, labelsLeftOut };
}

export function createIssues(deps: IssuesDeps) {
  const ctx: IssuesContext = { ...deps, stats: createStats(deps.store), node: randomUUID().slice(0, 8), sends: 0 };
  const { store, submit, clock, tracker } = deps;
  return {
    preview: (id: string, f: ExecutionFilter, w: Window) => preview(ctx, id, f, w),
    send: (id: string, f: ExecutionFilter, w: Window, edits?: IssueEdits) => send(ctx, id, f, w, edits),
    links: () => store.issueLinks(),

    /** Forgets a link (the issue was deleted, or linked by mistake): the next send searches and opens again. */
    async forget(id: string): Promise<boolean> {
      const r = await submit({ kind: "issue-forget", signature: id, at: clock() });
      return r.found;
    },

    tracker:
      tracker === null
        ? null
        : { kind: tracker.kind, repo: tracker.repo, apiUrl: tracker.apiUrl, labels: [...deps.labels] },
  };
}

export type Issues = ReturnType<typeof createIssues>;
