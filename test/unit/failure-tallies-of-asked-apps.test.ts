// /api/errors adds up the failures of the apps it names (read/failures.ts failuresByApp), kept
// with a settled cell for the apps asked so far: asked later for other apps, the cell's tallies
// of those are added without changing the ones kept, and every app's tally is what adding its
// failure keys up gives, asked first or later, in a settled cell or an open one.
import { expect, test } from "bun:test";
import { settle } from "../../src/domain/rollup.ts";
import { foldRecords } from "../../src/read/aggregate.ts";
import { failuresByApp, failuresIn } from "../../src/read/failures.ts";
import { execution } from "../helpers/reports.ts";

const T = Date.UTC(2026, 9, 1);
const APPS = ["nginx", "docker", "zabbix", "yarr"];
const TEXTS = ["exit code 100: apt failed at line 1", "curl: (7) could not connect", ""];

async function cell() {
  const records = Array.from({ length: 120 }, (_, i) =>
    execution(`r${i}`, {
      createdAt: T + i * 1000,
      nsapp: APPS[i % APPS.length]!,
      status: i % 5 === 0 ? "done" : "failed",
      outcome: i % 5 === 0 ? "success" : "failed",
      exitCode: i % 5 === 0 ? 0 : [100, 7, 1][i % 3]!,
      errorCategory: i % 5 === 0 ? null : ["dependency", "network", "unknown"][i % 3]!,
      error: i % 5 === 0 ? null : TEXTS[i % 3]! || null,
    }),
  );
  const [c] = await foldRecords(
    (async function* () {
      yield records;
    })(),
    () => T,
  );
  return c!.data;
}

/** An app's tally by brute force over the keys taken apart. */
function byHand(data: Awaited<ReturnType<typeof cell>>, app: string) {
  const f = failuresIn(data, data.dims.failure!);
  const out = {
    codes: new Map<string, number>(),
    categories: new Map<string, number>(),
    signatures: new Map<string, number>(),
  };
  const add = (m: Map<string, number>, k: string, n: number) => m.set(k, (m.get(k) ?? 0) + n);
  for (let i = 0; i < f.app.length; i++) {
    if (f.app[i] !== app || f.failedOnly[i] === 0) continue;
    if (f.code[i] !== 0) add(out.codes, String(f.code[i]), f.failedOnly[i]!);
    add(out.categories, f.category[i]!, f.failedOnly[i]!);
    if (f.signed[i]) add(out.signatures, f.signature[i]!, f.failedOnly[i]!);
  }
  return out;
}

test("apps asked first and later are each tallied as their keys add up", async () => {
  for (const settled of [false, true]) {
    const data = await cell();
    if (settled) settle(data);
    const keys = data.dims.failure!;
    const first = failuresByApp(data, keys, ["nginx", "ghost"]);
    const nginx = first.get("nginx");
    expect([settled, nginx]).toEqual([settled, byHand(data, "nginx")]);
    expect(nginx!.signatures.size).toBeGreaterThan(0);
    expect([...first.get("ghost")!.codes]).toEqual([]);
    const later = failuresByApp(data, keys, ["docker", "nginx", "zabbix"]);
    for (const app of ["docker", "nginx", "zabbix"])
      expect([settled, app, later.get(app)]).toEqual([settled, app, byHand(data, app)]);
    // A settled cell keeps what it added up: nginx's tally is the one made first.
    expect([settled, later.get("nginx") === nginx]).toEqual([settled, settled]);
  }
});
