// The API docs page in Chromium against the compiled binary with a read token: it asks for the
// token as the dashboard does, then shows the reference with the host and the token filled in.
import { afterAll, beforeAll, describe, expect, setDefaultTimeout, test } from "bun:test";
import { join } from "node:path";
import { compiledBinary, startServer, type RunningServer } from "../helpers/binary.ts";
import { tempDir } from "../helpers/tmp.ts";
import { launchBrowser, watchedPage } from "../helpers/browser.ts";

// Starts processes or does heavy work: more than bun's default 5 s on a busy 2-core machine.
setDefaultTimeout(180_000);

describe("the page in Chromium (compiled binary)", () => {
  let server: RunningServer;
  beforeAll(async () => {
    server = await startServer(await compiledBinary(), ["--db", join(tempDir("installstats-docs-"), "d.db")], {
      INSTALLSTATS_READ_TOKEN: "docs-r3ad",
    });
  });
  afterAll(async () => {
    await server?.stop();
  });

  test("with a read token it asks for the token (not a raw 401), then shows the reference with this host and the token", async () => {
    const browser = await launchBrowser();
    try {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
      const w = await watchedPage(ctx);
      await w.page.goto(`${server.url}/openapi`);
      await w.page.waitForSelector("#docs-token:not([hidden])");
      expect(await w.page.locator("#docs-token-text").textContent()).toContain("read token");
      // A wrong token is said to be wrong.
      await w.page.fill("#token", "nope");
      await w.page.click("#docs-token button[type=submit]");
      await w.page.waitForFunction(() => document.getElementById("docs-token-text")?.textContent?.includes("refused"));
      await w.page.fill("#token", "docs-r3ad");
      await w.page.click("#docs-token button[type=submit]");
      await w.page.waitForSelector("#docs-token[hidden]", { state: "attached" });
      // The reference, with this page's address as its server.
      await w.page.waitForFunction(
        (url) => document.body.innerText.includes("/upload/updatestatus") && document.body.innerText.includes(url),
        server.url,
        { timeout: 60_000 },
      );
      // An operation's curl example carries the host (the token is remembered: no question this time).
      await w.page.goto(`${server.url}/openapi#tag/installs/GET/api/stats/summary`);
      await w.page.waitForFunction((url) => document.body.innerText.includes(`curl '${url}/api/`), server.url, {
        timeout: 60_000,
      });
      expect(await w.page.locator("#docs-token").isVisible()).toBe(false);
      // Kept where the dashboard keeps it: the dashboard does not ask again.
      expect(await w.page.evaluate(() => localStorage.getItem("installstats.readToken"))).toBe("docs-r3ad");
      await w.page.goto(`${server.url}/`);
      await w.page.waitForSelector("body[data-state=ready]");
      expect(await w.page.locator("#token").count()).toBe(0);
      // The only console errors: the two refused fetches of the document (no token, then a wrong one).
      expect(w.problems.filter((p) => !p.includes("401"))).toEqual([]);
      expect(w.outside).toEqual([]);
      await ctx.close();
    } finally {
      await browser.close();
    }
  });

  test("a trailing slash, as people type /openapi/, leads to the path without it (query kept); reports are not redirected", async () => {
    // (This server has a read token: paths that are not pages are reads.)
    const headers = { authorization: "Bearer docs-r3ad" };
    for (const [from, to] of [
      ["/openapi/", "/openapi"],
      ["/installs/?nsapp=docker", "/installs?nsapp=docker"],
      ["/api/nothing-here/", "/api/nothing-here"],
    ] as const) {
      const res = await fetch(`${server.url}${from}`, { redirect: "manual", headers });
      expect({ from, status: res.status, location: res.headers.get("location") }).toEqual({
        from,
        status: 308,
        location: to,
      });
    }
    expect((await fetch(`${server.url}/openapi/`, { headers })).status).toBe(200);
    expect((await fetch(`${server.url}/api/nothing-here/`, { headers })).status).toBe(404);
    // A report to "/telemetry/" is taken as one to /telemetry (a client would not follow a redirect).
    const report = JSON.stringify({
      random_id: "slash-1",
      execution_id: "slash-1",
      nsapp: "x",
      type: "lxc",
      status: "installing",
    });
    expect(
      (
        await fetch(`${server.url}/telemetry/`, {
          method: "POST",
          body: report,
          headers: { "content-type": "application/json" },
          redirect: "manual",
        })
      ).status,
    ).toBe(201);
  });
});
