// Acting on a failure: the issue for one error signature, previewed (and editable) before it is
// sent to the script collection's tracker; or the issue it is linked to already, or one the
// tracker has naming it. Behind the admin token, asked for here and kept for this tab only.
import { ApiError, adminToken, issuesApi, type IssueLinkJson, type IssuePreview } from "../api.ts";
import { h, replace } from "../dom.ts";
import { instantUtc } from "../format.ts";
import { apiParams, rangeLabel, type DashState } from "../state.ts";
import type { ViewContext, ViewRender } from "../view.ts";
import { copyText, emptyState, panel } from "../widgets.ts";
import { adminHead, adminOff, adminTokenForm } from "./admin.ts";

const NEEDS = { what: "Opening an issue from an error signature", submit: "Show the issue" };
const TRACKER_NAMES: Record<string, string> = { github: "GitHub", gitea: "Gitea", forgejo: "Forgejo" };

/** The answer of the last send, shown again when the view is fetched anew after it. */
let lastSend: { signature: string; text: string } | null = null;

export const issueView: ViewRender = async (s, ctx) => {
  const signature = s.signature;
  if (!signature)
    return {
      title: "Issue",
      node: h("div", { class: "view" }, emptyState("No error signature chosen: open one from the Failures view.")),
    };
  if (adminToken() === null) return { title: "Issue", node: adminTokenForm(ctx, false, NEEDS) };
  let p: IssuePreview;
  try {
    p = await issuesApi.preview(signature, apiParams(s), ctx.signal);
  } catch (e) {
    if (e instanceof ApiError && e.status === 401) return { title: "Issue", node: adminTokenForm(ctx, true, NEEDS) };
    if (e instanceof ApiError && e.status === 403)
      return { title: "Issue", node: adminOff(e.message, "issues cannot be opened from here") };
    throw e;
  }
  const back = h("a", { href: ctx.href({ view: "failures", signature: null }), "data-nav": true }, "← Failures");
  const head = adminHead("Issue for an error signature", ctx);
  const said =
    lastSend?.signature === signature
      ? h("p", { class: "notice", role: "status", id: "issue-sent" }, lastSend.text)
      : null;
  const body = p.link
    ? linkedPanel(p.link, ctx, signature)
    : p.tracker === null
      ? offPanel(p)
      : p.existing
        ? existingPanel(p, s, ctx, signature)
        : sendPanel(p, s, ctx, signature);
  return { title: "Issue", node: h("div", { class: "view issue" }, head, back, said, body) };
};

function linkedPanel(link: IssueLinkJson, ctx: ViewContext, signature: string): HTMLElement {
  const result = h("div", { role: "status" });
  const forget = h("button", { type: "button", id: "issue-forget" }, "Forget this link");
  forget.addEventListener("click", () => {
    forget.disabled = true;
    void issuesApi
      .forget(signature)
      .then(() => {
        lastSend = null;
        ctx.reload();
      })
      .catch((e: unknown) =>
        replace(
          result,
          h("p", { class: "error-box" }, `Could not forget the link: ${e instanceof Error ? e.message : String(e)}`),
        ),
      )
      .finally(() => (forget.disabled = false));
  });
  return panel(
    "Linked",
    h(
      "div",
      { id: "issue-linked" },
      h(
        "p",
        {},
        "This signature is linked to ",
        h(
          "a",
          { href: link.url, id: "issue-link", rel: "noopener noreferrer", target: "_blank" },
          `#${link.number} ${link.title}`,
        ),
        ` in ${TRACKER_NAMES[link.tracker] ?? link.tracker} ${link.repo}.`,
      ),
      h(
        "p",
        { class: "muted" },
        `${link.how === "found" ? "Found in the tracker" : "Opened from here"} ${instantUtc(link.linked_at)}. Sending again links nothing new.`,
      ),
      h(
        "p",
        { class: "muted" },
        "If the issue was deleted, or linked by mistake, forget the link: the next send searches the tracker again, then opens one.",
        " ",
        forget,
      ),
      result,
    ),
    { wide: true, id: "issue" },
  );
}

function offPanel(p: IssuePreview): HTMLElement {
  const text = `${p.issue.title}\n\n${p.issue.body}`;
  const pre = h("pre", { class: "raw-body", id: "issue-text" }, text);
  const note = h("span", { class: "muted", role: "status" });
  return panel(
    "No tracker configured",
    h(
      "div",
      { id: "issue-off" },
      h(
        "p",
        {},
        "No issue tracker is configured on this server, so the issue cannot be sent from here. Its text, to copy:",
      ),
      pre,
      h(
        "button",
        {
          type: "button",
          onclick: (() =>
            void copyText(text, pre).then(
              (ok) => (note.textContent = ok ? "Copied" : "Selected: press Ctrl+C"),
            )) as EventListener,
        },
        "Copy",
      ),
      note,
      h(
        "p",
        { class: "muted" },
        "To send issues from here, start the server with INSTALLSTATS_TRACKER (github, gitea or forgejo), INSTALLSTATS_TRACKER_REPO and a token (INSTALLSTATS_TRACKER_TOKEN or INSTALLSTATS_TRACKER_TOKEN_FILE).",
      ),
    ),
    { wide: true, id: "issue" },
  );
}

/** Sends, then shows the view again (now linked); an error stays on the form. */
function sendAction(
  button: HTMLButtonElement,
  result: HTMLElement,
  s: DashState,
  ctx: ViewContext,
  signature: string,
  edits: () => { title?: string; body?: string; labels?: string[] },
): void {
  button.addEventListener("click", () => {
    button.disabled = true;
    replace(result, h("span", { class: "muted" }, "Sending…"));
    void issuesApi
      .send(signature, apiParams(s), edits())
      .then((r) => {
        const what =
          r.result === "created" ? "Opened" : r.result === "found" ? "Linked the tracker's issue" : "Already linked to";
        const left =
          r.labels_left_out.length > 0
            ? ` Labels the tracker does not have were left out: ${r.labels_left_out.join(", ")}.`
            : "";
        lastSend = { signature, text: `${what} #${r.link.number} in ${r.link.repo}.${left}` };
        ctx.reload();
      })
      .catch((e: unknown) => {
        button.disabled = false;
        replace(
          result,
          h(
            "p",
            { class: "error-box", role: "alert", id: "issue-error" },
            `Not sent: ${e instanceof Error ? e.message : String(e)}`,
          ),
        );
      });
  });
}

function existingPanel(p: IssuePreview, s: DashState, ctx: ViewContext, signature: string): HTMLElement {
  const e = p.existing!;
  const result = h("div", { "aria-live": "polite" });
  const link = h("button", { type: "button", class: "primary", id: "issue-send" }, "Link this issue");
  sendAction(link, result, s, ctx, signature, () => ({}));
  return panel(
    "Already in the tracker",
    h(
      "div",
      { id: "issue-existing" },
      h(
        "p",
        {},
        `${TRACKER_NAMES[p.tracker!.kind] ?? p.tracker!.kind} ${p.tracker!.repo} has an issue naming this signature: `,
        h("a", { href: e.url, rel: "noopener noreferrer", target: "_blank" }, `#${e.number} ${e.title}`),
        ` (${e.state}).`,
      ),
      h("p", { class: "muted" }, "Sending links it here; no second issue is opened."),
      link,
      result,
    ),
    { wide: true, id: "issue" },
  );
}

function sendPanel(p: IssuePreview, s: DashState, ctx: ViewContext, signature: string): HTMLElement {
  const tracker = p.tracker!;
  const title = h("input", {
    type: "text",
    id: "issue-title",
    name: "title",
    value: p.issue.title,
    maxlength: 256,
    required: true,
  });
  const body = h("textarea", { id: "issue-body", name: "body", rows: 24, spellcheck: "false" }, p.issue.body);
  const labels = h("input", { type: "text", id: "issue-labels", name: "labels", value: p.issue.labels.join(", ") });
  const result = h("div", { "aria-live": "polite" });
  const send = h(
    "button",
    { type: "button", class: "primary", id: "issue-send" },
    `Open the issue in ${TRACKER_NAMES[tracker.kind] ?? tracker.kind}`,
  );
  sendAction(send, result, s, ctx, signature, () => ({
    title: title.value.trim() || p.issue.title,
    body: body.value.trim() === "" ? p.issue.body : body.value,
    labels: labels.value
      .split(",")
      .map((l) => l.trim())
      .filter((l) => l !== ""),
  }));
  return panel(
    "Preview",
    h(
      "div",
      { class: "issue-form", id: "issue-preview" },
      h(
        "p",
        {},
        `Nothing is sent until you press the button. It opens an issue in ${TRACKER_NAMES[tracker.kind] ?? tracker.kind} `,
        h("strong", {}, tracker.repo),
        `; counts are of ${rangeLabel(s.range)}${s.filters.nsapp ? ` for ${s.filters.nsapp}` : ""}. The tracker was searched for this signature: no issue names it yet.`,
      ),
      h("label", { for: "issue-title" }, "Title"),
      title,
      h("label", { for: "issue-body" }, "Body (Markdown; the signature's marker at its end finds the issue again)"),
      body,
      h("label", { for: "issue-labels" }, "Labels, comma-separated"),
      labels,
      send,
      result,
    ),
    { wide: true, id: "issue" },
  );
}
