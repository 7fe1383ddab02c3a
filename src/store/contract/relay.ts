// The relay feature of the Store contract (src/relay/): the outbox of accepted reports on their
// way upstream, what its sender writes, where it stands.
import type { Endpoint } from "../../domain/rejection.ts";
import type { RelayPolicy } from "../../domain/relay.ts";
import type { ReadTable } from "./reads.ts";

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
export type RelayWrite =
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
  | {
      kind: "relay-settle";
      owner: string;
      sent: readonly number[];
      failed: readonly RelayRetry[];
      refused: readonly RelayFailure[];
      released: readonly number[];
      at: number;
    }
  | { kind: "relay-control"; action: RelayAction; at: number };

export interface RelayResults {
  /** `paused`: the relay is paused (no entries then). */
  "relay-claim": { kind: "claimed"; paused: boolean; entries: RelayEntry[] };
  /** `sent`: entries that left the outbox (an entry already gone, discarded meanwhile, is not counted). */
  "relay-settle": { kind: "settled"; sent: number };
  /** `entries`: entries requeued or discarded (0 for pause and resume). */
  "relay-control": { kind: "relay-controlled"; entries: number };
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

export interface RelayReads {
  /** Where the relay's outbox stands. */
  relayStatus(): Promise<RelayStatus>;
}

export const RELAY_READS = { relayStatus: "once" } as const satisfies ReadTable<RelayReads>;

export interface RelayControl {
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
}
