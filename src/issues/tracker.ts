// The script collection's issue tracker over its HTTP API: GitHub's REST API, and the API v1 that
// Gitea and Forgejo share. Two questions only: is there an issue for this signature already (a
// search for its id, each hit checked for it), and open one. The token is read at each use (a
// rotated secret file is picked up) and never leaves this module: not in an error, not in a log.
import { readFileSync } from "node:fs";
import { ConfigError, type TrackerKind, type TrackerSettings } from "../config.ts";
import { carriesMarker } from "../domain/issue-text.ts";

export interface TrackerIssue {
  number: number;
  url: string;
  title: string;
  /** open or closed, as the tracker says. */
  state: string;
}

interface NewIssue {
  title: string;
  body: string;
  labels: readonly string[];
}

/** The tracker could not be asked, or answered other than expected: the message says what it answered. */
export class TrackerError extends Error {}

export interface Tracker {
  kind: TrackerKind;
  repo: string;
  /** The API's base address (no credentials). */
  apiUrl: string;
  /** The oldest issue naming the signature, open or closed; null when there is none. */
  find(signatureId: string): Promise<TrackerIssue | null>;
  /** Opens an issue; labels the tracker does not have are left out and named. */
  create(issue: NewIssue): Promise<{ issue: TrackerIssue; labelsLeftOut: string[] }>;
  /** At start: a token file that cannot be read stops the server (ConfigError) rather than the first send. */
  checkToken(): void;
}

const NAMES: Record<TrackerKind, string> = { github: "GitHub", gitea: "Gitea", forgejo: "Forgejo" };
/** Longest one request may take: a send makes at most three (labels, search, create). */
const TRACKER_TIMEOUT_MS = 15_000;

interface IssueJson {
  number?: unknown;
  html_url?: unknown;
  title?: unknown;
  body?: unknown;
  state?: unknown;
  pull_request?: unknown;
}

/** What every request to one tracker works with. */
interface TrackerApi {
  settings: TrackerSettings;
  /** The tracker's name in messages (GitHub, Gitea, Forgejo). */
  name: string;
  timeoutMs: number;
  /** /repos/{owner}/{repo}, each part encoded. */
  repoPath: string;
  github: boolean;
  version: string;
}

/** The token, read at each use (a rotated secret file is picked up). */
function token({ settings, name }: TrackerApi): string {
  if ("env" in settings.token) return settings.token.env.trim();
  let text: string;
  try {
    text = readFileSync(settings.token.file, "utf8").trim();
  } catch (e) {
    throw new TrackerError(
      `the ${name} token file ${settings.token.file} cannot be read (${(e as NodeJS.ErrnoException).code ?? "error"}); check --tracker-token-file`,
    );
  }
  if (text === "") throw new TrackerError(`the ${name} token file ${settings.token.file} is empty`);
  return text;
}

/** A text from the tracker, or about the request, with the token taken out wherever it appears. */
const clean = (text: string, secret: string): string =>
  (secret.length >= 4 ? text.split(secret).join("***") : text).replace(/\s+/g, " ").trim().slice(0, 300);

function headersOf(api: TrackerApi, secret: string, withBody: boolean): Record<string, string> {
  const headers: Record<string, string> = api.github
    ? {
        accept: "application/vnd.github+json",
        authorization: `Bearer ${secret}`,
        "x-github-api-version": "2022-11-28",
      }
    : { accept: "application/json", authorization: `token ${secret}` };
  headers["user-agent"] = `installstats/${api.version}`;
  if (withBody) headers["content-type"] = "application/json";
  return headers;
}

/** One request to the API, its JSON answer; anything else a TrackerError saying what it answered. */
async function call<T>(api: TrackerApi, method: "GET" | "POST", path: string, body?: unknown): Promise<T> {
  const { settings, name, timeoutMs } = api;
  const secret = token(api);
  let res: Response;
  try {
    // No redirects: one to another host would carry the token there.
    res = await fetch(settings.apiUrl + path, {
      method,
      headers: headersOf(api, secret, body !== undefined),
      body: body === undefined ? undefined : JSON.stringify(body),
      redirect: "manual",
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (e) {
    const err = e as Error;
    const why =
      err.name === "TimeoutError"
        ? `did not answer within ${timeoutMs / 1000} s`
        : `could not be reached (${clean(err.message, secret)})`;
    throw new TrackerError(`${name} at ${new URL(settings.apiUrl).host} ${why}`);
  }
  return answerOf<T>(api, res, await res.text(), secret, `${method} ${path.split("?")[0]}`);
}

/** A tracker's answer to `request` (method and path) as JSON, or the TrackerError it amounts to. */
function answerOf<T>({ name }: TrackerApi, res: Response, text: string, secret: string, request: string): T {
  if (res.status >= 300 && res.status < 400) {
    throw new TrackerError(
      `${name} answered ${res.status} (moved to ${clean(res.headers.get("location") ?? "?", secret)}): check --tracker-url and --tracker-repo`,
    );
  }
  if (!res.ok) {
    let said = text;
    try {
      const parsed = JSON.parse(text) as { message?: unknown };
      if (typeof parsed.message === "string") said = parsed.message;
    } catch {
      // Not JSON: its text says what there is to say.
    }
    throw new TrackerError(
      `${name} answered ${res.status}${res.statusText ? ` ${res.statusText}` : ""}${said.trim() ? `: ${clean(said, secret)}` : ""} (${request})`,
    );
  }
  try {
    return JSON.parse(text) as T;
  } catch {
    throw new TrackerError(`${name} answered ${res.status} with a body that is not JSON (${request})`);
  }
}

function issueOf({ name }: TrackerApi, j: IssueJson): TrackerIssue {
  if (typeof j.number !== "number" || typeof j.html_url !== "string")
    throw new TrackerError(`${name} answered an issue without a number or address`);
  return {
    number: j.number,
    url: j.html_url,
    title: typeof j.title === "string" ? j.title : "",
    state: typeof j.state === "string" ? j.state : "open",
  };
}

/** The hits that name the signature, oldest first; pull requests are not issues. */
function matching(api: TrackerApi, hits: unknown, signatureId: string): TrackerIssue | null {
  if (!Array.isArray(hits)) throw new TrackerError(`${api.name} answered a search without a list of issues`);
  const found = (hits as IssueJson[])
    .filter(
      (h) =>
        h &&
        typeof h === "object" &&
        !h.pull_request &&
        carriesMarker(
          `${typeof h.title === "string" ? h.title : ""}\n${typeof h.body === "string" ? h.body : ""}`,
          signatureId,
        ),
    )
    .map((h) => issueOf(api, h))
    .sort((a, b) => a.number - b.number);
  return found[0] ?? null;
}

/** Gitea and Forgejo take label ids: the repository's labels by name, page by page. */
async function labelIds(api: TrackerApi, names: readonly string[]): Promise<{ ids: number[]; leftOut: string[] }> {
  if (names.length === 0) return { ids: [], leftOut: [] };
  const byName = new Map<string, number>();
  for (let page = 1; page <= 20; page++) {
    const labels = await call<{ id?: unknown; name?: unknown }[]>(
      api,
      "GET",
      `${api.repoPath}/labels?limit=50&page=${page}`,
    );
    if (!Array.isArray(labels)) throw new TrackerError(`${api.name} answered a list of labels that is not a list`);
    for (const l of labels)
      if (typeof l.id === "number" && typeof l.name === "string") byName.set(l.name.toLowerCase(), l.id);
    if (labels.length < 50) break;
  }
  const ids: number[] = [];
  const leftOut: string[] = [];
  for (const n of names) {
    const id = byName.get(n.toLowerCase());
    if (id === undefined) leftOut.push(n);
    else ids.push(id);
  }
  return { ids, leftOut };
}

async function find(api: TrackerApi, signatureId: string): Promise<TrackerIssue | null> {
  if (api.github) {
    const q = `${signatureId} repo:${api.settings.repo} is:issue`;
    const answer = await call<{ items?: unknown }>(api, "GET", `/search/issues?q=${encodeURIComponent(q)}&per_page=30`);
    return matching(api, answer.items, signatureId);
  }
  return matching(
    api,
    await call<unknown>(
      api,
      "GET",
      `${api.repoPath}/issues?state=all&type=issues&q=${encodeURIComponent(signatureId)}&limit=50`,
    ),
    signatureId,
  );
}

async function create(api: TrackerApi, issue: NewIssue): Promise<{ issue: TrackerIssue; labelsLeftOut: string[] }> {
  if (api.github) {
    // GitHub takes label names (and drops them silently without push access).
    const made = await call<IssueJson>(api, "POST", `${api.repoPath}/issues`, {
      title: issue.title,
      body: issue.body,
      ...(issue.labels.length > 0 ? { labels: issue.labels } : {}),
    });
    return { issue: issueOf(api, made), labelsLeftOut: [] };
  }
  const { ids, leftOut } = await labelIds(api, issue.labels);
  const made = await call<IssueJson>(api, "POST", `${api.repoPath}/issues`, {
    title: issue.title,
    body: issue.body,
    ...(ids.length > 0 ? { labels: ids } : {}),
  });
  return { issue: issueOf(api, made), labelsLeftOut: leftOut };
}

export function createTracker(settings: TrackerSettings, opts: { version: string; timeoutMs?: number }): Tracker {
  const [owner, repoName] = settings.repo.split("/") as [string, string];
  const api: TrackerApi = {
    settings,
    name: NAMES[settings.kind],
    timeoutMs: opts.timeoutMs ?? TRACKER_TIMEOUT_MS,
    repoPath: `/repos/${encodeURIComponent(owner)}/${encodeURIComponent(repoName)}`,
    github: settings.kind === "github",
    version: opts.version,
  };
  return {
    kind: settings.kind,
    repo: settings.repo,
    apiUrl: settings.apiUrl,
    checkToken() {
      try {
        token(api);
      } catch (e) {
        throw new ConfigError((e as Error).message);
      }
    },
    find: (signatureId) => find(api, signatureId),
    create: (issue) => create(api, issue),
  };
}
