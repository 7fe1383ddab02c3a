// The Store contract: everything the rest of the service may ask of storage. Ingestion, the read
// side and maintenance depend on this file alone; each engine (sqlite/, later postgres/) fulfils
// it, and test/contract/ proves that an engine does. Results are in storage terms: what happened
// to the data, never how a protocol answers it (the HTTP edge maps them to status codes).
// Every method is asynchronous: an engine may answer from another thread or over the network
// (a read connection in a worker, a PostgreSQL server); an embedded one simply resolves at once.
import type { KnownSignature } from "../domain/error-signature.ts";
import type { Execution, Report } from "../domain/execution.ts";
import type { HeldReport } from "../domain/lifecycle.ts";
import type { Outcome } from "../domain/outcome.ts";
import type { FilterValues } from "../domain/fields.ts";
import type { Endpoint, RejectReason, Rejection } from "../domain/rejection.ts";
import type { RelayPolicy } from "../domain/relay.ts";
import type { Grain, RollupData, RollupPart } from "../domain/rollup.ts";

/** What arrived with a report: where, its raw bytes (kept in the log when they needed repair, unless the report was a duplicate), when. */
interface Received {
  endpoint: Endpoint;
  raw: Uint8Array;
  /** Repairs the lenient parser made; none for a strict JSON body. */
  repairs: readonly string[];
  at: number;
  /** When its body is logged (repaired, refused as already final), only its head is kept: its client's share of the log is used up. */
  headOnly?: boolean;
  /** False: a final report before its start is applied on its own at once, not held (its client's share of held reports is used up). */
  holdable?: boolean;
}

// ------------------------------------------------------------------ writes

/** What ingestion (and import, seed, replay) writes: reports, refusals, whole records. */
export type ReportWrite =
  /** Any report of either protocol; domain/lifecycle.ts decides what it does to its execution. */
  | ({ kind: "report"; report: Report } & Received)
  /** A refused request, logged raw with its reason (`headOnly`: only its body's head, with size and hash: its client's share of the log is used up). */
  | { kind: "reject"; rejection: Rejection; at: number; headOnly?: boolean }
  /**
   * A complete execution as it stands (seed, copy): stored and counted once, where a start report
   * and its final report would be counted three times (+1 in progress, -1, +1 final).
   */
  | { kind: "load"; execution: Execution; at: number }
  /**
   * A held report as another store keeps it (copy): held here as it was, unless this store has
   * its execution or a held report of it already (then a duplicate, so a copy run again adds nothing).
   */
  | { kind: "load-held"; held: HeldReport; at: number }
  /**
   * An entry of another store's rejected-reports log (copy), kept within this log's budget as a
   * new entry would be; a head-only entry stays head-only. `source` names that store: entries are
   * loaded in increasing id order, and one whose id is not above the last loaded from `source`
   * is a duplicate, so a copy run again (after an interruption) adds only what is missing.
   */
  | { kind: "load-rejected"; entry: RejectedEntry; source: string; at: number };

/** What jobs and admin actions write. */
type MaintenanceWrite =
  /** Removes everything stored about one install: its executions, held reports, rejected-log bodies. */
  | { kind: "delete"; randomId: string; at: number }
  /** An execution still in progress becomes outcome "unknown" (timed out); its status stays as sent. */
  | { kind: "expire"; executionId: string; at: number }
  /**
   * Retention by whole periods, where the engine keeps executions by period (PostgreSQL: months of
   * created_at): with `until` the start of the period `before` falls in, every install with an
   * execution created before `until` goes at once, with all its executions, held reports and log
   * entries (what deletes would do), its rollup counts with it. An engine without periods (SQLite)
   * removes nothing and answers `until` null.
   */
  | { kind: "drop-before"; before: number; at: number }
  /** Drops rejected-log entries received before `before` (retention). */
  | { kind: "forget-rejected"; before: number; at: number }
  /** Records what came of replaying a rejected-log entry through the current parser. */
  | { kind: "mark-replayed"; rejectedId: number; result: string; at: number }
  /** Adds the hour cells of every hour before `until` not yet folded into day and month cells. */
  | { kind: "fold"; until: number; at: number }
  /**
   * How far `installstats import --url` got with `source` (the listing it reads, named by its URL):
   * a position of the importer's own, kept in the transaction of the records it took, so an
   * import cut short resumes where its last commit left it.
   */
  | { kind: "import-mark"; source: string; position: number; at: number }
  /** The stuck-install job checked every install created in [from, until): the mark moves, unless it moved meanwhile. */
  | { kind: "stuck-checked"; from: number; until: number; at: number }
  /**
   * Held reports received before `before` (their start report never came), at most `limit`, oldest
   * first, are applied on their own: each becomes the execution it describes (no start, no duration).
   */
  | { kind: "expire-held"; before: number; limit: number; at: number };

/** What the alert job and the alert actions write (src/alerts/): state, history and the delivery queue. */
type AlertWrite =
  /**
   * One evaluation round, whole or not at all (a round cut short by a crash is evaluated again,
   * never half recorded): each rule's last evaluation, the changes of state with their history
   * entries and queued messages, and firings held back before (cooldown, silence) sent now.
   */
  | { kind: "alert-round"; at: number; rules: readonly { rule: string; summary: string }[]; transitions: readonly AlertTransition[]; sends: readonly AlertSend[] }
  /** Silences a rule until `until` (null: the silence ends now). */
  | { kind: "alert-silence"; rule: string; until: number | null; at: number }
  /**
   * What came of one delivery attempt of a queued message: sent; failed and tried again at
   * `nextAt` ("retry"); failed for good ("failed"). Only a message still queued changes.
   */
  | { kind: "alert-delivery"; id: number; result: "sent" | "retry" | "failed"; error: string | null; nextAt: number | null; at: number }
  /** History entries from before `before` go (not those an alert's current state points at), and delivered or failed messages queued before it. */
  | { kind: "alert-forget"; before: number; at: number };


/** An entry of the relay's outbox as a sender claims it: one accepted report, as it is sent upstream. */
export interface RelayEntry {
  /** Increases with the order entries were queued in; an execution's entries are sent in this order. */
  id: number;
  executionId: string;
  randomId: string;
  /** The endpoint the report arrived at, and goes to upstream. */
  endpoint: Endpoint;
  /** The JSON body (domain/relay.ts relayBody). */
  body: string;
  queuedAt: number;
  /** Failed attempts so far. */
  attempts: number;
}

/** A claimed entry that was not delivered, and why (the upstream's status or the network's error). */
export interface RelayFailure {
  id: number;
  error: string;
}

/** A failed entry is not claimed again before `retryAt` (its backoff). */
export interface RelayRetry extends RelayFailure {
  retryAt: number;
}

export const RELAY_ACTIONS = ["pause", "resume", "requeue", "discard", "discard-refused"] as const;
/**
 * pause/resume: whether claims hand out entries (every node); requeue: entries the upstream
 * refused are sent again; discard: every entry is dropped (counted); discard-refused: the refused ones.
 */
type RelayAction = (typeof RELAY_ACTIONS)[number];

/**
 * What the relay's sender writes. Accepted reports enter the outbox inside the transaction that
 * stores them (Store.setRelay); these take them out.
 */
type RelayWrite =
  /**
   * Leases to `owner` until `at + leaseMs`, and returns, up to `limit` entries ready to send, oldest
   * first, at most one per execution: an execution's first entry in the outbox (its later ones wait
   * until that one is settled). Skipped: entries waiting for their execution's start report,
   * entries the upstream refused, entries whose retry time has not come (their execution's later
   * entries wait behind them), and entries leased to another owner until their lease ends (on a
   * store several servers share; an SQLite file has one server, the serve lock, so every lease is
   * its own). None while the relay is paused.
   */
  | { kind: "relay-claim"; owner: string; limit: number; leaseMs: number; at: number }
  /**
   * What came of claimed entries: `sent` leave the outbox; `failed` stay, their attempt counted, until their retry time;
   * `refused` stay but are not claimed again until requeued; `released` were not tried. The lease ends.
   */
  | { kind: "relay-settle"; owner: string; sent: readonly number[]; failed: readonly RelayRetry[]; refused: readonly RelayFailure[]; released: readonly number[]; at: number }
  | { kind: "relay-control"; action: RelayAction; at: number };

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
type IssueWrite =
  /**
   * Claims `signature` for `owner` until `at + leaseMs`, unless it is linked already (answered with
   * the link) or claimed by someone else whose lease has not ended (answered with its end).
   */
  | { kind: "issue-claim"; signature: string; owner: string; leaseMs: number; at: number }
  /**
   * Settles a claim: with `link`, the signature is linked to it, unless it is linked already (the
   * link stored first stays, and is answered); with null, `owner`'s claim is released.
   */
  | { kind: "issue-settle"; signature: string; owner: string; link: Omit<IssueLink, "signature" | "linkedAt"> | null; at: number }
  /** Forgets the signature's link or claim (the issue was deleted, or linked by mistake). */
  | { kind: "issue-forget"; signature: string; at: number };

export type WriteOp = ReportWrite | MaintenanceWrite | AlertWrite | RelayWrite | IssueWrite;

/** What each kind of write comes to. */
export interface ResultOf {
  /**
   * "created": a new execution; "updated": the report changed it; "duplicate": nothing new;
   * "held": a final report before its start, applied when that comes; "already-final": an
   * /upload status update for a record with a final status, not applied, logged.
   */
  report:
    | { kind: "created"; outcome: Outcome }
    | { kind: "updated"; outcome: Outcome }
    | { kind: "duplicate" }
    | { kind: "held" }
    | { kind: "already-final"; outcome: Outcome };
  reject: { kind: "logged" };
  load: { kind: "created"; outcome: Outcome } | { kind: "duplicate" };
  "load-held": { kind: "created" } | { kind: "duplicate" };
  /** "created" with `bodyKept` false: only the head of the body fitted; "dropped": not kept at all (the log is full), counted. */
  "load-rejected": { kind: "created"; bodyKept: boolean } | { kind: "duplicate" } | { kind: "dropped" };
  /** `executions`: how many executions went. */
  delete: { kind: "deleted"; found: boolean; executions: number };
  expire: { kind: "expired"; changed: boolean };
  "forget-rejected": { kind: "forgotten"; count: number };
  /** `executions`: how many went; `until`: everything created before it is gone (null: the engine has no periods). */
  "drop-before": { kind: "dropped"; executions: number; until: number | null };
  "mark-replayed": { kind: "marked" };
  fold: { kind: "folded"; hours: number };
  "stuck-checked": { kind: "marked" };
  "import-mark": { kind: "marked" };
  /** `count`: held reports applied. */
  "expire-held": { kind: "expired-held"; count: number };
  /** `events`: the ids of the history entries of the round's transitions, in order. */
  "alert-round": { kind: "alert-recorded"; events: number[] };
  "alert-silence": { kind: "alert-silenced" };
  /** `found`: the message was still queued (a message already marked stays as it is). */
  "alert-delivery": { kind: "alert-delivery-marked"; found: boolean };
  "alert-forget": { kind: "alert-forgotten"; events: number; messages: number };
  /** `paused`: the relay is paused (no entries then). */
  "relay-claim": { kind: "claimed"; paused: boolean; entries: RelayEntry[] };
  /** `sent`: entries that left the outbox (an entry already gone, discarded meanwhile, is not counted). */
  "relay-settle": { kind: "settled"; sent: number };
  /** `entries`: entries requeued or discarded (0 for pause and resume). */
  "relay-control": { kind: "relay-controlled"; entries: number };
  "issue-claim": { kind: "issue-claimed" } | { kind: "issue-linked"; link: IssueLink } | { kind: "issue-busy"; until: number };
  /** "issue-released": the claim is gone (or was not `owner`'s, and stays). */
  "issue-settle": { kind: "issue-linked"; link: IssueLink } | { kind: "issue-released" };
  /** `found`: there was a link or a claim. */
  "issue-forget": { kind: "issue-forgotten"; found: boolean };
}
export type ResultFor<Op extends WriteOp> = ResultOf[Op["kind"]];
export type WriteResult = ResultOf[keyof ResultOf];

// ------------------------------------------------------------------ reads

/**
 * Which executions a read covers: a value of each filter field (domain/fields.ts `filter`; "" for a
 * text filter matches executions without that value; kind absent: every kind), the platform
 * class, the time window, free text.
 */
export interface ExecutionFilter extends FilterValues {
  /** The platform as the community service reads it (domain/rollup.ts platformClass): pve, incus, or "" when nothing says. */
  platformClass?: string;
  from?: number;
  to?: number;
  /** Free text, matched in app name and error text. */
  q?: string;
  /** created_at <= until: a stream that began at `until` ends even while executions keep arriving. */
  until?: number;
  /**
   * Leaves out the executions this filter matches (an execution without a value it names is not
   * matched, so it stays): what a rollup answer takes away (read/aggregate.ts complementOf).
   */
  except?: ExecutionFilter;
}

type ListOrder = "newest" | "oldest";

/** Columns a numbered page can be sorted by (the community service's `sort`). */
export const PAGE_SORTS = ["created", "nsapp", "status", "os_type", "type", "method", "exit_code"] as const;
export type PageSort = (typeof PAGE_SORTS)[number];

/**
 * A numbered page as the community service lists records: `offset` rows skipped, sorted by one
 * column ("status" is the outcome; text by code point, absent values before every value; ties
 * newest first, then latest inserted), with two filters rollups do not know: any of several repo
 * sources ("" for none), and an app name containing a text (ASCII letters in any case, taken
 * literally).
 */
export interface PageQuery {
  offset: number;
  limit: number;
  sort: PageSort;
  descending: boolean;
  repoSources?: readonly string[];
  appContains?: string;
}

/** Position after the last row of a page. */
export interface ListCursor {
  createdAt: number;
  /** A tie-breaker among executions created in the same millisecond, increasing with insertion. */
  seq: number;
}

export interface RollupSelection {
  grain: Grain;
  /** A slice key (domain/rollup.ts sliceKey). */
  slice: string;
  from: number;
  to: number;
  parts: readonly RollupPart[];
}

export interface RollupCell {
  slice: string;
  bucket: number;
  data: RollupData;
}

/** What the read side asks: executions, rollup cells, error signatures. */
export interface StoreReads {
  /** An install's executions, first attempt first; empty when the random_id is unknown. */
  getExecutions(randomId: string): Promise<Execution[]>;
  /** Newest first (or oldest), `limit` rows after `after`; `next` is null on the last page. */
  listExecutions(filter: ExecutionFilter, page: { limit: number; after?: ListCursor; order?: ListOrder }): Promise<{ rows: Execution[]; next: ListCursor | null }>;
  /** Each app's newest execution (an index seek per app); apps without one are left out. */
  newestOfApps(apps: readonly string[]): Promise<Execution[]>;
  /** One numbered page and how many executions match in all. */
  pageExecutions(filter: ExecutionFilter, page: PageQuery): Promise<{ rows: Execution[]; total: number }>;
  /**
   * Matching executions oldest first, `offset` skipped, at most `limit`, in chunks of `chunkRows`.
   * Each chunk is one query run to completion, so no statement stays open while a consumer
   * (a download, say) takes its time.
   */
  executionChunks(filter: ExecutionFilter, page?: { offset?: number; limit?: number; chunkRows?: number }): AsyncGenerator<Execution[], void>;
  /** Every matching execution, oldest first, in constant memory (executionChunks, flattened). */
  iterateExecutions(filter: ExecutionFilter): AsyncIterable<Execution>;
  /**
   * How many executions matching `filter` reported anything at or after each time in `since`
   * (updated_at), one count per time: what is going on lately, whenever a run started.
   */
  countUpdatedSince(filter: ExecutionFilter, since: readonly number[]): Promise<number[]>;
  /** Executions per exact error text (non-empty), most frequent first: one scan of every execution. */
  errorTextCounts(): Promise<{ error: string; count: number }[]>;
  /** Changes whenever anything is committed: a cheap key for caching answers. */
  changeMarker(): Promise<string>;
  /** Rollup cells of one grain and slice with bucket in [from, to), oldest first; open hours included. */
  readRollups(selection: RollupSelection): Promise<{ bucket: number; data: RollupData }[]>;
  /** Every rollup cell of one grain with bucket in [from, to), all app slices; open hours included. */
  rollupCells(grain: Grain, from: number, to: number): Promise<RollupCell[]>;
  /** Hours before this are in day and month cells too; later ones in hour cells only. */
  foldedUntil(): Promise<number>;
  signatures(ids: readonly string[]): Promise<KnownSignature[]>;
  /** Links of these signatures to tracker issues (claims not settled are not links), or every link, newest first, when `ids` is omitted. */
  issueLinks(ids?: readonly string[]): Promise<IssueLink[]>;
  /** created_at of the oldest and newest execution, or null when there are none. */
  recordSpan(): Promise<{ first: number; last: number } | null>;
}

/** One entry of the rejected-reports log, in storage terms. */
export interface RejectedEntry extends Omit<Rejection, "body"> {
  id: number;
  receivedAt: number;
  /** What the write of a repaired report came to; null for refusals. */
  result: ResultOf["report"]["kind"] | null;
  /** The raw body; only its first bytes when `bodyKept` is false. */
  body: Uint8Array;
  replayedAt: number | null;
  replayResult: string | null;
  /** Bytes of the body as received. */
  bodySize: number;
  /** SHA-256 of the body as received (hex); null for entries logged before budgets existed. */
  bodySha256: string | null;
  /** False when the log was past its budget: `body` is then the body's head only. */
  bodyKept: boolean;
}

/** How much a store may keep of what is not an execution (the rejected-reports log, held reports). */
export interface StoreLimits {
  /** Bytes of the rejected-reports log (bodies compressed, each stored once, and the entries). */
  logBytes: number;
  /** Bytes of held reports; past it the oldest are applied on their own (expire-held). */
  heldBytes: number;
}

/** Where the budgets stand: running totals, and what was done to stay within them (counters since the database was created). */
export interface BudgetStatus {
  log: {
    limitBytes: number;
    usedBytes: number;
    entries: number;
    /** Bytes of whole bodies as stored (compressed), and as received. */
    bodyBytes: number;
    bodyRawBytes: number;
    /** Entries whose body is not kept (head only), now. */
    headOnly: number;
    /** Entries that shared a body already stored. */
    deduplicated: number;
    /** Entries kept with the head of their body only (the log was past its budget for whole bodies). */
    truncated: number;
    /** Head-only entries removed, oldest first, to make room for newer ones. */
    evicted: number;
    /** Entries not kept at all (the log was full of entries that may not be removed); counted only. */
    dropped: number;
    /** Raw body bytes not kept (truncated or dropped). */
    droppedBytes: number;
  };
  held: {
    limitBytes: number;
    usedBytes: number;
    count: number;
    /** Applied on their own after waiting too long (expire-held). */
    expired: number;
    /** Applied on their own, oldest first, because held reports were past their budget. */
    overflowed: number;
  };
}

/** Where the relay's outbox stands (counters since the database was created). */
export interface RelayStatus {
  paused: boolean;
  /** Entries in the outbox (every state) and the bytes of their bodies. */
  entries: number;
  bytes: number;
  /** Entries waiting for their execution's start report (a final status held before it): sent after it. */
  waiting: number;
  /** Entries the upstream refused (400, 413, 422): kept, not sent again until requeued or discarded. */
  refused: number;
  /** The first entry in sending order: when it was queued, its failed attempts and the last error. */
  head: { queuedAt: number; attempts: number; lastError: string | null } | null;
  /** Entries delivered (a 2xx from the upstream). */
  sent: number;
  /** Attempts that failed (timeout, network, 5xx, 429, ...) and were retried later. */
  failedAttempts: number;
  /** Refusals by the upstream. */
  refusals: number;
  /** Entries dropped: the oldest, to stay within the bound; or discarded by an admin. */
  dropped: { bound: number; discarded: number };
}

/** What maintenance asks before it writes: stuck executions, what retention would remove, the log. */
export interface MaintenanceReads {
  /** Executions still in progress created in [from, before), oldest first. */
  stuckExecutions(from: number, before: number, limit: number): Promise<{ executionId: string; createdAt: number }[]>;
  /** Every execution created before this has a final outcome or was expired (stuckExecutions scans from here). */
  stuckCheckedUntil(): Promise<number>;
  /** How much is older than `cutoff`: executions created, held reports and log entries received before it. */
  countBefore(cutoff: number): Promise<{ executions: number; held: number; rejected: number }>;
  /** random_ids of reports held since before `cutoff` (their start report never came). */
  heldBefore(cutoff: number, limit: number): Promise<string[]>;
  /** The rejected-reports log, newest first; `before` is the id to continue from. */
  listRejected(opts: { limit: number; reason?: RejectReason; before?: number }): Promise<RejectedEntry[]>;
  /**
   * Log entries of `reasons` that a replay should try, oldest first, with ids above `afterId`:
   * never replayed, or replayed with a result starting with `retryPrefix` (still invalid then).
   */
  replayCandidates(opts: { reasons: readonly RejectReason[]; retryPrefix: string; afterId: number; limit: number }): Promise<RejectedEntry[]>;
  /** Entries of `reasons` replayed for good (with a result not starting with `retryPrefix`). */
  countReplayed(reasons: readonly RejectReason[], retryPrefix: string): Promise<number>;
  /** Where the budgets of the log and the held reports stand. */
  budgets(): Promise<BudgetStatus>;
  /** The position an import-mark op last kept for `source`; 0 when none. */
  importMark(source: string): Promise<number>;
  /** Every held report, oldest first, in chunks of `chunkRows`; each chunk one query run to completion (copy, in constant memory). */
  heldChunks(opts?: { chunkRows?: number }): AsyncGenerator<HeldReport[], void>;
  /** Log entries with an id above `afterId`, oldest first, in chunks of `chunkRows` (as heldChunks). */
  rejectedChunks(opts?: { afterId?: number; chunkRows?: number }): AsyncGenerator<RejectedEntry[], void>;
  /** Where the relay's outbox stands. */
  relayStatus(): Promise<RelayStatus>;
}

// ------------------------------------------------------------------ alerts

/** Whether an alert's condition holds (firing) or not (ok). */
type AlertStatus = "firing" | "ok";
/** Why a change of state was recorded without a message: a cooldown since the last one, a silence, or a resolve of a firing never sent. */
type HeldBack = "cooldown" | "silenced" | "unsent";

/** An alert (a rule about one subject) began or stopped firing: a history entry, and its message queued for `channels`. */
export interface AlertTransition {
  rule: string;
  /** What the rule is about: "" for the rule as a whole, else e.g. "app=jellyfin" (src/alerts/). */
  subject: string;
  status: "firing" | "resolved";
  /** The message as sent and shown in the history (JSON, src/alerts/message.ts). */
  message: string;
  /** Where it goes now; empty when held back. */
  channels: readonly string[];
  heldBack: HeldBack | null;
}

/** A firing held back before (cooldown, silence) that is sent now, to `channels`, as `message`. */
export interface AlertSend {
  rule: string;
  subject: string;
  message: string;
  channels: readonly string[];
}

/** Where an alert stands. */
export interface AlertState {
  rule: string;
  subject: string;
  status: AlertStatus;
  /** When it began to stand so. */
  since: number;
  /** The history entry of that change. */
  eventId: number;
  /** Whether that change was sent (a firing held back is sent later, when it still fires). */
  notified: boolean;
  /** When a firing of it was last sent: the cooldown counts from here. */
  lastSentAt: number | null;
}

/** A rule's own marks: its silence and its last evaluation. */
export interface AlertRuleMark {
  rule: string;
  silencedUntil: number | null;
  evaluatedAt: number | null;
  /** What the last evaluation found, in a few words. */
  summary: string | null;
}

type DeliveryState = "pending" | "sent" | "failed";

/** One message queued for one channel. */
export interface AlertDelivery {
  id: number;
  eventId: number;
  channel: string;
  /** The message (JSON), as for AlertTransition. */
  message: string;
  createdAt: number;
  /** When the next attempt is due (pending). */
  nextAt: number;
  attempts: number;
  state: DeliveryState;
  lastError: string | null;
  sentAt: number | null;
}

/** One history entry: an alert that began or stopped firing, and what became of its messages. */
export interface AlertEvent {
  id: number;
  rule: string;
  subject: string;
  status: "firing" | "resolved";
  at: number;
  message: string;
  /** When its message was queued (at, or later for a firing held back); null when never. */
  notifiedAt: number | null;
  heldBack: HeldBack | null;
  deliveries: Pick<AlertDelivery, "channel" | "state" | "attempts" | "lastError" | "sentAt">[];
}

/** What alerts read: states, rule marks, history, the delivery queue, and the rejected-reports log counted by reason. */
export interface AlertReads {
  alertStates(): Promise<AlertState[]>;
  alertRuleMarks(): Promise<AlertRuleMark[]>;
  /** Newest first; `before`: an entry id to continue below; `rule`: only that rule's entries. */
  alertHistory(opts: { limit: number; before?: number; rule?: string }): Promise<AlertEvent[]>;
  /** Messages still queued whose attempt is due by `dueBy`, oldest first. */
  alertDue(dueBy: number, limit: number): Promise<AlertDelivery[]>;
  /** Messages still queued, per channel (channels with none left out). */
  alertQueue(): Promise<{ channel: string; pending: number }[]>;
  /** Entries of the rejected-reports log received in [from, to), per reason (reasons with none left out). */
  rejectedCounts(from: number, to: number): Promise<Partial<Record<RejectReason, number>>>;
}

/** The storage could not take a write (disk full, read-only, I/O error): nothing was written; retry later. */
/**
 * A read ran past the read budget and was stopped, so that it cannot hold up the service; or it
 * was stopped with a read that did. The HTTP edge answers 503 with this message.
 */
export class ReadBudgetError extends Error {}

export class StorageUnavailableError extends Error {
  constructor(message: string) {
    super(`storage cannot accept writes: ${message}`);
  }
}

/**
 * The storage cannot be reached at all (no database server answers, a failover): every write of a
 * batch would fail the same way, so none is tried again on its own.
 */
export class StorageUnreachableError extends StorageUnavailableError {
  constructor(message: string) {
    super(message);
    this.name = "StorageUnreachableError";
  }
}

/**
 * The stored data cannot be read: damaged pages or values (a disk fault, bytes changed under the
 * server), or files replaced under it. Not the request's fault and not a bug: an operator runs
 * `installstats verify`. A StorageUnavailableError, so the HTTP edge answers it 503 without a stack.
 */
export class StorageDamagedError extends StorageUnavailableError {
  constructor(
    message: string,
    /** What is damaged, when known ("rollup cell day * 2026-06-01"). */
    readonly where: string | null = null,
  ) {
    super(message);
    this.name = "StorageDamagedError";
    this.message = `storage is damaged${where ? ` (${where})` : ""}: ${message}; run installstats verify`;
  }
}

export interface Store extends StoreReads, MaintenanceReads, AlertReads {
  /**
   * Applies the operations in one transaction, in order; results in the same order. Throws
   * StorageUnavailableError when the storage refuses the transaction (anything else is a bug).
   */
  write(ops: readonly WriteOp[]): Promise<WriteResult[]>;
  /**
   * Recomputes every rollup cell from the raw records, one day per transaction (after an upgrade
   * that changes what rollups hold, or to repair what `verify` found). Run with the server stopped.
   */
  rebuildRollups(onDay?: (day: number, end: number) => void): Promise<void>;
  /** How much of what is not an execution the store keeps (the defaults until called). */
  setLimits(limits: StoreLimits): void;
  /**
   * Relays reports from now on (null: no longer). A report write that changes what is stored
   * (created, updated, held, or a duplicate that filled a gap) of a relayable execution puts an
   * entry into the outbox in its own transaction; a held final report's entry waits for its
   * execution's start report and is then queued after it (or is queued as it stands when the held
   * report is applied on its own). Past `maxBytes` the oldest entries not being sent are dropped,
   * counted. Deleting an install removes its entries. Not relayed: refusals, loads, a report that
   * changed nothing (a retry).
   */
  setRelay(policy: RelayPolicy | null): void;
  /**
   * Runs `fn` as the scheduled job `name` unless it runs now, or ran less than `everyMs` before
   * `at`, on any process sharing this store; null when skipped. An SQLite file has one server
   * (the serve lock), so there it always runs; nodes sharing a PostgreSQL database take a lease.
   */
  leaseJob<T>(name: string, everyMs: number, at: number, fn: () => Promise<T>): Promise<T | null>;
  close(): Promise<void>;
}
