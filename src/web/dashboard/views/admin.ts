// Admin: the rejected-reports log (every request not applied exactly as sent, kept raw with its
// reason), page by page, and replay of the refused ones through the current parser. Behind the
// admin token, asked for here and kept for this tab only.
import { adminApi, adminToken, ApiError, saveAdminToken, type RejectedEntry, type ReplaySummary } from "../api.ts";
import { h, replace } from "../dom.ts";
import { count, instantUtc } from "../format.ts";
import type { DashState } from "../state.ts";
import type { ViewContext, ViewRender } from "../view.ts";
import { copyText, emptyState, panel } from "../widgets.ts";
import { REJECT_REASONS } from "../../../domain/rejection.ts";

const PAGE = 50;

/** What each reason means, in the log's words. */
const REASON_TEXT: Record<(typeof REJECT_REASONS)[number], string> = {
  invalid_json: "not JSON (refused, 400)",
  invalid_field: "a field out of its rules (refused, 422)",
  already_final: "an update to a finished install (refused, 409)",
  repaired: "repaired, then applied",
  payload_too_large: "body over the size limit (refused, 413; no body kept)",
  unknown_path: "posted to a path that is not an ingestion endpoint (404)",
};

/** Reasons the replay takes (src/maintenance/replay.ts REPLAYABLE): the refused bodies a newer parser may read. */
const REPLAYABLE = ["invalid_json", "invalid_field"] as const;

export const adminView: ViewRender = async (s, ctx) => {
  // Without a token the answer is known (401, or 403 when the admin API is off): ask first.
  if (adminToken() === null) return { title: "Admin", node: adminTokenForm(ctx, false, LOG_NEEDS) };
  const params = new URLSearchParams({ limit: String(PAGE) });
  if (s.reason) params.set("reason", s.reason);
  if (s.cursor) params.set("before", s.cursor);
  let entries: RejectedEntry[];
  try {
    entries = (await adminApi.rejected(params, ctx.signal)).entries;
  } catch (e) {
    if (e instanceof ApiError && e.status === 401)
      return { title: "Admin", node: adminTokenForm(ctx, adminToken() !== null, LOG_NEEDS) };
    if (e instanceof ApiError && e.status === 403)
      return { title: "Admin", node: adminOff(e.message, "the rejected-reports log cannot be shown here") };
    throw e;
  }
  const older = entries.length === PAGE ? ctx.href({ cursor: String(entries.at(-1)!.id) }) : null;
  const node = h(
    "div",
    { class: "view admin" },
    adminHead("Rejected reports", ctx),
    h(
      "p",
      { class: "muted" },
      "Every request that was not applied exactly as sent is kept here raw, with its reason: refused bodies, updates to finished installs, repaired reports and posts to unknown paths. Times in UTC.",
    ),
    replayPanel(ctx),
    panel(
      s.reason ? `Log: ${s.reason}` : "Log",
      h(
        "div",
        {},
        reasonChoice(s, ctx),
        entries.length === 0
          ? emptyState(s.cursor ? "No older entries." : "No rejected reports.")
          : h("ol", { class: "rejected" }, ...entries.map(entry)),
        h(
          "nav",
          { class: "pager", "aria-label": "pages" },
          s.cursor ? h("a", { href: ctx.href({ cursor: null }), "data-nav": true }, "← Newest") : h("span", {}),
          h("span", { class: "muted" }, `${entries.length} shown, newest first`),
          older ? h("a", { href: older, "data-nav": true, id: "older-page", rel: "next" }, "Older →") : h("span", {}),
        ),
      ),
      { wide: true, id: "rejected-log" },
    ),
  );
  return { title: "Rejected reports", node };
};

function reasonChoice(s: DashState, ctx: ViewContext): HTMLElement {
  const link = (reason: string | null, text: string, title?: string) =>
    h(
      "a",
      {
        class: "seg",
        href: ctx.href({ reason }),
        "data-nav": true,
        "data-reason": reason ?? "all",
        title,
        "aria-current": s.reason === reason ? "true" : undefined,
      },
      text,
    );
  return h(
    "div",
    { class: "segments reasons", role: "group", "aria-label": "reason" },
    link(null, "All"),
    ...REJECT_REASONS.map((r) => link(r, r.replaceAll("_", " "), REASON_TEXT[r])),
  );
}

function entry(e: RejectedEntry): HTMLElement {
  const body = e.body ?? (e.body_base64 === null ? null : e.body_base64);
  const pre = h("pre", { class: "raw-body", tabindex: 0 }, body ?? "");
  const said = h("span", { class: "muted", role: "status" });
  const what = e.body_base64 !== null ? "Raw body (not UTF-8: base64)" : "Raw body";
  const size = `${count(e.body_size)} bytes${e.body_truncated ? `, only the first ${count(new TextEncoder().encode(body ?? "").length)} kept` : ""}`;
  return h(
    "li",
    { class: "rejected-entry", "data-id": e.id, "data-reason": e.reason },
    h(
      "div",
      { class: "row" },
      h("time", { datetime: e.received_at }, instantUtc(e.received_at)),
      h(
        "span",
        { class: `chip reason-${e.reason}`, title: REASON_TEXT[e.reason as keyof typeof REASON_TEXT] ?? e.reason },
        e.reason.replaceAll("_", " "),
      ),
      h("span", { class: "mono" }, e.endpoint),
      h("span", { class: "muted", title: "what the request was answered" }, `HTTP ${e.http_status}`),
      e.random_id ? h("span", { class: "muted mono", title: "random_id" }, e.random_id) : null,
      e.replay_result
        ? h(
            "span",
            { class: "chip replayed", title: e.replayed_at ? `replayed ${instantUtc(e.replayed_at)}` : "replayed" },
            `replay: ${e.replay_result}`,
          )
        : null,
    ),
    h(
      "p",
      { class: "message" },
      e.message,
      e.field && !e.message.includes(e.field)
        ? h("span", { class: "muted" }, " (field ", h("code", {}, e.field), ")")
        : null,
    ),
    body === null
      ? h("p", { class: "muted" }, `No body kept (${size}).`)
      : h(
          "details",
          {},
          h("summary", {}, `${what}, ${size}`),
          pre,
          h(
            "button",
            {
              type: "button",
              onclick: (() => {
                void copyText(body, pre).then((ok) => (said.textContent = ok ? "Copied" : "Selected: press Ctrl+C"));
              }) as EventListener,
            },
            "Copy body",
          ),
          said,
        ),
  );
}

/** The last replay's answer, shown again when the log is fetched anew after it. */
let lastReplay: ReplaySummary | null = null;

/** Replay: a dry run says what the current parser makes of the refused bodies; the replay writes those that now pass. */
function replayPanel(ctx: ViewContext): HTMLElement {
  const reason = h(
    "select",
    { id: "replay-reason", name: "reason" },
    h("option", { value: "" }, "invalid JSON and invalid fields"),
    ...REPLAYABLE.map((r) => h("option", { value: r }, r.replaceAll("_", " "))),
  );
  const result = h(
    "div",
    { class: "replay-result", id: "replay-result", role: "status", "aria-live": "polite" },
    lastReplay ? describe(lastReplay) : null,
  );
  const run = async (dryRun: boolean, button: HTMLButtonElement) => {
    const p = new URLSearchParams();
    if (reason.value) p.set("reason", reason.value);
    if (dryRun) p.set("dry_run", "true");
    button.disabled = true;
    replace(result, h("span", { class: "muted" }, dryRun ? "Checking…" : "Replaying…"));
    try {
      const summary = await adminApi.replay(p);
      lastReplay = summary;
      replace(result, describe(summary));
      // The log shows each entry's replay result.
      if (!dryRun) ctx.reload();
    } catch (e) {
      replace(
        result,
        h("span", { class: "error-box" }, `Replay failed: ${e instanceof Error ? e.message : String(e)}`),
      );
    } finally {
      button.disabled = false;
    }
  };
  const dry = h("button", { type: "button", id: "replay-dry" }, "Dry run");
  const real = h("button", { type: "button", id: "replay-run", class: "primary" }, "Replay");
  dry.addEventListener("click", () => void run(true, dry));
  real.addEventListener("click", () => void run(false, real));
  return panel(
    "Replay",
    h(
      "div",
      { class: "replay" },
      h(
        "p",
        { class: "muted" },
        "Runs refused bodies again through the current parser and field rules; those that pass are stored as if they had arrived then, and each entry is marked with what came of it. Repaired reports were applied already; updates to finished installs stay refused. A dry run writes nothing.",
      ),
      h("div", { class: "inline-form" }, h("label", { for: "replay-reason" }, "Reasons"), reason, dry, real),
      result,
    ),
    { wide: true, id: "replay" },
  );
}

function describe(s: ReplaySummary): HTMLElement {
  const results = Object.entries(s.results);
  return h(
    "p",
    { "data-tried": s.tried },
    h("strong", {}, s.dry_run ? "Dry run: " : "Replayed: "),
    `${count(s.tried)} ${s.tried === 1 ? "entry" : "entries"} tried`,
    results.length > 0 ? ` (${results.map(([k, n]) => `${k}: ${count(n)}`).join(", ")})` : "",
    s.skipped > 0 ? `; ${count(s.skipped)} replayed before, not tried again` : "",
    ".",
  );
}

/** A view's heading, with the button that forgets this tab's admin token. */
export function adminHead(title: string, ctx: ViewContext): HTMLElement {
  const forget = h("button", { type: "button", id: "forget-admin-token" }, "Forget the admin token");
  forget.addEventListener("click", () => {
    saveAdminToken(null);
    ctx.reload();
  });
  return h("div", { class: "app-head" }, h("h2", {}, title), forget);
}

const LOG_NEEDS = { what: "The rejected-reports log", submit: "Show the log" };

/** The admin API is off: what cannot be done, and how to turn it on. */
export function adminOff(message: string, consequence: string): HTMLElement {
  return h(
    "div",
    { class: "view" },
    panel(
      "Admin",
      h(
        "div",
        {},
        h("p", {}, `The admin API is off on this server, so ${consequence}.`),
        h("p", { class: "muted" }, message),
        h(
          "p",
          {},
          "Start the server with INSTALLSTATS_ADMIN_TOKEN set (in the environment or the service's EnvironmentFile) to turn it on.",
        ),
      ),
      { wide: true, id: "admin-off" },
    ),
  );
}

/** Asks for the admin token, for `needs.what`; kept in this tab only (sessionStorage). */
export function adminTokenForm(
  ctx: ViewContext,
  refused: boolean,
  needs: { what: string; submit: string },
): HTMLElement {
  const input = h("input", { type: "password", id: "admin-token", autocomplete: "off", required: true });
  return h(
    "form",
    {
      class: "view token-form",
      id: "admin-token-form",
      onsubmit: ((e: Event) => {
        e.preventDefault();
        saveAdminToken(input.value.trim() || null);
        ctx.reload();
      }) as EventListener,
    },
    h("p", {}, `${needs.what} needs the server's admin token (INSTALLSTATS_ADMIN_TOKEN).`),
    refused ? h("p", { class: "error-box", role: "alert" }, "The server refused that admin token.") : null,
    h("label", { for: "admin-token" }, "Admin token"),
    input,
    h("p", { class: "muted" }, "Kept in this browser tab only, until it is closed."),
    h("button", { type: "submit" }, needs.submit),
  );
}
