// Every JSON answer of every GET route carries only the fields its response schema documents. The
// app does not copy answers through their schemas at run time (Elysia's `normalize`: a copy of
// every answer, ~13 % of an hourly series' CPU), so this is what keeps an internal field from
// leaking into an answer: each route, over seeded data, checked field by field against its schema.
import { beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import type { TSchema } from "elysia";
import { seedDatabase, seedOptions } from "../../src/seed/seed.ts";
import { testApp } from "../helpers/app.ts";

setDefaultTimeout(120_000);

const ADMIN = "documented-fields-admin-token-0123456789";

/** Paths of `value` that `schema` does not document (an object's key outside its properties). */
function undocumented(schema: TSchema, value: unknown, at = "$"): string[] {
  if (value === null || value === undefined) return [];
  const branches = (schema.anyOf ?? schema.oneOf) as TSchema[] | undefined;
  if (branches) {
    // The branch that documents the most of it: a union of shapes documents what one of them does.
    const found = branches.map((b) => undocumented(b, value, at));
    return found.reduce((best, f) => (f.length < best.length ? f : best));
  }
  if (Array.isArray(value)) {
    const items = schema.items as TSchema | undefined;
    return items ? value.flatMap((v, i) => undocumented(items, v, `${at}[${i}]`)) : [];
  }
  if (typeof value !== "object") return [];
  const props = (schema.properties ?? {}) as Record<string, TSchema>;
  const patterns = Object.entries((schema.patternProperties ?? {}) as Record<string, TSchema>);
  const rest = typeof schema.additionalProperties === "object" ? (schema.additionalProperties as TSchema) : null;
  const out: string[] = [];
  for (const [key, v] of Object.entries(value)) {
    const sub = props[key] ?? patterns.find(([p]) => new RegExp(p).test(key))?.[1] ?? rest;
    if (sub === undefined || sub === null) out.push(`${at}.${key}`);
    else out.push(...undocumented(sub, v, `${at}.${key}`));
  }
  return out;
}

let t: Awaited<ReturnType<typeof testApp>>;

beforeAll(async () => {
  t = await testApp({ adminToken: ADMIN });
  // Today's traffic over 40 days: both protocols, failures with signatures, hardware, repos.
  await seedDatabase(t.store, seedOptions({ records: 3000, days: 40, end: t.clock(), seed: 7, profile: "today" }));
});

test("each GET route's answer has only documented fields (and the check finds one that is not)", async () => {
  const schema = (r: { hooks?: { response?: unknown } }): TSchema | undefined => {
    const response = r.hooks?.response as Record<string | number, TSchema> | TSchema | undefined;
    if (response === undefined) return undefined;
    return 200 in response ? (response as Record<number, TSchema>)[200] : (response as TSchema);
  };
  const routes = (t.app.routes as { method: string; path: string; hooks?: { response?: unknown } }[]).filter(
    (r) => r.method === "GET" && schema(r) !== undefined,
  );
  const errors = (await t.get("/api/stats/errors?days=40")).body.signatures as { id: string }[];
  const installs = (await t.get("/api/installs?limit=1")).body.installs as { random_id: string }[];
  const top = (await t.get("/api/stats/top-apps")).body as Record<string, { apps: { nsapp: string }[] }>;
  const fill: Record<string, string> = {
    ":random_id": installs[0]!.random_id,
    ":signature": errors[0]!.id,
  };
  // Routes that need a parameter to answer.
  const query: Record<string, string> = {
    "/api/stats/breakdown": "by=os",
    "/data/date": "start_date=2026-05-01&end_date=2026-06-01",
    "/api/script-detail": `app=${top["30d"]!.apps[0]!.nsapp}`,
  };
  const headers = { authorization: `Bearer ${ADMIN}` };
  const asked: string[] = [];
  const problems: { url: string; status: number; undocumented: string[] }[] = [];
  for (const r of routes) {
    const path = r.path.replace(/:[a-z_]+/g, (p) => fill[p]!);
    const url = query[r.path] ? `${path}?${query[r.path]}` : path;
    const res = await t.get(url, headers);
    const extra = undocumented(schema(r)!, res.body);
    if (res.status !== 200 || extra.length > 0) problems.push({ url, status: res.status, undocumented: extra });
    asked.push(r.path);
  }
  expect(problems).toEqual([]);
  // The routes come from the app (a route added later is asked too): the native, original and
  // community reads and the admin ones are among them.
  for (const path of ["/api/stats/timeseries", "/data/summary", "/api/new", "/api/admin/issues"])
    expect(asked).toContain(path);
  // The check finds a field its schema does not name, at the top and deep in an answer.
  const series = routes.find((r) => r.path === "/api/stats/timeseries")!;
  const answer = (await t.get("/api/stats/timeseries")).body as { points: object[] };
  const leaked = { ...answer, internal: 1, points: [{ ...answer.points[0], seq: 1 }, ...answer.points.slice(1)] };
  expect(undocumented(schema(series)!, leaked)).toEqual(["$.points[0].seq", "$.internal"]);
});
