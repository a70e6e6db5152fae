/**
 * Runs tasks one at a time per key, in arrival order, within this process.
 * Why: FerretDB 1.x applies an update as read-modify-write of the whole document without
 * re-checking the filter, so two concurrent updates of one document can lose one of them
 * even when both filter on a version (a compare-and-set). MongoDB does not need this; it
 * costs nothing there.
 */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>();

  async run<T>(key: string, task: () => Promise<T>): Promise<T> {
    const previous = this.tails.get(key) ?? Promise.resolve();
    const current = previous.then(task, task);
    const tail = current.catch(() => undefined);
    this.tails.set(key, tail);
    try {
      return await current;
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key);
    }
  }
}
