// An outbox entry as both engines read it back (RETURNING of a claim or a release): the contract's
// RelayEntry and its body's size.
import type { RelayEntry } from "../contract/relay.ts";

export interface EntryRow extends RelayEntry {
  bytes: number;
}

export const entryOf = ({ bytes: _, ...entry }: EntryRow): RelayEntry => entry;
