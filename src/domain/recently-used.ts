// A bounded map that lets the least recently used entries go: what the engines and the reads keep
// of what they read or computed (decoded cells, sums, prepared listings, answers), so that asking
// again costs nothing and memory stays bounded. A Map iterates in insertion order, so an entry
// used is taken out and put back at the end.

export class RecentlyUsed<V> {
  private readonly entries = new Map<string, V>();

  constructor(private readonly limit: number) {}

  /** The entry, now the most recently used; undefined when not kept. */
  get(key: string): V | undefined {
    const value = this.entries.get(key);
    if (value !== undefined) {
      this.entries.delete(key);
      this.entries.set(key, value);
    }
    return value;
  }

  /** Keeps `value` as the most recently used; past the limit the least recently used goes. */
  set(key: string, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size > this.limit) this.entries.delete(this.entries.keys().next().value!);
  }

  delete(key: string): void {
    this.entries.delete(key);
  }

  clear(): void {
    this.entries.clear();
  }

  /** Every entry kept, least recently used first. */
  values(): IterableIterator<V> {
    return this.entries.values();
  }
}
