// What a store throws, in the contract's terms: the HTTP edge answers each with 503, the writer
// tells a storage that cannot take a batch now from one that cannot be reached at all.

/**
 * A read ran past the read budget and was stopped, so that it cannot hold up the service; or it
 * was stopped with a read that did. The HTTP edge answers 503 with this message.
 */
export class ReadBudgetError extends Error {}

/** The storage could not take a write (disk full, read-only, I/O error): nothing was written; retry later. */
export class StorageUnavailableError extends Error {
  constructor(message: string) {
    super(`storage cannot accept writes: ${message}`);
  }
}

/**
 * The storage cannot be reached at all (no database server answers, a failover): every write of a
 * batch would fail the same way, so none is tried again on its own.
 */
export class StorageUnreachableError extends StorageUnavailableError {
  constructor(message: string) {
    super(message);
    this.name = "StorageUnreachableError";
  }
}

/**
 * The stored data cannot be read: damaged pages or values (a disk fault, bytes changed under the
 * server), or files replaced under it. Not the request's fault and not a bug: an operator runs
 * `installstats verify`. A StorageUnavailableError, so the HTTP edge answers it 503 without a stack.
 */
export class StorageDamagedError extends StorageUnavailableError {
  constructor(
    message: string,
    /** What is damaged, when known ("rollup cell day * 2026-06-01"). */
    readonly where: string | null = null,
  ) {
    super(message);
    this.name = "StorageDamagedError";
    this.message = `storage is damaged${where ? ` (${where})` : ""}: ${message}; run installstats verify`;
  }
}
