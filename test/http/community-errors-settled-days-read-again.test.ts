// /api/errors adds up each failing app's exit codes, categories and signatures once per settled
// sum of days (read/failures.ts failuresByApp) and the open hours' on top for each request. Read
// again after failures arrive in the open hour, an app's description is what all its failures
// make, and another read of the same moment gives the same answer.
import { expect, test } from "bun:test";
import type { Execution } from "../../src/domain/execution.ts";
import { DAY } from "../../src/domain/time.ts";
import { testApp } from "../helpers/app.ts";
import { finishedLoad } from "../helpers/reports.ts";

interface AppError {
  app: string;
  failed_count: number;
  top_exit_code: number;
  top_category: string;
  top_error: string;
}

const APT = "exit_code=100 | apt failed | at line 12: apt-get install -y ffmpeg";
const CURL = "exit_code=7 | curl: (7) Failed to connect to github.com";

test("an app's failures over settled days and the open hour, read again as they change", async () => {
  const t = await testApp();
  const now = t.clock();
  let n = 0;
  const failed = (at: number, code: number, category: string, error: string) =>
    finishedLoad(`e${n++}`, at, {
      nsapp: "nginx",
      status: "failed",
      outcome: "failed",
      exitCode: code,
      errorCategory: category,
      error,
    } satisfies Partial<Execution>);
  // Three failures of apt on each of three past days (stored day cells, summed as one settled cell).
  await t.store.write(
    [3, 4, 5].flatMap((d) => [1, 2, 3].map((k) => failed(now - d * DAY + k * 60_000, 100, "dependency", APT))),
  );
  const nginx = async () => {
    const res = await t.get("/api/errors?days=7");
    expect(res.status).toBe(200);
    return (res.body as { app_errors: AppError[] }).app_errors.find((a) => a.app === "nginx")!;
  };
  const apt = { failed_count: 9, top_exit_code: 100, top_category: "dependency" };
  expect(await nginx()).toMatchObject(apt);
  expect((await nginx()).top_error).toContain("apt failed");

  // Ten curl failures in the open hour overtake apt in every column.
  await t.store.write(Array.from({ length: 10 }, (_, k) => failed(now + k * 1000, 7, "network", CURL)));
  const curl = await nginx();
  expect(curl).toMatchObject({ failed_count: 19, top_exit_code: 7, top_category: "network" });
  expect(curl.top_error).toContain("curl");
  expect(await nginx()).toEqual(curl);
});
