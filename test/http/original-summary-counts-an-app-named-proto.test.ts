// A client string used as a key of the /data/summary maps (an app called "__proto__") stays a key.
import { expect, test } from "bun:test";
import { testApp } from "../helpers/app.ts";
test("/data/summary: an app named __proto__ is counted like any other; headers as on every answer", async () => {
  const t = await testApp();
  await t.post("/upload", { type: "lxc", nsapp: "__proto__", random_id: "p1" });
  await t.post("/upload", { type: "lxc", nsapp: "nginx", random_id: "p2" });
  const r = await t.get("/data/summary");
  expect(r.status).toBe(200);
  expect(Object.keys(r.body.nsapp_count as object).sort()).toEqual(["__proto__", "nginx"]);
  expect(r.headers.get("x-content-type-options")).toBe("nosniff");
});
