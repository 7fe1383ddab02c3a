// What a view gets from the shell, and what it gives back.
import type { DashState } from "./state.ts";

export interface ViewContext {
  /** Aborted when the user moves on before the view finished loading. */
  signal: AbortSignal;
  /** URL of a state derived from the current one (see withChanges). */
  href(change: Partial<DashState>): string;
  navigate(change: Partial<DashState>): void;
  /** Fetches the same view again (after an action changed what it shows). */
  reload(): void;
  /** Registers cleanup (chart observers) for when the view is replaced. */
  onDispose(fn: () => void): void;
}

interface Rendered {
  title: string;
  node: Node;
}

export type ViewRender = (s: DashState, ctx: ViewContext) => Promise<Rendered>;
