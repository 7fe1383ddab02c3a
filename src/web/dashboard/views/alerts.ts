// Alerts: the rules of the alerts file with where each stands (firing and about what, silenced,
// last evaluated), the channels, and the history (what fired, when, when it resolved, where its
// messages went). Reading needs what every view needs; a test send and silences need the admin
// token, asked for here and kept for this tab only (as the admin view does).
import { adminToken, alertsApi, ApiError, saveAdminToken, type AlertEvent, type AlertsListing } from "../api.ts";
import { h, replace } from "../dom.ts";
import { instantUtc } from "../format.ts";
import type { DashState } from "../state.ts";
import type { ViewContext, ViewRender } from "../view.ts";
import { emptyState, panel } from "../widgets.ts";

const PAGE = 50;
const SILENCES: [string, string][] = [
  ["1h", "1 hour"],
  ["2h", "2 hours"],
  ["8h", "8 hours"],
  ["1d", "1 day"],
  ["7d", "7 days"],
];

export const alertsView: ViewRender = async (s, ctx) => {
  const params = new URLSearchParams({ limit: String(PAGE) });
  if (s.rule) params.set("rule", s.rule);
  if (s.cursor) params.set("before", s.cursor);
  const [listing, history] = await Promise.all([alertsApi.list(ctx.signal), alertsApi.history(params, ctx.signal)]);
  if (!listing.enabled) return { title: "Alerts", node: alertsOff() };
  const admin = adminToken() !== null;
  const node = h(
    "div",
    { class: "view alerts" },
    h("div", { class: "app-head" }, h("h2", {}, "Alerts"), admin ? forgetButton(ctx) : null),
    h(
      "p",
      { class: "muted" },
      `Rules from the server's alerts file, evaluated every ${listing.evaluate_every_s ?? "?"} s from the rollups. A firing is sent once; a resolve when it clears. Times in UTC.`,
    ),
    admin ? null : adminForm(ctx),
    rulesPanel(listing, ctx, admin),
    channelsPanel(listing, admin),
    historyPanel(history.events, history.next_before, s, ctx),
  );
  const firing = listing.rules.filter((r) => r.status === "firing").length;
  return { title: firing > 0 ? `Alerts (${firing} firing)` : "Alerts", node };
};

function alertsOff(): HTMLElement {
  return h(
    "div",
    { class: "view" },
    panel(
      "Alerts",
      h(
        "div",
        { id: "alerts-off" },
        h("p", {}, "Alerts are off on this server: it runs without an alerts file."),
        h(
          "p",
          { class: "muted" },
          "Write rules and channels in a TOML file (docs/alerts.md has a complete example), check it with installstats alerts check <file>, and start the server with --alerts <file> (or INSTALLSTATS_ALERTS).",
        ),
      ),
      { wide: true },
    ),
  );
}

const statusChip = (status: string, silenced: boolean): HTMLElement =>
  h(
    "span",
    { class: `chip alert-${status}`, "data-status": status },
    status === "pending" ? "not evaluated yet" : status,
    silenced ? " · silenced" : "",
  );

function rulesPanel(listing: AlertsListing, ctx: ViewContext, admin: boolean): HTMLElement {
  const rows = listing.rules.map((r) =>
    h(
      "tr",
      { "data-rule": r.id, "data-status": r.status },
      h(
        "td",
        {},
        h("a", { href: ctx.href({ rule: r.id }), "data-nav": true, class: "mono" }, r.id),
        h("div", { class: "muted small" }, r.description),
      ),
      h(
        "td",
        {},
        statusChip(r.status, r.silenced_until !== null),
        r.silenced_until
          ? h(
              "div",
              { class: "muted small", "data-silenced-until": r.silenced_until },
              `silenced until ${instantUtc(r.silenced_until)}`,
            )
          : null,
        ...r.firing.map((f) =>
          h(
            "div",
            { class: "firing-item small" },
            f.title ?? f.subject,
            h("span", { class: "muted" }, ` since ${instantUtc(f.since)}${f.notified ? "" : " (not sent yet)"}`),
          ),
        ),
      ),
      h(
        "td",
        { class: "small" },
        r.evaluated_at ? h("time", { datetime: r.evaluated_at }, instantUtc(r.evaluated_at)) : "–",
        r.summary ? h("div", { class: "muted" }, r.summary) : null,
      ),
      h(
        "td",
        { class: "small" },
        r.send_to.length > 0 ? r.send_to.join(", ") : h("span", { class: "muted" }, "dashboard only"),
      ),
      admin ? h("td", {}, silenceControl(r.id, r.silenced_until !== null, ctx)) : null,
    ),
  );
  const head = h(
    "tr",
    {},
    h("th", {}, "Rule"),
    h("th", {}, "State"),
    h("th", {}, "Last evaluated"),
    h("th", {}, "Sends to"),
    admin ? h("th", {}, "Silence") : null,
  );
  return panel(
    "Rules",
    listing.rules.length === 0
      ? emptyState("The alerts file defines no rules.")
      : h(
          "div",
          { class: "table-wrap" },
          h("table", { class: "alert-rules" }, h("thead", {}, head), h("tbody", {}, ...rows)),
        ),
    { wide: true, id: "alert-rules" },
  );
}

function silenceControl(rule: string, silenced: boolean, ctx: ViewContext): HTMLElement {
  const said = h("span", { class: "muted small", role: "status" });
  const run = async (button: HTMLButtonElement, action: () => Promise<unknown>) => {
    button.disabled = true;
    try {
      await action();
      ctx.reload();
    } catch (e) {
      replace(said, h("span", { class: "error-box" }, refusal(e)));
      button.disabled = false;
    }
  };
  if (silenced) {
    const lift = h("button", { type: "button", class: "unsilence", "data-rule": rule }, "Unsilence");
    lift.addEventListener("click", () => void run(lift, () => alertsApi.unsilence(rule)));
    return h("div", { class: "inline-form" }, lift, said);
  }
  const choice = h(
    "select",
    { "aria-label": `silence ${rule} for`, class: "silence-for" },
    ...SILENCES.map(([value, text]) => h("option", { value }, text)),
  );
  const go = h("button", { type: "button", class: "silence", "data-rule": rule }, "Silence");
  go.addEventListener("click", () => void run(go, () => alertsApi.silence(rule, choice.value)));
  return h("div", { class: "inline-form" }, choice, go, said);
}

const refusal = (e: unknown): string =>
  e instanceof ApiError && e.status === 401
    ? "The server refused the admin token."
    : e instanceof ApiError && e.status === 403
      ? e.message
      : `Failed: ${e instanceof Error ? e.message : String(e)}`;

function channelsPanel(listing: AlertsListing, admin: boolean): HTMLElement {
  const rows = listing.channels.map((c) => {
    const result = h("span", { class: "small test-result", role: "status", "aria-live": "polite" });
    const button = admin
      ? h("button", { type: "button", class: "test-channel", "data-channel": c.name }, "Send a test")
      : null;
    button?.addEventListener("click", async () => {
      button.disabled = true;
      replace(result, h("span", { class: "muted" }, "Sending…"));
      try {
        const r = await alertsApi.test(c.name);
        replace(
          result,
          r.ok
            ? h("span", { class: "ok", "data-ok": "true" }, "Delivered")
            : h("span", { class: "error-box", "data-ok": "false" }, `Not delivered: ${r.error}`),
        );
      } catch (e) {
        replace(result, h("span", { class: "error-box" }, refusal(e)));
      } finally {
        button.disabled = false;
      }
    });
    return h(
      "tr",
      { "data-channel": c.name },
      h("td", { class: "mono" }, c.name),
      h("td", {}, c.type),
      h("td", { class: "mono small" }, c.target),
      admin ? h("td", {}, button, " ", result) : null,
    );
  });
  return panel(
    "Channels",
    listing.channels.length === 0
      ? emptyState("The alerts file defines no channels: rules are kept to this page.")
      : h(
          "div",
          { class: "table-wrap" },
          h(
            "table",
            { class: "alert-channels" },
            h(
              "thead",
              {},
              h(
                "tr",
                {},
                h("th", {}, "Channel"),
                h("th", {}, "Kind"),
                h("th", {}, "Sends to (secrets masked)"),
                admin ? h("th", {}, "Test") : null,
              ),
            ),
            h("tbody", {}, ...rows),
          ),
        ),
    { wide: true, id: "alert-channels" },
  );
}

const HELD: Record<string, string> = {
  cooldown: "not sent: within the rule's cooldown",
  silenced: "not sent: the rule was silenced",
  unsent: "not sent: its firing was never sent",
};

function eventItem(e: AlertEvent): HTMLElement {
  // The message's link names the public address; here it opens on this server.
  const url = new URL(e.link);
  const deliveries = e.deliveries.map((d) =>
    h(
      "span",
      {
        class: `chip delivery-${d.state}`,
        "data-channel": d.channel,
        "data-state": d.state,
        title: d.last_error ?? "",
      },
      `${d.channel}: ${d.state === "sent" ? "sent" : d.state === "failed" ? "failed" : d.attempts === 0 ? "queued" : `retrying (${d.attempts} tries)`}`,
    ),
  );
  return h(
    "li",
    { class: "alert-event", "data-id": e.id, "data-status": e.status, "data-rule": e.rule },
    h(
      "div",
      { class: "row" },
      h("time", { datetime: e.at }, instantUtc(e.at)),
      h("span", { class: `chip alert-${e.status}` }, e.status),
      h("span", { class: "mono" }, e.rule),
      e.held_back ? h("span", { class: "muted", "data-held-back": e.held_back }, HELD[e.held_back]) : null,
      e.notified_at && e.notified_at !== e.at
        ? h("span", { class: "muted" }, `sent ${instantUtc(e.notified_at)}`)
        : null,
    ),
    h(
      "p",
      { class: "message" },
      e.title,
      " ",
      h("a", { href: url.pathname + url.search, "data-nav": true, class: "small" }, "Open the view"),
    ),
    h("details", {}, h("summary", { class: "small" }, "Message"), h("pre", { class: "raw-body" }, e.text)),
    deliveries.length > 0
      ? h(
          "div",
          { class: "deliveries" },
          ...deliveries,
          ...e.deliveries
            .filter((d) => d.last_error)
            .map((d) => h("div", { class: "muted small" }, `${d.channel}: ${d.last_error}`)),
        )
      : null,
  );
}

function historyPanel(events: AlertEvent[], nextBefore: number | null, s: DashState, ctx: ViewContext): HTMLElement {
  return panel(
    s.rule ? `History: ${s.rule}` : "History",
    h(
      "div",
      {},
      s.rule
        ? h("p", {}, h("a", { href: ctx.href({ rule: null }), "data-nav": true, id: "all-rules" }, "← Every rule"))
        : null,
      events.length === 0
        ? emptyState(s.cursor ? "No older entries." : "Nothing has fired yet.")
        : h("ol", { class: "alert-history" }, ...events.map(eventItem)),
      h(
        "nav",
        { class: "pager", "aria-label": "pages" },
        s.cursor ? h("a", { href: ctx.href({ cursor: null }), "data-nav": true }, "← Newest") : h("span", {}),
        h("span", { class: "muted" }, `${events.length} shown, newest first`),
        nextBefore !== null
          ? h(
              "a",
              { href: ctx.href({ cursor: String(nextBefore) }), "data-nav": true, rel: "next", id: "older-alerts" },
              "Older →",
            )
          : h("span", {}),
      ),
    ),
    { wide: true, id: "alert-history" },
  );
}

function forgetButton(ctx: ViewContext): HTMLElement {
  const b = h("button", { type: "button", id: "forget-admin-token" }, "Forget the admin token");
  b.addEventListener("click", () => {
    saveAdminToken(null);
    ctx.reload();
  });
  return b;
}

/** Silences and test sends need the admin token: a small form, the rest of the view stays readable. */
function adminForm(ctx: ViewContext): HTMLElement {
  const input = h("input", {
    type: "password",
    id: "admin-token",
    autocomplete: "off",
    required: true,
    "aria-label": "Admin token",
  });
  return h(
    "form",
    {
      class: "inline-form alerts-admin",
      id: "alerts-admin-form",
      onsubmit: ((e: Event) => {
        e.preventDefault();
        saveAdminToken(input.value.trim() || null);
        ctx.reload();
      }) as EventListener,
    },
    h("span", { class: "muted" }, "Silences and test sends need the admin token (kept in this tab only):"),
    input,
    h("button", { type: "submit" }, "Use it"),
  );
}
