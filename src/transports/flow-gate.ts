/**
 * A gate on a flow of data: the reader of a source reads only while the gate is open, and
 * whatever downstream cannot take more closes it, under a name of its own, until it can again.
 *
 * It is open when nobody holds it closed, so independent reasons combine without knowing of each
 * other: in `switchboard stdio` the client's stdin is read only while neither the client's stdout
 * nor the server's stdin is behind (`StreamBound.holdWhileBehind`). Closing twice under one name
 * is one hold; reopening a name that holds nothing does nothing.
 */
export class FlowGate {
  readonly #holders = new Set<string>();
  readonly #watchers = new Set<(open: boolean) => void>();

  /** Whether the source may be read: nobody holds the gate closed. */
  get open(): boolean {
    return this.#holders.size === 0;
  }

  /** Whether `holder` is one of those holding the gate closed. */
  isHeldBy(holder: string): boolean {
    return this.#holders.has(holder);
  }

  /** Holds the gate closed as `holder`; watchers hear of it when it was open. */
  close(holder: string): void {
    if (this.#holders.has(holder)) return;
    this.#holders.add(holder);
    if (this.#holders.size === 1) this.#tell(false);
  }

  /** Releases `holder`'s hold; watchers hear of it when that opens the gate. */
  reopen(holder: string): void {
    if (!this.#holders.delete(holder)) return;
    if (this.#holders.size === 0) this.#tell(true);
  }

  /**
   * Calls `listener` on every change between open and closed (not with the current state);
   * returns the function that stops it.
   */
  watch(listener: (open: boolean) => void): () => void {
    this.#watchers.add(listener);
    return () => this.#watchers.delete(listener);
  }

  #tell(open: boolean): void {
    for (const watcher of [...this.#watchers]) watcher(open);
  }
}
