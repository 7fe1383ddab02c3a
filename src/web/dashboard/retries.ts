// Retries from a breakdown by attempt ("1", "2", "3", "4+"): every install has one first
// execution, so attempt "1" counts installs and the other attempts count retries. Pure, so the
// same numbers hold under any filter (the summary's own retries are null under dimension filters).

interface AttemptGroup {
  value: string | null;
  total: number;
  success: number;
}

export interface RetryNumbers {
  installs: number;
  executions: number;
  /** Executions after an install's first. */
  retries: number;
  /** executions / installs; null without installs. */
  perInstall: number | null;
  /** Share of installs run a second time (attempt "2" / installs); null without installs. */
  retryRate: number | null;
  /** Retries that succeeded: failed installs a retry rescued. */
  rescued: number;
  /** rescued / installs retried (attempt "2"); null when none was retried. */
  rescueRate: number | null;
}

export function retryNumbers(groups: readonly AttemptGroup[]): RetryNumbers {
  const of = (value: string) => groups.find((g) => g.value === value);
  const installs = of("1")?.total ?? 0;
  const again = groups.filter((g) => g.value !== "1" && g.value !== null);
  const retries = again.reduce((n, g) => n + g.total, 0);
  const rescued = again.reduce((n, g) => n + g.success, 0);
  const retried = of("2")?.total ?? 0;
  return {
    installs,
    executions: installs + retries,
    retries,
    perInstall: installs === 0 ? null : (installs + retries) / installs,
    retryRate: installs === 0 ? null : retried / installs,
    rescued,
    rescueRate: retried === 0 ? null : rescued / retried,
  };
}
