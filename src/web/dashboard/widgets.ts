// Building blocks shared by the views: panels, headline cards, ranked bars, states.
import { h } from "./dom.ts";
import { count, label, percent } from "./format.ts";
import type { Outcome } from "../../domain/outcome.ts";

export const OUTCOME_LABEL: Record<Outcome, string> = {
  success: "Success",
  failed: "Failed",
  blocked: "Blocked",
  aborted: "Aborted",
  in_progress: "In progress",
  unknown: "Unknown",
};
export const outcomeColorVar = (o: Outcome): string => `--${o.replace("_", "-")}`;

export function panel(
  title: string,
  body: Node,
  opts: { wide?: boolean; action?: Node; id?: string } = {},
): HTMLElement {
  return h(
    "section",
    { class: opts.wide ? "panel wide" : "panel", "aria-label": title, id: opts.id },
    h("header", { class: "panel-head" }, h("h2", {}, title), opts.action),
    body,
  );
}

export interface Card {
  /** Stable name for tests and styling, e.g. "total". */
  metric: string;
  title: string;
  value: string;
  sub?: string;
  tone?: Outcome;
  href?: string;
}

export function cards(items: Card[], compact = false): HTMLElement {
  return h(
    "div",
    { class: compact ? "cards compact" : "cards" },
    ...items.map((c) => {
      const body = [
        h("span", { class: "card-title" }, c.title),
        h("strong", { class: "card-value", "data-metric": c.metric }, c.value),
        c.sub ? h("span", { class: "card-sub" }, c.sub) : null,
      ];
      const cls = `card${c.tone ? ` tone-${c.tone}` : ""}`;
      return c.href
        ? h("a", { class: cls, href: c.href, "data-nav": true }, ...body)
        : h("div", { class: cls }, ...body);
    }),
  );
}

export interface BarRow {
  value: string | null;
  total: number;
  failed: number;
  successRate: number | null;
  /** Where the row leads (null: not selectable). */
  href: string | null;
  /** Shown instead of the value (e.g. an explanation); the value stays its title. */
  text?: string;
  /** The last column instead of the success rate, e.g. a share of failures. */
  rate?: { text: string; title: string };
}

/** A ranked list with proportional bars: label, volume, failure share in the bar, success rate. */
export function barList(rows: BarRow[], empty = "Nothing in this window."): HTMLElement {
  if (rows.length === 0) return emptyState(empty);
  const max = Math.max(...rows.map((r) => r.total), 1);
  return h(
    "ol",
    { class: "bars" },
    ...rows.map((r) => {
      const width = (r.total / max) * 100;
      const failedWidth = r.total === 0 ? 0 : (r.failed / r.total) * 100;
      const content = [
        h(
          "span",
          { class: "bar-label", title: r.text ?? label(r.value), "data-value": r.value ?? "" },
          r.text ?? label(r.value),
        ),
        h(
          "span",
          { class: "bar-track", "aria-hidden": "true" },
          sized(h("span", { class: "bar-fill" }, sized(h("span", { class: "bar-failed" }), failedWidth)), width),
        ),
        h("span", { class: "bar-count", "data-count": r.total }, count(r.total)),
        h(
          "span",
          { class: "bar-rate", title: r.rate?.title ?? "success rate" },
          r.rate?.text ?? percent(r.successRate),
        ),
      ];
      return h(
        "li",
        {},
        r.href
          ? h("a", { class: "bar-row", href: r.href, "data-nav": true }, ...content)
          : h("div", { class: "bar-row" }, ...content),
      );
    }),
  );
}

/** Sets a width through the CSSOM: the page's CSP allows no inline style attributes. */
function sized(el: HTMLElement, widthPercent: number): HTMLElement {
  el.style.width = `${widthPercent.toFixed(2)}%`;
  return el;
}

export function badge(outcome: Outcome): HTMLElement {
  return h("span", { class: `badge tone-${outcome}` }, OUTCOME_LABEL[outcome]);
}

export const emptyState = (text: string): HTMLElement => h("p", { class: "empty" }, text);

export const loadingState = (): HTMLElement =>
  h("div", { class: "loading", role: "status" }, h("span", { class: "spinner", "aria-hidden": "true" }), "Loading…");

/** Clipboard when the page may use it (secure contexts: localhost, https); else selects the text. */
export async function copyText(text: string, el: HTMLElement): Promise<boolean> {
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

/** A command or URL to copy: shown as code, with a button that copies it (or selects it). */
export function copyable(text: string, name: string): HTMLElement {
  const code = h("code", { class: "copy-text" }, text);
  const said = h("span", { class: "muted copy-said", role: "status" });
  return h(
    "div",
    { class: "copyable", "data-copy": name },
    h("pre", {}, code),
    h(
      "button",
      {
        type: "button",
        "aria-label": `copy ${name}`,
        onclick: (() => {
          void copyText(text, code).then((ok) => (said.textContent = ok ? "Copied" : "Selected: press Ctrl+C"));
        }) as EventListener,
      },
      "Copy",
    ),
    said,
  );
}
