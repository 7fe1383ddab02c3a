// Real headless Chromium (Debian's package) driven by playwright-core, watching for what a
// dashboard must never do: log console errors, throw, or reach beyond localhost.
import { chromium, type Browser, type BrowserContext, type Page } from "playwright-core";

const CHROMIUM = process.env.CHROMIUM_PATH ?? "/usr/bin/chromium";

export function launchBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
  });
}

export interface Watched {
  page: Page;
  /** Console errors, uncaught exceptions and dialogs (alert() is how injected markup would show). */
  problems: string[];
  /** Every URL the page requested that is not on 127.0.0.1/localhost. */
  outside: string[];
}

export async function watchedPage(context: BrowserContext): Promise<Watched> {
  const page = await context.newPage();
  const problems: string[] = [];
  const outside: string[] = [];
  page.on("console", (m) => m.type() === "error" && problems.push(`console: ${m.text()}`));
  page.on("pageerror", (e) => problems.push(`exception: ${e.message}`));
  page.on("dialog", (d) => {
    problems.push(`dialog: ${d.type()} ${d.message()}`);
    void d.dismiss();
  });
  page.on("request", (r) => {
    const host = new URL(r.url()).hostname;
    if (!["127.0.0.1", "localhost"].includes(host) && !r.url().startsWith("data:")) outside.push(r.url());
  });
  return { page, problems, outside };
}

/** Opens a dashboard URL and waits until its view has rendered (body[data-state=ready]). */
export async function openView(page: Page, url: string): Promise<void> {
  await page.goto(url);
  await page.waitForSelector("body[data-state=ready]", { timeout: 20_000 });
}
