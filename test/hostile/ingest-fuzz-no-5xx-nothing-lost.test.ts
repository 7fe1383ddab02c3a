// 100k generated malformed and hostile bodies at the ingestion endpoints: no 5xx, no crash, and
// every one either stored or kept in the rejected-reports log with its reason.
import { expect, test, setDefaultTimeout } from "bun:test";
import { startReport, testApp } from "../helpers/app.ts";
import { verifyRollups } from "../../src/maintenance/verify.ts";

// Starts processes or does heavy work: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(120_000);

const TOTAL = 100_000;
const CONCURRENCY = 250;

function prng(seed: number) {
  return () => {
    seed ^= seed << 13;
    seed ^= seed >>> 17;
    seed ^= seed << 5;
    return (seed >>> 0) / 2 ** 32;
  };
}

const enc = new TextEncoder();

/** One hostile body, from a family chosen at random. */
function hostile(rnd: () => number, i: number): { path: string; body: Uint8Array } {
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(rnd() * xs.length)]!;
  const id = rnd() < 0.3 ? `fz-${Math.floor(rnd() * 2000)}` : `fz-u-${i}`; // some ids repeat: duplicates, conflicts
  const start = JSON.stringify(startReport(id, { nsapp: pick(["a", "b", "c", "d"]) }));
  const update = JSON.stringify({
    status: pick(["done", "failed", "installing", "weird"]),
    error: "exit code 1",
    random_id: id,
  });
  const base = rnd() < 0.5 ? start : update;
  const path = rnd() < 0.5 ? "/upload" : "/upload/updatestatus";
  const weird = pick([null, true, 1e308, -1, [], {}, "", "x".repeat(5000), { __proto__: { polluted: true } }, [[[]]]]);
  const family = Math.floor(rnd() * 12);
  let text: string;
  switch (family) {
    case 0:
      text = base.slice(0, Math.floor(rnd() * base.length));
      break; // truncated
    case 1: {
      // a field of the wrong type
      const o = JSON.parse(base) as Record<string, unknown>;
      o[pick(Object.keys(o))] = weird;
      text = JSON.stringify(o);
      break;
    }
    case 2:
      text = `{"a":${"[".repeat(1 + Math.floor(rnd() * 20_000))}`;
      break; // deep nesting
    case 3:
      text = base.replace(/"random_id": ?"[^"]*"/, `"random_id": "${"z".repeat(Math.floor(rnd() * 400_000))}"`);
      break; // huge
    case 4:
      text = base.replace("{", `{"__proto__": {"isAdmin": true}, "constructor": {"prototype": {"x": 1}}, `);
      break;
    case 5: {
      // raw bytes: invalid UTF-8 and NULs inside
      const bytes = enc.encode(base);
      for (let k = 0; k < 5; k++) bytes[Math.floor(rnd() * bytes.length)] = pick([0x00, 0xff, 0xc3, 0x80, 0xfe]);
      return { path, body: bytes };
    }
    case 6:
      text = base.replace(/"([^"]*)"/g, (m) => (rnd() < 0.2 ? m.replace(/"/g, rnd() < 0.5 ? "" : '""') : m));
      break; // quotes lost or doubled
    case 7:
      text = base.replace(/,/g, () => (rnd() < 0.3 ? "" : ","));
      break; // commas lost
    case 8:
      text = Array.from({ length: Math.floor(rnd() * 300) }, () =>
        String.fromCharCode(Math.floor(rnd() * 0x3000)),
      ).join("");
      break; // noise
    case 9:
      text = base.replace(
        /: ?"([^"]*)"/,
        `: "${pick(["\\x1b[31m", "\\u0000", '\\"', "\\", "\u0000", "\n\t\r", "<img src=x onerror=alert(1)>"])}$1"`,
      );
      break;
    case 10:
      text = pick(["", " ", "null", "[]", "0", '"x"', "{}", "{", "}", '{"":""}', `{"random_id":"${id}"}`]);
      break;
    default:
      text = base; // valid
  }
  return { path, body: enc.encode(text) };
}

test(`${TOTAL.toLocaleString()} hostile bodies: zero 5xx, every one stored or in the rejected log`, async () => {
  const t = await testApp();
  const rnd = prng(0x5eed);
  const counts = new Map<number, number>();
  let loggedExpected = 0; // 400/409/413/422 answers and applied repaired bodies each leave one log entry
  let created = 0;
  const prototypeBefore = Object.getOwnPropertyNames(Object.prototype).join();
  for (let i = 0; i < TOTAL; i += CONCURRENCY) {
    const replies = await Promise.all(
      Array.from({ length: Math.min(CONCURRENCY, TOTAL - i) }, async (_, k) => {
        const { path, body } = hostile(rnd, i + k);
        const res = await t.app.handle(
          new Request(`http://localhost${path}`, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: new Uint8Array(body),
          }),
        );
        const json = (await res.json()) as { result?: string; repaired?: boolean };
        return { status: res.status, json };
      }),
    );
    for (const { status, json } of replies) {
      counts.set(status, (counts.get(status) ?? 0) + 1);
      // A duplicate start report changes nothing and is not logged, repaired or not (docs/decisions/2026-11-21-ingestion.md).
      if ([400, 409, 413, 422].includes(status) || (json.repaired === true && json.result !== "duplicate"))
        loggedExpected++;
      if (json.result === "created") created++;
    }
  }
  console.log(
    `fuzz: ${[...counts]
      .sort()
      .map(([s, n]) => `${s}: ${n}`)
      .join(", ")}`,
  );
  expect([...counts.keys()].filter((s) => s >= 500)).toEqual([]);
  expect([...counts.keys()].every((s) => [200, 201, 202, 400, 409, 413, 422].includes(s))).toBe(true);
  expect((await t.rejected()).length).toBe(loggedExpected);
  const { n } = t.sqlite.query("SELECT count(*) AS n FROM executions").get() as { n: number };
  expect(n).toBe(created);
  expect(Object.getOwnPropertyNames(Object.prototype).join()).toBe(prototypeBefore);
  expect(({} as Record<string, unknown>).isAdmin).toBeUndefined();
  expect((await verifyRollups(t.store)).ok).toBe(true);
}, 300_000);
