// Install log: every filter of /api/installs, newest or oldest first, cursor pages, and the
// details of one install with its full error text.
import { api, ApiError, type ExecutionRecord } from "../api.ts";
import { h } from "../dom.ts";
import { dateTime, duration, label } from "../format.ts";
import { apiParams, type DashState } from "../state.ts";
import type { ViewContext, ViewRender } from "../view.ts";
import { badge, emptyState, panel } from "../widgets.ts";

const PAGE = 50;

export const installs: ViewRender = async (s, ctx) => {
  const extra: Record<string, string | number> = { limit: PAGE, order: s.order };
  if (s.cursor) extra.cursor = s.cursor;
  if (s.signature) extra.signature = s.signature;
  const [page, detail] = await Promise.all([api.installs(apiParams(s, extra), ctx.signal), s.id ? loadInstall(s.id, ctx) : null]);
  const nextHref = page.next_cursor ? ctx.href({ cursor: page.next_cursor }) : null;
  const firstHref = s.cursor ? ctx.href({ cursor: null }) : null;
  const node = h(
    "div",
    { class: "view" },
    s.signature ? h("p", { class: "notice" }, "Failed installs with one error signature. ", h("a", { href: ctx.href({ signature: null }), "data-nav": true }, "Show all installs")) : null,
    panel(
      "Installs",
      h(
        "div",
        {},
        page.installs.length === 0 ? emptyState(s.cursor ? "No more installs." : "No installs match these filters.") : table(page.installs, s, ctx),
        h(
          "nav",
          { class: "pager", "aria-label": "pages" },
          firstHref ? h("a", { href: firstHref, "data-nav": true }, "← First page") : h("span", {}),
          h("span", { class: "muted" }, `${page.installs.length} shown`),
          nextHref ? h("a", { href: nextHref, "data-nav": true, rel: "next", id: "next-page" }, "Next page →") : h("span", {}),
        ),
      ),
      { wide: true },
    ),
    detail,
  );
  return { title: "Install log", node };
};

function table(rows: ExecutionRecord[], s: DashState, ctx: ViewContext): HTMLElement {
  const flip = s.order === "newest" ? "oldest" : "newest";
  const timeHeader = h(
    "th",
    { scope: "col", "aria-sort": s.order === "newest" ? "descending" : "ascending" },
    h("a", { href: ctx.href({ order: flip }), "data-nav": true, title: `sort ${flip} first`, id: "sort-time" }, "Started ", s.order === "newest" ? "↓" : "↑"),
  );
  const col = (text: string, cls?: string) => h("th", { scope: "col", class: cls }, text);
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "data installs" },
      h("thead", {}, h("tr", {}, timeHeader, col("App"), col("Outcome"), col("Type"), col("OS"), col("Host"), col("Method"), col("Duration", "num"), col("Error"))),
      h(
        "tbody",
        {},
        ...rows.map((r) =>
          h(
            "tr",
            { "data-id": r.random_id, class: r.random_id === s.id ? "selected" : undefined },
            h("td", { class: "nowrap" }, h("a", { href: ctx.href({ id: r.random_id }), "data-nav": true, "aria-label": `details of install ${r.random_id}` }, dateTime(r.created_at))),
            h("td", {}, r.nsapp === null ? "(none)" : h("a", { href: ctx.href({ view: "app", filters: { ...s.filters, nsapp: r.nsapp } }), "data-nav": true }, r.nsapp)),
            h("td", {}, badge(r.outcome)),
            h("td", {}, r.type),
            h("td", { class: "nowrap" }, label([r.os_type, r.os_version].filter((v) => v !== null).join(" ") || null)),
            h("td", {}, label(r.pve_version)),
            h("td", {}, label(r.method)),
            h("td", { class: "num" }, duration(r.duration_s)),
            h("td", { class: "error-cell", title: r.error ?? "" }, r.error ?? ""),
          ),
        ),
      ),
    ),
  );
}

async function loadInstall(id: string, ctx: ViewContext): Promise<HTMLElement> {
  try {
    return details(await api.install(id, ctx.signal), ctx);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404) return panel("Install", emptyState(`No install with id ${id}.`), { wide: true, id: "install-detail" });
    throw e;
  }
}

function details(r: ExecutionRecord, ctx: ViewContext): HTMLElement {
  const fields: [string, string][] = [
    ["random_id", r.random_id],
    ["app", label(r.nsapp)],
    ["status", r.status],
    ["type", r.type],
    ["ct_type", label(r.ct_type === null ? null : String(r.ct_type))],
    ["os", label([r.os_type, r.os_version].filter((v) => v !== null).join(" ") || null)],
    ["host version", label(r.pve_version)],
    ["method", label(r.method)],
    ["cores", label(r.core_count === null ? null : String(r.core_count))],
    ["RAM (MiB)", label(r.ram_size === null ? null : String(r.ram_size))],
    ["disk (GiB)", label(r.disk_size === null ? null : String(r.disk_size))],
    ["IPv6 disabled", label(r.disableip6)],
    ["started", r.created_at],
    ["updated", r.updated_at],
    ["duration", duration(r.duration_s)],
    ["repaired on arrival", r.repaired ? "yes" : "no"],
  ];
  const errorText = h("pre", { class: "error-text", id: "error-text", tabindex: 0 }, r.error ?? "");
  const copied = h("span", { class: "muted", role: "status" });
  const copy = h(
    "button",
    {
      type: "button",
      onclick: (() => {
        void copyText(r.error ?? "", errorText).then((ok) => (copied.textContent = ok ? "Copied" : "Selected: press Ctrl+C"));
      }) as EventListener,
    },
    "Copy error text",
  );
  return panel(
    "Install details",
    h(
      "div",
      { class: "detail" },
      h("dl", { class: "fields" }, ...fields.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      h("div", { class: "detail-error" }, h("div", { class: "row" }, badge(r.outcome), r.error ? copy : null, copied), r.error ? errorText : h("p", { class: "muted" }, "No error text.")),
    ),
    { wide: true, id: "install-detail", action: h("a", { href: ctx.href({ id: null }), "data-nav": true, "aria-label": "close details" }, "Close ✕") },
  );
}

/** Clipboard when the page may use it (secure contexts: localhost, https); else selects the text. */
async function copyText(text: string, el: HTMLElement): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(text);
    return true;
  } catch {
    const range = document.createRange();
    range.selectNodeContents(el);
    const sel = getSelection();
    sel?.removeAllRanges();
    sel?.addRange(range);
    return false;
  }
}
