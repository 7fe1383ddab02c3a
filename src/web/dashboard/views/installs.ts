// Install log: every filter of /api/installs, newest or oldest first, cursor pages, and the
// details of one install: its fields, its full error text, and each execution with its timeline.
import { api, ApiError, type ExecutionRecord, type InstallDetail } from "../api.ts";
import { h } from "../dom.ts";
import { dateTime, duration, instantUtc, label, timeOfDay } from "../format.ts";
import { apiParams, type DashState } from "../state.ts";
import type { ViewContext, ViewRender } from "../view.ts";
import { OUTCOME_LABEL, badge, copyText, emptyState, panel } from "../widgets.ts";
import { explainExitCode } from "../../../domain/exit-codes.ts";

const PAGE = 50;

export const installs: ViewRender = async (s, ctx) => {
  const extra: Record<string, string | number> = { limit: PAGE, order: s.order };
  if (s.cursor) extra.cursor = s.cursor;
  if (s.signature) extra.signature = s.signature;
  const [page, detail] = await Promise.all([
    api.installs(apiParams(s, extra), ctx.signal),
    s.id ? loadInstall(s.id, ctx) : null,
  ]);
  const nextHref = page.next_cursor ? ctx.href({ cursor: page.next_cursor }) : null;
  const firstHref = s.cursor ? ctx.href({ cursor: null }) : null;
  // The details open under their row, where the eye is; an install not on this page (a shared
  // link, a later page) shows them above the list.
  const inList = detail !== null && page.installs.some((r) => r.random_id === s.id);
  if (s.id) closeOnEscape(ctx);
  const node = h(
    "div",
    { class: "view" },
    s.signature
      ? h(
          "p",
          { class: "notice" },
          "Failed installs with one error signature. ",
          h("a", { href: ctx.href({ signature: null }), "data-nav": true }, "Show all installs"),
        )
      : null,
    inList ? null : detail,
    panel(
      "Installs",
      h(
        "div",
        {},
        page.installs.length === 0
          ? emptyState(s.cursor ? "No more installs." : "No installs match these filters.")
          : table(page.installs, s, ctx, inList ? detail : null),
        h(
          "nav",
          { class: "pager", "aria-label": "pages" },
          firstHref ? h("a", { href: firstHref, "data-nav": true }, "← First page") : h("span", {}),
          h("span", { class: "muted" }, `${page.installs.length} shown`),
          nextHref
            ? h("a", { href: nextHref, "data-nav": true, rel: "next", id: "next-page" }, "Next page →")
            : h("span", {}),
        ),
      ),
      { wide: true },
    ),
  );
  return { title: "Install log", node };
};

/** Escape closes the open details (while this view is shown). */
function closeOnEscape(ctx: ViewContext): void {
  const onKey = (e: KeyboardEvent) => {
    if (e.key !== "Escape" || e.defaultPrevented || e.altKey || e.ctrlKey || e.metaKey) return;
    e.preventDefault();
    ctx.navigate({ id: null });
  };
  document.addEventListener("keydown", onKey);
  ctx.onDispose(() => document.removeEventListener("keydown", onKey));
}

const COLUMNS = 10;

/**
 * A click anywhere on a row opens its install (the link in its first cell, which is also the
 * keyboard's way in); clicks on the row's other links and controls, and the end of a text
 * selection, keep their own meaning.
 */
function onRowClick(e: MouseEvent): void {
  if (e.button !== 0 || e.defaultPrevented || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const target = e.target as Element | null;
  if (!target || target.closest("a, button, input, select, textarea, summary, label")) return;
  const row = target.closest("tr[data-id]");
  if (!row || (getSelection()?.toString() ?? "") !== "") return;
  row.querySelector<HTMLAnchorElement>("a.row-link")?.click();
}

function table(rows: ExecutionRecord[], s: DashState, ctx: ViewContext, detail: HTMLElement | null): HTMLElement {
  const flip = s.order === "newest" ? "oldest" : "newest";
  const timeHeader = h(
    "th",
    { scope: "col", "aria-sort": s.order === "newest" ? "descending" : "ascending" },
    h(
      "a",
      {
        href: ctx.href({ order: flip }),
        "data-nav": true,
        title: `sort ${flip} first (times in UTC)`,
        id: "sort-time",
      },
      "Started ",
      h("span", { class: "tz" }, "(UTC) "),
      s.order === "newest" ? "↓" : "↑",
    ),
  );
  const col = (text: string, cls?: string) => h("th", { scope: "col", class: cls }, text);
  let placed = false;
  const body = rows.flatMap((r) => {
    const open = r.random_id === s.id;
    const tr = h(
      "tr",
      { "data-id": r.random_id, "data-execution": r.execution_id, class: open ? "row selected" : "row" },
      h(
        "td",
        { class: "nowrap" },
        h(
          "a",
          {
            class: "row-link",
            // The open install's link closes it again.
            href: ctx.href({ id: open ? null : r.random_id }),
            "data-nav": true,
            "aria-expanded": open ? "true" : "false",
            "aria-controls": open ? "install-detail" : undefined,
            "aria-label": `${open ? "close the details" : "details"} of install ${r.random_id}, started ${dateTime(r.created_at)} UTC`,
          },
          // Date and time each whole (a phone wraps between them, never inside the date).
          h("span", { class: "nowrap" }, dateTime(r.created_at).slice(0, 10)),
          " ",
          h("span", { class: "nowrap" }, dateTime(r.created_at).slice(11)),
        ),
      ),
      h(
        "td",
        {},
        r.nsapp === null
          ? "(none)"
          : h(
              "a",
              { href: ctx.href({ view: "app", filters: { ...s.filters, nsapp: r.nsapp } }), "data-nav": true },
              r.nsapp,
            ),
      ),
      h(
        "td",
        { class: "nowrap" },
        badge(r.outcome),
        r.attempt > 1
          ? h("span", { class: "attempt", title: `attempt ${r.attempt} of this install` }, ` #${r.attempt}`)
          : null,
      ),
      h(
        "td",
        { class: "num" },
        r.exit_code === null ? "" : h("span", { title: explainExitCode(r.exit_code) }, String(r.exit_code)),
      ),
      h("td", {}, r.type),
      h("td", { class: "nowrap" }, label([r.os_type, r.os_version].filter((v) => v !== null).join(" ") || null)),
      h("td", {}, label(r.pve_version)),
      h("td", {}, label(r.method)),
      h("td", { class: "num" }, duration(r.duration_s)),
      h("td", { class: "error-cell", title: r.error ?? "" }, r.error ?? ""),
    );
    // The details go under the install's first row (its executions are listed together in them).
    if (!open || placed || detail === null) return [tr];
    placed = true;
    return [tr, h("tr", { class: "detail-row" }, h("td", { colspan: COLUMNS }, detail))];
  });
  return h(
    "div",
    { class: "table-wrap" },
    h(
      "table",
      { class: "data installs" },
      h(
        "thead",
        {},
        h(
          "tr",
          {},
          timeHeader,
          col("App"),
          col("Outcome"),
          col("Exit", "num"),
          col("Type"),
          col("OS"),
          col("Host"),
          col("Method"),
          col("Duration", "num"),
          col("Error"),
        ),
      ),
      h("tbody", { onclick: onRowClick as EventListener }, ...body),
    ),
  );
}

async function loadInstall(id: string, ctx: ViewContext): Promise<HTMLElement> {
  try {
    return details(await api.install(id, ctx.signal), ctx);
  } catch (e) {
    if (e instanceof ApiError && e.status === 404)
      return panel("Install", emptyState(`No install with id ${id}.`), { wide: true, id: "install-detail" });
    throw e;
  }
}

const PROTOCOL = (v: number | null): string => (v === null ? "/upload" : `/telemetry v${v}`);
const num = (v: number | null): string => label(v === null ? null : String(v));
const joined = (...parts: (string | null)[]): string =>
  label(parts.filter((p) => p !== null && p !== "").join(" ") || null);

function details(d: InstallDetail, ctx: ViewContext): HTMLElement {
  const r: ExecutionRecord = d;
  const fields: [string, string][] = [
    ["random_id", r.random_id],
    ["app", label(r.nsapp)],
    ["kind", r.kind],
    ["executions", String(d.executions.length)],
    ["status", r.status],
    ["exit code", r.exit_code === null ? "(none)" : `${r.exit_code}: ${explainExitCode(r.exit_code)}`],
    ["error category", label(r.error_category)],
    [
      "failed command",
      r.failed_command ? `${r.failed_command}${r.failed_line ? ` (line ${r.failed_line})` : ""}` : "(none)",
    ],
    ["type", r.type],
    ["ct_type", num(r.ct_type)],
    ["os", joined(r.os_type, r.os_version)],
    ["host version", label(r.pve_version)],
    ["method", label(r.method)],
    ["cores", num(r.core_count)],
    ["RAM (MiB)", num(r.ram_size)],
    ["disk (GiB)", num(r.disk_size)],
    ["IPv6 disabled", label(r.disableip6)],
    ["platform", label(r.platform)],
    ["arch", label(r.arch)],
    ["CPU", joined(r.cpu_vendor, r.cpu_model)],
    ["GPU", joined(r.gpu_vendor, r.gpu_model)],
    ["GPU passthrough", label(r.gpu_passthrough)],
    ["host GPU", label(r.host_gpu)],
    ["RAM speed", label(r.ram_speed)],
    ["kernel", label(r.kernel_version)],
    ["app version", label(r.app_version)],
    ["repository", joined(r.repo_source, r.repo_slug ? `(${r.repo_slug})` : null)],
    ["protocol", PROTOCOL(r.payload_version)],
    ["started", instantUtc(r.created_at)],
    ["updated", instantUtc(r.updated_at)],
    ["duration", duration(r.duration_s)],
    ["client's duration", r.install_duration === null ? "–" : duration(r.install_duration)],
    ["repaired on arrival", r.repaired ? "yes" : "no"],
  ];
  if (r.extra !== null) fields.push(["other fields", JSON.stringify(r.extra)]);
  const errorText = h("pre", { class: "error-text", id: "error-text", tabindex: 0 }, r.error ?? "");
  const copied = h("span", { class: "muted", role: "status" });
  const copy = h(
    "button",
    {
      type: "button",
      onclick: (() => {
        void copyText(r.error ?? "", errorText).then(
          (ok) => (copied.textContent = ok ? "Copied" : "Selected: press Ctrl+C"),
        );
      }) as EventListener,
    },
    "Copy error text",
  );
  const shown = panel(
    "Install details",
    h(
      "div",
      { class: "detail" },
      h("dl", { class: "fields" }, ...fields.flatMap(([k, v]) => [h("dt", {}, k), h("dd", {}, v)])),
      h(
        "div",
        { class: "detail-side" },
        h(
          "div",
          { class: "detail-error" },
          h(
            "div",
            { class: "row" },
            badge(r.outcome),
            d.executions.length > 1 ? h("span", { class: "muted" }, `attempt ${r.attempt}, the latest`) : null,
            r.error ? copy : null,
            copied,
          ),
          r.error ? errorText : h("p", { class: "muted" }, "No error text."),
        ),
        executions(d),
      ),
    ),
    {
      wide: true,
      id: "install-detail",
      action: h(
        "a",
        { href: ctx.href({ id: null }), "data-nav": true, id: "close-detail", "aria-label": "close details (Escape)" },
        "Close ✕",
      ),
    },
  );
  // Focus moves here when the details open (main.ts), so the keyboard continues inside them.
  shown.tabIndex = -1;
  return shown;
}

const STEPS = [
  ["installing", "Installing"],
  ["validation", "Validation"],
  ["configuring", "Configuring"],
] as const;

/** Every execution of the install, first to last, each with its status timeline. */
function executions(d: InstallDetail): HTMLElement {
  return h(
    "section",
    { class: "executions", "aria-label": "executions" },
    h("h3", {}, d.executions.length === 1 ? "Execution" : `Executions (${d.executions.length})`),
    h(
      "ol",
      { class: "execution-list" },
      ...d.executions.map((e, i) =>
        h(
          "li",
          { class: "execution", "data-execution": e.execution_id, "data-attempt": e.attempt },
          h(
            "div",
            { class: "row" },
            h("strong", {}, `Attempt ${e.attempt}`),
            badge(e.outcome),
            e.exit_code === null
              ? null
              : h(
                  "span",
                  { class: "exit", title: explainExitCode(e.exit_code) },
                  `exit ${e.exit_code}: ${explainExitCode(e.exit_code)}`,
                ),
            e.error_category ? h("span", { class: "chip" }, e.error_category.replace("_", " ")) : null,
            h("span", { class: "muted mono", title: "execution_id" }, e.execution_id),
          ),
          timeline(e),
          e.failed_command
            ? h(
                "p",
                { class: "failed-command" },
                "Failed at ",
                e.failed_line ? `line ${e.failed_line}: ` : "",
                h("code", { class: "mono" }, e.failed_command),
              )
            : null,
          // The latest execution's error text is shown whole above.
          e.error && i < d.executions.length - 1
            ? h("details", {}, h("summary", {}, "Error text"), h("pre", { class: "error-text" }, e.error))
            : null,
        ),
      ),
    ),
  );
}

/** When each status was first seen, and how long after the start; steps never reported are marked so. */
function timeline(e: ExecutionRecord): HTMLElement {
  const t = e.timeline;
  const start = Date.parse(t.installing ?? e.created_at);
  const step = (key: string, name: string, at: string | null, tone?: string) =>
    h(
      "li",
      { class: at === null ? "step missing" : `step${tone ? ` tone-${tone}` : ""}`, "data-step": key },
      h("span", { class: "step-name" }, name),
      at === null
        ? h("span", { class: "muted" }, "not reported")
        : h("time", { datetime: at, title: instantUtc(at) }, `${timeOfDay(at)} UTC`),
      at !== null && key !== "installing"
        ? h("span", { class: "muted" }, ` +${duration((Date.parse(at) - start) / 1000)}`)
        : null,
    );
  const done = e.outcome !== "in_progress";
  return h(
    "ol",
    { class: "timeline", "aria-label": `timeline of attempt ${e.attempt}` },
    ...STEPS.map(([key, name]) => step(key, name, t[key])),
    done
      ? step("finished", OUTCOME_LABEL[e.outcome], t.finished, e.outcome)
      : h(
          "li",
          { class: "step pending", "data-step": "finished" },
          h("span", { class: "step-name" }, "Final status"),
          h("span", { class: "muted" }, "not yet"),
        ),
  );
}
