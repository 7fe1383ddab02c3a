// Acting on a failure: an issue opened in the script collection's tracker from an error signature,
// previewed, sent once, linked, found again instead of opened twice; against local fakes of
// GitHub's REST API and of the API v1 of Gitea and Forgejo. The tracker's token appears in no
// answer and no log line; the admin token is needed; a tracker's error is a 502 naming its answer.
import { afterAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, defaults, loadConfig, settingsHelp, trackerOf, type Config } from "../../src/config.ts";
import { carriesMarker, issueMarker, maskSample } from "../../src/domain/issue-text.ts";
import { explainExitCode } from "../../src/domain/exit-codes.ts";
import { testApp, type Reply } from "../helpers/app.ts";
import { tempDir } from "../helpers/tmp.ts";
import { startFakeTracker, type FakeKind, type FakeTracker } from "../helpers/trackers.ts";

const TOKEN = "trk_s3cr3t-T0KEN-4f9a2c";
const ADMIN = "adm1n-issues";
const auth = { authorization: `Bearer ${ADMIN}` };
const OWNER = "community-scripts";
const REPO = "ProxmoxVE";
/** A failure's error text with things no issue may show: an address, credentials, an e-mail, a token. */
const APT_ERROR =
  "exit_code=100 | APT: install failed | at line 42: apt-get install -y jellyfin-ffmpeg7\n---\nE: Failed to fetch http://deploy:hunter2@10.20.30.40/debian/pool/jellyfin.deb\nmail root@homelab.example.org, api_key=AKIAEXAMPLEKEY99\nE: Unable to locate package jellyfin-ffmpeg7";
const CURL_ERROR =
  "exit_code=22 | curl: (22) The requested URL returned error: 404 | at line 12: curl -fsSL https://example.org/docker.sh";

const fakes: FakeTracker[] = [];
afterAll(() => {
  for (const f of fakes) f.stop();
});

/** Every answer and log line a test saw: none may hold the tracker's token. */
const seen: string[] = [];
const record = (r: Reply): Reply => {
  seen.push(JSON.stringify(r.body));
  return r;
};

async function setup(kind: FakeKind | null, tracker: Config["tracker"], over: Partial<Config> = {}) {
  const fake = kind === null ? null : startFakeTracker(kind, { token: TOKEN, owner: OWNER, repo: REPO });
  if (fake) fakes.push(fake);
  const t = await testApp({
    adminToken: ADMIN,
    tracker,
    trackerUrl: fake?.url ?? null,
    trackerRepo: tracker === null ? null : `${OWNER}/${REPO}`,
    trackerToken: tracker === null ? null : TOKEN,
    trackerLabels: ["bug", "telemetry", "triage-later"],
    publicUrl: "https://stats.example.org",
    ...over,
  });
  // jellyfin: 30 runs on PVE 9.0.9 (24 fail with the APT error), 30 on 8.4.1 (2 fail with it); docker: 8 curl failures.
  let n = 0;
  const run = async (nsapp: string, pve: string, kernel: string, failed: string | null) => {
    const id = `iss-${++n}`;
    const fields = {
      payload_version: 2,
      random_id: id,
      execution_id: id,
      type: "lxc",
      nsapp,
      ct_type: 1,
      disk_size: 8,
      core_count: 2,
      ram_size: 2048,
      os_type: "debian",
      os_version: "13",
      pve_version: pve,
      kernel_version: kernel,
      method: "default",
      arch: "amd64",
      platform: "pve",
      repo_source: "ProxmoxVE",
    };
    expect((await t.post("/telemetry", { ...fields, status: "installing" })).status).toBeLessThan(300);
    const final =
      failed === null
        ? { status: "success", exit_code: 0 }
        : {
            status: "failed",
            exit_code: failed === APT_ERROR ? 100 : 22,
            error_category: failed === APT_ERROR ? "dependency" : "network",
            error: failed,
          };
    expect((await t.post("/telemetry", { ...fields, ...final })).status).toBeLessThan(300);
  };
  for (let i = 0; i < 30; i++) await run("jellyfin", "9.0.9", "6.14.8-2-pve", i < 24 ? APT_ERROR : null);
  for (let i = 0; i < 30; i++) await run("jellyfin", "8.4.1", "6.8.12-9-pve", i < 2 ? APT_ERROR : null);
  for (let i = 0; i < 8; i++) await run("docker", "8.4.1", "6.8.12-9-pve", CURL_ERROR);
  const errors = (await t.get("/api/stats/errors")).body as {
    signatures: { id: string; count: number; apps: string[]; issue: unknown }[];
  };
  const apt = errors.signatures.find((s) => s.apps.includes("jellyfin"))!;
  const curl = errors.signatures.find((s) => s.apps.includes("docker"))!;
  expect([apt.count, curl.count]).toEqual([26, 8]);
  const admin = {
    preview: async (sig: string, query = "") => record(await t.get(`/api/admin/issues/${sig}${query}`, auth)),
    send: async (sig: string, body?: object, query = "") =>
      record(await t.post(`/api/admin/issues/${sig}${query}`, body === undefined ? "" : body, auth)),
    links: async () => record(await t.get("/api/admin/issues", auth)),
    forget: async (sig: string) => record(await t.call("DELETE", `/api/admin/issues/${sig}`, auth)),
  };
  return { t, fake, apt: apt.id, curl: curl.id, admin };
}

const posts = (fake: FakeTracker) => fake.requests.filter((r) => r.method === "POST");

for (const [kind, fakeKind, name] of [
  ["github", "github", "GitHub"],
  ["gitea", "gitea", "Gitea"],
  ["forgejo", "gitea", "Forgejo"],
] as const) {
  describe(`${name}`, () => {
    test("preview: the issue prefilled from the signature, nothing written, nothing opened", async () => {
      const { t, fake, apt, admin } = await setup(fakeKind, kind);
      const res = await admin.preview(apt, "?nsapp=jellyfin");
      expect(res.status).toBe(200);
      const p = res.body as {
        tracker: { kind: string; repo: string; api_url: string };
        link: unknown;
        existing: unknown;
        issue: { title: string; body: string; labels: string[] };
      };
      expect(p.tracker).toMatchObject({ kind, repo: `${OWNER}/${REPO}` });
      expect([p.link, p.existing]).toEqual([null, null]);
      expect(p.issue.title).toBe(`jellyfin: exit 100, ${explainExitCode(100)}`);
      const body = p.issue.body;
      // App, exit code and category, counts, first and last seen, spread, drivers, sample, marker.
      expect(body).toContain("| App | `jellyfin` |");
      expect(body).toMatch(/\| Exit code \(category\) \| 100 .* \[dependency\] × 26 \|/);
      expect(body).toMatch(
        /\| Failures with this signature \| 26 of 26 \(100%\) failures of `jellyfin` from 2026-05-02 to 2026-06-01 \|/,
      );
      expect(body).toMatch(/\| First \/ last seen \| 2026-06-01 12:00 UTC \/ 2026-06-01 12:00 UTC \|/);
      expect(body).toContain("| PVE version | `9.0.9` × 24, `8.4.1` × 2 |");
      expect(body).toContain("| OS | `debian 13` × 26 |");
      expect(body).toContain("| Kernel | `6.14.8-2-pve` × 24, `6.8.12-9-pve` × 2 |");
      expect(body).toMatch(
        /- \d+% of failures on (pve_version `9\.0\.9`|kernel_version `6\.14\.8-2-pve`), which carries 50% of the runs/,
      );
      expect(body).toContain("### Sample error (newest, masked)");
      expect(body).toContain("http://<credentials>@<ipv4>/debian");
      expect(body).toContain("<email>");
      expect(body).toContain("api_key=<masked>");
      for (const secret of ["hunter2", "10.20.30.40", "root@homelab", "akiaexamplekey99"])
        expect(body.toLowerCase()).not.toContain(secret);
      // Without the app filter: every app's failures are the scope.
      const all = ((await admin.preview(apt)).body as { issue: { body: string } }).issue.body;
      expect(all).toMatch(
        /\| Failures with this signature \| 26 of 34 \(76%\) failures from 2026-05-02 to 2026-06-01 \|/,
      );
      expect(all).toContain("| App | `jellyfin` × 26 |");
      expect(body).toContain(`<!-- ${issueMarker(apt)} -->`);
      expect(body).toContain(`https://stats.example.org/installs?signature=${apt}`);
      expect(p.issue.labels).toEqual(["bug", "telemetry", "triage-later"]);
      // Only a search went out; nothing was opened or stored.
      expect(posts(fake!)).toEqual([]);
      expect(fake!.requests.every((r) => r.method === "GET")).toBe(true);
      expect(await t.store.issueLinks()).toEqual([]);
    });

    test("send opens the issue once and links it; a second send finds the link, a forgotten link is found in the tracker", async () => {
      const { t, fake, apt, admin } = await setup(fakeKind, kind);
      const first = await admin.send(apt, undefined, "?nsapp=jellyfin");
      expect(first.status).toBe(201);
      const sent = first.body as {
        result: string;
        link: { number: number; url: string; how: string; tracker: string; repo: string };
        labels_left_out: string[];
      };
      expect(sent.result).toBe("created");
      expect(sent.link).toMatchObject({
        number: 1,
        how: "created",
        tracker: kind,
        repo: `${OWNER}/${REPO}`,
        url: `${fake!.url}/${OWNER}/${REPO}/issues/1`,
      });
      const [created] = posts(fake!);
      expect(created!.path).toBe(
        kind === "github" ? `/repos/${OWNER}/${REPO}/issues` : `/api/v1/repos/${OWNER}/${REPO}/issues`,
      );
      expect(created!.authorization).toBe(kind === "github" ? `Bearer ${TOKEN}` : `token ${TOKEN}`);
      expect(created!.userAgent).toStartWith("installstats/");
      expect(carriesMarker(String(created!.body!.body), apt)).toBe(true);
      expect(String(created!.body!.title)).toStartWith("jellyfin: ");
      // GitHub takes names; Gitea and Forgejo ids, the unknown name left out and said so.
      if (kind === "github") {
        expect(created!.body!.labels).toEqual(["bug", "telemetry", "triage-later"]);
        expect(sent.labels_left_out).toEqual([]);
      } else {
        expect(created!.body!.labels).toEqual([11, 12]);
        expect(sent.labels_left_out).toEqual(["triage-later"]);
      }
      // The link is kept, listed, and shown with the signature to every reader.
      expect(((await admin.links()).body as { links: unknown[] }).links).toEqual([
        expect.objectContaining({ signature: apt, number: 1, how: "created" }),
      ]);
      const errors = (await t.get("/api/stats/errors")).body as { signatures: { id: string; issue: unknown }[] };
      expect(errors.signatures.find((s) => s.id === apt)!.issue).toEqual({
        tracker: kind,
        repo: `${OWNER}/${REPO}`,
        number: 1,
        url: sent.link.url,
      });
      expect(((await admin.preview(apt)).body as { link: { number: number } }).link.number).toBe(1);

      // Again: the stored link, no request to the tracker at all.
      const before = fake!.requests.length;
      const second = await admin.send(apt);
      expect(second.status).toBe(200);
      expect(second.body).toMatchObject({ result: "linked", link: { number: 1 } });
      expect(fake!.requests.length).toBe(before);

      // Forgotten here (say, the database was restored): the tracker still has it, by its marker.
      expect((await admin.forget(apt)).body).toEqual({ signature: apt, forgotten: true });
      expect((await admin.forget(apt)).status).toBe(404);
      const preview = (await admin.preview(apt)).body as { link: unknown; existing: { number: number } };
      expect(preview).toMatchObject({ link: null, existing: { number: 1 } });
      const third = await admin.send(apt);
      expect(third.status).toBe(200);
      expect(third.body).toMatchObject({ result: "found", link: { number: 1, how: "found" } });
      expect(posts(fake!)).toHaveLength(1);
      expect(fake!.issues).toHaveLength(1);
    });

    test("an issue opened by hand naming the signature is linked, not opened again; one merely mentioning other words is not", async () => {
      const { fake, curl, admin } = await setup(fakeKind, kind);
      // Hits the loose search must not take: a pull request naming the id, an issue with a longer hex word.
      fake!.place({ title: "docker fails", body: `see ${curl}ff`, state: "open" });
      fake!.place({ title: "fix docker", body: `fixes signature ${curl}`, pull: true });
      const byHand = fake!.place({
        title: "docker: curl 404",
        body: `Telemetry signature ${curl}, reported by hand`,
        state: "closed",
      });
      const preview = (await admin.preview(curl)).body as { existing: { number: number; state: string } };
      expect(preview.existing).toMatchObject({ number: byHand, state: "closed" });
      const sent = await admin.send(curl);
      expect(sent.status).toBe(200);
      expect(sent.body).toMatchObject({ result: "found", link: { number: byHand, how: "found" } });
      expect(posts(fake!)).toEqual([]);
    });

    test("the admin's edits are sent, the marker kept", async () => {
      const { fake, apt, admin } = await setup(fakeKind, kind);
      const res = await admin.send(apt, {
        title: "Jellyfin APT failure on PVE 9.0.9",
        body: "Edited by hand, marker removed.",
        labels: ["bug"],
      });
      expect(res.status).toBe(201);
      const [created] = posts(fake!);
      expect(created!.body!.title).toBe("Jellyfin APT failure on PVE 9.0.9");
      expect(String(created!.body!.body)).toStartWith("Edited by hand, marker removed.");
      expect(String(created!.body!.body)).toContain(issueMarker(apt));
      expect(created!.body!.labels).toEqual(kind === "github" ? ["bug"] : [11]);
    });

    test("the tracker's errors are a 502 naming its answer; the claim is released, so a later send works", async () => {
      const { t, fake, apt, admin } = await setup(fakeKind, kind);
      // The tracker refusing the token, and echoing it back: the answer names the refusal, not the token.
      fake!.fail(401, JSON.stringify({ message: `Bad credentials for token ${TOKEN}` }));
      const refused = await admin.send(apt);
      expect(refused.status).toBe(502);
      expect(refused.body).toEqual({
        error: "tracker_error",
        message: expect.stringMatching(
          new RegExp(`^${name} answered 401( Unauthorized)?: Bad credentials for token \\*\\*\\* \\(GET `),
        ),
      });
      // A server error without JSON, then an answer that is not JSON.
      fake!.fail(503, "<html>upstream down</html>");
      expect((await admin.send(apt)).body).toMatchObject({
        error: "tracker_error",
        message: expect.stringContaining(`${name} answered 503`),
      });
      expect((await admin.preview(apt)).status).toBe(200);
      fake!.fail(200, "not json");
      expect((await admin.preview(apt)).body).toMatchObject({
        error: "tracker_error",
        message: expect.stringContaining("not JSON"),
      });
      // Opening fails after the search: nothing linked, and the claim released (the next send is not kept waiting).
      fake!.failCreate(500, JSON.stringify({ message: "Internal Server Error" }));
      const broken = await admin.send(apt);
      expect(broken.status).toBe(502);
      expect(broken.body).toMatchObject({
        error: "tracker_error",
        message: expect.stringContaining(`${name} answered 500 Internal Server Error: Internal Server Error (POST `),
      });
      expect(await t.store.issueLinks()).toEqual([]);
      expect((await admin.send(apt)).status).toBe(201);
    });

    test("an unreachable tracker is a 502 naming it", async () => {
      const { apt, admin, fake } = await setup(fakeKind, kind);
      fake!.stop();
      const res = await admin.send(apt);
      expect(res.status).toBe(502);
      expect(res.body).toMatchObject({
        error: "tracker_error",
        message: expect.stringMatching(new RegExp(`^${name} at 127\\.0\\.0\\.1:\\d+ could not be reached`)),
      });
    });
  });
}

describe("access, configuration and refusals", () => {
  test("the admin token is needed: none or a wrong one is 401, a server without one answers 403", async () => {
    const { t, apt } = await setup("github", "github");
    for (const [method, path] of [
      ["GET", "/api/admin/issues"],
      ["GET", `/api/admin/issues/${apt}`],
      ["POST", `/api/admin/issues/${apt}`],
      ["DELETE", `/api/admin/issues/${apt}`],
    ] as const) {
      expect((await t.call(method, path)).status).toBe(401);
      expect((await t.call(method, path, { authorization: "Bearer wrong" })).status).toBe(401);
    }
    const off = await setup("github", "github", { adminToken: null });
    const res = await off.t.call("POST", `/api/admin/issues/${off.apt}`, auth);
    expect(res.status).toBe(403);
    expect(posts(off.fake!)).toEqual([]);
  });

  test("without a tracker the preview still shows the text; a send says how to configure one", async () => {
    const { apt, admin } = await setup(null, null);
    const preview = await admin.preview(apt);
    expect(preview.status).toBe(200);
    expect(preview.body).toMatchObject({
      tracker: null,
      link: null,
      existing: null,
      issue: { title: expect.stringContaining("jellyfin") },
    });
    const sent = await admin.send(apt);
    expect(sent.status).toBe(404);
    expect(sent.body).toEqual({ error: "not_found", message: expect.stringContaining("INSTALLSTATS_TRACKER") });
    expect(((await admin.links()).body as { tracker: unknown }).tracker).toBeNull();
  });

  test("an unknown signature is 404, a malformed one 400; bad bodies and parameters are refused before the tracker is asked", async () => {
    const { fake, admin } = await setup("gitea", "gitea");
    expect(await admin.send("ffffffffffffffff")).toMatchObject({
      status: 404,
      body: { error: "not_found", field: "signature" },
    });
    expect(await admin.preview("ffffffffffffffff")).toMatchObject({
      status: 404,
      body: { error: "not_found", field: "signature" },
    });
    expect(await admin.preview("not-a-signature")).toMatchObject({
      status: 400,
      body: { error: "invalid_field", field: "signature" },
    });
    expect(await admin.send("00112233aabbccdd", { title: "" })).toMatchObject({
      status: 422,
      body: { error: "invalid_field" },
    });
    // A field the body does not take (a misspelt title) is named, not dropped for the default.
    expect(await admin.send("00112233aabbccdd", { titel: "Fails on arm64" })).toMatchObject({
      status: 422,
      body: { error: "invalid_field", field: "titel" },
    });
    expect(await admin.preview("00112233aabbccdd", "?days=0")).toMatchObject({ status: 400, body: { field: "days" } });
    expect(await admin.preview("00112233aabbccdd", "?stauts=failed")).toMatchObject({ status: 400 });
    expect(fake!.requests).toEqual([]);
  });

  test("two sends at once open one issue: the second waits for nothing and says a send is under way, then finds the link", async () => {
    const { fake, apt, admin } = await setup("github", "github");
    fake!.searchDelayMs = 300;
    const [a, b] = await Promise.all([admin.send(apt), Bun.sleep(50).then(() => admin.send(apt))]);
    expect([a.status, b.status].sort()).toEqual([201, 409]);
    expect((a.status === 409 ? a : b).body).toEqual({
      error: "conflict",
      message: expect.stringContaining("another send for this signature is under way"),
    });
    expect(posts(fake!)).toHaveLength(1);
    expect(await admin.send(apt)).toMatchObject({ status: 200, body: { result: "linked" } });
    expect(fake!.issues).toHaveLength(1);
  });

  test("the token from a file is read at each use (a rotated secret is picked up); one that cannot be read stops the start", async () => {
    const dir = tempDir("installstats-issues-");
    const file = join(dir, "token");
    writeFileSync(file, "old-token\n");
    const { fake, apt, admin } = await setup("gitea", "forgejo", { trackerToken: null, trackerTokenFile: file });
    const refused = await admin.send(apt);
    expect(refused).toMatchObject({ status: 502, body: { message: expect.stringContaining("Forgejo answered 401") } });
    writeFileSync(file, `${TOKEN}\n`);
    expect((await admin.send(apt)).status).toBe(201);
    expect(fake!.requests.at(-1)!.authorization).toBe(`token ${TOKEN}`);
    await expect(
      testApp({
        tracker: "gitea",
        trackerUrl: "http://127.0.0.1:9",
        trackerRepo: "a/b",
        trackerTokenFile: join(dir, "missing"),
      }),
    ).rejects.toThrow(ConfigError);
  });

  test("the tracker's token is in no answer and no log line of any test here", async () => {
    const { t, apt, admin, fake } = await setup("github", "github");
    fake!.fail(401, JSON.stringify({ message: `token ${TOKEN} revoked` }));
    seen.push(JSON.stringify((await admin.send(apt)).body));
    seen.push(JSON.stringify((await admin.send(apt)).body));
    seen.push(JSON.stringify((await admin.links()).body), ...t.logLines);
    expect(seen.length).toBeGreaterThan(40);
    for (const text of seen) expect(text).not.toContain(TOKEN);
    for (const line of t.logLines) expect(line).not.toContain(TOKEN);
  });
});

describe("configuration", () => {
  test("the tracker's settings: each missing part named with its fix; the token from the environment only", () => {
    const base = {
      ...defaults,
      tracker: "gitea" as const,
      trackerRepo: "o/r",
      trackerUrl: "https://codeberg.org",
      trackerToken: "x",
    };
    expect(trackerOf(defaults)).toBeNull();
    expect(trackerOf(base)).toEqual({
      kind: "gitea",
      apiUrl: "https://codeberg.org/api/v1",
      repo: "o/r",
      token: { env: "x" },
      labels: [],
    });
    expect(trackerOf({ ...base, tracker: "github", trackerUrl: null })!.apiUrl).toBe("https://api.github.com");
    expect(trackerOf({ ...base, trackerTokenFile: "/run/credentials/t" })!.token).toEqual({
      file: "/run/credentials/t",
    });
    expect(() => trackerOf({ ...base, trackerRepo: null })).toThrow(/--tracker-repo/);
    expect(() => trackerOf({ ...base, trackerUrl: null })).toThrow(/--tracker-url .*codeberg/);
    expect(() => trackerOf({ ...base, trackerToken: null })).toThrow(/INSTALLSTATS_TRACKER_TOKEN/);
    // The token is never taken from the command line (where `ps` shows it), only from the environment.
    expect(loadConfig({ "tracker-token": "from-flag" }, {}).trackerToken).toBeNull();
    expect(loadConfig({}, { INSTALLSTATS_TRACKER_TOKEN: "from-env" }).trackerToken).toBe("from-env");
    expect(
      loadConfig(
        { tracker: "Forgejo", "tracker-repo": "community-scripts/ProxmoxVE", "tracker-labels": "bug, telemetry" },
        {},
      ),
    ).toMatchObject({
      tracker: "forgejo",
      trackerRepo: "community-scripts/ProxmoxVE",
      trackerLabels: ["bug", "telemetry"],
    });
    expect(() => loadConfig({ tracker: "jira" }, {})).toThrow(/--tracker: must be one of github, gitea, forgejo/);
    expect(() => loadConfig({ "tracker-repo": "no-slash" }, {})).toThrow(/owner\/name/);
    const help = settingsHelp(["trackerToken", "trackerTokenFile"]);
    expect(help.map((h) => h.flag)).toEqual(["INSTALLSTATS_TRACKER_TOKEN", "--tracker-token-file"]);
    expect(help[0]!.text).toContain("environment only");
  });
});

describe("the issue's text", () => {
  test("the sample is masked: addresses, credentials, e-mails, keys and tokens, home directories; cut to its head", () => {
    const masked = maskSample(
      "curl https://bob:pa55@repo.example.org/x -H 'Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.abc' from 192.168.1.20 and fe80::1ff:fe23:4567:890a\n" +
        "password=hunter2 token: ghp_abcdefghijklmnop mac 00:1A:2b:3C:4d:5E in /home/alice/.cache, mail alice@example.com",
    );
    expect(masked).toBe(
      "curl https://<credentials>@repo.example.org/x -H 'Authorization: Bearer <masked>' from <ipv4> and <ipv6>\n" +
        "password=<masked> token: <masked> mac <mac> in /home/<user>/.cache, mail <email>",
    );
    const long = maskSample(Array.from({ length: 200 }, (_, i) => `line ${i}`).join("\n"));
    expect(long.split("\n")).toHaveLength(60);
  });

  test("what clients sent cannot act in the tracker: no mention, no reference, no broken table or block", async () => {
    const { t, admin } = await setup(null, null);
    const app = "x`|@maintainers #1";
    const id = "evil-1";
    const fields = {
      payload_version: 2,
      random_id: id,
      execution_id: id,
      type: "lxc",
      nsapp: app,
      pve_version: "9.0.9 | @here",
      os_type: "debian",
      os_version: "13",
    };
    await t.post("/telemetry", { ...fields, status: "installing" });
    await t.post("/telemetry", {
      ...fields,
      status: "failed",
      exit_code: 1,
      error: "boom ```\n@everyone see #42\n```` end",
    });
    const sig = (
      (await t.get(`/api/stats/errors?nsapp=${encodeURIComponent(app)}`)).body as { signatures: { id: string }[] }
    ).signatures[0]!.id;
    const body = ((await admin.preview(sig)).body as { issue: { body: string } }).issue.body;
    // Inline code fenced longer than the backtick inside, the pipe escaped: one cell.
    expect(body).toContain("| App | ``x`\\|@maintainers #1`` × 1 |");
    expect(body).toContain("| PVE version | `9.0.9 \\| @here` × 1 |");
    // The sample's fence is longer than the longest run of backticks inside it.
    expect(body).toContain("`````text\nboom ```\n@everyone see #42\n```` end\n`````");
    // Outside code, no client text at all: every line with an @ or # is inside code.
    const outside = body
      .replace(/(`{3,})text\n[\s\S]*?\n\1(?!`)/g, "")
      .replace(/(?<!`)(`+)(?!`)([\s\S]*?[^`])\1(?!`)/g, "");
    expect(outside).toContain("| App |  × 1 |");
    expect(outside).not.toMatch(/@\w|#\d/);
  });
});
