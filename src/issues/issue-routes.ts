// Issues from error signatures over HTTP: preview, send, list and forget links. Under /api/admin/,
// so the admin token is needed (src/http/access.ts). The tracker's token appears in no answer.
import { Elysia, t, type Static } from "elysia";
import { ErrorBody, errorBody } from "../http/errors.ts";
import {
  FilterQuery,
  QueryError,
  readQuery,
  strictQuery,
  windowJson,
  type FilterQuery as FilterQueryType,
} from "../read/query.ts";
import type { IssueLink } from "../store/contract/issues.ts";
import {
  SendBusyError,
  TRACKER_OFF,
  TrackerOffError,
  UnknownSignatureError,
  type IssueEdits,
  type Issues,
} from "./service.ts";
import { TrackerError } from "./tracker.ts";

const security = [{ bearer: [] }];
const tags = ["admin"];
/** The window of the counts when the query names none, as the stats routes. */
const DEFAULT_DAYS = 30;

const LinkJson = t.Object({
  signature: t.String(),
  tracker: t.String({ description: "github, gitea or forgejo" }),
  repo: t.String({ description: "owner/name" }),
  number: t.Integer(),
  url: t.String(),
  title: t.String(),
  how: t.String({
    description: "created: opened from here; found: already in the tracker, found by the signature's id",
  }),
  linked_at: t.String({ format: "date-time" }),
});
const linkJson = (l: IssueLink) => ({
  signature: l.signature,
  tracker: l.tracker,
  repo: l.repo,
  number: l.number,
  url: l.url,
  title: l.title,
  how: l.how,
  linked_at: new Date(l.linkedAt).toISOString(),
});

const TrackerJson = t.Nullable(
  t.Object(
    { kind: t.String(), repo: t.String(), api_url: t.String(), labels: t.Array(t.String()) },
    { description: "where issues go; null when no tracker is configured (the preview still shows the text)" },
  ),
);
const IssueText = t.Object({
  title: t.String(),
  body: t.String({ description: "Markdown" }),
  labels: t.Array(t.String()),
});
const Preview = t.Object(
  {
    signature: t.String(),
    window: t.Object({ from: t.String({ format: "date-time" }), to: t.String({ format: "date-time" }) }),
    tracker: TrackerJson,
    link: t.Nullable(LinkJson, {
      description: "the issue this signature is linked to already: a send links nothing new",
    }),
    existing: t.Nullable(t.Object({ number: t.Integer(), url: t.String(), title: t.String(), state: t.String() }), {
      description: "an issue of the tracker already naming this signature: a send links it instead of opening one",
    }),
    issue: IssueText,
  },
  { title: "IssuePreview" },
);
const SendBody = t.Optional(
  t.Object({
    title: t.Optional(t.String({ minLength: 1, maxLength: 256 })),
    body: t.Optional(
      t.String({
        minLength: 1,
        maxLength: 60_000,
        description: "Markdown; the signature's marker is added if it is missing",
      }),
    ),
    labels: t.Optional(t.Array(t.String({ minLength: 1, maxLength: 50 }), { maxItems: 20 })),
  }),
);
const Sent = t.Object(
  {
    result: t.String({
      description:
        "created: a new issue; found: an issue of the tracker naming the signature, now linked; linked: the link stored before",
    }),
    link: LinkJson,
    labels_left_out: t.Array(t.String(), { description: "labels the tracker does not have (gitea, forgejo)" }),
  },
  { title: "IssueSent" },
);

/** A signature id as /api/stats/errors lists them. */
function signatureParam(v: string): string {
  if (!/^[0-9a-f]{16}$/.test(v))
    throw new QueryError("signature", "signature must be 16 lowercase hex digits, an id from /api/stats/errors");
  return v;
}

/** The flow's errors in the one error shape; null for anything else (a fault: 500). */
function failure(e: unknown): { code: 404 | 409 | 502; body: ErrorBody } | null {
  if (e instanceof UnknownSignatureError) return { code: 404, body: errorBody("not_found", e.message, "signature") };
  if (e instanceof TrackerOffError) return { code: 404, body: errorBody("not_found", e.message) };
  if (e instanceof SendBusyError) return { code: 409, body: errorBody("conflict", e.message) };
  if (e instanceof TrackerError) return { code: 502, body: errorBody("tracker_error", e.message) };
  return null;
}

const SignatureParams = t.Object({
  signature: t.String({ description: "an error signature id from /api/stats/errors" }),
});

const ListRoute = {
  response: { 200: t.Object({ tracker: TrackerJson, links: t.Array(LinkJson) }) },
  detail: {
    tags,
    security,
    summary: "Error signatures linked to tracker issues, newest first, and where issues go",
  },
};
const PreviewRoute = {
  params: SignatureParams,
  ...strictQuery(FilterQuery),
  response: { 200: Preview, 400: ErrorBody, 404: ErrorBody, 502: ErrorBody },
  detail: {
    tags,
    security,
    summary: "Preview the issue for an error signature",
    description:
      "The title and Markdown body a send would open (app, exit codes and categories, counts in the window, first and last seen, PVE/OS/kernel spread of the newest failures, the failure drivers, one masked sample error), with the filters and window of the stats routes (default: 30 days). Says whether the signature is linked already, or whether the tracker has an issue naming it. Writes nothing.",
  },
};
const SendRoute = {
  params: SignatureParams,
  ...strictQuery(FilterQuery),
  body: SendBody,
  response: {
    200: Sent,
    201: Sent,
    400: ErrorBody,
    404: ErrorBody,
    409: ErrorBody,
    422: ErrorBody,
    502: ErrorBody,
  },
  detail: {
    tags,
    security,
    summary: "Open the issue for an error signature, or link the one already opened",
    description: `Never twice for one signature: a stored link is answered as it is (200, linked); else the tracker is searched for an issue naming the signature's id, which is linked (200, found); else the issue is opened as previewed, or with the title, body and labels given (201, created), and linked. The tracker's errors are answered 502 with what it said. Off without a tracker: ${TRACKER_OFF}.`,
  },
};
const ForgetRoute = {
  params: t.Object({ signature: t.String() }),
  response: {
    200: t.Object({ signature: t.String(), forgotten: t.Literal(true) }),
    400: ErrorBody,
    404: ErrorBody,
  },
  detail: {
    tags,
    security,
    summary: "Forget an error signature's issue link",
    description: "For an issue deleted in the tracker, or linked by mistake; the issue itself is left as it is.",
  },
};

/** What the handlers work with: the issues service, the clock windows end at, and the tracker as answered. */
interface IssuesRouteContext {
  issues: Issues;
  clock: () => number;
  tracker: Static<typeof TrackerJson>;
}

/** The window (default: the last 30 days) and filters of the counts. */
function scope(ctx: IssuesRouteContext, q: FilterQueryType) {
  const { window, filter } = readQuery(q, ctx.clock(), DEFAULT_DAYS);
  return { w: window!, filter };
}

async function previewJson(ctx: IssuesRouteContext, signature: string, q: FilterQueryType) {
  const id = signatureParam(signature);
  const { w, filter } = scope(ctx, q);
  const p = await ctx.issues.preview(id, filter, w);
  return {
    signature: id,
    window: windowJson(w),
    tracker: ctx.tracker,
    link: p.link ? linkJson(p.link) : null,
    existing: p.existing,
    issue: p.issue,
  };
}

async function sendJson(
  ctx: IssuesRouteContext,
  signature: string,
  q: FilterQueryType,
  body: IssueEdits | null | undefined,
) {
  const id = signatureParam(signature);
  const { w, filter } = scope(ctx, q);
  const sent = await ctx.issues.send(id, filter, w, body ?? {});
  return { result: sent.result, link: linkJson(sent.link), labels_left_out: sent.labelsLeftOut };
}

export function issueRoutes(deps: { issues: Issues; clock: () => number }) {
  const { issues } = deps;
  const ctx: IssuesRouteContext = {
    ...deps,
    tracker:
      issues.tracker === null
        ? null
        : {
            kind: issues.tracker.kind,
            repo: issues.tracker.repo,
            api_url: issues.tracker.apiUrl,
            labels: issues.tracker.labels,
          },
  };
  return new Elysia({ name: "issues" })
    .get(
      "/api/admin/issues",
      async () => ({ tracker: ctx.tracker, links: (await issues.links()).map(linkJson) }),
      ListRoute,
    )
    .get(
      "/api/admin/issues/:signature",
      async ({ params, query, status }) => {
        try {
          return status(200, await previewJson(ctx, params.signature, query));
        } catch (e) {
          const f = failure(e);
          if (f?.code === 404) return status(404, f.body);
          if (f?.code === 502) return status(502, f.body);
          throw e;
        }
      },
      PreviewRoute,
    )
    .post(
      "/api/admin/issues/:signature",
      async ({ params, query, body, status }) => {
        try {
          const json = await sendJson(ctx, params.signature, query, body);
          return json.result === "created" ? status(201, json) : status(200, json);
        } catch (e) {
          const f = failure(e);
          if (f?.code === 404) return status(404, f.body);
          if (f?.code === 409) return status(409, f.body);
          if (f?.code === 502) return status(502, f.body);
          throw e;
        }
      },
      SendRoute,
    )
    .delete(
      "/api/admin/issues/:signature",
      async ({ params, status }) => {
        const id = signatureParam(params.signature);
        if (!(await issues.forget(id)))
          return status(404, errorBody("not_found", `signature ${id} is not linked to an issue`, "signature"));
        return status(200, { signature: id, forgotten: true as const });
      },
      ForgetRoute,
    );
}
