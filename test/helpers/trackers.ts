// Local fakes of the issue trackers installstats talks to: GitHub's REST API (search, create) and
// the API v1 of Gitea and Forgejo (issue search, labels, create), on 127.0.0.1 and a free port,
// with the answers' shapes of the real services. Every request is recorded; a test can make the
// next answers fail, slow the search down, or place issues as if opened by hand.
import type { Server } from "bun";

export type FakeKind = "github" | "gitea";

interface FakeIssue {
  number: number;
  title: string;
  body: string;
  state: "open" | "closed";
  labels: (string | number)[];
  pull?: true;
}

interface Recorded {
  method: string;
  path: string;
  authorization: string | null;
  userAgent: string | null;
  body: Record<string, unknown> | null;
}

export interface FakeTracker {
  /** The address to configure: the API root for GitHub, the server for Gitea/Forgejo. */
  url: string;
  requests: Recorded[];
  issues: FakeIssue[];
  /** The next `n` requests answer this (status and raw body). */
  fail(status: number, body: string, n?: number): void;
  /** The next request that opens an issue answers this. */
  failCreate(status: number, body: string): void;
  /** Searches answer after this many ms (a send under way meanwhile). */
  searchDelayMs: number;
  /** Places an issue as if opened by hand; returns its number. */
  place(issue: Omit<FakeIssue, "number" | "labels" | "state"> & { state?: "open" | "closed"; pull?: true }): number;
  stop(): void;
}

const LABELS = [
  { id: 11, name: "bug" },
  { id: 12, name: "telemetry" },
];

export function startFakeTracker(kind: FakeKind, opts: { token: string; owner: string; repo: string }): FakeTracker {
  const requests: Recorded[] = [];
  const issues: FakeIssue[] = [];
  const failures: { status: number; body: string }[] = [];
  let createFailure: { status: number; body: string } | null = null;
  const prefix = kind === "github" ? "" : "/api/v1";
  const repoPath = `${prefix}/repos/${opts.owner}/${opts.repo}`;
  let server: Server<unknown>;
  const base = () => `http://127.0.0.1:${server.port}`;
  const htmlUrl = (n: number) => `${base()}/${opts.owner}/${opts.repo}/issues/${n}`;
  const json = (status: number, body: unknown) =>
    new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json" } });
  const issueJson = (i: FakeIssue) =>
    kind === "github"
      ? {
          id: 1000 + i.number,
          number: i.number,
          html_url: htmlUrl(i.number),
          title: i.title,
          body: i.body,
          state: i.state,
          labels: i.labels.map((name) => ({ name })),
          ...(i.pull ? { pull_request: { url: "x" } } : {}),
        }
      : {
          id: 1000 + i.number,
          number: i.number,
          html_url: htmlUrl(i.number),
          title: i.title,
          body: i.body,
          state: i.state,
          labels: LABELS.filter((l) => i.labels.includes(l.id)),
          pull_request: i.pull ? { merged: false } : null,
        };
  // Loose, as the real searches are: any issue containing every word of the query.
  const search = (words: string[]) =>
    issues.filter((i) => words.every((w) => `${i.title} ${i.body}`.toLowerCase().includes(w.toLowerCase())));

  const fake: FakeTracker = {
    url: "",
    requests,
    issues,
    searchDelayMs: 0,
    fail(status, body, n = 1) {
      for (let k = 0; k < n; k++) failures.push({ status, body });
    },
    failCreate(status, body) {
      createFailure = { status, body };
    },
    place(i) {
      const number = issues.length + 1;
      issues.push({
        number,
        title: i.title,
        body: i.body,
        state: i.state ?? "open",
        labels: [],
        ...(i.pull ? { pull: true as const } : {}),
      });
      return number;
    },
    stop: () => void server.stop(true),
  };

  server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(req) {
      const url = new URL(req.url);
      const text = req.method === "POST" ? await req.text() : "";
      let body: Record<string, unknown> | null = null;
      try {
        body = text ? (JSON.parse(text) as Record<string, unknown>) : null;
      } catch {
        return json(400, { message: "Problems parsing JSON" });
      }
      requests.push({
        method: req.method,
        path: url.pathname + url.search,
        authorization: req.headers.get("authorization"),
        userAgent: req.headers.get("user-agent"),
        body,
      });
      const failure = failures.shift();
      if (failure)
        return new Response(failure.body, { status: failure.status, headers: { "content-type": "application/json" } });
      const expected = kind === "github" ? `Bearer ${opts.token}` : `token ${opts.token}`;
      if (req.headers.get("authorization") !== expected)
        return kind === "github"
          ? json(401, { message: "Bad credentials", documentation_url: "https://docs.github.com/rest" })
          : json(401, { message: "user does not exist [uid: 0, name: ]", url: `${base()}/api/swagger` });

      if (kind === "github" && req.method === "GET" && url.pathname === "/search/issues") {
        if (fake.searchDelayMs > 0) await Bun.sleep(fake.searchDelayMs);
        const terms = (url.searchParams.get("q") ?? "").split(/\s+/).filter((w) => w !== "");
        const repoTerm = terms.find((w) => w.startsWith("repo:"));
        if (repoTerm !== `repo:${opts.owner}/${opts.repo}`)
          return json(422, {
            message: "Validation Failed",
            errors: [{ message: "The listed users and repositories cannot be searched" }],
          });
        const isIssue = terms.includes("is:issue");
        const hits = search(terms.filter((w) => !w.includes(":"))).filter((i) => !isIssue || !i.pull);
        return json(200, { total_count: hits.length, incomplete_results: false, items: hits.map(issueJson) });
      }
      if (kind === "gitea" && req.method === "GET" && url.pathname === `${repoPath}/issues`) {
        if (fake.searchDelayMs > 0) await Bun.sleep(fake.searchDelayMs);
        const q = url.searchParams.get("q") ?? "";
        const onlyIssues = url.searchParams.get("type") === "issues";
        const state = url.searchParams.get("state") ?? "open";
        const hits = search(q.split(/\s+/).filter((w) => w !== "")).filter(
          (i) => (!onlyIssues || !i.pull) && (state === "all" || i.state === state),
        );
        return json(200, hits.map(issueJson));
      }
      if (kind === "gitea" && req.method === "GET" && url.pathname === `${repoPath}/labels`) {
        const page = Number(url.searchParams.get("page") ?? "1");
        return json(200, page === 1 ? LABELS.map((l) => ({ ...l, color: "ee0701", description: "" })) : []);
      }
      if (req.method === "POST" && url.pathname === `${repoPath}/issues`) {
        if (createFailure) {
          const f = createFailure;
          createFailure = null;
          return new Response(f.body, { status: f.status, headers: { "content-type": "application/json" } });
        }
        if (typeof body?.title !== "string" || body.title === "") return json(422, { message: "Validation Failed" });
        const labels = Array.isArray(body.labels) ? (body.labels as (string | number)[]) : [];
        if (kind === "gitea" && labels.some((l) => typeof l !== "number"))
          return json(422, { message: "[Labels]: must be ids" });
        const number = issues.length + 1;
        const issue: FakeIssue = {
          number,
          title: body.title,
          body: typeof body.body === "string" ? body.body : "",
          state: "open",
          labels,
        };
        issues.push(issue);
        return json(201, issueJson(issue));
      }
      return json(404, { message: "Not Found" });
    },
  });
  fake.url = base();
  return fake;
}
