// First run: a server that has never received a report says how to send it some, with this
// server's address (as the browser reached it) in every command.
import { h } from "./dom.ts";
import { copyable, panel } from "./widgets.ts";

const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]", "::1"]);

/** `origin`: this page's scheme, host and port, e.g. "http://192.168.1.20:8080". */
export function onboarding(origin: string): HTMLElement {
  const host = new URL(origin).hostname;
  return panel(
    "No reports yet: connect your installer scripts",
    h(
      "div",
      { class: "onboarding" },
      h(
        "p",
        {},
        "This server has not received a report. Point the installer scripts at it; this page shows the first report within 30 seconds of its arrival.",
      ),
      LOOPBACK.has(host)
        ? h(
            "p",
            { class: "notice", id: "loopback-note" },
            `This page was opened as ${host}, which only this machine can reach: scripts on other hosts need this server's network address instead (the server prints it when it starts).`,
          )
        : null,
      h("h3", {}, "Current scripts: TELEMETRY_URL"),
      h(
        "p",
        {},
        "ProxmoxVE's misc/api.func (since 2026-02) and the community-scripts core engine send every report to one URL, read from TELEMETRY_URL. Set it in the shell that runs the script:",
      ),
      copyable(`export TELEMETRY_URL=${origin}/telemetry`, "the TELEMETRY_URL setting"),
      h("h3", {}, "Old script revisions: /upload"),
      h(
        "p",
        {},
        "Older misc/api.func revisions post to <base>/upload and <base>/upload/updatestatus. Replace the base URL in their misc/api.func with:",
      ),
      copyable(origin, "the base URL for old scripts"),
      h(
        "p",
        { class: "muted" },
        "Either way, scripts send nothing unless diagnostics are enabled on the host (DIAGNOSTICS=yes, kept in /usr/local/community-scripts/diagnostics).",
      ),
      h("h3", {}, "Try it without an installer"),
      h(
        "p",
        {},
        "scripts/client.sh (in the installstats repository) sends exactly what the real clients send. A whole install from a current script, one whose first attempt fails and whose retry succeeds, and an old script's run:",
      ),
      h(
        "div",
        { class: "try" },
        copyable(`scripts/client.sh --url ${origin} --protocol v2 install success`, "a current client's install"),
        copyable(
          `scripts/client.sh --url ${origin} --protocol v2 --retries 1 install success`,
          "a failed attempt and its retry",
        ),
        copyable(`scripts/client.sh --url ${origin} install done`, "an old client's install"),
      ),
      h(
        "p",
        { class: "muted" },
        "scripts/client.sh --help lists every option (tools, addons, v1 payloads, error texts).",
      ),
    ),
    { wide: true, id: "first-run" },
  );
}
