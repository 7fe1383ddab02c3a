// The relay's sender: claims entries of the outbox through the write path, posts each to the
// upstream in its own protocol, and settles what came of them. At least once, with the same ids:
// an entry leaves the outbox only after the upstream answered it with a 2xx, so a crash (or an
// answer lost on the way) between the upstream's acceptance and the settlement sends it again.
// It never touches ingestion: claims and settlements are a few rows in the writer's batches,
// and every request to the upstream is bounded by a timeout.
import type { Logger } from "../log.ts";
import type { Endpoint } from "../domain/rejection.ts";
import type { RelayEntry, RelayFailure, RelayRetry } from "../store/contract/relay.ts";
import type { ResultFor, WriteOp } from "../store/contract/store.ts";

/** Entries per claim; each execution has at most one in a claim, so they may go out at once. */
const CLAIM = 32;
/** Requests in flight at once. */
const CONCURRENCY = 4;
/** How often an idle sender looks for new entries. */
const IDLE_MS = 500;
const BACKOFF_BASE_MS = 1000;
const BACKOFF_MAX_MS = 5 * 60_000;
/** Characters of an upstream's answer kept with a refusal. */
const ANSWER_CHARS = 200;

/**
 * Exponential backoff with equal jitter: half the delay fixed, half random, so nodes that failed
 * together do not all come back at the same moment. `failures` counts from 1.
 */
export function backoffMs(failures: number, random: () => number): number {
  const d = Math.min(BACKOFF_MAX_MS, BACKOFF_BASE_MS * 2 ** Math.min(30, failures - 1));
  return Math.round(d / 2 + random() * (d / 2));
}

/** Seconds or an HTTP date (RFC 9110), as milliseconds from `now`; null when absent or unreadable. */
function retryAfterMs(header: string | null, now: number): number | null {
  if (header === null) return null;
  if (/^\s*\d+\s*$/.test(header)) return Number(header) * 1000;
  const at = Date.parse(header);
  return Number.isNaN(at) ? null : Math.max(0, at - now);
}

/** What one request came to. Refused: the upstream will not take this report (400, 413, 422); anything else failing is worth another try. */
type Attempt =
  | { kind: "sent" }
  | { kind: "refused"; error: string }
  | { kind: "failed"; error: string; retryAfterMs: number | null };

/** What the node's sender is doing, for /healthz. */
interface SenderState {
  state: "idle" | "sending" | "backing_off" | "paused" | "stopped";
  lastSentAt: number | null;
  lastError: string | null;
  lastErrorAt: number | null;
  /** Consecutive failed rounds (the backoff's exponent). */
  failures: number;
  /** When the next attempt is due while backing off. */
  retryAt: number | null;
}

export interface SenderDeps {
  submit: <Op extends WriteOp>(op: Op) => Promise<ResultFor<Op>>;
  targets: Record<Endpoint, string>;
  /** Sent with every request when the upstream wants it (basic authentication); null: none. */
  authorization: string | null;
  timeoutMs: number;
  /** Requests per second at most; 0: no limit. */
  rate: number;
  /** Who holds the claims (unique per process on a shared database). */
  owner: string;
  userAgent: string;
  clock: () => number;
  random: () => number;
  log: Logger;
  /** Each request's outcome and duration (metrics). */
  onAttempt?: (result: Attempt["kind"], seconds: number) => void;
}

export interface Sender {
  readonly state: Readonly<SenderState>;
  /** Stops: requests in flight are aborted, unsent claims released; resolves once settled. */
  stop(): Promise<void>;
}

/** A running sender: its dependencies, its state, and what stops it. */
interface SenderRun {
  deps: SenderDeps;
  state: SenderState;
  stopping: AbortController;
  /** Wakes the sleeps in progress (stop). */
  sleepers: Set<() => void>;
  /** When the next request may start (paced). */
  slot: number;
}

/** Waits `ms`, or less when stopped. */
const sleep = ({ sleepers }: SenderRun, ms: number) =>
  new Promise<void>((done) => {
    const wake = () => {
      clearTimeout(timer);
      sleepers.delete(wake);
      done();
    };
    const timer = setTimeout(wake, ms);
    sleepers.add(wake);
  });

/** Spaces request starts to the rate. */
async function paced(run: SenderRun): Promise<void> {
  if (run.deps.rate <= 0) return;
  const now = performance.now();
  const at = Math.max(now, run.slot);
  run.slot = at + 1000 / run.deps.rate;
  if (at > now) await sleep(run, at - now);
}

async function post({ deps, stopping }: SenderRun, entry: RelayEntry): Promise<Attempt> {
  const { timeoutMs } = deps;
  const signal = AbortSignal.any([AbortSignal.timeout(timeoutMs), stopping.signal]);
  const started = performance.now();
  let attempt: Attempt;
  try {
    const res = await fetch(deps.targets[entry.endpoint], {
      method: "POST",
      body: entry.body,
      headers: {
        "content-type": "application/json",
        "user-agent": deps.userAgent,
        ...(deps.authorization ? { authorization: deps.authorization } : {}),
      },
      // The current clients do not follow redirects either; a redirect means the URL is wrong.
      redirect: "manual",
      signal,
    });
    const answer = (await res.text()).slice(0, ANSWER_CHARS).trim();
    const status = `HTTP ${res.status}${answer ? `: ${answer}` : ""}`;
    if (res.status >= 200 && res.status < 300) attempt = { kind: "sent" };
    else if (res.status === 400 || res.status === 413 || res.status === 422)
      attempt = { kind: "refused", error: status };
    else if (res.status >= 300 && res.status < 400) {
      attempt = {
        kind: "failed",
        error: `HTTP ${res.status}: the upstream redirects to ${res.headers.get("location") ?? "(no location)"}; set --relay-url to where it points`,
        retryAfterMs: null,
      };
    } else
      attempt = {
        kind: "failed",
        error: status,
        retryAfterMs: retryAfterMs(res.headers.get("retry-after"), deps.clock()),
      };
  } catch (e) {
    const timedOut = !stopping.signal.aborted && signal.aborted;
    attempt = {
      kind: "failed",
      error: timedOut
        ? `no answer within ${timeoutMs} ms`
        : `cannot reach the upstream: ${e instanceof Error ? e.message : String(e)}`,
      retryAfterMs: null,
    };
  }
  deps.onAttempt?.(attempt.kind, (performance.now() - started) / 1000);
  return attempt;
}

/**
 * Posts a claim's entries, a few at a time. A failure before anything of the claim was sent
 * means the upstream is failing: no further one is started. After a success, a failure is
 * the entry's own (an endpoint the upstream lacks, say): the others go on.
 */
async function sendAll(run: SenderRun, entries: readonly RelayEntry[]): Promise<Map<number, Attempt>> {
  const { signal } = run.stopping;
  const results = new Map<number, Attempt>();
  let next = 0;
  let sent = 0;
  let failing = false;
  const worker = async () => {
    while (next < entries.length && !failing && !signal.aborted) {
      const entry = entries[next++]!;
      await paced(run);
      if (signal.aborted) return;
      const attempt = await post(run, entry);
      if (signal.aborted && attempt.kind === "failed") return; // aborted by stop: released, not failed
      results.set(entry.id, attempt);
      if (attempt.kind === "sent") sent++;
      else if (attempt.kind === "failed" && sent === 0) failing = true;
    }
  };
  await Promise.all(Array.from({ length: Math.min(CONCURRENCY, entries.length) }, worker));
  return results;
}

/** One claim sent and settled; how long to wait before the next (0: at once). */
async function round(run: SenderRun): Promise<number> {
  const { deps, state } = run;
  const { submit, owner, clock, log } = deps;
  const claimed = await submit({
    kind: "relay-claim",
    owner,
    limit: CLAIM,
    leaseMs: deps.timeoutMs * Math.ceil(CLAIM / CONCURRENCY) + 30_000,
    at: clock(),
  });
  if (claimed.paused || claimed.entries.length === 0) {
    state.state = claimed.paused ? "paused" : "idle";
    state.failures = 0;
    return IDLE_MS;
  }
  state.state = "sending";
  const results = await sendAll(run, claimed.entries);
  const sent: number[] = [];
  const failed: RelayRetry[] = [];
  const refused: RelayFailure[] = [];
  let retryAfter = 0;
  const now = clock();
  // While nothing goes through, the whole sender waits and the entries stay first in line. When
  // others did go through, a failed entry waits on its own, so one the upstream keeps failing (a
  // path it lacks) does not hold up the rest.
  const alone = [...results.values()].some((a) => a.kind === "sent");
  for (const entry of claimed.entries) {
    const a = results.get(entry.id);
    if (a === undefined) continue;
    if (a.kind === "sent") sent.push(entry.id);
    else if (a.kind === "refused") refused.push({ id: entry.id, error: a.error });
    else {
      const wait = alone ? Math.max(backoffMs(entry.attempts + 1, deps.random), a.retryAfterMs ?? 0) : 0;
      failed.push({ id: entry.id, error: a.error, retryAt: now + wait });
      retryAfter = Math.max(retryAfter, a.retryAfterMs ?? 0);
    }
  }
  const released = claimed.entries.filter((e) => !results.has(e.id)).map((e) => e.id);
  await submit({ kind: "relay-settle", owner, sent, failed, refused, released, at: clock() });
  if (sent.length > 0) state.lastSentAt = clock();
  for (const r of refused)
    log.warn("relay: the upstream refused a report; kept, not sent again until requeued", { error: r.error });
  for (const f of failed)
    if (sent.length > 0)
      log.warn("relay: the upstream failed a report (others went through); retrying it later", { error: f.error });
  if (failed.length === 0 || sent.length > 0) {
    state.failures = 0;
    return 0;
  }
  return failing(run, failed[0]!.error, retryAfter);
}

/** A failed round: the sender waits, longer after each one in a row. */
function failing({ deps, state }: SenderRun, error: string, retryAfter: number): number {
  state.failures++;
  state.lastError = error;
  state.lastErrorAt = deps.clock();
  const wait = Math.max(backoffMs(state.failures, deps.random), retryAfter);
  deps.log.warn("relay: the upstream failed; retrying later", {
    error,
    failures: state.failures,
    retry_in_s: Math.round(wait / 100) / 10,
  });
  return wait;
}

/** Rounds until stopped, waiting between them as each says. */
async function loop(run: SenderRun): Promise<void> {
  const { state, stopping } = run;
  while (!stopping.signal.aborted) {
    let wait: number;
    try {
      wait = await round(run);
    } catch (e) {
      // The claim or settlement did not commit (storage refusing writes): entries stay leased, and are sent again later.
      wait = failing(run, `storage: ${e instanceof Error ? e.message : String(e)}`, 0);
    }
    if (wait > 0 && !stopping.signal.aborted) {
      if (state.failures > 0) {
        state.state = "backing_off";
        state.retryAt = run.deps.clock() + wait;
      }
      await sleep(run, wait);
      state.retryAt = null;
    }
  }
  state.state = "stopped";
}

export function startSender(deps: SenderDeps): Sender {
  const run: SenderRun = {
    deps,
    state: { state: "idle", lastSentAt: null, lastError: null, lastErrorAt: null, failures: 0, retryAt: null },
    stopping: new AbortController(),
    sleepers: new Set(),
    slot: 0,
  };
  const done = loop(run);
  return {
    state: run.state,
    async stop() {
      run.stopping.abort();
      for (const wake of [...run.sleepers]) wake();
      await done;
    },
  };
}
