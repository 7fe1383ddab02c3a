// A query parameter a route does not name: the native API refuses it, naming it and what the path
// takes (a typo such as `?stauts=failed` must not read every install); the compatibility paths (the
// original API, the community service's) take and ignore it as the originals do, answering as
// without it. Every GET route with a query schema is asked, so a route added later is too.
import { beforeAll, expect, setDefaultTimeout, test } from "bun:test";
import { seedDatabase, seedOptions } from "../../src/seed/seed.ts";
import { testApp } from "../helpers/app.ts";

setDefaultTimeout(120_000);

const ADMIN = "unknown-parameters-admin-token-0123456789";
/** The paths that keep the originals' leniency. */
const COMPAT = /^\/(data\/|api\/(dashboard|records|scripts|errors|new|script-detail|repo-slugs|exit-codes)\b)/;

let t: Awaited<ReturnType<typeof testApp>>;

beforeAll(async () => {
  t = await testApp({ adminToken: ADMIN });
  await seedDatabase(t.store, seedOptions({ records: 500, days: 10, end: t.clock(), seed: 5, profile: "today" }));
});

test("the native routes refuse a parameter they do not name; the compatibility paths ignore it", async () => {
  const routes = (t.app.routes as { method: string; path: string; hooks?: { query?: unknown } }[]).filter(
    (r) => r.method === "GET" && r.hooks?.query !== undefined && !r.path.includes(":"),
  );
  // Parameters some routes need to answer 200 at all.
  const needs: Record<string, string> = {
    "/api/stats/breakdown": "by=os&",
    "/data/date": "start_date=2026-05-25&end_date=2026-06-01&",
    "/api/script-detail": "app=docker&",
  };
  // As text: some answers are CSV.
  const ask = async (path: string) => {
    const res = await t.app.handle(
      new Request(`http://localhost${path}`, { headers: { authorization: `Bearer ${ADMIN}` } }),
    );
    return { status: res.status, text: await res.text() };
  };
  const seen = { refused: [] as string[], ignored: [] as string[] };
  for (const r of routes) {
    const base = `${r.path}?${needs[r.path] ?? ""}`;
    const res = await ask(`${base}zz_unknown=1`);
    if (COMPAT.test(r.path)) {
      expect({ path: r.path, ...res }).toEqual({ path: r.path, ...(await ask(base)), status: 200 });
      seen.ignored.push(r.path);
    } else {
      const body = JSON.parse(res.text) as { error: string; field: string; message: string };
      expect({ path: r.path, status: res.status, error: body.error, field: body.field }).toEqual({
        path: r.path,
        status: 400,
        error: "invalid_field",
        field: "zz_unknown",
      });
      expect(body.message).toStartWith('unknown parameter "zz_unknown"; this path takes ');
      seen.refused.push(r.path);
    }
  }
  expect(seen.refused).toEqual(expect.arrayContaining(["/api/stats/summary", "/api/installs", "/api/admin/rejected"]));
  expect(seen.ignored).toEqual(
    expect.arrayContaining(["/data/paginated", "/api/dashboard", "/api/new", "/api/errors"]),
  );
});
